"""Push descriptors (kp patch 0025, runtime/pipelines.py): where the device has VK_KHR_push_descriptor and the
profile does not withhold it ("pushDescriptor"), kernels bind their buffers without descriptor sets; the
``minimum`` and ``no-push-descriptors`` profiles keep the descriptor-set path. Both give NumPy's results, with
new index Tensors at every call, queued, synchronous and in replayed recordings."""
import numpy as np
import pytest

import dmlgpu
from dmlgpu.kernels import table as kernels, spirv

PROFILES = ["full", "no-push-descriptors", "minimum"]
# VK_KHR_push_descriptor's required minimum of maxPushDescriptors
VULKAN_MIN_PUSH_DESCRIPTORS = 32


@pytest.fixture(scope="module", params=PROFILES)
def dev(request):
    d = dmlgpu.Device(profile=request.param)
    yield d
    d.close()


def pushes(d) -> bool:
    """Whether the device's kernels bind by push descriptors, as its profile's info says."""
    return "pushDescriptor" in d.features


def bound_modes(d) -> set:
    """pushes_descriptors() of every algorithm the device keeps for the buffer sets of past dispatches."""
    return {bound.algorithm.pushes_descriptors() for bound in d.runtime._pipelines._algorithms.values()}


def test_the_mode_is_what_the_device_offers(dev):
    phys, info = dev.physical_info, dev.info
    assert ("pushDescriptor" in phys.features) == (phys.max_push_descriptors > 0)
    if phys.max_push_descriptors:
        assert phys.max_push_descriptors >= VULKAN_MIN_PUSH_DESCRIPTORS
    if info.type == "CPU":                         # lavapipe has the extension
        assert "pushDescriptor" in phys.features
    withheld = "pushDescriptor" in dev.profile.withheld
    assert pushes(dev) == ("pushDescriptor" in phys.features and not withheld)
    assert info.max_push_descriptors == (0 if withheld else phys.max_push_descriptors)
    if dev.profile.name in ("minimum", "no-push-descriptors"):
        assert not pushes(dev)
    t = dmlgpu.tensor(np.arange(40, dtype=np.float32).reshape(10, 4), device=dev)
    out = dmlgpu.gather(t, dmlgpu.tensor(np.array([3, 1, 3]), device=dev))
    np.testing.assert_array_equal(out.numpy(), np.arange(40, dtype=np.float32).reshape(10, 4)[[3, 1, 3]])
    assert bound_modes(dev) == {pushes(dev)}      # every kernel binds at most maxPushDescriptors buffers


def test_every_kernel_fits_the_push_descriptor_minimum():
    """No kernel binds more buffers than any device with VK_KHR_push_descriptor may push (kp falls back to a
    descriptor set for one that would)."""
    assert max(spirv.requirements(n).bindings for n in kernels.VARIANTS) <= VULKAN_MIN_PUSH_DESCRIPTORS


def test_fresh_index_tensors_match_numpy(dev):
    """Gathers and scatters whose index Tensors (and results, kept alive) are new at every call: each call
    binds a new buffer set."""
    rng = np.random.default_rng(11)
    table = rng.standard_normal((64, 5)).astype(np.float32)
    t = dmlgpu.tensor(table, device=dev)
    held = []
    for step in range(12):
        ids = rng.integers(-64, 64, 7 + step)
        out = dmlgpu.gather(t, dmlgpu.tensor(ids, device=dev))
        held.append((out, table[ids]))
        elems = rng.integers(0, 64, (9, 5))
        got = dmlgpu.gather_elements(t, dmlgpu.tensor(elems, device=dev), axis=0)
        held.append((got, np.take_along_axis(table, elems, axis=0)))
    for out, expected in held:
        np.testing.assert_array_equal(out.numpy(), expected)

    cache = np.zeros((32, 3), np.float32)
    c = dmlgpu.tensor(cache, device=dev)
    for step in range(16):
        pos = rng.permutation(32)[:4]
        rows = rng.standard_normal((4, 3)).astype(np.float32)
        dmlgpu.scatter_nd(c, dmlgpu.tensor(pos[:, None], device=dev), dmlgpu.tensor(rows, device=dev), out=c)
        cache[pos] = rows
    np.testing.assert_array_equal(c.numpy(), cache)

    data = rng.standard_normal((6, 8)).astype(np.float32)
    for step in range(6):
        where = np.stack([rng.permutation(8)[:3] for _ in range(6)])
        upd = rng.standard_normal((6, 3)).astype(np.float32)
        got = dmlgpu.scatter_elements(dmlgpu.tensor(data, device=dev), dmlgpu.tensor(where, device=dev),
                                      dmlgpu.tensor(upd, device=dev), axis=1)
        expected = data.copy()
        np.put_along_axis(expected, where, upd, axis=1)
        np.testing.assert_array_equal(got.numpy(), expected)
    assert bound_modes(dev) == {pushes(dev)}


def test_recordings_replay_their_bindings(dev):
    """A recording's command buffer holds its bindings (pushed descriptors are recorded into it): each replay
    reads the index Tensor's current contents and writes the same result buffer."""
    rng = np.random.default_rng(12)
    table = rng.standard_normal((40, 4)).astype(np.float32)
    t = dmlgpu.tensor(table, device=dev)
    i = dmlgpu.tensor(np.zeros(6, np.int64), device=dev)
    with dev.record() as rec:
        out = dmlgpu.gather(t, i)
        rec.download(out)
    for _ in range(4):
        ids = rng.integers(0, 40, 6)
        i[...] = ids
        rec.run()
        np.testing.assert_array_equal(rec.host(out), table[ids])


def test_push_and_sets_agree():
    """The same calls on a device that pushes its descriptors and on one that binds descriptor sets give
    the same bytes."""
    results = []
    for profile in ("full", "no-push-descriptors"):
        d = dmlgpu.Device(profile=profile)
        try:
            rng = np.random.default_rng(13)
            t = dmlgpu.tensor(rng.integers(0, 1000, (50, 3)).astype(np.int32), device=d)
            outs = [dmlgpu.gather(t, dmlgpu.tensor(rng.integers(0, 50, 5), device=d), axis=0) for _ in range(10)]
            results.append([o.numpy() for o in outs])
        finally:
            d.close()
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
