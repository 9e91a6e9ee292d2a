"""Issue 39: a Tensor that never answers a question wrongly. Comparisons and ``in`` raise TypeError (never an
answer by identity); copy.copy copies, deepcopy and pickle work; one casting rule (NumPy's ``a[...] = value``)
wherever values enter; NumPy's protocol (np.take & co. dispatched to dmlgpu, other NumPy functions and ufuncs
refused); float() / int() / operator.index() of one element."""
import copy
import operator
import pickle
import warnings

import numpy as np
import pytest

import dmlgpu

from strategies import same_bytes


@pytest.fixture(scope="module")
def dev():
    return dmlgpu.default_device()


def test_comparisons_and_in_raise_instead_of_answering_by_identity(dev):
    t = dmlgpu.tensor(np.arange(5.0), device=dev)
    for question in (lambda: t == 3, lambda: t == t.copy(), lambda: t[3] == 3.0, lambda: t != 3, lambda: t < 1,
                     lambda: t >= t, lambda: 3 == t):
        with pytest.raises(TypeError, match="t.numpy\\(\\)"):
            question()
    with pytest.raises(TypeError, match="x in t.numpy\\(\\)"):
        3.0 in t
    with pytest.raises(TypeError, match="numpy.add: .*t.numpy\\(\\)"):
        np.float64(1.0) + t
    with pytest.raises(TypeError, match="t.numpy\\(\\)"):
        np.equal(t, t)
    assert t in [t] and {t: 1}[t] == 1              # identity still holds for containers (hash by identity)


def test_copy_deepcopy_and_pickle(dev):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = dmlgpu.tensor(a, device=dev)
    c, d = copy.copy(t), copy.deepcopy(t)
    v = copy.copy(t[:, 1])                          # a copy of a strided view: its elements, packed
    t.write(np.zeros((3, 4), np.int16))             # later writes do not show in the copies
    same_bytes(c.numpy(), a)
    same_bytes(d.numpy(), a)
    same_bytes(v.numpy(), a[:, 1])
    assert c.buffer is not t.buffer and v.base is None
    u = pickle.loads(pickle.dumps(d))
    assert isinstance(u, dmlgpu.Tensor) and u.device is dmlgpu.default_device()
    same_bytes(u.numpy(), a)
    same_bytes(pickle.loads(pickle.dumps(d.T)).numpy(), a.T)
    nested = copy.deepcopy({"w": d, "same": [d, d]})
    assert nested["same"][0] is nested["same"][1] or np.array_equal(nested["same"][0].numpy(), a)


def _numpy_assignment(value, dtype, shape):
    """What NumPy's ``a[...] = value`` does: (the array, None) or (None, the exception type)."""
    out = np.zeros(shape, dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[...] = value
    except Exception as e:                          # noqa: BLE001 (NumPy's own exception, matched below)
        return None, type(e)
    return out, None


CASTS = [(300, np.uint8), (-1, np.uint8), ([300, 1], np.uint8), (np.array([300, 1]), np.uint8),
         (np.int64(300), np.uint8), (float("nan"), np.int32), (1e10, np.int32), ([float("nan"), 1.0], np.int32),
         (np.array([np.nan, 1e10]), np.int32), (2.7, np.int8), (-129, np.int8), (70000.5, np.float16),
         ([1.5, 2.5], np.float32), (True, np.float32), (2**63, np.int64), (2**64 - 1, np.uint64)]


@pytest.mark.parametrize("value, dtype", CASTS, ids=lambda x: repr(x)[:20])
def test_one_casting_rule_numpys_assignment(dev, value, dtype):
    """write, __setitem__, full, put_along_axis (arrays and Tensors) and a scatter's Python updates: each
    as NumPy's ``a[...] = value`` (OverflowError for 300 into uint8 from a Python int, NaN from a Python
    float into int32 ValueError; arrays cast with NumPy's array cast), never a value NumPy would not give."""
    shape = (2,)
    expected, error = _numpy_assignment(value, dtype, shape)
    t = dmlgpu.zeros(shape, dtype, device=dev)
    host = np.zeros(shape, dtype)

    def into_t(write):
        write()
        return t.numpy()

    writers = [lambda: into_t(lambda: t.write(value)), lambda: into_t(lambda: t.__setitem__(slice(None), value)),
               lambda: dmlgpu.full(shape, value, dtype, device=dev).numpy()]
    if isinstance(value, list):                     # tensor(list, dtype) as np.array(list, dtype)
        writers.append(lambda: dmlgpu.tensor(value, dtype, device=dev).numpy())
    if np.ndim(value) == 0 or isinstance(value, list):
        writers.append(lambda: into_t(lambda: dmlgpu.put_along_axis(t, np.array([0, 1]), value, axis=0)))
        writers.append(lambda: (dmlgpu.put_along_axis(host, [0, 1], value, axis=0), host)[1])
    if isinstance(value, list):
        writers.append(lambda: dmlgpu.scatter_nd(np.zeros(shape, dtype), [[0], [1]], value))
    for write in writers:
        t.write(np.zeros(shape, dtype))
        if error is not None:
            with pytest.raises(error):
                write()
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same_bytes(write(), expected)


def test_the_issues_casts():
    """The findings as the issue gave them, and what NumPy does, stated."""
    with pytest.raises(OverflowError, match="^put_along_axis: Python integer 300 out of bounds for uint8"):
        dmlgpu.put_along_axis(np.zeros(2, np.uint8), [0], 300, axis=0)
    with pytest.raises(OverflowError, match="^full: Python integer 300 out of bounds for uint8"):
        dmlgpu.full(2, 300, np.uint8)
    with pytest.raises(OverflowError, match="^Tensor.write: Python integer 300"):
        dmlgpu.zeros(2, np.uint8).write(300)
    with pytest.raises(ValueError, match="^Tensor.write: cannot convert float NaN to integer"):
        dmlgpu.zeros(2, np.int32).write(float("nan"))      # a Python float: NumPy raises
    t = dmlgpu.zeros(2, np.int32)
    with pytest.warns(RuntimeWarning, match="invalid value"):  # an array: NumPy's cast, with its warning
        t.write(np.array([np.nan, 1e10]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert t.tolist() == np.array([np.nan, 1e10]).astype(np.int32).tolist()
    with pytest.warns(RuntimeWarning, match="overflow"):          # NumPy's a[...] = [0.1, 1e40] warns alike
        got = dmlgpu.scatter_elements(np.zeros(3, np.float32), [2, 0], [0.1, 1e40])
    same_bytes(got,
               np.array([np.float32(np.inf), 0, np.float32(0.1)], np.float32))


def test_numpy_functions_dispatch_or_refuse(dev):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = dmlgpu.tensor(a, device=dev)
    got = np.take(t, [2, 0], axis=1)
    assert isinstance(got, dmlgpu.Tensor)
    same_bytes(got.numpy(), np.take(a, [2, 0], axis=1))
    idx = np.array([[3], [0], [1]])
    got = np.take_along_axis(t, idx, axis=1)
    assert isinstance(got, dmlgpu.Tensor)
    same_bytes(got.numpy(), np.take_along_axis(a, idx, axis=1))
    got = np.take(a, dmlgpu.tensor(np.array([5, 1]), device=dev))   # (NumPy dispatches on a and out only:
    assert got.tolist() == [5.0, 1.0]                                   # the indices are downloaded, right)
    assert np.put_along_axis(t, idx, -1.0, axis=1) is None
    np.put_along_axis(a, idx, -1.0, axis=1)
    same_bytes(t.numpy(), a)
    assert np.shape(t) == (3, 4) and np.ndim(t) == 2 and np.size(t) == 12
    for fn in (np.sum, np.mean, np.concatenate, np.copyto, np.array_equal, np.where, np.sort):
        with pytest.raises(TypeError, match="does not run on a dmlgpu.Tensor.*t.numpy\\(\\)"):
            fn(t, t) if fn in (np.copyto, np.array_equal) else fn([t, t]) if fn is np.concatenate else fn(t)
    same_bytes(np.asarray(t), a)                    # np.asarray / np.array still download a copy


def test_python_scalars_of_one_element(dev):
    assert float(dmlgpu.tensor(np.array([2.5], np.float32), device=dev)) == 2.5
    assert int(dmlgpu.tensor(np.array([[7.9]]), device=dev)) == 7
    assert operator.index(dmlgpu.tensor(np.array(4, np.int32), device=dev)) == 4
    assert complex(dmlgpu.tensor(np.array([1 + 2j]), device=dev)) == 1 + 2j
    assert [10, 11, 12][dmlgpu.tensor(np.array([2], np.uint8), device=dev)] == 12
    with pytest.raises(TypeError, match="^float\\(\\) of a Tensor of 3 elements"):
        float(dmlgpu.zeros(3, device=dev))
    with pytest.raises(TypeError, match="^operator.index\\(\\) of a Tensor of dtype float32"):
        operator.index(dmlgpu.zeros(1, device=dev))
