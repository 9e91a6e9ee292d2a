"""Layer-2 gathers (gather, gather_elements, gather_nd) against the NumPy references: hypothesis-driven
("fuzz" in the name: ``-k fuzz`` runs the campaign; DMLGPU_FUZZ_EXAMPLES sets its size), plus empty inputs,
bad input, and a large case."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu
from dmlgpu import reference

from strategies import (call_and_check, elements_case, empty_elements_case, EXTREMES, budget_shape, data_dtypes, empty_shapes, first_bad, index_dtypes, index_kinds,
                        lay_out, layouts, modes, random_data, random_indices, same_bytes, seeds, shapes, snapshot,
                        assert_index_error, py_resolve, MAX_DENSE)

AxisError = np.exceptions.AxisError


def _all_in_range(idx, dims):
    return first_bad(idx, dims) is None


# ---------------------------------------------------------------- gather

@given(st.data())
def test_fuzz_gather(device, data):
    fuzz_gather(device, data)


def fuzz_gather(device, data):
    shape = data.draw(shapes(), label="shape")
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1), label="axis")
    dim = shape[axis]
    outer = int(np.prod(shape)) // dim
    idx_shape = data.draw(shapes(min_rank=1, max_rank=3, max_elems=256, max_side=12), label="idx_shape")
    idx_shape = budget_shape(idx_shape, MAX_DENSE // outer)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    kinds, mode = data.draw(index_kinds(), label="kinds"), data.draw(modes, label="mode")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = lay_out(random_data(rng, shape, dtype), data.draw(layouts(), label="x_layout"))
    idx = lay_out(random_indices(rng, idx_shape, dim, idx_dtype, kinds), data.draw(layouts(), label="i_layout"))

    out = call_and_check(dmlgpu.gather, (x, idx, axis), dict(device=device, mode=mode), mode, idx, dim,
                          lambda: reference.gather(x, idx, axis), [x, idx])
    if out is not None and _all_in_range(idx, dim):
        same_bytes(out, np.take(x, idx.astype(np.int64), axis=axis))


@pytest.mark.parametrize("idx_dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("value", [0, 3, -1, -5, 7, -8, 127])
def test_gather_scalar_index(device, idx_dtype, value):
    """A 0-d index (IndexDimensions 0): the axis disappears, like numpy.take with a scalar."""
    x = np.arange(30, dtype=np.float32).reshape(2, 5, 3)
    idx = np.array(value).astype(idx_dtype)
    expected = reference.gather(x, idx, 1)
    out = dmlgpu.gather(x, idx, axis=1, device=device)
    same_bytes(out, expected)
    assert out.shape == (2, 3)
    if -5 <= int(idx) < 5:
        same_bytes(out, np.take(x, int(idx), axis=1))


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64, np.uint32, np.uint64, np.int8, np.int16])
def test_gather_extreme_indices_clamp(device, idx_dtype):
    """Extreme values clamp (2**40 must not wrap to its low 32 bits); negatives wrap once, then clamp."""
    dim = 7
    x = np.arange(3 * dim, dtype=np.int16).reshape(3, dim)
    info = np.iinfo(idx_dtype)
    values = [v for v in EXTREMES + (0, 6, 7, -1, -7, -8, 1 << 32 | 2, -(1 << 32) + 2, int(info.min), int(info.max))
              if info.min <= v <= info.max]
    signed = info.min < 0
    idx = np.array(values, dtype=object).astype(idx_dtype)
    out = dmlgpu.gather(x, idx, axis=1, device=device)
    expected_cols = [py_resolve(int(v), dim, signed) for v in idx]
    same_bytes(out, x[:, expected_cols])
    same_bytes(out, reference.gather(x, idx, 1))


def test_gather_2pow40_clamps(device):
    x = np.arange(10, dtype=np.uint8)
    for dt in (np.int64, np.uint64):
        idx = np.array([2**40, 2**40 + 3, 2**32 + 1, 3], dtype=dt)
        assert dmlgpu.gather(x, idx, device=device).tolist() == [9, 9, 9, 3]
    idx = np.array([-(2**40), -(2**32) + 3, -2**63], dtype=np.int64)
    assert dmlgpu.gather(x, idx, device=device).tolist() == [0, 0, 0]


@pytest.mark.parametrize("dt", [">i8", ">u8", ">i4", ">u4", ">i2", "<i8"])
def test_gather_non_native_index_dtypes_keep_values(device, dt):
    """Other integer index dtypes (here byte-swapped ones) are converted without changing their values."""
    x = np.arange(10, dtype=np.float32)
    values = [3, 9, 11, 2**15 - 1] + ([2**40, 2**33 + 1] if np.dtype(dt).itemsize == 8 else [])
    idx = np.array(values, dtype=dt)
    same_bytes(dmlgpu.gather(x, idx, device=device), reference.gather(x, idx))
    same_bytes(dmlgpu.gather(x, idx, device=device), x[[min(v, 9) for v in values]])


@given(st.data())
def test_fuzz_gather_empty(device, data):
    """Zero-size dimensions: an empty result of numpy.take's shape and dtype (mode="clamp" never fails when
    the result is empty), IndexError for a non-empty result from an empty axis (as numpy.take), or in
    mode="raise" for any index outside its dimension."""
    if data.draw(st.booleans(), label="empty_data"):
        shape = data.draw(empty_shapes(), label="shape")
        idx_shape = data.draw(shapes(min_rank=1, max_rank=3, max_elems=16, min_side=0, max_side=3), label="ishape")
    else:
        shape = data.draw(shapes(max_rank=4, max_elems=64), label="shape")
        idx_shape = data.draw(empty_shapes(max_rank=3), label="ishape")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    mode = data.draw(modes, label="mode")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = random_data(rng, shape, dtype)
    dim = shape[axis]
    idx = random_indices(rng, idx_shape, max(dim, 1), idx_dtype, ["in"])
    before = snapshot(x, idx)
    out_shape = tuple(shape[:axis % len(shape)]) + tuple(idx_shape) + tuple(shape[axis % len(shape) + 1:])
    bad = first_bad(idx, dim)
    if mode == "raise" and bad is not None:
        with pytest.raises(IndexError) as excinfo:
            dmlgpu.gather(x, idx, axis=axis, device=device, mode=mode)
        assert_index_error(excinfo, *bad)
    elif dim == 0 and int(np.prod(out_shape)):   # a non-empty result from an empty axis (numpy agrees)
        with pytest.raises(IndexError):
            np.take(x, idx.astype(np.int64), axis=axis)
        with pytest.raises(IndexError):
            dmlgpu.gather(x, idx, axis=axis, device=device, mode=mode)
    else:
        out = dmlgpu.gather(x, idx, axis=axis, device=device, mode=mode)
        assert out.shape == out_shape and out.dtype == x.dtype
        try:   # numpy.take also raises for some empty results from an empty axis, e.g. shape (0, 0), axis 0
            expected = np.take(x, idx.astype(np.int64), axis=axis)
        except IndexError:
            assert dim == 0
        else:
            same_bytes(out, expected)
    assert snapshot(x, idx) == before


# ---------------------------------------------------------------- gather_elements

@given(st.data())
def test_fuzz_gather_elements(device, data):
    fuzz_gather_elements(device, data)


def fuzz_gather_elements(device, data):
    x, idx, axis, mode, _ = data.draw(elements_case(), label="case")
    shape, idx_shape, dim = x.shape, idx.shape, x.shape[axis]

    out = call_and_check(dmlgpu.gather_elements, (x, idx, axis), dict(device=device, mode=mode), mode, idx, dim,
                          lambda: reference.gather_elements(x, idx, axis), [x, idx])
    if out is not None and _all_in_range(idx, dim):
        a = axis % len(shape)
        window = tuple(slice(None) if d == a else slice(0, n) for d, n in enumerate(idx_shape))
        same_bytes(out, np.take_along_axis(x[window], idx.astype(np.int64), axis=a))


@given(st.data())
def test_fuzz_gather_elements_empty(device, data):
    x, idx, axis, mode, _ = data.draw(empty_elements_case(), label="case")
    shape, idx_shape, a = x.shape, idx.shape, axis % x.ndim
    before = snapshot(x, idx)
    window = tuple(slice(None) if d == a else slice(0, n) for d, n in enumerate(idx_shape))
    bad = first_bad(idx, shape[a])
    if mode == "raise" and bad is not None:
        with pytest.raises(IndexError) as excinfo:
            dmlgpu.gather_elements(x, idx, axis=axis, device=device, mode=mode)
        assert_index_error(excinfo, *bad)
    else:
        try:
            expected = np.take_along_axis(x[window], idx.astype(np.int64), axis=a)
        except IndexError:
            with pytest.raises(IndexError):
                dmlgpu.gather_elements(x, idx, axis=axis, device=device, mode=mode)
        else:
            same_bytes(dmlgpu.gather_elements(x, idx, axis=axis, device=device, mode=mode), expected)
    assert snapshot(x, idx) == before


# ---------------------------------------------------------------- gather_nd

@st.composite
def nd_case(draw, max_rank=8, max_batch=None):
    """(data shape, batch_dims, indices shape) with indices rank batch_dims + 1..3."""
    shape = draw(shapes(max_rank=max_rank), label="shape")
    rank = len(shape)
    b = draw(st.integers(0, rank - 1 if max_batch is None else min(max_batch, rank - 1)), label="batch_dims")
    k = draw(st.integers(1, rank - b), label="k")
    middle = draw(shapes(min_rank=0, max_rank=2, max_elems=64, max_side=10), label="middle")
    batch = int(np.prod(shape[:b]))
    row = int(np.prod(shape[b + k:]))
    middle = budget_shape(middle, max(1, min(512 // batch, MAX_DENSE // (batch * row))))
    return shape, b, tuple(shape[:b]) + tuple(middle) + (k,)


@given(st.data())
def test_fuzz_gather_nd(device, data):
    fuzz_gather_nd(device, data)


def fuzz_gather_nd(device, data):
    shape, b, idx_shape = data.draw(nd_case(), label="case")
    k = idx_shape[-1]
    dims = np.array(shape[b:b + k], dtype=np.int64)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    kinds, mode = data.draw(index_kinds(), label="kinds"), data.draw(modes, label="mode")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = lay_out(random_data(rng, shape, dtype), data.draw(layouts(), label="x_layout"))
    idx = lay_out(random_indices(rng, idx_shape, dims, idx_dtype, kinds), data.draw(layouts(), label="i_layout"))

    out = call_and_check(dmlgpu.gather_nd, (x, idx, b), dict(device=device, mode=mode), mode, idx, dims,
                          lambda: reference.gather_nd(x, idx, b), [x, idx])
    if out is not None and b == 0 and _all_in_range(idx, dims):
        i64 = idx.astype(np.int64)
        same_bytes(out, x[tuple(i64[..., j] for j in range(k))])


@given(st.data())
def test_fuzz_gather_nd_empty(device, data):
    """Zero-size dimensions in data or indices: the right empty shape; IndexError when a non-empty result
    would have to read a zero-size dimension, or (mode="raise") for any index outside its dimension."""
    shape = data.draw(shapes(max_rank=4, max_elems=64, min_side=0, max_side=3), label="shape")
    rank = len(shape)
    b = data.draw(st.integers(0, rank - 1), label="batch_dims")
    k = data.draw(st.integers(1, rank - b), label="k")
    middle = data.draw(shapes(min_rank=0, max_rank=2, max_elems=9, min_side=0, max_side=3), label="middle")
    idx_shape = tuple(shape[:b]) + tuple(middle) + (k,)
    if 0 not in shape and 0 not in idx_shape:
        idx_shape = tuple(shape[:b]) + (0,) + tuple(middle) + (k,)
    dims = np.array(shape[b:b + k], dtype=np.int64)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    mode = data.draw(modes, label="mode")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = random_data(rng, shape, dtype)
    idx = random_indices(rng, idx_shape, np.maximum(dims, 1), idx_dtype, ["in"])
    before = snapshot(x, idx)
    expected_shape = idx_shape[:-1] + tuple(shape[b + k:])
    bad = first_bad(idx, dims)
    if mode == "raise" and bad is not None:
        with pytest.raises(IndexError) as excinfo:
            dmlgpu.gather_nd(x, idx, b, device=device, mode=mode)
        assert_index_error(excinfo, *bad)
    elif int(np.prod(expected_shape)) and 0 in dims:
        with pytest.raises(IndexError):
            dmlgpu.gather_nd(x, idx, b, device=device, mode=mode)
    else:
        out = dmlgpu.gather_nd(x, idx, b, device=device, mode=mode)
        assert out.shape == expected_shape and out.dtype == x.dtype
        if b == 0 and bad is None:
            i64 = idx.astype(np.int64)
            same_bytes(out, x[tuple(i64[..., j] for j in range(k))])
        elif out.size:
            same_bytes(out, reference.gather_nd(x, idx, b))
    assert snapshot(x, idx) == before


# ---------------------------------------------------------------- mode="raise" specifics

@pytest.mark.parametrize("fn", ["gather", "gather_elements", "gather_nd"])
def test_raise_names_first_bad_index(device, fn):
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    if fn == "gather":
        idx = np.array([[0, 3], [9, -5], [-4, 100]], dtype=np.int64)
        args, pos, value = (x, idx, 0), (1, 0), 9
    elif fn == "gather_elements":
        idx = np.array([[0, 5, 2], [-6, -7, 6]], dtype=np.int32)
        args, pos, value = (x, idx, 1), (1, 1), -7
    else:
        idx = np.array([[[3, 5]], [[1, 6]], [[4, 0]]], dtype=np.int64)
        args, pos, value = (x, idx), (1, 0, 1), 6
    before = snapshot(x, idx)
    with pytest.raises(IndexError) as excinfo:
        getattr(dmlgpu, fn)(*args, device=device, mode="raise")
    assert_index_error(excinfo, pos, value)
    assert snapshot(x, idx) == before
    # mode="clamp" accepts the same indices
    same_bytes(getattr(dmlgpu, fn)(*args, device=device), getattr(reference, fn)(*args))


def test_raise_unsigned_huge_and_2pow40(device):
    x = np.arange(5, dtype=np.float64)
    with pytest.raises(IndexError) as excinfo:
        dmlgpu.gather(x, np.array([1, 2**64 - 1, 7], dtype=np.uint64), device=device, mode="raise")
    assert_index_error(excinfo, (1,), 2**64 - 1)
    with pytest.raises(IndexError) as excinfo:
        dmlgpu.gather(x, np.array([4, -5, 2**40], dtype=np.int64), device=device, mode="raise")
    assert_index_error(excinfo, (2,), 2**40)


# ---------------------------------------------------------------- bad input

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("call", [
    lambda d: dmlgpu.gather(X, np.array([0.0, 1.0]), device=d),
    lambda d: dmlgpu.gather(X, np.array([0, 1], dtype=np.float16), device=d),
    lambda d: dmlgpu.gather(X, np.array([True, False]), device=d),
    lambda d: dmlgpu.gather_elements(X, np.zeros((2, 3, 4), dtype=np.float32), device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((1, 2), dtype=np.float64), device=d),
    lambda d: dmlgpu.gather(X, np.array([0, 1], dtype=object), device=d),
    lambda d: dmlgpu.gather(np.array([1, "a", None], dtype=object), np.array([0]), device=d),
    lambda d: dmlgpu.gather_elements(np.array([[1, 2]], dtype=object), np.array([[0, 1]]), device=d),
    lambda d: dmlgpu.gather_nd(np.array([1, 2], dtype=object), np.array([[0]]), device=d),
    lambda d: dmlgpu.scatter_nd(np.zeros(4, dtype="S3"), [[0]], np.zeros(1, "S3"), reduction="add", device=d),
    lambda d: dmlgpu.gather(X, np.array([0]), axis=1.0, device=d),
    lambda d: dmlgpu.gather(X, np.array([0]), device="cpu"),
], ids=["float64-idx", "float16-idx", "bool-idx", "elements-float-idx", "nd-float-idx", "object-idx",
        "object-data", "elements-object-data", "nd-object-data", "3-byte-reduction", "float-axis", "device-str"])
def test_bad_input_type_error(device, call):
    with pytest.raises(TypeError):
        call(device)


@pytest.mark.parametrize("call", [
    # shapes
    lambda d: dmlgpu.gather_elements(X, np.zeros((2, 3), dtype=np.int32), device=d),
    lambda d: dmlgpu.gather_elements(X, np.zeros((3, 3, 4), dtype=np.int32), axis=1, device=d),
    lambda d: dmlgpu.gather_elements(X, np.zeros((2, 3, 5), dtype=np.int32), axis=0, device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((1, 4), dtype=np.int32), device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((1, 0), dtype=np.int32), device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((3, 1), dtype=np.int32), batch_dims=1, device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((2, 3), dtype=np.int32), batch_dims=1, device=d),
    lambda d: dmlgpu.gather_nd(X, np.array(0), device=d),
    lambda d: dmlgpu.gather(np.array(1.0), np.array([0]), device=d),
    lambda d: dmlgpu.gather_elements(np.array(1.0), np.array(0), device=d),
    # batch_dims
    lambda d: dmlgpu.gather_nd(X, np.zeros((2, 1), dtype=np.int32), batch_dims=-1, device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((2, 3, 1), dtype=np.int32), batch_dims=3, device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((2, 1), dtype=np.int32), batch_dims=2, device=d),
    # modes
    lambda d: dmlgpu.gather(X, np.array([0]), mode="wrap", device=d),
    lambda d: dmlgpu.gather(X, np.array([0]), mode="CLAMP", device=d),
    lambda d: dmlgpu.gather_elements(X, np.zeros((1, 1, 1), dtype=np.int32), mode=None, device=d),
    lambda d: dmlgpu.gather_nd(X, np.zeros((1, 1), dtype=np.int32), mode="clip", device=d),
], ids=["el-rank", "el-larger-outside-axis", "el-larger-last", "nd-k-too-big", "nd-k-zero", "nd-batch-mismatch",
        "nd-batch-shape", "nd-0d-idx", "0d-data", "el-0d-data", "bd-negative", "bd-too-big", "bd-eq-idx-rank",
        "mode-wrap", "mode-upper", "mode-none", "mode-clip"])
def test_bad_input_value_error(device, call):
    with pytest.raises(ValueError):
        call(device)


@pytest.mark.parametrize("batch_dims", [1.0, True, "1", None])
def test_bad_batch_dims_type(device, batch_dims):
    with pytest.raises((TypeError, ValueError)):
        dmlgpu.gather_nd(X, np.zeros((2, 1), dtype=np.int32), batch_dims=batch_dims, device=device)


@pytest.mark.parametrize("fn", [dmlgpu.gather, dmlgpu.gather_elements])
@pytest.mark.parametrize("axis", [3, -4, 100])
def test_bad_axis(device, fn, axis):
    idx = np.zeros((1, 1, 1), dtype=np.int32)
    with pytest.raises(AxisError):
        fn(X, idx, axis=axis, device=device)


def test_default_device_and_lists(device):
    """No device= uses the default device; list inputs are accepted."""
    assert dmlgpu.gather([[1, 2], [3, 4]], [1, -1, 0]).tolist() == [[3, 4], [3, 4], [1, 2]]
    assert dmlgpu.gather_elements([[1, 2], [3, 4]], [[1, 0]], axis=0).tolist() == [[3, 2]]
    assert dmlgpu.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]]).tolist() == [3, 2]


# ---------------------------------------------------------------- large

def _resolve_vec(v, dim):
    v = v.astype(np.int64) if v.dtype.kind == "i" else np.minimum(v.astype(np.uint64), dim - 1).astype(np.int64)
    v = np.where((v < 0) & (v >= -dim), v + dim, v)
    return np.clip(v, 0, dim - 1)


def test_large_gather_rows(device):
    """~6 MiB of float32 rows gathered from a 4 MiB table, indices of every kind."""
    rng = np.random.default_rng(1)
    x = random_data(rng, (1024, 1024), np.float32)
    idx = rng.integers(-1100, 1100, size=1536).astype(np.int64)
    idx[::97] = rng.choice(np.array([2**40, -2**63, 2**63 - 1, 2**32, -2**32]), size=idx[::97].size)
    before = snapshot(x, idx)
    out = dmlgpu.gather(x, idx, axis=0, device=device)
    same_bytes(out, x[_resolve_vec(idx, 1024)])
    assert snapshot(x, idx) == before


def test_large_gather_columns_uint16(device):
    """~2.7 MiB result of 2-byte elements gathered along the last axis (no row vectorization)."""
    rng = np.random.default_rng(2)
    x = random_data(rng, (2048, 515), np.uint16)
    idx = rng.integers(0, 2**32, size=(3, 231)).astype(np.uint32)
    idx[0] %= 515
    out = dmlgpu.gather(x, idx, axis=-1, device=device)
    same_bytes(out, np.take(x, _resolve_vec(idx, 515), axis=-1))


def test_large_gather_elements_and_nd(device):
    rng = np.random.default_rng(3)
    x = random_data(rng, (512, 1024), np.uint8)
    idx = rng.integers(-600, 600, size=(512, 1000)).astype(np.int32)
    same_bytes(dmlgpu.gather_elements(x, idx, axis=0, device=device),
               np.take_along_axis(x[:, :1000], _resolve_vec(idx, 512), axis=0))
    nd = rng.integers(-1, 1100, size=(700, 2)).astype(np.int64)
    r0, r1 = _resolve_vec(nd[:, 0], 512), _resolve_vec(nd[:, 1], 1024)
    same_bytes(dmlgpu.gather_nd(x, nd, device=device), x[r0, r1])


@pytest.mark.parametrize("case", [
    ("gather", (0, 0), np.array([0], np.int32), dict(axis=1), (0, 1)),
    ("gather", (0, 0), np.array([0], np.int32), dict(axis=0), (1, 0)),
    ("gather", (0, 3), np.array([[7, -9]], np.int64), dict(axis=1), (0, 1, 2)),
    ("gather", (2, 0, 4), np.array([5], np.uint32), dict(axis=1), None),     # non-empty result: IndexError
    ("gather_nd", (0, 0, 0), np.array([0], np.int32), {}, (0, 0)),
    ("gather_nd", (3, 0, 2), np.array([[1, 0]], np.int64), {}, None),       # non-empty result: IndexError
    ("gather_nd", (3, 0, 0), np.array([[1, 0]], np.int64), {}, (1, 0)),
], ids=["take-empty-out", "take-empty-out-axis0", "take-empty-out-oob", "take-nonempty-out", "nd-empty-out", "nd-nonempty-out",
        "nd-empty-out-2"])
def test_empty_axis_clamp_mode(device, case):
    """mode="clamp" never fails when the result is empty (numpy.take agrees: np.take(np.empty((0, 0)), [0],
    axis=1) has shape (0, 1)); a non-empty result that would read a zero-size dimension is an IndexError."""
    fn, shape, idx, kw, out_shape = case
    x = np.zeros(shape, np.float32)
    if out_shape is None:
        with pytest.raises(IndexError):
            getattr(dmlgpu, fn)(x, idx, device=device, **kw)
        return
    if fn == "gather" and kw["axis"] == 1:
        assert np.take(x, idx, **kw).shape == out_shape
    out = getattr(dmlgpu, fn)(x, idx, device=device, **kw)
    assert out.shape == out_shape and out.dtype == x.dtype
    with pytest.raises(IndexError):   # mode="raise" names the bad index even when the result is empty
        getattr(dmlgpu, fn)(x, idx, device=device, mode="raise", **kw)


# ---------------------------------------------------------------- whole-row iterations (CPU devices)

ROW_CASES = [  # (table shape, dtype, index shape, axis): rows of the innermost dimension gathered whole
    ((100, 8), np.float32, (64,), 0),                     # the shortest row (2 units of 16 bytes), 64 rows
    ((70, 16384), np.float32, (65,), 0),                  # the longest row: 4096 units of 16 bytes
    ((70, 16388), np.float32, (65,), 0),                  # 4097 units: too long, one unit per iteration
    ((50, 97), np.uint32, (80,), 0),                      # an odd row of 4-byte units
    ((9, 33, 5), np.int64, (7, 11), 1),                   # an odd row of 8-byte units, indexed in the middle
    ((40, 3, 8), np.complex128, (2, 50), 0),              # 16-byte units, rank 3
    ((63, 16), np.float32, (63,), 0),                     # 63 rows: too few, one unit per iteration
]


@pytest.mark.parametrize("shape, dtype, idx_shape, axis", ROW_CASES)
@pytest.mark.parametrize("row_loop", [True, False], ids=["row loop on CPUs", "one unit per iteration"])
def test_gather_of_whole_rows(device, monkeypatch, shape, dtype, idx_shape, axis, row_loop):
    """On CPU devices a gather whose innermost dimension is a contiguous row moves each row in one iteration
    (FLAG_ROWS in the parameters); elsewhere one unit per iteration. Both paths, on any device."""
    from dmlgpu.plans import plan
    if not row_loop:
        monkeypatch.setattr(plan.GatherPlan, "_words", lambda self, device: (self.words, self.vec))
    elif device.info.type != "CPU":
        monkeypatch.setattr(plan.GatherPlan, "_words", lambda self, device: (self.row_words, 0)
                            if self.row_words is not None else (self.words, self.vec))
    rng = np.random.default_rng(sum(shape))
    x = random_data(rng, shape, dtype)
    idx = rng.integers(-shape[axis], shape[axis], idx_shape)
    same_bytes(dmlgpu.gather(x, idx, axis=axis, device=device), reference.gather(x, idx, axis))
    t = dmlgpu.gather(dmlgpu.tensor(x, device=device), dmlgpu.tensor(idx, device=device), axis=axis)
    same_bytes(t.numpy(), reference.gather(x, idx, axis))


# ---------------------------------------------------------------- several units per iteration (VEC variants)

VEC_CASES = [  # (op, data shape, dtype, index shape, axis): packed outputs of 1- to 8-byte units
    ("take", (50, 1), np.uint8, (37,), 0),                # rank 1, a partial last word (37 bytes)
    ("take", (50, 1), np.float16, (9,), 0),               # a partial last word of 2-byte units
    ("take", (50,), np.float32, (4 * 5 + 3,), 0),         # a partial last group of 16 bytes (3 units)
    ("take", (50,), np.float64, (3,), 0),                 # 8-byte units, a partial group
    ("take", (7, 3), np.uint8, (5,), 1),                  # rank 2 with an innermost dimension of 5 < 4 * ...
    ("take", (6, 5, 3), np.float32, (2, 3), 1),           # rank 3 (innermost dimension 3 wraps within groups)
    ("take", (4, 3, 5, 2), np.float64, (3,), 2),          # rank 3 of 8-byte units: rows of 2 wrap every group
    ("elements", (9, 7), np.float32, (9, 7), 1),          # last axis, rows of 7 (groups cross rows)
    ("elements", (9, 7), np.uint8, (5, 7), 0),            # first axis of bytes
    ("elements", (3, 4, 5), np.float16, (3, 4, 5), 2),    # rank 3, 2-byte units
    ("nd", (5, 6, 3), np.float32, (7, 2), 0),             # tuples of 2 (the variant without a fixed tuple size)
    ("nd", (5, 6), np.uint8, (11, 2), 0),                 # tuples of 2, single bytes
]


@pytest.mark.parametrize("op, shape, dtype, idx_shape, axis", VEC_CASES)
def test_vec_gathers_edges(device, op, shape, dtype, idx_shape, axis):
    """The VEC gathers (several units per iteration, decoded once and then stepped): partial last words and
    groups, innermost dimensions shorter than a group, each rank, fixed and free tuple sizes; with guard words
    after every buffer, nothing past the output is written."""
    rng = np.random.default_rng(len(shape) * 100 + sum(idx_shape))
    x = random_data(rng, shape, dtype)
    before = device.runtime.canary_words
    device.runtime.canary_words = 16
    try:
        if op == "take":
            idx = rng.integers(-shape[axis], shape[axis], idx_shape)
            got, want = dmlgpu.gather(dmlgpu.tensor(x, device=device), dmlgpu.tensor(idx, device=device), axis=axis), \
                reference.gather(x, idx, axis)
        elif op == "elements":
            idx = rng.integers(0, shape[axis], idx_shape).astype(np.int32)
            got, want = dmlgpu.gather_elements(dmlgpu.tensor(x, device=device), dmlgpu.tensor(idx, device=device),
                                               axis=axis), np.take_along_axis(x, idx, axis)
        else:
            idx = np.stack([rng.integers(0, n, idx_shape[:-1]) for n in shape[:idx_shape[-1]]], axis=-1)
            got, want = dmlgpu.gather_nd(dmlgpu.tensor(x, device=device), dmlgpu.tensor(idx, device=device)), \
                reference.gather_nd(x, idx)
        same_bytes(got.numpy(), want)
        assert got.buffer.canary_intact()
    finally:
        device.runtime.canary_words = before


# ---------------------------------------------------------------- gathers of scattered single units (GPU paths)

SPREAD_CASES = [  # (call, table dtype, table shape, kernel the GPU path takes, kernel without narrow storage)
    ("gather", np.int8, (200_000,), "gather_u1_i64_narrow", "gather_vec4_k1_u1_i64"),
    ("gather", np.float16, (1, 70_000), "gather_u2_i32_narrow", "gather_vec4_k1_u2_i32"),
    ("gather", np.float32, (100_001, 1), "gather_u4_i64", "gather_u4_i64"),
    ("gather_elements", np.float32, (300, 257), "gather_u4_i64", "gather_u4_i64"),
    ("gather_elements", np.uint16, (300, 257), "gather_u2_i64_narrow", "gather_vec4_k1_u2_i64"),
]


@pytest.fixture(scope="module")
def gpu_like():
    """A device whose plans take the GPU paths: lavapipe shown to them as an integrated GPU (same memory)."""
    import dataclasses
    d = dmlgpu.Device()
    if d.info.type == "CPU":
        d.runtime.info = dataclasses.replace(d.info, type="integrated GPU")
    return d


@given(st.data())
@pytest.mark.parametrize("fuzz", [fuzz_gather, fuzz_gather_elements, fuzz_gather_nd])
def test_fuzz_spread_paths(gpu_like, fuzz, data):
    """The GPU's one-unit and NARROW gathers on every shape, layout, dtype and index kind of the fuzz tests:
    plans made with SPREAD_UNITS = 1 (every map whose innermost units take their own index takes them)."""
    from dmlgpu.plans import plan
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plan, "SPREAD_UNITS", 1)
        plan.make_plan.cache_clear()
        try:
            fuzz(gpu_like, data)
        finally:
            plan.make_plan.cache_clear()


@pytest.mark.parametrize("call, dtype, shape, kernel, fallback", SPREAD_CASES)
@pytest.mark.parametrize("profile", ["full", "no-narrow-storage"])
def test_spread_units_take_one_unit_per_invocation_on_gpus(call, dtype, shape, kernel, fallback, profile):
    """On a GPU, a gather whose units each read their own place of a data dimension spanning SPREAD_UNITS
    bytes or more moves one unit per invocation (1- and 2-byte units loaded and stored as such: NARROW, where
    the device has the storage feature; else the VEC variant). lavapipe is shown to the plan as an integrated
    GPU (same memory), so that these paths run and are checked here; as the CPU it is, it takes no NARROW variant,
    and one unit per invocation below plan.CPU_VEC_UNITS units (the VEC variant's fixed cost there), else VEC."""
    import dataclasses
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = random_data(rng, shape, dtype)
    if call == "gather":
        axis = int(np.argmax(shape))
        n = shape[axis]
        idx = rng.integers(-n, n, 5000).astype(np.int64 if kernel.endswith(("i64", "i64_narrow")) else np.int32)
        want = np.take(x, idx, axis=axis)
        run = lambda d: dmlgpu.gather(dmlgpu.tensor(x, device=d), idx, axis=axis)
    else:
        idx = rng.integers(-shape[0], shape[0], (301, shape[1])).astype(np.int64)
        want = reference.gather_elements(x, idx, 0)
        run = lambda d: dmlgpu.gather_elements(dmlgpu.tensor(x, device=d), idx, axis=0)
    for as_gpu in (True, False):
        d = dmlgpu.Device(profile=profile)
        if not as_gpu and d.info.type != "CPU":
            continue                                  # (on a GPU: its own paths, checked above)
        if as_gpu:
            d.runtime.info = dataclasses.replace(d.info, type="integrated GPU")
        with d.record() as rec:
            got = run(d)
        used = [w.kernel for k, w in rec._steps if k == "dispatch"]
        expected = (kernel if profile == "full" else fallback) if as_gpu else None
        if expected is not None:
            assert used == [expected]
        else:
            from dmlgpu.plans import plan
            assert not any(k.endswith("_narrow") for k in used)
            assert all(("vec" in k) == (want.size >= plan.CPU_VEC_UNITS) for k in used), used
        same_bytes(got.numpy(), want)


@pytest.mark.parametrize("shape, ids", [((1,), [0]), ((1024,), [[5]]), ((8, 4), [3])])
def test_a_single_gathered_unit_is_spread(device, shape, ids):
    """One unit gathered (its map has no dimension left, only its index tuple) reads its own place, as a spread
    gather's units do: on a CPU device one unit per invocation (plan.CPU_VEC_UNITS: lavapipe's VEC gather cost 9-13
    ms for this one element, 0.06 ms without), and the result is NumPy's."""
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    idx = np.array(ids, np.int64)
    with device.record() as rec:
        got = dmlgpu.take(dmlgpu.tensor(x, device=device), idx, axis=0)
    same_bytes(got.numpy(), np.take(x, idx, axis=0))
    used = [d.kernel for d in rec.dispatches()]
    if device.info.type == "CPU":
        assert used and not any("vec" in k for k in used), used


@pytest.mark.parametrize("shape, n, idx_dtype", [((300, 160), 1001, np.int64), ((50, 3, 128), 77, np.int32),
                                                 ((40, 128), 3, np.int64)])
def test_long_rows_take_the_run_gather_on_gpus(gpu_like, shape, n, idx_dtype):
    """On a GPU, rows of at least plan.RUN_ROW_UNITS 16-byte units gathered whole take the run variant
    (kernels.RUN_UNROLL units kernels.RUN_LANES apart per invocation, a partial last block included)."""
    from dmlgpu.plans import plan
    rng = np.random.default_rng(n)
    x = random_data(rng, shape, np.float32)
    idx = rng.integers(-shape[0], shape[0], n).astype(idx_dtype)
    with gpu_like.record() as rec:
        got = dmlgpu.gather(dmlgpu.tensor(x, device=gpu_like), idx, axis=0)
    ran = [w.kernel for k, w in rec._steps if k == "dispatch"]
    assert ran == [f"gather_u16_i{np.dtype(idx_dtype).itemsize * 8}_run"], ran
    assert np.prod(shape[1:]) * 4 // 16 >= plan.RUN_ROW_UNITS
    same_bytes(got.numpy(), np.take(x, idx, axis=0))
