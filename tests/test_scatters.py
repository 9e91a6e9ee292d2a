"""Layer-2 scatters (scatter_nd, scatter_elements) against the NumPy references: hypothesis-driven ("fuzz" in
the name), duplicates (the last update in row-major order wins), sub-word dtypes written by many threads,
empty inputs, bad input, and a large case."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu
from dmlgpu import reference

from strategies import (call_and_check, elements_case, empty_elements_case, MAX_DENSE, assert_index_error, budget_shape, data_dtypes, first_bad, index_dtypes,
                        index_kinds, lay_out, layouts, modes, random_data, random_indices, same_bytes, seeds,
                        shapes, snapshot)

AxisError = np.exceptions.AxisError


def last_wins(targets: np.ndarray, n_targets: int, updates: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Vectorized sequential scatter of a flat list: base.copy() with base[targets[i]] = updates[i] in order."""
    out = base.copy()
    rev = targets[::-1]
    uniq, first_in_rev = np.unique(rev, return_index=True)
    last = targets.size - 1 - first_in_rev
    out[uniq] = updates[last]
    return out


# ---------------------------------------------------------------- scatter_nd

@st.composite
def scatter_nd_case(draw):
    """(data shape, indices shape): tuple size k in [1, rank] (k < rank: row slices), indices rank 1..3."""
    shape = draw(shapes(), label="shape")
    rank = len(shape)
    k = draw(st.integers(1, rank), label="k")
    middle = draw(shapes(min_rank=0, max_rank=2, max_elems=256, max_side=24), label="middle")
    row = int(np.prod(shape[k:]))
    middle = budget_shape(middle, max(1, min(512, MAX_DENSE // row)))
    return shape, tuple(middle) + (k,)


@given(st.data())
def test_fuzz_scatter_nd(device, data):
    shape, idx_shape = data.draw(scatter_nd_case(), label="case")
    k = idx_shape[-1]
    dims = np.array(shape[:k], dtype=np.int64)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    kinds, mode = data.draw(index_kinds(), label="kinds"), data.draw(modes, label="mode")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = lay_out(random_data(rng, shape, dtype), data.draw(layouts(), label="x_layout"))
    idx = lay_out(random_indices(rng, idx_shape, dims, idx_dtype, kinds), data.draw(layouts(), label="i_layout"))
    upd = lay_out(random_data(rng, idx_shape[:-1] + shape[k:], dtype), data.draw(layouts(), label="u_layout"))

    call_and_check(dmlgpu.scatter_nd, (x, idx, upd), dict(device=device, mode=mode), mode, idx, dims,
                    lambda: reference.scatter_nd(x, idx, upd), [x, idx, upd])


# ---------------------------------------------------------------- scatter_elements

@given(st.data())
def test_fuzz_scatter_elements(device, data):
    x, idx, axis, mode, rng = data.draw(elements_case(2048), label="case")
    dim = x.shape[axis]
    upd = lay_out(random_data(rng, idx.shape, x.dtype), data.draw(layouts(), label="u_layout"))

    call_and_check(dmlgpu.scatter_elements, (x, idx, upd, axis), dict(device=device, mode=mode), mode, idx, dim,
                    lambda: reference.scatter_elements(x, idx, upd, axis), [x, idx, upd])


# ---------------------------------------------------------------- empty inputs

@given(st.data())
def test_fuzz_scatter_nd_empty(device, data):
    """Zero-size data or updates: an unchanged copy; IndexError when updates are non-empty but a tuple
    component addresses a zero-size dimension."""
    shape = data.draw(shapes(max_rank=4, max_elems=64, min_side=0, max_side=3), label="shape")
    k = data.draw(st.integers(1, len(shape)), label="k")
    middle = data.draw(shapes(min_rank=0, max_rank=2, max_elems=9, min_side=0, max_side=3), label="middle")
    if 0 not in shape and 0 not in middle:
        middle = (0,) + tuple(middle)
    idx_shape = tuple(middle) + (k,)
    dims = np.array(shape[:k], dtype=np.int64)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(index_dtypes, label="idx_dtype")
    mode = data.draw(modes, label="mode")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    x = random_data(rng, shape, dtype)
    idx = random_indices(rng, idx_shape, np.maximum(dims, 1), idx_dtype, ["in"])
    upd = random_data(rng, idx_shape[:-1] + tuple(shape[k:]), dtype)
    before = snapshot(x, idx, upd)
    bad = first_bad(idx, dims)
    if mode == "raise" and bad is not None:
        with pytest.raises(IndexError) as excinfo:
            dmlgpu.scatter_nd(x, idx, upd, device=device, mode=mode)
        assert_index_error(excinfo, *bad)
    elif upd.size and 0 in dims:
        with pytest.raises(IndexError):
            dmlgpu.scatter_nd(x, idx, upd, device=device, mode=mode)
    else:
        out = dmlgpu.scatter_nd(x, idx, upd, device=device, mode=mode)
        expected = x.copy()
        if upd.size:   # x is empty here only if upd is: with numpy's own indexing as a cross-check
            i64 = idx.astype(np.int64)
            expected[tuple(i64[..., j] for j in range(k))] = upd
        same_bytes(out, expected)
        assert not np.shares_memory(out, x) and out is not x
    assert snapshot(x, idx, upd) == before


@given(st.data())
def test_fuzz_scatter_elements_empty(device, data):
    x, idx, axis, mode, rng = data.draw(empty_elements_case(), label="case")
    shape, idx_shape, a = x.shape, idx.shape, axis % x.ndim
    upd = random_data(rng, idx_shape, x.dtype)
    before = snapshot(x, idx, upd)
    bad = first_bad(idx, shape[a])
    if mode == "raise" and bad is not None:
        with pytest.raises(IndexError) as excinfo:
            dmlgpu.scatter_elements(x, idx, upd, axis=axis, device=device, mode=mode)
        assert_index_error(excinfo, *bad)
    elif idx.size and shape[a] == 0:
        with pytest.raises(IndexError):
            dmlgpu.scatter_elements(x, idx, upd, axis=axis, device=device, mode=mode)
    else:
        out = dmlgpu.scatter_elements(x, idx, upd, axis=axis, device=device, mode=mode)
        expected = x.copy()
        if idx.size:
            np.put_along_axis(expected[tuple(slice(None) if d == a else slice(0, n)
                                             for d, n in enumerate(idx_shape))], idx.astype(np.int64), upd, a)
        same_bytes(out, expected)
    assert snapshot(x, idx, upd) == before


# ---------------------------------------------------------------- duplicates

@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int16, np.float32, np.complex128])
def test_heavy_duplicates_scatter_nd(device, dtype):
    """100,000 updates onto 10 targets: the last one in row-major order wins."""
    rng = np.random.default_rng(10)
    x = random_data(rng, (10,), dtype)
    targets = rng.integers(0, 10, size=100_000)
    idx = targets.reshape(-1, 1).astype(np.int32)
    upd = random_data(rng, (100_000,), dtype)
    before = snapshot(x, idx, upd)
    out = dmlgpu.scatter_nd(x, idx, upd, device=device)
    same_bytes(out, last_wins(targets, 10, upd, x))
    assert snapshot(x, idx, upd) == before


@pytest.mark.parametrize("dtype", [np.uint8, np.float16])
def test_heavy_duplicates_scatter_elements(device, dtype):
    """(1000, 100) updates onto a (10, 100) table along axis 0; negative and clamped indices alias the
    in-range ones."""
    rng = np.random.default_rng(11)
    x = random_data(rng, (10, 100), dtype)
    idx = rng.integers(-12, 12, size=(1000, 100)).astype(np.int64)
    upd = random_data(rng, (1000, 100), dtype)
    resolved = np.clip(np.where((idx < 0) & (idx >= -10), idx + 10, idx), 0, 9)
    expected = x.copy()
    for col in range(100):
        expected[:, col] = last_wins(resolved[:, col], 10, upd[:, col], x[:, col])
    out = dmlgpu.scatter_elements(x, idx, upd, axis=0, device=device)
    same_bytes(out, expected)


def test_heavy_duplicates_rows(device):
    """scatter_nd with row slices (tuple size 1 of rank 3 data) and 20,000 duplicate rows."""
    rng = np.random.default_rng(12)
    x = random_data(rng, (7, 3, 5), np.uint8)
    idx = rng.integers(-7, 7, size=(200, 100, 1)).astype(np.int16)
    upd = random_data(rng, (200, 100, 3, 5), np.uint8)
    flat_t = np.where(idx.reshape(-1) < 0, idx.reshape(-1) + 7, idx.reshape(-1)).astype(np.int64)
    expected = x.copy()
    rows = upd.reshape(-1, 3, 5)
    uniq, first = np.unique(flat_t[::-1], return_index=True)
    expected[uniq] = rows[flat_t.size - 1 - first]
    same_bytes(dmlgpu.scatter_nd(x, idx, upd, device=device), expected)
    same_bytes(dmlgpu.scatter_nd(x, idx[:3], upd[:3], device=device), reference.scatter_nd(x, idx[:3], upd[:3]))


def test_repeated_calls_independent(device):
    """The claim scratch is reset between scatters: a second scatter sees no stale claims."""
    rng = np.random.default_rng(13)
    for n in (5, 1000, 17, 70_000, 3):
        x = random_data(rng, (n,), np.uint8)
        targets = rng.integers(0, n, size=3 * n)
        upd = random_data(rng, (3 * n,), np.uint8)
        same_bytes(dmlgpu.scatter_elements(x, targets, upd, device=device), last_wins(targets, n, upd, x))


# ---------------------------------------------------------------- sub-word dtypes: neighbours share a word

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_, np.uint16, np.float16])
def test_adjacent_sub_word_writes(device, dtype):
    """Every element written once, by different threads, in a random order: none lost or torn; then only
    the even elements: the odd ones (same words) stay as they were."""
    rng = np.random.default_rng(14)
    n = 100_003
    x = random_data(rng, (n,), dtype)
    perm = rng.permutation(n)
    upd = random_data(rng, (n,), dtype)
    expected = x.copy()
    expected[perm] = upd
    same_bytes(dmlgpu.scatter_elements(x, perm.astype(np.uint32), upd, device=device), expected)
    same_bytes(dmlgpu.scatter_nd(x, perm.reshape(-1, 1), upd, device=device), expected)

    even = rng.permutation(np.arange(0, n, 2))
    upd_even = random_data(rng, even.shape, dtype)
    expected = x.copy()
    expected[even] = upd_even
    same_bytes(dmlgpu.scatter_elements(x, even, upd_even, device=device), expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16])
def test_sub_word_rows_straddling_words(device, dtype):
    """Rows of 3 elements (not a multiple of 4 bytes) scattered in a 2-D table: rows straddle words."""
    rng = np.random.default_rng(15)
    x = random_data(rng, (9999, 3), dtype)
    rows = rng.permutation(9999)[:6000]
    idx = rows.reshape(-1, 1)
    upd = random_data(rng, (6000, 3), dtype)
    expected = x.copy()
    expected[rows] = upd
    same_bytes(dmlgpu.scatter_nd(x, idx, upd, device=device), expected)
    # column-wise: scatter_elements along axis 1 with a per-row permutation of the 3 columns
    cols = np.argsort(rng.random((9999, 3)), axis=1)
    upd2 = random_data(rng, (9999, 3), dtype)
    expected = x.copy()
    np.put_along_axis(expected, cols, upd2, axis=1)
    same_bytes(dmlgpu.scatter_elements(x, cols, upd2, axis=1, device=device), expected)


# ---------------------------------------------------------------- mode="raise"

@pytest.mark.parametrize("fn", ["scatter_nd", "scatter_elements"])
def test_raise_names_first_bad_index_and_writes_nothing(device, fn):
    x = np.arange(24, dtype=np.uint8).reshape(4, 6)
    if fn == "scatter_nd":
        idx = np.array([[0, 1], [3, -6], [4, 0], [0, 9]], dtype=np.int64)
        upd = np.arange(4, dtype=np.uint8)
        args, pos, value = (x, idx, upd), (2, 0), 4
    else:
        idx = np.array([[0, 1, 2], [5, 6, -7]], dtype=np.int32)
        upd = np.ones((2, 3), dtype=np.uint8)
        args, pos, value = (x, idx, upd, 1), (1, 1), 6
    before = snapshot(x, idx, upd)
    with pytest.raises(IndexError) as excinfo:
        getattr(dmlgpu, fn)(*args, device=device, mode="raise")
    assert_index_error(excinfo, pos, value)
    assert snapshot(x, idx, upd) == before
    same_bytes(getattr(dmlgpu, fn)(*args, device=device), getattr(reference, fn)(*args))
    assert snapshot(x, idx, upd) == before


def test_raise_unsigned(device):
    x = np.zeros(5, dtype=np.float32)
    idx = np.array([[1], [2**63], [2**64 - 1]], dtype=np.uint64)
    with pytest.raises(IndexError) as excinfo:
        dmlgpu.scatter_nd(x, idx, np.ones(3, np.float32), device=device, mode="raise")
    assert_index_error(excinfo, (1, 0), 2**63)
    out = dmlgpu.scatter_nd(x, idx, np.arange(3, dtype=np.float32), device=device)
    assert out.tolist() == [0, 0, 0, 0, 2]


# ---------------------------------------------------------------- bad input

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
I_ND = np.zeros((2, 1), dtype=np.int32)
U_ND = np.zeros((2, 3, 4), dtype=np.float32)
I_EL = np.zeros((2, 3, 4), dtype=np.int32)


@pytest.mark.parametrize("call", [
    lambda d: dmlgpu.scatter_nd(X, I_ND.astype(np.float32), U_ND, device=d),
    lambda d: dmlgpu.scatter_elements(X, I_EL.astype(np.float64), X, device=d),
    lambda d: dmlgpu.scatter_nd(X, I_ND.astype(object), U_ND, device=d),
    lambda d: dmlgpu.scatter_nd(X.astype(object), I_ND, U_ND.astype(object), device=d),
    lambda d: dmlgpu.scatter_elements(X.astype(object), I_EL, X.astype(object), device=d),
    lambda d: dmlgpu.scatter_nd(X, I_ND, U_ND.astype(np.float64), device=d),
    lambda d: dmlgpu.scatter_nd(X, I_ND, U_ND.astype(np.int32), device=d),
    lambda d: dmlgpu.scatter_elements(X, I_EL, X.astype(np.float16), device=d),
    lambda d: dmlgpu.scatter_elements(X.astype(np.uint8), I_EL, X.astype(np.int8), device=d),
], ids=["nd-float-idx", "el-float-idx", "nd-object-idx", "nd-object-data", "el-object-data", "nd-upd-f64",
        "nd-upd-i32", "el-upd-f16", "el-upd-sign"])
def test_bad_input_type_error(device, call):
    before = snapshot(X, I_ND, U_ND, I_EL)
    with pytest.raises(TypeError):
        call(device)
    assert snapshot(X, I_ND, U_ND, I_EL) == before


@pytest.mark.parametrize("call", [
    lambda d: dmlgpu.scatter_nd(X, I_ND, U_ND[:, :2], device=d),
    lambda d: dmlgpu.scatter_nd(X, I_ND, U_ND[0], device=d),
    lambda d: dmlgpu.scatter_nd(X, np.zeros((2, 4), np.int32), np.zeros(2, np.float32), device=d),
    lambda d: dmlgpu.scatter_nd(X, np.zeros((2, 0), np.int32), U_ND, device=d),
    lambda d: dmlgpu.scatter_nd(X, np.array(0), X, device=d),
    lambda d: dmlgpu.scatter_elements(X, I_EL, X[:, :2], device=d),
    lambda d: dmlgpu.scatter_elements(X, I_EL[0], X[0], device=d),
    lambda d: dmlgpu.scatter_elements(X, np.zeros((2, 4, 4), np.int32), np.zeros((2, 4, 4), np.float32),
                                      axis=0, device=d),
    lambda d: dmlgpu.scatter_elements(np.array(1.0), np.array(0), np.array(2.0), device=d),
    lambda d: dmlgpu.scatter_nd(X, I_ND, U_ND, mode="wrap", device=d),
    lambda d: dmlgpu.scatter_elements(X, I_EL, X, mode="", device=d),
], ids=["nd-upd-shape", "nd-upd-rank", "nd-k-too-big", "nd-k-zero", "nd-0d-idx", "el-upd-shape", "el-rank",
        "el-larger-outside-axis", "el-0d", "nd-mode", "el-mode"])
def test_bad_input_value_error(device, call):
    before = snapshot(X, I_ND, U_ND, I_EL)
    with pytest.raises(ValueError):
        call(device)
    assert snapshot(X, I_ND, U_ND, I_EL) == before


@pytest.mark.parametrize("axis", [3, -4, 2**40])
def test_bad_axis(device, axis):
    with pytest.raises(AxisError):
        dmlgpu.scatter_elements(X, I_EL, X, axis=axis, device=device)


# ---------------------------------------------------------------- large

def test_large_scatter_uint8(device):
    """~1M uint8 elements, 1M updates with duplicates, negative and clamped indices."""
    rng = np.random.default_rng(16)
    n = 1 << 20
    x = random_data(rng, (n,), np.uint8)
    idx = rng.integers(-n - 100, n + 100, size=n).astype(np.int64)
    idx[::4099] = rng.choice(np.array([2**40, -2**63, 2**63 - 1, 2**32 + 5]), size=idx[::4099].size)
    upd = random_data(rng, (n,), np.uint8)
    before = snapshot(x, idx, upd)
    resolved = np.clip(np.where((idx < 0) & (idx >= -n), idx + n, idx), 0, n - 1)
    expected = last_wins(resolved, n, upd, x)
    same_bytes(dmlgpu.scatter_elements(x, idx, upd, device=device), expected)
    same_bytes(dmlgpu.scatter_nd(x, idx.reshape(-1, 1), upd, device=device), expected)
    assert snapshot(x, idx, upd) == before


def test_large_scatter_nd_2d_rows(device):
    rng = np.random.default_rng(17)
    x = random_data(rng, (1024, 1024), np.uint8)
    idx = rng.integers(0, 1024, size=(3000, 1)).astype(np.uint32)
    upd = random_data(rng, (3000, 1024), np.uint8)
    expected = x.copy()
    rows = idx[:, 0].astype(np.int64)
    uniq, first = np.unique(rows[::-1], return_index=True)
    expected[uniq] = upd[rows.size - 1 - first]
    same_bytes(dmlgpu.scatter_nd(x, idx, upd, device=device), expected)


# ---------------------------------------------------------------- SCATTER_ELEMENTS by lines (one pass)

LINE_CASES = [  # (data shape, dtype, indices shape, axis): claims in shared memory, duplicates in every line
    ((300, 256), np.float32, (300, 64), 1),      # the bench's shape: several lines per workgroup
    ((5, 7), np.uint8, (5, 7), 1),               # 1-byte elements, neighbouring targets in one word
    ((3, 9, 4), np.float16, (3, 20, 4), 1),      # the middle axis, more updates than targets per line
    ((600, 3), np.int64, (600, 3), 0),           # the first axis: 3 lines of 600 updates (a loop per invocation)
    ((4, 1), np.complex128, (4, 1), 1),          # 16-byte elements, lines of one update (m = 1)
    ((2, 4096), np.float32, (2, 5000), 1),       # the largest line that fits the shared claims
    ((2, 4097), np.float32, (2, 30), 1),         # one more: the claim-and-write plan instead
    ((70000,), np.uint16, (70000,), 0),          # rank 1: one line of 70,000 updates onto 70,000 targets
    ((6, 10, 3), np.float32, (4, 12, 2), 1),     # lines that do not cover the output
    # the lines' own copy (COPY: 4-byte elements, lines along the last axis covering the output)
    ((7, 9, 300), np.int32, (7, 9, 500), 2),     # more updates than targets, several lines per workgroup
    ((5, 2048), np.float32, (5, 3000), 1),       # the longest line whose claims and values fit
    ((3, 2049), np.float32, (3, 100), 1),        # one more: a copy, then the lines
    ((1, 5), np.float32, (1, 9), 1),             # one line
]


@pytest.mark.parametrize("copy_lines", [None, True], ids=["default", "copy_lines"])
@pytest.mark.parametrize("shape, dtype, idx_shape, axis", LINE_CASES)
def test_scatter_elements_lines(device, monkeypatch, copy_lines, shape, dtype, idx_shape, axis):
    """The one-pass SCATTER_ELEMENTS (lines_plan.ScatterLinesPlan) against the sequential reference: every
    line has duplicate targets (the last update along the axis wins), indices negative and out of range
    (clamped); the plan falls back to claims in memory past kernels.LINE_CLAIM_WORDS. With COPY_LINES forced, the
    lines copy the input themselves wherever scatter_lines.comp's COPY applies (one dispatch)."""
    from dmlgpu.kernels import table as kernels
    from dmlgpu.plans import scatter_lines as lines_plan
    from dmlgpu.bench.gpu_timing import capture
    monkeypatch.setattr(lines_plan, "COPY_LINES", copy_lines)
    device.runtime.templates.clear()
    rng = np.random.default_rng(sum(shape) + sum(idx_shape))
    x = random_data(rng, shape, dtype)
    n = shape[axis]
    idx = rng.integers(-n - 2, n + 2, idx_shape)
    upd = random_data(rng, idx_shape, dtype)
    same_bytes(dmlgpu.scatter_elements(x, idx, upd, axis=axis, device=device, mode="clamp"),
               reference.scatter_elements(x, np.clip(np.where(idx < 0, idx + n, idx), 0, n - 1), upd, axis))
    layouts = [dmlgpu.plans.index_map.Layout.packed(s) for s in (shape, idx_shape, idx_shape)]
    chosen = lines_plan.scatter_elements_plan(*layouts, axis, np.dtype(dtype).itemsize, np.int64,
                                        dmlgpu.plans.index_map.copy_map(layouts[0], layouts[0], np.dtype(dtype).itemsize))
    assert isinstance(chosen, lines_plan.ScatterLinesPlan) == (n <= kernels.LINE_CLAIM_WORDS)
    copies = np.dtype(dtype).itemsize == 4 and axis == len(shape) - 1 and n <= kernels.LINE_CLAIM_WORDS // 2 \
        and idx_shape[:-1] == shape[:-1]
    assert (getattr(chosen, "copy_words", None) is not None) == copies
    if copies and copy_lines and device.info.max_compute_shared_memory_size >= kernels.MOST_SHARED_BYTES and \
            device.runtime.supports(kernels.lines_variant(4, 8, True)):      # (it binds 5 buffers)
        t = [dmlgpu.tensor(a, device=device) for a in (x, np.clip(idx, -n, n - 1), upd)]
        got, dispatches = capture(device, lambda *a: dmlgpu.scatter_elements(*a, axis=axis), *t)
        assert [d.kernel for d in dispatches] == [kernels.lines_variant(4, 8, True)]
        same_bytes(got.numpy(), reference.scatter_elements(x, np.where(idx < 0, idx + n, idx).clip(0, n - 1), upd,
                                                           axis))
        same_bytes(t[0].numpy(), x)                # the input is left alone
        dmlgpu.scatter_elements(*t, axis=axis, out=t[0])      # in place: no copy, the lines pass alone
        same_bytes(t[0].numpy(), got.numpy())


@pytest.mark.parametrize("copy_lines", [None, True], ids=["default", "copy_lines"])
def test_scatter_elements_unique_by_lines(device, monkeypatch, copy_lines):
    """unique_indices=True takes the lines' one pass where its COPY applies (4-byte elements along the last
    axis), else the claim-free scatter after the copy; in place, the claim-free scatter alone."""
    from dmlgpu.kernels import table as kernels
    from dmlgpu.plans import scatter_lines as lines_plan
    from dmlgpu.bench.gpu_timing import capture
    monkeypatch.setattr(lines_plan, "COPY_LINES", copy_lines)
    device.runtime.templates.clear()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((70, 256)).astype(np.float32)
    cols = np.argsort(rng.random((70, 256)), axis=1)[:, :64]
    upd = rng.standard_normal((70, 64)).astype(np.float32)
    want = reference.scatter_elements(x, cols, upd, 1)
    t = [dmlgpu.tensor(a, device=device) for a in (x, cols, upd)]
    got, dispatches = capture(device, lambda *a: dmlgpu.scatter_elements(*a, axis=1, unique_indices=True), *t)
    copies = (bool(copy_lines) or device.info.type != "CPU") and device.runtime.supports(kernels.lines_variant(4, 8, True)) \
        and device.info.max_compute_shared_memory_size >= kernels.MOST_SHARED_BYTES     # (else the claims-free pass)
    assert [d.kernel for d in dispatches][-1] == (kernels.lines_variant(4, 8, True) if copies else
                                                  kernels.unique_variant(4, 8)), dispatches
    same_bytes(got.numpy(), want)
    dmlgpu.scatter_elements(*t, axis=1, unique_indices=True, out=t[0])
    same_bytes(t[0].numpy(), want)


def test_scatter_elements_lines_leave_the_input_and_overlapping_layouts(device):
    """The input Tensor is left alone; an output layout whose elements overlap (a stride of 0) takes the
    claim-and-write plan."""
    from dmlgpu.plans import index_map, scatter_lines as lines_plan, plan
    assert not index_map.Layout((4, 3), (0, 1)).disjoint() and index_map.Layout((4, 3), (1, 4)).disjoint()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((40, 33)).astype(np.float32)
    idx = rng.integers(0, 33, (40, 50))
    upd = rng.standard_normal((40, 50)).astype(np.float32)
    t = dmlgpu.tensor(x, device=device)
    want = reference.scatter_elements(x, idx, upd, 1)
    got = dmlgpu.scatter_elements(t, dmlgpu.tensor(idx, device=device), dmlgpu.tensor(upd, device=device), axis=1)
    same_bytes(got.numpy(), want)
    same_bytes(t.numpy(), x)                       # the input is left alone
    packed, overlapping_layout = index_map.Layout.packed((4, 3)), index_map.Layout((4, 3), (0, 1))
    overlapping = lines_plan.scatter_elements_plan(overlapping_layout, packed, packed, 1, 4, np.int32,
                                                   index_map.copy_map(packed, overlapping_layout, 4))
    assert isinstance(overlapping, plan.ScatterPlan)


# ---------------------------------------------------------------- scatters of whole rows (a claim per row)

ROW_CLAIM_CASES = [  # (data shape, dtype, indices shape): slices of whole rows, duplicate targets
    ((50, 64), np.float32, (80, 1)),          # the bench's rows (16 units of 16 bytes), duplicates
    ((9, 3), np.uint8, (30, 1)),              # rows of 3 bytes (1-byte units)
    ((6, 5, 7), np.float16, (40, 2)),         # tuples of 2: rows of 7 two-byte units
    ((4, 6, 2), np.float64, (3, 5, 1)),       # two update dimensions of rows of 2 (16-byte units, one each)
    ((1, 12), np.int32, (25, 1)),             # every row onto the one target row
    ((50, 64), np.float32, (256, 1)),         # a workgroup of rows: the SMALL variant's largest case
    ((300, 2048), np.float32, (200, 1)),      # SMALL, rows of 512 units: CPU devices' few workgroups loop over them
    ((300, 5), np.int16, (257, 1)),           # one row more: claims in memory
    ((7, 9), np.uint8, (2000, 1)),            # many rows onto few targets
    ((1000, 3, 5), np.float32, (600, 1)),     # rows of 15 four-byte units, negative and duplicate targets
    ((40, 30, 24), np.float16, (500, 2)),     # tuples of 2: rows of 3 sixteen-byte units
    ((400, 6), np.int8, (700, 1)),            # rows of 3 two-byte units
    ((500, 64), np.float32, (700, 1)),        # rows of 16 sixteen-byte units: the copy clears the claims (CLEARS)
    ((300, 16), np.uint16, (600, 1)),         # rows of 2 sixteen-byte units: CLEARS
    ((200, 4, 16), np.int8, (900, 1)),        # rows of 4 sixteen-byte units: CLEARS
]


@pytest.mark.parametrize("copy_clears", [None, True], ids=["default", "copy_clears"])
@pytest.mark.parametrize("shape, dtype, idx_shape", ROW_CLAIM_CASES)
def test_scatter_nd_row_claims(device, monkeypatch, copy_clears, shape, dtype, idx_shape):
    """A scatter of whole rows claims each target row once (ScatterPlan's ROWS variants, cleared by a last
    pass; at most a workgroup of rows in shared memory, SMALL; more rows: the copy of the input and the
    claimed rows' writes in one pass, COPY, which clears the claims itself where a workgroup holds whole rows,
    CLEARS): the last update row of a target wins, and the claims are clean for the next scatter."""
    from dmlgpu.plans import plan
    monkeypatch.setattr(plan, "COPY_CLEARS", copy_clears)
    device.runtime.templates.clear()
    rng = np.random.default_rng(sum(shape) + sum(idx_shape))
    x = random_data(rng, shape, dtype)
    k = idx_shape[-1]
    idx = np.stack([rng.integers(-n, n, idx_shape[:-1]) for n in shape[:k]], axis=-1)
    upd = random_data(rng, idx_shape[:-1] + shape[k:], dtype)
    for _ in range(2):                                # the second call finds the claims cleared
        same_bytes(dmlgpu.scatter_nd(x, idx, upd, device=device), reference.scatter_nd(x, idx, upd))
    layouts = [dmlgpu.plans.index_map.Layout.packed(s) for s in (shape, idx_shape, upd.shape)]
    p = plan.ScatterPlan(dmlgpu.plans.index_map.nd_map(*layouts, 0, np.dtype(dtype).itemsize), np.int64,
                         dmlgpu.plans.index_map.copy_map(layouts[0], layouts[0], np.dtype(dtype).itemsize))
    assert p.row_words is not None
    assert bool(p.small) == (np.prod(idx_shape[:-1]) <= dmlgpu.kernels.table.WORKGROUP_SIZE)
    assert p.copy_words is not None                   # packed data and output: the one-pass copy where not SMALL
    with device.record() as rec:
        got = dmlgpu.scatter_nd(dmlgpu.tensor(x, device=device), idx, upd)
    ran = [what.kernel for kind, what in rec._steps if kind == "dispatch"]
    fused = device.info.max_per_stage_storage_buffers >= dmlgpu.kernels.table.SCATTER_BUFFERS and \
        not (p.small and p.small <= device.runtime.geometry.workgroup_size) and \
        not any(k.endswith("_wide") for k in ran)     # (the device's claim scratch may be held in several blocks)
    assert any(k.startswith("scatter_copy_rows") for k in ran) == fused, ran
    clears = fused and device.runtime.geometry.workgroup_size % int(p.copy_words[plan.P_ROW_UNITS]) == 0 and (
        copy_clears or device.info.type != "CPU")
    assert any(k.endswith("_clears") for k in ran) == clears, ran       # no clearing pass after it
    assert any(k.startswith("scatter_clear_rows") for k in ran) == (fused and not clears), ran
    if device.info.type == "CPU":                     # SMALL's few workgroups there (plan.CPU_SMALL_GROUPS)
        size = device.runtime.geometry.workgroup_size
        assert all(what.count <= plan.CPU_SMALL_GROUPS * size
                   for kind, what in rec._steps if kind == "dispatch" and what.kernel.startswith("scatter_small"))
    same_bytes(got.numpy(), reference.scatter_nd(x, idx, upd))


def test_scatter_rows_that_may_overlap_claim_units():
    """Output rows of 3 units whose second dimension's stride is 2 units: target rows may overlap, so every
    unit claims its own target (no ROWS variants)."""
    from dmlgpu.plans import index_map, plan
    out = index_map.Layout((5, 2, 3), (8, 2, 1))           # rows [0, 3) and [2, 5) overlap
    m = index_map.nd_map(out, index_map.Layout.packed((4, 1)), index_map.Layout.packed((4, 2, 3)), 0, 4)
    assert plan.ScatterPlan(m, np.int32, index_map.copy_map(out, out, 4)).row_words is None
