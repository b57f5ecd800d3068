import os

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """Fresh random data every run; the seed is printed so a failure can be replayed with DPSTUDIO_SEED."""
    seed = int(os.environ.get("DPSTUDIO_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"{request.node.name}: DPSTUDIO_SEED={seed}")
    return np.random.default_rng(seed)
