"""dmlgpu.Tensor as an array (attributes, views at byte offsets, reshape, view, basic indexing, copies, host
reads and writes), its NumPy-style constructors, and what a Tensor's host side means, each against NumPy, on
the default device, on one that moves bytes through staging (as discrete GPUs do) and on one that runs every
call at once (max_queued=0)."""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import dmlgpu

DTYPES = [np.uint8, np.bool_, np.int8, np.float16, ml_dtypes.bfloat16, np.int16, np.float32, np.int32,
          np.float64, np.int64, np.complex64, np.complex128]          # items of 1, 2, 4, 8 and 16 bytes


@pytest.fixture(scope="module", params=["default", "staged", "unqueued"])
def dev(request):
    if request.param == "default":
        yield dmlgpu.default_device()
        return
    d = dmlgpu.Device(direct_memory=False) if request.param == "staged" else dmlgpu.Device(max_queued=0)
    yield d
    d.close()


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype).reshape(shape) \
        if np.dtype(dtype) != np.bool_ else rng.integers(0, 2, n).astype(bool).reshape(shape)


def same(got, want):
    """Equal shapes, dtypes and bytes (NaN payloads and signed zeros included)."""
    got = got.numpy() if isinstance(got, dmlgpu.Tensor) else np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


# ---- constructors ----
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_zeros_ones_full_of_every_item_size(dev, dtype):
    for shape in [(), (0,), 1, 5, (3, 7), (2, 0, 3), (33, 5)]:
        same(dmlgpu.zeros(shape, dtype, device=dev), np.zeros(shape, dtype))
        same(dmlgpu.ones(shape, dtype, device=dev), np.ones(shape, dtype))
        value = sample((), dtype, seed=7)[()]
        same(dmlgpu.full(shape, value, dtype, device=dev), np.full(shape, value, dtype))
        t = dmlgpu.empty(shape, dtype, device=dev)
        assert t.shape == np.empty(shape).shape and t.dtype == np.dtype(dtype) and t.offset == 0


def test_full_patterns_that_are_not_one_word(dev):
    """8- and 16-byte items whose 32-bit words differ: one item uploaded, doubled by device copies."""
    for value, dtype in [(1.5, np.float64), (-3, np.int64), (1 + 2j, np.complex128), (2.5 - 1j, np.complex64)]:
        for n in (1, 2, 3, 7, 64, 1000):
            same(dmlgpu.full(n, value, dtype, device=dev), np.full(n, value, dtype))
    same(dmlgpu.full((3, 2), np.void(b"abcdef"), device=dev), np.full((3, 2), np.void(b"abcdef")))   # 6 bytes


def test_full_and_constructors_follow_numpy_defaults(dev):
    assert dmlgpu.full(3, 1.5, device=dev).dtype == np.full(3, 1.5).dtype
    assert dmlgpu.full(3, 7, device=dev).dtype == np.full(3, 7).dtype
    assert dmlgpu.full(2, True, device=dev).dtype == np.bool_
    same(dmlgpu.full((2, 3), [1, 2, 3], np.int16, device=dev), np.full((2, 3), [1, 2, 3], np.int16))
    assert dmlgpu.empty(5, "f4", device=dev).shape == (5,)          # the TypeError
    assert dmlgpu.zeros((2, 3), device=dev).dtype == np.float32
    assert dmlgpu.empty(np.int64(4), device=dev).shape == (4,)
    assert dmlgpu.zeros(np.array([2, 3]), device=dev).shape == (2, 3)


def test_empty_writes_nothing(dev, monkeypatch):
    calls = []
    monkeypatch.setattr(dev.runtime, "fill_buffer", lambda *a: calls.append(a))
    monkeypatch.setattr(dev.runtime, "write_bytes", lambda *a: calls.append(a))
    dmlgpu.empty((64, 64), np.float32, device=dev)
    assert calls == [] or dev.runtime.canary_words      # (test mode fills guard words only)


def test_like_constructors(dev):
    a = sample((3, 4), np.int16)
    t = dmlgpu.tensor(a, device=dev)
    same(dmlgpu.zeros_like(t), np.zeros_like(a))
    same(dmlgpu.ones_like(a, device=dev), np.ones_like(a))
    same(dmlgpu.full_like(t, 9, dtype=np.float32), np.full_like(a, 9, dtype=np.float32))
    e = dmlgpu.empty_like(t)
    assert e.shape == a.shape and e.dtype == a.dtype and e.device is dev
    assert dmlgpu.zeros_like(t).device is dev


def test_tensor_and_asarray_take_a_dtype(dev):
    same(dmlgpu.tensor([1, 2, 3], dtype=np.float16, device=dev), np.array([1, 2, 3], np.float16))
    same(dmlgpu.tensor([[1.5, -2.5]], dtype="i4", device=dev), np.array([[1.5, -2.5]]).astype("i4"))
    same(dmlgpu.tensor(np.float64(2.0), device=dev), np.array(2.0))
    t = dmlgpu.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    same(dmlgpu.tensor(t, dtype=np.int64), np.arange(6).reshape(2, 3))
    same(dmlgpu.tensor(t[1]), np.arange(3, 6, dtype=np.float32))           # a view: its bytes only
    assert dmlgpu.asarray(t) is t and dmlgpu.asarray(t, dtype=np.float32, device=dev) is t
    u = dmlgpu.asarray(t, dtype=np.float64)
    assert u is not t and u.device is dev
    same(u, np.arange(6, dtype=np.float64).reshape(2, 3))
    same(dmlgpu.asarray([[1, 2]], dtype=np.uint8, device=dev), np.array([[1, 2]], np.uint8))


def test_constructor_errors_name_the_function(dev):
    with pytest.raises(ValueError, match="^empty: negative dimensions"):
        dmlgpu.empty((2, -1), device=dev)
    with pytest.raises(TypeError, match="^zeros: shape must be an int or a sequence of ints"):
        dmlgpu.zeros("ab", device=dev)
    with pytest.raises(TypeError, match="^ones: dtype object cannot live on a device"):
        dmlgpu.ones(2, object, device=dev)
    with pytest.raises(ValueError, match="^full: a fill value of shape \\(2,\\) does not broadcast"):
        dmlgpu.full((2, 3), [1, 2], device=dev)
    with pytest.raises(TypeError, match="^tensor: device must be a dmlgpu.Device or a device index"):
        dmlgpu.tensor([1], device="gpu")
    with pytest.raises(TypeError, match="^tensor: dtype object"):
        dmlgpu.tensor([1, "a"], dtype=object, device=dev)


# ---- attributes and NumPy's protocols ----
def test_attributes_len_and_numpy_protocols(dev):
    a = sample((4, 3, 2), np.float32)
    t = dmlgpu.tensor(a, device=dev)
    assert (t.ndim, t.size, t.nbytes, t.itemsize, len(t)) == (a.ndim, a.size, a.nbytes, a.itemsize, len(a))
    same(np.asarray(t), a)
    same(np.array(t, dtype=np.float64), a.astype(np.float64))
    same(t.__array__(np.float64), a.astype(np.float64))            # NumPy 1's call
    with pytest.raises(TypeError, match="^numpy.sum does not run on a dmlgpu.Tensor.*t.numpy\\(\\)"):
        np.sum(t)                                    # issue 39: no silent download (as CuPy's arrays)
    assert np.asarray(t).dtype == np.float32 and np.asarray(t).shape == (4, 3, 2)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError, match="^Tensor.__array__: .*copy=False"):
            np.asarray(t, copy=False)
    assert [r.tolist() for r in t] == a.tolist()               # iteration yields rows (views)
    s = dmlgpu.tensor(np.float32(3), device=dev)
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(s)
    assert (s.ndim, s.size, s.item(), s.tolist(), bool(s)) == (0, 1, 3.0, 3.0, True)
    with pytest.raises(ValueError, match="truth value of a tensor with 24 elements is ambiguous"):
        bool(t)
    e = dmlgpu.zeros((0, 5), device=dev)
    assert (len(e), e.size, e.nbytes, e.tolist()) == (0, 0, 0, [])
    same(e.numpy(), np.zeros((0, 5), np.float32))


def test_tolist_item_repr(dev):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    t = dmlgpu.tensor(a, device=dev)
    assert t.tolist() == a.tolist()
    for args in [(5,), (-1,), (2, 3), ((1, -2),), (np.int64(7),)]:
        assert t.item(*args) == a.item(*args) and type(t.item(*args)) is type(a.item(*args))
    assert t[1:].item(0) == 4 and t[2].item(-1) == 11                   # views: their own elements
    with pytest.raises(ValueError, match="^Tensor.item: can only convert a tensor of size 1"):
        t.item()
    with pytest.raises(IndexError, match="^Tensor.item: index 12 is out of bounds for size 12"):
        t.item(12)
    with pytest.raises(IndexError, match="^Tensor.item: index 4 is out of bounds for axis 1 with size 4"):
        t.item(0, 4)
    r = repr(t[1:])
    assert "(2, 4)" in r and "int16" in r and dev.info.name in r and "byte offset 8" in r
    assert str(t).startswith(repr(t)) and "[[ 0  1  2  3]" in str(t)


@pytest.mark.parametrize("shape, dtype", [((2000,), np.float32), ((40, 50), np.int64), ((3, 400), np.float16),
                                          ((5, 6, 70), np.bool_), ((1001,), ml_dtypes.bfloat16), ((7, 7, 7, 7), np.float64),
                                          ((2000,), np.complex64)], ids=str)
def test_str_of_a_large_tensor_is_numpys_summary(dev, shape, dtype, monkeypatch):
    """str() of more than NumPy's threshold of elements is str(ndarray)'s summary (with "..."), reading only the
    items it shows: a download of at most (2 * edgeitems + 1) items per axis, never the whole."""
    a = (np.random.default_rng(1).standard_normal(shape) * 100).astype(dtype)
    t = dmlgpu.tensor(a, device=dev)
    downloads = []
    numpy = dmlgpu.Tensor.numpy
    monkeypatch.setattr(dmlgpu.Tensor, "numpy", lambda self: downloads.append(self.size) or numpy(self))
    head, values = str(t).split("\n", 1)
    assert head == repr(t) and values == str(a) and "..." in values
    assert downloads and max(downloads) <= 7 ** len(shape)
    with np.printoptions(threshold=10, edgeitems=1):         # NumPy's print options, as for its own arrays
        assert str(t).split("\n", 1)[1] == str(a)
        v = t.reshape(-1)[1::3] if len(shape) > 1 else t[1::3]     # a strided view
        assert str(v).split("\n", 1)[1] == str(a.reshape(-1)[1::3])
    monkeypatch.undo()
    with np.printoptions(threshold=10**6):                   # under the threshold: all of it
        assert str(t).split("\n", 1)[1] == str(a)


# ---- views ----
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_reshape_is_a_view(dev, dtype):
    a = sample((4, 6), dtype)
    t = dmlgpu.tensor(a, device=dev)
    for shape in [(24,), (2, 12), (-1, 3), (2, -1, 4), ((3, 8),), ([4, 6],), (24, 1, 1)]:
        r = t.reshape(*shape)
        same(r, a.reshape(*shape))
        assert r.buffer is t.buffer and r.offset == 0 and r.base is t
    b = sample((4, 6), dtype, seed=1)
    t.reshape(-1).write(b.reshape(-1))                      # a write through the view changes the base
    same(t, b)
    one = dmlgpu.tensor(a[:1, :1], device=dev)
    same(one.reshape(()), a[:1, :1].reshape(()))
    with pytest.raises(ValueError, match="^Tensor.reshape: cannot reshape a tensor of size 24 into shape \\(5, -1\\)"):
        t.reshape(5, -1)
    with pytest.raises(ValueError, match="^Tensor.reshape: can only specify one unknown dimension"):
        t.reshape(-1, -1)
    with pytest.raises(ValueError, match="^Tensor.reshape: cannot reshape a tensor of size 24 into shape \\(5,\\)"):
        t.reshape(5)
    with pytest.raises(ValueError, match="order='C'"):
        t.reshape(24, order="F")


def test_view_changes_the_dtype_as_numpy(dev):
    a = sample((3, 16), np.uint8)
    t = dmlgpu.tensor(a, device=dev)
    for dtype in [np.int8, np.uint16, np.float32, np.float64, np.complex128, ml_dtypes.bfloat16]:
        v = t.view(dtype)
        same(v, a.view(dtype))
        assert v.buffer is t.buffer
        same(v.view(np.uint8), a)
    same(t[1].view(np.uint32), a[1].view(np.uint32))             # a view of a view, at an offset
    assert t[1].view(np.uint32).offset == 16
    same(dmlgpu.tensor(np.float32(1.0), device=dev).view(np.int32), np.float32(1.0).reshape(()).view(np.int32))
    with pytest.raises(ValueError, match="^Tensor.view: changing the dtype of a 0-d tensor"):
        dmlgpu.tensor(np.float32(1.0), device=dev).view(np.float64)
    with pytest.raises(ValueError, match="^Tensor.view: the last axis \\(3 items of 1 bytes\\)"):
        dmlgpu.tensor(np.zeros((2, 3), np.uint8), device=dev).view(np.uint16)
    with pytest.raises(ValueError, match="^Tensor.view: the last axis"):
        dmlgpu.tensor(np.zeros(2, "V6"), device=dev).view(np.uint32)


def test_leading_axis_views_share_the_buffer(dev):
    for dtype in DTYPES:
        a = sample((5, 3, 2), dtype)
        t = dmlgpu.tensor(a, device=dev)
        size = a.itemsize * 6
        for key, offset in [(2, 2 * size), (-1, 4 * size), (slice(1, 4), size), (slice(3, None), 3 * size),
                            ((slice(1, 3), Ellipsis), size), ((2, 1), 2 * size + 2 * a.itemsize), ((4, 2, 1), 29 * a.itemsize),
                            ((1, slice(1, 3)), size + 2 * a.itemsize), (Ellipsis, 0), ((), 0),
                            (slice(None), 0), ((None, 1), size), ((slice(2, 3, 5),), 2 * size)]:
            v = t[key]
            same(v, a[key])
            assert v.buffer is t.buffer and v.offset == offset, (key, v.offset)
        v = t[1:4]
        b = sample((5, 3, 2), dtype, seed=2)
        t.write(b)                                    # write the base, read the view
        same(v, b[1:4])
        c = sample((3, 3, 2), dtype, seed=3)
        v.write(c)                                    # write the view, read the base: its rows only
        b[1:4] = c
        same(t, b)
        same(v[1:][0], b[1:4][1:][0])                 # views of views
        assert v[1:][0].offset == 2 * size


def test_a_view_keeps_its_buffer_alive(dev):
    a = np.arange(40, dtype=np.int32).reshape(10, 4)
    v = dmlgpu.tensor(a, device=dev)[3:5]
    for _ in range(3):                                # the base is gone: new buffers must not reuse its block
        dmlgpu.tensor(np.full((10, 4), -1, np.int32), device=dev)
    same(v, a[3:5])


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_other_basic_indexing_gives_strided_views(dev, dtype, monkeypatch):
    a = sample((6, 5, 4), dtype)
    t = dmlgpu.tensor(a, device=dev)
    keys = [(slice(None), 1), (Ellipsis, 2), (slice(None, None, 2),), (slice(None, None, -1),), (1, slice(None), 3),
            (slice(1, 5, 3), slice(None), slice(0, 4, 2)), (None, slice(None), 0), (slice(None), None, 2),
            (0, slice(1, 4)), (slice(2, 4), slice(1, 3)), (Ellipsis, None), (-1, -1, slice(None, None, -2)),
            (slice(None), slice(None), None, slice(1, 2)), (slice(5, 0, -2), Ellipsis, 1)]
    read = []
    monkeypatch.setattr(dev.runtime, "read_range", lambda *args: read.append(args) or pytest.fail("downloaded"))
    got = [t[key] for key in keys]
    monkeypatch.undo()
    assert not read
    for key, g in zip(keys, got):
        assert isinstance(g, dmlgpu.Tensor) and g.device is dev and g.base is t and g.buffer is t.buffer
        assert g.strides == a[key].strides or a[key].size <= 1 or 1 in a[key].shape, key   # NumPy's strides
        same(g, a[key])
    v = t[1:5]                                        # from a view at an offset
    same(v[:, ::2, 1], a[1:5][:, ::2, 1])
    same(t[:, 7:9], a[:, 7:9])                        # empty selections
    same(t[::-1, 0:0], a[::-1, 0:0])


def test_indexing_errors_name_the_fix(dev):
    t = dmlgpu.tensor(np.zeros((3, 4), np.float32), device=dev)
    with pytest.raises(IndexError, match="^Tensor\\[\\]: index 3 is out of bounds for axis 0 with size 3"):
        t[3]
    with pytest.raises(IndexError, match="^Tensor\\[\\]: index -5 is out of bounds for axis 1 with size 4"):
        t[0, -5]
    with pytest.raises(IndexError, match="^Tensor\\[\\]: too many indices for tensor: tensor is 2-dimensional, but 3"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., 0, ...]
    for key in (1.0, "a", (0, 1.5), object()):       # (index arrays: tests/test_indexing.py)
        with pytest.raises(IndexError, match="^Tensor\\[\\]: only integers, slices .* and integer or boolean arrays"):
            t[key]


# ---- copies ----
def test_copy_packed_and_astype(dev):
    a = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32) * 100
    t = dmlgpu.tensor(a, device=dev)
    assert t._packed() is t
    v = t[2:5]
    p = v._packed()
    assert p.offset == 0 and p.buffer is not t.buffer
    c = v.copy()
    t.write(np.zeros_like(a))                         # the copies are the bytes at the time they were made
    same(c, a[2:5])
    same(p, a[2:5])
    same(t[1].astype(np.float64), np.zeros(4))
    same(dmlgpu.tensor(a, device=dev)[3:].astype(np.int32), a[3:].astype(np.int32))
    assert t.astype(np.float32, copy=False) is t
    assert t.astype(np.float32).buffer is not t.buffer


def test_copies_are_queued_in_order(dev):
    table = np.arange(60, dtype=np.int32).reshape(15, 4)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.array([3, 9, 14, 0], np.int64), device=dev)
    out = dmlgpu.gather(t, ids)                      # queued
    before = dev.runtime.submitter.submissions
    c = out[1:3].copy()                              # queued after it
    d = c[1:].copy()
    assert dev.runtime.submitter.submissions == before or not dev.max_queued
    same(d, table[[14]])
    same(c, table[[9, 14]])
    same(out[::2], table[[3, 14]])


def test_device_copy_byte_ranges():
    """Device.copy_buffer at any byte offsets, across the blocks of chunked buffers, queued and run at once."""
    for dev in (dmlgpu.Device(chunk_bytes=256), dmlgpu.Device(chunk_bytes=256, max_queued=0, direct_memory=False)):
        data = np.random.default_rng(5).integers(0, 256, 3000, dtype=np.uint8)
        src = dev.buffer(data)
        dst = dev.buffer(nbytes=3000)
        assert src.chunked
        for n, s, d in [(1000, 3, 250), (1, 2999, 0), (700, 255, 1001), (256, 0, 256)]:
            dev.runtime.copy_buffer(src, dst, n, src_offset=s, dst_offset=d)
            want = dst_host = dst.read()
            want = dst_host.copy()
            assert np.array_equal(want[d:d + n], data[s:s + n])
        with pytest.raises(ValueError, match="does not fit a buffer of 3000 bytes"):
            dev.runtime.copy_buffer(src, dst, 10, src_offset=2995)
        t = dmlgpu.tensor(data.reshape(100, 30), device=dev)
        same(t[7:93], data.reshape(100, 30)[7:93])
        same(t[50:].copy(), data.reshape(100, 30)[50:])
        same(t[::3, 1:5], data.reshape(100, 30)[::3, 1:5])          # gathered from blocks, at an offset too
        same(t[10:][::-7, 2], data.reshape(100, 30)[10:][::-7, 2])
        dev.close()


def test_to_another_device(dev):
    a = sample((3, 5), np.float16)
    t = dmlgpu.tensor(a, device=dev)
    assert t.to(dev) is t
    other = dmlgpu.Device(direct_memory=False)
    try:
        u = t[1:].to(other)
        assert u.device is other
        same(u, a[1:])
        same(dmlgpu.tensor(t[1:], device=other), a[1:])
    finally:
        other.close()
    with pytest.raises(TypeError, match="^Tensor.to: device must be"):
        t.to("cpu")


# ---- the host side: the same on every memory type ----
def test_host_is_numpy_and_write_on_every_memory(dev):
    t = dmlgpu.tensor(np.arange(8, dtype=np.int32), device=dev)
    with pytest.raises(AttributeError, match="Tensor.host was removed.*numpy\\(\\).*write\\(\\).*rec.host"):
        t.host
    r = dmlgpu.gather(t, dmlgpu.tensor(np.array([7, 0], np.int32), device=dev))   # a computed result
    same(r, np.array([7, 0], np.int32))
    t.write(np.full(8, 5, np.int32))
    same(t, np.full(8, 5, np.int32))
    t[2:4].write(1)                                   # broadcast, as a[...] = 1
    same(t, np.array([5, 5, 1, 1, 5, 5, 5, 5], np.int32))
    with pytest.raises(ValueError, match="^Tensor.write: an array of shape \\(3,\\) does not broadcast"):
        t.write([1, 2, 3])
    t[4:6].write(t[2:4])                              # a Tensor: copied on the device
    t[0:2].write(t[1:3])                              # overlapping: through the host
    t[6:].write(dmlgpu.tensor(np.array([8, 9], np.int64), device=dev))     # another dtype: cast
    same(t, np.array([5, 1, 1, 1, 1, 1, 8, 9], np.int32))


def test_recording_host_copies(dev):
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.zeros(3, np.int32), device=dev)
    other = dmlgpu.tensor(np.zeros(3, np.int32), device=dev)
    with dev.record() as rec:
        rec.upload(ids)
        out = dmlgpu.gather(t, ids)
        rec.download(out)
        with pytest.raises(RuntimeError, match="numpy\\(\\) cannot run inside a recording.*Recording.host"):
            out.numpy()
    ids_host, out_host = rec.host(ids), rec.host(out)
    assert ids_host.shape == (3,) and ids_host.dtype == np.int32 and out_host.shape == (3, 4)
    with pytest.raises(ValueError, match="read-only"):
        out_host[0] = 1                               # only downloaded: the same on every memory type
    with pytest.raises(ValueError, match="^Recording.host: this tensor is neither uploaded nor downloaded"):
        rec.host(other)
    for new in ([1, 2, 3], [15, -1, 0]):
        ids_host[...] = new
        rec.run()
        same(out_host, table[new])
        same(out, table[new])                         # the device data, downloaded


def test_recording_views_move_their_bytes_only(dev):
    """upload(view) sends the view's range of the base's buffer: the base's other rows keep their device data
    (on staging devices the host copy's other bytes are not sent)."""
    base = dmlgpu.tensor(np.arange(12, dtype=np.int16).reshape(6, 2), device=dev)
    v = base[2:4]
    with dev.record() as rec:
        rec.upload(v)
        doubled = dmlgpu.gather(base, dmlgpu.tensor(np.array([2, 3, 0], np.int32), device=dev))
        c = base[4:].copy()                           # a recorded device copy of a view
        rec.download(doubled, c, base[5])
    rec.host(v)[...] = [[100, 101], [102, 103]]
    base.write(np.arange(12, dtype=np.int16).reshape(6, 2) * 2)   # after the block, before the run
    rec.run()
    want = np.arange(12, dtype=np.int16).reshape(6, 2) * 2
    want[2:4] = [[100, 101], [102, 103]]
    same(base, want)
    same(rec.host(doubled), want[[2, 3, 0]])
    same(rec.host(c), want[4:])
    same(rec.host(base[5]), want[5])


@pytest.mark.parametrize("env", ["", "0", "1"])
def test_direct_memory_env(env, monkeypatch):
    """DMLGPU_DIRECT_MEMORY picks the memory path of a new Device; the Tensor's host side means the same."""
    if env:
        monkeypatch.setenv("DMLGPU_DIRECT_MEMORY", env)
    else:
        monkeypatch.delenv("DMLGPU_DIRECT_MEMORY", raising=False)
    dev = dmlgpu.Device()
    try:
        assert dev.direct_memory == (dev.info.unified_memory if env == "" else env == "1")
        t = dmlgpu.zeros(4, np.int32, device=dev)
        with dev.record() as rec:
            rec.upload(t[1:3])
            rec.download(t)
        rec.host(t[1:3])[...] = 7
        rec.run()
        same(rec.host(t), np.array([0, 7, 7, 0], np.int32))
        same(t, np.array([0, 7, 7, 0], np.int32))
    finally:
        dev.close()


def test_staging_default_device_in_a_subprocess():
    """A process whose default device moves bytes through staging: results are read and written alike."""
    code = ("import numpy as np, dmlgpu\n"
            "d = dmlgpu.default_device(); assert not d.direct_memory\n"
            "t = dmlgpu.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))\n"
            "r = dmlgpu.gather(t, np.array([2, 0]))\n"
            "assert r.tolist() == [[4, 5], [0, 1]], r.tolist()\n"
            "r[1].write([9, 9]); assert np.asarray(r).tolist() == [[4, 5], [9, 9]]\n"
            "print('ok')\n")
    env = dict(os.environ, DMLGPU_DIRECT_MEMORY="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
