"""pca_2d against a float64 SVD reference, on random, degenerate and duplicate-heavy data."""

import numpy as np
import pytest

from dpstudio.engine.projection import pca_2d


def reference_scores(points: np.ndarray) -> np.ndarray:
    """Scores on the two leading right singular vectors, each axis's largest loading made positive."""
    centered = points.astype(np.float64) - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    axes = vt[:2].T
    axes *= np.sign(axes[np.argmax(np.abs(axes), axis=0), np.arange(axes.shape[1])])
    scores = centered @ axes
    return np.pad(scores, ((0, 0), (0, 2 - scores.shape[1])))


@pytest.mark.parametrize("shape", [(500, 5), (300, 2), (200, 40)])
def test_matches_the_svd_of_anisotropic_data(shape, rng):
    n, d = shape
    points = (rng.normal(size=(n, d)) * np.geomspace(10, 0.1, d)) @ np.linalg.qr(rng.normal(size=(d, d)))[0]
    points = points.astype(np.float32)
    np.testing.assert_allclose(pca_2d(points, np), reference_scores(points), rtol=1e-4, atol=1e-4)


def test_one_dimension_duplicates_and_a_constant_column(rng):
    line = rng.normal(size=(100, 1)).astype(np.float32)
    scores = pca_2d(line, np)
    assert scores.shape == (100, 2) and not scores[:, 1].any()
    np.testing.assert_allclose(np.abs(scores[:, 0]), np.abs(line[:, 0] - line.mean()), rtol=1e-5, atol=1e-5)
    repeated = np.repeat(rng.normal(size=(5, 3)), 40, axis=0).astype(np.float32)
    repeated[:, 2] = 7.0  # no variance at all along one axis
    scores = pca_2d(repeated, np)
    np.testing.assert_allclose(scores, reference_scores(repeated), rtol=1e-4, atol=1e-4)
    assert np.unique(scores, axis=0).shape[0] == 5  # duplicates stay together
    assert not pca_2d(np.ones((10, 3), np.float32), np).any()  # all identical: everything at the origin


def test_t_sne_is_refused_past_its_size_limit():
    from dpstudio.engine.projection import TSNE_MAX_POINTS, tsne_2d

    with pytest.raises(ValueError, match="t-SNE view of 50,001 points would take too long"):
        tsne_2d(np.zeros((TSNE_MAX_POINTS + 1, 2), np.float32))
    with pytest.raises(ValueError, match="a t-SNE view needs at least 2 features"):  # not scikit-learn's n_components error
        tsne_2d(np.zeros((100, 1), np.float32))
