"""Device profiles (dmlgpu/runtime/profiles.py): every operator under each profile either matches NumPy or is
refused with a DeviceError naming the limit or feature, before any GPU work, as the device feature
matrix of docs/guide/devices.md says. Devices are opened with explicit profiles, so this file runs under any DMLGPU_DEVICE_PROFILE;
scripts/test.sh also runs the gather tests under the minimum profile and the property tests under others."""
import numpy as np
import pytest

import dmlgpu
from dmlgpu import DeviceError, reference
from dmlgpu.kernels import table as kernels, spirv
from dmlgpu.plans import reduction_cpu
from dmlgpu.runtime import profiles

PROFILES = ["full", "minimum", "no-int64", "no-device-address", "no-narrow-storage", "small-shared-memory",
            "small-workgroups", "few-buffers"]
NO_WIDE = ("minimum", "no-int64", "no-device-address")


@pytest.fixture(scope="module", params=PROFILES)
def dev(request):
    d = dmlgpu.Device(profile=request.param)
    yield d
    d.close()


def check(dev, refused_by, call, expected):
    """``call()`` matches ``expected`` (NumPy), or, where ``refused_by`` names the profiles that refuse it
    (a limit or feature name, ``profiles``), raises DeviceError naming it."""
    name, refusing = refused_by if refused_by else (None, ())
    if dev.profile.name in refusing:
        with pytest.raises(DeviceError, match=name):
            call()
    else:
        out = call()
        out = out.numpy() if isinstance(out, dmlgpu.Tensor) else out
        np.testing.assert_array_equal(out, expected)


def kp_features(dev) -> frozenset:
    """Every optional feature name that kp reports (enabled or not)."""
    return frozenset(dev.runtime._mgr.enabled_features())


def test_profile_masks_features_and_limits(dev):
    p, info = dev.profile, dev.info
    phys = dev.physical_info              # kp 0018 reports maxPerStageDescriptorStorageBuffers; Vulkan's minimums
    assert phys.max_per_stage_storage_buffers >= 4 and phys.max_compute_shared_memory_size >= 16384
    assert kp_features(dev) == profiles.FEATURES
    assert dev.features == dev.physical_info.features - p.withheld
    assert dev.features == frozenset(n for n, on in dev.runtime._mgr.enabled_features().items() if on)
    for name, value in p.limits:
        have = getattr(info, profiles.LIMITS[name])
        if isinstance(have, tuple):
            assert all(a <= b for a, b in zip(have, profiles._triple(value))), name
        else:
            assert have <= value, name
    assert dev.runtime.geometry is (kernels.SMALL_GEOMETRY if info.max_workgroup_invocations < 256
                           else kernels.FULL_GEOMETRY)
    if p.name == "minimum":
        assert not dev.features and info.max_storage_buffer_range == 1 << 27 and dev.max_block <= 1 << 27
        assert info.max_workgroup_count == (65535,) * 3 and info.max_compute_shared_memory_size == 16384


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int16, np.float64, np.complex128])
def test_gathers(dev, dtype):
    rng = np.random.default_rng(1)
    x = (rng.random((300, 7)) * 100).astype(dtype)
    idx = rng.integers(-300, 300, (5, 2)).astype(np.int64)
    check(dev, None, lambda: dmlgpu.gather(x, idx, axis=0, device=dev), reference.gather(x, idx, 0))
    e = rng.integers(0, 7, (300, 3)).astype(np.uint32)
    check(dev, None, lambda: dmlgpu.gather_elements(x, e, axis=1, device=dev), reference.gather_elements(x, e, 1))
    nd = np.stack([rng.integers(0, 300, 9), rng.integers(0, 7, 9)], 1)
    check(dev, None, lambda: dmlgpu.gather_nd(x, nd, device=dev), reference.gather_nd(x, nd))


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.float16])
def test_scatters(dev, dtype):
    rng = np.random.default_rng(2)
    x = (rng.random((200, 6)) * 100).astype(dtype)
    idx = rng.integers(0, 200, (40, 1))
    upd = (rng.random((40, 6)) * 100).astype(dtype)
    check(dev, None, lambda: dmlgpu.scatter_nd(x, idx, upd, device=dev), reference.scatter_nd(x, idx, upd))
    # along an axis of at most kernels.LINE_CLAIM_WORDS: one pass, 4 buffers (scatter_lines.comp)
    e = rng.integers(0, 200, (30, 6))
    check(dev, None, lambda: dmlgpu.scatter_elements(x, e, upd[:30], axis=0, device=dev),
          reference.scatter_elements(x, e, upd[:30], 0))
    # a longer axis: claim and write (5 buffers; under 4, the FEW passes: claims, then writes by output unit)
    long = (rng.random(kernels.LINE_CLAIM_WORDS + 5) * 100).astype(dtype)
    le = rng.integers(0, long.size, 50)
    check(dev, None, lambda: dmlgpu.scatter_elements(long, le, long[:50], axis=0, device=dev),
          reference.scatter_elements(long, le, long[:50], 0))


@pytest.mark.parametrize("dtype, reduction", [(np.int32, "add"), (np.uint32, "max"), (np.float32, "add"),
                                              (np.float64, "mul"), (np.int64, "min"), (np.uint8, "max")])
@pytest.mark.parametrize("row", [1, 3])
def test_reductions(dev, dtype, reduction, row):
    """32-bit integer add/min/max on short rows run by atomics (4 buffers); the others sort the updates (their
    FEW kernels under 6 buffers, no levels of partials under 8)."""
    rng = np.random.default_rng(3)
    x = rng.integers(1, 5, (500, row)).astype(dtype)
    idx = rng.integers(0, 500, (3000, 1))
    upd = rng.integers(1, 3, (3000, row)).astype(dtype)
    check(dev, None, lambda: dmlgpu.scatter_nd(x, idx, upd, reduction=reduction, device=dev),
          reference.scatter_nd(x, idx, upd, reduction))
    e = rng.integers(0, 500, (2000, row))
    check(dev, None, lambda: dmlgpu.scatter_elements(x, e, upd[:2000], axis=0, reduction=reduction, device=dev),
          reference.scatter_elements(x, e, upd[:2000], 0, reduction))


def test_chunked_tensor(dev):
    """A tensor held in several blocks needs shaderInt64 and bufferDeviceAddress: refused where withheld,
    before any GPU work (the output is left as it was)."""
    chunked = dmlgpu.Device(profile=dev.profile, chunk_bytes=1024)
    try:
        x = np.arange(4096, dtype=np.float32).reshape(512, 8)
        t = dmlgpu.tensor(x, device=chunked)
        assert t.buffer.chunked
        idx = np.array([511, 0, 300, -1])
        check(chunked, ("largest is 16384 bytes.*(bufferDeviceAddress|shaderInt64)", NO_WIDE),
              lambda: dmlgpu.gather(t, idx, axis=0), reference.gather(x, idx, 0))
        np.testing.assert_array_equal(t.numpy(), x)          # transfers of chunked tensors need no feature
    finally:
        chunked.close()


def test_queued_calls_and_recordings(dev):
    rng = np.random.default_rng(4)
    x = rng.random((400, 16)).astype(np.float32)
    t = dmlgpu.tensor(x, device=dev)
    outs, idxs = [], []
    for k in range(5):                                   # queued eager calls, one batch
        idx = rng.integers(0, 400, 17)
        idxs.append(idx)
        outs.append(dmlgpu.gather(t, dmlgpu.tensor(idx, device=dev), axis=0))
    for out, idx in zip(outs, idxs):
        np.testing.assert_array_equal(out.numpy(), x[idx])
    ids = dmlgpu.tensor(np.zeros(8, np.int32), device=dev)
    with dev.record() as rec:
        rec.upload(ids)
        out = dmlgpu.gather(t, ids, axis=0)
        rec.download(out)
    for k in range(3):
        rec.host(ids)[:] = rng.integers(0, 400, 8)
        rec.run()
        np.testing.assert_array_equal(rec.host(out), x[rec.host(ids)])


def test_refusal_leaves_device_usable(monkeypatch):
    """A refused run records nothing: its new parameter buffers are dropped, so the same words serve a later
    run correctly (staged or mapped). (The sorted plan on every device: CPU devices' fold, which has no sort,
    needs no shared memory.)"""
    monkeypatch.setattr(reduction_cpu, "CPU_FOLD", False)
    with dmlgpu.Device(profile="maxComputeSharedMemorySize=8192") as d:    # the radix sort needs 11 KiB
        x = np.arange(60, dtype=np.float32).reshape(10, 6)
        idx, upd = np.array([[3], [3]]), np.ones((2, 6), np.float32)
        for _ in range(2):
            with pytest.raises(DeviceError, match="maxComputeSharedMemorySize"):
                dmlgpu.scatter_nd(x, idx, upd, reduction="mul", device=d)
            check(d, None, lambda: dmlgpu.scatter_nd(x, idx, upd, device=d), reference.scatter_nd(x, idx, upd))
            check(d, None, lambda: dmlgpu.gather(x, np.arange(10), axis=0, device=d), x)


def test_profile_strings():
    p = profiles.resolve("no-int64,maxComputeSharedMemorySize=8192,-bufferDeviceAddress")
    assert p.withheld == {"shaderInt64", "shaderBufferInt64Atomics", "bufferDeviceAddress"}
    assert dict(p.limits) == {"maxComputeSharedMemorySize": 8192}
    with pytest.raises(ValueError, match="no-such"):
        profiles.resolve("no-such")
    with pytest.raises(ValueError, match="-shaderFloat64"):
        profiles.resolve("-shaderFloat64")


def test_shared_memory_limit_below_the_lines_kernel():
    """maxComputeSharedMemorySize under scatter_lines.comp's 16 KiB (Vulkan allows no such device: a profile
    string lowers it past the minimum): SCATTER_ELEMENTS falls back to claim and write; a kernel that still
    needs more than the limit is refused naming it."""
    with dmlgpu.Device(profile="maxComputeSharedMemorySize=8192") as d:
        rng = np.random.default_rng(5)
        x = rng.random((10, 4)).astype(np.float32)
        e, u = rng.integers(0, 10, (6, 4)), rng.random((6, 4)).astype(np.float32)
        check(d, None, lambda: dmlgpu.scatter_elements(x, e, u, axis=0, device=d),
              reference.scatter_elements(x, e, u, 0))
        with pytest.raises(DeviceError, match="8192"):
            d.runtime.admission.admit([dmlgpu.runtime.Dispatch(kernels.lines_variant(4, 8), (), 1)], lambda: None)


@pytest.mark.parametrize("profile, kernel, named", [
    ("no-int64", kernels.variant("gather", 4, 4, wide=True), "shaderInt64"),
    ("no-device-address", kernels.atomic_variant("u", "add", 4, wide=True), "bufferDeviceAddress"),
    ("few-buffers", "radix_scatter", "maxPerStageDescriptorStorageBuffers \\(4\\)"),
    ("maxComputeSharedMemorySize=2048", "radix_scatter",
     f"{spirv.requirements('radix_scatter').shared_bytes} bytes of shared memory"),
])
def test_admission_names_the_limit_or_feature(profile, kernel, named):
    """The runtime's check of a run's kernels (runtime/scratch.py's Admission.admit) names what the device lacks,
    before recording."""
    with dmlgpu.Device(profile=profile + ",few-buffers") as d:     # few-buffers: checks on
        with pytest.raises(DeviceError, match=named):
            d.runtime.admission.admit([dmlgpu.runtime.Dispatch(kernel, (), 1)], lambda: None)


def test_environment_names_the_default_profile(monkeypatch):
    """DMLGPU_DEVICE_PROFILE is the profile of devices opened without one; an explicit profile wins."""
    monkeypatch.setenv("DMLGPU_DEVICE_PROFILE", "no-int64")
    assert profiles.resolve(None) == profiles.PROFILES["no-int64"]._replace(name="no-int64")
    with dmlgpu.Device() as d:
        assert d.profile.name == "no-int64" and "shaderInt64" not in d.features
    with dmlgpu.Device(profile=profiles.PROFILES["full"]) as d:
        assert d.features == d.physical_info.features and d.runtime.admission.admitted is None
    monkeypatch.setenv("DMLGPU_DEVICE_PROFILE", "no-such")
    with pytest.raises(ValueError, match="no-such"):
        dmlgpu.Device()


@pytest.mark.parametrize("extra", [-1, 1])
@pytest.mark.parametrize("tiles", [1, 16, 17])
def test_small_geometry_sort_edges(tiles, extra):
    """The radix sort in the small geometry (7-bit digits, tiles of 16 x 128 pairs, blocks of 16 x 128 counts)
    at its tile and scan-block edges, through its FEW kernels (minimum) and its own (small-workgroups)."""
    n = tiles * kernels.SMALL_GEOMETRY.radix_tile + extra
    rng = np.random.default_rng(n)
    x = rng.random(3000).astype(np.float32)
    idx = rng.integers(0, 3000, (n, 1))
    upd = rng.random(n).astype(np.float32)
    for profile in ("minimum", "small-workgroups"):
        with dmlgpu.Device(profile=profile) as d:
            check(d, None, lambda: dmlgpu.scatter_nd(x, idx, upd, reduction="add", device=d),
                  reference.scatter_nd(x, idx, upd, "add"))
