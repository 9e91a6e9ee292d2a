"""NumPy tables read in place (runtime/host.py, kp patch 0023: VK_EXT_external_memory_host): gathers from a NumPy
table import its pages instead of uploading it (execution.reads_in_place, the one rule), and write a NumPy result
into the returned array; results bit for bit NumPy's, the caller's array never written, fallbacks where the pages
cannot be imported, queued calls, recordings, tables in several blocks and tables past the device's memory."""
import gc

import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import execution
from dmlgpu.runtime import host

MIB = 1 << 20


def _needs_import(dev):
    if not host.available(dev.runtime):
        pytest.skip(f"{dev.info.name} (profile {dev.profile.name}) cannot import host memory (or kp lacks patch 0023)")


@pytest.fixture
def imports(monkeypatch):
    """Records every host import (the arrays' sizes and whether they were cached)."""
    made = []
    real = host.import_array

    def spy(device, array, cache=False):
        buf = real(device, array, cache)
        made.append((array.nbytes, cache, buf is not None))
        return buf
    monkeypatch.setattr(host, "import_array", spy)
    return made


@pytest.fixture(scope="module", params=["direct", "staged"])
def dev(request, memory_device):
    d = memory_device(request.param == "direct")
    yield d
    d.close()


def _table(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)      # every bit pattern, NaNs included


@pytest.mark.parametrize("dtype,shape", [(np.float32, (4096, 64)), (np.uint8, (8192, 128)),
                                         (np.float64, (2048, 3, 24)), (np.uint16, (1 << 19, 2)),
                                         (np.complex128, (1 << 16, 2))])
def test_take_reads_in_place(dev, imports, dtype, shape):
    _needs_import(dev)
    table = _table(shape, dtype)
    before = table.copy()
    ids = np.random.default_rng(1).integers(-shape[0], shape[0], min(3000, shape[0] // 2))
    got = dmlgpu.take(table, ids, axis=0, device=dev)
    assert got.dtype == table.dtype and got.tobytes() == np.take(table, ids, axis=0).tobytes()
    assert table.tobytes() == before.tobytes()                      # the caller's array is never written
    assert (table.nbytes, True, True) in imports                    # read where it is
    got = dmlgpu.gather(table, ids, axis=0, device=dev)             # again: the same import
    assert got.tobytes() == np.take(table, ids, axis=0).tobytes()


def test_friends_read_in_place(dev, imports):
    _needs_import(dev)
    table = _table((1024, 512), np.float32, 2)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 512, (1024, 7))
    assert dmlgpu.take_along_axis(table, ids, axis=1, device=dev).tobytes() == \
        np.take_along_axis(table, ids, axis=1).tobytes()
    cols = rng.integers(0, 512, 100)
    assert dmlgpu.take(table, cols, axis=1, device=dev).tobytes() == np.take(table, cols, axis=1).tobytes()
    nd = rng.integers(0, 512, (50, 2)) % [1024, 512]
    assert dmlgpu.gather_nd(table, nd, device=dev).tobytes() == table[nd[:, 0], nd[:, 1]].tobytes()
    assert all(ok for n, cached, ok in imports if n == table.nbytes) and len(imports) >= 3


def _leased(array) -> bool:
    """True when ``array`` views a result buffer of host.result_array (imported memory, pooled)."""
    while array is not None and not isinstance(array, host._Lease):
        array = getattr(array, "base", None)
    return array is not None


def test_large_result_written_in_place(dev, imports, monkeypatch):
    """A NumPy-in/out gather's result of HOST_OUT_BYTES or more is written by the kernels into the returned array
    (pooled imported memory: when it is collected its buffer serves the next result, nothing imported again)."""
    _needs_import(dev)
    made = []
    real_make = host._make
    monkeypatch.setattr(host, "_make", lambda d, flat: made.append(flat.size) or real_make(d, flat))
    table = _table((8192, 64), np.float32, 4)
    ids = np.random.default_rng(5).integers(0, 8192, 4096)
    got = dmlgpu.take(table, ids, axis=0, device=dev)
    assert got.nbytes >= execution.HOST_OUT_BYTES and _leased(got) and got.flags.writeable
    assert got.tobytes() == np.take(table, ids, axis=0).tobytes()
    kept = got.copy()
    got[:] = 0                                      # the caller's to write
    again = dmlgpu.take(table, ids[::-1], axis=0, device=dev)     # another buffer: got still holds its own
    assert again.tobytes() == np.take(table, ids[::-1], axis=0).tobytes() and not got.any()
    del got, again
    gc.collect()
    count = len(made)
    for i in range(3):                              # the pool serves them: no import
        r = dmlgpu.take(table, ids, axis=0, device=dev)
        assert r.tobytes() == kept.tobytes()
        del r
    assert len(made) == count
    out = np.zeros_like(kept)
    assert dmlgpu.take(table, ids[::-1], axis=0, out=out, device=dev) is out
    assert out.tobytes() == np.take(table, ids[::-1], axis=0).tobytes()
    small = _table((100, 64), np.float32, 5)          # an uploaded table, a result written in place
    many = np.random.default_rng(6).integers(0, 100, 8192)
    imports.clear()
    r = dmlgpu.take(small, many, axis=0, device=dev)
    assert r.tobytes() == np.take(small, many, axis=0).tobytes() and _leased(r) and not imports
    dev.empty_cache()                                 # releases the free result buffers
    assert not vars(dev.runtime.memory)["host_results"].free


@pytest.mark.parametrize("case", ["row-slice", "unaligned", "strided", "fortran", "odd-bytes"])
def test_layouts(dev, imports, case):
    """Views at any offset and non-contiguous arrays: read in place where the pages can be imported (16-byte
    aligned, C-contiguous, a multiple of 4 bytes), else uploaded; the same bits either way."""
    _needs_import(dev)
    base = _table((8200, 64), np.float32, 6)
    if case == "row-slice":
        table = base[3:8195]                      # starts 768 bytes into base: aligned, in place
    elif case == "unaligned":
        table = base.reshape(-1)[1:1 + 8192 * 63].reshape(8192, 63)    # 4 bytes in: uploaded
    elif case == "strided":
        table = base[:, ::2]
    elif case == "fortran":
        table = np.asfortranarray(base)
    else:
        base = _table((8193 * 257 + 1,), np.uint8, 7)
        table = base[1:].reshape(8193, 257)       # 1 byte in, an odd size
    before = base.tobytes()
    ids = np.random.default_rng(8).integers(0, table.shape[0], 2000)
    got = dmlgpu.take(table, ids, axis=0, device=dev)
    assert got.tobytes() == np.take(table, ids, axis=0).tobytes()
    assert base.tobytes() == before
    in_place = [ok for n, cached, ok in imports if cached]
    assert in_place == ([True] if case == "row-slice" else [])


def test_small_or_sparse_tables_are_uploaded(dev, imports):
    """The rule: tables under HOST_TABLE_BYTES, or (on discrete GPUs, not on unified memory) whose result takes
    more than HOST_READ_SHARE of them plus HOST_READ_BYTES, are uploaded."""
    _needs_import(dev)
    small = _table((100, 64), np.float32)
    ids = np.arange(100)
    assert dmlgpu.take(small, ids, axis=0, device=dev).tobytes() == small.tobytes()
    big = _table((4096, 64), np.float32)
    past = int(execution.HOST_READ_SHARE * big.nbytes) + execution.HOST_READ_BYTES      # bytes of result
    many = np.random.default_rng(9).integers(0, 4096, past // 256 + 64)
    assert dmlgpu.take(big, many, axis=0, device=dev).tobytes() == np.take(big, many, axis=0).tobytes()
    assert [c for n, c, ok in imports if c] == ([True] if dev.info.unified_memory else [])
    table = execution.HOST_TABLE_BYTES            # the rule is one function of sizes
    assert execution.reads_in_place(dev.runtime, _GatherLike, table, table)
    assert not execution.reads_in_place(dev.runtime, _GatherLike, table - 4, 16)
    beyond = int(execution.HOST_READ_SHARE * table) + execution.HOST_READ_BYTES + 4
    assert execution.reads_in_place(dev.runtime, _GatherLike, table, beyond) == dev.info.unified_memory
    assert execution.reads_in_place(dev.runtime, _GatherLike, table, beyond - 8)
    assert execution.reads_in_place(dev.runtime, _GatherLike, dev.runtime.memory_capacity + 4, 3 * dev.runtime.memory_capacity)
    assert not execution.reads_in_place(dev.runtime, _ScatterLike, 1 << 30, 16)


class _GatherLike:
    output_from_input = False


class _ScatterLike:
    output_from_input = True


def test_queued_calls_wait_for_an_in_place_table(dev, imports):
    """A call that returns a Tensor (Tensor indices) from a NumPy table read in place runs before it returns
    (NumPy's contract: the call has finished with the array), after the queued work before it; the table may
    then change without changing the result."""
    _needs_import(dev)
    table = _table((4096, 64), np.float32, 10)
    expect_first = table.copy()
    ids = dmlgpu.tensor(np.random.default_rng(11).integers(0, 4096, 1000), device=dev)
    pending = dmlgpu.take(dmlgpu.tensor(expect_first, device=dev), ids, axis=0)      # queued before it
    got = dmlgpu.take(table, ids, axis=0)
    assert isinstance(got, dmlgpu.Tensor)
    table[:] = 0                                    # the caller's to change once the call has returned
    want = np.take(expect_first, ids.numpy(), axis=0)
    assert got.numpy().tobytes() == want.tobytes() and pending.numpy().tobytes() == want.tobytes()
    assert (table.nbytes, True, True) in imports
    # and the next call sees the new values (the same import, read again)
    assert not dmlgpu.take(table, ids, axis=0).numpy().any()
    # a Tensor out= with NumPy indices: the same (runs before it returns)
    table[:] = expect_first
    out = dmlgpu.empty((1000, 64), np.float32, device=dev)
    assert dmlgpu.take(table, ids.numpy(), axis=0, out=out, device=dev) is out
    table[:] = 0
    assert out.numpy().tobytes() == want.tobytes()


def test_recordings_upload(dev, imports):
    """A recording replays later: its NumPy operands go through its own host copies, never read in place."""
    _needs_import(dev)
    table = _table((4096, 64), np.float32, 12)
    ids = np.random.default_rng(13).integers(0, 4096, 100)
    with dev.record() as rec:
        out = dmlgpu.take(table, ids, axis=0, device=dev)
        rec.download(out)
    rec.run()
    assert rec.host(out).tobytes() == np.take(table, ids, axis=0).tobytes()
    assert not [c for n, c, ok in imports if c]


@pytest.mark.parametrize("profile", ["no-host-import", "minimum"])
def test_fallback_under_profiles(imports, profile):
    """Profiles that withhold externalMemoryHost upload the table, as devices without the extension do."""
    with dmlgpu.Device(profile=profile) as d:
        assert "externalMemoryHost" not in d.features and not host.available(d.runtime)
        table = _table((4096, 64), np.float32, 14)
        ids = np.random.default_rng(15).integers(0, 4096, 2000)
        assert dmlgpu.take(table, ids, axis=0, device=d).tobytes() == np.take(table, ids, axis=0).tobytes()
    assert not imports


@pytest.mark.parametrize("rows", [4096 + 7, 16384])
def test_table_in_several_blocks(imports, rows):
    """A table imported as several blocks (chunk_bytes forces them as lavapipe's 128 MiB maxStorageBufferRange
    does) is gathered through the blocks' device addresses (rows under 512 B) or one window per block."""
    with dmlgpu.Device(chunk_bytes=MIB) as d:
        _needs_import(d)
        for width, dtype in ((64, np.float32), (256, np.float32), (3, np.uint16)):
            table = _table((rows, width), dtype, rows + width)
            if table.nbytes < execution.HOST_TABLE_BYTES or table.nbytes % 4:
                continue
            ids = np.random.default_rng(16).integers(-rows, rows, 5000)
            got = dmlgpu.take(table, ids, axis=0, device=d)
            assert got.tobytes() == np.take(table, ids, axis=0).tobytes()
            buf = host.import_array(d.runtime, table, cache=True)
            assert buf is not None and buf.block_count == -(-table.nbytes // MIB)
    assert any(cached and ok for n, cached, ok in imports)


def test_table_past_device_memory():
    """A table larger than the device's memory (a memory_limit here) is read in place; uploading it is refused."""
    table = _table((16384, 64), np.float32, 17)          # 4 MiB
    ids = np.random.default_rng(18).integers(0, 16384, 1000)
    with dmlgpu.Device(memory_limit=2 * MIB) as d:
        _needs_import(d)
        got = dmlgpu.take(table, ids, axis=0, device=d)
        assert got.tobytes() == np.take(table, ids, axis=0).tobytes()
        with pytest.raises(dmlgpu.DeviceError, match="take: .*read in place.*only where it is C-contiguous"):
            dmlgpu.take(table[:, ::2], ids, axis=0, device=d)
    with dmlgpu.Device(memory_limit=2 * MIB, profile="no-host-import") as d:
        with pytest.raises(dmlgpu.DeviceError, match="take: .* exceed this device's memory"):
            dmlgpu.take(table, ids, axis=0, device=d)


def test_import_cache_follows_the_array(dev):
    """A cached import lives while its array does: found again for the same bytes (views of it too), released
    when the array is collected."""
    _needs_import(dev)
    table = _table((4096, 64), np.float32, 19)
    a = host.import_array(dev.runtime, table, cache=True)
    assert host.import_array(dev.runtime, table, cache=True) is a
    assert host.import_array(dev.runtime, table.reshape(-1, 128), cache=True) is a     # the same bytes
    assert host.import_array(dev.runtime, table[1:], cache=True) is not a              # other bytes: an import of its own
    del table
    gc.collect()
    assert not vars(dev.runtime.memory).get("host_imports") and "block_list" not in a.__dict__


def test_imports_split_at_max_allocation(imports):
    """A table larger than maxMemoryAllocationSize is imported in several allocations, each a whole number of
    blocks (lowered here: lavapipe's is 2 GiB)."""
    import dataclasses
    with dmlgpu.Device(chunk_bytes=MIB) as d:
        _needs_import(d)
        d.runtime.info = d.runtime.memory.info = dataclasses.replace(d.info, max_memory_allocation_size=2 * MIB + 2 * 4096)
        calls = []
        real = d.runtime.memory.mgr

        class Counting:             # counts the allocations (kp's import calls)
            def __getattr__(self, name):
                return getattr(real, name)

            def import_host_buffers(self, *a):
                calls.append(a)
                return real.import_host_buffers(*a)
        d.runtime.memory.mgr = Counting()
        try:
            table = _table((5 * 4096 + 100, 64), np.float32, 20)      # 5 MiB and a bit: 6 blocks, 3 imports
            ids = np.random.default_rng(21).integers(0, table.shape[0], 3000)
            assert dmlgpu.take(table, ids, axis=0, device=d).tobytes() == np.take(table, ids, axis=0).tobytes()
            assert [n for _, n, _ in calls[:3]] == [2 * MIB, 2 * MIB, table.nbytes - 4 * MIB]
        finally:
            d.runtime.memory.mgr = real


def test_lavapipe_imports_host_memory(device):
    """lavapipe offers VK_EXT_external_memory_host: with kp patch 0023 the default device must be able to import
    (so that the tests above run rather than skip)."""
    from dmlgpu.runtime.discovery import kp
    if "0023-host-memory-import" not in getattr(kp, "__dmlgpu_patches__", ()):
        pytest.skip("kp without patch 0023 (rebuild it: python tools/build_kp.py)")
    if device.info.type == "CPU" and device.profile.name == "full":
        assert host.available(device.runtime) and device.info.min_imported_host_pointer_alignment == 4096


def test_refused_import_falls_back_or_says_why():
    """Where the driver refuses an import, the table is uploaded; past the device's memory the DeviceError gives
    the driver's reason."""
    table = _table((16384, 64), np.float32, 22)          # 4 MiB
    ids = np.random.default_rng(23).integers(0, 16384, 1000)
    for limit in (None, 2 * MIB):
        with dmlgpu.Device(memory_limit=limit) as d:
            _needs_import(d)
            real = d.runtime.memory.mgr

            class Refusing:
                def __getattr__(self, name):
                    return getattr(real, name)

                def import_host_buffers(self, *a):
                    raise RuntimeError("vkAllocateMemory refused (a test)")
            d.runtime.memory.mgr = Refusing()
            try:
                if limit is None:
                    got = dmlgpu.take(table, ids, axis=0, device=d)
                    assert got.tobytes() == np.take(table, ids, axis=0).tobytes()
                else:
                    with pytest.raises(dmlgpu.DeviceError, match=r"take: .*refused to import its pages "
                                                                 r"\(vkAllocateMemory refused \(a test\)\)"):
                        dmlgpu.take(table, ids, axis=0, device=d)
            finally:
                d.runtime.memory.mgr = real


def test_threads_share_tables(dev):
    """Threads gathering from shared NumPy tables (imported once each, under the device's lock) and from tables
    of their own that they drop (their imports released as they go)."""
    from strategies import run_in_threads
    _needs_import(dev)
    shared = _table((4096, 64), np.float32, 24)
    failures = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for i in range(6):
            own = _table((2048 + 64 * seed, 128), np.float32, 100 * seed + i)
            for table in (shared, own):
                ids = rng.integers(0, table.shape[0], 1500)
                if dmlgpu.take(table, ids, axis=0, device=dev).tobytes() != np.take(table, ids, axis=0).tobytes():
                    failures.append((seed, i))
            del own
    run_in_threads(work)
    assert not failures
