"""The GPU backend for the tests (or why there is none), the marks of a GPU-only test, and poisoned kernel outputs.

GPU tests are skipped where the GPU backend cannot load for want of a GPU or of CuPy (an optional extra). On a
machine with an NVIDIA GPU and CuPy, or anywhere with ``DPSTUDIO_REQUIRE_GPU=1``, a backend that cannot load is an
error with its reason instead: a GPU module that fails to import would otherwise turn every GPU test into a skip,
and the run would look green."""

import importlib.util
import os
from pathlib import Path

import pytest

from dpstudio.engine import get_backend
from dpstudio.engine.backends import BackendUnavailable

try:
    gpu = get_backend("gpu")
except BackendUnavailable as reason:
    gpu, why = None, str(reason)
else:
    why = ""
GPU_AND_CUPY = any(Path("/dev").glob("nvidia[0-9]*")) and importlib.util.find_spec("cupy") is not None
if gpu is None and (GPU_AND_CUPY or os.environ.get("DPSTUDIO_REQUIRE_GPU") == "1"):
    raise RuntimeError(f"this machine should run the GPU tests, but the GPU backend cannot load: {why}")

needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(gpu is None, reason=why or "no GPU")]


def poison_outputs(monkeypatch) -> None:
    """Every GPU kernel output starts as garbage, so an element a kernel forgets to write fails the comparison."""
    import cupy as cp

    def poisoned(shape, dtype):
        out = cp.empty(shape, dtype)
        out.view(cp.uint8).fill(0xA5)
        return out

    monkeypatch.setattr(gpu, "_output", poisoned)
