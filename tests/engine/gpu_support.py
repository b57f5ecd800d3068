"""The GPU backend for the tests (or why there is none), the marks of a GPU-only test, and poisoned kernel outputs.

GPU tests are skipped where the GPU backend cannot load. With ``DPSTUDIO_REQUIRE_GPU=1`` (set for runs on a GPU
machine) that is an error instead, with the reason: a GPU module that fails to import, or CuPy missing, would
otherwise turn every GPU test into a skip, and the run would look green."""

import os

import pytest

from dpstudio.engine import get_backend
from dpstudio.engine.backends import BackendUnavailable

try:
    gpu = get_backend("gpu")
except BackendUnavailable as reason:
    gpu, why = None, str(reason)
else:
    why = ""
if gpu is None and os.environ.get("DPSTUDIO_REQUIRE_GPU") == "1":
    raise RuntimeError(f"DPSTUDIO_REQUIRE_GPU=1, but the GPU backend cannot load: {why}")

needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(gpu is None, reason=why or "no GPU")]


def poison_outputs(monkeypatch) -> None:
    """Every GPU kernel output starts as garbage, so an element a kernel forgets to write fails the comparison."""
    import cupy as cp

    def poisoned(shape, dtype):
        out = cp.empty(shape, dtype)
        out.view(cp.uint8).fill(0xA5)
        return out

    monkeypatch.setattr(gpu, "_output", poisoned)
