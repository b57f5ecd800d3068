"""2-D views of d-dimensional points: principal components (computed on the points' own device), and a t-SNE
embedding for data whose structure no linear view shows (scikit-learn, an optional extra)."""

from __future__ import annotations

import numpy as np

TSNE_MAX_POINTS = 50_000  # t-SNE grows as N log N with a large constant: minutes on two cores beyond this


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


def tsne_2d(values: np.ndarray, seed: int = 0) -> np.ndarray:
    """(N, 2) float32 t-SNE embedding (scikit-learn's Barnes-Hut, PCA start, seeded: the same view every run)."""
    try:
        from sklearn.manifold import TSNE
    except ImportError:
        raise ImportError("a t-SNE view needs scikit-learn: pip install 'dpstudio[embed]'") from None
    n, d = values.shape
    if d < 2:
        raise ValueError("a t-SNE view needs at least 2 features: one is already drawn against its input row")
    if n > TSNE_MAX_POINTS:
        raise ValueError(f"a t-SNE view of {n:,} points would take too long; it is offered up to {TSNE_MAX_POINTS:,}")
    perplexity = min(30.0, (n - 1) / 3)  # scikit-learn needs perplexity < N
    embedding = TSNE(n_components=2, init="pca", perplexity=perplexity, random_state=seed).fit_transform(np.asarray(values, np.float64))
    return embedding.astype(np.float32)
