"""Choosing a backend: "auto" falls back to the CPU once, with a log line; "gpu" fails clearly without one."""

import logging

import pytest

from dpstudio.engine import backends
from dpstudio.engine.backends import BackendUnavailable, get_backend

from .gpu_support import gpu


@pytest.mark.skipif(gpu is not None, reason="a GPU is present: nothing to fall back from")
def test_auto_falls_back_to_cpu_once_with_a_log_line(caplog):
    backends._auto.cache_clear()
    with caplog.at_level(logging.INFO, logger="dpstudio"):
        assert get_backend("auto").name == "cpu"
        assert get_backend("auto").name == "cpu"
    assert len([r for r in caplog.records if "using the CPU backend" in r.message]) == 1
    with pytest.raises(BackendUnavailable, match="GPU backend is not available"):
        get_backend("gpu")


@pytest.mark.gpu
@pytest.mark.skipif(gpu is None, reason="no usable GPU")
def test_auto_picks_the_gpu():
    assert get_backend("auto").name == "gpu"


def test_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        get_backend("fpga")
