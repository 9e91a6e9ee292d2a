"""Issue 39: a Tensor that never loses a write. Basic indexing, transpose/T, squeeze and flatten give strided
views sharing their base's buffer; write(), ``t[key] = value`` and every ``out=`` through a view reach the
base, checked against the same operations on NumPy mirrors."""
import copy
import pickle

import numpy as np
import pytest

import dmlgpu

from strategies import same_bytes


@pytest.fixture(scope="module", params=[True, False], ids=["mapped", "staged"])
def dev(request, memory_device):
    d = memory_device(request.param)
    yield d
    d.close()


KEYS = [(slice(None), 1), (slice(0, 3, 2),), (slice(None, None, -1), slice(1, None, 2)), (None,), (None, 1),
        (Ellipsis, 2), (1, slice(None), None), (slice(2, 0, -1), slice(None, None, 3)), (-1, slice(None, None, -2)),
        (slice(None), slice(None), None), (Ellipsis,), 2, (slice(1, 2), 0)]


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.int64, np.complex128])
def test_writes_through_any_basic_selection_reach_the_base(dev, dtype):
    """The issue's first finding: ``m[:, 1].write(...)`` left m unchanged."""
    rng = np.random.default_rng(1)
    base = (rng.integers(0, 100, (4, 6)) + 0).astype(dtype)
    for key in KEYS:
        m = dmlgpu.tensor(base, device=dev)
        mirror = base.copy()
        v = m[key]
        assert v.base is m and v.buffer is m.buffer, key
        same_bytes(v.numpy(), mirror[key])
        new = rng.integers(0, 100, mirror[key].shape).astype(dtype)
        v.write(new)
        mirror[key] = new
        same_bytes(m.numpy(), mirror)
        m[key] = 7                                   # __setitem__: a scalar broadcast
        mirror[key] = 7
        same_bytes(m.numpy(), mirror)
        same_bytes(v.numpy(), mirror[key])


def test_the_issues_examples(dev):
    m = dmlgpu.zeros((3, 4), np.float32, device=dev)
    m[:, 1].write(np.ones(3))
    m[0:3:2].write(np.full((2, 4), 2.0))
    expected = np.zeros((3, 4), np.float32)
    expected[:, 1] = 1
    expected[0:3:2] = 2
    same_bytes(m.numpy(), expected)
    assert m[None].base is m and m[:, 1].base is m
    cache = dmlgpu.zeros((5, 6), np.int32, device=dev)
    mirror = np.zeros((5, 6), np.int32)
    dmlgpu.put_along_axis(cache[:, 4], np.array([3]), 9, axis=0)
    np.put_along_axis(mirror[:, 4], np.array([3]), 9, axis=0)
    v = cache[:, 3]
    dmlgpu.scatter_nd(v, np.array([[1], [4]]), np.array([5, 6], np.int32), out=v)
    mirror[[1, 4], 3] = [5, 6]
    same_bytes(cache.numpy(), mirror)


def test_setitem_casts_and_broadcasts_as_numpy(dev):
    t = dmlgpu.zeros((3, 4), np.int16, device=dev)
    a = np.zeros((3, 4), np.int16)
    t[1:, ::2] = [[1, 2]]
    a[1:, ::2] = [[1, 2]]
    t[0] = np.arange(4.7, 8.7)                      # float64 array into int16: cast as NumPy's assignment
    a[0] = np.arange(4.7, 8.7)
    t[:, -1] = dmlgpu.tensor(np.array([9, 8, 7], np.int16), device=dev)     # a Tensor value, on the device
    a[:, -1] = [9, 8, 7]
    same_bytes(t.numpy(), a)
    with pytest.raises(ValueError, match="^Tensor.write: an array of shape \\(3,\\) does not broadcast"):
        t[0] = [1, 2, 3]
    t[[0, 1]] = 1                                                    # index arrays: a scatter (test_indexing.py)
    a[[0, 1]] = 1
    same_bytes(t.numpy(), a)
    same_bytes(t.numpy(), a)


def test_transpose_squeeze_flatten_are_views(dev):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    t = dmlgpu.tensor(a, device=dev)
    for got, want in [(t.T, a.T), (t.transpose(1, 0, 2), a.transpose(1, 0, 2)), (t.transpose((2, 0, 1)),
                      a.transpose((2, 0, 1))), (t[:, :1].squeeze(), a[:, :1].squeeze()),
                      (t[:1].squeeze(0), a[:1].squeeze(0)), (t.flatten(), a.ravel()),
                      (t[1].T.reshape(2, 2, 3), a[1].T.reshape(2, 2, 3)), (t[:, 1:].reshape(2, 8), a[:, 1:].reshape(2, 8))]:
        assert got.base is t
        same_bytes(got.numpy(), want)
        assert got.strides == want.strides, (got, want.strides)
    t.T[1:3] = 0
    a.T[1:3] = 0
    same_bytes(t.numpy(), a)
    with pytest.raises(ValueError, match="^Tensor.reshape: this strided view .* without a copy"):
        t[:, ::2].reshape(2, 8)
    with pytest.raises(ValueError, match="^Tensor.transpose: axes"):
        t.transpose(0, 0, 1)
    with pytest.raises(ValueError, match="^Tensor.squeeze: cannot select an axis"):
        t.squeeze(1)
    with pytest.raises(np.exceptions.AxisError, match="^Tensor.squeeze: axis 3 is out of bounds"):
        t.squeeze(3)
    same_bytes(t.T.copy().flatten().numpy(), a.T.ravel())


def test_strided_views_in_every_operator(dev):
    """Strided views as data, indices, updates and out= of every layer-2 function and NumPy name, against
    the same calls on NumPy's views."""
    rng = np.random.default_rng(3)
    base = rng.integers(-50, 50, (6, 8)).astype(np.float32)
    t = dmlgpu.tensor(base, device=dev)
    idx_base = np.array([[2, 0, 1, 5], [3, 3, 0, 1]])
    it = dmlgpu.tensor(idx_base, device=dev)
    same_bytes(dmlgpu.gather(t.T, it[:, ::2], axis=0).numpy(), np.take(base.T, idx_base[:, ::2], axis=0))
    same_bytes(dmlgpu.take(t[:, 1::3], it[1, 2:], axis=1).numpy(), np.take(base[:, 1::3], idx_base[1, 2:], axis=1))
    same_bytes(dmlgpu.gather_elements(t[::-1], it[:, :2].T, axis=0).numpy(),
               np.take_along_axis(base[::-1][:, :2], idx_base[:, :2].T, axis=0))
    same_bytes(dmlgpu.gather_nd(t.T, it.T[:, :1]).numpy(), base.T[idx_base.T[:, 0]])
    upd = dmlgpu.tensor(rng.integers(0, 9, (6, 8)).astype(np.float32), device=dev)
    expected = base.copy()
    expected.T[[2, 0]] = upd.numpy()[:, :2].T
    got = dmlgpu.scatter_nd(t.T, np.array([[2], [0]]), upd[:, :2].T)
    same_bytes(got.numpy(), expected.T)
    same_bytes(t.numpy(), base)                      # not in place: t untouched
    out = dmlgpu.zeros((8, 6), np.float32, device=dev)
    dmlgpu.scatter_nd(t.T, np.array([[2], [0]]), upd[:, :2].T, out=out[:, ::-1])
    same_bytes(out.numpy()[:, ::-1], expected.T)
    dmlgpu.scatter_elements(t.T, np.array([[1, 2, 3, 4, 5, 0]]), upd.T[:1], axis=0, out=t.T)   # in place, strided
    mirror = base.copy()
    np.put_along_axis(mirror.T, np.array([[1, 2, 3, 4, 5, 0]]), upd.numpy().T[:1], axis=0)
    same_bytes(t.numpy(), mirror)
    dmlgpu.put_along_axis(t[1::2, ::3], np.array([[1], [0], [2]]), 77.0, axis=1)
    np.put_along_axis(mirror[1::2, ::3], np.array([[1], [0], [2]]), 77.0, axis=1)
    same_bytes(t.numpy(), mirror)
    res = dmlgpu.zeros((2, 8), np.float32, device=dev)
    dmlgpu.take(t, [5, 0], axis=0, out=res[::-1])
    same_bytes(res.numpy(), mirror[[0, 5]])


def test_strided_views_in_recordings_and_queues(dev):
    a = np.arange(30, dtype=np.int16).reshape(5, 6)
    t = dmlgpu.tensor(a, device=dev)
    with dev.record() as rec:
        t.T[2] = dmlgpu.tensor(np.full(5, -1, np.int16), device=dev)
        g = dmlgpu.gather(t[:, ::-2], dmlgpu.tensor(np.array([0, 4], np.int32), device=dev))
        rec.download(g)
    a.T[2] = -1
    same_bytes(rec.host(g), a[:, ::-2][[0, 4]])
    same_bytes(t.numpy(), a)
    with dev.record() as rec:                       # a strided view has no byte range to move: refused
        with pytest.raises(TypeError, match="strided Tensor view .* record its base"):
            rec.download(t.T)
        rec.download(t[1:3])                        # a packed view at an offset: its bytes


def test_item_strides_repr(dev):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = dmlgpu.tensor(a, device=dev)
    assert t.T.item(3, 1) == a.T[3, 1] and t[::-1, 1::2].item(2) == a[::-1, 1::2].flat[2]
    assert t.strides == a.strides and t[:, ::2].strides == a[:, ::2].strides
    assert "strides (8, 32)" in repr(t.T)
    assert t[1:2].view(np.int64).strides == (32, 8)
    with pytest.raises(ValueError, match="^Tensor.view: a strided view's items cannot change size"):
        t.T.view(np.float32)
