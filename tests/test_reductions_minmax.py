"""Scatter reductions min and max by 64-bit atomics (dmlgpu/plans/reduction.py, step 7; shaders/scatter_minmax.comp):
every element type of at most 4 bytes, bit for bit against the sequential reference, with the cases where the
order of the updates could show: NaNs with distinct payloads and signs (the first one in row-major order wins,
the output's own first), signed zeros, include_self=False, rows of several elements, negative and clamped
indices; and where the step does not apply (a sparse output, no 64-bit atomics), the other plans."""
import zlib

import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu import reference

from test_reductions import same
from test_reductions_cpu import kernels_of

DTYPES = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float16,
                                np.float32, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                                bool)]


def tricky(rng, shape, dtype):
    """Random values with NaNs of random payloads and signs, +-0 and repeated values (floats), or the whole
    range (integers, bool)."""
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    v = rng.choice([-2.0, -1.0, -0.0, 0.0, 0.5, 3.0, np.inf, -np.inf], size=shape).astype(dtype)
    bits = v.view(f"u{dtype.itemsize}").copy()
    width = 8 * dtype.itemsize
    nan = rng.random(shape) < 0.1
    exp_mant = reference_nan_bits(dtype)
    payload = rng.integers(1, 1 << min(width - 1, 30), size=shape).astype(bits.dtype) & exp_mant[1]
    sign = rng.integers(0, 2, size=shape).astype(bits.dtype) << (width - 1)
    bits[nan] = (exp_mant[0] | payload | sign)[nan]
    out = bits.view(dtype)
    assert np.isnan(out.astype(np.float32)[nan]).all()
    return out


def reference_nan_bits(dtype):
    """(exponent bits all set, fraction mask) of a float dtype's NaNs (float8_e4m3fn: its one NaN fraction)."""
    name = dtype.name
    if name == "float8_e4m3fn":
        return np.uint8(0x7F), np.uint8(0)        # S.1111.111: no payloads
    info = ml_dtypes.finfo(dtype) if name in ("bfloat16", "float8_e5m2") else np.finfo(dtype)
    mant = int(info.nmant)
    width = 8 * dtype.itemsize
    exp_all = ((1 << (width - 1 - mant)) - 1) << mant
    t = np.dtype(f"u{dtype.itemsize}").type
    return t(exp_all | (1 << (mant - 1))), t((1 << mant) - 1)   # quiet NaNs with payloads


def has_int64_atomics(device):
    return {"shaderInt64", "shaderBufferInt64Atomics"} <= device.features


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_nans_zeros_and_include_self(device, dtype):
    if not has_int64_atomics(device):
        pytest.skip("the device has no 64-bit atomics")
    rng = np.random.default_rng(zlib.crc32(str(dtype).encode()))
    for red in ("min", "max"):
        for include_self in (True, False):
            for m, n in ((1, 5), (63, 700), (1000, 300), (4097, 5000)):
                data, upd = tricky(rng, (m,), dtype), tricky(rng, (n,), dtype)
                idx = rng.integers(-m - 3, m + 3, size=n)        # negative, and clamped past either end
                names, out = kernels_of(device, dmlgpu.scatter_elements, data, idx, upd, reduction=red,
                                        include_self=include_self)
                expected = reference.scatter_elements(data, idx, upd, reduction=red, include_self=include_self)
                assert same(out, expected, loose_nan=False), (red, include_self, m, n)
                int32_atomics = dtype.itemsize == 4 and dtype.kind in "iu" and include_self
                assert any("scatter_minmax" in k for k in names) != int32_atomics, names
                table, rows = tricky(rng, (m, 3), dtype), tricky(rng, (n, 3), dtype)
                nd_idx = rng.integers(-m, m, size=(n, 1))
                names, out = kernels_of(device, dmlgpu.scatter_nd, table, nd_idx, rows, reduction=red,
                                        include_self=include_self)
                expected = reference.scatter_nd(table, nd_idx, rows, red, include_self)
                assert same(out, expected, loose_nan=False), ("nd", red, include_self, m, n)
                assert any("scatter_minmax" in k for k in names) != int32_atomics, names


def test_all_onto_one_target_first_nan_wins(device):
    """20,000 updates onto one target: the first NaN in row-major order wins over later NaNs and every value."""
    if not has_int64_atomics(device):
        pytest.skip("the device has no 64-bit atomics")
    rng = np.random.default_rng(5)
    upd = rng.standard_normal(20_000).astype(np.float32)
    nans = np.array([0x7FC00001, 0xFFC00002, 0x7F800003], dtype=np.uint32).view(np.float32)
    upd[[7000, 9000, 15000]] = nans
    data = np.zeros(4, np.float32)
    idx = np.full(upd.size, 2)
    for red in ("min", "max"):
        names, out = kernels_of(device, dmlgpu.scatter_elements, data, idx, upd, reduction=red)
        assert any("scatter_minmax" in k for k in names)
        assert out.view(np.uint32)[2] == 0x7FC00001 and not out[[0, 1, 3]].any()
        nan_data = data.copy()
        nan_data[2] = np.array([0xFF800005], np.uint32).view(np.float32)[0]   # the output's own NaN first
        _, out = kernels_of(device, dmlgpu.scatter_elements, nan_data, idx, upd, reduction=red)
        assert out.view(np.uint32)[2] == 0xFF800005


def test_sparse_outputs_and_missing_features_take_the_other_plans(device):
    """A few updates into a large output (its span past reduction_minmax.SPAN times the updates) and a device without
    64-bit atomics or subgroup arithmetic take the sort (or CPU devices' fold): the same bits."""
    rng = np.random.default_rng(6)
    data = rng.standard_normal(10_000).astype(np.float32)
    idx = rng.integers(0, data.size, size=100)
    upd = rng.standard_normal(100).astype(np.float32)
    expected = reference.scatter_elements(data, idx, upd, reduction="max")
    names, out = kernels_of(device, dmlgpu.scatter_elements, data, idx, upd, reduction="max")
    assert same(out, expected, loose_nan=False) and not any("scatter_minmax" in k for k in names)
    idx = rng.integers(0, data.size, size=50_000)
    upd = rng.standard_normal(50_000).astype(np.float32)
    for profile in ("no-int64", "subgroupSupportedOperations=1"):      # no 64-bit atomics; no subgroup min
        with dmlgpu.Device(profile=profile) as narrow:
            names, out = kernels_of(narrow, dmlgpu.scatter_elements, data, idx, upd, reduction="min")
            assert same(out, reference.scatter_elements(data, idx, upd, reduction="min"), loose_nan=False)
            assert not any("scatter_minmax" in k for k in names), profile
