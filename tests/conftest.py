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


@pytest.fixture(scope="session")
def memory_device():
    """``memory_device(direct, **kwargs)``: ``dmlgpu.Device(direct_memory=direct, **kwargs)``. Mapped device memory
    (``direct``) needs a memory type both device-local and host-visible: on a device without one (a discrete GPU
    without a host-visible heap) the test that asked for it is skipped, saying why, instead of erroring."""
    def open_device(direct: bool, **kwargs):
        try:
            return dmlgpu.Device(direct_memory=direct, **kwargs)
        except dmlgpu.DeviceError as e:
            if direct and "direct_memory=True is not possible" in str(e):
                pytest.skip(str(e))
            raise
    return open_device


def pytest_sessionfinish(session, exitstatus):
    """With DMLGPU_VALIDATION=1 the whole run fails on any message of the Vulkan validation layer."""
    from dmlgpu.runtime import validation
    if not validation.requested() or validation.log_path() is None:
        return
    found = validation.messages()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"Vulkan validation ({validation.log_path()}): {len(found)} messages")
        for m in found[:20]:
            reporter.write_line(m[:2000])
    if found:
        session.exitstatus = 1
