"""The runtime's launch contract (runtime/launch.py) and the clock hold (runtime/clocks.py)."""
import ctypes

import numpy as np
import pytest

import dmlgpu
from dmlgpu.runtime import clocks


def test_a_launch_gives_its_scratch_back_and_keeps_outputs(device):
    with device.runtime.launch() as launch:
        scratch = launch.scratch(1 << 16)
        out = launch.output(1 << 16)
        assert launch.taken == [scratch]
    assert "block_list" not in vars(scratch)     # returned to the allocator
    out.write(np.arange(4, dtype=np.uint32))
    assert out.read()[:16].view(np.uint32).tolist() == [0, 1, 2, 3]


def test_a_launch_that_raises_gives_its_scratch_back(device):
    before = device.memory_stats()["allocated_bytes"]
    with pytest.raises(ZeroDivisionError):
        with device.runtime.launch() as launch:
            launch.scratch(1 << 20)
            1 / 0
    assert device.memory_stats()["allocated_bytes"] == before
    with device.runtime.launch() as launch:      # the lock was released
        assert launch.run([]) == []


def test_a_launch_on_a_closed_device_raises_and_releases_the_lock():
    dev = dmlgpu.Device()
    dev.close()
    with pytest.raises(dmlgpu.DeviceError, match="closed"):
        dev.runtime.launch().__enter__()
    assert dev.runtime.lock.acquire(blocking=False)
    dev.runtime.lock.release()


class _FakeCuda:
    """libcuda's calls that the clock hold makes, for two GPUs."""

    def __init__(self, uuids):
        self.uuids = uuids
        self.retained, self.released = [], []

    def cuInit(self, flags):
        return 0

    def cuDeviceGetCount(self, count):
        count._obj.value = len(self.uuids)
        return 0

    def cuDeviceGet(self, dev, ordinal):
        dev._obj.value = ordinal
        return 0

    def cuDeviceGetUuid(self, out, dev):
        ctypes.memmove(out, self.uuids[dev.value], 16)
        return 0

    def cuDevicePrimaryCtxRetain(self, ctx, dev):
        self.retained.append(dev.value)
        return 0

    def cuDevicePrimaryCtxRelease(self, dev):
        self.released.append(dev.value)
        return 0


def test_the_clock_hold_retains_the_cuda_context_of_the_same_gpu_once(monkeypatch):
    fake = _FakeCuda([bytes(range(16)), bytes(range(1, 17))])
    monkeypatch.setattr(clocks, "_cuda", fake)
    monkeypatch.setattr(clocks, "_cuda_error", None)
    monkeypatch.setattr(clocks, "_retained", {})
    first = clocks.ClockHold(clocks.NVIDIA, bytes(range(1, 17)), True)
    second = clocks.ClockHold(clocks.NVIDIA, bytes(range(1, 17)), None)
    assert first.wait() == second.wait() == "held (CUDA device 1)"
    assert fake.retained == [1]                 # one context for both Devices of that GPU
    first.release()
    first.release()                             # once
    assert fake.released == []
    second.release()
    assert fake.released == [1] and second.state == "released"
    other = clocks.ClockHold(clocks.NVIDIA, bytes(16), True)
    assert other.wait() == "no CUDA device has this GPU's UUID" and fake.retained == [1]


def test_releasing_a_clock_hold_does_not_wait_for_the_cuda_driver(monkeypatch):
    """A Device closed while its hold is still being made (cuInit is slow) returns at once, and the hold is
    then never made."""
    import threading
    started, go = threading.Event(), threading.Event()
    fake = _FakeCuda([bytes(range(16))])

    def slow_init(flags):
        started.set()
        go.wait(10)
        return 0

    fake.cuInit = slow_init
    monkeypatch.setattr(clocks.ctypes, "CDLL", lambda name: fake)
    monkeypatch.setattr(clocks, "_cuda", None)
    monkeypatch.setattr(clocks, "_cuda_error", None)
    monkeypatch.setattr(clocks, "_retained", {})
    hold = clocks.ClockHold(clocks.NVIDIA, bytes(range(16)), True)
    assert started.wait(10)
    hold.release()                               # cuInit still running: no wait
    assert hold.state == "released before it was made"
    go.set()
    assert hold.wait() == "released before it was made" and fake.retained == []


def test_the_clock_hold_is_off_where_asked_and_on_other_gpus(monkeypatch):
    monkeypatch.setenv("DMLGPU_HOLD_CLOCKS", "0")
    assert clocks.ClockHold(clocks.NVIDIA, bytes(16), None).wait() == "off"
    assert clocks.ClockHold(0x1002, bytes(16), True).wait() == "not an NVIDIA GPU"
    assert clocks.ClockHold(clocks.NVIDIA, b"", True).wait() == "the device reports no UUID"


def test_a_device_reports_its_clock_hold(device):
    assert device.clock_hold.wait() in ("not an NVIDIA GPU", "off") or device.clock_hold.state.startswith(
        ("held", "no "))
    assert len(device.info.device_uuid) in (0, 16)
    with dmlgpu.Device(device.info.index, hold_clocks=False) as off:      # the public Device takes the switch
        assert off.clock_hold.wait() == "off"
