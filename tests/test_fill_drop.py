"""JAX's out-of-range index modes (index_map.INDEX_MODE_FLAGS): mode="fill" on the gathers (an out-of-range index
tuple reads ``fill_value``) and mode="drop" on the scatters (an out-of-range update is skipped), against the NumPy
references (dmlgpu.reference), through every kernel path the plans pick for them."""
from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

import dmlgpu
from dmlgpu import reference
from dmlgpu.plans import index_map, plan, scatter_lines as lines_plan

from strategies import random_data, same_bytes

RECORD = np.dtype([("a", "<i4"), ("b", "<f4")])        # an 8-byte record
GATHERS = ("gather", "gather_elements", "gather_nd")
INDEX_DTYPES = (np.int32, np.int64, np.uint32, np.uint64)


def bad_values(dim: int, dtype) -> list:
    """Indices out of range for a dimension of ``dim`` in ``dtype`` (two's complement where signed)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        vals = [-dim - 1, dim, dim + 7, -(2**31)]
        if dtype.itemsize == 8:
            vals += [2**40, -(2**40), 2**63 - 1, -(2**63), 2**32 + 1, -(2**32) + 1]
        return vals
    vals = [dim, 2**31 + 1, 2**32 - 1]
    if dtype.itemsize == 8:
        vals += [2**40, 2**63 + 5, 2**64 - 1, 2**32 + 1]       # (2**32 + 1: a low word in range)
    return vals


def indices_for(rng, shape, dims, dtype, share_bad=0.3):
    """Indices of ``shape`` whose last axis (``dims``: one size per component, or one size) mixes in-range values
    (negative ones too, for signed types) with bad_values."""
    dtype = np.dtype(dtype)
    dims = np.broadcast_to(np.asarray(dims), shape)
    lo = -dims if dtype.kind == "i" else np.zeros_like(dims)
    flat = [int(v) for v in rng.integers(lo, np.maximum(dims, 1)).reshape(-1)]
    flat_dims = dims.reshape(-1)
    for i in np.flatnonzero(rng.random(len(flat)) < share_bad):
        choices = bad_values(int(flat_dims[i]), dtype)
        flat[i] = choices[rng.integers(len(choices))]
    bits = 8 * dtype.itemsize
    return np.array([v % 2**bits for v in flat], dtype=f"u{dtype.itemsize}").view(dtype).reshape(shape)


def gather_case(op: str, rng, dtype, idx_dtype, shape=(40, 6), n=50):
    """(data, indices, args) of one gather call of ``op`` with out-of-range indices among good ones."""
    data = random_data(rng, shape, dtype)
    if op == "gather":
        return data, indices_for(rng, (n,), shape[0], idx_dtype), (0,)
    if op == "gather_elements":
        return data, indices_for(rng, (n, shape[1]), shape[0], idx_dtype), (0,)
    return data, indices_for(rng, (n, 2), np.array(shape[:2]), idx_dtype), (0,)


def run_gather(op, data, idx, args, device=None, tensors=False, **kw):
    fn = getattr(dmlgpu, op)
    if tensors:
        got = fn(dmlgpu.tensor(data, device=device), dmlgpu.tensor(idx, device=device), *args, **kw)
        return got.numpy()
    return fn(data, idx, *args, device=device, **kw)


def expected_gather(op, data, idx, args, fill_value=0):
    return getattr(reference, op)(data, idx, *args, mode="fill", fill_value=fill_value)


@pytest.mark.parametrize("op", GATHERS)
@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64, np.complex128, RECORD])
def test_fill_reads_fill_value_where_any_index_is_out_of_range(op, idx_dtype, dtype):
    """Every gather, every index dtype (full 64-bit values: 2**63 + 5 as uint64 is out of range, not -1), items of
    1 to 16 bytes and a record: the references' bytes from NumPy and Tensor operands; in-range elements are what
    mode="clamp" gives."""
    rng = np.random.default_rng(hash((op, np.dtype(idx_dtype).str, np.dtype(dtype).str)) % 2**32)
    data, idx, args = gather_case(op, rng, dtype, idx_dtype)
    fill = 0 if np.dtype(dtype) == RECORD else 3
    want = expected_gather(op, data, idx, args, fill)
    for tensors in (False, True):
        same_bytes(run_gather(op, data, idx, args, tensors=tensors, mode="fill", fill_value=fill), want)
    good = ~index_map.out_of_range(idx, np.array(data.shape[:idx.shape[-1]] if op == "gather_nd" else data.shape[0]))
    if op == "gather_nd":
        good = good.all(axis=-1)
    clamped = getattr(dmlgpu, op)(data, idx, *args)
    keep = good.reshape(good.shape + (1,) * (clamped.ndim - good.ndim))
    same_bytes(np.where(keep, clamped, want), want)


@contextlib.contextmanager
def forced(path: str):
    """GatherPlan's choice on any device: "rows" (the row loop, FLAG_ROWS), "vec" (the VEC variants), "unit" (one
    unit per iteration), or "auto"."""
    with pytest.MonkeyPatch.context() as mp:
        G = plan.GatherPlan
        plan.make_plan.cache_clear()
        if path == "rows":
            mp.setattr(G, "_rows", lambda self, device: self.map.row_loop_ok())
            mp.setattr(G, "_words", lambda self, device, addressed=False:
                       (self.row_words, 0) if self.row_words is not None else (self.words, self.vec))
        elif path == "vec":
            mp.setattr(G, "_rows", lambda self, device: False)
            mp.setattr(G, "_words", lambda self, device, addressed=False: (self.words, self.vec))
        elif path == "unit":
            mp.setattr(G, "_rows", lambda self, device: False)
            mp.setattr(G, "_words", lambda self, device, addressed=False: (
                self.map.params(self.signed, index_mode=self.index_mode, fill=self.fill), 0))
            mp.setattr(G, "_words_wide", lambda self, device: (self.wide_words(), 0))
        try:
            yield
        finally:
            plan.make_plan.cache_clear()


def kernels_of(dev, fn):
    """(the result of ``fn()`` (a Tensor) as an array, the kernels it ran)."""
    with dev.record() as rec:
        got = fn()
    return got.numpy(), [w.kernel for k, w in rec._steps if k == "dispatch"]


FILL_PATH_CASES = [   # (op, data shape, dtype, indices shape): rows of 16-byte units, VEC groups, 1-byte units
    ("gather", (70, 8), np.float32, (100,)),
    ("gather", (70, 3), np.uint8, (100,)),
    ("gather_nd", (20, 9, 4), np.float16, (80, 2)),
    ("gather_elements", (30, 5), np.float64, (40, 5)),
]


@pytest.mark.parametrize("path", ["rows", "vec", "unit"])
@pytest.mark.parametrize("blocks", [None, 256], ids=["one-block", "256B-blocks"])
@pytest.mark.parametrize("op, shape, dtype, idx_shape", FILL_PATH_CASES)
def test_fill_through_each_gather_path(op, shape, dtype, idx_shape, path, blocks):
    """The row loop (the whole row filled), the VEC groups, one unit per iteration, each on tensors in one
    block and through the ADDR variants (tensors in blocks of 256 bytes; the window variant is not taken)."""
    rng = np.random.default_rng(len(shape) + idx_shape[0])
    data = random_data(rng, shape, dtype)
    k = idx_shape[-1] if op == "gather_nd" else None
    dims = np.array(shape[:k]) if k else shape[0]
    idx = indices_for(rng, idx_shape if op != "gather_elements" else idx_shape, dims, np.int64)
    want = expected_gather(op, data, idx, (0,), 7)
    where = {"chunk_bytes": blocks} if blocks else {}
    with forced(path), dmlgpu.Device(**where, max_queued=0, profile="full") as dev:
        got, ran = kernels_of(dev, lambda: getattr(dmlgpu, op)(dmlgpu.tensor(data, device=dev),
                                                               dmlgpu.tensor(idx, device=dev), 0,
                                                               mode="fill", fill_value=7))
    same_bytes(got, want)
    assert len(ran) == 1 and ran[0].startswith("gather"), ran      # one kernel: no check, no read of the indices
    assert not any("window" in r or r.endswith("_run") for r in ran), ran
    if blocks:
        assert any(r.endswith("_addr") for r in ran), ran


def test_fill_through_the_wide_variants():
    """The WIDE variants (64-bit offsets), forced on tensors in blocks: the same bytes."""
    rng = np.random.default_rng(5)
    data = random_data(rng, (60, 6), np.float32)
    idx = indices_for(rng, (90,), 60, np.uint64)
    want = expected_gather("gather", data, idx, (0,), -2.5)
    with pytest.MonkeyPatch.context() as mp, dmlgpu.Device(chunk_bytes=256, max_queued=0, profile="full") as dev:
        addressed = plan.GatherPlan.addressed
        mp.setattr(plan.GatherPlan, "addressed", lambda self, *args, wide=False: addressed(self, *args, wide=True))
        plan.make_plan.cache_clear()
        try:
            got, ran = kernels_of(dev, lambda: dmlgpu.gather(dmlgpu.tensor(data, device=dev),
                                                             dmlgpu.tensor(idx, device=dev), mode="fill",
                                                             fill_value=-2.5))
        finally:
            plan.make_plan.cache_clear()
    assert all(r.endswith("_wide") for r in ran), ran
    same_bytes(got, want)


@pytest.fixture(scope="module")
def gpu_like():
    """lavapipe shown to the plans as an integrated GPU: the GPUs' paths (the features they need: profile "full",
    under any DMLGPU_DEVICE_PROFILE; so are the devices of tensors in several blocks here)."""
    d = dmlgpu.Device(profile="full")
    if d.info.type == "CPU":
        d.runtime.info = dataclasses.replace(d.info, type="integrated GPU")
    return d


@pytest.mark.parametrize("dtype, shape", [(np.int8, (200_000,)), (np.float16, (1, 70_000)), (np.float32, (50, 6))])
def test_fill_on_the_gpu_paths(gpu_like, monkeypatch, dtype, shape):
    """The GPUs' one-unit, NARROW (1- and 2-byte units stored as such) and VEC gathers fill."""
    monkeypatch.setattr(plan, "SPREAD_UNITS", 1)
    plan.make_plan.cache_clear()
    rng = np.random.default_rng(shape[-1])
    data = random_data(rng, shape, dtype)
    axis = int(np.argmax(shape))
    idx = indices_for(rng, (3000,), shape[axis], np.int32)
    want = reference.gather(data, idx, axis, mode="fill", fill_value=1)
    try:
        got, ran = kernels_of(gpu_like, lambda: dmlgpu.gather(dmlgpu.tensor(data, device=gpu_like), idx, axis=axis,
                                                              mode="fill", fill_value=1))
    finally:
        plan.make_plan.cache_clear()
    if np.dtype(dtype).itemsize < 4:
        assert ran[-1].endswith("_narrow"), ran
    same_bytes(got, want)


def test_fill_never_takes_the_run_variant(gpu_like):
    """Rows of many 16-byte units, which clamp gathers by the run variant on GPUs: mode="fill" takes another."""
    rng = np.random.default_rng(1)
    data = random_data(rng, (300, 160), np.float32)
    idx = indices_for(rng, (500,), 300, np.int64)
    got, ran = kernels_of(gpu_like, lambda: dmlgpu.gather(dmlgpu.tensor(data, device=gpu_like), idx, mode="fill",
                                                          fill_value=np.float32(np.nan)))
    assert not any(r.endswith("_run") for r in ran), ran
    same_bytes(got, reference.gather(data, idx, 0, mode="fill", fill_value=np.nan))
    _, clamp = kernels_of(gpu_like, lambda: dmlgpu.gather(dmlgpu.tensor(data, device=gpu_like), idx))
    assert clamp == ["gather_u16_i64_run"]


def test_fill_values_convert_by_numpys_assignment():
    """fill_value converts as ``a[...] = v`` does (a float into an integer dtype truncates, NaN into one raises
    ValueError, a Python int out of range OverflowError), named for the function; NaN and -0.0 keep their bits;
    bfloat16 where ml_dtypes is present."""
    ints = np.arange(12, dtype=np.int32).reshape(6, 2)
    np.testing.assert_array_equal(dmlgpu.gather(ints, [9, 0], mode="fill", fill_value=2.7), [[2, 2], [0, 1]])
    np.testing.assert_array_equal(dmlgpu.gather(ints, [9], mode="fill", fill_value=True), [[1, 1]])
    with pytest.raises(ValueError, match="^gather: .*NaN"):
        dmlgpu.gather(ints, [9], mode="fill", fill_value=float("nan"))
    with pytest.raises(OverflowError, match="^gather_nd: "):
        dmlgpu.gather_nd(ints, [[9, 0]], mode="fill", fill_value=2**40)
    with pytest.raises(ValueError, match="^gather_elements: "):
        dmlgpu.gather_elements(ints, [[9, 0]], mode="fill", fill_value="seven")
    with pytest.raises(ValueError, match="^gather: "):
        dmlgpu.gather(ints, [9], mode="fill", fill_value=[1, 2])
    floats = np.ones((3, 2), np.float32)
    for value in (-0.0, 0.0, float("nan"), -np.inf):
        want = np.full((2, 2), value, np.float32)
        want[1] = 1
        same_bytes(dmlgpu.gather(floats, [-4, 1], mode="fill", fill_value=value), want)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = np.arange(6, dtype=ml_dtypes.bfloat16).reshape(3, 2)
    want = np.array([[1.5, 1.5], [4, 5]], ml_dtypes.bfloat16)
    same_bytes(dmlgpu.gather(bf, [3, 2], mode="fill", fill_value=1.5), want)


def test_each_fill_value_is_its_own_signature():
    """Repeated calls on Tensors (planned once, then templated) never replay another call's fill value: 0.0 and
    -0.0, and NaN payloads, are distinct."""
    t = dmlgpu.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
    idx = dmlgpu.tensor(np.array([1, 4, -5], np.int64))
    values = [0.0, -0.0, 1.0, np.float32(np.nan), np.uint32(0x7FC00001).view(np.float32)]
    for _ in range(3):
        for v in values:
            want = reference.gather(t.numpy(), idx.numpy(), 0, mode="fill", fill_value=v)
            same_bytes(dmlgpu.gather(t, idx, mode="fill", fill_value=v).numpy(), want)
    dev = t.device
    with dev.record() as rec:                           # a recording replays its fill value
        r = dmlgpu.gather(t, idx, mode="fill", fill_value=5.0)
        rec.download(r)
    for _ in range(2):
        rec.run()
        np.testing.assert_array_equal(rec.host(r), [[2, 3], [5, 5], [5, 5]])


def test_fill_on_items_of_other_sizes_and_empty_dimensions():
    """Items of 12 bytes (moved as 4-byte units) take a fill_value whose bytes repeat every unit (0 here), and
    raise ValueError for another; a gather from a dimension of size 0 is all fill (no IndexError)."""
    rec = np.dtype([("a", "<i4"), ("b", "<f4"), ("c", "<u4")])
    data = np.zeros(5, rec)
    data["a"], data["b"], data["c"] = np.arange(5), np.arange(5) * 0.5, 7
    got = dmlgpu.gather(data, [1, 5, -1, -6], mode="fill")
    want = np.zeros(4, rec)
    want[0], want[2] = data[1], data[4]
    same_bytes(got, want)
    with pytest.raises(ValueError, match="^gather: mode='fill' moves items of 12 bytes"):
        dmlgpu.gather(data, [1], mode="fill", fill_value=(1, 2.0, 3))
    empty = np.zeros((0, 3), np.float32)
    same_bytes(dmlgpu.gather(empty, [0, -1], mode="fill", fill_value=4), np.full((2, 3), 4, np.float32))
    same_bytes(dmlgpu.gather_nd(np.zeros((2, 0), np.int16), [[0, 0], [1, 0]], mode="fill", fill_value=-3),
               np.full(2, -3, np.int16))


@pytest.mark.parametrize("call", [
    lambda d, i: dmlgpu.gather(d, i, mode="fill", reduction="add"),
    lambda d, i: dmlgpu.gather(d, i, mode="drop"),
    lambda d, i: dmlgpu.gather(d, i, fill_value=1),
    lambda d, i: dmlgpu.gather(d, i, mode="raise", fill_value=1),
    lambda d, i: dmlgpu.scatter_nd(d, i[:, None], d[:2], mode="fill"),
    lambda d, i: dmlgpu.scatter_elements(d, i, d[:2], mode="drop", reduction="add", fill_value=0),
    lambda d, i: dmlgpu.scatter_nd(d, i[:, None], d[:2], mode="drop", reduction="mean", order="nope", out=d),
], ids=["unknown-keyword", "drop-on-gather", "fill-value-alone", "fill-value-with-raise", "fill-on-scatter",
        "fill-value-on-scatter", "drop-with-a-bad-order-in-place"])
def test_bad_combinations_raise_before_any_gpu_work(call):
    data = dmlgpu.tensor(np.arange(4, dtype=np.float32))
    idx = dmlgpu.tensor(np.array([0, 9], np.int64))
    before = data.numpy().copy()
    with pytest.raises((ValueError, TypeError)) as e:
        call(data, idx)
    assert str(e.value).split(":")[0] in {"gather", "scatter_nd", "scatter_elements"} or "keyword" in str(e.value)
    same_bytes(data.numpy(), before)


def test_mode_errors_name_the_modes_the_function_takes():
    with pytest.raises(ValueError, match=r"^scatter_nd: mode must be one of \('clamp', 'raise', 'drop'\), not 'fill'"):
        dmlgpu.scatter_nd(np.zeros(3), [[0]], np.ones(1), mode="fill")
    with pytest.raises(ValueError, match=r"^gather_nd: mode must be one of \('clamp', 'raise', 'fill'\), not 'drop'"):
        dmlgpu.gather_nd(np.zeros(3), [[0]], mode="drop")


# ---- drop ----

def scatter_case(op, rng, dtype, idx_dtype, shape, n, k=1):
    data = random_data(rng, shape, dtype)
    if op == "scatter_nd":
        idx = indices_for(rng, (n, k), np.array(shape[:k]), idx_dtype)
        upd = random_data(rng, (n,) + shape[k:], dtype)
        return data, idx, upd, ()
    idx = indices_for(rng, (n,) + shape[1:], shape[0], idx_dtype)
    return data, idx, random_data(rng, idx.shape, dtype), (0,)


DROP_CASES = [   # (op, data shape, dtype, updates count, tuple size): duplicates everywhere
    ("scatter_nd", (9,), np.int32, 40, 1),            # one unit per update
    ("scatter_nd", (7, 8), np.float32, 60, 1),        # rows of 2 sixteen-byte units: row claims (SMALL)
    ("scatter_nd", (300, 5), np.int16, 700, 1),       # more rows than a workgroup: row claims in memory, COPY
    ("scatter_nd", (6, 5, 7), np.float16, 50, 2),     # tuples of 2
    ("scatter_nd", (4, 3), np.uint8, 9, 2),           # every element addressed by a tuple
    ("scatter_elements", (12, 3), np.float64, 30, 1),
    ("scatter_elements", (9, 2), RECORD, 20, 1),
    ("scatter_elements", (50, 1), np.complex128, 200, 1),
]


@pytest.mark.parametrize("idx_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("op, shape, dtype, n, k", DROP_CASES)
def test_drop_skips_updates_out_of_range(op, shape, dtype, n, k, idx_dtype):
    """Each scatter with reduction "none": the reference's bytes (the last kept update of a target wins), from
    NumPy operands and Tensors, in place on a Tensor (out=data) too, twice (the claims are clean after)."""
    rng = np.random.default_rng(n * len(shape) + np.dtype(idx_dtype).itemsize)
    data, idx, upd, args = scatter_case(op, rng, dtype, idx_dtype, shape, n, k)
    fn = getattr(dmlgpu, op)
    want = getattr(reference, op)(data, idx, upd, *args, mode="drop")
    for _ in range(2):
        same_bytes(fn(data, idx, upd, *args, mode="drop"), want)
    t = dmlgpu.tensor(data)
    same_bytes(fn(t, dmlgpu.tensor(idx), dmlgpu.tensor(upd), *args, mode="drop").numpy(), want)
    for _ in range(3):                                  # (planned, then templated)
        t = dmlgpu.tensor(data)
        assert fn(t, dmlgpu.tensor(idx), dmlgpu.tensor(upd), *args, mode="drop", out=t) is t
        same_bytes(t.numpy(), want)


@pytest.mark.parametrize("op", ["scatter_nd", "scatter_elements"])
def test_drop_everything_or_nothing(op):
    """Every update dropped: data unchanged (also for a dimension of size 0, which has no index in range); none
    dropped: what mode="clamp" gives."""
    rng = np.random.default_rng(3)
    fn = getattr(dmlgpu, op)
    data = random_data(rng, (10, 4), np.float32)
    args = () if op == "scatter_nd" else (0,)
    idx = np.array([[10], [-11], [2**31 - 1]], np.int32) if op == "scatter_nd" else np.full((3, 4), 10, np.int64)
    upd = random_data(rng, (3, 4), np.float32)
    same_bytes(fn(data, idx, upd, *args, mode="drop"), data)
    t = dmlgpu.tensor(data)
    fn(t, dmlgpu.tensor(idx), dmlgpu.tensor(upd), *args, mode="drop", out=t)
    same_bytes(t.numpy(), data)
    good = np.array([[3], [-1], [3]], np.int32) if op == "scatter_nd" else rng.integers(-10, 10, (3, 4))
    same_bytes(fn(data, good, upd, *args, mode="drop"), fn(data, good, upd, *args))
    empty = np.zeros((0, 4), np.float32)
    same_bytes(fn(empty, np.zeros((2, 1) if op == "scatter_nd" else (2, 4), np.int64), np.ones((2, 4), np.float32),
                  *args, mode="drop"), empty)


@pytest.mark.parametrize("path", ["small", "rows", "copy", "copy_clears", "unique", "units", "lines-shape"])
def test_drop_through_each_scatter_path(device, monkeypatch, path):
    """The scatter's claim-and-write paths: rows claimed in shared memory (SMALL), row claims in memory with a
    write and a clearing pass (rows: the output not packed like the input), the copy and the writes in one pass
    (COPY, with CLEARS), unique_indices (no claims), one claim per unit, and a scatter_elements the lines plan
    would take (drop: the claims instead)."""
    monkeypatch.setattr(plan, "COPY_CLEARS", path == "copy_clears")
    monkeypatch.setattr(lines_plan, "COPY_LINES", True)
    device.runtime.templates.clear()
    rng = np.random.default_rng(len(path))
    kernels = {"small": "scatter_small_rows", "rows": "scatter_clear_rows", "copy": "scatter_copy_rows",
               "copy_clears": "scatter_copy_rows", "unique": "scatter_unique", "units": "scatter_write",
               "lines-shape": "scatter_write"}
    if path == "lines-shape":
        data = random_data(rng, (40, 64), np.float32)
        idx = indices_for(rng, (30, 64), 40, np.int32)
        upd = random_data(rng, idx.shape, np.float32)
        call = lambda d, i, u, **kw: dmlgpu.scatter_elements(d, i, u, 0, **kw)
        want = reference.scatter_elements(data, idx, upd, 0, mode="drop")
    else:
        shape, n = {"small": ((50, 8), 100), "rows": ((50, 8), 400), "copy": ((400, 8), 700),
                    "copy_clears": ((500, 64), 700), "unique": ((500, 4), 300), "units": ((64,), 500)}[path]
        data = random_data(rng, shape, np.float32)
        if path == "unique":                     # distinct targets among the kept updates
            idx = rng.permutation(shape[0])[:n].astype(np.int64)
            idx[::7] = shape[0] + np.arange(idx[::7].size)
            idx = idx[:, None]
        else:
            idx = indices_for(rng, (n, 1), shape[0], np.int64)
        upd = random_data(rng, (n,) + shape[1:], np.float32)
        call = lambda d, i, u, **kw: dmlgpu.scatter_nd(d, i, u, unique_indices=path == "unique", **kw)
        want = reference.scatter_nd(data, idx, upd, mode="drop")
    for _ in range(2):
        t = dmlgpu.tensor(data, device=device)
        if path == "rows":                           # an output in another layout than the input: no COPY
            out = dmlgpu.tensor(np.zeros(data.shape[::-1], data.dtype), device=device).T
            got, ran = kernels_of(device, lambda: call(t, dmlgpu.tensor(idx, device=device),
                                                       dmlgpu.tensor(upd, device=device), mode="drop", out=out))
        else:
            got, ran = kernels_of(device, lambda: call(t, dmlgpu.tensor(idx, device=device),
                                                       dmlgpu.tensor(upd, device=device), mode="drop"))
        same_bytes(got, want)
        assert not any(r.startswith("index_check") for r in ran if isinstance(r, str)), ran
    full = device.info.max_per_stage_storage_buffers >= dmlgpu.kernels.table.SCATTER_BUFFERS
    if full and not any(r.endswith("_wide") for r in ran):
        assert any(r.startswith(kernels[path]) for r in ran), ran
        assert not any(r.startswith("scatter_lines") for r in ran), ran


@pytest.mark.parametrize("profile", ["few-buffers", "minimum"])
def test_drop_on_devices_of_few_buffers(profile):
    """Devices that bind 4 storage buffers: the FEW claims and writes (a write per claimed output unit)."""
    rng = np.random.default_rng(11)
    data = random_data(rng, (30, 3), np.int32)
    idx = indices_for(rng, (80, 1), 30, np.uint32)
    upd = random_data(rng, (80, 3), np.int32)
    with dmlgpu.Device(profile=profile) as dev:
        got, ran = kernels_of(dev, lambda: dmlgpu.scatter_nd(dmlgpu.tensor(data, device=dev), idx, upd, mode="drop"))
    same_bytes(got, reference.scatter_nd(data, idx, upd, mode="drop"))


def test_drop_on_tensors_in_several_blocks():
    """Tensors held in blocks of 256 bytes: the WIDE claims and writes skip the dropped updates."""
    rng = np.random.default_rng(12)
    data = random_data(rng, (100, 3), np.float32)
    idx = indices_for(rng, (150, 1), 100, np.int64)
    upd = random_data(rng, (150, 3), np.float32)
    with dmlgpu.Device(chunk_bytes=256, max_queued=0, profile="full") as dev:
        got, ran = kernels_of(dev, lambda: dmlgpu.scatter_nd(dmlgpu.tensor(data, device=dev),
                                                             dmlgpu.tensor(idx, device=dev),
                                                             dmlgpu.tensor(upd, device=dev), mode="drop"))
        assert any(r.endswith("_wide") for r in ran), ran
        same_bytes(got, reference.scatter_nd(data, idx, upd, mode="drop"))
        eidx = indices_for(rng, (40, 3), 100, np.int32)
        eupd = random_data(rng, (40, 3), np.float32)
        got = dmlgpu.scatter_elements(dmlgpu.tensor(data, device=dev), eidx, eupd, mode="drop").numpy()
        same_bytes(got, reference.scatter_elements(data, eidx, eupd, 0, mode="drop"))


REDUCE_CASES = [   # (op, data shape, dtype, updates count, axis): duplicates everywhere
    ("scatter_nd", (9, 3), np.float32, 60, 0),
    ("scatter_nd", (20,), np.int32, 300, 0),           # one-element rows of 4 bytes: the sort carries the values
    ("scatter_nd", (6, 2), np.float64, 30, 0),
    ("scatter_elements", (8, 5), np.float16, 12, 0),
    ("scatter_elements", (4, 9), np.float32, 4, 1),    # along axis 1: the spare slice is a column
]


@pytest.mark.parametrize("reduction, include_self, order", [
    ("add", True, "row-major"), ("add", False, "tree"), ("mul", True, "row-major"), ("mul", False, "tree"),
    ("min", True, "row-major"), ("max", False, "row-major"), ("mean", True, "row-major"), ("mean", False, "tree"),
    ("add", True, "fixed-point"), ("mean", False, "fixed-point")])
@pytest.mark.parametrize("op, shape, dtype, n, axis", REDUCE_CASES)
def test_drop_with_each_reduction_and_order(device, op, shape, dtype, n, axis, reduction, include_self, order):
    """mode="drop" with a reduction: the reference's bytes (a dropped update takes no part, nor in "mean"'s
    count), NumPy operands and in place on a Tensor."""
    if np.dtype(dtype).kind == "i" and reduction == "mean" or order == "fixed-point" and dtype == np.float64:
        pytest.skip("a combination the reductions refuse (TypeError, ValueError) in every mode")
    rng = np.random.default_rng(n + len(reduction) + len(order))
    data = random_data(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":          # finite values: mul and mean stay meaningful
        data = rng.standard_normal(shape).astype(dtype)
    if op == "scatter_nd":
        idx = indices_for(rng, (n, 1), shape[0], np.int64)
        upd = rng.standard_normal((n,) + shape[1:]).astype(dtype) if np.dtype(dtype).kind == "f" else \
            random_data(rng, (n,) + shape[1:], dtype)
        args = ()
    else:
        ishape = (n, shape[1]) if axis == 0 else (shape[0], n)
        idx = indices_for(rng, ishape, shape[axis], np.int32)
        upd = rng.standard_normal(ishape).astype(dtype)
        args = (axis,)
    kw = dict(reduction=reduction, include_self=include_self, order=order)
    want = getattr(reference, op)(data, idx, upd, *args, mode="drop", **kw)
    fn = getattr(dmlgpu, op)
    same_bytes(fn(data, idx, upd, *args, mode="drop", device=device, **kw), want)
    for _ in range(3):
        t = dmlgpu.tensor(data, device=device)
        fn(t, dmlgpu.tensor(idx, device=device), dmlgpu.tensor(upd, device=device), *args, mode="drop", out=t, **kw)
        same_bytes(t.numpy(), want)


@pytest.mark.parametrize("reduction, dtype", [("add", np.int32), ("max", np.int32), ("min", np.float32),
                                              ("add", np.float32), ("mean", np.float32), ("mul", np.float16)])
@pytest.mark.parametrize("where", ["gpu_like", "minimum", "few-buffers", "16KiB-blocks"])
def test_drop_with_reductions_on_each_path(gpu_like, where, reduction, dtype):
    """The reductions' other paths: GPUs' (integer atomics, min/max by 64-bit atomics, the buckets' fold),
    devices of few storage buffers (the FEW sort and fold), tensors in several blocks (the ADDR variants)."""
    rng = np.random.default_rng(len(where) + len(reduction))
    n, size = 3000, 8000 if where == "16KiB-blocks" else 700
    data = (rng.standard_normal(size) * 8).astype(dtype)
    idx = indices_for(rng, (n, 1), size, np.int64)
    upd = (rng.standard_normal(n) * 8).astype(dtype)
    want = reference.scatter_nd(data, idx, upd, reduction=reduction, mode="drop")
    with contextlib.ExitStack() as stack:
        if where == "gpu_like":
            dev = gpu_like
        elif where == "16KiB-blocks":                # (the sort's scratch: one block each)
            dev = stack.enter_context(dmlgpu.Device(chunk_bytes=1 << 14, max_queued=0, profile="full"))
        else:
            dev = stack.enter_context(dmlgpu.Device(profile=where))
        got, ran = kernels_of(dev, lambda: dmlgpu.scatter_nd(dmlgpu.tensor(data, device=dev),
                                                             dmlgpu.tensor(idx, device=dev),
                                                             dmlgpu.tensor(upd, device=dev), reduction=reduction,
                                                             mode="drop"))
    same_bytes(got, want)
    names = [r for r in ran if isinstance(r, str)]
    if where == "16KiB-blocks":
        assert any(r.endswith(("_addr", "_wide")) for r in names), names
    elif where != "gpu_like" and not any(r.startswith("scatter_atomic") for r in names):
        assert any(r.endswith("_few") for r in names), names


@pytest.mark.parametrize("idx_dtype", [np.int32, np.uint64])
def test_fill_with_batch_dims_views_and_out(idx_dtype):
    """gather_nd with batch_dims, strided Tensor views as operands (packed on the device first), ``out=`` of
    either kind, and drop into a strided view in place."""
    rng = np.random.default_rng(9)
    data = random_data(rng, (3, 5, 4, 2), np.int16)
    idx = indices_for(rng, (3, 6, 2), np.array([5, 4]), idx_dtype)
    want = reference.gather_nd(data, idx, 1, mode="fill", fill_value=-9)
    same_bytes(dmlgpu.gather_nd(data, idx, 1, mode="fill", fill_value=-9), want)
    out = np.empty(want.shape, want.dtype)
    assert dmlgpu.gather_nd(data, idx, batch_dims=1, mode="fill", fill_value=-9, out=out) is out
    same_bytes(out, want)
    wide = dmlgpu.tensor(np.ascontiguousarray(np.swapaxes(data, 0, 1)))      # data as a strided view of it
    view = wide.transpose(1, 0, 2, 3)
    t_out = dmlgpu.empty(want.shape, want.dtype)
    dmlgpu.gather_nd(view, dmlgpu.tensor(idx), 1, mode="fill", fill_value=-9, out=t_out)
    same_bytes(t_out.numpy(), want)
    table = dmlgpu.tensor(np.zeros((4, 6), np.float32))
    col = table[:, 1]                                                        # a strided view, updated in place
    upd = np.arange(5, dtype=np.float32)
    ids = np.array([0, 4, -1, -5, 2], np.int64)
    dmlgpu.scatter_elements(col, ids, upd, mode="drop", out=col)
    want_t = np.zeros((4, 6), np.float32)
    want_t[:, 1] = reference.scatter_elements(np.zeros(4, np.float32), ids, upd, 0, mode="drop")
    same_bytes(table.numpy(), want_t)


# ---- fuzz: random shapes, layouts, dtypes and index kinds (out-of-range ones included) ----

from hypothesis import given, strategies as st                      # noqa: E402
from strategies import (MAX_DENSE, budget_shape, data_dtypes, elements_case, index_dtypes, index_kinds,  # noqa: E402
                        lay_out, layouts, random_indices, seeds, shapes)


def fill_of(rng, dtype):
    """A fill value of ``dtype`` (its bytes random: NaN payloads and all), as a 0-d array."""
    return random_data(rng, (), dtype)


@given(st.data())
def test_fuzz_fill_gather(device, data):
    shape = data.draw(shapes(), label="shape")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    outer = int(np.prod(shape)) // shape[axis]
    idx_shape = budget_shape(data.draw(shapes(min_rank=1, max_rank=3, max_elems=256, max_side=12)), MAX_DENSE // outer)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = lay_out(random_data(rng, shape, dtype), data.draw(layouts(), label="x_layout"))
    idx = random_indices(rng, idx_shape, shape[axis], idx_dtype, data.draw(index_kinds(), label="kinds"))
    fill = fill_of(rng, x.dtype)
    same_bytes(dmlgpu.gather(x, idx, axis, device=device, mode="fill", fill_value=fill),
               reference.gather(x, idx, axis, mode="fill", fill_value=fill))


@given(elements_case())
def test_fuzz_fill_gather_elements(device, case):
    x, idx, axis, _, rng = case
    fill = fill_of(rng, x.dtype)
    same_bytes(dmlgpu.gather_elements(x, idx, axis, device=device, mode="fill", fill_value=fill),
               reference.gather_elements(x, idx, axis, mode="fill", fill_value=fill))


@given(elements_case())
def test_fuzz_drop_scatter_elements(device, case):
    x, idx, axis, _, rng = case
    upd = random_data(rng, idx.shape, x.dtype)
    same_bytes(dmlgpu.scatter_elements(x, idx, upd, axis, device=device, mode="drop"),
               reference.scatter_elements(x, idx, upd, axis, mode="drop"))


@given(st.data())
def test_fuzz_fill_gather_nd_and_drop_scatter_nd(device, data):
    shape = data.draw(shapes(max_rank=5), label="shape")
    b = data.draw(st.integers(0, len(shape) - 1), label="batch_dims")
    k = data.draw(st.integers(1, len(shape) - b), label="k")
    rows = data.draw(shapes(min_rank=1, max_rank=2, max_elems=64, max_side=10), label="rows")
    idx_shape = tuple(shape[:b]) + rows + (k,)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = random_data(rng, shape, dtype)
    idx = lay_out(random_indices(rng, idx_shape, np.array(shape[b:b + k]), idx_dtype,
                                 data.draw(index_kinds(), label="kinds")), data.draw(layouts(), label="i_layout"))
    fill = fill_of(rng, x.dtype)
    same_bytes(dmlgpu.gather_nd(x, idx, b, device=device, mode="fill", fill_value=fill),
               reference.gather_nd(x, idx, b, mode="fill", fill_value=fill))
    if b == 0:
        upd = random_data(rng, idx_shape[:-1] + tuple(shape[k:]), x.dtype)
        same_bytes(dmlgpu.scatter_nd(x, idx, upd, device=device, mode="drop"),
                   reference.scatter_nd(x, idx, upd, mode="drop"))
