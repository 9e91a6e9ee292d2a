"""Scatter reductions grouped on the GPU (dmlgpu/plans/reduction.py): the radix sort's passes (0 to 4 of them:
target counts 1, 2, 2^k +- 1, more than 2^24), partial chunks, tiles and scan chunks, skewed
distributions, every dtype (sort and atomics paths), row slices, and no host round trip in layers 1
and 2 (the indices are never downloaded). Results are compared bit for bit with a sequential reference. CPU devices
run the sorted plan here too (reduction_cpu.CPU_FOLD off): their sort-free fold has tests/test_reductions_cpu.py."""
import sys
import zlib

import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu import DataType, TensorDesc, reference
from dmlgpu.kernels import table as kernels
from dmlgpu.plans import radix_sort, reduction_cpu, reduction_minmax
from dmlgpu.plans.index_map import Layout
from dmlgpu.plans.reduction import P_ROWS, ReducePlan

from test_reductions import ARITH_DTYPES, REDUCTIONS, same, values

TILE = kernels.FULL_GEOMETRY.radix_tile


@pytest.fixture(autouse=True)
def sorted_plan(monkeypatch):
    """The sorted plan on every device (CPU devices fold without a sort by default: reduction_cpu.py)."""
    monkeypatch.setattr(reduction_cpu, "CPU_FOLD", False)
    monkeypatch.setattr(reduction_minmax, "ENABLED", False)     # min/max sorted too (not by 64-bit atomics)
    dmlgpu.default_device().runtime.templates.clear()


_LONG_RUN = 64     # updates of one target that sequential() folds with an accumulate (its loop: shorter runs)


def sequential(data, targets, updates, reduction, include_self=True):
    """The sequential reference on a flat data array, vectorised over the k-th update of every target
    (k = 0, 1, ...), which keeps each target's row-major order (its long runs: by an accumulate): fast for long inputs
    of short runs and for long runs.
    ``include_self`` and "mean" as reference.scatter_elements takes them."""
    mean = reduction == "mean"
    reduction = "add" if mean else reduction
    out = data.copy()
    order = np.argsort(targets, kind="stable")
    t_sorted = targets[order]
    starts = np.r_[0, np.flatnonzero(t_sorted[1:] != t_sorted[:-1]) + 1]
    lengths = np.diff(np.r_[starts, t_sorted.size])
    run = np.repeat(starts, lengths)
    rank = np.arange(t_sorted.size) - run
    if reduction in ("add", "mul") and out.dtype in ARITH_DTYPES and out.dtype.kind != "b":   # (ml_dtypes' too)
        # A long run (one target's many updates) folded by the ufunc's accumulate, one NumPy operation and one
        # rounding per step in row-major order as the loop below (accumulate is sequential, unlike reduce): the
        # loop's steps are a NumPy call each, 15 s for a run of 126,000 (test_sequential_reference_takes_long_runs).
        ufunc = np.add if reduction == "add" else np.multiply
        for start, length in zip(starts[lengths >= _LONG_RUN], lengths[lengths >= _LONG_RUN]):
            pick = order[start:start + length]
            t = targets[pick[0]]
            steps = updates[pick] if not include_self else np.r_[out[t:t + 1], updates[pick]]
            with np.errstate(all="ignore"):
                out[t] = ufunc.accumulate(steps, dtype=out.dtype)[-1]
            rank[start:start + length] = -1     # (done: the loop below leaves it)
    for k in range(int(rank.max(initial=-1)) + 1):
        pick = order[rank == k]
        t = targets[pick]
        out[t] = updates[pick] if k == 0 and not include_self else reference.combine(reduction, out[t], updates[pick])
    if mean:
        counts = np.bincount(targets, minlength=data.size)
        for t in np.flatnonzero(counts):
            out[t] = reference.mean_of(out[t], int(counts[t]) + include_self)
    return out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint64, ml_dtypes.bfloat16,
                                   ml_dtypes.float8_e5m2], ids=str)
def test_sequential_reference_takes_long_runs(monkeypatch, dtype):
    """sequential()'s accumulate of long runs gives its loop's result, bit for bit (runs of 1 to 400 updates,
    with and without the data's element, the mean's count)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(5)
    n, m = 1200, 7
    targets = np.minimum(rng.geometric(0.4, size=n) - 1, m - 1)
    data = values(rng, (m,), dtype, "add")
    for reduction in ("add", "mul") if dtype.kind in "iu" else ("add", "mul", "mean"):
        upd = values(rng, (n,), dtype, reduction)
        for include_self in (True, False):
            fast = sequential(data, targets, upd, reduction, include_self)
            monkeypatch.setattr(sys.modules[__name__], "_LONG_RUN", n + 1)
            loop = sequential(data, targets, upd, reduction, include_self)
            monkeypatch.undo()
            assert same(fast, loop, loose_nan=False), (reduction, include_self)


def plan_for(n, m, dtype=np.float32, reduction="add", include_self=True):
    lay = Layout.packed
    return ReducePlan.elements(reduction, dtype, np.int64, lay((m,)), lay((n,)), lay((n,)), 0,
                               include_self=include_self)


@pytest.mark.parametrize("m, passes", [(1, 0), (2, 1), (255, 1), (256, 1), (257, 2), (65535, 2), (65537, 3),
                                       ((1 << 24) - 1, 3)])
def test_sort_passes_follow_the_target_count(m, passes):
    """The sort handles only the bits of the largest key: no pass for one target, one up to 256, ..."""
    assert len(plan_for(10, m).sort(kernels.FULL_GEOMETRY).pass_words) == passes


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
    """More tiles than one step of the scan takes: each digit's row of tile counts is scanned in two steps, the
    second from the first's sum."""
    n = (kernels.RADIX_SCAN_ITEMS * kernels.FULL_GEOMETRY.workgroup_size + 1) * TILE + 5
    rng = np.random.default_rng(22)
    m = 70_000
    data = rng.standard_normal(m).astype(np.float32)
    idx = rng.integers(0, m, size=n)
    upd = rng.standard_normal(n).astype(np.float32)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add")
    assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)


@pytest.mark.parametrize("profile, variant", [("full", "radix_scatter_match"),
                                              ("subgroupSupportedOperations=1", "radix_scatter_local"),
                                              ("maxComputeSharedMemorySize=16384", "radix_scatter")])
def test_each_radix_scatter(profile, variant, monkeypatch):
    """The three scatter passes of the sort (ranking by subgroup ballots; each tile sorted in shared memory;
    each pair stored in its chunk), each where the device's profile leaves it the choice, give the same bits:
    partial tiles, one to three passes, many equal keys."""
    monkeypatch.setattr(radix_sort, "CPU_DIRECT", False)      # (CPU devices take the last one by default)
    with dmlgpu.Device(profile=profile) as dev:
        if variant == "radix_scatter_match" and not (kernels.MIN_SUBGROUP <= dev.info.subgroup_size and
                                                     dev.runtime.supports("radix_scatter_match")):
            pytest.skip(f"{dev.info.name} has no subgroup ballots and arithmetic in compute shaders")
        assert radix_sort.scatter_kernel(dev.runtime, False) == variant
        rng = np.random.default_rng(len(profile))
        for m, n in [(2, 5), (300, TILE - 1), (65537, 3 * TILE + 17), (70_000, 2 * TILE)]:
            data = rng.standard_normal(m).astype(np.float32)
            idx = rng.integers(0, m, size=n) if n != 2 * TILE else rng.integers(0, 3, size=n) * (m // 3)
            upd = rng.standard_normal(n).astype(np.float32)
            out = dmlgpu.scatter_elements(data, idx, upd, device=dev, reduction="add")
            assert same(out, sequential(data, idx, upd, "add"), loose_nan=False), (m, n)
            assert not dev.runtime.zeroed(radix_sort.COUNTS, 4).read()[:4 * dev.runtime.geometry.radix].any()   # the totals


def test_more_than_2_24_targets(device):
    """2^24 + 3 targets (uint8, 16 MiB): 25-bit keys, four sort passes; updates near both ends and
    duplicated."""
    m = (1 << 24) + 3
    rng = np.random.default_rng(23)
    data = rng.integers(0, 256, size=m, dtype=np.uint8)
    idx = np.concatenate([rng.integers(0, 50, 3000), rng.integers(m - 50, m, 3000), rng.integers(0, m, 3000)])
    idx = idx[rng.permutation(idx.size)]
    upd = rng.integers(0, 256, size=idx.size, dtype=np.uint8)
    assert len(plan_for(idx.size, m, np.uint8).sort(kernels.FULL_GEOMETRY).pass_words) == 4
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
    """Records every buffer that the device's synchronous runs download (runtime/submit.py's Submitter.run)."""

    def __init__(self, device, monkeypatch):
        self.seen = []
        run = device.runtime.submitter.run

        def counting(dispatches, uploads=(), downloads=(), queue=False, host_read=False):
            self.seen += list(downloads)
            return run(dispatches, uploads=uploads, downloads=downloads, queue=queue, host_read=host_read)
        monkeypatch.setattr(device.runtime.submitter, "run", counting)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                   ml_dtypes.float8_e5m2])
@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("reduction, include_self", [("add", True), ("mul", True), ("add", False), ("mul", False),
                                                     ("mean", True), ("mean", False)])
def test_fold_variants(device, monkeypatch, dtype, blocks, reduction, include_self):
    """Float add and mul fold long runs plainly or by blocks (the GPU variants, forced here; float32's with its
    own arithmetic, the others' loads issued a block at a time): the same bits, infinities, invalid operations
    (inf - inf, 0 * inf), NaN operands and signed zeros included; with include_self=False and "mean" too."""
    monkeypatch.setattr(dmlgpu.plans.reduction, "FOLD_BLOCKS", blocks)
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(31)
    m, n = 7, 6000
    data = values(rng, (m,), dtype, reduction)
    data[3] = -0.0
    idx = rng.integers(0, m, size=n)
    idx[:40] = 5                                       # a run whose first blocks are clean
    upd = values(rng, (n,), dtype, reduction)
    specials = np.array([np.inf, -np.inf, 0.0, -0.0], dtype=np.float32).astype(dtype)   # (e4m3fn: inf is NaN)
    upd[rng.integers(40, n, size=30)] = rng.choice(specials, size=30)
    nan = np.array([0x7FC01234], dtype=np.uint32).view(np.float32) if dtype == np.float32 else \
        np.array([np.nan], dtype=np.float32).astype(dtype)
    if dtype != np.float16:        # (NumPy's float16 add picks either NaN of two: its SIMD loop's choice)
        upd[rng.integers(40, n, size=3)] = nan[0]
    idx[idx == 2] = 1                                  # target 2 keeps its data
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction, include_self=include_self)
    assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)
    rows = np.stack([upd, upd[::-1], -upd], axis=1)    # rows of 3: the updates are gathered, not carried
    table = np.stack([data, data, data], axis=1)
    out = dmlgpu.scatter_nd(table, idx[:, None], rows, device=device, reduction=reduction, include_self=include_self)
    assert same(out, reference.scatter_nd(table, idx[:, None], rows, reduction, include_self), loose_nan=False)


# (dtype, exponent bits' shift, exponent bias, the largest finite, values near the smallest normal)
HALF_FLOATS = [(ml_dtypes.bfloat16, 7, 127, [0x7F70, 0x7F7F, 0x7F60], [0x0081, 0x8080, 0x0100, 0x0000]),
               (np.float16, 10, 15, [0x7BF0, 0x7BFF, 0x7B00], [0x0401, 0x8400, 0x0800, 0x0001, 0x0000])]


def half_float_rows(rng, reduction, dtype, shift, bias, big, tiny, n=8000):
    """(targets among 0-4, updates) of a HALF_FLOATS dtype: random mantissas over many exponents (ties included),
    a long run from the start (target 3), a run that overflows to infinity and goes on (4), one near the smallest
    normal, subnormals and zeros (2)."""
    spread = (bias - 9, bias + 9) if reduction == "add" else (bias - 1, bias + 1)
    bits = (rng.integers(*spread, size=n) << shift) | rng.integers(0, 1 << shift, size=n) | \
        (rng.integers(0, 2, size=n) << 15)
    upd = bits.astype(np.uint16).view(dtype)
    idx = rng.integers(0, 5, size=n)
    idx[:600] = 3
    idx[1000:1200], upd[1000:1200] = 4, np.resize(np.array(big, np.uint16).view(dtype), 200)
    idx[2000:2100], upd[2000:2100] = 2, np.resize(np.array(tiny, np.uint16).view(dtype), 100)
    return idx, upd


@pytest.mark.parametrize("dtype, shift, bias, big, tiny", HALF_FLOATS, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_half_float_blocks_round_as_reference(device, monkeypatch, reduction, dtype, shift, bias, big, tiny):
    """bfloat16's and float16's block fold (the device's float32 step, then a rounding to nearest even in
    integers) against the sequential reference (ml_dtypes, NumPy): random mantissas over many exponents (ties
    included), runs that overflow to infinity and go on (the block is redone), runs near the smallest normal,
    subnormals and zeros."""
    monkeypatch.setattr(dmlgpu.plans.reduction, "FOLD_BLOCKS", True)
    idx, upd = half_float_rows(np.random.default_rng(47), reduction, dtype, shift, bias, big, tiny)
    data = np.array([1, -2, 0.5, 3, 100], dtype=np.float32).astype(dtype)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
    assert same(out, sequential(data, idx, upd, reduction), loose_nan=False)


@pytest.mark.parametrize("n, m", [(1, 1), (TILE + 1, 300), (3 * TILE + 5, 70_000)])
def test_scratch_guard_words(n, m):
    """With guard words after every buffer (Device.canary_words), no pass of the sort or the fold writes
    past its scratch buffers or the output, and reads past them would show in the result."""
    dev = dmlgpu.Device()
    try:
        dev.runtime.canary_words = 64
        rng = np.random.default_rng(n + m)
        data = rng.standard_normal(m).astype(np.float32)
        idx = rng.integers(0, m, size=n)
        upd = rng.standard_normal(n).astype(np.float32)
        plan = plan_for(n, m)
        bufs = {"input": dev.buffer(data), "indices": dev.buffer(idx), "updates": dev.buffer(upd)}
        bufs["output"] = bufs["input"]              # in place: the plan has no copy
        taken = []
        dispatches, uploads = plan.dispatches(dev.runtime, take=lambda nbytes: taken.append(dev.runtime.take_buffer(nbytes)) or taken[-1],
                                              **bufs)
        dev.runtime._run(dispatches, uploads=uploads)
        assert all(b.canary_intact() for b in list(bufs.values()) + taken)
        out = bufs["output"].read()[: data.nbytes].view(np.float32)
        assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)
    finally:
        dev.close()


# ---- Associative reductions folded by levels of partials (reduction.py: "Associative reductions") ----

ASSOCIATIVE = ([(np.dtype(t), op) for t in (np.float16, np.float32, np.float64) for op in ("min", "max")]
               + [(np.dtype(t), op) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                              np.int64, np.uint64, np.bool_) for op in REDUCTIONS])


def special_values(rng, shape, dtype, reduction):
    """values() with, for floats, NaNs of different payloads (quiet and signalling, either sign), signed
    zeros and infinities at random places: which NaN wins shows the order of the fold."""
    v = values(rng, shape, dtype, reduction)
    if dtype.kind == "f":
        bits = np.dtype(UINT_OF[dtype.itemsize])
        nbits = dtype.itemsize * 8
        man = nbits - {2: 6, 4: 9, 8: 12}[dtype.itemsize]               # mantissa bits
        exp_all = ((1 << (nbits - 1)) - 1) ^ ((1 << man) - 1)            # exponent field all ones
        flat = v.reshape(-1).view(bits)
        k = max(1, flat.size // 50)
        pos = rng.integers(0, flat.size, size=k)
        payload = rng.integers(1, 1 << min(man, 62), size=k, dtype=np.uint64).astype(bits)
        sign = rng.integers(0, 2, size=k).astype(bits) << bits.type(nbits - 1)
        flat[pos] = exp_all | payload | sign                               # NaNs, quiet or signalling
        pos = rng.integers(0, flat.size, size=3 * k)
        flat[pos] = rng.choice(np.array([0, 1 << (nbits - 1), exp_all, exp_all | (1 << (nbits - 1))],
                                        dtype=np.uint64).astype(bits), size=pos.size)
    return v


UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def partial_cases(rng, n, m):
    """Target distributions that make runs span many chunks: one target, Zipf-like skew, runs whose
    boundaries fall on chunk edges (lengths multiples of 4 and 16), and random."""
    yield "one", np.full(n, m // 2)
    yield "zipf", (rng.zipf(1.1, size=n) - 1) % m
    lengths = rng.choice([4, 8, 16, 32, 48, 256], size=n)
    yield "edges", np.repeat(np.arange(lengths.size) % m, lengths)[:n]
    yield "uniform", rng.integers(0, m, size=n)


def test_partials_levels():
    """Associative reductions get levels of partials up to a single chunk (16M rows of one target: 6
    passes, the rows' and 5 above); float add and mul keep the sequential fold."""
    n = 16 << 20
    assert [int(w[P_ROWS]) for w in plan_for(n, 1, np.float32, "min").level_words] == \
        [1 << 20, 1 << 16, 1 << 12, 256, 16]
    for dtype, reduction in ASSOCIATIVE:
        plan = plan_for(n, 1, dtype, reduction)
        assert len(plan.level_words) == (0 if plan.atomic else 5), (dtype, reduction)
    for dtype in (np.float16, np.float32, np.float64):
        for reduction in ("add", "mul"):
            assert not plan_for(n, 1, dtype, reduction).level_words
    assert not plan_for(16, 1, np.int64, "add").level_words


@pytest.mark.parametrize("chunks", [(2, 2), (3, 5), (16, 16)], ids=str)
@pytest.mark.parametrize("dtype, reduction", ASSOCIATIVE, ids=str)
def test_partials_bit_exact(device, monkeypatch, chunks, dtype, reduction):
    """Long runs over many chunks and many groups of every level (small chunks make deep trees of short
    inputs), partial last chunks, run boundaries on chunk edges; data values with NaNs too. Bit for bit the
    sequential reference: which NaN wins shows the partials combined in order."""
    monkeypatch.setattr(dmlgpu.plans.reduction, "FOLD_CHUNK", chunks[0])
    monkeypatch.setattr(dmlgpu.plans.reduction, "PARTIALS", True)
    monkeypatch.setattr(dmlgpu.plans.reduction, "PARTIAL_CHUNK", chunks[1])
    rng = np.random.default_rng(zlib.crc32(f"{chunks} {dtype} {reduction}".encode()))
    m = 37
    for n in (1531, 4096 if chunks[0] == 16 else 512):
        for name, idx in partial_cases(rng, n, m):
            plan = plan_for(n, m, dtype, reduction)
            assert plan.level_words or plan.atomic
            data = special_values(rng, (m,), dtype, reduction)
            upd = special_values(rng, (n,), dtype, reduction)
            out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
            assert same(out, sequential(data, idx, upd, reduction), loose_nan=False), (name, n)


@pytest.mark.parametrize("chunks", [(2, 2), (3, 5)], ids=str)
@pytest.mark.parametrize("dtype, reduction", [(np.dtype(np.float32), "min"), (np.dtype(np.float64), "max"),
                                              (np.dtype(np.int8), "mul"), (np.dtype(np.int32), "add"),
                                              (np.dtype(np.uint64), "add"), (np.dtype(np.bool_), "min")], ids=str)
def test_partials_exclude_self(device, monkeypatch, chunks, dtype, reduction):
    """include_self=False on the levels of partials: each run starts from its first row (level 0), runs
    across many chunks and levels, targets without updates keep their values."""
    monkeypatch.setattr(dmlgpu.plans.reduction, "FOLD_CHUNK", chunks[0])
    monkeypatch.setattr(dmlgpu.plans.reduction, "PARTIALS", True)
    monkeypatch.setattr(dmlgpu.plans.reduction, "PARTIAL_CHUNK", chunks[1])
    rng = np.random.default_rng(zlib.crc32(f"{chunks} {dtype} {reduction} exclude".encode()))
    m, n = 37, 1531
    for name, idx in partial_cases(rng, n, m):
        plan = plan_for(n, m, dtype, reduction, include_self=False)
        assert plan.level_words and not plan.atomic
        data = special_values(rng, (m,), dtype, reduction)
        upd = special_values(rng, (n,), dtype, reduction)
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction, include_self=False)
        assert same(out, sequential(data, idx, upd, reduction, False), loose_nan=False), name


@pytest.mark.parametrize("dtype, reduction", [(np.dtype(np.float32), "min"), (np.dtype(np.float16), "max"),
                                              (np.dtype(np.float64), "max"), (np.dtype(np.int8), "mul"),
                                              (np.dtype(np.int32), "add"), (np.dtype(np.uint64), "mul")], ids=str)
def test_partials_row_slices(device, monkeypatch, dtype, reduction):
    """Rows of several elements (partials per slice position; 1-byte outputs share words) in long runs."""
    monkeypatch.setattr(dmlgpu.plans.reduction, "FOLD_CHUNK", 3)
    monkeypatch.setattr(dmlgpu.plans.reduction, "PARTIALS", True)
    monkeypatch.setattr(dmlgpu.plans.reduction, "PARTIAL_CHUNK", 2)
    rng = np.random.default_rng(41)
    data = special_values(rng, (5, 9), dtype, reduction)
    idx = np.where(rng.random(700) < 0.8, 2, rng.integers(0, 5, size=700))[:, None]
    upd = special_values(rng, (700, 9), dtype, reduction)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction)
    assert same(out, reference.scatter_nd(data, idx, upd, reduction), loose_nan=False)


@pytest.mark.parametrize("dtype, reduction", [(np.dtype(np.float32), "min"), (np.dtype(np.float64), "max"),
                                              (np.dtype(np.int64), "add"), (np.dtype(np.uint8), "mul")], ids=str)
def test_partials_default_chunks_long_run(device, dtype, reduction):
    """The default chunks: one target of 70K rows (4 levels above the rows, several groups on each but the
    last) among other targets' runs. (A run of more than 65535 rows folded by one invocation comes out
    wrong on lavapipe, whose loops stop after 65535 iterations: the levels keep every loop short.)"""
    rng = np.random.default_rng(42)
    n, m = 70_000, 1000
    idx = np.where(rng.random(n) < 0.95, 7, rng.integers(0, m, size=n))
    data = special_values(rng, (m,), dtype, reduction)
    upd = special_values(rng, (n,), dtype, reduction)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
    assert same(out, sequential(data, idx, upd, reduction), loose_nan=False)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
@pytest.mark.parametrize("reduction, include_self", [("add", True), ("mul", True), ("mean", True), ("add", False),
                                                     ("mean", False)])
def test_sequential_fold_in_pieces(device, monkeypatch, dtype, reduction, include_self):
    """CPU devices fold float add/mul runs in pieces of CPU_PIECE rows, one pass each (llvmpipe ends a shader's
    loops after 65535 iterations): runs crossing many pieces, in slices of several elements, bit-exact; the
    pass that ends a run divides it ("mean")."""
    from dmlgpu.plans import reduction as red
    if device.info.type != "CPU":
        pytest.skip("pieces are a CPU device's")
    monkeypatch.setattr(red, "CPU_PIECE", red.FOLD_CHUNK + 1)    # pieces of 17 rows (at least a chunk)
    rng = np.random.default_rng(3)
    dtype = np.dtype(dtype)
    n = 500
    idx = np.where(rng.random(n) < 0.6, 2, rng.integers(0, 6, n)).astype(np.int64)   # one long run, short ones
    data = values(rng, (6, 3), dtype, reduction)
    upd = values(rng, (n, 3), dtype, reduction)
    got = dmlgpu.scatter_nd(data, idx[:, None], upd, reduction=reduction, device=device, include_self=include_self)
    assert same(got, reference.scatter_nd(data, idx[:, None], upd, reduction, include_self), loose_nan=False)
    flat_data, flat_upd = data[:, 0].copy(), upd[:, 0].copy()
    got = dmlgpu.scatter_elements(flat_data, idx, flat_upd, reduction=reduction, device=device,
                                  include_self=include_self)
    assert same(got, sequential(flat_data, idx, flat_upd, reduction, include_self), loose_nan=False)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16], ids=str)
def test_tree_order_long_runs(device, dtype):
    """order="tree" over a run of 70,000 rows (17 passes; past llvmpipe's loop limit for one invocation) among
    short runs, and the same shapes on a tensor of 2 slice positions."""
    rng = np.random.default_rng(43)
    dtype = np.dtype(dtype)
    n, m = 70_000, 50
    idx = np.where(rng.random(n) < 0.99, 7, rng.integers(0, m, size=n))
    data = values(rng, (m,), dtype, "add")
    upd = values(rng, (n,), dtype, "add")
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add", order="tree")
    assert same(out, reference.scatter_elements(data, idx, upd, 0, "add", True, "tree"), loose_nan=False)
    plan = plan_for(n, m, dtype, "add")
    assert not plan.tree and ReducePlan.elements("add", dtype, np.int64, Layout.packed((m,)), Layout.packed((n,)),
                                                 Layout.packed((n,)), 0, order="tree").tree


@pytest.mark.parametrize("reduction, include_self", [("add", True), ("mean", True), ("mean", False)])
def test_one_target_past_the_cpu_loop_limit(device, reduction, include_self):
    """More than 65535 float32 additions onto one target (llvmpipe's loop limit) come out bit-exact (and
    their mean: the count of the whole run)."""
    rng = np.random.default_rng(4)
    n = 140_000
    idx = np.where(rng.random(n) < 0.9, 1, 0).astype(np.int64)
    data = values(rng, (2,), np.dtype(np.float32), "add")
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    out = dmlgpu.scatter_elements(data, idx, upd, reduction=reduction, device=device, include_self=include_self)
    assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)
