"""The scikit-learn parameter protocol shared by every estimator: the constructor's arguments are the parameters."""

from __future__ import annotations

import inspect
from typing import Any


class ParamsMixin:
    """``get_params`` / ``set_params`` / ``repr`` read from the constructor's signature, as scikit-learn's
    BaseEstimator does, so an estimator only stores its arguments in ``__init__``."""

    @classmethod
    def _parameters(cls) -> dict[str, inspect.Parameter]:
        return {k: p for k, p in inspect.signature(cls.__init__).parameters.items() if k != "self"}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._parameters()}

    def set_params(self, **params):
        valid = self._parameters()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__} (valid: {', '.join(valid)})")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = self._parameters()
        changed = {k: v for k, v in self.get_params().items() if v != defaults[k].default}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
