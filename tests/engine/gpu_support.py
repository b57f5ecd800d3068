"""The GPU backend for the tests (or why there is none), the marks of a GPU-only test, and poisoned kernel outputs."""

import pytest

from dpstudio.engine import get_backend
from dpstudio.engine.backends import BackendUnavailable

try:
    gpu = get_backend("gpu")
except BackendUnavailable as reason:
    gpu, why = None, str(reason)
else:
    why = ""

needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(gpu is None, reason=why or "no GPU")]


def poison_outputs(monkeypatch) -> None:
    """Every GPU kernel output starts as garbage, so an element a kernel forgets to write fails the comparison."""
    import cupy as cp

    def poisoned(shape, dtype):
        out = cp.empty(shape, dtype)
        out.view(cp.uint8).fill(0xA5)
        return out

    monkeypatch.setattr(gpu, "_output", poisoned)
