"""Every hardware test gets its own empty calibration cache: none reads or writes the user's."""

import pytest


@pytest.fixture(autouse=True)
def private_calibration_cache(tmp_path, monkeypatch):
    cache = tmp_path / "neural-cost-cache"
    monkeypatch.setenv("NEURAL_COST_CACHE_DIR", str(cache))
    return cache
