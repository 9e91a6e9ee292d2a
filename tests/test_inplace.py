"""out= on the layer-2 functions and NumPy names, in-place scatters (out=data), unique_indices and
put_along_axis on Tensors, against NumPy references, on both memory paths (mapped and staged)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dmlgpu
from dmlgpu import reference

from strategies import same_bytes

DTYPES = [np.bool_, np.int8, np.uint16, np.float16, np.int32, np.float32, np.int64, np.float64, np.complex128]


@pytest.fixture(scope="module", params=[True, False], ids=["mapped", "staged"])
def dev(request, memory_device):
    """A Device of each memory path: buffers read and written through mapped memory, or through staging
    copies (as on discrete GPUs; DMLGPU_DIRECT_MEMORY=0)."""
    d = memory_device(request.param)
    yield d
    d.close()


def _random(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(np.iinfo(dtype).min // 2, np.iinfo(dtype).max // 2, shape, endpoint=True).astype(dtype)


def _t(dev, x):
    return dmlgpu.tensor(np.asarray(x), device=dev)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_nd_in_place_repeated(dev, dtype):
    """Four in-place writes of rows into a Tensor, queued one after the other (the later ones through the
    signature's call template), each with a duplicate target (the last update wins)."""
    rng = np.random.default_rng(1)
    data = _random(rng, (64, 5), dtype)
    expected = data.copy()
    cache = _t(dev, data)
    buffer = cache.buffer
    for step in range(4):
        rows = rng.integers(0, 64, (6, 1))
        rows[-1] = rows[0]
        upd = _random(rng, (6, 5), dtype)
        assert dmlgpu.scatter_nd(cache, _t(dev, rows), _t(dev, upd), out=cache) is cache
        expected = reference.scatter_nd(expected, rows, upd)
    assert cache.buffer is buffer
    same_bytes(cache.numpy(), expected)


@pytest.mark.parametrize("reduction", ["add", "mul", "min", "max"])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float16, np.float64, np.uint8])
def test_scatter_reductions_in_place_fold_into_data(dev, dtype, reduction):
    """In place, a reduction folds into the existing values in the copying call's order: the same bits."""
    rng = np.random.default_rng(2)
    data = _random(rng, (7, 3), dtype)
    idx = rng.integers(0, 7, (40, 1))
    upd = _random(rng, (40, 3), dtype)
    copying = dmlgpu.scatter_nd(data, idx, upd, reduction=reduction, device=dev)
    t = _t(dev, data)
    for _ in range(3):           # planned, traced, templated
        dmlgpu.scatter_nd(t, _t(dev, idx), _t(dev, upd), reduction=reduction, out=t)
        same_bytes(t.numpy(), copying)
        t.write(data)
    cols = rng.integers(0, 3, (7, 6))
    upd2 = _random(rng, (7, 6), dtype)
    t2 = _t(dev, data)
    dmlgpu.scatter_elements(t2, _t(dev, cols), _t(dev, upd2), axis=1, reduction=reduction, out=t2)
    same_bytes(t2.numpy(), reference.scatter_elements(data, cols, upd2, 1, reduction))


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex128])
def test_scatter_elements_in_place(dev, dtype):
    rng = np.random.default_rng(3)
    data = _random(rng, (5, 300), dtype)      # long lines: the claim-and-write path; short ones: lines
    for axis, idx_shape in ((1, (5, 40)), (0, (9, 300))):
        idx = rng.integers(0, data.shape[axis], idx_shape)
        upd = _random(rng, idx_shape, dtype)
        t = _t(dev, data)
        for _ in range(3):
            dmlgpu.scatter_elements(t, _t(dev, idx), _t(dev, upd), axis=axis, out=t)
        same_bytes(t.numpy(), reference.scatter_elements(data, idx, upd, axis))


def test_out_for_every_function(dev):
    """A Tensor out receives the result on the device and is returned; a NumPy out where the call is NumPy
    in and out; either, repeated, gives the same values as the call without out."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((6, 4)).astype(np.float32)
    idx1 = np.array([[5, 0], [2, 2]])
    cases = [
        ("gather", lambda d, i, **k: dmlgpu.gather(d, i, 1 if i.shape[-1] == 2 else 0, **k), idx1 % 4),
        ("gather_elements", lambda d, i, **k: dmlgpu.gather_elements(d, i, 0, **k), rng.integers(0, 6, (3, 4))),
        ("gather_nd", lambda d, i, **k: dmlgpu.gather_nd(d, i, **k), np.array([[1, 2], [5, 3], [0, 0]])),
        ("take", lambda d, i, **k: dmlgpu.take(d, i, **k), np.array([[23, 0, 7]])),
    ]
    for name, call, idx in cases:
        expected = call(data, idx, device=dev)
        out_np = np.empty_like(expected)
        assert call(data, idx, out=out_np, device=dev) is out_np
        same_bytes(out_np, expected)
        out_t = dmlgpu.empty(expected.shape, expected.dtype, device=dev)
        for _ in range(3):
            assert call(_t(dev, data), _t(dev, idx), out=out_t) is out_t
        same_bytes(out_t.numpy(), expected)
        assert call(data, idx, out=out_t, device=dev) is out_t           # NumPy operands, Tensor out
        same_bytes(out_t.numpy(), expected)
    upd = rng.standard_normal((3, 4)).astype(np.float32)
    rows = np.array([[4], [1], [4]])
    expected = dmlgpu.scatter_nd(data, rows, upd, device=dev)
    out_t = dmlgpu.empty(data.shape, data.dtype, device=dev)
    src = _t(dev, data)
    for _ in range(3):
        assert dmlgpu.scatter_nd(src, _t(dev, rows), _t(dev, upd), out=out_t) is out_t
    same_bytes(out_t.numpy(), expected)
    same_bytes(src.numpy(), data)                                       # data untouched when out is another
    host = data.copy()
    assert dmlgpu.scatter_nd(host, rows, upd, out=host, device=dev) is host                 # NumPy, in place
    same_bytes(host, expected)


def test_out_sharing_an_operand_gets_the_copying_result(dev):
    """An out that is also read by the kernels (a gather's data, a scatter's updates) gets the result the
    call has without out."""
    rng = np.random.default_rng(5)
    data = rng.integers(0, 1000, (8, 8)).astype(np.int32)
    t = _t(dev, data)
    perm = rng.permutation(8)[:, None].repeat(8, 1)
    expected = dmlgpu.gather_elements(data, perm, 0, device=dev)
    assert dmlgpu.gather_elements(t, _t(dev, perm), 0, out=t) is t
    same_bytes(t.numpy(), expected)
    t.write(data)
    cols = rng.integers(0, 8, (8, 8))
    expected = dmlgpu.scatter_elements(data, cols, data, axis=1, device=dev)
    dmlgpu.scatter_elements(t, _t(dev, cols), t, axis=1, out=t)       # updates are out's own bytes
    same_bytes(t.numpy(), expected)


def test_empty_scatter_in_place_and_out(dev):
    data = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = _t(dev, data)
    assert dmlgpu.scatter_nd(t, _t(dev, np.zeros((0, 1), np.int64)), _t(dev, np.zeros((0, 3), np.int16)),
                             out=t) is t
    same_bytes(t.numpy(), data)
    other = dmlgpu.zeros((2, 3), np.int16, device=dev) if hasattr(dmlgpu, "zeros") else \
        _t(dev, np.zeros((2, 3), np.int16))
    dmlgpu.scatter_nd(t, _t(dev, np.zeros((0, 1), np.int64)), _t(dev, np.zeros((0, 3), np.int16)), out=other)
    same_bytes(other.numpy(), data)


def test_out_errors_before_any_gpu_work(dev):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = _t(dev, data)
    idx = _t(dev, np.array([[1]]))
    upd = _t(dev, np.ones((1, 4), np.float32))
    wrong = [_t(dev, np.zeros((3, 4), np.float64)), _t(dev, np.zeros((4, 3), np.float32))]
    for out in wrong:
        with pytest.raises(ValueError, match=r"^scatter_nd: out has shape"):
            dmlgpu.scatter_nd(t, idx, upd, out=out)
    same_bytes(t.numpy(), data)
    with pytest.raises(TypeError, match=r"^gather: out is a NumPy array, but the call returns a Tensor"):
        dmlgpu.gather(t, [0], out=np.empty((1, 4), np.float32))
    with pytest.raises(TypeError, match=r"^scatter_elements: out must be a dmlgpu.Tensor or a NumPy array"):
        dmlgpu.scatter_elements(data, [[0]], np.ones((1, 1), np.float32), out=[0.0], device=dev)
    frozen = data.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"^scatter_nd: out is read-only"):
        dmlgpu.scatter_nd(frozen, [[0]], np.ones((1, 4), np.float32), out=frozen, device=dev)
    dmlgpu.scatter_nd(t, _t(dev, np.array([[7]])), upd, out=t, mode="raise")   # in place: guarded by the device's
    with pytest.raises(IndexError, match=r"^scatter_nd: index 7"):                # check: nothing written, and t
        t.numpy()                                                                  # fails until overwritten whole
    t.write(data)
    same_bytes(t.numpy(), data)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.int64, np.complex128])
def test_unique_indices(dev, dtype):
    """unique_indices=True (targets promised distinct): the same result as the claiming scatter."""
    rng = np.random.default_rng(6)
    data = _random(rng, (300, 3), dtype)
    rows = rng.permutation(300)[:200, None]
    upd = _random(rng, (200, 3), dtype)
    expected = reference.scatter_nd(data, rows, upd)
    same_bytes(dmlgpu.scatter_nd(data, rows, upd, unique_indices=True, device=dev), expected)
    t = _t(dev, data)
    for _ in range(3):
        dmlgpu.scatter_nd(t, _t(dev, rows), _t(dev, upd), out=t, unique_indices=True)
    same_bytes(t.numpy(), expected)
    cols = np.argsort(rng.random((300, 3)), axis=1)[:, :2]
    upd2 = _random(rng, (300, 2), dtype)
    same_bytes(dmlgpu.scatter_elements(data, cols, upd2, axis=1, unique_indices=True, device=dev),
               reference.scatter_elements(data, cols, upd2, 1))


@given(st.data())
def test_fuzz_put_along_axis_on_tensors(dev, data):
    """put_along_axis into a Tensor (indices and values as arrays or Tensors, every broadcast NumPy allows)
    against NumPy's, the Tensor written in place."""
    rank = data.draw(st.integers(1, 3), label="rank")
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank), label="shape"))
    axis = data.draw(st.integers(0, rank - 1), label="axis")
    idx_shape = tuple(data.draw(st.sampled_from([1, s]) if d != axis else st.integers(1, 6), label=f"i{d}")
                      for d, s in enumerate(shape))
    if data.draw(st.booleans(), label="arr broadcast") and rank > 1:     # arr of size 1 where indices are not
        d = data.draw(st.sampled_from([d for d in range(rank) if d != axis]), label="bdim")
        shape = shape[:d] + (1,) + shape[d + 1:]
        idx_shape = idx_shape[:d] + (3,) + idx_shape[d + 1:]
    full = tuple(i if d == axis else max(s, i) for d, (s, i) in enumerate(zip(shape, idx_shape)))
    vshape = data.draw(st.sampled_from([full, (), full[1:], tuple(1 for _ in full)]), label="values")
    dtype = data.draw(st.sampled_from([np.int8, np.float32, np.int64]), label="dtype")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    arr = _random(rng, shape, dtype)
    idx = rng.integers(-shape[axis], shape[axis], idx_shape)
    values = _random(rng, vshape, dtype)
    expected = arr.copy()
    np.put_along_axis(expected, idx, values, axis)
    t = _t(dev, arr)
    as_tensor = data.draw(st.booleans(), label="tensor operands")
    dmlgpu.put_along_axis(t, _t(dev, idx) if as_tensor else idx, _t(dev, values) if as_tensor else values, axis)
    same_bytes(t.numpy(), expected)


def test_put_along_axis_tensor_flat_and_errors(dev):
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = _t(dev, arr)
    dmlgpu.put_along_axis(t, _t(dev, np.array([11, 0, 11])), _t(dev, np.array([7, 8, 9], np.int32)), None)
    expected = arr.copy()
    np.put_along_axis(expected, np.array([11, 0, 11]), np.array([7, 8, 9]), None)
    same_bytes(t.numpy(), expected)
    with pytest.raises(IndexError, match=r"^put_along_axis: index 4 at indices position \(0, 0\) is out of bounds"):
        dmlgpu.put_along_axis(t, np.array([[4]]), 1, 1)
    with pytest.raises(TypeError, match=r"^put_along_axis: values is a Tensor of dtype float32"):
        dmlgpu.put_along_axis(t, np.array([[0]]), _t(dev, np.ones((1, 1), np.float32)), 1)
    same_bytes(t.numpy(), expected)


def test_views_at_offsets_in_every_operator(dev):
    """Tensor views at byte offsets (t[a:b], a reshape of one) as operands, as out= and as data in place:
    the same bytes as NumPy on the same slices; in place on a view writes its base there and nowhere else."""
    rng = np.random.default_rng(7)
    base = rng.integers(-1000, 1000, (40, 6)).astype(np.int16)
    t = _t(dev, base)
    v, b = t[5:25], base[5:25]
    assert v.offset == 5 * 6 * 2
    rows = np.array([[0], [19], [3], [0]])
    idx_view = _t(dev, np.array([9, 7, 1, 4]))[1:]                      # indices at an offset too
    assert idx_view.offset == 8
    same_bytes(dmlgpu.gather(v, idx_view).numpy(), b[[7, 1, 4]])
    same_bytes(dmlgpu.gather_elements(v, _t(dev, np.zeros((2, 6), np.int64) + 3)).numpy(), b[[3, 3]])
    same_bytes(dmlgpu.gather_nd(v, _t(dev, np.array([[2, 5], [19, 0]]))).numpy(), b[[2, 19], [5, 0]])
    upd = rng.integers(0, 9, (4, 6)).astype(np.int16)
    same_bytes(dmlgpu.scatter_nd(v, _t(dev, rows), _t(dev, upd)).numpy(), reference.scatter_nd(b, rows, upd))
    same_bytes(t.numpy(), base)                                          # untouched
    out = dmlgpu.zeros((10, 6), np.int16, device=dev)
    assert dmlgpu.gather(v, idx_view, out=out[2:5]) is not None
    expected_out = np.zeros((10, 6), np.int16)
    expected_out[2:5] = b[[7, 1, 4]]
    same_bytes(out.numpy(), expected_out)
    for _ in range(2):                                                   # in place on the view, twice
        assert dmlgpu.scatter_nd(v, _t(dev, rows), _t(dev, upd), out=v) is v
    expected = base.copy()
    expected[5:25] = reference.scatter_nd(b, rows, upd)
    same_bytes(t.numpy(), expected)
    flat = t.reshape(-1)[6:]                                             # a reshaped view at an offset
    dmlgpu.put_along_axis(flat, _t(dev, np.array([0, 1])), _t(dev, np.array([-5, -6], np.int16)), 0)
    expected.reshape(-1)[6:8] = [-5, -6]
    same_bytes(t.numpy(), expected)
