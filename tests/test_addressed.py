"""The gathers and copies on tensors held in several blocks (plan.GatherPlan.addressed, plan.CopyPlan): the ADDR
variants (maps under 2^32 units) and the WIDE ones, each of their paths (whole rows, VEC groups, one unit per
iteration) forced on any device, on devices with blocks of 256 bytes and 4 KiB, so that rows straddle block
boundaries and VEC groups meet them, with each tensor (data, indices, output) held in one block or in several.
Every result is compared bit for bit with NumPy, with guard words after every buffer (nothing is written past
a tensor's end). "fuzz" in a name: the hypothesis campaign (``-k fuzz``)."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu
from dmlgpu.plans import plan

PATHS = ("auto", "rows", "vec", "unit", "run")


@pytest.fixture(scope="module", params=[256, 4096], ids=["256B-blocks", "4KiB-blocks"])
def blocks(request):
    with dmlgpu.Device(chunk_bytes=request.param, max_queued=0) as dev:
        dev.runtime.canary_words = 4
        yield dev


@contextlib.contextmanager
def forced(path: str, wide: bool):
    """GatherPlan's choices forced on any device: whole rows (where the map allows: ``row_loop_ok``), VEC groups
    (where it allows: ``vec_ok``), one unit per iteration, the GPUs' run variants (rows of 16-byte units of any
    length: plan.RUN_ROW_UNITS = 1; else the device's choice), or the device's own choice ("auto"); ``wide``:
    the WIDE variants (64-bit offsets) instead of the ADDR ones."""
    with pytest.MonkeyPatch.context() as mp:
        G = plan.GatherPlan
        plan.make_plan.cache_clear()
        mp.setattr(plan, "RUN_ROW_UNITS", 1)
        if path == "run":
            words, words_wide = G._words, G._words_wide
            mp.setattr(G, "_words", lambda self, device, addressed=False: (self.words, plan.RUN) if self.run
                       else words(self, device, addressed))
            mp.setattr(G, "_words_wide", lambda self, device: (self.wide_words(), plan.RUN) if self.run
                       else words_wide(self, device))
        if path == "rows":
            mp.setattr(G, "_rows", lambda self, device: self.map.row_loop_ok())
            mp.setattr(G, "_words", lambda self, device, addressed=False: (self.row_words, 0) if self.row_words is not None
                       else (self.words, self.vec))
        elif path == "vec":
            mp.setattr(G, "_rows", lambda self, device: False)
            mp.setattr(G, "_words", lambda self, device, addressed=False: (self.words, self.vec))
        elif path == "unit":
            mp.setattr(G, "_rows", lambda self, device: False)
            mp.setattr(G, "_words", lambda self, device, addressed=False: (self.map.params(self.signed), 0))
            mp.setattr(G, "_words_wide", lambda self, device: (self.wide_words(), 0))
        if wide:
            addressed = G.addressed
            mp.setattr(G, "addressed", lambda self, *args, wide=False: addressed(self, *args, wide=True))
        try:
            yield
        finally:
            plan.make_plan.cache_clear()


def random_table(rng, shape, dtype) -> np.ndarray:
    """Random bytes viewed as ``dtype`` (NaNs and all: results are compared byte for byte)."""
    item = np.dtype(dtype).itemsize
    return rng.integers(0, 256, size=tuple(shape) + (item,), dtype=np.uint8).view(dtype).reshape(shape)


def kernels_of(dev, call, *args):
    """(the result of a layer-2 call on Tensors, the kernels it ran)."""
    with dev.record() as rec:
        out = call(*args)
    return out, [what.kernel for kind, what in rec._steps if kind == "dispatch"]


def check_gather(dev, table, ids, axis, path, wide):
    """gather(table, ids, axis) on ``dev`` against np.take, through the path forced; returns its kernels."""
    with forced(path, wide):
        t, i = dmlgpu.tensor(table, device=dev), dmlgpu.tensor(ids, device=dev)
        out, ran = kernels_of(dev, dmlgpu.gather, t, i, axis)
        want = np.take(table, np.where(ids < 0, ids + table.shape[axis], ids).astype(np.int64), axis=axis)
        assert out.numpy().tobytes() == want.tobytes(), (path, wide, ran)
        assert out.buffer.canary_intact() and t.buffer.canary_intact()
    chunked = t.buffer.chunked or i.buffer.chunked or out.buffer.chunked
    assert all(k.endswith(("_wide" if wide else "_addr", "_window")) for k in ran) or not chunked, ran
    return ran


# ---- each path, each tensor in one block or several ----

LAYOUTS = [  # (table shape, dtype, number of indices, what it exercises), for 256-byte and 4 KiB blocks
    ((300, 37), np.float32, 200, "rows of 148 bytes: straddle blocks in data and output"),
    ((9, 17), np.float32, 700, "data in one block (4 KiB), output in several"),
    ((2000, 5), np.int64, 3, "data in several blocks, output of 120 bytes in one"),
    ((64, 2), np.complex128, 2000, "16-byte units; indices (16 KB) in several blocks"),
    ((1000, 7), np.uint8, 301, "bytes: VEC words across block boundaries, a partial last word"),
    ((500, 3), np.float16, 333, "2-byte units, rows of 6 bytes"),
    ((70, 1030), np.float32, 65, "rows of 4120 bytes: longer than a 4 KiB block, 65 rows"),
    ((60, 1028), np.float32, 45, "rows of 4112 bytes of 16-byte units: runs across block boundaries"),
    ((333, 24), np.float32, 500, "rows of 96 bytes of 16-byte units: runs across rows"),
]


@pytest.mark.parametrize("wide", [False, True], ids=["addr", "wide"])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape, dtype, n, what", LAYOUTS, ids=[c[3].split(":")[0] for c in LAYOUTS])
def test_addressed_gather_paths(blocks, shape, dtype, n, what, path, wide):
    rng = np.random.default_rng([shape[0], n, np.dtype(dtype).itemsize])
    table = random_table(rng, shape, dtype)
    ids = rng.integers(-shape[0], shape[0], size=n)
    ids[:3] = [0, shape[0] - 1, -1][:n]
    check_gather(blocks, table, ids, 0, path, wide)
    cols = rng.integers(0, shape[1], size=max(1, n // 7)).astype(np.int32)     # gathers inside rows
    check_gather(blocks, table, cols, 1, path, wide)


def test_each_path_runs_its_variant(blocks):
    """The forcing above reaches the kernels it names: rows (no VEC), VEC groups, single units; ADDR and WIDE."""
    table = np.arange(300 * 37, dtype=np.float32).reshape(300, 37)
    ids = np.arange(200) % 300
    assert check_gather(blocks, table, ids, 0, "vec", False) == ["gather_vec16_k1_u4_i64_addr"]
    assert check_gather(blocks, table, ids, 0, "unit", True) == ["gather_u4_i64_wide"]
    assert check_gather(blocks, table, ids, 0, "rows", False) == ["gather_u4_i64_addr"]
    bytes_ = (np.arange(9000) % 251).astype(np.uint8).reshape(3000, 3)
    ids = np.arange(2000) * 7 % 3000
    assert check_gather(blocks, bytes_, ids, 0, "vec", True) == ["gather_vec4_k1_u1_i64_wide"]
    assert check_gather(blocks, bytes_, ids.astype(np.int32), 0, "unit", False) == ["gather_u1_i32_addr"]
    # the run variants, where the block lists fit their uniform buffer (kernels.RUN_UNIFORM_WORDS); else one
    # unit per iteration
    small, large = np.zeros((40, 8), np.float32), np.zeros((700, 512), np.float32)   # outputs 9.4 KiB, 180 KiB
    for wide in (False, True):
        suffix = "_wide" if wide else "_addr"
        assert check_gather(blocks, small, np.arange(300) % 40, 0, "run", wide) == ["gather_u16_i64_run" + suffix]
        # the large table's lists: with 4 KiB blocks 351 + 45 (output) + 1 (indices) addresses, 8 head words and
        # the 76 (WIDE) or 42 (ADDR) 64-bit parameter words fit 512 (1024 32-bit words); with 256-byte blocks not
        assert dmlgpu.kernels.table.RUN_UNIFORM_WORDS == 1024
        want = "gather_u16_i64_run" if blocks.chunk_bytes == 4096 else "gather_u16_i64"
        assert check_gather(blocks, large, np.arange(90) % 700, 0, "run", wide) == [want + suffix]


@pytest.mark.parametrize("rows, row_bytes, dtype, n, itype", [
    (1280, 8192, np.float16, 100, np.int64),     # 10 blocks of 1 MiB, rows inside blocks
    (1500, 3000, np.float32, 333, np.int32),     # 5 blocks, rows straddling their boundaries
    (4096, 4096, np.uint64, 64, np.int64),       # 16 blocks (plan.WINDOW_BLOCKS)
    (4100, 4096, np.uint64, 64, np.int64),       # 17 blocks: ADDR
    (20000, 256, np.float32, 2000, np.int64),    # 5 blocks, rows under plan.WINDOW_ROW_BYTES: ADDR
])
def test_cpu_rows_from_a_table_in_few_blocks(rows, row_bytes, dtype, n, itype):
    """On CPU devices, whole rows of plan.WINDOW_ROW_BYTES or more gathered from a table held in at most
    plan.WINDOW_BLOCKS blocks (indices and output in one) take one dispatch of the WINDOW variant per block, bound
    to it; more blocks or shorter rows take ADDR."""
    with dmlgpu.Device(chunk_bytes=1 << 20, max_queued=0) as dev:
        dev.runtime.canary_words = 4
        rng = np.random.default_rng(rows)
        table = random_table(rng, (rows, row_bytes // np.dtype(dtype).itemsize), dtype)
        ids = rng.integers(-rows, rows, size=n).astype(itype)
        ids[:2] = [0, rows - 1]
        ran = check_gather(dev, table, ids, 0, "auto", False)
        if dev.info.type == "CPU":
            blocks = -(-(table.nbytes + 16) // (1 << 20))
            unit = 16 if row_bytes % 16 == 0 else 8
            want = [f"gather_u{unit}_i{np.dtype(itype).itemsize * 8}_window"] * blocks
            windows = blocks <= plan.WINDOW_BLOCKS and row_bytes >= plan.WINDOW_ROW_BYTES
            assert ran == (want if windows else [f"gather_u{unit}_i64_addr"]), ran


def test_gather_elements_and_gather_nd_paths(blocks):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 2**16, size=(90, 41), dtype=np.uint16)
    idx = rng.integers(-90, 90, size=(130, 41))
    want = np.take_along_axis(data, np.where(idx < 0, idx + 90, idx), axis=0)
    nd = np.stack([rng.integers(0, 90, 500), rng.integers(0, 41, 500)], axis=1)       # single elements
    for path in PATHS:
        for wide in (False, True):
            with forced(path, wide):
                got = dmlgpu.gather_elements(dmlgpu.tensor(data, device=blocks), dmlgpu.tensor(idx, device=blocks))
                assert np.array_equal(got.numpy(), want) and got.buffer.canary_intact(), (path, wide)
                got = dmlgpu.gather_nd(data, nd, device=blocks)
                assert np.array_equal(got, data[nd[:, 0], nd[:, 1]]), (path, wide)


# ---- copies ----

@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.complex128])
@pytest.mark.parametrize("wide", [False, True], ids=["addr", "wide"])
def test_addressed_copies(blocks, dtype, wide, monkeypatch):
    """CopyPlan on buffers held in several blocks: packed (VEC) and strided (one unit per iteration), through
    the ADDR variant or (forced: ``narrow`` off, as for maps past 2^32 units) the WIDE one (kernel copies
    forced: CPU devices copy packed layouts by a COPY step, test_packed_copies_by_transfer_commands)."""
    from dmlgpu.plans.index_map import Layout, copy_map
    monkeypatch.setattr(plan, "KERNEL_COPIES", True)
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    x = random_table(rng, (97, 45), dtype)
    item = x.dtype.itemsize
    src = blocks.buffer(x)
    for dst_layout, want in ((Layout.packed((97, 45)), x), (Layout((97, 45), (1, 97)), x.T)):
        c = plan.CopyPlan(copy_map(Layout.packed((97, 45)), dst_layout, item))
        if wide:
            c.narrow = False
        dst = blocks.buffer(nbytes=-(-x.nbytes // 4) * 4)
        d, up = c.dispatch(blocks.runtime, src, dst)
        assert d.kernel.endswith("_wide" if wide else "_addr") and src.chunked and dst.chunked
        blocks.runtime._run([d], uploads=up)
        assert dst.read()[:x.nbytes].tobytes() == np.ascontiguousarray(want).tobytes()
        assert dst.canary_intact()


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.complex128])
def test_packed_copies_by_transfer_commands(blocks, dtype, monkeypatch):
    """A packed copy as a COPY step (CPU devices' default), between buffers held in several blocks of other
    boundaries, queued after work on the source and before work on the destination."""
    from dmlgpu.plans.index_map import Layout, copy_map
    from dmlgpu.runtime import COPY
    monkeypatch.setattr(plan, "KERNEL_COPIES", False)
    rng = np.random.default_rng(3)
    x = random_table(rng, (97, 45), dtype)
    c = plan.CopyPlan(copy_map(Layout.packed((97, 45)), Layout.packed((97, 45)), x.dtype.itemsize))
    src = blocks.buffer(np.zeros(x.nbytes + 8, np.uint8))
    src.write(x.view(np.uint8).reshape(-1))
    dst = blocks.buffer(nbytes=-(-x.nbytes // 4) * 4 + 4)
    d, up = c.dispatch(blocks.runtime, src, dst)
    assert d.kernel == COPY and d.count == x.nbytes and up == [] and src.chunked and dst.chunked
    blocks.runtime.run([d])
    assert dst.read()[:x.nbytes].tobytes() == x.tobytes() and dst.canary_intact()


# ---- the fuzz campaign ----

DTYPES = [np.uint8, np.int16, np.float32, np.float64, np.complex128]
INDEX_TYPES = [np.int32, np.int64, np.uint32]


@given(st.data())
def test_fuzz_addressed_gather(blocks, data):
    rows = data.draw(st.integers(1, 400), label="rows")
    length = data.draw(st.integers(1, 90), label="row length")
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    itype = data.draw(st.sampled_from(INDEX_TYPES), label="itype")
    n = data.draw(st.integers(1, 300), label="indices")
    axis = data.draw(st.sampled_from([0, 1]), label="axis")
    path = data.draw(st.sampled_from(PATHS), label="path")
    wide = data.draw(st.booleans(), label="wide")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    table = random_table(rng, (rows, length), dtype)
    dim = table.shape[axis]
    low = 0 if np.dtype(itype).kind == "u" else -dim
    check_gather(blocks, table, rng.integers(low, dim, size=n).astype(itype), axis, path, wide)


def test_repeated_calls_remake_the_block_lists():
    """A repeated gather on Tensors held in several blocks runs from a call template (dmlgpu/api/call_templates.py),
    which makes the ADDR variant's parameters again for each call's buffers (addressing.wide_params' recipe of
    plan.addr_words)."""
    with dmlgpu.Device(chunk_bytes=4096) as dev:
        rng = np.random.default_rng(9)
        tables = [dmlgpu.tensor(random_table(rng, (500, 37), np.float32), device=dev) for _ in range(2)]
        for k in range(6):
            ids = rng.integers(-500, 500, size=300)
            out = dmlgpu.gather(tables[k % 2], dmlgpu.tensor(ids, device=dev))
            assert out.numpy().tobytes() == tables[k % 2].numpy()[ids].tobytes(), k
        assert out.buffer.chunked and any(type(t).__name__ == "Template" for t in dev.runtime.templates.values())


def test_repeated_run_gathers_remake_their_uniform_block_lists():
    """The run variants' padded uniform parameters (addressing.listed_params) are remade per call by a call template
    too: a GPU's repeated gather of rows of 1 KiB from tables held in 4 KiB blocks (lavapipe shown to the plans as
    an integrated GPU), two tables in turn, each result checked."""
    import dataclasses
    with dmlgpu.Device(chunk_bytes=4096) as dev:
        dev.runtime.info = dataclasses.replace(dev.info, type="integrated GPU")
        rng = np.random.default_rng(10)
        tables = [dmlgpu.tensor(random_table(rng, (300, 256), np.float32), device=dev) for _ in range(2)]
        for k in range(6):
            ids = rng.integers(-300, 300, size=100)
            with dev.record() as rec:
                out = dmlgpu.gather(tables[k % 2], dmlgpu.tensor(ids, device=dev))
            assert [w.kernel for kind, w in rec._steps if kind == "dispatch"] == ["gather_u16_i64_run_addr"]
            assert out.numpy().tobytes() == tables[k % 2].numpy()[ids].tobytes(), k
            out = dmlgpu.gather(tables[k % 2], dmlgpu.tensor(ids, device=dev))       # eager: templates
            assert out.numpy().tobytes() == tables[k % 2].numpy()[ids].tobytes(), k
        padded = [t for t in dev.runtime.templates.values() if type(t).__name__ == "Template"
                  and any(size for _, _, size in t.recipes)]
        assert padded and out.buffer.chunked
