"""order="fixed-point" (dmlgpu/plans/reduction_fixed.py, shaders/scatter_fixed.comp): "add" and "mean" of float32,
float16, bfloat16 and float8 against reference.fixed_sum bit for bit (NaN bits included), on both kernel families
(64-bit atomics and the FEW variants of 32-bit words, forced with reduction_fixed.INT64 and by device profiles),
with include_self, in place, empty and one-update targets, zeros, signed zeros, infinities, NaN, subnormals,
exponents across the type's range, random and Zipf-skewed keys; the reference's own rules; the refusals."""
import hashlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu
from dmlgpu.plans import reduction_fixed
from dmlgpu import reference
from dmlgpu.runtime import COPY

from test_reductions_cpu import kernels_of

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                ml_dtypes.float8_e5m2)]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def bits(a):
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize])


def assert_bits(out, expected):
    out, expected = np.asarray(out), np.asarray(expected)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    bad = np.flatnonzero(bits(out) != bits(expected))
    assert bad.size == 0, (bad[:5], out.reshape(-1)[bad[:5]], expected.reshape(-1)[bad[:5]])


def tricky(rng, shape, dtype, span=True):
    """Values of every kind: random bit patterns over the whole exponent range (subnormals, the largest finite
    values, infinities and NaNs of any payload), a few +-0, and small values of one scale (cancellations)."""
    n = int(np.prod(shape))
    raw = rng.integers(0, 1 << (8 * dtype.itemsize), size=n, dtype=np.uint64).astype(UINT[dtype.itemsize])
    out = raw.view(dtype).copy() if span else np.zeros(n, dtype)
    pick = rng.random(n)
    small = rng.choice([-3.0, -1.0, -0.5, 0.25, 1.0, 2.0, 3.0], size=n).astype(dtype)
    out[pick < 0.5] = small[pick < 0.5]
    out[(pick >= 0.5) & (pick < 0.6)] = np.array(-0.0, dtype)
    out[(pick >= 0.6) & (pick < 0.65)] = np.array(0.0, dtype)
    if not span:
        out[pick >= 0.65] = small[pick >= 0.65]
    return out.reshape(shape)


def finite(rng, shape, dtype):
    """Finite values only (random bit patterns, the non-finite ones replaced by small values)."""
    v = tricky(rng, shape, dtype)
    bad = ~np.isfinite(v.astype(np.float32))
    v[bad] = np.array(1.5, dtype)
    return v


def runs_int64(device):
    """Whether ``device`` runs the 64-bit atomics' variants (64-bit atomics, subgroup arithmetic, 6 buffers)."""
    return all(map(device.runtime.supports, dmlgpu.kernels.table.fixed_variants("scatter_reduce_f32_add", 4)[1:]))


@pytest.fixture(params=["int64", "words"])
def family(request, monkeypatch, device):
    """Runs a test on both kernel families: the 64-bit atomics (where the device runs them) and the FEW ones."""
    if request.param == "words":
        monkeypatch.setattr(reduction_fixed, "INT64", False)
    elif not runs_int64(device):
        pytest.skip("no 64-bit atomics, subgroup arithmetic or 6 storage buffers on this device (profile)")
    return request.param


def run_elements(device, data, idx, upd, **kw):
    names, out = kernels_of(device, dmlgpu.scatter_elements, data, idx, upd, order="fixed-point", **kw)
    fixed = [n for n in names if n.startswith("scatter_fixed_")]
    assert fixed and all(n.startswith(("scatter_fixed_", "scatter_copy", "gather", COPY)) for n in names), names
    return fixed, out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["add", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_elements_against_reference(device, family, dtype, reduction, include_self):
    rng = np.random.default_rng(hash((dtype.name, reduction, include_self)) & 0xFFFF)
    data = tricky(rng, (37,), dtype)
    idx = rng.integers(-37, 37, size=300)          # negative indices wrap
    idx[:40] = rng.integers(0, 5, size=40)          # a few hot targets
    upd = tricky(rng, (300,), dtype)
    fixed, out = run_elements(device, data, idx, upd, reduction=reduction, include_self=include_self)
    assert len(fixed) == (3 if family == "int64" else 3 + include_self), fixed
    assert_bits(out, reference.scatter_elements(data, idx, upd, reduction=reduction, include_self=include_self,
                                                order="fixed-point"))


@pytest.mark.parametrize("dtype", DTYPES[:3], ids=str)
@pytest.mark.parametrize("reduction", ["add", "mean"])
def test_nd_rows_against_reference(device, family, dtype, reduction):
    """scatter_nd of rows of 5 elements (and of 2-d slices), duplicates, in both index widths."""
    rng = np.random.default_rng(7)
    data = tricky(rng, (9, 5), dtype)
    for index_dtype in (np.int32, np.int64):
        idx = rng.integers(0, 9, size=(60, 1)).astype(index_dtype)
        upd = tricky(rng, (60, 5), dtype)
        for include_self in (True, False):
            _, out = kernels_of(device, dmlgpu.scatter_nd, data, idx, upd, reduction=reduction,
                                include_self=include_self, order="fixed-point")
            assert_bits(out, reference.scatter_nd(data, idx, upd, reduction=reduction, include_self=include_self,
                                                  order="fixed-point"))
    data3 = tricky(rng, (4, 3, 2), dtype)
    idx = rng.integers(0, 4, size=(7, 2, 1))
    upd = tricky(rng, (7, 2, 3, 2), dtype)
    out = dmlgpu.scatter_nd(data3, idx, upd, reduction=reduction, order="fixed-point", device=device)
    assert_bits(out, reference.scatter_nd(data3, idx, upd, reduction=reduction, order="fixed-point"))


@pytest.mark.parametrize("dtype", DTYPES[:3], ids=str)
def test_in_place_and_copy_agree(device, family, dtype):
    """out=data (a Tensor updated in place) gives the copying call's bits; so does a NumPy call."""
    rng = np.random.default_rng(3)
    data = finite(rng, (50, 4), dtype)
    idx = rng.integers(0, 50, size=(200, 1))
    upd = finite(rng, (200, 4), dtype)
    expected = reference.scatter_nd(data, idx, upd, reduction="add", order="fixed-point")
    t = dmlgpu.tensor(data, device=device)
    assert dmlgpu.scatter_nd(t, dmlgpu.tensor(idx, device=device), dmlgpu.tensor(upd, device=device),
                             reduction="add", order="fixed-point", out=t) is t
    assert_bits(t.numpy(), expected)
    assert_bits(dmlgpu.scatter_nd(data, idx, upd, reduction="add", order="fixed-point", device=device), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_families_agree_on_random_and_zipf_keys(device, monkeypatch, dtype):
    """The 64-bit atomics and the FEW words give the same bits (and the reference's): uniform keys, Zipf-skewed
    ones (most updates on a few targets), sorted ones and a single target (whole subgroups combine their updates
    before one atomic: COMBINE), finite values of one scale and of every exponent."""
    rng = np.random.default_rng(11)
    n, targets = 4000, 300
    results = []
    zipf = np.minimum(rng.zipf(1.3, size=n) - 1, targets - 1)
    for keys in (rng.integers(0, targets, size=n), zipf, np.sort(zipf), np.full(n, 7)):
        for span in (False, True):
            data = finite(rng, (targets,), dtype) if span else tricky(rng, (targets,), dtype, span=False)
            upd = finite(rng, (n,), dtype) if span else tricky(rng, (n,), dtype, span=False)
            expected = reference.scatter_elements(data, keys, upd, reduction="add", order="fixed-point")
            for int64 in (True, False):
                if int64 and not runs_int64(device):
                    continue
                monkeypatch.setattr(reduction_fixed, "INT64", int64)
                out = dmlgpu.scatter_elements(data, keys, upd, reduction="add", order="fixed-point", device=device)
                assert_bits(out, expected)
                results.append(out)


@pytest.mark.parametrize("profile", ["no-int64", "minimum", "few-buffers", "subgroupSupportedOperations=1"])
def test_profiles_without_int64_atomics(profile):
    """Devices without 64-bit atomics, with 4 storage buffers, or without subgroup arithmetic run the FEW
    variants: the same bits."""
    rng = np.random.default_rng(5)
    data, upd = tricky(rng, (64,), np.dtype(np.float32)), tricky(rng, (500,), np.dtype(np.float32))
    idx = rng.integers(0, 64, size=500)
    with dmlgpu.Device(profile=profile) as narrow:
        for reduction in ("add", "mean"):
            for include_self in (True, False):
                names, out = kernels_of(narrow, dmlgpu.scatter_elements, data, idx, upd, reduction=reduction,
                                        include_self=include_self, order="fixed-point")
                assert all(n.endswith("_few") for n in names if n.startswith("scatter_fixed")), names
                assert_bits(out, reference.scatter_elements(data, idx, upd, reduction=reduction,
                                                            include_self=include_self, order="fixed-point"))


def test_special_values(device, family):
    """Each rule of the contract on a target of its own (float32): NaN, both infinities, one infinity, an exact
    zero of -0s (-0) and of cancelling values (+0), subnormals summed exactly, exponents from the largest to the
    smallest (the small ones below the fixed point's last bit vanish), overflow to infinity, a target without
    updates (kept, NaN payload too) and one with a single update (exact)."""
    f = np.float32
    tiny, big = np.float32(1e-45), np.finfo(f).max
    cases = [[1.0, np.nan, 2.0], [np.inf, -np.inf], [np.inf, 5.0, np.inf], [-np.inf, 1.0], [-0.0, -0.0],
             [1.5, -1.5], [tiny, tiny, -tiny, 3 * tiny], [big, 1.0, -big], [big, big], [1e-30, 2.0, 1e-30],
             [7.25]]
    data = np.full(len(cases) + 1, -0.0, f)
    data[-1] = np.array(0x7FC01234, np.uint32).view(f)           # no updates: keeps its NaN's bits
    idx = np.concatenate([np.full(len(c), i) for i, c in enumerate(cases)])
    upd = np.concatenate([np.array(c, f) for c in cases])
    out = dmlgpu.scatter_elements(data, idx, upd, reduction="add", include_self=False, order="fixed-point",
                                  device=device)
    expected = reference.scatter_elements(data, idx, upd, reduction="add", include_self=False, order="fixed-point")
    assert_bits(out, expected)
    b = bits(out)
    assert b[0] == b[1] == 0xFFC00000                   # NaN; +inf and -inf: the negative quiet NaN
    assert out[2] == np.inf and out[3] == -np.inf
    assert b[4] == 0x80000000 and b[5] == 0             # -0 + -0 = -0; 1.5 - 1.5 = +0
    assert out[6] == 4 * tiny and b[7] == 0 and out[8] == np.inf     # 1.0 is below max's fixed point: +0
    assert out[9] == 2.0 and out[10] == 7.25 and b[-1] == 0x7FC01234
    # include_self: the target's own -0 takes part (-0 + -0 + -0 = -0), and its own value in the mean's count
    out = dmlgpu.scatter_elements(data[:6], [4, 4, 5], np.array([-0.0, -0.0, 0.0], f), reduction="mean",
                                  order="fixed-point", device=device)
    assert bits(out)[4] == 0x80000000 and bits(out)[5] == 0


def test_reference_rules():
    """fixed_sum's own rules, against exact arithmetic: the fraction bits, exact sums where the fixed point
    holds every bit, the one rounding, order independence."""
    f32 = np.dtype(np.float32)
    assert reference.fixed_fraction_bits(f32, 100) == 63 - 24 - 7
    assert reduction_fixed.fraction_bits(23, 100) == 63 - 24 - 7
    rng = np.random.default_rng(1)
    for _ in range(200):
        xs = (rng.standard_normal(6) * 2.0 ** rng.integers(-20, 20, size=6)).astype(np.float32)
        exact = sum(map(float, xs))                     # exact in float64 here (spans of < 53 bits)
        got = reference.fixed_sum(list(xs), f32, reference.fixed_fraction_bits(f32, 6))
        if max(abs(xs)) / min(abs(xs)) < 2.0 ** 10:
            assert got == np.float32(exact)             # every bit kept: one rounding of the exact sum
        assert abs(float(got) - exact) <= 2.0 ** -23 * abs(exact) + 2.0 ** -40 * max(abs(xs))
        assert bits(reference.fixed_sum(list(xs[::-1]), f32, 30)) == bits(reference.fixed_sum(list(xs), f32, 30))
    assert reference.round_to(reference.Fraction(3, 2 ** 150), f32) == np.float32(2.0 ** -148)   # a tie: even
    assert reference.round_to(reference.Fraction(-5, 2 ** 151), f32) == np.float32(-(2.0 ** -149))
    assert reference.round_to(reference.Fraction(2 ** 128), f32) == np.inf
    e4 = np.dtype(ml_dtypes.float8_e4m3fn)
    assert reference.round_to(reference.Fraction(464), e4) == 448 and np.isnan(reference.round_to(
        reference.Fraction(465), e4))


def test_empty_and_one_update(device, family):
    data = np.arange(6, dtype=np.float32) - 2.5
    out = dmlgpu.scatter_elements(data, np.zeros(0, np.int64), np.zeros(0, np.float32), reduction="add",
                                  order="fixed-point", device=device)
    assert_bits(out, data)
    idx, upd = np.array([5, 0, 2]), np.array([0.1, -3.0, 1e-8], np.float32)
    for include_self in (True, False):
        out = dmlgpu.scatter_elements(data, idx, upd, reduction="add", include_self=include_self,
                                      order="fixed-point", device=device)
        expected = data.copy()
        expected[idx] = (data[idx] + upd) if include_self else upd       # one term + one: a single rounding
        assert_bits(out, expected)


def test_hash_of_a_fixed_case(device, family):
    """The bits of a fixed case, as a hash to compare across devices (printed; pytest -s shows it): lavapipe,
    an H100 and an H200 give this one."""
    rng = np.random.default_rng(2026)
    n, targets = 100_000, 1000
    keys = np.minimum(rng.zipf(1.2, size=n) - 1, targets - 1)
    upd = (rng.standard_normal(n) * 2.0 ** rng.integers(-30, 30, size=n)).astype(np.float32)
    data = rng.standard_normal(targets).astype(np.float32)
    out = dmlgpu.scatter_elements(data, keys, upd, reduction="add", order="fixed-point", device=device)
    digest = hashlib.sha256(out.tobytes()).hexdigest()[:16]
    print(f"fixed-point hash ({device.info.name}, {family}): {digest}")
    assert digest == FIXED_CASE_HASH


FIXED_CASE_HASH = "986ab3914c651129"


def test_refusals_and_ignored_orders(device):
    """float mul and float64 add/mean refuse it (ValueError naming the function, before any work); reductions
    whose bits never depend on the order (min, max, integer add, "none") take it and give row-major's bits."""
    with pytest.raises(ValueError, match="scatter_elements: order='fixed-point'.*'mul'"):
        dmlgpu.scatter_elements(np.ones(3, np.float32), [0], np.ones(1, np.float32), reduction="mul",
                                order="fixed-point", device=device)
    with pytest.raises(ValueError, match="scatter_nd: order='fixed-point'.*float64"):
        dmlgpu.scatter_nd(np.ones(3), [[0]], np.ones(1), reduction="mean", order="fixed-point", device=device)
    with pytest.raises(ValueError, match="order must be one of"):
        dmlgpu.scatter_nd(np.ones(3, np.float32), [[0]], np.ones(1, np.float32), reduction="add", order="fixed",
                          device=device)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 10, size=50)
    for dtype, reduction in ((np.float32, "max"), (np.int32, "add"), (np.float16, "none"), (np.int64, "mul")):
        data, upd = rng.integers(-9, 9, size=10).astype(dtype), rng.integers(-9, 9, size=50).astype(dtype)
        a = dmlgpu.scatter_elements(data, idx, upd, reduction=reduction, order="fixed-point", device=device)
        b = dmlgpu.scatter_elements(data, idx, upd, reduction=reduction, device=device)
        assert_bits(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("reduction", ["add", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_last_pass_by_updates_and_by_span(device, family, reduction, include_self):
    """The last pass goes over the updates (one invocation per target takes its slot: a sparse output) or over
    the output's span (at most the update elements): the same bits, the reference's."""
    rng = np.random.default_rng(9)
    f32 = np.dtype(np.float32)
    for targets, n, last in ((5000, 800, "_s3_"), (300, 900, "_s4")):
        data, upd = tricky(rng, (targets,), f32), tricky(rng, (n,), f32)
        keys = np.minimum(rng.zipf(1.5, size=n) * 7, targets - 1)
        fixed, out = run_elements(device, data, keys, upd, reduction=reduction, include_self=include_self)
        assert last in fixed[-1], fixed
        assert_bits(out, reference.scatter_elements(data, keys, upd, reduction=reduction, include_self=include_self,
                                                    order="fixed-point"))


def test_repeated_calls_and_recordings(device, family):
    """Repeated calls (call templates), in place and copying, a recording run three times, and calls of other
    spans in between: each result the reference's (the slots are left zero after every run)."""
    rng = np.random.default_rng(21)
    f32 = np.dtype(np.float32)
    table = finite(rng, (40, 3), f32)
    t = dmlgpu.tensor(table, device=device)
    expected = table.copy()
    for k in range(7):
        if k == 5:      # a call whose slots outgrow the zeroed scratch (a new buffer), then the first shapes again
            big = finite(rng, (3000,), f32)
            keys, vals = rng.integers(0, 3000, size=4000), finite(rng, (4000,), f32)
            assert_bits(dmlgpu.scatter_elements(big, keys, vals, reduction="mean", order="fixed-point",
                                                device=device),
                        reference.scatter_elements(big, keys, vals, reduction="mean", order="fixed-point"))
        idx = rng.integers(0, 40 if k % 2 else 9, size=(70, 1))
        upd = finite(rng, (70, 3), f32)
        dmlgpu.scatter_nd(t, dmlgpu.tensor(idx, device=device), dmlgpu.tensor(upd, device=device),
                          reduction="mean" if k == 3 else "add", order="fixed-point", out=t)
        expected = reference.scatter_nd(expected, idx, upd, reduction="mean" if k == 3 else "add",
                                        order="fixed-point")
        assert_bits(t.numpy(), expected)
        small = dmlgpu.scatter_elements(table[:5, 0], idx[:4, 0] % 5, upd[:4, 0], reduction="add",
                                        order="fixed-point", device=device)
        assert_bits(small, reference.scatter_elements(table[:5, 0], idx[:4, 0] % 5, upd[:4, 0], reduction="add",
                                                      order="fixed-point"))
    idx, upd = rng.integers(0, 40, size=(200, 1)), finite(rng, (200, 3), f32)
    t = dmlgpu.tensor(table, device=device)
    with device.record() as rec:
        dmlgpu.scatter_nd(t, dmlgpu.tensor(idx, device=device), dmlgpu.tensor(upd, device=device),
                          reduction="add", order="fixed-point", out=t)
    expected = reference.scatter_nd(table, idx, upd, reduction="add", order="fixed-point")
    assert_bits(t.numpy(), expected)                     # (the recording ran once)
    serial = device.runtime.zeroed_serial
    for _ in range(3):
        rec.run()
        dmlgpu.scatter_nd(table, idx, upd, reduction="add", order="fixed-point", device=device)
        expected = reference.scatter_nd(expected, idx, upd, reduction="add", order="fixed-point")
        assert_bits(t.numpy(), expected)
    assert device.runtime.zeroed_serial == serial                # the slots were left zero: never filled again


def test_operands_held_in_several_blocks_refused():
    rng = np.random.default_rng(2)
    with dmlgpu.Device(chunk_bytes=4096) as dev:
        if not dmlgpu.kernels.table.WIDE_FEATURES <= dev.features:
            pytest.skip("no tensors held in several blocks on this device (profile)")
        table = dmlgpu.tensor(finite(rng, (3000,), np.dtype(np.float32)), device=dev)
        idx, upd = dmlgpu.tensor(rng.integers(0, 3000, size=50), device=dev), dmlgpu.tensor(
            finite(rng, (50,), np.dtype(np.float32)), device=dev)
        before = table.numpy()
        with pytest.raises(dmlgpu.DeviceError, match="order='fixed-point' is not supported on operands held in"):
            dmlgpu.scatter_elements(table, idx, upd, reduction="add", order="fixed-point", out=table)
        assert_bits(table.numpy(), before)


@pytest.mark.parametrize("dtype", DTYPES[:3], ids=str)
def test_reference_error_bound(dtype):
    """The contract's bound, against exact rational sums: |result - sum| <= k 2^(H - 63) 2^(E - bias) + half an
    ulp of the result, for calls of n = 2^30 update elements (H = 31: the fewest fraction bits), terms of random
    scales whose exponents differ by up to 30 (float16: 12)."""
    from fractions import Fraction
    rng = np.random.default_rng(4)
    n = 1 << 30
    h = (n + 1).bit_length()
    fraction = reference.fixed_fraction_bits(dtype, n)
    p, eb, _ = reference.FIXED_FORMATS[dtype.name]
    bias = (1 << (eb - 1)) - 1
    for _ in range(100):
        k = int(rng.integers(1, 60))
        span = 8 if dtype.itemsize == 2 and dtype.name == "float16" else 20      # (float16: finite sums)
        xs = (rng.standard_normal(k) * 2.0 ** rng.integers(-span, span // 2, size=k)).astype(dtype)
        got = reference.fixed_sum(list(xs), dtype, fraction)
        exact = sum(Fraction(float(x)) for x in xs)
        top = max(max(int(np.asarray(x).view(UINT[dtype.itemsize])) >> p & ((1 << eb) - 1), 1) for x in xs)
        ulp = abs(float(np.spacing(np.float32(got)))) if dtype.itemsize == 4 else 2.0 ** (
            max(int(np.floor(np.log2(abs(float(got))))) if float(got) else 0, 1 - bias) - p)
        bound = Fraction(k) * Fraction(2) ** (h - 63 + top - bias) + Fraction(ulp) / 2
        assert abs(Fraction(float(got)) - exact) <= bound


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_elements_along_an_axis(device, family, axis):
    """scatter_elements of 2-d and 3-d data along each axis (indices smaller than the data: a window), with
    mean and both include_self values."""
    rng = np.random.default_rng(13 + axis)
    bf = np.dtype(ml_dtypes.bfloat16)
    data = tricky(rng, (6, 7, 3), bf)[:, :, 0] if axis != -1 else tricky(rng, (4, 5, 6), bf)
    shape = (5, 6) if data.ndim == 2 else (3, 5, 9)
    idx = rng.integers(-data.shape[axis], data.shape[axis], size=shape)
    upd = tricky(rng, shape, bf)
    for reduction in ("add", "mean"):
        for include_self in (True, False):
            out = dmlgpu.scatter_elements(data, idx, upd, axis, reduction=reduction, include_self=include_self,
                                          order="fixed-point", device=device)
            assert_bits(out, reference.scatter_elements(data, idx, upd, axis, reduction, include_self,
                                                        "fixed-point"))


def test_slots_past_one_buffer_refused():
    """Slots (16 bytes per offset of the output's span) that exceed one buffer: DeviceError before any work,
    the data unchanged."""
    rng = np.random.default_rng(3)
    with dmlgpu.Device(chunk_bytes=4096) as dev:
        table = dmlgpu.tensor(finite(rng, (1000,), np.dtype(np.float32)), device=dev)     # 4000 bytes: one block
        before = table.numpy()
        with pytest.raises(dmlgpu.DeviceError, match="order='fixed-point' needs 16000 bytes of scratch"):
            dmlgpu.scatter_elements(table, dmlgpu.tensor(np.array([3, 999]), device=dev),
                                    dmlgpu.tensor(np.ones(2, np.float32), device=dev), reduction="add",
                                    order="fixed-point", out=table)
        assert_bits(table.numpy(), before)
        small = dmlgpu.scatter_elements(before[:100], np.array([3, 99, 3]), np.ones(3, np.float32), reduction="add",
                                        order="fixed-point", device=dev)
        assert_bits(small, reference.scatter_elements(before[:100], np.array([3, 99, 3]), np.ones(3, np.float32),
                                                      reduction="add", order="fixed-point"))


@pytest.mark.parametrize("dtype", DTYPES[:3], ids=str)
def test_embedding_gradient_in_place(device, family, dtype):
    """The issue's case, scaled down: rows of 16 with Zipf-skewed ids summed into a table in place (scatter_nd,
    out=the table), against the reference; the table's span above the update elements (the last pass over
    the updates) and below them (over the span)."""
    rng = np.random.default_rng(37)
    for rows, n in ((4000, 300), (200, 900)):
        table = finite(rng, (rows, 16), dtype)
        ids = np.minimum(rng.zipf(1.2, size=(n, 1)) - 1, rows - 1)
        grads = finite(rng, (n, 16), dtype)
        t = dmlgpu.tensor(table, device=device)
        dmlgpu.scatter_nd(t, dmlgpu.tensor(ids, device=device), dmlgpu.tensor(grads, device=device),
                          reduction="add", order="fixed-point", out=t)
        assert_bits(t.numpy(), reference.scatter_nd(table, ids, grads, reduction="add", order="fixed-point"))


@st.composite
def nd_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    k = draw(st.integers(1, rank))
    batch = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
    index_dtype = np.dtype(draw(st.sampled_from([np.int32, np.int64, np.uint32, np.uint64])))
    return (dtype, draw(st.sampled_from(["add", "mean"])), draw(st.booleans()), shape, k, batch, index_dtype,
            draw(st.integers(0, 2**32 - 1)))


@given(nd_cases())
def test_property_scatter_nd(device, case):
    """Random shapes, index widths and signedness (negative indices wrap), values of every kind."""
    dtype, reduction, include_self, shape, k, batch, index_dtype, seed = case
    rng = np.random.default_rng(seed)
    data = tricky(rng, shape, dtype)
    dims = np.array(shape[:k])
    idx = rng.integers(-dims if index_dtype.kind == "i" else 0, dims, size=batch + (k,)).astype(index_dtype)
    upd = tricky(rng, batch + shape[k:], dtype)
    out = dmlgpu.scatter_nd(data, idx, upd, device=device, reduction=reduction, include_self=include_self,
                            order="fixed-point")
    assert_bits(out, reference.scatter_nd(data, idx, upd, reduction, include_self, "fixed-point"))
