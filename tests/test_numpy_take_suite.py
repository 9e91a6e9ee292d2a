"""NumPy's own TestTake (numpy/_core/tests/test_multiarray.py), run with dmlgpu.take in place of ndarray.take
(issue 39, item 10: items of any fixed size, "S3" strings and a 24-byte record of mixed byte order included).
Object arrays are left out: Python objects cannot live on a device (dmlgpu raises TypeError for them)."""
import numpy as np
import pytest
from numpy.testing import assert_, assert_array_equal, assert_equal, assert_raises

import dmlgpu


_ON_VIEWS = {"on": False}      # TestTakeOnStridedTensorViews: x as a strided Tensor view of its values


def take(x, *args, **kwargs):
    if _ON_VIEWS["on"] and isinstance(x, np.ndarray) and x.ndim:
        view = dmlgpu.tensor(np.ascontiguousarray(x[::-1]))[::-1]      # x's values at a negative stride
        assert view.strides[0] < 0
        got = dmlgpu.take(view, *args, **kwargs)
        return got.numpy() if isinstance(got, dmlgpu.Tensor) else got
    return dmlgpu.take(x, *args, **kwargs)


class TestTake:
    def tst_basic(self, x):
        ind = list(range(x.shape[0]))
        assert_array_equal(take(x, ind, axis=0), x)

    def test_ip_types(self):
        unchecked_types = [bytes, str, np.void, np.object_]
        x = np.random.random(24) * 100
        x = x.reshape((2, 3, 4))
        for types in np._core.sctypes.values():
            for T in types:
                if T not in unchecked_types:
                    self.tst_basic(x.copy().astype(T))
            self.tst_basic(x.astype("S3"))

    def test_raise(self):
        x = np.random.random(24) * 100
        x = x.reshape((2, 3, 4))
        assert_raises(IndexError, take, x, [0, 1, 2], axis=0)
        assert_raises(IndexError, take, x, [-3], axis=0)
        assert_array_equal(take(x, [-1], axis=0)[0], x[1])

    def test_clip(self):
        x = np.random.random(24) * 100
        x = x.reshape((2, 3, 4))
        assert_array_equal(take(x, [-1], axis=0, mode='clip')[0], x[0])
        assert_array_equal(take(x, [2], axis=0, mode='clip')[0], x[1])

    def test_wrap(self):
        x = np.random.random(24) * 100
        x = x.reshape((2, 3, 4))
        assert_array_equal(take(x, [-1], axis=0, mode='wrap')[0], x[1])
        assert_array_equal(take(x, [2], axis=0, mode='wrap')[0], x[0])
        assert_array_equal(take(x, [3], axis=0, mode='wrap')[0], x[1])

    @pytest.mark.parametrize('dtype', ('>i4', '<i4'))
    def test_byteorder(self, dtype):
        x = np.array([1, 2, 3], dtype)
        assert_array_equal(take(x, [0, 2, 1]), [1, 3, 2])

    def test_record_array(self):
        # Note mixed byteorder.
        rec = np.array([(-5, 2.0, 3.0), (5.0, 4.0, 3.0)],
                       dtype=[('x', '<f8'), ('y', '>f8'), ('z', '<f8')])
        rec1 = take(rec, [1])
        assert_(rec1['x'] == 5.0 and rec1['y'] == 4.0)

    def test_out_overlap(self):
        # gh-6272 check overlap on out
        x = np.arange(5)
        y = take(x, [1, 2, 3], out=x[2:5], mode='wrap')
        assert_equal(y, np.array([1, 2, 3]))

    @pytest.mark.parametrize('shape', [(1, 2), (1,), ()])
    def test_ret_is_out(self, shape):
        # 0d arrays should not be an exception to this rule
        x = np.arange(5)
        inds = np.zeros(shape, dtype=np.intp)
        out = np.zeros(shape, dtype=x.dtype)
        ret = take(x, inds, out=out)
        assert ret is out


class TestTakeOnStridedTensorViews(TestTake):
    """NumPy's TestTake again, each array a strided Tensor view of its values (issue 48: axis=None and the
    other axes on views, in every dtype NumPy's test takes)."""
    @pytest.fixture(autouse=True)
    def _on_views(self, monkeypatch):
        monkeypatch.setitem(_ON_VIEWS, "on", True)

    def test_flattened_view_in_every_mode(self):
        x = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
        ind = np.array([[0, 5], [-1, 23], [-24, 7]])
        assert_array_equal(take(x, ind), np.take(x, ind))
        big = np.array([2**64 - 1, 2**64 - 30, 30], np.uint64)          # intp: -1, -30, 30
        assert_array_equal(take(x, big, mode="clip"), np.take(x, big, mode="clip"))
        assert_array_equal(take(x, big, mode="wrap"), x.reshape(-1)[big.view(np.int64) % 24])
        assert_array_equal(take(x, np.array([True, False])), np.take(x, np.array([True, False])))


@pytest.mark.parametrize("dtype", ["S3", "V7", "U3", [("a", "u1"), ("b", ">f8"), ("c", "<i4")], "c32", "V24",
                                   "V8", "u2"])
def test_odd_items_axis_none_on_strided_views(dtype):
    """take and take_along_axis with axis=None on a transposed Tensor of items of any size: the view's
    elements in row-major order, as NumPy's; put_along_axis (items of the kernels' sizes: it moves no others)
    writes through the view."""
    rng = np.random.default_rng(6)
    dtype = np.dtype(dtype)
    x = rng.integers(0, 256, (4, 5, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(4, 5)
    t = dmlgpu.tensor(x)
    idx = np.array([19, 0, 2**64 - 1, 7, 2**64 - 2], np.uint64)       # (as intp: -1 and -2)
    assert dmlgpu.take(t.T, idx).numpy().tobytes() == np.take(x.T, idx).tobytes()
    assert dmlgpu.take_along_axis(t.T, dmlgpu.tensor(idx), None).numpy().tobytes() == \
        np.take_along_axis(x.T, idx, None).tobytes()
    if dtype.itemsize not in (1, 2, 4, 8, 16):
        return
    vals = rng.integers(0, 256, (5, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(5)
    expected = x.copy()
    flat = expected.T.flat
    for i, v in zip(idx.view(np.int64), vals):
        flat[i] = v
    dmlgpu.put_along_axis(t.T, idx, vals, None)
    assert t.numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype", ["S3", "V7", "U3", [("a", "u1"), ("b", ">f8"), ("c", "<i4")], "c32", "V24"])
def test_odd_items_in_numpys_names_and_tensors(dtype):
    """Items of any size through take and take_along_axis, NumPy arrays and Tensors (strided views too)."""
    rng = np.random.default_rng(5)
    dtype = np.dtype(dtype)
    x = rng.integers(0, 256, (4, 5, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(4, 5)
    idx = np.array([[4, 0], [1, 1], [3, -1], [0, 2]])
    assert_array_equal(dmlgpu.take(x, idx, axis=1).view(np.uint8), np.take(x, idx, axis=1).view(np.uint8))
    t = dmlgpu.tensor(x)
    got = dmlgpu.take(t.T, [2, 0], axis=0, mode="wrap")
    assert isinstance(got, dmlgpu.Tensor) and got.dtype == dtype
    assert got.numpy().tobytes() == np.take(x.T, [2, 0], axis=0).tobytes()
    assert dmlgpu.take_along_axis(x, idx, 1).tobytes() == np.take_along_axis(x, idx, 1).tobytes()
    assert dmlgpu.take_along_axis(t, dmlgpu.tensor(idx), 1).numpy().tobytes() == \
        np.take_along_axis(x, idx, 1).tobytes()
    out = dmlgpu.empty((4, 4, 2), dtype)
    assert dmlgpu.take(t, dmlgpu.tensor(idx), axis=1, out=out) is out
    assert out.numpy().tobytes() == np.take(x, idx, axis=1).tobytes()


def _numpy_shape_base_tests():
    try:
        from numpy.lib.tests import test_shape_base
    except ImportError:                             # (NumPy installed without its tests)
        return None, []
    cases = [(cls, name) for cls in (test_shape_base.TestTakeAlongAxis, test_shape_base.TestPutAlongAxis)
             for name in dir(cls) if name.startswith("test_")]
    return test_shape_base, cases


_MODULE, _CASES = _numpy_shape_base_tests()


@pytest.mark.skipif(_MODULE is None, reason="NumPy's own tests are not installed")
@pytest.mark.parametrize("cls, name", _CASES, ids=[f"{c.__name__}.{n}" for c, n in _CASES])
def test_numpys_own_along_axis_tests(monkeypatch, cls, name):
    """NumPy's TestTakeAlongAxis and TestPutAlongAxis (numpy/lib/tests/test_shape_base.py), their module's
    take_along_axis and put_along_axis replaced by dmlgpu's."""
    monkeypatch.setattr(_MODULE, "take_along_axis", dmlgpu.take_along_axis)
    monkeypatch.setattr(_MODULE, "put_along_axis", dmlgpu.put_along_axis)
    method = getattr(cls(), name)
    params = [m for m in getattr(method, "pytestmark", []) if m.name == "parametrize"]
    if params:
        for value in params[0].args[1]:
            method(value)
    else:
        method()


ODD = ["S3", "V7", [("a", "u1"), ("b", ">f8"), ("c", "<i4"), ("d", "V11")], "c32", "U5"]


@pytest.mark.parametrize("dtype", ODD, ids=lambda d: np.dtype(d).str)
@pytest.mark.parametrize("as_tensor", [False, True], ids=["numpy", "tensor"])
def test_odd_items_in_every_layer2_operator(dtype, as_tensor):
    """Layer 2's operators move items of any size bit-exact (as rows of units: dmlgpu/api/items.py), NumPy arrays
    and Tensors, out= and in place included, against the NumPy references."""
    from dmlgpu import reference
    rng = np.random.default_rng(8)
    dtype = np.dtype(dtype)
    data = rng.integers(0, 256, (4, 3, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(4, 3)
    upd = rng.integers(0, 256, (2, 3, dtype.itemsize), dtype=np.uint8).view(dtype).reshape(2, 3)
    idx, rows, cols = np.array([3, -1, 0]), np.array([[2], [0]]), np.array([[2, 0, 1], [0, 2, 2]])

    def op(x):
        return dmlgpu.tensor(x) if as_tensor else x

    def same(got, want):          # (the references may convert byte order; long doubles' padding is not data)
        got = got.numpy() if isinstance(got, dmlgpu.Tensor) else got
        assert got.dtype == dtype
        if dtype.kind == "c":
            assert np.array_equal(got, want, equal_nan=True)
        else:
            assert got.tobytes() == want.astype(dtype).tobytes()

    same(dmlgpu.gather(op(data), idx, axis=-1), reference.gather(data, idx, 1))
    same(dmlgpu.gather_elements(op(data), cols[:, :2], axis=1), reference.gather_elements(data, cols[:, :2], 1))
    same(dmlgpu.gather_nd(op(data), np.array([[3, 1], [0, 2]])), reference.gather_nd(data, np.array([[3, 1], [0, 2]])))
    same(dmlgpu.scatter_nd(op(data), rows, op(upd)), reference.scatter_nd(data, rows, upd))
    same(dmlgpu.scatter_elements(op(data), cols, op(upd), axis=1), reference.scatter_elements(data, cols, upd, 1))
    t = dmlgpu.tensor(data)
    v = dmlgpu.tensor(np.zeros((2, 4, 3), dtype))[1]          # a packed view at an offset, updated in place
    v.write(t)
    assert dmlgpu.scatter_nd(v, rows, dmlgpu.tensor(upd), out=v) is v
    same(v, reference.scatter_nd(data, rows, upd))
    out = dmlgpu.tensor(np.zeros((3, 4), dtype)).T             # a strided out
    assert dmlgpu.gather(t, dmlgpu.tensor(idx), axis=1, out=out) is out
    same(out, reference.gather(data, idx, 1))
    with pytest.raises(TypeError, match="^scatter_nd: reduction 'add' is not supported for dtype"):
        dmlgpu.scatter_nd(data, rows, upd, reduction="add")
    with pytest.raises(TypeError, match="^scatter_nd: updates has dtype"):
        dmlgpu.scatter_nd(data, rows, upd.astype("V" + str(dtype.itemsize + 1)) if dtype.kind != "V" else
                          np.zeros((2, 3), "V3"))
