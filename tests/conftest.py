"""Shared fixtures. Hypothesis runs derandomized (a fixed seed) with a CI-sized budget; for a long fuzzing
campaign by hand: ``DMLGPU_FUZZ_EXAMPLES=100000 bash scripts/test.sh -k fuzz``."""
import os

import pytest
from hypothesis import HealthCheck, settings

import dmlgpu

settings.register_profile(
    "dmlgpu",
    derandomize=True,
    max_examples=int(os.environ.get("DMLGPU_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.load_profile("dmlgpu")


@pytest.fixture(scope="session")
def device():
    """The default device (lavapipe in CI)."""
    return dmlgpu.default_device()
