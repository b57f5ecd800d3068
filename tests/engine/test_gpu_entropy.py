"""The entropy dc rule on the GPU against the CPU backend and the float64 reference (real GPU only)."""

import numpy as np
import pytest

from dpstudio.engine import IndexedPoints, cpu, entropy

from . import oracle
from .gpu_support import gpu, needs_gpu
from .datasets import CASES, blobs
from .test_entropy_dc import reference_entropy

pytestmark = needs_gpu


@pytest.mark.parametrize("case", CASES)
def test_one_pass_curve_matches_the_reference_and_the_cpu(case, rng):
    points = CASES[case](rng).astype(np.float32)
    on_gpu, on_cpu = IndexedPoints(points, backend="gpu"), IndexedPoints(points, backend="cpu")
    sq = oracle.rule_sq_dists(points)
    positive = sq[sq > 0]
    scale = float(np.median(positive)) if positive.size else 1.0
    dbeta, first = 2.0 ** np.arange(3) / (4 * scale), np.full(3, 4)
    every = np.arange(1 << on_gpu.index.depth)
    beta, h = entropy.entropy_curve(gpu, on_gpu.index, every, dbeta, first, 4)
    np.testing.assert_allclose(h, reference_entropy(sq, beta), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, entropy.entropy_curve(cpu, on_cpu.index, every, dbeta, first, 4)[1], rtol=1e-13, atol=1e-13)
    some = every[::3]
    np.testing.assert_allclose(entropy.entropy_curve(gpu, on_gpu.index, some, [dbeta[1]], [7], 9)[1],
                               entropy.entropy_curve(cpu, on_cpu.index, some, [dbeta[1]], [7], 9)[1], rtol=1e-13)  # fmt: skip


@pytest.mark.parametrize(("n", "d"), [(3000, 2), (50_000, 2), (20_000, 8), (200_000, 3)])
def test_entropy_dc_equals_the_cpu(n, d, rng):
    points = np.vstack([blobs(rng, n - n // 10, d), rng.uniform(-20, 20, (n // 10, d))]).astype(np.float32)
    on_gpu, on_cpu = IndexedPoints(points, backend="gpu").entropy_dc(), IndexedPoints(points, backend="cpu").entropy_dc()
    np.testing.assert_allclose(on_gpu.entropy, on_cpu.entropy, rtol=1e-12)
    assert on_gpu.dc == pytest.approx(on_cpu.dc, rel=1e-9)


def test_too_many_values_is_refused(rng):
    tree = IndexedPoints(blobs(rng, 100), backend="gpu").index
    with pytest.raises(ValueError, match="at most 64 values"):
        gpu.potential_sums(tree, np.arange(2), np.ones(17), np.full(17, 4), np.ones((17, 4), np.float32), 1.0, 1.0)
