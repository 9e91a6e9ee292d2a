"""segment_reduce, embedding_bag and gather_scatter (dmlgpu/api/fused.py, shaders/segment.comp) against their NumPy
references (dmlgpu/reference.py), bit for bit: dtypes, shapes, empty segments and bags, duplicates, padding,
weights, Tensor and NumPy operands, out= (in place), the CPU devices' pieces, and every error."""
import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu import reference as ref
from dmlgpu.plans import segment

FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
INTS = [np.int32, np.uint8, np.int64, np.int16]


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind != "b" else a


def assert_bits(got, want):
    got = got.numpy() if isinstance(got, dmlgpu.Tensor) else got
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(_bits(got), _bits(want)), (got, want)


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 8).astype(np.float32).astype(dtype)


def _offsets(rng, n, segments):
    cuts = np.sort(rng.integers(0, n + 1, segments - 1))
    return np.concatenate([[0], cuts, [n]]).astype(np.int64)


# ---- segment_reduce ----
@pytest.mark.parametrize("dtype", FLOATS + INTS + [bool, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max", "mean"])
def test_segment_reduce_matches_reference(dtype, reduction):
    dtype = np.dtype(dtype)
    if reduction == "mean" and dtype.kind in "iub":
        pytest.skip("mean takes floats")
    rng = np.random.default_rng(hash((dtype.name, reduction)) % 2**32)
    for shape, segments in [((37, 5), 9), ((20,), 6), ((0, 3), 3), ((11, 2, 3), 1)]:
        data = _values(rng, shape, dtype)
        offs = _offsets(rng, shape[0], segments)
        assert_bits(dmlgpu.segment_reduce(data, offs, reduction), ref.segment_reduce(data, offs, reduction))


def test_segment_reduce_float_sum_is_sequential():
    """The bits of adding the rows one by one (a pairwise or float32-accumulated sum differs here)."""
    data = np.array([1e8, 1, -1e8, 1, 0.5, 3], np.float32).reshape(6, 1)
    got = dmlgpu.segment_reduce(data, [0, 6])
    acc = data[0].copy()
    for row in data[1:]:
        acc = acc + row
    assert_bits(got, acc[None])
    assert_bits(dmlgpu.segment_reduce(np.array([-0.0], np.float32), [0, 1]), np.array([-0.0], np.float32))
    half = np.full((300, 1), 0.1, np.float16)
    assert_bits(dmlgpu.segment_reduce(half, [0, 300]), ref.segment_reduce(half, [0, 300]))


def test_segment_reduce_empty_segments_initial_and_identity():
    data = np.array([[3, -4], [5, 6]], np.float32)
    got = dmlgpu.segment_reduce(data, [0, 0, 2, 2], "min")
    assert_bits(got, np.array([[np.inf, np.inf], [3, -4], [np.inf, np.inf]], np.float32))
    assert_bits(dmlgpu.segment_reduce(data, [0, 0, 2], "max"), np.array([[-np.inf] * 2, [5, 6]], np.float32))
    assert_bits(dmlgpu.segment_reduce(data, [0, 0, 2], "max", initial=0),
                np.array([[0, 0], [5, 6]], np.float32))
    ints = np.array([7, -2, 9], np.int16)
    assert_bits(dmlgpu.segment_reduce(ints, [1, 1, 3], "min"), np.array([32767, -2], np.int16))
    assert_bits(dmlgpu.segment_reduce(ints, [0, 3], "add", initial=100), np.array([114], np.int16))
    assert_bits(dmlgpu.segment_reduce(ints, [0, 0, 3], "mul"), np.array([1, -126], np.int16))
    assert_bits(dmlgpu.segment_reduce(np.array([2.0, 3.0], np.float32), [0, 2, 2], "mean"),
                np.array([2.5, 0], np.float32))
    assert_bits(dmlgpu.segment_reduce(data, [1, 2], "sum"), np.array([[5, 6]], np.float32))   # rows before skipped
    assert dmlgpu.segment_reduce(data, [2]).shape == (0, 2)


def test_segment_reduce_tensors_out_and_recording(device):
    rng = np.random.default_rng(1)
    data = _values(rng, (50, 4), np.float32)
    offs = _offsets(rng, 50, 7)
    want = ref.segment_reduce(data, offs, "add")
    t, to = dmlgpu.tensor(data), dmlgpu.tensor(offs.astype(np.int32))
    got = dmlgpu.segment_reduce(t, to)
    assert isinstance(got, dmlgpu.Tensor)
    assert_bits(got, want)
    assert_bits(dmlgpu.segment_reduce(data, dmlgpu.tensor(offs)), want)
    out = dmlgpu.zeros((7, 4))
    assert dmlgpu.segment_reduce(t, to, out=out) is out
    assert_bits(out, want)
    host_out = np.empty((7, 4), np.float32)
    assert dmlgpu.segment_reduce(data, offs, out=host_out) is host_out
    assert_bits(host_out, want)
    later = np.clip(offs, 10, 50) - 10                     # a view at an offset
    assert_bits(dmlgpu.segment_reduce(t[10:], dmlgpu.tensor(later)), ref.segment_reduce(data[10:], later))
    with device.record() as rec:
        r = dmlgpu.segment_reduce(data, offs, "max")
    assert isinstance(r, dmlgpu.Tensor)
    assert_bits(r, ref.segment_reduce(data, offs, "max"))
    rec.run()                                              # again
    assert_bits(r, ref.segment_reduce(data, offs, "max"))


def test_segment_reduce_tensor_offsets_are_clamped():
    data = np.arange(6, dtype=np.int32)
    got = dmlgpu.segment_reduce(data, dmlgpu.tensor(np.array([-5, 2, 1, 99], np.int64)))
    assert_bits(got, np.array([1, 0, 1 + 2 + 3 + 4 + 5], np.int32))     # [0, 2), [2, 2), [1, 6)


def test_segment_reduce_cpu_pieces(monkeypatch):
    """Segments longer than a piece (CPU devices: several dispatches, the running values carried)."""
    monkeypatch.setattr(segment, "PIECE", 7)
    rng = np.random.default_rng(2)
    data = _values(rng, (40, 3), np.float16)
    offs = np.array([0, 3, 3, 30, 31, 40])
    for reduction in ("add", "mean", "max", "mul"):
        assert_bits(dmlgpu.segment_reduce(data, offs, reduction), ref.segment_reduce(data, offs, reduction))
    assert_bits(dmlgpu.segment_reduce(data, offs, "min", initial=1),
                ref.segment_reduce(data, offs, "min", initial=1))


def test_segment_reduce_errors_leave_inputs_alone():
    data = np.ones((4, 2), np.float32)
    keep = data.copy()
    cases = [
        (([0, 2, 1, 4],), ValueError, r"^segment_reduce: offsets must be non-decreasing: offsets\[2\] = 1"),
        (([0, 5],), ValueError, r"^segment_reduce: offsets\[-1\] = 5 is past the end of data \(4\)"),
        (([-1, 2],), ValueError, r"^segment_reduce: offsets\[0\] is -1"),
        (([],), ValueError, r"^segment_reduce: offsets must hold at least one bound"),
        (([0.5, 1],), TypeError, r"^segment_reduce: offsets must hold integers"),
        (([[0, 1]],), ValueError, r"^segment_reduce: offsets must have 1 dimension"),
        (([0, 4], "median"), ValueError, r"^segment_reduce: reduction must be one of"),
    ]
    for args, exc, match in cases:
        with pytest.raises(exc, match=match):
            dmlgpu.segment_reduce(data, *args)
    with pytest.raises(ValueError, match="^segment_reduce: initial is not taken with reduction 'mean'"):
        dmlgpu.segment_reduce(data, [0, 4], "mean", initial=1)
    with pytest.raises(TypeError, match="^segment_reduce: reduction 'mean' is not supported for dtype int32"):
        dmlgpu.segment_reduce(np.ones(3, np.int32), [0, 3], "mean")
    with pytest.raises(OverflowError, match="^segment_reduce: initial"):
        dmlgpu.segment_reduce(np.ones(3, np.int8), [0, 3], initial=1000)
    with pytest.raises(ValueError, match=r"^segment_reduce: out has shape \(2, 2\) and dtype float32; the result"):
        dmlgpu.segment_reduce(data, [0, 4], out=np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="^segment_reduce: out is a NumPy array, but the call returns a Tensor"):
        dmlgpu.segment_reduce(dmlgpu.tensor(data), [0, 4], out=np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="^segment_reduce: data must have at least one dimension"):
        dmlgpu.segment_reduce(np.float32(1), [0, 1])
    assert np.array_equal(data, keep)


# ---- embedding_bag ----
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int64, np.float64])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_reference(dtype, mode):
    dtype = np.dtype(dtype)
    if mode == "mean" and dtype.kind in "iu":
        pytest.skip("mean takes float tables")
    rng = np.random.default_rng(hash((dtype.name, mode)) % 2**32)
    table = _values(rng, (30, 6), dtype)
    ids = rng.integers(0, 30, 40)
    ids[:5] = 7                                            # duplicates
    offs = _offsets(rng, 40, 9)[:-1]
    offs[3] = offs[2]                                      # an empty bag
    for kw in ({}, {"padding_idx": 7}, {"padding_idx": -23}):
        want = ref.embedding_bag(table, ids, offs, mode, **kw)
        assert_bits(dmlgpu.embedding_bag(table, ids, offs, mode=mode, **kw), want)
        assert_bits(dmlgpu.embedding_bag(table, ids, np.concatenate([offs, [40]]), mode=mode,
                                         include_last_offset=True, **kw), want)
    fixed = ids[:36].reshape(6, 6)
    assert_bits(dmlgpu.embedding_bag(table, fixed, mode=mode), ref.embedding_bag(table, fixed, None, mode))
    if mode == "sum":
        w = _values(rng, (40,), dtype)
        assert_bits(dmlgpu.embedding_bag(table, ids, offs, per_sample_weights=w, padding_idx=3),
                    ref.embedding_bag(table, ids, offs, per_sample_weights=w, padding_idx=3))
        assert_bits(dmlgpu.embedding_bag(table, fixed, per_sample_weights=w[:36].reshape(6, 6)),
                    ref.embedding_bag(table, fixed, per_sample_weights=w[:36].reshape(6, 6)))


def test_embedding_bag_pytorch_semantics():
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    # empty bags and bags of padding only give zeros in every mode
    for mode in ("sum", "mean", "max"):
        got = dmlgpu.embedding_bag(table, [2, 2, 1], [0, 0, 2], mode=mode, padding_idx=2)
        assert np.array_equal(got[:2], np.zeros((2, 2), np.float32))
    assert_bits(dmlgpu.embedding_bag(table, [3, 0], [0, 1], mode="mean"), table[[3, 0]])
    # per_sample_weights round as NumPy's w * row
    w = np.array([0.1, 3], np.float16)
    t16 = table.astype(np.float16)
    assert_bits(dmlgpu.embedding_bag(t16, [1, 2], [0], per_sample_weights=w),
                ((w[0] * t16[1]) + (w[1] * t16[2]))[None])


def test_embedding_bag_tensors_and_out(device):
    rng = np.random.default_rng(3)
    table = _values(rng, (25, 8), np.float32)
    ids = rng.integers(0, 25, 30)
    offs = _offsets(rng, 30, 5)[:-1]
    w = _values(rng, (30,), np.float32)
    want = ref.embedding_bag(table, ids, offs, "sum", per_sample_weights=w)
    tt, ti, to, tw = (dmlgpu.tensor(a) for a in (table, ids.astype(np.int32), offs, w))
    got = dmlgpu.embedding_bag(tt, ti, to, per_sample_weights=tw)
    assert isinstance(got, dmlgpu.Tensor)
    assert_bits(got, want)
    assert_bits(dmlgpu.embedding_bag(table, ti, offs, per_sample_weights=w), want)       # mixed
    out = dmlgpu.empty((5, 8))
    assert dmlgpu.embedding_bag(tt, ti, to, per_sample_weights=tw, out=out) is out
    assert_bits(out, want)
    assert_bits(dmlgpu.embedding_bag(tt, dmlgpu.tensor(ids[:30].reshape(5, 6)), mode="max"),
                ref.embedding_bag(table, ids[:30].reshape(5, 6), None, "max"))


def test_embedding_bag_cpu_pieces_drop_padding(monkeypatch):
    monkeypatch.setattr(segment, "PIECE", 5)
    monkeypatch.setattr("dmlgpu.api.fused.PIECE", 5)
    rng = np.random.default_rng(4)
    table = _values(rng, (10, 3), np.float32)
    ids = rng.integers(0, 10, 33)
    offs = np.array([0, 2, 20, 20, 31])
    for mode in ("sum", "mean", "max"):
        for pad in (None, 4):
            want = ref.embedding_bag(table, ids, offs, mode, padding_idx=pad)
            assert_bits(dmlgpu.embedding_bag(table, ids, offs, mode=mode, padding_idx=pad), want)
            assert_bits(dmlgpu.embedding_bag(table, dmlgpu.tensor(ids), dmlgpu.tensor(offs), mode=mode,
                                             padding_idx=pad), want)


def test_embedding_bag_errors_leave_inputs_alone():
    table = np.ones((4, 2), np.float32)
    ids = np.array([0, 1, 2])
    keep = (table.copy(), ids.copy())
    cases = [
        (([0, 4, 1], [0]), {}, IndexError, r"^embedding_bag: ids\[1\] = 4 is out of range for the table of 4 rows"),
        (([-1, 1], [0]), {}, IndexError, r"^embedding_bag: ids\[0\] = -1 is out of range"),
        ((ids, [1, 2]), {}, ValueError, r"^embedding_bag: offsets\[0\] must be 0"),
        ((ids, [0, 2, 1]), {}, ValueError, r"^embedding_bag: offsets must be non-decreasing"),
        ((ids, [0, 4]), {}, ValueError, r"^embedding_bag: offsets\[-1\] = 4 is past the end of ids \(3\)"),
        ((ids,), {}, ValueError, "^embedding_bag: 1-D ids need offsets"),
        ((ids.reshape(1, 3), [0]), {}, ValueError, "^embedding_bag: offsets must be None with 2-D ids"),
        ((ids, [0]), {"mode": "min"}, ValueError, "^embedding_bag: mode must be 'sum', 'mean' or 'max'"),
        ((ids, [0]), {"mode": "mean", "per_sample_weights": np.ones(3, np.float32)}, ValueError,
         "^embedding_bag: per_sample_weights are taken with mode 'sum' only"),
        ((ids, [0]), {"per_sample_weights": np.ones(2, np.float32)}, ValueError,
         r"^embedding_bag: per_sample_weights has shape \(2,\)"),
        ((ids, [0]), {"per_sample_weights": np.ones(3, np.float64)}, TypeError,
         "^embedding_bag: per_sample_weights has dtype float64"),
        ((ids, [0]), {"padding_idx": 4}, ValueError, r"^embedding_bag: padding_idx must be an integer in \[-4, 4\)"),
        ((ids, [0]), {"out": np.zeros((2, 2), np.float32)}, ValueError, "^embedding_bag: out has shape"),
        ((np.array([0.0]), [0]), {}, TypeError, "^embedding_bag: ids must hold integers"),
    ]
    for args, kw, exc, match in cases:
        with pytest.raises(exc, match=match):
            dmlgpu.embedding_bag(table, *args, **kw)
    with pytest.raises(TypeError, match="^embedding_bag: mode 'mean' takes float tables"):
        dmlgpu.embedding_bag(np.ones((2, 2), np.int32), [0], [0], mode="mean")
    with pytest.raises(ValueError, match="^embedding_bag: table must have 2 dimensions"):
        dmlgpu.embedding_bag(np.ones(3, np.float32), [0], [0])
    assert np.array_equal(table, keep[0]) and np.array_equal(ids, keep[1])


# ---- gather_scatter ----
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8])
@pytest.mark.parametrize("reduction", ["add", "mean", "min", "max", "mul"])
def test_gather_scatter_is_take_then_scatter_nd(dtype, reduction):
    dtype = np.dtype(dtype)
    if reduction == "mean" and dtype.kind in "iu":
        pytest.skip("mean takes floats")
    rng = np.random.default_rng(hash((dtype.name, reduction)) % 2**32)
    x = _values(rng, (12, 3), dtype)
    src = rng.integers(-12, 12, 40)
    dst = rng.integers(0, 9, 40)
    dst[:6] = 2                                            # duplicates
    for include_self in (True, False):
        want = ref.gather_scatter(x, src, dst, reduction, dim_size=10, include_self=include_self)
        got = dmlgpu.gather_scatter(x, src, dst, reduction, dim_size=10, include_self=include_self)
        assert_bits(got, want)
        # the definition itself: scatter_nd(zeros, dst[:, None], take(x, src))
        assert_bits(got, dmlgpu.scatter_nd(np.zeros((10, 3), dtype), dst[:, None], dmlgpu.take(x, src, axis=0),
                                           reduction=reduction, include_self=include_self))
        base = _values(rng, (10, 3), dtype)
        keep = base.copy()
        want = ref.gather_scatter(x, src, dst, reduction, out=base, include_self=include_self)
        assert np.array_equal(_bits(base), _bits(keep))
        assert dmlgpu.gather_scatter(x, src, dst, reduction, out=base, include_self=include_self) is base
        assert_bits(base, want)
        if dtype.kind == "f" or dtype.name == "bfloat16":
            w = _values(rng, (40,), dtype)
            assert_bits(dmlgpu.gather_scatter(x, src, dst, reduction, dim_size=9, include_self=include_self,
                                              weights=w),
                        ref.gather_scatter(x, src, dst, reduction, dim_size=9, include_self=include_self, weights=w))


@pytest.mark.parametrize("order", ["tree", "fixed-point"])
def test_gather_scatter_other_orders(order):
    rng = np.random.default_rng(5)
    x = _values(rng, (8, 2), np.float32)
    src, dst = rng.integers(0, 8, 30), rng.integers(0, 5, 30)
    w = _values(rng, (30,), np.float32)
    for reduction in ("add", "mean", "max"):
        want = dmlgpu.scatter_nd(np.zeros((5, 2), np.float32), dst[:, None], (w[:, None] * x[src]).astype(np.float32),
                                 reduction=reduction, order=order)
        assert_bits(dmlgpu.gather_scatter(x, src, dst, reduction, dim_size=5, order=order, weights=w), want)


def test_gather_scatter_tensors_in_place(device):
    rng = np.random.default_rng(6)
    x = _values(rng, (20, 4), np.float32)
    src, dst = rng.integers(0, 20, 50), rng.integers(0, 15, 50)
    w = _values(rng, (50,), np.float32)
    base = _values(rng, (15, 4), np.float32)
    want = ref.gather_scatter(x, src, dst, "add", out=base, weights=w)
    tx, ts, td, tw = dmlgpu.tensor(x), dmlgpu.tensor(src), dmlgpu.tensor(dst.astype(np.int32)), dmlgpu.tensor(w)
    out = dmlgpu.tensor(base)
    assert dmlgpu.gather_scatter(tx, ts, td, out=out, weights=tw) is out
    assert_bits(out, want)
    got = dmlgpu.gather_scatter(tx, src, dst, "mean", dim_size=15)
    assert isinstance(got, dmlgpu.Tensor)
    assert_bits(got, ref.gather_scatter(x, src, dst, "mean", dim_size=15))
    sq = dmlgpu.tensor(x[:15])                             # out is x itself: read and written
    want = ref.gather_scatter(x[:15], src % 15, dst, "max", out=x[:15])
    assert dmlgpu.gather_scatter(sq, src % 15, dst, "max", out=sq) is sq
    assert_bits(sq, want)
    assert_bits(dmlgpu.gather_scatter(x, src, dst), ref.gather_scatter(x, src, dst, dim_size=int(dst.max()) + 1))


def test_gather_scatter_errors_leave_inputs_alone():
    x = np.ones((4, 2), np.float32)
    out = np.zeros((3, 2), np.float32)
    cases = [
        (([0, 4], [0, 1]), {"out": out}, IndexError, r"^gather_scatter: src\[1\] = 4 is out of range for x of 4 rows"),
        (([0, 1], [0, -4]), {"out": out}, IndexError, r"^gather_scatter: dst\[1\] = -4 is out of range"),
        (([0, 1], [0]), {"out": out}, ValueError, "^gather_scatter: src and dst must have one shape"),
        (([0, 1], [0, 1]), {"out": out, "weights": np.ones(3, np.float32)}, ValueError,
         r"^gather_scatter: weights has shape \(3,\); it must be \(2,\)"),
        (([0, 1], [0, 1]), {"out": out, "weights": np.ones(2, np.float16)}, TypeError,
         "^gather_scatter: weights has dtype float16"),
        (([], []), {}, ValueError, "^gather_scatter: dim_size is needed"),
        (([0], [0]), {"out": out, "dim_size": 5}, ValueError, "^gather_scatter: dim_size 5 differs"),
        (([0], [0]), {"out": out, "reduction": "none"}, ValueError, "^gather_scatter: reduction must be one of"),
        (([0], [0]), {"out": out, "order": "random"}, ValueError, "^gather_scatter: order must be one of"),
        (([0], [0]), {"out": np.zeros((3, 3), np.float32)}, ValueError, "^gather_scatter: out has shape"),
    ]
    for args, kw, exc, match in cases:
        with pytest.raises(exc, match=match):
            dmlgpu.gather_scatter(x, *args, **kw)
    assert not out.any()
    with pytest.raises(TypeError, match="^gather_scatter: reduction 'mean' is not supported for dtype int32"):
        dmlgpu.gather_scatter(np.ones((2, 2), np.int32), [0], [0], "mean", dim_size=1)


def test_edge_groups_serve_many_calls(device):
    rng = np.random.default_rng(7)
    x = _values(rng, (16, 5), np.float32)
    src, dst = rng.integers(-16, 16, 60), rng.integers(0, 11, 60)
    groups = dmlgpu.EdgeGroups(dmlgpu.tensor(src), dst, dim_size=12)
    assert "60 edges onto 12 rows" in repr(groups)
    w = _values(rng, (60,), np.float32)
    for reduction in ("add", "mean", "max"):
        for include_self in (True, False):
            want = ref.gather_scatter(x, src, dst, reduction, dim_size=12, include_self=include_self)
            got = dmlgpu.gather_scatter(x, groups, reduction=reduction, include_self=include_self)
            assert isinstance(got, dmlgpu.Tensor)
            assert_bits(got, want)
        assert_bits(dmlgpu.gather_scatter(dmlgpu.tensor(x), groups, reduction=reduction, weights=w),
                    ref.gather_scatter(x, src, dst, reduction, dim_size=12, weights=w))
        assert_bits(dmlgpu.gather_scatter(x, groups, reduction=reduction, weights=dmlgpu.tensor(w)),
                    ref.gather_scatter(x, src, dst, reduction, dim_size=12, weights=w))
    base = _values(rng, (12, 5), np.float32)
    out = dmlgpu.tensor(base)
    assert dmlgpu.gather_scatter(x, groups, out=out) is out
    assert_bits(out, ref.gather_scatter(x, src, dst, out=base))
    assert_bits(dmlgpu.gather_scatter(x, groups, order="tree"),
                ref.gather_scatter(x, src, dst, dim_size=12, order="tree"))
    near = rng.integers(-8, 8, 60)                      # negative sources count from the end of each x
    groups8 = dmlgpu.EdgeGroups(near, dst, dim_size=12)
    for rows in (8, 16, 8):
        assert_bits(dmlgpu.gather_scatter(x[:rows], groups8, reduction="min"),
                    ref.gather_scatter(x[:rows], near, dst, "min", dim_size=12))
    with pytest.raises(IndexError, match=r"^gather_scatter: src\[\d+\] = -?\d+ is out of range for x of 4 rows"):
        dmlgpu.gather_scatter(x[:4], groups)
    with pytest.raises(ValueError, match="^gather_scatter: dst must be None where src is an EdgeGroups"):
        dmlgpu.gather_scatter(x, groups, dst)
    with pytest.raises(ValueError, match="^gather_scatter: out has 3 rows; the EdgeGroups target 12"):
        dmlgpu.gather_scatter(x, groups, out=dmlgpu.zeros((3, 5)))
    with pytest.raises(IndexError, match=r"^EdgeGroups: dst\[\d+\] = \d+ is out of range for the output of 5 rows"):
        dmlgpu.EdgeGroups(src, dst, dim_size=5)
    with pytest.raises(ValueError, match="^EdgeGroups: src and dst must have one shape"):
        dmlgpu.EdgeGroups(src[:3], dst)


def test_embedding_bag_tensor_ids_checked_on_the_device(device):
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    got = dmlgpu.embedding_bag(table, dmlgpu.tensor(np.array([-1, 0, 2], np.int32)), [0, 1])
    assert_bits(got, np.array([table[3], table[0] + table[2]]))     # negative ids count from the end
    bad = dmlgpu.embedding_bag(table, dmlgpu.tensor(np.array([0, 9, 1], np.int64)), [0, 2])
    with pytest.raises(IndexError, match="^embedding_bag: index 9"):
        device.synchronize()
    with pytest.raises(IndexError, match="^embedding_bag: index 9"):
        bad.numpy()                                        # the failed call's result is never valid
    with pytest.raises(IndexError, match="^embedding_bag: index -5"):
        dmlgpu.embedding_bag(table, dmlgpu.tensor(np.array([[-5, 1]], np.int32))).numpy()
    assert_bits(dmlgpu.embedding_bag(table, dmlgpu.tensor(np.array([[3, 1]], np.int32))),
                np.array([table[3] + table[1]]))


def test_split_and_packed_bindings_agree(device, monkeypatch):
    """float32 binds the ids and weights where they are (SPLIT) on a device binding 6 buffers; packed after the
    offsets (four bindings) they give the same bits."""
    from dmlgpu.kernels import table as kernels
    rng = np.random.default_rng(8)
    table = _values(rng, (20, 4), np.float32)
    ids, offs, w = rng.integers(0, 20, 30), np.array([0, 4, 4, 17]), _values(rng, (30,), np.float32)
    src, dst = rng.integers(0, 20, 30), rng.integers(0, 6, 30)
    assert segment.splits(np.float32, "add", device.runtime) == (device.info.max_per_stage_storage_buffers >= 6)
    got = [(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids), dmlgpu.tensor(offs),
                                 per_sample_weights=dmlgpu.tensor(w)).numpy(),
            dmlgpu.embedding_bag(table, ids, offs, mode="max"),
            dmlgpu.gather_scatter(table, src, dst, dim_size=6, weights=w),
            dmlgpu.gather_scatter(table, dmlgpu.EdgeGroups(src, dst, 6), weights=dmlgpu.tensor(w)).numpy())]
    monkeypatch.setattr(kernels, "SEGMENT_SPLIT", ())
    assert not segment.splits(np.float32, "add", device.runtime)
    got.append((dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids), dmlgpu.tensor(offs),
                                     per_sample_weights=dmlgpu.tensor(w)).numpy(),
                dmlgpu.embedding_bag(table, ids, offs, mode="max"),
                dmlgpu.gather_scatter(table, src, dst, dim_size=6, weights=w),
                dmlgpu.gather_scatter(table, dmlgpu.EdgeGroups(src, dst, 6), weights=dmlgpu.tensor(w)).numpy()))
    want = (ref.embedding_bag(table, ids, offs, per_sample_weights=w), ref.embedding_bag(table, ids, offs, "max"),
            ref.gather_scatter(table, src, dst, dim_size=6, weights=w),
            ref.gather_scatter(table, src, dst, dim_size=6, weights=w))
    for run in got:
        for g, wv in zip(run, want):
            assert_bits(g, wv)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, ml_dtypes.bfloat16])
def test_segment_reduce_of_scalars_reads_16_bytes_at_a_time(dtype, monkeypatch):
    """Segments of scalars (one column) read 16 bytes per load between unaligned heads and tails: the same bits."""
    rng = np.random.default_rng(9)
    data = _values(rng, (1001,), dtype)
    offs = np.array([0, 1, 3, 3, 37, 38, 500, 517, 1001])
    for reduction in ("add", "max"):
        assert_bits(dmlgpu.segment_reduce(data, offs, reduction), ref.segment_reduce(data, offs, reduction))
        later = np.clip(offs, 5, 1001) - 5                # a view at an odd offset: packed, then aligned
        assert_bits(dmlgpu.segment_reduce(dmlgpu.tensor(data)[5:], later, reduction),
                    ref.segment_reduce(data[5:], later, reduction))
    monkeypatch.setattr(segment, "PIECE", 13)               # pieces that start and end unaligned
    assert_bits(dmlgpu.segment_reduce(data, offs), ref.segment_reduce(data, offs))


def test_out_views_are_written_in_place():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    host = np.arange(16, dtype=np.float32).reshape(4, 4)
    big = dmlgpu.tensor(host)
    view = big[:, ::2]                                     # strided: a packed copy, then written back
    assert dmlgpu.gather_scatter(x, [0, 1, 2], [1, 1, 3], out=view) is view
    want = host.copy()
    want[:, ::2] = ref.gather_scatter(x, [0, 1, 2], [1, 1, 3], out=host[:, ::2])
    assert_bits(big, want)
    assert dmlgpu.segment_reduce(x, [0, 2, 3], out=big[1:3, 1::2]) is not None
    want[1:3, 1::2] = ref.segment_reduce(x, [0, 2, 3])
    assert_bits(big, want)


def _templates(device, name):
    from dmlgpu.api import call_templates as calls
    return [t for k, t in device.runtime.templates.items() if k[0] == name and isinstance(t, calls.Template)]


def test_repeated_tensor_calls_run_their_template(device):
    """A repeated embedding_bag or segment_reduce on Tensors of one signature queues its traced launches (a call
    template): new Tensors each call give their own results, out= too; a bad id on a hit fails the result at the
    next synchronize; strided and offset views, weights and other arguments are not served by another
    signature's template."""
    rng = np.random.default_rng(11)
    device.runtime.templates.clear()
    for _ in range(4):
        table, ids = _values(rng, (30, 8), np.float32), rng.integers(-30, 30, 40)
        offs = _offsets(rng, 40, 6)[:-1]
        for mode in ("sum", "max"):
            want = ref.embedding_bag(table, ids % 30, offs, mode)
            assert_bits(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids), dmlgpu.tensor(offs),
                                             mode=mode), want)
        out = dmlgpu.empty((6, 8))
        assert dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids), dmlgpu.tensor(offs), out=out) is out
        assert_bits(out, ref.embedding_bag(table, ids % 30, offs, "sum"))
        data, bounds = _values(rng, (40, 3), np.float32), _offsets(rng, 40, 7)
        assert_bits(dmlgpu.segment_reduce(dmlgpu.tensor(data), dmlgpu.tensor(bounds), "min"),
                    ref.segment_reduce(data, bounds, "min"))
    assert len(_templates(device, "embedding_bag")) == 3 and len(_templates(device, "segment_reduce")) == 1
    table, offs = _values(rng, (30, 8), np.float32), _offsets(rng, 40, 6)[:-1]
    bad = np.zeros(40, np.int64)
    bad[7] = 30
    got = dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(bad), dmlgpu.tensor(offs))     # a hit
    with pytest.raises(IndexError, match="^embedding_bag: index 30"):
        device.synchronize()
    with pytest.raises(IndexError, match="^embedding_bag: index 30"):
        got.numpy()
    wide, ids = dmlgpu.tensor(_values(rng, (30, 16), np.float32)), rng.integers(0, 30, 41)
    view = wide[:, ::2]                                     # the signature's shape, strided
    assert_bits(dmlgpu.embedding_bag(view, dmlgpu.tensor(ids[1:]), dmlgpu.tensor(offs)),
                ref.embedding_bag(wide.numpy()[:, ::2], ids[1:], offs, "sum"))
    assert_bits(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids)[1:], dmlgpu.tensor(offs)),
                ref.embedding_bag(table, ids[1:], offs, "sum"))           # ids at an offset
    w = _values(rng, (40,), np.float32)
    assert_bits(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids[1:]), dmlgpu.tensor(offs),
                                     per_sample_weights=dmlgpu.tensor(w)),
                ref.embedding_bag(table, ids[1:], offs, "sum", per_sample_weights=w))
    assert_bits(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids[1:]), dmlgpu.tensor(offs),
                                     padding_idx=ids[1]),
                ref.embedding_bag(table, ids[1:], offs, "sum", padding_idx=ids[1]))
    data, bounds = dmlgpu.tensor(_values(rng, (41, 3), np.float32)), _offsets(rng, 40, 7)
    assert_bits(dmlgpu.segment_reduce(data[1:], dmlgpu.tensor(bounds), "min"),
                ref.segment_reduce(data.numpy()[1:], bounds, "min"))


def test_cpu_pieces_without_padding_are_not_templated(device, monkeypatch):
    """On CPU devices a padded call of more than PIECE positions runs on ids with the padding removed (other
    shapes than the call's): never traced under the call's signature."""
    if device.info.type != "CPU":
        pytest.skip("CPU devices' pieces")
    monkeypatch.setattr(segment, "PIECE", 5)
    monkeypatch.setattr("dmlgpu.api.fused.PIECE", 5)
    device.runtime.templates.clear()
    rng = np.random.default_rng(12)
    table, ids, offs = _values(rng, (10, 3), np.float32), rng.integers(0, 10, 33), np.array([0, 2, 20, 20, 31])
    for _ in range(3):
        assert_bits(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(ids), dmlgpu.tensor(offs),
                                         padding_idx=4), ref.embedding_bag(table, ids, offs, "sum", padding_idx=4))
    assert not _templates(device, "embedding_bag")
