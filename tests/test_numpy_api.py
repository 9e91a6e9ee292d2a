"""dmlgpu.take, take_along_axis and put_along_axis against NumPy's own functions on random cases (shapes,
axes, broadcasting, modes, dtypes, out-of-range indices: both must raise IndexError or give the same bytes),
on NumPy arrays and on Tensors, plus bad input."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu

from strategies import data_dtypes, random_data, same_bytes, seeds, shapes

# Index dtypes NumPy casts safely to intp (uint64 it refuses).
NUMPY_INDEX_DTYPES = st.sampled_from([np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                                             np.uint16, np.uint32)])


def _indices(rng, shape, n, dtype, bad: bool) -> np.ndarray:
    """Values in [-n, n) (in [0, n) for unsigned dtypes), and a few outside when ``bad``."""
    dtype = np.dtype(dtype)
    low = 0 if dtype.kind == "u" else -n
    vals = rng.integers(low, max(n, 1), size=shape) if n else np.zeros(shape, np.int64)
    if bad and vals.size:
        where = rng.random(shape) < 0.2
        vals = np.where(where, rng.choice([n, n + 3, -n - 1] if dtype.kind == "i" else [n, n + 3], size=shape),
                        vals)
    return np.asarray(vals).astype(dtype)


def _same_outcome(ours, theirs):
    """Runs both; both raise IndexError, or both return the same bytes (a scalar of NumPy's is compared as
    such)."""
    try:
        expected = theirs()
    except IndexError:
        with pytest.raises(IndexError):
            ours()
        return None
    got = ours()
    if np.ndim(expected) == 0 and not isinstance(expected, np.ndarray):
        assert type(got) is type(expected)
        same_bytes(np.asarray(got), np.asarray(expected))
    else:
        same_bytes(got, expected)
    return got


def _on(where, arr, device):
    return dmlgpu.tensor(arr, device=device) if where == "tensor" else arr


def _host(x):
    return x.numpy() if isinstance(x, dmlgpu.Tensor) else x


@given(st.data())
def test_fuzz_take_matches_numpy(device, data):
    shape = data.draw(shapes(max_rank=4, max_elems=512), label="shape")
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1), label="axis")
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]), label="mode")
    n = int(np.prod(shape)) if axis is None else shape[axis]
    idx_shape = data.draw(shapes(min_rank=0, max_rank=3, max_elems=64, max_side=6), label="idx_shape")
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(NUMPY_INDEX_DTYPES, label="idx_dtype")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    a = random_data(rng, shape, dtype)
    bad = data.draw(st.booleans(), label="bad")
    idx = _indices(rng, idx_shape, n, idx_dtype, bad)
    if mode != "raise" and bad:          # wrap and clip take any value, far ones included
        idx = np.where(rng.random(idx_shape) < 0.5, idx, rng.integers(-3 * n - 5, 3 * n + 5, size=idx_shape)
                       ).astype(np.int64)
    where = data.draw(st.sampled_from(["numpy", "tensor"]), label="where")
    got = _same_outcome(lambda: _host(dmlgpu.take(_on(where, a, device), idx, axis, mode=mode, device=device)),
                        lambda: np.take(a, idx, axis, mode=mode) if where == "numpy"
                        else np.asarray(np.take(a, idx, axis, mode=mode)))     # a Tensor result stays a Tensor
    if got is not None and where == "numpy":
        out = np.empty(np.shape(got), dtype)
        assert dmlgpu.take(a, idx, axis, out=out, mode=mode, device=device) is out
        same_bytes(out, np.asarray(np.take(a, idx, axis, mode=mode)))


def _along_shapes(data, rng_shape):
    """(arr shape, indices shape, axis): indices of arr's rank whose dimensions outside the axis are arr's,
    1, or (where arr's is 1) anything, so that NumPy broadcasts them."""
    shape = data.draw(shapes(max_rank=4, max_elems=256, max_side=rng_shape), label="shape")
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1), label="axis")
    if axis is None:
        return shape, (data.draw(st.integers(0, 12), label="idx_len"),), None
    a = axis % len(shape)
    idx_shape = []
    for d, n in enumerate(shape):
        if d == a:
            idx_shape.append(data.draw(st.integers(0, n + 2)))
        elif n == 1:
            idx_shape.append(data.draw(st.integers(1, 3)))
        else:
            idx_shape.append(data.draw(st.sampled_from([n, 1])))
    return shape, tuple(idx_shape), axis


@given(st.data())
def test_fuzz_take_along_axis_matches_numpy(device, data):
    shape, idx_shape, axis = _along_shapes(data, 6)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(NUMPY_INDEX_DTYPES, label="idx_dtype")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    arr = random_data(rng, shape, dtype)
    n = arr.size if axis is None else shape[axis]
    idx = _indices(rng, idx_shape, n, idx_dtype, data.draw(st.booleans(), label="bad"))
    where = data.draw(st.sampled_from(["numpy", "tensor"]), label="where")
    if where == "tensor":   # a Tensor operand is not broadcast: give it the broadcast shape
        arr = np.ascontiguousarray(np.broadcast_to(arr, tuple(
            max(s, i) if d != (axis or 0) % len(shape) and axis is not None else s
            for d, (s, i) in enumerate(zip(shape, idx_shape if axis is not None else shape)))))
    _same_outcome(lambda: _host(dmlgpu.take_along_axis(_on(where, arr, device), idx, axis, device=device)),
                  lambda: np.take_along_axis(arr, idx, axis))


@given(st.data())
def test_fuzz_put_along_axis_matches_numpy(device, data):
    shape, idx_shape, axis = _along_shapes(data, 5)
    dtype, idx_dtype = data.draw(data_dtypes, label="dtype"), data.draw(NUMPY_INDEX_DTYPES, label="idx_dtype")
    rng = np.random.default_rng(data.draw(seeds, label="seed"))
    arr = random_data(rng, shape, dtype)
    n = arr.size if axis is None else shape[axis]
    # Few distinct targets: duplicates are common, and the last value must win as in NumPy.
    idx = _indices(rng, idx_shape, min(n, data.draw(st.integers(1, 3), label="spread")), idx_dtype, False)
    if data.draw(st.booleans(), label="bad") and idx.size and n <= np.iinfo(idx.dtype).max:   # representable
        idx.reshape(-1)[rng.integers(idx.size)] = n
    full = idx_shape if axis is None else tuple(
        i if d == axis % len(shape) else max(s, i) for d, (s, i) in enumerate(zip(shape, idx_shape)))
    vshape = data.draw(st.sampled_from(["full", "ones", "scalar", "trailing"]), label="values_shape")
    vshape = {"full": full, "ones": tuple(1 if rng.random() < 0.5 else s for s in full), "scalar": (),
              "trailing": full[1:]}[vshape]
    values = random_data(rng, vshape, dtype)
    expected = arr.copy()
    try:
        np.put_along_axis(expected, idx, values, axis)
    except IndexError:
        expected = None
    where = data.draw(st.sampled_from(["numpy", "tensor"]), label="where")
    ours = _on(where, arr.copy(), device)
    if expected is None:
        with pytest.raises(IndexError):
            dmlgpu.put_along_axis(ours, idx, values, axis, device=device)
        same_bytes(_host(ours), arr)             # nothing written
    else:
        assert dmlgpu.put_along_axis(ours, idx, values, axis, device=device) is None
        same_bytes(_host(ours), expected)


def test_put_along_axis_last_write_wins(device):
    arr = np.zeros((2, 3), np.int32)
    idx = np.array([[0, 0, 2, 0]] * 2)
    vals = np.arange(8, dtype=np.int32).reshape(2, 4)
    dmlgpu.put_along_axis(arr, idx, vals, 1, device=device)
    assert arr.tolist() == [[3, 0, 2], [7, 0, 6]]


def test_put_along_axis_non_contiguous_and_tensor(device):
    base = np.zeros((4, 6), np.float32)
    view = base[:, ::2]
    dmlgpu.put_along_axis(view, np.array([[2], [1], [0], [2]]), np.float32(5), 1, device=device)
    assert base[:, ::2].tolist() == [[0, 0, 5], [0, 5, 0], [5, 0, 0], [0, 0, 5]] and not base[:, 1::2].any()
    t = dmlgpu.tensor(np.arange(6, dtype=np.int64).reshape(2, 3), device=device)
    dmlgpu.put_along_axis(t, np.array([[2], [0]]), np.array([[-1], [-2]]), 1, device=device)
    assert t.numpy().tolist() == [[0, 1, -1], [-2, 4, 5]]


def test_take_names_and_signatures_are_numpys():
    import inspect
    for name in ("take", "take_along_axis", "put_along_axis"):
        ours = [p.name for p in inspect.signature(getattr(dmlgpu, name)).parameters.values()
                if p.kind != p.KEYWORD_ONLY]
        theirs = [p.name for p in inspect.signature(getattr(np, name)).parameters.values()]
        assert ours == theirs, name


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dmlgpu.take(np.arange(3), [0], mode="clamp"), ValueError, "mode"),
    (lambda: dmlgpu.take(np.arange(3), [0.5]), TypeError, "integer"),
    (lambda: dmlgpu.take(np.arange(3), [0], out=np.empty(2)), ValueError, "shape"),
    (lambda: dmlgpu.take(np.arange(3), [0], out=np.empty(1, np.float64)), TypeError, "cast"),   # as NumPy's:
    (lambda: dmlgpu.take(np.arange(3.0, dtype=np.float32), [0], out=np.empty(1)), TypeError, "safe"),  # out -> a
    (lambda: dmlgpu.take(np.zeros((2, 0)), [0], axis=1, mode="wrap"), IndexError, "empty"),
    (lambda: dmlgpu.take_along_axis(np.zeros((2, 3)), np.zeros((2, 1)), 1), IndexError, "integer"),
    (lambda: dmlgpu.take_along_axis(np.zeros((2, 3)), np.zeros(2, np.int64), 1), ValueError, "dimensions"),
    (lambda: dmlgpu.take_along_axis(np.zeros((2, 3)), np.zeros((3, 1), np.int64), 1), ValueError, "broadcast"),
    (lambda: dmlgpu.take_along_axis(np.zeros((2, 3)), np.zeros((2, 2), np.int64), None), ValueError, "single dimension"),
    (lambda: dmlgpu.take_along_axis(np.zeros((2, 3)), np.zeros((2, 1), np.int64), 2), np.exceptions.AxisError,
     "out of bounds"),
    (lambda: dmlgpu.take_along_axis(dmlgpu.tensor(np.zeros((1, 3))), np.zeros((2, 1), np.int64), 1), ValueError,
     "Tensor"),
    (lambda: dmlgpu.put_along_axis([1, 2], [0], [5], 0), TypeError, "in place"),
    (lambda: dmlgpu.put_along_axis(np.broadcast_to(np.zeros(1), (3,)), np.array([0]), 1.0, 0), ValueError,
     "read-only"),
    (lambda: dmlgpu.put_along_axis(np.zeros(3), np.array([3]), 1.0, 0), IndexError, "index 3"),
])
def test_bad_input(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
