"""Scatter reductions (reduction="add" | "mul" | "min" | "max"): the ONNX examples, properties against the
sequential NumPy references (dmlgpu.reference.scatter_nd / scatter_elements with a reduction), heavy
duplicates, bit-exact float16/float32/float64 arithmetic against NumPy and bfloat16/float8 arithmetic against
ml_dtypes, integer wrapping, layer 1, Tensors.

Results are compared bit for bit; a NaN matches any NaN only where NaN payloads are a platform's choice."""
import zlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu
from dmlgpu import DataType, DescError, TensorDesc, reference
from dmlgpu.kernels import table as kernels

REDUCTIONS = ("add", "mul", "min", "max")
NARROW_DTYPES = [np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)]
ARITH_DTYPES = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                                      np.uint64, np.float16, np.float32, np.float64, np.bool_)] + NARROW_DTYPES
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def same(out, expected, loose_nan=True):
    """Bit-equal arrays (any NaN matches any NaN with ``loose_nan``)."""
    out, expected = np.asarray(out), np.asarray(expected)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    if out.dtype.kind == "b":
        return np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    bits = out.view(UINT[out.dtype.itemsize]) == expected.view(UINT[out.dtype.itemsize])
    if loose_nan and (out.dtype.kind == "f" or out.dtype in NARROW_DTYPES):
        bits |= np.isnan(out) & np.isnan(expected)
    return bool(bits.all())


def values(rng, shape, dtype, reduction):
    """Random values that keep every dtype exact and free of subnormals (float32 may flush them on GPUs)."""
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    if reduction == "mul":   # factors near 1: long products stay normal
        v = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape)
    else:
        v = rng.standard_normal(shape) * 100
    return v.astype(dtype)


# ---- The ONNX examples (operator docs and backend test cases), worked out from the definitions ----

ND_DATA_3D = np.array([[[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
                       [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
                       [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]],
                       [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]], dtype=np.float32)
ND_UPDATES_3D = np.array([[[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]],
                          [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]]], dtype=np.float32)
ND_EXPECTED_3D_SLICE0 = {   # indices [[0], [0]]: both updates combine into slice 0, the rest is unchanged
    "add": [[7, 8, 9, 10], [13, 14, 15, 16], [18, 17, 16, 15], [16, 15, 14, 13]],
    "mul": [[5, 10, 15, 20], [60, 72, 84, 96], [168, 147, 126, 105], [128, 96, 64, 32]],
    "max": [[5, 5, 5, 5], [6, 6, 7, 8], [8, 7, 7, 7], [8, 8, 8, 8]],
    "min": [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 3, 2, 1]],
}
ND_EXPECTED_1D = {          # data [1..8], indices [[4], [3], [1], [7]], updates [9, 10, 11, 12]
    "add": [1, 13, 3, 14, 14, 6, 7, 20],
    "mul": [1, 22, 3, 40, 45, 6, 7, 96],
    "max": [1, 11, 3, 10, 9, 6, 7, 12],
    "min": [1, 2, 3, 4, 5, 6, 7, 8],
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_onnx_scatter_nd_1d(device, reduction):
    data = np.arange(1, 9, dtype=np.float32)
    out = dmlgpu.scatter_nd(data, np.array([[4], [3], [1], [7]], dtype=np.int64),
                            np.array([9, 10, 11, 12], dtype=np.float32), device=device, reduction=reduction)
    assert same(out, np.array(ND_EXPECTED_1D[reduction], dtype=np.float32))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_onnx_scatter_nd_3d(device, reduction):
    out = dmlgpu.scatter_nd(ND_DATA_3D, np.array([[0], [0]], dtype=np.int64), ND_UPDATES_3D, device=device,
                            reduction=reduction)
    expected = ND_DATA_3D.copy()
    expected[0] = ND_EXPECTED_3D_SLICE0[reduction]
    assert same(out, expected)
    assert same(reference.scatter_nd(ND_DATA_3D, np.array([[0], [0]]), ND_UPDATES_3D, reduction), expected)


def test_onnx_scatter_nd_3d_distinct_targets(device):
    """The ScatterND doc's 3-D example (indices [[0], [2]]) with add: each slice gets its own update."""
    out = dmlgpu.scatter_nd(ND_DATA_3D, np.array([[0], [2]]), ND_UPDATES_3D, device=device, reduction="add")
    expected = ND_DATA_3D.copy()
    expected[0] += ND_UPDATES_3D[0]
    expected[2] += ND_UPDATES_3D[1]
    assert same(out, expected)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_onnx_scatter_elements_duplicate_indices(device, reduction):
    """ScatterElements data [[1,2,3,4,5]], indices [[1,1]], updates [[1.1,2.1]], axis 1: add gives
    [[1, 5.2, 3, 4, 5]] (2 + 1.1 + 2.1, in float32, in this order)."""
    data = np.array([[1, 2, 3, 4, 5]], dtype=np.float32)
    upd = np.array([[1.1, 2.1]], dtype=np.float32)
    out = dmlgpu.scatter_elements(data, np.array([[1, 1]], dtype=np.int64), upd, axis=1, device=device,
                                  reduction=reduction)
    f = np.float32
    target = {"add": (f(2) + f(1.1)) + f(2.1), "mul": (f(2) * f(1.1)) * f(2.1), "min": f(1.1), "max": f(2.1)}
    expected = data.copy()
    expected[0, 1] = target[reduction]
    assert same(out, expected)
    if reduction == "add":
        np.testing.assert_allclose(out, [[1, 5.2, 3, 4, 5]], rtol=1e-6)


def test_onnx_scatter_elements_2d_axis0(device):
    """The ScatterElements doc's axis-0 example, with add on a zero data tensor: plain sums."""
    data = np.zeros((3, 3), dtype=np.float32)
    idx = np.array([[1, 0, 2], [0, 2, 1]])
    upd = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], dtype=np.float32)
    out = dmlgpu.scatter_elements(data, idx, upd, axis=0, device=device, reduction="add")
    expected = np.array([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], dtype=np.float32)
    assert same(out, expected)


# ---- Properties against the sequential references ----

@st.composite
def nd_cases(draw):
    dtype = draw(st.sampled_from(ARITH_DTYPES))
    reduction = draw(st.sampled_from(REDUCTIONS))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    k = draw(st.integers(1, rank))
    batch = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    index_dtype = draw(st.sampled_from([np.int32, np.int64, np.uint32, np.uint64]))
    return dtype, reduction, shape, k, batch, np.dtype(index_dtype), draw(st.integers(0, 2**32 - 1))


@given(nd_cases())
def test_property_scatter_nd(device, case):
    dtype, reduction, shape, k, batch, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype, reduction)
    dims = np.array(shape[:k])
    low = -dims if index_dtype.kind == "i" else 0                       # negative indices count from the end
    idx = rng.integers(low, dims, size=batch + (k,)).astype(index_dtype)
    upd = values(rng, batch + shape[k:], dtype, reduction)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction)
    assert same(out, reference.scatter_nd(data, idx, upd, reduction), loose_nan=False)


@st.composite
def elements_cases(draw):
    dtype = draw(st.sampled_from(ARITH_DTYPES))
    reduction = draw(st.sampled_from(REDUCTIONS))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    axis = draw(st.integers(-rank, rank - 1))
    idx_shape = tuple(draw(st.integers(1, n)) if d != axis % rank else draw(st.integers(1, 12))
                      for d, n in enumerate(shape))
    index_dtype = draw(st.sampled_from([np.int32, np.int64, np.uint32, np.uint64]))
    return dtype, reduction, shape, axis, idx_shape, np.dtype(index_dtype), draw(st.integers(0, 2**32 - 1))


@given(elements_cases())
def test_property_scatter_elements(device, case):
    dtype, reduction, shape, axis, idx_shape, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = values(rng, shape, dtype, reduction)
    dim = shape[axis]
    idx = rng.integers(-dim if index_dtype.kind == "i" else 0, dim, size=idx_shape).astype(index_dtype)
    upd = values(rng, idx_shape, dtype, reduction)
    out = dmlgpu.scatter_elements(data, idx, upd, axis=axis, device=device, reduction=reduction)
    assert same(out, reference.scatter_elements(data, idx, upd, axis, reduction), loose_nan=False)


@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_every_dtype_and_reduction(device, dtype, reduction):
    """Rows of a 3-D tensor (scatter_nd) and elements along a middle axis (scatter_elements), with
    negative and duplicate indices."""
    rng = np.random.default_rng(hash((str(dtype), reduction)) % 2**32)
    data = values(rng, (6, 3, 5), dtype, reduction)
    idx = rng.integers(-6, 6, size=(4, 5, 1))
    upd = values(rng, (4, 5, 3, 5), dtype, reduction)
    assert same(dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction),
                reference.scatter_nd(data, idx, upd, reduction), loose_nan=False)
    idx = rng.integers(-3, 3, size=(6, 7, 5))
    upd = values(rng, (6, 7, 5), dtype, reduction)
    assert same(dmlgpu.scatter_elements(data, idx, upd, axis=1, device=device, reduction=reduction),
                reference.scatter_elements(data, idx, upd, 1, reduction), loose_nan=False)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int64, np.uint16] + NARROW_DTYPES,
                         ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_heavy_duplicates(device, dtype, reduction):
    """10,000 updates onto 10 targets: the order of combination is row-major, on every run."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(7)
    data = values(rng, (10,), dtype, reduction)
    idx = rng.integers(-10, 10, size=(10_000, 1))
    upd = values(rng, (10_000,), dtype, reduction)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction)
    assert same(out, reference.scatter_nd(data, idx, upd, reduction), loose_nan=False)
    again = dmlgpu.scatter_elements(data, idx[:, 0], upd, device=device, reduction=reduction)
    assert same(again, out, loose_nan=False)


def test_heavy_duplicates_slices(device):
    """5,000 update rows of 64 elements onto 3 slices, float32 add: one thread per slice element."""
    rng = np.random.default_rng(3)
    data = rng.standard_normal((3, 64)).astype(np.float32)
    idx = rng.integers(0, 3, size=(5000, 1))
    upd = rng.standard_normal((5000, 64)).astype(np.float32)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction="add")
    expected = data.copy()
    for i, row in zip(idx[:, 0], upd):   # the sequential order, vectorised over the row
        expected[i] = expected[i] + row
    assert same(out, expected, loose_nan=False)


def test_clamped_indices(device):
    """Out-of-range indices clamp (mode="clamp"), and take part in the reduction at the clamped target."""
    data = np.zeros(4, dtype=np.int32)
    idx = np.array([[-100], [100], [3], [-1], [0]])
    upd = np.array([1, 10, 100, 1000, 10000], dtype=np.int32)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction="add")
    assert out.tolist() == [10001, 0, 0, 1110]
    assert same(out, reference.scatter_nd(data, idx, upd, "add"))


def test_raise_mode(device):
    data = np.zeros(4, dtype=np.float32)
    with pytest.raises(IndexError, match="index 4"):
        dmlgpu.scatter_nd(data, [[1], [4]], np.ones(2, np.float32), device=device, mode="raise", reduction="add")
    out = dmlgpu.scatter_elements(data, [-4, 3, -4], np.ones(3, np.float32), device=device, mode="raise",
                                  reduction="add")
    assert out.tolist() == [2, 0, 0, 1]


# ---- Arithmetic, bit for bit ----

def _random_f64_bits(rng, n):
    sign = rng.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(63)
    frac = rng.integers(0, 2**52, size=n, dtype=np.uint64)
    parts = [
        rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True),          # any bits (NaNs too)
        sign | frac,                                                                  # subnormals, zeros
        sign | (rng.integers(0, 2047, size=n, dtype=np.uint64) << np.uint64(52)) | frac,   # finite
        sign | (rng.integers(1000, 1050, size=n, dtype=np.uint64) << np.uint64(52)) | frac,
        rng.choice(np.array([0, 2**63, 0x7FF0000000000000, 0xFFF0000000000000, 1, 2**63 + 1,
                             0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000,
                             0xBFF0000000000000, 0x8010000000000000], dtype=np.uint64), size=n),
    ]
    return np.concatenate(parts)


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_float64_bit_exact(device, reduction):
    """Software binary64 against NumPy (the host's IEEE arithmetic): rounding, subnormals, overflow,
    infinities, signed zeros, cancellation, products near under- and overflow. When both operands are NaN,
    which payload survives is the platform's choice: any NaN matches there."""
    rng = np.random.default_rng(11)
    a, b = _random_f64_bits(rng, 20_000), _random_f64_bits(rng, 20_000)
    b = b[rng.permutation(b.size)]
    q = a.size // 4
    b[:q] = (a[:q] ^ np.uint64(2**63)) + rng.integers(-2, 3, size=q).astype(np.uint64)   # near-cancellation
    ea = rng.integers(1, 2047, size=q, dtype=np.uint64)
    eb = (np.uint64(1024 + 2047) - ea + rng.integers(-60, 60, size=q).astype(np.uint64)) % np.uint64(2047)
    a[q:2 * q] = (ea << np.uint64(52)) | rng.integers(0, 2**52, size=q, dtype=np.uint64)
    b[q:2 * q] = (eb << np.uint64(52)) | rng.integers(0, 2**52, size=q, dtype=np.uint64)
    x, y = a.view(np.float64), b.view(np.float64)
    out = dmlgpu.scatter_elements(x, np.arange(x.size), y, device=device, reduction=reduction)
    with np.errstate(all="ignore"):
        expected = x + y if reduction == "add" else x * y
    both_nan = np.isnan(x) & np.isnan(y)
    assert same(out[~both_nan], expected[~both_nan], loose_nan=False)
    assert np.isnan(out[both_nan]).all()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_float16_bit_exact(device, reduction):
    """float16 through float32 against NumPy on random bit patterns (subnormals, infinities, NaNs)."""
    rng = np.random.default_rng(12)
    a = rng.integers(0, 2**16, size=100_000, dtype=np.uint16)
    b = rng.integers(0, 2**16, size=100_000, dtype=np.uint16)
    b[:20_000] = (a[:20_000] ^ np.uint16(0x8000)) + rng.integers(-2, 3, size=20_000).astype(np.uint16)
    a[20_000:40_000] &= np.uint16(0x83FF)
    x, y = a.view(np.float16), b.view(np.float16)
    out = dmlgpu.scatter_elements(x, np.arange(x.size), y, device=device, reduction=reduction)
    with np.errstate(all="ignore"):
        expected = {"add": x + y, "mul": x * y}.get(reduction)
    if expected is None:
        expected = reference.combine(reduction, x, y)
    both_nan = np.isnan(x) & np.isnan(y)
    assert same(out[~both_nan], expected[~both_nan], loose_nan=False)
    assert np.isnan(out[both_nan]).all()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_float32_normal_values(device, reduction):
    rng = np.random.default_rng(13)
    x = (rng.standard_normal(50_000) * 10.0 ** rng.integers(-15, 15, size=50_000)).astype(np.float32)
    y = (rng.standard_normal(50_000) * 10.0 ** rng.integers(-15, 15, size=50_000)).astype(np.float32)
    x[:100], y[:100] = np.inf, -np.inf         # inf - inf: NaN
    x[100:200], y[100:200] = -0.0, 0.0
    out = dmlgpu.scatter_elements(x, np.arange(x.size), y, device=device, reduction=reduction)
    with np.errstate(all="ignore"):
        expected = {"add": x + y, "mul": x * y}.get(reduction)
    if expected is None:
        expected = reference.combine(reduction, x, y)
    assert same(out, expected)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e5m2],
                         ids=str)
def test_min_max_nan_and_signed_zero(device, dtype):
    dtype = np.dtype(dtype)
    nan = np.array(np.nan, dtype)
    data = np.array([1, np.nan, 0.0, -0.0, 0.0, 5], dtype=dtype)
    idx = np.array([0, 1, 2, 3, 4, 5, 0])
    upd = np.array([np.nan, 2, -0.0, 0.0, 0.0, -np.inf, 3], dtype=dtype)
    mn = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="min")
    mx = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="max")
    assert np.isnan(mn[0]) and np.isnan(mx[0]) and np.isnan(mn[1]) and np.isnan(mx[1])  # NaN propagates
    assert np.signbit(mn[2]) and np.signbit(mn[3]) and not np.signbit(mx[2]) and not np.signbit(mx[3])
    assert not np.signbit(mn[4]) and mn[5] == -np.inf and mx[5] == 5
    assert same(mn, reference.scatter_elements(data, idx, upd, 0, "min"), loose_nan=False)
    assert same(mx, reference.scatter_elements(data, idx, upd, 0, "max"), loose_nan=False)
    del nan


# ---- bfloat16 and float8 (ml_dtypes), bit for bit against ml_dtypes' own arithmetic ----

def _bits(dtype, values):
    return np.asarray(values, UINT[np.dtype(dtype).itemsize]).view(dtype)


def _ml_dtypes_op(reduction, x, y):
    """ml_dtypes' elementwise result (its ufuncs: float32 arithmetic, one rounding) or dmlgpu's min/max."""
    with np.errstate(all="ignore"):
        if reduction == "add":
            return np.asarray(x + y, x.dtype)
        if reduction == "mul":
            return np.asarray(x * y, x.dtype)
    return reference.combine(reduction, x, y)


@pytest.mark.parametrize("dtype", NARROW_DTYPES[1:], ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_float8_every_pair(device, dtype, reduction):
    """All 65,536 pairs of float8 values (NaNs, infinities, zeros, subnormals, overflow) against ml_dtypes."""
    a = np.repeat(np.arange(256), 256).astype(np.uint8)
    b = np.tile(np.arange(256), 256).astype(np.uint8)
    x, y = a.view(dtype), b.view(dtype)
    out = dmlgpu.scatter_elements(x, np.arange(x.size), y, device=device, reduction=reduction)
    assert same(out, _ml_dtypes_op(reduction, x, y), loose_nan=False)


def _bfloat16_pairs(rng, n):
    """bfloat16 operand bits: random ones, subnormals and zeros, near-cancellation, products near the
    subnormal range and near overflow, every kind of NaN and infinity against every kind of value."""
    a = rng.integers(0, 2**16, size=n, dtype=np.uint16)
    b = rng.integers(0, 2**16, size=n, dtype=np.uint16)
    q = n // 6
    a[:q] &= np.uint16(0x80FF)                                        # subnormals, zeros, tiny normals
    b[:q // 2] &= np.uint16(0x80FF)
    b[q:2 * q] = (a[q:2 * q] ^ np.uint16(0x8000)) + rng.integers(-3, 4, size=q).astype(np.uint16)
    ea = rng.integers(1, 255, size=q)                                 # exponents summing near -126 .. -140
    eb = np.clip(127 - 126 - ea + 127 + rng.integers(-16, 4, size=q), 1, 254)
    a[2 * q:3 * q] = (ea << 7) | rng.integers(0, 128, size=q) | (rng.integers(0, 2, size=q) << 15)
    b[2 * q:3 * q] = (eb << 7) | rng.integers(0, 128, size=q) | (rng.integers(0, 2, size=q) << 15)
    a[3 * q:4 * q] = (rng.integers(250, 255, size=q) << 7) | rng.integers(0, 128, size=q)   # near overflow
    b[3 * q:4 * q] = (rng.integers(125, 131, size=q) << 7) | rng.integers(0, 128, size=q) | \
        (rng.integers(0, 2, size=q) << 15)
    special = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80,
                        0xFF80, 0x7F81, 0xFF81, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF, 0x7FA5, 0xFFA5], np.uint16)
    sa, sb = np.repeat(special, special.size), np.tile(special, special.size)
    return np.concatenate([a, sa]), np.concatenate([b, sb])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bfloat16_bit_exact(device, reduction):
    """bfloat16 against ml_dtypes, NaN signs included; subnormal operands and results are computed without
    the device's float32 (which may flush them)."""
    a, b = _bfloat16_pairs(np.random.default_rng(21), 120_000)
    x, y = a.view(ml_dtypes.bfloat16), b.view(ml_dtypes.bfloat16)
    out = dmlgpu.scatter_elements(x, np.arange(x.size), y, device=device, reduction=reduction)
    assert same(out, _ml_dtypes_op(reduction, x, y), loose_nan=False)


@pytest.mark.parametrize("dtype", NARROW_DTYPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("targets", [1, 3, 15, 17, 255, 257])
def test_narrow_floats_sequential_runs(device, dtype, reduction, targets):
    """Runs of updates onto 1 and 2^k +- 1 targets (across the fold's chunks and the sort's passes) with
    NaNs, signed zeros, infinities and subnormals among them: the sequential ml_dtypes reference, step by
    step (np.asarray(a + b, dtype) in row-major order)."""
    rng = np.random.default_rng(targets * 7 + REDUCTIONS.index(reduction))
    n = 700
    bits = rng.integers(0, 2 ** (8 * dtype.itemsize), size=n + targets)
    if reduction in ("add", "mul"):          # mostly finite values near 1 so that runs stay interesting
        ones = np.asarray(rng.uniform(0.5, 2, size=n + targets) * rng.choice([-1, 1], size=n + targets), dtype)
        keep = rng.random(n + targets) < 0.9
        bits = np.where(keep, ones.view(UINT[dtype.itemsize]), bits)
    vals = _bits(dtype, bits.astype(UINT[dtype.itemsize]))
    data, upd = vals[:targets].copy(), vals[targets:]
    idx = rng.integers(0, targets, size=(n, 1))
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction)
    expected = data.copy()
    with np.errstate(all="ignore"):
        for t, u in zip(idx[:, 0], upd):
            expected[t] = _ml_dtypes_op(reduction, expected[t:t + 1], u.reshape(1))[0]
    assert same(out, expected, loose_nan=False)
    assert same(reference.scatter_nd(data, idx, upd, reduction), expected, loose_nan=False)


def test_narrow_float_kernels_named_in_the_table():
    for kind, (_, bits) in kernels.NARROW_FLOATS.items():
        for op in kernels.REDUCE_OPS:
            name = kernels.reduce_variant(kind, bits, op)
            names = [name, kernels.fold_variant(name, False, True)]
            if op in ("min", "max"):
                names += list(kernels.partials_variants(name, True))
            assert set(names) <= set(kernels.VARIANTS), names
        assert not kernels._has_partials(kernels.reduce_variant(kind, bits, "add"))


def test_tree_kernels_named_in_the_table():
    names = [kernels.reduce_variant(t[0], int(t[1:]), op) for t in ("f16", "f32", "f64") for op in ("add", "mul")]
    names += [kernels.reduce_variant(kind, bits, op) for kind, (_, bits) in kernels.NARROW_FLOATS.items()
              for op in ("add", "mul")]
    for name in names:
        for values in (False, True) if not name.startswith("scatter_reduce_f64") else (False,):
            for few in (False, True):
                assert set(kernels.tree_variants(name, values, few)) <= set(kernels.VARIANTS), name
    assert not any(kernels.has_tree(kernels.reduce_variant("f", 32, op)) for op in ("min", "max"))


def test_integer_wrapping(device):
    cases = [
        (np.int8, "add", [127], [1], [-128]),
        (np.uint8, "mul", [200], [3], [88]),
        (np.int16, "mul", [-32768], [-1], [-32768]),
        (np.uint32, "add", [2**32 - 1], [2], [1]),
        (np.int64, "add", [2**63 - 1], [1], [-2**63]),
        (np.uint64, "mul", [2**63 + 3], [6], [18]),
        (np.int64, "mul", [-3037000499], [3037000499], [-9223372030926249001]),
        (np.int64, "min", [-2**63 + 1], [-2**63], [-2**63]),
        (np.uint64, "max", [2**63 - 1], [2**63], [2**63]),
        (np.int32, "max", [-5], [-7], [-5]),
        (np.int8, "min", [1], [-1], [-1]),
    ]
    for dtype, reduction, data, upd, expected in cases:
        out = dmlgpu.scatter_elements(np.array(data, dtype), [0], np.array(upd, dtype), device=device,
                                      reduction=reduction)
        assert out.tolist() == expected, (dtype, reduction)


def test_int64_random_wraps_like_numpy(device):
    rng = np.random.default_rng(14)
    for dtype in (np.int64, np.uint64):
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, size=20_000, dtype=dtype, endpoint=True)
        y = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, size=20_000, dtype=dtype, endpoint=True)
        for reduction, expected in (("add", x + y), ("mul", x * y), ("min", np.minimum(x, y)),
                                    ("max", np.maximum(x, y))):
            out = dmlgpu.scatter_elements(x, np.arange(x.size), y, device=device, reduction=reduction)
            assert same(out, expected), (dtype, reduction)


def test_bool(device):
    data = np.array([False, False, True, True])
    idx = np.array([0, 1, 2, 3, 1, 2])
    upd = np.array([False, True, False, True, False, True])
    for reduction, expected in (("add", [0, 1, 1, 1]), ("max", [0, 1, 1, 1]), ("mul", [0, 0, 0, 1]),
                                ("min", [0, 0, 0, 1])):
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction)
        assert out.dtype == bool and out.astype(int).tolist() == expected, reduction


def test_sub_word_neighbours(device):
    """int8 targets share words: concurrent runs on neighbouring bytes lose nothing."""
    rng = np.random.default_rng(15)
    data = rng.integers(-128, 128, size=4099, dtype=np.int8)
    idx = rng.integers(0, data.size, size=40_000)
    upd = rng.integers(-128, 128, size=idx.size, dtype=np.int8)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="add")
    expected = data.copy()
    np.add.at(expected, idx, upd)                   # integer addition: order does not matter
    assert same(out, expected)


def test_non_native_byte_order(device):
    data = np.arange(6, dtype=">i4")
    out = dmlgpu.scatter_elements(data, [1, 1, 5], np.array([10, 20, 30], ">i4"), device=device, reduction="add")
    assert out.dtype == np.dtype(">i4") and out.tolist() == [0, 31, 2, 3, 4, 35]


# ---- Arguments ----

def test_reduction_none_is_plain_scatter(device):
    data = np.zeros(3, np.float32)
    out = dmlgpu.scatter_nd(data, [[1], [1]], np.array([1, 2], np.float32), device=device, reduction="none")
    assert out.tolist() == [0, 2, 0]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, "V8", "datetime64[s]"], ids=str)
def test_unsupported_dtypes(device, dtype):
    data = np.zeros(3, dtype)
    with pytest.raises(TypeError, match="reduction 'add' is not supported"):
        dmlgpu.scatter_nd(data, [[0]], np.zeros(1, dtype), device=device, reduction="add")
    with pytest.raises(TypeError, match="reduction 'max' is not supported"):
        dmlgpu.scatter_elements(data, [0], np.zeros(1, dtype), device=device, reduction="max")
    if data.dtype.kind != "M":   # plain scatter moves the bytes (datetime64: see the report)
        dmlgpu.scatter_elements(data, [0], np.zeros(1, dtype), device=device, reduction="none")


# ---- include_self=False and reduction="mean" (PyTorch's scatter_reduce) ----

FLOAT_DTYPES = [np.dtype(t) for t in (np.float16, np.float32, np.float64)] + NARROW_DTYPES


def test_include_self_and_mean_by_hand(device):
    data = np.array([10, 20, 30, 40], np.float32)
    idx = np.array([0, 0, 2, 0])
    upd = np.array([1, 2, 3, 6], np.float32)
    cases = {("add", False): [9, 20, 3, 40], ("max", False): [6, 20, 3, 40], ("min", True): [1, 20, 3, 40],
             ("mean", True): [19 / 4, 20, 33 / 2, 40], ("mean", False): [3, 20, 3, 40],
             ("mul", False): [12, 20, 3, 40]}
    for (reduction, include_self), expected in cases.items():
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction, include_self=include_self)
        assert same(out, np.array(expected, np.float32)), (reduction, include_self)
    out = dmlgpu.scatter_nd(data, [[1], [1]], np.array([5, 6], np.float32), device=device, reduction="none",
                            include_self=False)
    assert out.tolist() == [10, 6, 30, 40]


@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS + ("mean",))
def test_include_self_false_every_dtype(device, dtype, reduction):
    """Rows of a 3-D tensor and elements along a middle axis, duplicates, targets without updates (which
    keep their values): include_self=False against the sequential reference, and "mean" both ways."""
    if reduction == "mean" and dtype not in FLOAT_DTYPES:
        pytest.skip("mean takes float dtypes (tested in test_mean_rejects_integers)")
    rng = np.random.default_rng(zlib.crc32(f"{dtype} {reduction}".encode()))
    data = values(rng, (6, 3, 5), dtype, reduction)
    for include_self in ([False, True] if reduction == "mean" else [False]):
        idx = rng.integers(-6, 4, size=(4, 5, 1))
        upd = values(rng, (4, 5, 3, 5), dtype, reduction)
        out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction, include_self=include_self)
        assert same(out, reference.scatter_nd(data, idx, upd, reduction, include_self), loose_nan=False)
        idx = rng.integers(-3, 2, size=(6, 7, 5))
        upd = values(rng, (6, 7, 5), dtype, reduction)
        out = dmlgpu.scatter_elements(data, idx, upd, axis=1, device=device, reduction=reduction,
                                      include_self=include_self)
        assert same(out, reference.scatter_elements(data, idx, upd, 1, reduction, include_self), loose_nan=False)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32], ids=str)
@pytest.mark.parametrize("reduction", ["add", "min", "max"])
def test_include_self_false_skips_the_atomics(device, dtype, reduction):
    """32-bit integer add/min/max take the atomics with include_self (order-free), the sort without."""
    rng = np.random.default_rng(5)
    data = values(rng, (50,), np.dtype(dtype), reduction)
    idx = rng.integers(0, 40, size=3000)
    upd = values(rng, (3000,), np.dtype(dtype), reduction)
    for include_self in (True, False):
        out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction, include_self=include_self)
        assert same(out, reference.scatter_elements(data, idx, upd, 0, reduction, include_self))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("targets", [1, 3, 17, 257])
def test_mean_bit_exact(device, dtype, include_self, targets):
    """The sum in row-major order, then one division by the count rounded to nearest even (reference.mean_of:
    exact), over runs across chunks and sort passes; special sums (NaN, infinities, zeros, subnormals)."""
    rng = np.random.default_rng(zlib.crc32(f"{dtype} {include_self} {targets}".encode()))
    n = 600
    data = values(rng, (targets,), dtype, "mean")
    upd = values(rng, (n,), dtype, "mean")
    tiny = np.finfo(np.float32).tiny if dtype in (np.float32, np.float64) else 0
    if tiny:                                              # sums in the subnormal range
        upd[:n // 4] = (rng.integers(-50, 50, size=n // 4) * tiny / 64).astype(dtype)
    upd[rng.integers(0, n, size=3)] = np.asarray([np.inf, -np.inf, np.nan], dtype)
    idx = rng.integers(0, targets, size=n)
    idx[:n // 4] = idx[0]
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="mean", include_self=include_self)
    assert same(out, reference.scatter_elements(data, idx, upd, 0, "mean", include_self), loose_nan=False)


def test_mean_rounds_once(device):
    """1/3 and 2/3 of exact sums, ties to even, subnormal quotients: one rounding of the exact quotient."""
    data = np.array([0, 0, 0, 0, 0], np.float64)
    tiny = np.float64(5e-324)
    idx = np.array([0, 1, 1, 2, 2, 3, 4, 4, 4, 4])
    upd = np.array([1, 1, 1, 2**53, 3, 3 * tiny, 1, 1, 1, 2**-1074 * 3], np.float64)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction="mean", include_self=False)
    assert same(out, reference.scatter_elements(data, idx, upd, 0, "mean", False), loose_nan=False)
    assert out[1] == 1.0 and out[3] == 3 * tiny and out[0] == 1.0


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.int64], ids=str)
def test_mean_rejects_integers(device, dtype):
    data = np.zeros(3, dtype)
    with pytest.raises(TypeError, match="^scatter_nd: reduction 'mean' is not supported for dtype"):
        dmlgpu.scatter_nd(data, [[0]], np.zeros(1, dtype), device=device, reduction="mean")
    with pytest.raises(TypeError, match="^scatter_elements: reduction 'mean' is not supported for dtype"):
        dmlgpu.scatter_elements(data, [0], np.zeros(1, dtype), device=device, reduction="mean")


@pytest.mark.parametrize("include_self", ["no", 1, 0, None, np.array([True])], ids=str)
def test_bad_include_self(device, include_self):
    data = np.zeros(3, np.float32)
    for _ in range(2):     # a cached call of the same signature checks again
        dmlgpu.scatter_nd(data, [[0]], np.ones(1, np.float32), device=device, reduction="add", include_self=True)
        with pytest.raises(TypeError, match="^scatter_nd: include_self must be True or False"):
            dmlgpu.scatter_nd(data, [[0]], np.ones(1, np.float32), device=device, reduction="add",
                              include_self=include_self)
        with pytest.raises(TypeError, match="^scatter_elements: include_self must be True or False"):
            dmlgpu.scatter_elements(data, [0], np.ones(1, np.float32), device=device, reduction="add",
                                    include_self=include_self)


def test_include_self_keys_the_cached_plans_and_templates(device):
    """Calls that differ only in include_self or mean get their own plans and call templates."""
    data = dmlgpu.tensor(np.array([1, 1], np.float32), device=device)
    idx = dmlgpu.tensor(np.array([0, 0, 1]), device=device)
    idx_nd = dmlgpu.tensor(np.array([[0], [0], [1]]), device=device)
    upd = dmlgpu.tensor(np.array([2, 4, 8], np.float32), device=device)
    for _ in range(3):      # planned, then through the call templates
        for reduction, include_self, expected in (("add", True, [7, 9]), ("add", False, [6, 8]),
                                                  ("mean", True, [7 / 3, 4.5]), ("mean", False, [3, 8])):
            want = np.array(expected, np.float32)
            got = dmlgpu.scatter_elements(data, idx, upd, reduction=reduction, include_self=include_self)
            assert same(got.numpy(), want), (reduction, include_self)
            got = dmlgpu.scatter_nd(data, idx_nd, upd, reduction=reduction, include_self=include_self)
            assert same(got.numpy(), want), (reduction, include_self)


# ---- order="tree" ----

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["add", "mul", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_tree_order_bit_exact(device, dtype, reduction, include_self):
    """Runs of every length from 1 to 40 and some longer ones (powers of two and their neighbours), their
    rows interleaved in row-major order, targets without updates: the pairwise tree of reference.tree, for
    elements (scatter_elements) and rows of 3 (scatter_nd)."""
    rng = np.random.default_rng(zlib.crc32(f"tree {dtype} {reduction} {include_self}".encode()))
    lengths = list(range(1, 41)) + [63, 64, 65, 127, 128, 130, 257]
    idx = np.repeat(np.arange(len(lengths)), lengths)
    rng.shuffle(idx)
    m = len(lengths) + 3
    data = values(rng, (m,), dtype, reduction)
    upd = values(rng, (idx.size,), dtype, reduction)
    upd[rng.integers(0, idx.size, size=4)] = np.asarray([np.inf, -np.inf, np.nan, -0.0], dtype)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction, include_self=include_self,
                                  order="tree")
    expected = reference.scatter_elements(data, idx, upd, 0, reduction, include_self, "tree")
    assert same(out, expected, loose_nan=False)
    table = values(rng, (m, 3), dtype, reduction)
    rows = values(rng, (idx.size, 3), dtype, reduction)
    out = dmlgpu.scatter_nd(table, idx[:, None], rows, device=device, reduction=reduction, include_self=include_self,
                            order="tree")
    assert same(out, reference.scatter_nd(table, idx[:, None], rows, reduction, include_self, "tree"), loose_nan=False)


def test_tree_order_by_hand(device):
    """float32 sums of [1e8, 1, -1e8, 1] onto 0: one by one 1e8 + 1 rounds to 1e8, so ((1e8 + 1) - 1e8) + 1 = 1;
    the tree gives (1e8 + 1) + (-1e8 + 1) = 1e8 - 1e8 = 0. Five updates: ((u0 + u1) + (u2 + u3)) + u4."""
    upd = np.array([1e8, 1, -1e8, 1], np.float32)
    zero = np.zeros(1, np.float32)
    seq = dmlgpu.scatter_elements(zero, [0, 0, 0, 0], upd, device=device, reduction="add")
    tree = dmlgpu.scatter_elements(zero, [0, 0, 0, 0], upd, device=device, reduction="add", order="tree")
    assert seq.tolist() == [1.0] and tree.tolist() == [0.0]
    five = np.array([3, 5, 7, 11, 13], np.float32)
    got = dmlgpu.scatter_elements(np.ones(1, np.float32), [0] * 5, five, device=device, reduction="mul",
                                  order="tree", include_self=False)
    assert got.tolist() == [3 * 5 * 7 * 11 * 13]
    assert reference.tree("add", [np.float32(x) for x in five]) == 39


@pytest.mark.parametrize("dtype, reduction", [(np.int32, "add"), (np.float32, "min"), (np.int64, "mul"),
                                              (np.bool_, "max")], ids=str)
def test_tree_order_of_order_free_reductions(device, dtype, reduction):
    """Integer add/mul and min/max give the same bits in any grouping: order="tree" is the sequential result."""
    rng = np.random.default_rng(9)
    data = values(rng, (7,), np.dtype(dtype), reduction)
    idx = rng.integers(0, 5, size=300)
    upd = values(rng, (300,), np.dtype(dtype), reduction)
    out = dmlgpu.scatter_elements(data, idx, upd, device=device, reduction=reduction, order="tree")
    assert same(out, reference.scatter_elements(data, idx, upd, 0, reduction), loose_nan=False)


@pytest.mark.parametrize("order", ["Tree", "pairwise", None, 1])
def test_bad_order(device, order):
    with pytest.raises(ValueError, match="^scatter_nd: order must be one of 'row-major', 'tree'"):
        dmlgpu.scatter_nd(np.zeros(3), [[0]], np.zeros(1), device=device, reduction="add", order=order)
    with pytest.raises(ValueError, match="^scatter_elements: order must be one of 'row-major', 'tree'"):
        dmlgpu.scatter_elements(np.zeros(3), [0], np.zeros(1), device=device, reduction="add", order=order)


@pytest.mark.parametrize("reduction", ["avg", "ADD", "Sum", None, 1])
def test_bad_reduction(device, reduction):
    with pytest.raises(ValueError, match="reduction must be one of"):
        dmlgpu.scatter_nd(np.zeros(3), [[0]], np.zeros(1), device=device, reduction=reduction)
    with pytest.raises(ValueError, match="reduction must be one of"):
        dmlgpu.scatter_elements(np.zeros(3), [0], np.zeros(1), device=device, reduction=reduction)


def test_empty(device):
    data = np.ones(3, np.float32)
    out = dmlgpu.scatter_nd(data, np.zeros((0, 1), np.int64), np.zeros(0, np.float32), device=device,
                            reduction="mul")
    assert same(out, data)


def test_tensors_and_recording(device):
    data = np.arange(5, dtype=np.float32)
    idx = np.array([[1], [1], [4]])
    upd = np.array([1, 2, 3], np.float32)
    expected = reference.scatter_nd(data, idx, upd, "add")
    t = dmlgpu.scatter_nd(dmlgpu.tensor(data, device=device), dmlgpu.tensor(idx, device=device),
                          dmlgpu.tensor(upd, device=device), reduction="add")
    assert isinstance(t, dmlgpu.Tensor) and same(t.numpy(), expected)
    with device.record():
        r = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction="add")
    assert same(r.numpy(), expected)
    idx_t = dmlgpu.tensor(idx, device=device)
    with device.record():   # the grouping runs on the GPU: Tensor indices can be recorded
        r = dmlgpu.scatter_nd(data, idx_t, upd, device=device, reduction="add")
    assert same(r.numpy(), expected)


# ---- Layer 1 ----

def _buf(device, arr, nbytes=None):
    return device.buffer(np.ascontiguousarray(arr), nbytes=nbytes)


@pytest.mark.parametrize("in_place", [False, True])
def test_layer1_scatter_nd(device, in_place):
    data = np.arange(1, 9, dtype=np.float32)
    idx = np.array([[4], [3], [1], [7], [1]], dtype=np.uint32)
    upd = np.array([9, 10, 11, 12, 2], dtype=np.float32)
    f, u = DataType.FLOAT32, DataType.UINT32
    desc = dmlgpu.ScatterNDDesc(TensorDesc(f, [1, 8]), TensorDesc(u, [5, 1]), TensorDesc(f, [1, 5]),
                                TensorDesc(f, [1, 8]), 1, 2, reduction="mul")
    op = device.compile(desc)
    b_in = _buf(device, data)
    b_out = b_in if in_place else device.buffer(nbytes=32)
    op.execute(input=b_in, indices=_buf(device, idx), updates=_buf(device, upd), output=b_out)
    out = b_out.read().view(np.float32)
    assert same(out, reference.scatter_nd(data, idx, upd, "mul"))


def test_layer1_scatter_elements_strided_output(device):
    """A padded output (strides {12, 2}): only its elements change; the copy from input is strided."""
    rng = np.random.default_rng(16)
    data = rng.integers(-50, 50, size=(2, 5)).astype(np.int16)
    idx = np.array([[4, 0, 4], [-1, -1, 2]], dtype=np.int32)
    upd = rng.integers(-50, 50, size=(2, 3)).astype(np.int16)
    i16, i32 = DataType.INT16, DataType.INT32
    out_desc = TensorDesc(i16, [2, 5], strides=[12, 2])
    desc = dmlgpu.ScatterElementsDesc(TensorDesc(i16, [2, 5]), TensorDesc(i32, [2, 3]), TensorDesc(i16, [2, 3]),
                                      out_desc, axis=1, reduction="max")
    op = device.compile(desc)
    sentinel = np.full(out_desc.total_size_in_bytes // 2, 0x7777, dtype=np.int16)
    b_out = _buf(device, sentinel)
    op.execute(input=_buf(device, data), indices=_buf(device, idx), updates=_buf(device, upd), output=b_out)
    raw = b_out.read().view(np.int16)
    got = np.lib.stride_tricks.as_strided(raw, shape=(2, 5), strides=(24, 4))
    assert same(got.copy(), reference.scatter_elements(data, idx, upd, 1, "max"))
    mask = np.ones(raw.size, bool)
    mask[(np.arange(2)[:, None] * 12 + np.arange(5) * 2).ravel()] = False
    assert (raw[mask] == 0x7777).all()


@pytest.mark.parametrize("reduction", ["sum", None, "Add", "mean"])
def test_layer1_bad_reduction(device, reduction):
    f, u = DataType.FLOAT32, DataType.UINT32
    nd = dmlgpu.ScatterNDDesc(TensorDesc(f, [1, 8]), TensorDesc(u, [5, 1]), TensorDesc(f, [1, 5]),
                              TensorDesc(f, [1, 8]), 1, 2, reduction=reduction)
    el = dmlgpu.ScatterElementsDesc(TensorDesc(f, [1, 8]), TensorDesc(u, [1, 3]), TensorDesc(f, [1, 3]),
                                    TensorDesc(f, [1, 8]), 1, reduction)
    for desc in (nd, el):
        with pytest.raises(DescError, match="Reduction"):
            device.compile(desc)


def test_layer1_default_is_none(device):
    f, u = DataType.FLOAT32, DataType.UINT32
    desc = dmlgpu.ScatterElementsDesc(TensorDesc(f, [1, 4]), TensorDesc(u, [1, 2]), TensorDesc(f, [1, 2]),
                                      TensorDesc(f, [1, 4]), 1)
    assert desc.reduction == "none"
    op = device.compile(desc)
    b = _buf(device, np.zeros(4, np.float32))
    op.execute(input=b, indices=_buf(device, np.array([2, 2], np.uint32)),
               updates=_buf(device, np.array([1, 2], np.float32)), output=b)
    assert b.read().view(np.float32).tolist() == [0, 0, 2, 0]
