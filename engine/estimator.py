"""What every estimator shares: the scikit-learn parameter protocol, and fitting on a built or shared index."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .indexed import IndexedPoints, Progress, copy_sharing


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


def fitted_result(read) -> property:
    """A learned attribute: ``read(estimator)`` once ``_require_fit`` has found the estimator fitted, on its index's
    current points."""

    def get(estimator):
        estimator._require_fit()
        return read(estimator)

    return property(get)


class IndexedEstimator(ParamsMixin):
    """An estimator over an ``IndexedPoints``: ``fit`` builds one from X, or shares X when it already is one (its
    backend is then used); ``_FITTED`` names the attribute that a finished fit leaves."""

    _FITTED = "_tree"
    _REFRESH = "fit again"  # what brings an estimator's results to its index's current points

    def _index(self, X, progress: Progress | None) -> None:
        self.timings_ = {}
        if isinstance(X, IndexedPoints):
            if getattr(self, "client", None) not in (None, X.client):
                raise ValueError("this IndexedPoints computes without the estimator's client: give it the client")
            self.indexed_ = X
        else:
            # only DensityPeaks has a client (its rho and delta are what a Dask cluster computes)
            self.indexed_ = IndexedPoints(X, backend=self.backend, progress=progress, client=getattr(self, "client", None))
            self.timings_["index"] = self.indexed_.index_seconds
        self._backend = self.indexed_.backend
        self.n_features_in_ = self.indexed_.n_dims

    def __deepcopy__(self, memo: dict):
        """A copy fitted on its own copy of ``indexed_`` (updates to one leave the other as it was); the backend
        module and a Dask client are shared."""
        return copy_sharing(self, memo, shared=(getattr(self, "_backend", None), getattr(self, "client", None)))

    def fit_predict(self, X, y=None, progress: Progress | None = None) -> np.ndarray:
        return self.fit(X, progress=progress).labels_

    def _require_fit(self, needs: str | None = None) -> None:
        """Fitted (or holding ``needs``), and, for results, of the index's current points: an ``IndexedPoints``
        updated through another estimator or itself would be read with the old results' lengths and indices."""
        if not hasattr(self, needs or self._FITTED):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet: call fit(X) first")
        if needs is None and self._version != self.indexed_.version:
            raise RuntimeError(f"points were inserted into or deleted from this {type(self).__name__}'s index since its "
                               f"results were computed: {self._REFRESH} to see them")  # fmt: skip

    def _current(self, compute):
        """``compute()``'s result from the index, recorded as of its current points (the version is read first: a
        change meanwhile then reads as one more change, never as none)."""
        version = self.indexed_.version
        result = compute()
        self._version = version
        return result

    @property
    def rows_(self) -> np.ndarray:
        """The stable row number of every point: its place in the order the points arrived (``IndexedPoints.rows``)."""
        self._require_fit()
        return self.indexed_.rows
