"""Tensors held in several blocks (chunked buffers) and the WIDE kernel variants (shaders/units.glsl).

Most cases run on devices with small blocks (``chunk_bytes``), so that every operation crosses many block
boundaries, through rows and (with 256-byte blocks) through the layer-1 random layouts, at small sizes. The
``big`` cases use lavapipe's own blocks (maxStorageBufferRange: 128 MiB) on tensors of 200-300 MiB, one per
operator family. Everything is compared bit for bit with NumPy.
"""
import numpy as np
import pytest

import dmlgpu
import dmlgpu.reference
from dmlgpu.kernels import table as kernels
from dmlgpu.layer1.dtypes import DataType as D

from test_layer1 import BUILDERS, KINDS, ONE_STRIDED, kinds_of

MiB = 1 << 20


@pytest.fixture(scope="module")
def small_blocks():
    """Blocks of 64 KiB: tensors of a few hundred KiB are chunked."""
    with dmlgpu.Device(chunk_bytes=64 << 10) as dev:
        yield dev


@pytest.fixture(scope="module", params=[True, False], ids=["mapped", "staged"])
def tiny_blocks(request):
    """Blocks of 256 bytes, with mapped memory where the device has it and through staging buffers."""
    direct = request.param and dmlgpu.devices()[dmlgpu.default_device().info.index].unified_memory
    if request.param and not direct:
        pytest.skip("no unified memory on this device")
    with dmlgpu.Device(chunk_bytes=256, direct_memory=direct) as dev:
        yield dev


def test_chunked_buffers_hold_their_bytes(tiny_blocks):
    dev = tiny_blocks
    data = np.random.default_rng(0).integers(0, 256, 10_000, dtype=np.uint8)
    buf = dev.buffer(data)
    assert buf.chunked and len(buf.block_list) == -(-10_000 // 256)
    assert np.array_equal(buf.read()[:data.size], data)
    buf.write(data[:1000][::-1].copy(), offset=252)                  # across blocks
    want = data.copy()
    want[252:1252] = data[:1000][::-1]
    assert np.array_equal(buf.read()[:data.size], want)
    other = dev.buffer(nbytes=10_000)
    dev.runtime.copy_buffer(buf, other, 10_000)
    assert np.array_equal(other.read(), buf.read())
    dev.runtime.fill_buffer(other, 0x01020304, 508, 1000)
    assert np.array_equal(other.read()[508:1508].view(np.uint32), np.full(250, 0x01020304, np.uint32))
    t = dmlgpu.tensor(data.reshape(100, 100), device=dev)
    assert np.array_equal(t.numpy(), data.reshape(100, 100))


def test_wide_variants_need_their_device_features():
    assert kernels.WIDE_FEATURES <= dmlgpu.default_device().features or \
        dmlgpu.default_device().info.type != "CPU"      # lavapipe has them


# ---- layer 2 on 64 KiB blocks: every operator, units of 1 to 16 bytes, index types ----

@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int32, np.float64, np.complex128])
@pytest.mark.parametrize("itype", [np.int32, np.int64, np.uint32])
def test_gather_rows_across_blocks(small_blocks, dtype, itype):
    rng = np.random.default_rng([np.dtype(dtype).itemsize, np.dtype(itype).itemsize])
    table = rng.integers(0, 100, size=(4001, 37)).astype(dtype)      # rows of 37 elements straddle blocks
    low = 0 if np.dtype(itype).kind == "u" else -4001
    ids = rng.integers(low, 4001, size=(3, 1500)).astype(itype)
    t = dmlgpu.tensor(table, device=small_blocks)
    assert t.buffer.chunked
    got = dmlgpu.gather(t, ids)
    assert got.buffer.chunked and np.array_equal(got.numpy(), table[ids])
    assert np.array_equal(dmlgpu.gather(table, ids, axis=0, device=small_blocks), table[ids])
    cols = rng.integers(-37, 37, size=50).astype(np.int64)
    assert np.array_equal(dmlgpu.gather(t, cols, axis=1).numpy(), np.take(table, cols, axis=1))


def test_gather_elements_and_gather_nd_across_blocks(small_blocks):
    rng = np.random.default_rng(1)
    data = rng.integers(0, 2**16, size=(300, 700), dtype=np.uint16)
    idx = rng.integers(-300, 300, size=(500, 700))
    want = np.take_along_axis(data, np.where(idx < 0, idx + 300, idx), axis=0)
    assert np.array_equal(dmlgpu.gather_elements(data, idx, axis=0, device=small_blocks), want)
    nd = rng.integers(0, 300, size=(900, 1))
    assert np.array_equal(dmlgpu.gather_nd(data, nd, device=small_blocks), data[nd[:, 0]])
    batched = rng.integers(0, 700, size=(300, 40, 1))
    want = np.stack([data[b][batched[b, :, 0]] for b in range(300)])
    assert np.array_equal(dmlgpu.gather_nd(data, batched, batch_dims=1, device=small_blocks), want)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64])
def test_scatters_across_blocks(small_blocks, dtype):
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    data = rng.integers(0, 100, size=(3000, 29)).astype(dtype)
    rows = rng.integers(-3000, 3000, size=(2000, 1))
    upd = rng.integers(100, 200, size=(2000, 29)).astype(dtype)
    want = data.copy()
    for k, r in enumerate(rows[:, 0]):                              # the last update of a row wins
        want[r] = upd[k]
    assert np.array_equal(dmlgpu.scatter_nd(data, rows, upd, device=small_blocks), want)
    t = dmlgpu.tensor(data, device=small_blocks)
    got = dmlgpu.scatter_nd(t, rows, dmlgpu.tensor(upd, device=small_blocks))
    assert got.buffer.chunked and np.array_equal(got.numpy(), want)
    idx = rng.integers(0, 3000, size=(40, 29))
    vals = rng.integers(0, 100, size=(40, 29)).astype(dtype)
    want = data.copy()
    for i in range(40):
        want[idx[i], np.arange(29)] = vals[i]
    assert np.array_equal(dmlgpu.scatter_elements(data, idx, vals, axis=0, device=small_blocks), want)


def test_order_free_reductions_across_blocks(small_blocks):
    rng = np.random.default_rng(7)
    data = rng.integers(-1000, 1000, size=100_000, dtype=np.int32)
    idx = rng.integers(0, data.size, size=(150_000, 1))
    upd = rng.integers(-1000, 1000, size=150_000, dtype=np.int32)
    for op, ufunc in (("add", np.add), ("min", np.minimum), ("max", np.maximum)):
        want = data.copy()
        ufunc.at(want, idx[:, 0], upd)
        got = dmlgpu.scatter_nd(data, idx, upd, reduction=op, device=small_blocks)
        assert np.array_equal(got, want), op


@pytest.fixture(scope="module")
def medium_blocks():
    """Blocks of 256 KiB: the sorted reductions' scratch (bound whole) fits one, their operands do not."""
    with dmlgpu.Device(chunk_bytes=256 << 10) as dev:
        yield dev


@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint16, np.int64, np.float64])
def test_sorted_reductions_across_blocks(medium_blocks, reduction, dtype):
    """The sort-based scatter reductions (keys, radix sort, folds and levels of partials) on operands held in
    several blocks: rows of 29 elements (folded per slice position) and single elements (values carried by
    the sort), many updates per target."""
    small_blocks = medium_blocks
    rng = np.random.default_rng([kernels.REDUCE_OPS.index(reduction), np.dtype(dtype).itemsize])
    if np.dtype(dtype).kind == "f":
        make = lambda *shape: rng.uniform(0.5, 1.5, size=shape).astype(dtype)
    else:
        make = lambda *shape: rng.integers(1, 4, size=shape).astype(dtype)
    data = make(12_000, 29)
    rows = rng.integers(0, 12_000, size=(9000, 1))
    rows[:6000] = rng.integers(0, 2000, size=(6000, 1))                 # runs of 3 and more
    upd = make(9000, 29)
    want = dmlgpu.reference.scatter_nd(data, rows, upd, reduction)
    got = dmlgpu.scatter_nd(data, rows, upd, reduction=reduction, device=small_blocks)
    assert got.tobytes() == want.tobytes()
    assert dmlgpu.tensor(data, device=small_blocks).buffer.chunked
    flat = data.reshape(-1)
    pos = rng.integers(0, flat.size, size=(12_000, 1))            # (the sort's scratch stays in one block)
    pos[:9000] = rng.integers(flat.size - 3000, flat.size, size=(9000, 1))   # runs of 3 in the last blocks
    vals = make(12_000)
    want = dmlgpu.reference.scatter_nd(flat, pos, vals, reduction)
    got = dmlgpu.scatter_nd(dmlgpu.tensor(flat, device=small_blocks), dmlgpu.tensor(pos, device=small_blocks),
                            dmlgpu.tensor(vals, device=small_blocks), reduction=reduction)
    assert got.buffer.chunked and got.numpy().tobytes() == want.tobytes()


def test_recordings_upload_and_download_chunked_tensors(tiny_blocks):
    dev = tiny_blocks
    rng = np.random.default_rng(3)
    table = rng.standard_normal((200, 33)).astype(np.float32)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(rng.integers(0, 200, 100).astype(np.int32), device=dev)
    with dev.record() as rec:
        rec.upload(ids)
        out = dmlgpu.gather(t, ids)
        rec.download(out)
    assert out.buffer.chunked and ids.buffer.chunked
    for _ in range(3):
        new = rng.integers(0, 200, 100).astype(np.int32)
        rec.host(ids)[...] = new
        rec.run()
        assert np.array_equal(rec.host(out), table[new])


# ---- layer 1 on 256-byte blocks: strided tensors of every operator ----

@pytest.mark.parametrize("op,tensor,kind", [c for c in ONE_STRIDED if c[2] in ("padded", "permuted")])
def test_one_strided_tensor_across_blocks(tiny_blocks, op, tensor, kind):
    rng = np.random.default_rng([len(op), KINDS.index(kind), len(tensor)])
    for dt in (D.UINT8, D.FLOAT16, D.FLOAT32):
        BUILDERS[op](rng, 4, dt, D.INT32, kinds_of(**{tensor: kind})).check(tiny_blocks)


# ---- 64-bit maps ----

def test_maps_past_2_to_the_32_units_run_in_the_wide_variants():
    from dmlgpu.plans.index_map import Layout, take_map
    m = take_map(Layout.packed((5 << 30,)), Layout.packed((3,)), Layout.packed((3,)), 0, 1)
    assert not m.fits_32_bits()
    with pytest.raises(dmlgpu.DeviceError, match="large-tensor kernels"):
        m.params(False)
    words = m.params(True, wide=True)
    assert words.dtype == np.uint64 and words[48] == 1 and words[40] == 5 << 30   # P_TDATA, P_TDIM


# ---- lavapipe's own blocks (128 MiB) on 200-300 MiB tensors ----

@pytest.fixture(scope="module")
def big(device):
    if device.max_block > 128 * MiB:
        pytest.skip("the big cases are sized for lavapipe's 128 MiB blocks")
    return device


def test_big_gather_and_gather_elements(big):
    rng = np.random.default_rng(11)
    table = rng.integers(0, 2**31, size=(1_310_000, 50), dtype=np.int32)     # 250 MiB, rows of 200 bytes
    t = dmlgpu.tensor(table, device=big)
    assert len(t.buffer.block_list) == 2
    ids = rng.integers(-table.shape[0], table.shape[0], size=200_000)
    ids[:4] = [655_359, 655_360, -1, 0]                                     # rows around the block boundary
    assert np.array_equal(dmlgpu.gather(t, ids).numpy(), table[ids])
    nd = np.stack([ids[:1000] % table.shape[0], ids[1000:2000] % 50], axis=1)         # single elements
    assert np.array_equal(dmlgpu.gather_nd(t, nd).numpy(), table[nd[:, 0], nd[:, 1]])
    flat = table.reshape(-1).view(np.uint8)                                   # 250 MiB of bytes
    pos = rng.integers(0, flat.size, size=(1, 300_000), dtype=np.int64)
    pos[0, :3] = [128 * MiB - 1, 128 * MiB, flat.size - 1]
    got = dmlgpu.gather_elements(flat.reshape(1, -1), pos, axis=1, device=big)
    assert np.array_equal(got[0], flat[pos[0]])
    del t


def test_big_scatter_and_reduction(big):
    rng = np.random.default_rng(12)
    data = rng.integers(0, 2**31, size=(3_000_000, 18), dtype=np.int32)     # 206 MiB, rows of 72 bytes
    rows = rng.integers(0, data.shape[0], size=(100_000, 1))
    rows[:2, 0] = [1_864_135, 1_864_136]                                    # row 1,864,135 crosses 128 MiB
    upd = rng.integers(0, 2**31, size=(100_000, 18), dtype=np.int32)
    want = data.copy()
    last = rows.shape[0] - 1 - np.unique(rows[::-1, 0], return_index=True)[1]   # the last update of a row wins
    want[rows[last, 0]] = upd[last]
    assert np.array_equal(dmlgpu.scatter_nd(data, rows, upd, device=big), want)
    cols = rng.integers(0, data.shape[0], size=(2, 18))
    cols[0, 0] = 1_864_135
    vals = rng.integers(0, 2**31, size=(2, 18), dtype=np.int32)
    want = data.copy()
    want[cols[0], np.arange(18)] = vals[0]
    want[cols[1], np.arange(18)] = vals[1]
    assert np.array_equal(dmlgpu.scatter_elements(data, cols, vals, axis=0, device=big), want)
    floats = (data % 1000).astype(np.float32)                                # the sorted path: float32 rows
    want = dmlgpu.reference.scatter_nd(floats, rows[:20_000], floats[:20_000] / 7, "add")
    got = dmlgpu.scatter_nd(floats, rows[:20_000], floats[:20_000] / 7, reduction="add", device=big)
    assert got.tobytes() == want.tobytes()
    del floats, want, got
    flat = data.reshape(-1)                                                  # single elements: order-free atomics
    pos = rng.integers(0, flat.size, size=(300_000, 1))
    pos[:2, 0] = [32 * MiB - 1, 32 * MiB]                                    # the last and first of two blocks
    vals = rng.integers(-2**31, 2**31, size=300_000, dtype=np.int32)
    for op, ufunc in (("add", np.add), ("max", np.maximum)):
        want = flat.copy()
        ufunc.at(want, pos[:, 0], vals)
        assert np.array_equal(dmlgpu.scatter_nd(flat, pos, vals, reduction=op, device=big), want), op


# ---- the benchmark's large-table sweep (dmlgpu/bench/large.py), at a small scale ----

def test_bench_large_sweep_runs_and_checks(capsys):
    """``python -m dmlgpu bench large --sections sweep`` on tables of 1 and 4 MiB held in blocks of 1 MiB (and in
    one block of the default size): every case's result checked against NumPy (the exit status says so)."""
    from dmlgpu.bench import large
    rc = large.main(["--sections", "sweep", "--sweep-gib", f"{1 / 1024},{4 / 1024}", "--sweep-out-gib", f"{1 / 2048}",
                     "--sweep-span-gib", f"{1 / 2048}", "--sweep-chunks-mib", "1,0", "--repeats", "2"])
    out = capsys.readouterr().out
    assert rc == 0 and "ADDR forced" in out and "WIDE forced" in out and "copy the whole" in out
    named = out.replace(")", " ")             # (GPUs gather these rows through the run variants)
    assert "gather_u16_i64_addr " in named or "gather_u16_i64_run_addr " in named
    assert "gather_u16_i64 " in named or "gather_u16_i64_run " in named
