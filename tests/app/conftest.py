"""What the headless app tests share."""

import numpy as np
import pandas as pd
import pytest

from dpstudio import sample_data
from dpstudio.app.datasets import DatasetCache


@pytest.fixture(scope="module")
def cache():
    """A data-set cache on the CPU backend, one per test module (its sample sets indexed once)."""
    return DatasetCache(max_datasets=2, backend="cpu")


@pytest.fixture
def blobs_with_nan_rows(tmp_path):
    """The blobs sample as a CSV file with rows 3, 10 and 500 NaN: points after them sit at other places than
    their rows once those rows are left out."""
    points = pd.read_csv(sample_data.path("blobs"))
    points.iloc[[3, 10, 500]] = np.nan
    path = tmp_path / "gaps.csv"
    points.to_csv(path, index=False)
    return path
