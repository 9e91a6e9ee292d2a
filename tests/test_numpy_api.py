"""dmlgpu.take, take_along_axis and put_along_axis against NumPy's own functions on random cases (shapes,
axes, broadcasting, modes, dtypes, out-of-range indices: both must raise IndexError or give the same bytes),
on NumPy arrays and on Tensors, plus bad input."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu

from strategies import data_dtypes, random_data, same_bytes, seeds, shapes

# Index dtypes: NumPy reads them as intp (uint64 values of 2**63 or more as negative ones).
NUMPY_INDEX_DTYPES = st.sampled_from([np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                                             np.uint16, np.uint32, np.uint64)])


def _indices(rng, shape, n, dtype, bad: bool) -> np.ndarray:
    """Values in [-n, n) (in [0, n) for unsigned dtypes but uint64, whose negative ones are 2**64 - k: NumPy
    reads them as -k), and a few outside when ``bad``."""
    dtype = np.dtype(dtype)
    signed = dtype.kind == "i" or dtype == np.uint64
    low = -n if signed else 0
    vals = rng.integers(low, max(n, 1), size=shape) if n else np.zeros(shape, np.int64)
    if bad and vals.size:
        where = rng.random(shape) < 0.2
        vals = np.where(where, rng.choice([n, n + 3, -n - 1] if signed else [n, n + 3], size=shape), vals)
    return np.asarray(vals).astype(np.int64).view(np.uint64).astype(dtype) if dtype == np.uint64 else \
        np.asarray(vals).astype(dtype)


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
        idx = np.where(rng.random(idx_shape) < 0.5, idx.astype(np.int64),      # (uint64: as intp)
                       rng.integers(-3 * n - 5, 3 * n + 5, size=idx_shape))
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


# ---- issue 48, item 6: NumPy's names at the edges a newcomer found ----

def _no_reads(monkeypatch, device):
    """Fails any read of device memory back to the host until monkeypatch.undo() (no silent round trip)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a read back to the host")
    monkeypatch.setattr(type(device.runtime), "read_range", refuse)


VIEWS = {"T": lambda x: x.T, "cols": lambda x: x[:, ::2], "rev": lambda x: x[::-1, 1:3]}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("index_kind", ["list", "array", "tensor"])
def test_axis_none_on_strided_tensor_views_as_numpy(device, monkeypatch, view, index_kind):
    """dmlgpu.take / np.take / take_along_axis with axis=None on a strided view: the flattened view in
    row-major order, gathered on the device (no read back during the call)."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = VIEWS[view](a)
    idx = np.array([0, 1, v.size - 1, -2, 1])
    ids = {"list": idx.tolist(), "array": idx, "tensor": dmlgpu.tensor(idx, device=device)}[index_kind]
    t = dmlgpu.tensor(a, device=device)
    _no_reads(monkeypatch, device)
    got = [dmlgpu.take(VIEWS[view](t), ids), np.take(VIEWS[view](t), ids),
           dmlgpu.take(VIEWS[view](t), ids, mode="wrap"), dmlgpu.take_along_axis(VIEWS[view](t), idx, None)]
    if index_kind != "list":
        got.append(np.take_along_axis(VIEWS[view](t), ids, None))
    monkeypatch.undo()
    assert all(isinstance(g, dmlgpu.Tensor) for g in got)
    for g in got:
        same_bytes(g.numpy(), np.take(v, idx))
    same_bytes(t.numpy(), a)                          # the base unchanged


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("index_kind", ["array", "tensor"])
def test_put_along_axis_axis_none_writes_through_a_strided_view(device, monkeypatch, view, index_kind):
    """put_along_axis(view, indices, values, None) writes the view's elements (row-major positions), as
    NumPy 1.x's arr.flat did (NumPy 2.x raises ValueError: its flattened copy is read-only), on the device;
    duplicates: the last wins."""
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    v = VIEWS[view](a)
    idx = np.array([0, v.size - 1, 1, -1, 1])
    vals = np.array([-1, -2, -3, -4, -5], np.int32)
    expected = a.copy()
    flat = VIEWS[view](expected).flat
    for i, x in zip(idx, vals):                     # one at a time: row-major order, the last wins
        flat[i] = x
    t = dmlgpu.tensor(a, device=device)
    ids = idx if index_kind == "array" else dmlgpu.tensor(idx, device=device)
    if index_kind == "array":
        _no_reads(monkeypatch, device)
    dmlgpu.put_along_axis(VIEWS[view](t), ids, vals, None)
    monkeypatch.undo()
    same_bytes(t.numpy(), expected)
    t2 = dmlgpu.tensor(a, device=device)             # NumPy's name on a Tensor: dmlgpu's
    assert np.put_along_axis(VIEWS[view](t2), ids, vals, None) is None
    same_bytes(t2.numpy(), expected)
    host = a.copy()                                  # a NumPy view: written through the same way
    dmlgpu.put_along_axis(VIEWS[view](host), idx, vals, None, device=device)
    same_bytes(host, expected)
    with pytest.raises(IndexError, match="put_along_axis"):    # out of range: nothing written
        dmlgpu.put_along_axis(VIEWS[view](t), np.array([v.size]), 7, None)
    same_bytes(t.numpy(), expected)


HUGE = np.array([2**64 - 1, 2**64 - 13, 2**64 - 12, 5, 2**63], np.uint64)     # as intp: -1, -13, -12, 5, -2**63


@pytest.mark.parametrize("mode", ["wrap", "clip", "raise"])
@pytest.mark.parametrize("where", ["numpy", "tensor"])
def test_uint64_indices_are_read_as_intp_in_numpys_names(device, mode, where):
    """NumPy reads indices as intp: a uint64 of 2**63 or more is negative (2**64 - 1 is -1): "wrap" gives
    the last element, "clip" the first, "raise" IndexError below -n; a Tensor's indices are viewed as
    int64 on the device."""
    a = np.arange(12, dtype=np.float32)
    small = HUGE[:1]
    assert np.take(a, small, mode=mode) == a[-1] if mode != "clip" else np.take(a, small, mode=mode) == a[0]
    ids = HUGE if mode != "raise" else HUGE[[0, 2, 3]]          # in range as intp: -1, -12, 5
    as_intp = ids.view(np.int64)
    # (NumPy's "wrap" steps -2**63 up by n, one step at a time: its result is computed as the modulo here)
    expected = a[as_intp % a.size] if mode == "wrap" else np.take(a, ids, mode=mode)
    got = dmlgpu.take(a if where == "numpy" else dmlgpu.tensor(a, device=device),
                      ids if where == "numpy" else dmlgpu.tensor(ids, device=device), mode=mode, device=device)
    same_bytes(_host(got), expected)
    if where == "numpy":                                          # big-endian: the same values
        same_bytes(dmlgpu.take(a, ids.astype(">u8"), mode=mode, device=device), expected)
    if mode == "raise":
        for bad in (HUGE[[1]], HUGE[[4]]):                     # -13 and -2**63: out of range, as in NumPy
            with pytest.raises(IndexError):
                np.take(a, bad)
            with pytest.raises(IndexError, match=f"index {int(bad.view(np.int64)[0])} "):
                _host(dmlgpu.take(a, bad if where == "numpy" else dmlgpu.tensor(bad, device=device),
                                  device=device))


@pytest.mark.parametrize("where", ["numpy", "tensor"])
def test_uint64_indices_along_axis_and_full_values_in_layer2(device, where):
    """take_along_axis and put_along_axis read uint64 as intp as NumPy's (2**64 - 1 is -1; 2**63 raises);
    the ONNX-semantics functions keep full 64-bit values (2**64 - 1 is out of range: clamped, or raised)."""
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    idx = np.array([[2**64 - 1], [0], [2**64 - 4]], np.uint64)
    on = (lambda x: x) if where == "numpy" else (lambda x: dmlgpu.tensor(x, device=device))
    same_bytes(_host(dmlgpu.take_along_axis(on(a), on(idx), 1, device=device)), np.take_along_axis(a, idx, 1))
    expected, ours = a.copy(), on(a.copy())
    np.put_along_axis(expected, idx, np.int16(-7), 1)
    dmlgpu.put_along_axis(ours, on(idx), -7, 1, device=device)
    same_bytes(_host(ours), expected)
    bad = np.array([[2**63], [0], [0]], np.uint64)
    with pytest.raises(IndexError):
        np.take_along_axis(a, bad, 1)
    with pytest.raises(IndexError, match="take_along_axis"):
        _host(dmlgpu.take_along_axis(on(a), on(bad), 1, device=device))
    with pytest.raises(IndexError, match="put_along_axis"):     # NumPy indices: at the call; a Tensor's guard
        dmlgpu.put_along_axis(ours, on(bad), 1, 1, device=device)   # the scatter: its target then fails
        _host(ours)
    if where == "tensor":
        ours.write(expected)
    same_bytes(_host(ours), expected)                            # nothing written
    top = np.array([2**64 - 1], np.uint64)                          # layer 2: full 64-bit values
    same_bytes(_host(dmlgpu.gather(on(a), on(top), device=device)), a[[2]])        # clamped into range
    with pytest.raises(IndexError, match="index 18446744073709551615"):
        _host(dmlgpu.gather(on(a), on(top), mode="raise", device=device))


def test_python_ints_too_large_for_intp_raise_overflow_error_as_numpys():
    a = np.arange(4.0)
    for ids in ([2**64 - 1], (1, 2**63), 2**63, [[2**70], [0]], [-2**63 - 1]):
        with pytest.raises(OverflowError):
            np.take(a, ids)
        with pytest.raises(OverflowError, match="take: .*intp"):
            dmlgpu.take(a, ids)


@pytest.mark.parametrize("ids, axis, mode", [
    (np.array([True, False, True]), None, "raise"), ([True, False], None, "raise"), (np.True_, None, "raise"),
    (np.array([[True], [False]]), 1, "raise"), (np.array([True, True]), 0, "wrap"), ([False, 2], 1, "clip"),
    (np.array(False), 0, "raise"), (np.array([], bool), 1, "raise"),
])
@pytest.mark.parametrize("where", ["numpy", "tensor"])
def test_take_reads_booleans_as_integers_as_numpy(device, ids, axis, mode, where):
    """np.take reads boolean indices as 0 and 1 (no warning, as NumPy 2.x); so does dmlgpu.take, for
    boolean Tensors too. take_along_axis and put_along_axis raise IndexError for them, as NumPy's."""
    import warnings
    a = np.arange(12, dtype=np.uint8).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = np.take(a, ids, axis, mode=mode)
        tensor_ids = where == "tensor" and not isinstance(ids, list)
        got = dmlgpu.take(a if where == "numpy" else dmlgpu.tensor(a, device=device),
                          dmlgpu.tensor(np.asarray(ids), device=device) if tensor_ids else ids, axis, mode=mode,
                          device=device)
    if where == "tensor":
        got = got.numpy()
        expected = np.asarray(expected)
    if isinstance(expected, np.generic):
        assert type(got) is type(expected)
    same_bytes(np.asarray(got), np.asarray(expected))
    with pytest.raises(IndexError):
        np.take_along_axis(a, np.array([[True]]), 1)
    with pytest.raises(IndexError, match="take_along_axis: indices must be an integer array"):
        dmlgpu.take_along_axis(a, np.array([[True]]), 1)
    with pytest.raises(IndexError, match="put_along_axis: indices must be an integer array"):
        dmlgpu.put_along_axis(a.copy(), np.array([[True]]), 1, 1)


VALUE_SHAPES = [(), (1,), (2,), (3, 1), (1, 2), (3, 2), (1, 1, 2), (1, 3, 2)]


@pytest.mark.parametrize("vshape", VALUE_SHAPES + [(2, 3, 2), (0,), (3,), (2, 1, 1)])
@pytest.mark.parametrize("arr_kind, idx_kind, val_kind", [
    ("numpy", "numpy", "numpy"), ("numpy", "numpy", "tensor"), ("numpy", "tensor", "numpy"),
    ("tensor", "numpy", "numpy"), ("tensor", "numpy", "tensor"), ("tensor", "tensor", "tensor"),
    ("tensor", "numpy", "list"), ("numpy", "numpy", "list"),
])
def test_put_along_axis_values_broadcast_as_numpys_assignment(device, vshape, arr_kind, idx_kind, val_kind):
    """Values of any shape that broadcasts to the indexed shape (3, 2) are taken, as NumPy's
    ``arr[index] = values`` (dimensions beyond its rank of size 1 included); others raise NumPy's ValueError
    and leave arr unchanged."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0, 2], [1, 1], [3, 0]])
    vals = (np.arange(int(np.prod(vshape)), dtype=np.float32) + 100).reshape(vshape)
    expected = a.copy()
    try:
        np.put_along_axis(expected, idx, vals, 1)
    except ValueError:
        expected = None
    ours = a.copy() if arr_kind == "numpy" else dmlgpu.tensor(a, device=device)
    ids = idx if idx_kind == "numpy" else dmlgpu.tensor(idx, device=device)
    values = {"numpy": vals, "tensor": dmlgpu.tensor(vals, device=device), "list": vals.tolist()}[val_kind]
    if expected is None:
        with pytest.raises(ValueError, match="put_along_axis: shape mismatch: value array of shape"):
            dmlgpu.put_along_axis(ours, ids, values, 1)
        same_bytes(_host(ours), a)
    else:
        dmlgpu.put_along_axis(ours, ids, values, 1)
        same_bytes(_host(ours), expected)


@pytest.mark.parametrize("call", [
    lambda t: dmlgpu.scatter_nd(t, [[1]], np.float32(5)),
    lambda t: dmlgpu.scatter_nd(t, [[1]], np.ones(4, np.float32)),
    lambda t: dmlgpu.scatter_elements(t, [[1]], np.float32(5)),
    lambda t: dmlgpu.scatter_elements(t, [[1, 2]], np.ones((1, 1), np.float32), 1),
])
def test_onnx_scatters_keep_exact_shapes_and_say_where_broadcasting_is(device, call):
    t = dmlgpu.tensor(np.zeros((3, 4), np.float32), device=device)
    with pytest.raises(ValueError, match=r"updates must have shape .*\(ONNX's rule: no broadcasting; "
                                         r"dmlgpu.put_along_axis or t\[key\] = v broadcast\)"):
        call(t)
    assert not t.numpy().any()
