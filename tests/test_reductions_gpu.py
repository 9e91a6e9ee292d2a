"""Scatter reductions grouped on the GPU (dmlgpu/reduction.py): the radix sort's passes (0 to 4 of them:
target counts 1, 2, 2^k +- 1, more than 2^24), partial chunks, tiles and scan chunks, skewed
distributions, every dtype (sort and atomics paths), row slices, and no host round trip in layers 1
and 2 (the indices are never downloaded). Results are compared bit for bit with a sequential reference."""
import numpy as np
import pytest

import dmlgpu
from dmlgpu import DataType, TensorDesc, kernels, reference
from dmlgpu.index_map import Layout
from dmlgpu.reduction import ReducePlan

from test_reductions import ARITH_DTYPES, REDUCTIONS, same, values

TILE = kernels.RADIX_TILE


def sequential(data, targets, updates, reduction):
    """The sequential reference on a flat data array, vectorised over the k-th update of every target
    (k = 0, 1, ...), which keeps each target's row-major order: fast for long inputs of short runs."""
    out = data.copy()
    order = np.argsort(targets, kind="stable")
    t_sorted = targets[order]
    starts = np.r_[0, np.flatnonzero(t_sorted[1:] != t_sorted[:-1]) + 1]
    run = np.repeat(starts, np.diff(np.r_[starts, t_sorted.size]))
    rank = np.arange(t_sorted.size) - run
    for k in range(int(rank.max(initial=-1)) + 1):
        pick = order[rank == k]
        t = targets[pick]
        out[t] = reference.combine(reduction, out[t], updates[pick])
    return out


def plan_for(n, m, dtype=np.float32, reduction="add"):
    lay = Layout.packed
    return ReducePlan.elements(reduction, dtype, np.int64, lay((m,)), lay((n,)), lay((n,)), 0)


@pytest.mark.parametrize("m, passes", [(1, 0), (2, 1), (255, 1), (256, 1), (257, 2), (65535, 2), (65537, 3),
                                       ((1 << 24) - 1, 3)])
def test_sort_passes_follow_the_target_count(m, passes):
    """The sort handles only the bits of the largest key: no pass for one target, one up to 256, ..."""
    assert len(plan_for(10, m).pass_words) == passes


@pytest.mark.parametrize("m", [1, 2, 3, 255, 257, 65535, 65537])
@pytest.mark.parametrize("n", [1, 255, 257, TILE - 1, TILE + 1, 3 * TILE + 17])
def test_target_counts_and_sizes(device, m, n):
    """float32 add (order-sensitive) over sizes that leave partial chunks and tiles, for target counts
    that need 0, 1, 2 and 3 sort passes."""
    rng = np.random.default_rng(n * 7 + m)
    data = (rng.standard_normal(m) * 1e3).astype(np.float32)
    idx = rng.integers(-m, m, size=n)
    upd = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, size=n)).astype(np.float32)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add")
    assert same(out, sequential(data, idx % m, upd, "add"), loose_nan=False)


def test_random_sizes_every_dtype(device):
    """Random sizes, target counts and dtypes, sort and atomics paths alike."""
    rng = np.random.default_rng(21)
    for case in range(24):
        dtype = ARITH_DTYPES[case % len(ARITH_DTYPES)]
        reduction = REDUCTIONS[case % 4 if case < 12 else rng.integers(4)]
        n = int(rng.integers(1, 3 * TILE))
        m = int(rng.choice([1, 2, int(rng.integers(3, 300)), int(rng.integers(300, 70_000))]))
        data = values(rng, (m,), dtype, reduction)
        idx = rng.integers(0, m, size=n).astype(rng.choice([np.int32, np.uint32, np.int64, np.uint64]))
        upd = values(rng, (n,), dtype, reduction)
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
        assert same(out, sequential(data, idx.astype(np.int64), upd, reduction), loose_nan=False), \
            (dtype, reduction, n, m)


def test_many_tiles_scan_carry(device):
    """More than 256 tiles: the per-digit scan of the tile counts runs in several chunks with a carry."""
    n = 257 * TILE + 5
    rng = np.random.default_rng(22)
    m = 70_000
    data = rng.standard_normal(m).astype(np.float32)
    idx = rng.integers(0, m, size=n)
    upd = rng.standard_normal(n).astype(np.float32)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add")
    assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)


def test_more_than_2_24_targets(device):
    """2^24 + 3 targets (uint8, 16 MiB): 25-bit keys, four sort passes; updates near both ends and
    duplicated."""
    m = (1 << 24) + 3
    rng = np.random.default_rng(23)
    data = rng.integers(0, 256, size=m, dtype=np.uint8)
    idx = np.concatenate([rng.integers(0, 50, 3000), rng.integers(m - 50, m, 3000), rng.integers(0, m, 3000)])
    idx = idx[rng.permutation(idx.size)]
    upd = rng.integers(0, 256, size=idx.size, dtype=np.uint8)
    assert len(plan_for(idx.size, m, np.uint8).pass_words) == 4
    for reduction in ("add", "mul"):
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
        assert same(out, sequential(data, idx, upd, reduction)), reduction


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64], ids=str)
def test_all_onto_one_target(device, dtype):
    """Every update onto one target, among many possible targets (the sort still runs: keys need 16
    bits): one sequential fold."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(24)
    n = 20_000
    data = values(rng, (65536,), dtype, "add")
    idx = np.full(n, 4321)
    upd = values(rng, (n,), dtype, "add")
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add")
    assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_zipf_skew(device, reduction):
    """A Zipf-like distribution: a few targets take most of the updates, most targets a few."""
    rng = np.random.default_rng(25)
    m, n = 5000, 3 * TILE + 100
    idx = (rng.zipf(1.2, size=n) - 1) % m
    for dtype in (np.dtype(np.float32), np.dtype(np.int16)):
        data = values(rng, (m,), dtype, reduction)
        upd = values(rng, (n,), dtype, reduction)
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
        assert same(out, sequential(data, idx, upd, reduction), loose_nan=False), dtype


@pytest.mark.parametrize("dtype", [np.int32, np.uint32], ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("width", [7, 8])
def test_atomics_path(device, dtype, reduction, width):
    """32-bit integer add, min and max with rows of fewer than 8 elements go through atomics (order-free:
    the same bits as the sequential reference, which the test checks); mul and wider rows through the
    sort."""
    assert (plan_for(10, 10, dtype, reduction).atomic is None) == (reduction == "mul")
    rng = np.random.default_rng(26)
    dtype = np.dtype(dtype)
    data = values(rng, (300, width), dtype, reduction)
    idx = rng.integers(-300, 300, size=(5000, 1))
    upd = values(rng, (5000, width), dtype, reduction)
    plan = ReducePlan.nd(reduction, dtype, idx.dtype, Layout.packed(data.shape), Layout.packed(idx.shape),
                         Layout.packed(upd.shape))
    assert (plan.atomic is None) == (reduction == "mul" or width >= 8)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction)
    assert same(out, reference.scatter_nd(data, idx, upd, reduction))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8], ids=str)
def test_row_slices(device, dtype):
    """scatter_nd of rows of 33 elements (a slice per run; 1-byte elements share words across rows) and
    of 2-D index tuples."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(27)
    data = values(rng, (40, 33), dtype, "add")
    idx = rng.integers(0, 40, size=(3000, 1))
    upd = values(rng, (3000, 33), dtype, "add")
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction="add")
    assert same(out, reference.scatter_nd(data, idx, upd, "add"), loose_nan=False)
    data = values(rng, (6, 7, 5), dtype, "max")
    idx = np.stack([rng.integers(-6, 6, size=500), rng.integers(-7, 7, size=500)], axis=1)
    upd = values(rng, (500, 5), dtype, "max")
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction="max")
    assert same(out, reference.scatter_nd(data, idx, upd, "max"), loose_nan=False)


def test_repeatable(device):
    """The same inputs give the same bits on every call."""
    rng = np.random.default_rng(28)
    data = rng.standard_normal(1000).astype(np.float32)
    idx = rng.integers(0, 1000, size=2 * TILE)
    upd = rng.standard_normal(idx.size).astype(np.float32)
    first = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add")
    for _ in range(3):
        assert same(dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add"), first)


# ---- No host round trip ----

class Downloads:
    """Records every buffer that device._run downloads."""

    def __init__(self, device, monkeypatch):
        self.seen = []
        run = device._run

        def counting(dispatches, uploads=(), downloads=()):
            self.seen += list(downloads)
            return run(dispatches, uploads=uploads, downloads=downloads)
        monkeypatch.setattr(device, "_run", counting)


def _never_read(buf, monkeypatch):
    def fail():
        raise AssertionError("the indices buffer was read back")
    monkeypatch.setattr(buf, "read", fail)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_layer1_no_download(device, monkeypatch, reduction):
    rng = np.random.default_rng(29)
    data = rng.standard_normal(500).astype(np.float32)
    idx = rng.integers(-500, 500, size=(2 * TILE + 3, 1)).astype(np.int32)
    upd = rng.standard_normal(idx.shape[0]).astype(np.float32)
    f, i32 = DataType.FLOAT32, DataType.INT32
    desc = dmlgpu.ScatterNDDesc(TensorDesc(f, [1, 500]), TensorDesc(i32, list(idx.shape)),
                                TensorDesc(f, [1, idx.shape[0]]), TensorDesc(f, [1, 500]), 1, 2,
                                reduction=reduction)
    op = device.compile(desc)
    b_in, b_idx, b_upd = (device.buffer(x) for x in (data, idx, upd))
    b_out = device.buffer(nbytes=data.nbytes)
    _never_read(b_idx, monkeypatch)
    downloads = Downloads(device, monkeypatch)
    op.execute(input=b_in, indices=b_idx, updates=b_upd, output=b_out)
    assert downloads.seen == []                       # execute() downloads nothing at all
    monkeypatch.undo()
    assert same(b_out.read().view(np.float32), reference.scatter_nd(data, idx, upd, reduction), loose_nan=False)


@pytest.mark.parametrize("op", ["scatter_nd", "scatter_elements"])
def test_layer2_tensor_indices_never_downloaded(device, monkeypatch, op):
    rng = np.random.default_rng(30)
    data = rng.standard_normal(300).astype(np.float32)
    idx = rng.integers(0, 300, size=TILE + 9)
    upd = rng.standard_normal(idx.size).astype(np.float32)
    ind = idx[:, None] if op == "scatter_nd" else idx
    t_data, t_idx, t_upd = (dmlgpu.tensor(x, device=device) for x in (data, ind, upd))
    _never_read(t_idx.buffer, monkeypatch)
    monkeypatch.setattr(t_idx, "numpy", lambda: pytest.fail("the indices Tensor was downloaded"))
    downloads = Downloads(device, monkeypatch)
    out = getattr(dmlgpu, op)(t_data, t_idx, t_upd, reduction="add")
    assert downloads.seen == [] and isinstance(out, dmlgpu.Tensor)
    monkeypatch.undo()
    assert same(out.numpy(), sequential(data, idx, upd, "add"), loose_nan=False)


@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_fold_variants(device, monkeypatch, blocks, reduction):
    """float32 add and mul fold long runs plainly or by blocks (the GPU variant, forced here): the same bits,
    infinities, invalid operations (inf - inf, 0 * inf), NaN operands and signed zeros included."""
    monkeypatch.setattr(dmlgpu.reduction, "FOLD_BLOCKS", blocks)
    rng = np.random.default_rng(31)
    m, n = 7, 6000
    data = values(rng, (m,), np.dtype(np.float32), reduction)
    data[3] = np.float32(-0.0)
    idx = rng.integers(0, m, size=n)
    idx[:40] = 5                                       # a run whose first blocks are clean
    upd = values(rng, (n,), np.dtype(np.float32), reduction)
    specials = np.array([np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)
    upd[rng.integers(40, n, size=30)] = rng.choice(specials, size=30)
    upd[rng.integers(40, n, size=3)] = np.array([0x7FC01234], dtype=np.uint32).view(np.float32)[0]
    idx[idx == 2] = 1                                  # target 2 keeps its data
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
    assert same(out, sequential(data, idx, upd, reduction), loose_nan=False)
    rows = np.stack([upd, upd[::-1], -upd], axis=1)    # rows of 3: the updates are gathered, not carried
    table = np.stack([data, data, data], axis=1)
    out = dmlgpu.scatter_nd(table, idx[:, None], rows, device=device, reduction=reduction)
    assert same(out, reference.scatter_nd(table, idx[:, None], rows, reduction), loose_nan=False)


@pytest.mark.parametrize("n, m", [(1, 1), (TILE + 1, 300), (3 * TILE + 5, 70_000)])
def test_scratch_guard_words(n, m):
    """With guard words after every buffer (Device.canary_words), no pass of the sort or the fold writes
    past its scratch buffers or the output, and reads past them would show in the result."""
    dev = dmlgpu.Device()
    try:
        dev.canary_words = 64
        rng = np.random.default_rng(n + m)
        data = rng.standard_normal(m).astype(np.float32)
        idx = rng.integers(0, m, size=n)
        upd = rng.standard_normal(n).astype(np.float32)
        plan = plan_for(n, m)
        bufs = {"input": dev.buffer(data), "indices": dev.buffer(idx), "updates": dev.buffer(upd)}
        bufs["output"] = bufs["input"]              # in place: the plan has no copy
        taken = []
        dispatches, uploads = plan.dispatches(dev, take=lambda nbytes: taken.append(dev._take(nbytes)) or taken[-1],
                                              **bufs)
        dev._run(dispatches, uploads=uploads)
        assert all(b.canary_intact() for b in list(bufs.values()) + taken)
        out = bufs["output"].read()[: data.nbytes].view(np.float32)
        assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)
    finally:
        dev.close()
