"""What the headless app tests share."""

import pytest

from dpstudio.app.datasets import DatasetCache


@pytest.fixture(scope="module")
def cache():
    """A data-set cache on the CPU backend, one per test module (its sample sets indexed once)."""
    return DatasetCache(max_datasets=2, backend="cpu")
