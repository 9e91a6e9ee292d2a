"""The runtime: the caching allocator, transfers (direct on unified memory, and through staging), pipelines
shared between buffer sets, the pipeline cache on disk, and out-of-memory errors."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import call_templates as calls
from dmlgpu import reference
from dmlgpu.kernels import spirv
from dmlgpu.runtime import memory, pipelines, transfers
from strategies import run_in_threads


@pytest.fixture(scope="module")
def staged():
    """A device that moves bytes through staging buffers (as discrete GPUs do), whatever the device."""
    dev = dmlgpu.Device(direct_memory=False)
    yield dev
    dev.close()


# ---- the allocator ----

@pytest.mark.parametrize("n, size", [(1, 256), (256, 256), (257, 512), (1 << 20, 1 << 20),
                                     ((1 << 20) + 1, (1 << 20) + (1 << 17)), (3 << 20, 3 << 20),
                                     ((3 << 20) + 1, (3 << 20) + (1 << 18))])
def test_size_classes(n, size):
    assert memory.size_class(n, 1 << 30) == size
    assert size - n < max(256, n // 8 + 1)


def test_size_class_never_exceeds_the_limit():
    assert memory.size_class(1000, 600) == 1000
    assert memory.size_class((1 << 20) + 4, (1 << 20) + 8) == (1 << 20) + 4


def test_freed_blocks_are_reused_and_counted(device):
    device.empty_cache()
    before = device.memory_stats()
    buf = device.buffer(nbytes=100_000)             # class 128 KiB
    s = device.memory_stats()
    assert s["allocated_bytes"] - before["allocated_bytes"] == 1 << 17
    assert s["device_allocations"] == before["device_allocations"] + 1
    assert s["peak_allocated_bytes"] >= s["allocated_bytes"]
    del buf
    s = device.memory_stats()
    assert s["allocated_bytes"] == before["allocated_bytes"] and s["cached_bytes"] == before["cached_bytes"] + (1 << 17)
    again = device.buffer(nbytes=120_000)           # the same class: served from the cache
    s2 = device.memory_stats()
    assert s2["device_allocations"] == s["device_allocations"] and s2["cache_hits"] == s["cache_hits"] + 1
    assert not again.read().any(), "buffer(nbytes=) must be zeros, also in a reused block"
    del again
    device.empty_cache()
    s3 = device.memory_stats()
    assert s3["cached_bytes"] == 0 and s3["cache_releases"] > s2["cache_releases"]
    assert s3["reserved_bytes"] == s3["allocated_bytes"]


def test_the_last_freed_block_is_taken_back_and_counted_once(device):
    """A block freed and asked for again before anything drains the returns (a loop's result) is the same block,
    and the counters are those of the slow path: allocated once, a cache hit, nothing cached."""
    alloc = device.runtime.memory.allocator
    device.empty_cache()
    before = device.memory_stats()
    size = 1 << 12
    block = alloc.allocate(size)
    alloc.free(block)
    again = alloc.allocate(size)                    # straight from the returns
    assert again is block
    s = device.memory_stats()
    assert s["allocated_bytes"] == before["allocated_bytes"] + size and s["cached_bytes"] == before["cached_bytes"]
    assert s["cache_hits"] == before["cache_hits"] + 1 and s["device_allocations"] == before["device_allocations"] + 1
    other = alloc.allocate(size // 2)               # another class: the returns drain first
    alloc.free(again)
    alloc.free(other)
    s = device.memory_stats()
    assert s["allocated_bytes"] == before["allocated_bytes"]
    assert s["cached_bytes"] == before["cached_bytes"] + size + size // 2


def test_out_of_memory_raises_device_error_and_the_device_keeps_working():
    with dmlgpu.Device(memory_limit=4 << 20) as dev:
        table = np.arange(1 << 18, dtype=np.float32)             # 1 MiB
        t = dmlgpu.tensor(table, device=dev)
        with pytest.raises(dmlgpu.DeviceError, match=r"a tensor of 8388608 bytes exceeds this device's memory "
                                                     r"\(4194304 bytes, .*its memory_limit\)"):
            dev.buffer(nbytes=8 << 20)                           # more than it can ever hold: refused at once
        with pytest.raises(dmlgpu.DeviceError, match=r"out of device memory: a buffer of 3670016 bytes"):
            dev.buffer(nbytes=7 << 19)                           # fits the limit, not beside the 1 MiB in use
        other = dmlgpu.tensor(table, device=dev)                  # 2 MiB in use
        with pytest.raises(dmlgpu.DeviceError, match="in use"):
            dmlgpu.gather(t, np.zeros(5 << 16, np.int32))        # 1.25 MiB of indices and of output: 4.5 MiB
        with pytest.raises(dmlgpu.DeviceError, match=r"tensors of 1048576 \+ 3145728 \+ 3145728 = 7340032 bytes "
                                                     r"exceed this device's memory"):
            dmlgpu.gather(t, np.zeros(3 << 18, np.int32))        # more than it can ever hold: refused at once
        del other
        ids = np.array([5, -1, 7])
        assert dmlgpu.gather(t, ids).numpy().tolist() == table[ids].tolist()
        # cached blocks are released to make room before failing
        blocks = [dev.buffer(nbytes=1 << 20) for _ in range(2)]
        del blocks
        assert dev.memory_stats()["cached_bytes"] >= 2 << 20
        big = dev.buffer(nbytes=(2 << 20) + 8)                  # another class: needs the cached memory
        assert dev.memory_stats()["cache_releases"] >= 1 and big.nbytes == (2 << 20) + 8


def test_a_failing_driver_allocation_raises_instead_of_crashing(device):
    with pytest.raises(RuntimeError, match="[Mm]emory type"):
        device.runtime._mgr.buffer(16, 0x40)          # VK_MEMORY_PROPERTY_PROTECTED_BIT: no such memory here
    assert dmlgpu.gather(np.arange(4), [2], device=device).tolist() == [2]


def test_kp_enables_the_device_features_and_reports_the_size_limits(device):
    """kp patch 0015: the optional features the device has are enabled, and buffers have device addresses
    where bufferDeviceAddress is one of them; sizes are bytes (64-bit)."""
    info = device.info
    assert device.features == info.features
    assert device.features <= {"shaderInt64", "shaderInt16", "shaderInt8", "storageBuffer16BitAccess",
                               "storageBuffer8BitAccess", "shaderBufferInt64Atomics", "bufferDeviceAddress",
                               "externalMemoryHost",     # (the extension VK_EXT_external_memory_host: kp patch 0023)
                               "pushDescriptor",         # (the extension VK_KHR_push_descriptor: kp patch 0025)
                               "externalMemoryFd"}       # (the extension VK_KHR_external_memory_fd: kp patch 0026)
    assert info.max_memory_allocation_size >= info.max_storage_buffer_range // 2 > 0
    assert info.max_buffer_size == 0 or info.max_buffer_size >= info.max_storage_buffer_range
    if info.type == "CPU":       # lavapipe (Mesa 22+) has them all
        assert {"shaderInt64", "bufferDeviceAddress", "storageBuffer8BitAccess"} <= device.features
    a, b = (device.runtime._mgr.buffer(1 << 16, 0x1) for _ in range(2))
    assert a.size() == 1 << 14                   # 32-bit words
    if "bufferDeviceAddress" in device.features:
        ends = sorted((t.device_address(), t.device_address() + (1 << 16)) for t in (a, b))
        assert ends[0][0] > 0 and ends[0][1] <= ends[1][0], "two live buffers' address ranges overlap"
    with pytest.raises((RuntimeError, ValueError), match="multiple of 4"):
        device.runtime._mgr.buffer(6, 0x1)


def test_mixed_sizes_leave_device_memory_flat(device):
    rng = np.random.default_rng(0)
    sizes = [4 << 10, 100 << 10, 1 << 20, 3 << 20]
    tables = {n: dmlgpu.tensor(rng.integers(0, 255, n, dtype=np.uint8), device=device) for n in sizes}
    ids = {n: dmlgpu.tensor(rng.integers(0, n, n // 4, dtype=np.int32), device=device) for n in sizes}
    reserved = []
    for i in range(300):
        n = sizes[i % len(sizes)]
        out = dmlgpu.gather(tables[n], ids[n])
        if i % 50 == 0:
            assert np.array_equal(out.numpy(), tables[n].numpy()[ids[n].numpy()])
        del out
        reserved.append(device.memory_stats()["reserved_bytes"])
    assert len(set(reserved[100:])) == 1, "device memory grew after the first hundred calls"


# ---- transfers ----

@pytest.mark.parametrize("n", [4, 1000, 5 << 20, (70 << 20) + 12])
def test_buffer_round_trip_through_staging_and_directly(device, staged, n):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    for dev in (device, staged):
        buf = dev.buffer(data)
        got = buf.read()
        assert got.size == -(-n // 4) * 4 and np.array_equal(got[:n], data) and not got[n:].any()
        t = dmlgpu.tensor(data, device=dev)
        assert np.array_equal(t.numpy(), data)


def test_write_at_an_offset(staged, device):
    for dev in (device, staged):
        buf = dev.buffer(nbytes=64)
        buf.write(np.arange(8, dtype=np.uint8), offset=16)
        assert buf.read().tolist() == [0] * 16 + list(range(8)) + [0] * 40
        with pytest.raises(ValueError, match="do not fit"):
            buf.write(np.zeros(16, np.uint8), offset=56)


@pytest.mark.parametrize("rows", [3, 40_000])        # small (one submission) and large (streamed) operands
def test_operations_on_a_staging_device(staged, rows):
    rng = np.random.default_rng(rows)
    table = rng.standard_normal((rows, 64), dtype=np.float32)
    ids = rng.integers(-rows, rows, rows)
    assert np.array_equal(dmlgpu.gather(table, ids, device=staged), table[ids])
    upd = rng.standard_normal((rows, 64), dtype=np.float32)
    got = dmlgpu.scatter_nd(table, ids.reshape(-1, 1), upd, device=staged)
    assert np.array_equal(got, reference.scatter_nd(table, ids.reshape(-1, 1), upd))
    t = dmlgpu.tensor(table, device=staged)
    assert np.array_equal(dmlgpu.gather(t, dmlgpu.tensor(ids, device=staged)).numpy(), table[ids])


def test_recording_uploads_and_downloads_on_a_staging_device(staged):
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    t = dmlgpu.tensor(table, device=staged)
    ids = dmlgpu.tensor(np.zeros(3, np.int32), device=staged)
    with staged.record() as rec:
        rec.upload(ids)
        out = dmlgpu.gather(t, ids)
        rec.download(out)
    for new in ([1, 2, 3], [15, -1, 0]):
        rec.host(ids)[...] = new
        rec.run()
        assert np.array_equal(rec.host(out), table[new])


def test_host_copy_in_parallel_pieces():
    src = np.random.default_rng(1).integers(0, 256, (20 << 20) + 3, dtype=np.uint8)
    dst = np.zeros_like(src)
    transfers.host_copy(dst, src)
    assert np.array_equal(dst, src)


# ---- pipelines ----

def test_one_pipeline_per_kernel_variant_whatever_the_buffers(device):
    rng = np.random.default_rng(2)
    tables = [dmlgpu.tensor(rng.standard_normal((50 + i, 3), dtype=np.float32), device=device) for i in range(4)]
    ids = dmlgpu.tensor(np.array([1, 0, 2], np.int64), device=device)
    dmlgpu.gather(tables[0], ids)
    before = device.memory_stats()
    outs = [dmlgpu.gather(t, ids) for t in tables[1:]]           # new buffer sets, same kernel variant
    after = device.memory_stats()
    assert after["pipelines"] == before["pipelines"]
    assert after["algorithms"] > before["algorithms"]
    for t, out in zip(tables[1:], outs):
        assert np.array_equal(out.numpy(), t.numpy()[[1, 0, 2]])


def test_pipeline_cache_is_saved_and_loaded(tmp_path):
    code = textwrap.dedent("""
        import numpy as np, dmlgpu
        dev = dmlgpu.Device()
        path = dev.runtime._pipelines.cache_path           # (its profile's file, under DMLGPU_DEVICE_PROFILE too)
        print("EXISTED", path.exists())
        print("RESULT", dmlgpu.gather(np.arange(10, dtype=np.int16), [9, -2], device=dev).tolist())
        print("PIPELINES", dev.memory_stats()["pipelines"])
    """)
    env = dict(os.environ, DMLGPU_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "EXISTED False" in first.stdout and "RESULT [9, 8]" in first.stdout
    files = list(tmp_path.glob("pipelines-*.bin"))
    assert len(files) == 1 and files[0].stat().st_size > 0
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    assert "EXISTED True" in second.stdout and "RESULT [9, 8]" in second.stdout


@pytest.mark.parametrize("profile", ["full", "small-workgroups", "no-int64"])
def test_warmup_builds_the_pipelines_that_the_operations_then_use(tmp_path, monkeypatch, capsys, profile):
    """After Device.warmup() a device's operations (gathers, scatters, reductions, 32- and 64-bit indices)
    build no pipeline of their own: spirv.requirements() reads each variant's bindings and needs right, in
    the device's geometry; what the device cannot run is skipped. "full" warms up through the command line,
    ``python -m dmlgpu warmup`` (in this process, on this test's device).

    What is warmed up: the variants the operations use (seen on a device of their own) and every seventh; on
    "full", also one variant of each SPIR-V module (the others differ from it in specialization constants
    alone), so that every shader module of the package builds on the driver. The whole table (the command's
    default) is the same code once per variant: 48 s on lavapipe, against 22 s for a variant of each module."""
    from dmlgpu.kernels import table as kernels
    from dmlgpu.__main__ import main
    from dmlgpu.runtime import profiles
    monkeypatch.setenv("DMLGPU_CACHE_DIR", str(tmp_path))
    every = [n for n in kernels.VARIANTS if not n.endswith(kernels.SMALL_SUFFIX)]
    used = set()
    real = pipelines._algorithm

    def spy(mgr, tensors, name, groups):
        used.add(name.removesuffix(kernels.SMALL_SUFFIX))
        return real(mgr, tensors, name, groups)
    monkeypatch.setattr(pipelines, "_algorithm", spy)
    with dmlgpu.Device(profile=profile) as scout:
        _warmup_operations(scout)
    monkeypatch.setattr(pipelines, "_algorithm", real)
    chosen = used | set(sorted(every)[::7])
    if profile == "full":
        one_per_module: dict[bytes, str] = {}
        for n in every:
            one_per_module.setdefault(spirv.load(n), n)
        chosen |= set(one_per_module.values())
    stems = sorted(chosen)
    dev = dmlgpu.Device(profile=profile)
    if profile == "full":
        with monkeypatch.context() as m:
            m.setattr(sys.modules["dmlgpu.api.device"], "as_device", lambda *args: dev)
            m.setattr(kernels, "VARIANTS", {n: kernels.VARIANTS[n] for n in stems})   # the command's table
            assert main(["warmup", "--device", "0"]) == 0
        out, err = capsys.readouterr()
        assert f"/{len(stems)}]" in err and "done in" in err          # the progress line
        assert "kernel variants are built; pipeline cache: " + str(tmp_path) in out
        [cache] = tmp_path.glob("pipelines-*.bin")
        if cache.stat().st_size <= 32:                  # a header alone (lavapipe keeps no pipelines): said so,
            assert "holds no pipelines" in out and f"{cache.stat().st_size} bytes" in out
            steps = [m.start() for m in re.finditer(rf"^\[ *\d+/{len(stems)}\]", err, re.M)]  # first: after one
            assert steps[0] < err.index("kept no pipeline") < steps[1], err
        else:
            assert "holds no pipelines" not in out
    built, skipped = dev.warmup(stems)                  # ("full": after the command, builds nothing new)
    assert sorted(built + skipped) == sorted(n + dev.runtime.geometry.suffix for n in stems)
    assert bool(skipped) == (profile == "no-int64")
    for name in skipped:
        need = spirv.requirements(name)
        with pytest.raises(dmlgpu.DeviceError):
            profiles.check_limits(dev, name, need._replace(storage_buffers=max(need.storage_buffers, need.bindings)))
    # equal SPIR-V and specialization constants: one pipeline
    assert dev.memory_stats()["pipelines"] == len({(spirv.load(n), spirv.specialization(n)) for n in built})
    assert list(tmp_path.glob("pipelines-*.bin"))
    before = dev.memory_stats()["pipelines"]
    _warmup_operations(dev)
    assert dev.memory_stats()["pipelines"] == before
    dev.close()


def _warmup_operations(dev):
    """Gathers, scatters and reductions of 32- and 64-bit indices on ``dev``, checked."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((40, 6)).astype(np.float32)
    for idx_dtype in (np.int32, np.int64):
        ids = rng.integers(0, 40, 7).astype(idx_dtype)
        assert np.array_equal(dmlgpu.gather(data, ids, device=dev), data[ids])
        cols = rng.integers(0, 6, (40, 2)).astype(idx_dtype)
        assert np.array_equal(dmlgpu.gather_elements(data, cols, 1, device=dev), np.take_along_axis(data, cols, 1))
        pairs = np.stack([ids, ids % 6], 1)
        assert np.array_equal(dmlgpu.gather_nd(data, pairs, device=dev), data[ids, ids % 6])
        upd = rng.standard_normal((7, 6)).astype(np.float32)
        for red in ("none", "add", "max"):
            got = dmlgpu.scatter_nd(data, ids[:, None], upd, device=dev, reduction=red)
            assert np.array_equal(got, reference.scatter_nd(data, ids[:, None], upd, red))
        got = dmlgpu.scatter_elements(data, cols, np.ones((40, 2), np.float32), 1, device=dev)
        assert np.array_equal(got, reference.scatter_elements(data, cols, np.ones((40, 2), np.float32), 1))


def test_warmup_command_refuses_a_bad_device():
    """(The command's warmup itself: test_warmup_builds_the_pipelines_that_the_operations_then_use[full].)"""
    bad = subprocess.run([sys.executable, "-m", "dmlgpu", "warmup", "--device", "99"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "--device=99 is no device index" in bad.stderr
    assert "Traceback" not in bad.stderr           # a command-line error, not a traceback


def test_unwritable_cache_directory_is_skipped(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    code = "import numpy as np, dmlgpu; print(dmlgpu.gather(np.arange(5), [4]).tolist())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, DMLGPU_CACHE_DIR=str(blocked / "sub")))
    assert r.returncode == 0 and "[4]" in r.stdout, r.stderr


def test_repeated_dispatches_replay_their_recorded_submission():
    """A repeated synchronous run on the same buffers (here: eager calls on a device that queues none)
    submits the command buffer recorded for it; what the buffers hold at that time is what it reads (new
    parameters and new index values included)."""
    staged = dmlgpu.Device(direct_memory=False, max_queued=0)
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    t = dmlgpu.tensor(table, device=staged)
    ids = dmlgpu.tensor(np.array([1, 2], np.int32), device=staged)
    results = []
    for new in ([1, 2], [9, 0], [-1, 3]):
        ids.write(np.array(new, np.int32))
        results.append((dmlgpu.gather(t, ids).numpy(), table[new]))
        results.append((dmlgpu.gather(t, ids, axis=0).numpy(), table[new]))
    assert len(staged.runtime.submitter.replays) >= 1
    for got, want in results:
        assert np.array_equal(got, want)
    staged.empty_cache()                    # destroying blocks forgets the recorded runs that bind them
    assert dmlgpu.gather(t, ids).numpy().tolist() == table[[-1, 3]].tolist()
    staged.close()


def test_threads_allocating_tensors_on_one_device(device, monkeypatch):
    # (no parameter buffer leaves the device's cache during the test: one that did could stay alive in a bound
    # algorithm, outside what held() subtracts, after earlier tests have filled the cache)
    monkeypatch.setattr(dmlgpu.runtime.scratch, "PARAMS_CACHE", 1 << 20)

    def held():      # bytes of live blocks other than kernel parameter buffers (cached, or kept by call templates)
        params = {id(b): b for b in [*device.runtime.scratch.param_buffers.values(), *calls.held(device.runtime)]
                  if b is not device.runtime.dummy}
        return device.memory_stats()["allocated_bytes"] - sum(b._block.size for b in params.values())

    before = held()
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(30):
            n = int(rng.integers(1, 50_000))
            data = rng.integers(0, 2**31, n, dtype=np.int32)
            t = dmlgpu.tensor(data, device=device)
            ids = rng.integers(-n, n, 17)
            if not np.array_equal(dmlgpu.gather(t, dmlgpu.tensor(ids, device=device)).numpy(), data[ids]):
                errors.append(seed)

    run_in_threads(work)
    assert errors == []
    assert held() == before, "blocks of collected tensors did not return to the cache"
    s = device.memory_stats()
    assert s["reserved_bytes"] == s["allocated_bytes"] + s["cached_bytes"]


def test_tensor_keeps_the_shape_of_a_zero_d_array(device):
    t = dmlgpu.tensor(np.float32(2.5), device=device)
    assert t.shape == () and t.numpy().shape == () and float(t.numpy()) == 2.5
    strided = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]
    assert np.array_equal(dmlgpu.tensor(strided, device=device).numpy(), strided)


def test_an_empty_recording_and_timestamped_runs_submit_valid_commands(device):
    """A Recording of nothing submits an empty command buffer, and a timestamped recording resets its queries
    on every run (the suite's validation check reports any message about either)."""
    with device.record() as empty:
        pass
    empty.run()
    t = dmlgpu.tensor(np.arange(8, dtype=np.int32), device=device)
    with device.record(timestamps=True) as rec:
        out = dmlgpu.gather(t, t)
        rec.download(out)
    for _ in range(3):
        rec.run()
        stamps = rec.timestamps()
        assert len(stamps) >= 3 and stamps[-1] >= stamps[0]
    assert rec.host(out).tolist() == list(range(8))


@pytest.mark.parametrize("profile", ["full", "no-push-descriptors"])
def test_new_bindings_of_a_kernel_are_made_without_its_spirv(monkeypatch, profile):
    """The first binding of a kernel is made from its SPIR-V; later ones (results kept alive: new buffer
    sets) from a base of it (kp patch 0024), with results as before. With descriptor sets the base is that
    first binding: once a block it used is destroyed, the next binding is made from the SPIR-V again. With push
    descriptors (kp patch 0025) the base binds the device's placeholder buffer: it stays."""
    from dmlgpu.runtime import pipelines
    made = []
    real = pipelines._algorithm
    monkeypatch.setattr(pipelines, "_algorithm", lambda mgr, tensors, name, groups: made.append(name) or
                        real(mgr, tensors, name, groups))
    d = dmlgpu.Device(profile=profile)
    try:
        pushes = "pushDescriptor" in d.features
        rng = np.random.default_rng(3)
        table = rng.standard_normal((50, 6)).astype(np.float32)
        ids = rng.integers(0, 50, 17).astype(np.int64)
        t, i = dmlgpu.tensor(table, device=d), dmlgpu.tensor(ids, device=d)
        held = [dmlgpu.gather(t, i) for _ in range(8)]
        assert len(made) == len(set(made)) >= 1         # each kernel from its SPIR-V once
        for r in held:
            np.testing.assert_array_equal(r.numpy(), table[ids])
        first = list(made)
        del held
        d.empty_cache()                                  # destroys the first binding's result block
        again = [dmlgpu.gather(t, i) for _ in range(3)]
        assert made[len(first):] == ([] if pushes else first)   # with sets: made from the SPIR-V again, once
        for r in again:
            np.testing.assert_array_equal(r.numpy(), table[ids])
    finally:
        d.close()


def test_direct_memory_that_takes_no_storage_buffer_is_refused(monkeypatch):
    """Where the device-local host-visible memory type takes no storage buffer (an H100's: Kompute finds no memory
    type for the buffer), direct_memory=True is refused as such, not as running out of memory; staging works."""
    from dmlgpu.runtime import memory as runtime_memory
    real = runtime_memory.Allocator._new_block

    def no_mapped_type(self, size, nbytes):
        if self.mapped:
            raise dmlgpu.DeviceError("out of device memory: a buffer of 4 bytes could not be allocated "
                                     "(Memory type index for buffer creation not found)")
        return real(self, size, nbytes)
    monkeypatch.setattr(runtime_memory.Allocator, "_new_block", no_mapped_type)
    with pytest.raises(dmlgpu.DeviceError, match="no host-visible device memory that takes storage buffers: "
                                                 "direct_memory=True is not possible"):
        dmlgpu.Device(direct_memory=True, hold_clocks=False)
    with dmlgpu.Device(direct_memory=False, hold_clocks=False) as dev:
        assert dmlgpu.gather(np.arange(4.0), np.array([2]), device=dev).tolist() == [2.0]
