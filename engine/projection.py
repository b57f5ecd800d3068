"""A 2-D view of d-dimensional points: principal components, computed on the points' own device."""

from __future__ import annotations


def pca_2d(points, xp):
    """(N, 2) float32 scores on the two leading principal components (zeros past d), signs fixed.

    Uses the d x d covariance, so it costs O(N d^2) and never an N x N matrix; ``xp`` is NumPy or CuPy.
    """
    values = points.astype(xp.float64)
    centered = values - values.mean(axis=0)
    covariance = centered.T @ centered / max(values.shape[0] - 1, 1)
    eigenvalues, eigenvectors = xp.linalg.eigh(covariance)
    leading = eigenvectors[:, xp.argsort(-eigenvalues, kind="stable")[:2]]
    # eigh's signs are arbitrary: make each axis's largest loading positive, so the view is reproducible.
    signs = xp.sign(leading[xp.argmax(xp.abs(leading), axis=0), xp.arange(leading.shape[1])])
    scores = centered @ (leading * xp.where(signs == 0, 1.0, signs))
    if scores.shape[1] < 2:
        scores = xp.concatenate([scores, xp.zeros((scores.shape[0], 2 - scores.shape[1]))], axis=1)
    return scores.astype(xp.float32)
