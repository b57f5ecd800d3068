"""Choosing the compute backend: ``"cpu"`` (Numba), ``"gpu"`` (CuPy), or ``"auto"`` (GPU when usable)."""

from __future__ import annotations

import functools
import logging
from types import ModuleType

log = logging.getLogger("dpstudio")

BACKENDS = ("auto", "cpu", "gpu")


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine."""


class MissingExtra(ImportError):
    """An optional dependency that is not installed; the message names the extra that installs it."""


@functools.cache
def _gpu() -> ModuleType:
    try:
        from . import gpu  # noqa: PLC0415  (imports CuPy; only when asked for)
    except ImportError as exc:
        raise BackendUnavailable(f"the GPU backend is not available: {exc}") from exc
    gpu.check_usable()
    return gpu


@functools.cache
def _auto() -> ModuleType:
    try:
        return _gpu()
    except BackendUnavailable as exc:
        log.info("%s; using the CPU backend", exc)
        from . import cpu

        return cpu


def get_backend(name: str = "auto") -> ModuleType:
    """The backend module for ``name``; "auto" falls back to the CPU once, with one log line saying why."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    if name == "cpu":
        from . import cpu

        return cpu
    return _gpu() if name == "gpu" else _auto()
