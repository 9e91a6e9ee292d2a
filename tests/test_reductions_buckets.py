"""Float add, mul and mean by one sort pass, tiles sorted in place and a fold per bucket of keys
(dmlgpu/plans/reduction_buckets.py, shaders/scatter_bucket.comp, radix_scatter_match.comp's TILE_LOCAL), and the key
kernel that makes the sort's first histogram (reduce_keys.comp's FIRST_HIST). GPUs take these by default for
float32 and bfloat16; here they are forced for every float type on every device that runs them (CPU devices fold
without a sort by default), with owners folded by their own invocations, by whole subgroups, or as the plan
chooses. Results are compared bit for bit with the sequential reference: key counts at the layout's edges (one
owner's key, 2^k +- 1, 16 keys per owner), buckets sharing a tile, owners with whole blocks and partial ones,
skew, NaN payloads, infinities, signed zeros and invalid operations, half-float steps that round up to infinity,
include_self=False and "mean", and targets with gaps between them."""
import types

import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu.kernels import table as kernels
from dmlgpu.plans import reduction_buckets, reduction_cpu
from dmlgpu import reference
from dmlgpu.bench.gpu_timing import capture
from dmlgpu.plans.index_map import Layout
from dmlgpu.plans.reduction import ReducePlan

from test_reductions import same, values
from test_reductions_gpu import HALF_FLOATS, half_float_rows, sequential

TILE = kernels.FULL_GEOMETRY.radix_tile
FLOATS = [np.dtype(t) for t in (np.float16, np.float32, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                 ml_dtypes.float8_e5m2)]


@pytest.fixture(autouse=True)
def buckets(monkeypatch):
    """The bucket plan wherever the device runs its kernels (not the CPU devices' fold without a sort)."""
    monkeypatch.setattr(reduction_buckets, "ENABLED", True)
    monkeypatch.setattr(reduction_cpu, "CPU_FOLD", False)
    dmlgpu.default_device().runtime.templates.clear()


@pytest.fixture(params=["owners", "subgroups", "default"])
def heavy(request, monkeypatch):
    """scatter_bucket.comp's folds: each owner by its own invocation (no owner heavy), every owner with rows by
    a whole subgroup (HEAVY_ROWS 0: every one heavy, where it has at most a subgroup's keys), both over the tiles
    sorted in place (not RANKED), or as the plan chooses (skewed keys: the hot owners by subgroups, the others by
    their own invocations, in one workgroup; keys of two digits' bits: each bucket's tiles ranked in the fold)."""
    rows = {"owners": 10**9, "subgroups": 0, "default": reduction_buckets.HEAVY_ROWS}[request.param]
    monkeypatch.setattr(reduction_buckets, "HEAVY_ROWS", rows)
    monkeypatch.setattr(reduction_buckets, "RANKED", request.param == "default")
    return request.param


@pytest.fixture
def bucket_device(device):
    plan = ReducePlan.elements("add", np.float32, np.int64, Layout.packed((1000,)), Layout.packed((10,)),
                               Layout.packed((10,)), 0)
    if not plan.buckets.usable(device.runtime):
        pytest.skip(f"{device.info.name} does not run the bucket kernels")
    return device


def plan_for(n, m, dtype=np.float32, reduction="add", include_self=True):
    lay = Layout.packed
    return ReducePlan.elements(reduction, dtype, np.int64, lay((m,)), lay((n,)), lay((n,)), 0,
                               include_self=include_self)


def test_which_reductions_take_buckets():
    """Float add, mul and mean on elements of at most 4 bytes, keys of more than a small digit's bits and at
    most two digits' and BUCKET_MAX_E; the others keep the sorted plan."""
    assert plan_for(10, 1 << 16).buckets.kernel == "scatter_reduce_f32_add_bucket"
    assert plan_for(10, 1 << 16, reduction="mean").buckets.kernel == "scatter_reduce_f32_add_mean_bucket"
    assert plan_for(10, 1 << 16, ml_dtypes.bfloat16, "mul").buckets.kernel == "scatter_reduce_bf16_mul_bucket"
    assert plan_for(10, 1 << 16, np.float64).buckets is None          # not carried as values
    assert plan_for(10, 1 << 16, np.int16).buckets is None            # associative: levels of partials
    assert plan_for(10, 1 << 16, reduction="max").buckets is None
    assert plan_for(10, 1 << kernels.SMALL_RADIX_BITS).buckets is None    # one pass sorts them: the sorted plan
    assert plan_for(10, 1 << (2 * kernels.RADIX_BITS + kernels.BUCKET_MAX_E)).buckets is not None
    assert plan_for(10, (1 << (2 * kernels.RADIX_BITS + kernels.BUCKET_MAX_E)) + 1).buckets is None
    lay = Layout.packed
    tree = ReducePlan.elements("add", np.float32, np.int64, lay((1 << 16,)), lay((10,)), lay((10,)), 0, order="tree")
    assert tree.buckets is None


def test_which_devices_take_them_by_default(monkeypatch):
    """By default (ENABLED None): GPUs with subgroups of 8 to 32, float32 and bfloat16, keys of two digits' bits or
    more (1M float32 adds onto 300-16,384 targets measured 1.2-6x slower than the sorted plan on an H200); never
    CPU devices, other float types or subgroups of 64."""
    monkeypatch.setattr(reduction_buckets, "ENABLED", None)
    def device(kind="DISCRETE_GPU", subgroup=32):
        info = types.SimpleNamespace(type=kind, subgroup_size=subgroup)
        return types.SimpleNamespace(info=info, geometry=kernels.FULL_GEOMETRY, supports=lambda stem: True)
    digits = 2 * kernels.FULL_GEOMETRY.radix_bits
    assert plan_for(10, 1 << digits).buckets.usable(device())
    assert plan_for(10, 1 << 20, ml_dtypes.bfloat16).buckets.usable(device(subgroup=8))
    assert not plan_for(10, 1 << (digits - 1)).buckets.usable(device())
    assert not plan_for(10, 1 << digits, np.float16).buckets.usable(device())
    assert not plan_for(10, 1 << digits).buckets.usable(device("CPU"))
    assert not plan_for(10, 1 << digits).buckets.usable(device(subgroup=64))
    monkeypatch.setattr(reduction_buckets, "ENABLED", True)              # (tests: every type, CPU devices too)
    assert plan_for(10, 1 << digits, np.float16).buckets.usable(device("CPU"))


@pytest.mark.parametrize("m", [129, 255, 257, 1000, 4095, 4097, 1 << 16, (1 << 16) + 1, 300_000])
def test_key_counts(bucket_device, heavy, m):
    """Key counts from a few owners per bucket to 16 keys per owner (and, in the small geometry, the same
    counts in its own layout)."""
    if plan_for(10, m).buckets.layout(bucket_device.runtime.geometry) is None:
        pytest.skip("keys past this geometry's layout")
    rng = np.random.default_rng(m)
    n = 3 * TILE + 77
    data = values(rng, (m,), np.dtype(np.float32), "add")
    idx = rng.integers(0, m, size=n)
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    out = dmlgpu.scatter_elements(data, idx, upd, device=bucket_device, reduction="add")
    assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", ["add", "mul", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_every_float_dtype_with_specials(bucket_device, heavy, dtype, reduction, include_self):
    """Every float dtype the buckets take, with infinities, signed zeros, NaN payloads and invalid
    operations; owners with whole blocks of rows (a hot key) and partial ones; a target without updates."""
    rng = np.random.default_rng(7)
    m, n = 3000, 2 * TILE + 300
    data = values(rng, (m,), dtype, reduction)
    idx = rng.integers(0, m, size=n)
    idx[:200] = 17                                         # a hot key: whole blocks of 32 rows
    idx[idx == 2] = 1                                      # target 2 keeps its data
    upd = values(rng, (n,), dtype, reduction)
    specials = np.array([np.inf, -np.inf, 0.0, -0.0], dtype=np.float32).astype(dtype)
    upd[rng.integers(0, n, size=40)] = rng.choice(specials, size=40)
    if dtype.itemsize >= 2:                                # a NaN with a payload (quieted where it propagates)
        nan = {2: 0x7D01, 4: 0x7FA01234}[dtype.itemsize] if dtype != np.dtype(ml_dtypes.bfloat16) else 0x7F81
        upd[rng.integers(0, n, size=3)] = np.array([nan], dtype=f"u{dtype.itemsize}").view(dtype)[0]
    else:
        upd[rng.integers(0, n, size=3)] = np.array([np.nan], dtype=np.float32).astype(dtype)[0]
    data[5] = dtype.type(-0.0)
    out = dmlgpu.scatter_elements(data, idx, upd, device=bucket_device, reduction=reduction,
                                  include_self=include_self)
    assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)


@pytest.mark.parametrize("dist", ["zipf", "one-bucket", "few-rows"])
@pytest.mark.parametrize("reduction", ["add", "mean"])
def test_skew_and_shared_tiles(bucket_device, heavy, dist, reduction):
    """Skewed keys (buckets of many tiles, owners of thousands of rows), all rows in one bucket, and buckets
    of a few rows each (several buckets in one tile: rows of other buckets before and after an owner's)."""
    rng = np.random.default_rng(11)
    m = 1 << 14
    n = 5 * TILE + 3
    if dist == "zipf":
        idx = (rng.zipf(1.1, size=n) - 1) % m
    elif dist == "one-bucket":
        idx = rng.integers(0, 64, size=n) << 8                    # bucket: the keys' low digit
    else:
        n = 2 * TILE + 1
        idx = rng.integers(0, m, size=n)
    data = values(rng, (m,), np.dtype(np.float32), "add")
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    for include_self in (True, False):
        out = dmlgpu.scatter_elements(data, idx, upd, device=bucket_device, reduction=reduction,
                                      include_self=include_self)
        assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)


# Each dtype (its fold variant) once and each share of hot rows more than once: the ranked fold's tiles and the hot
# bucket's rows over several tiles are the same host plan for every dtype (every dtype with every share: 2x the time).
@pytest.mark.parametrize("dtype, hot", [(np.float32, 0.4), (ml_dtypes.bfloat16, 0.0), (np.float16, 0.4)],
                         ids=["float32-0.4", "bfloat16-0.0", "float16-0.4"])
def test_tiles_ranked_in_the_fold(bucket_device, dtype, hot):
    """Keys of two digits' bits (a workgroup per bucket, a key per owner): each bucket's rows ranked by owner in
    the fold, a tile at a time (fold_ranked). A hot key (a share ``hot`` of the rows) has its bucket's rows over
    several tiles; the other buckets have a few rows each."""
    assert reduction_buckets.RANKED
    dtype = np.dtype(dtype)
    m = 1 << (2 * bucket_device.runtime.geometry.radix_bits)
    words = plan_for(10, m, dtype).buckets._plan(bucket_device.runtime.geometry)[2]
    assert words[reduction_buckets.B_RANKED] == 1
    rng = np.random.default_rng(9)
    n = 20 * TILE + 5
    idx = rng.integers(0, m, size=n)
    idx[rng.random(n) < hot] = 3 << bucket_device.runtime.geometry.radix_bits
    data = values(rng, (m,), dtype, "add")
    upd = values(rng, (n,), dtype, "add")
    for reduction, include_self in (("add", True), ("add", False), ("mean", True)):
        out = dmlgpu.scatter_elements(data, idx, upd, device=bucket_device, reduction=reduction,
                                      include_self=include_self)
        assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)


def test_targets_with_gaps(bucket_device, heavy):
    """scatter_nd onto single elements of a [m, 3] table: the keys are row numbers (target offset = 3 x key
    has no common low zero bits), and the elements between targets keep their values."""
    rng = np.random.default_rng(5)
    m, n = 5000, TILE + 999
    table = values(rng, (m, 3), np.dtype(np.float32), "add")
    idx = np.stack([rng.integers(0, m, size=n), np.full(n, 1)], axis=1)
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    out = dmlgpu.scatter_nd(table, idx, upd, device=bucket_device, reduction="add")
    assert same(out, reference.scatter_nd(table, idx, upd, "add"), loose_nan=False)


def test_keys_of_sixteen_per_owner(bucket_device, heavy):
    """The most keys per owner (BUCKET_MAX_E): keys of two digits' bits and BUCKET_MAX_E."""
    bits = 2 * bucket_device.runtime.geometry.radix_bits + kernels.BUCKET_MAX_E
    m = 1 << bits
    owner_bits, extra_bits = plan_for(10, m).buckets.layout(bucket_device.runtime.geometry)
    assert (owner_bits, extra_bits) == (bucket_device.runtime.geometry.radix_bits, kernels.BUCKET_MAX_E)
    rng = np.random.default_rng(3)
    n = 4 * TILE + 5
    idx = rng.integers(0, m, size=n)
    idx[: n // 2] = rng.integers(0, 64, size=n // 2) << (bits - 6)    # several keys of one owner: runs by key
    data = np.zeros(m, np.float32)
    data[idx] = values(rng, (n,), np.dtype(np.float32), "add")
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    for reduction in ("add", "mean"):
        out = dmlgpu.scatter_elements(data, idx, upd, device=bucket_device, reduction=reduction)
        assert same(out, sequential(data, idx, upd, reduction), loose_nan=False)


@pytest.mark.parametrize("dtype, shift, bias, big, tiny", HALF_FLOATS, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_half_float_steps_round_as_reference(bucket_device, heavy, reduction, dtype, shift, bias, big, tiny):
    """bfloat16's and float16's steps (scatter_bucket.comp's FAST_FOLD: the device's float32 step, rounded to
    nearest even in float32 form and checked) against the sequential reference, on test_reductions_gpu's data
    of its block fold: ties, runs that overflow to infinity and go on, the smallest normals, subnormals, zeros."""
    rng = np.random.default_rng(47)
    m = 70_000
    idx, upd = half_float_rows(rng, reduction, dtype, shift, bias, big, tiny)
    idx = idx * 13_001 + 7                                             # five keys in five buckets
    data = rng.uniform(-2, 2, size=m).astype(np.float32).astype(dtype)
    # target 11: a step whose float32 result is finite in the type's range but rounds up to infinity, then a
    # step that would bring it back (float16: 65472 + 60 or * (1 + 2^-10), then - 100 or * 0.5)
    top, steps = {7: (0x7F7F, {"add": [0x7B00, 0xFB00], "mul": [0x3F81, 0x3F00]}),
                  10: (0x7BFE, {"add": [0x5380, 0xD640], "mul": [0x3C01, 0x3800]})}[shift]
    data[11] = np.array([top], np.uint16).view(dtype)[0]
    idx = np.concatenate([idx, [11, 11]])
    upd = np.concatenate([upd, np.array(steps[reduction], np.uint16).view(dtype)])
    out = dmlgpu.scatter_elements(data, idx, upd, device=bucket_device, reduction=reduction)
    assert same(out, sequential(data, idx, upd, reduction), loose_nan=False)


def dispatched(device, call, *args) -> tuple:
    """(the result of a layer-2 call on Tensors, the kernels it dispatched)."""
    result, dispatches = capture(device, call, *args)
    return result.numpy(), [d.kernel for d in dispatches]


@pytest.mark.parametrize("on", [False, True])
def test_the_key_kernel_makes_the_first_histogram(bucket_device, monkeypatch, on):
    """The key kernel makes the sort's first histogram (reduce_keys.comp's FIRST_HIST: no radix_hist before the
    first scan), in the sorted plan (three passes here) and the bucket plan (one): the same bits."""
    monkeypatch.setattr(reduction_buckets, "ENABLED", on)
    rng = np.random.default_rng(9)
    m, n = 70_000, 3 * TILE + 11
    data = values(rng, (m,), np.dtype(np.float32), "add")
    idx = rng.integers(0, m, size=n)
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    t = [dmlgpu.tensor(x, device=bucket_device) for x in (data, idx, upd)]
    out, names = dispatched(bucket_device, lambda *a: dmlgpu.scatter_elements(*a, reduction="add"), *t)
    assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)
    keys = [k for k in names if k.startswith("reduce_keys")]
    assert keys == ["reduce_keys_v4_i64_hist"]
    assert names.count("radix_scan") == (1 if on else 3) and names.count("radix_hist") == (0 if on else 2)
    assert names.index("radix_scan") > names.index(keys[0])
    assert (names[-1] == "scatter_reduce_f32_add_bucket") == on


# Each dtype once and each size once (every dtype with every size: 2x the time, the same plans: the size picks
# the buckets' count, the dtype the fold's variant).
@pytest.mark.parametrize("dtype, m", [(np.float32, 300_000), (ml_dtypes.bfloat16, 1 << 16)],
                         ids=["float32-300000", "bfloat16-65536"])
def test_the_fold_writes_the_whole_output(bucket_device, heavy, dtype, m):
    """Where the keys are every offset of the output (a packed output of the data's layout), the fold takes the
    output's values from the data and writes every key, rows or none (MODE_SOURCE): no copy runs before it; a
    few rows leave most buckets, and most owners, without any. Where they are not (every other element of a
    [m, 2] table is a target), the copy runs first, and in place nothing is copied."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(m)
    for n in (5, 2 * TILE + 3):
        for reduction, include_self in (("add", True), ("add", False), ("mean", True), ("mul", False)):
            # (new data each time: an output buffer that held an earlier result must not pass for a written one)
            data, idx = values(rng, (m,), dtype, "add"), rng.integers(0, m, size=n)
            upd = values(rng, (n,), dtype, "add")
            t = [dmlgpu.tensor(x, device=bucket_device) for x in (data, idx, upd)]
            out, names = dispatched(bucket_device, lambda *a: dmlgpu.scatter_elements(
                *a, reduction=reduction, include_self=include_self), *t)
            assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)
            assert names[0].startswith("reduce_keys") and names[-1].endswith("_bucket")
    table = values(rng, (m // 2, 2), dtype, "add")
    n = TILE + 9
    idx, upd = rng.integers(0, m // 2, size=(n, 1)), values(rng, (n, 1), dtype, "add")
    t = [dmlgpu.tensor(x, device=bucket_device) for x in (table, idx, upd)]
    out, names = dispatched(bucket_device, lambda *a: dmlgpu.scatter_elements(*a, reduction="add"), *t)
    assert same(out, reference.scatter_elements(table, idx, upd, 0, "add"), loose_nan=False)
    assert not names[0].startswith("reduce_keys") and names[-1].endswith("_bucket")
    expected = sequential(data, idx[:, 0], upd[:, 0], "add")
    t = [dmlgpu.tensor(x, device=bucket_device) for x in (data, idx[:, 0], upd[:, 0])]
    dmlgpu.scatter_elements(*t, reduction="add", out=t[0])
    assert same(t[0].numpy(), expected, loose_nan=False)
