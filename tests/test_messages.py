"""What users meet at the edges: errors that name the function called (and say each thing once), two Device
objects of one GPU told apart, empty index lists as NumPy takes them, ``device=`` as an index, bfloat16 and
float8 DLPack producers (PyTorch CPU tensors) through a view of their bits, and dmlgpu.tensor() of a Tensor."""
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import interop

D = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("call, message", [
    (lambda: dmlgpu.take(D, [7]), "take: index 7 at indices position (0,) is out of range for a dimension of size 6"),
    (lambda: dmlgpu.take(D, [0], axis=2), "take: axis 2 is out of bounds for a of rank 2"),
    (lambda: dmlgpu.take(D, [0], mode="clamp"), "take: mode must be one of ('raise', 'wrap', 'clip'), not 'clamp'"),
    (lambda: dmlgpu.take(D, [0.5]), "take: indices must have an integer dtype"),
    (lambda: dmlgpu.take_along_axis(D, np.array([[5]]), axis=1),
     "take_along_axis: index 5 at indices position (0, 0) is out of range for a dimension of size 3"),
    (lambda: dmlgpu.take_along_axis(D, np.array([[0]]), axis=-3), "take_along_axis: axis -3 is out of bounds for arr "
                                                                  "of rank 2"),
    (lambda: dmlgpu.put_along_axis(D.copy(), np.array([[9]]), 1.0, axis=1),
     "put_along_axis: index 9 at indices position (0, 0) is out of bounds for axis 1 with size 3"),
    (lambda: dmlgpu.gather(D, [0], axis=2), "gather: axis 2 is out of bounds for data of rank 2"),
    (lambda: dmlgpu.gather(D, [0], mode="wrap"), "gather: mode must be one of ('clamp', 'raise', 'fill'), not 'wrap'"),
    (lambda: dmlgpu.gather(np.zeros(3, object), [0]), "gather: data has dtype object, which holds Python objects"),
    (lambda: dmlgpu.gather_elements(D, np.zeros((2, 3, 1), np.int64)),
     "gather_elements: indices must have the rank of data (2), not 3"),
    (lambda: dmlgpu.scatter_nd(D, [[0]], np.ones((1, 3)), reduction="avg"),
     "scatter_nd: reduction must be one of 'none', 'add', 'mul', 'min', 'max', 'mean', 'sum', 'prod', 'amax', "
     "'amin', not 'avg'"),
    (lambda: dmlgpu.scatter_elements(D, [[0]], [[1.0]], axis=1.0),
     "scatter_elements: axis must be an integer, not float"),
    (lambda: dmlgpu.gather(D, [1], device="gpu"), "gather: device must be a dmlgpu.Device or a device index, not str"),
])
def test_errors_name_the_function_called_once(call, message):
    with pytest.raises(Exception) as info:
        call()
    text = str(info.value)
    assert text.startswith(message), text
    called = message.split(":")[0]
    others = {"gather", "gather_elements", "gather_nd", "scatter_nd", "scatter_elements"} - {called}
    assert not any(f"{name}:" in text for name in others), text     # no inner function's name
    assert all(text.count(words) <= 1 for words in ("out of bounds", "out of range", "must be")), text


E = np.zeros((0, 3), np.float32)
NAMES = ("take", "take_along_axis", "put_along_axis", "gather", "gather_elements", "gather_nd", "scatter",
         "scatter_nd", "scatter_elements", "tensor", "zeros", "full")


@pytest.mark.parametrize("call", [
    lambda: dmlgpu.take(E, [0], axis=0, mode="wrap"),                  # (once was "take: take: cannot do ...")
    lambda: dmlgpu.take(E, [0], axis=0, mode="clip"),
    lambda: dmlgpu.take(dmlgpu.tensor(E), dmlgpu.tensor(np.array([0])), axis=0, mode="wrap"),
    lambda: dmlgpu.take(np.zeros(0, "S3"), [0], mode="wrap"),          # rows of units (items.py)
    lambda: dmlgpu.take(dmlgpu.tensor(np.zeros((3, 0), np.float32)).transpose(), [0], axis=0, mode="clip"),  # a view
    lambda: dmlgpu.take(D, [2**70]),
    lambda: dmlgpu.take(D, [0], out=np.zeros(2)),
    lambda: dmlgpu.take_along_axis(D, np.array([[0.5]]), axis=1),
    lambda: dmlgpu.put_along_axis(D.copy(), np.array([[0]]), np.ones((2, 2)), axis=1),
    lambda: dmlgpu.gather(E, [0], axis=0),
    lambda: dmlgpu.gather(dmlgpu.tensor(E), [0], axis=0, mode="raise"),
    lambda: dmlgpu.gather_nd(D, [[5, 0]], mode="raise"),
    lambda: dmlgpu.scatter_nd(E, [[0]], np.ones((1, 3), np.float32)),
    lambda: dmlgpu.scatter_elements(D, [[0]], [[1.0]], axis=1, reduction="mean", order="sideways"),
    lambda: dmlgpu.zeros((2**40,)),
    lambda: dmlgpu.full(2, 1e400j, np.int8),
])
def test_no_error_names_a_function_twice(call):
    """Whatever path an error takes up (a layer-2 function called by a NumPy name, odd dtypes, views), its message
    names the function the user called once, at its start, and no other function after it."""
    with pytest.raises(Exception) as info:
        call()
    text = str(info.value)
    first = text.split(": ")[0]
    assert first in NAMES, text
    assert not re.match(r"(\w+): (\w+): ", text) or text.split(": ")[1] not in NAMES, text
    assert not re.search(rf"\b({'|'.join(NAMES)}): \1\b", text), text


def test_an_index_beyond_int64_says_so():
    with pytest.raises(OverflowError, match=r"^take: Python int too large to convert to an index \(NumPy reads "
                                            r"indices as intp, int64"):   # (NumPy's names: NumPy's error)
        dmlgpu.take(D, [2**70])
    with pytest.raises(IndexError, match=r"^gather: index -1180591620717411303424 at indices position \(1, 0\)"):
        dmlgpu.gather(D, [[0], [-2**70]])


@pytest.mark.parametrize("make, name", [
    (lambda n: dmlgpu.zeros((n,)), "zeros"), (lambda n: dmlgpu.empty(n, np.int8), "empty"),
    (lambda n: dmlgpu.ones((n, 1)), "ones"), (lambda n: dmlgpu.full(n, 2.5), "full"),
    (lambda n: dmlgpu.zeros_like(np.broadcast_to(np.float32(0), (n,))), "zeros_like"),
    (lambda n: dmlgpu.empty_like(np.broadcast_to(np.float32(0), (n,))), "empty_like"),
    (lambda n: dmlgpu.ones_like(np.broadcast_to(np.float32(0), (n,))), "ones_like"),
    (lambda n: dmlgpu.full_like(np.broadcast_to(np.float32(0), (n,)), 7), "full_like"),
])
def test_constructors_name_themselves_when_memory_runs_out(make, name):
    with pytest.raises(dmlgpu.DeviceError, match=rf"^{name}: a tensor of \d+ bytes exceeds this device's memory"):
        make(2**40)


def test_tensor_names_itself_when_memory_runs_out(monkeypatch):
    from dmlgpu.runtime.device import Device

    def full(self, data=None, nbytes=None):
        raise dmlgpu.DeviceError(f"a tensor of {nbytes} bytes exceeds this device's memory")
    monkeypatch.setattr(Device, "buffer", full)
    with pytest.raises(dmlgpu.DeviceError, match="^tensor: a tensor of 8 bytes exceeds"):
        dmlgpu.tensor(np.zeros(2, np.float32))


def test_cross_device_errors_name_the_operand():
    a, b = dmlgpu.Device(), dmlgpu.Device()
    try:
        ta = dmlgpu.tensor(D, device=a)
        for what, call in [
                ("indices", lambda: dmlgpu.gather(ta, dmlgpu.tensor(np.array([1]), device=b))),
                ("updates", lambda: dmlgpu.scatter_nd(ta, [[0]], dmlgpu.tensor(np.ones((1, 3)), device=b))),
                ("data", lambda: dmlgpu.gather_elements(ta, np.zeros((1, 3), np.int64), device=b)),
                ("out", lambda: dmlgpu.gather(ta, [0], out=dmlgpu.zeros((1, 3), D.dtype, device=b)))]:
            with pytest.raises(dmlgpu.DeviceError) as info:
                call()
            assert re.match(rf"^\w+: {what} is a Tensor of ", str(info.value)), str(info.value)
    finally:
        a.close()
        b.close()


def test_recording_a_raise_with_tensor_indices_says_what_can_be_recorded(device):
    t = dmlgpu.tensor(D, device=device)
    ids = dmlgpu.tensor(np.array([1]), device=device)
    with device.record():
        with pytest.raises(RuntimeError) as info:
            dmlgpu.take(t, ids, axis=0)
        assert re.search(r'mode="wrap" or mode="clip" .*gather\(\.\.\., mode="clamp"\)', str(info.value))
        with pytest.raises(RuntimeError, match='record mode="clamp"'):
            dmlgpu.gather(t, ids, mode="raise")
        dmlgpu.take(t, ids, axis=0, mode="wrap")                # what it says can be recorded
        dmlgpu.gather(t, ids, mode="clamp")
        rows = dmlgpu.tensor(np.ones((1, 3), D.dtype), device=device)
        ids3 = dmlgpu.tensor(np.ones((1, 3), np.int64), device=device)
        for who, op, call in [                                  # spellings without a mode: the function that has one
                ("Tensor[]", "gather", lambda: t[ids]), ("Tensor[]", "scatter_nd", lambda: t.__setitem__(ids, rows)),
                ("numpy.add.at", "scatter_nd", lambda: np.add.at(t, ids, rows)),
                ("take_along_axis", "gather_elements", lambda: np.take_along_axis(t, ids3, axis=0))]:
            with pytest.raises(RuntimeError) as info:
                call()
            assert str(info.value).startswith(f"{who}: mode='raise' cannot be recorded"), str(info.value)
            assert f'record dmlgpu.{op} with mode="clamp"' in str(info.value), str(info.value)


def test_cast_warnings_point_at_the_callers_line():
    t = dmlgpu.zeros(3, np.float16)
    for call in [lambda: dmlgpu.full(3, 1e6, np.float16), lambda: t.__setitem__(0, 1e6),
                 lambda: t.__setitem__(..., np.array([1e6, 0, 0])), lambda: dmlgpu.tensor([1e6], dtype=np.float16),
                 lambda: dmlgpu.tensor(np.array([1e6]), dtype=np.float16),
                 lambda: dmlgpu.tensor(np.array([np.nan]), dtype=np.int32)]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert [w.category for w in caught] == [RuntimeWarning], caught
        assert caught[0].filename == __file__ and "encountered in cast" in str(caught[0].message)
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        t[0] = 1e6                                  # NumPy's error state rules, as for NumPy's own casts
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        t[0] = 1e6


def test_axis_error_is_numpys_and_said_once():
    with pytest.raises(IndexError) as info:          # numpy's AxisError is an IndexError and a ValueError
        dmlgpu.gather(D, [0], axis=2)
    assert isinstance(info.value, ValueError) and type(info.value).__name__ == "AxisError"
    assert str(info.value) == "gather: axis 2 is out of bounds for data of rank 2"


def test_two_device_objects_of_one_gpu_are_told_apart():
    a, b = dmlgpu.Device(), dmlgpu.Device()
    try:
        t = dmlgpu.tensor(D, device=a)
        with pytest.raises(dmlgpu.DeviceError) as info:
            dmlgpu.gather(t, [1], device=b)
        text = str(info.value)
        assert text.startswith(f"gather: data is a Tensor of device {a.info.index} ")     # which operand
        assert "another dmlgpu.Device object of the same device" in text
        assert f"{id(a):#x}" in text and f"{id(b):#x}" in text
        with pytest.raises(dmlgpu.DeviceError) as info:                  # out= of the other Device object
            dmlgpu.scatter_nd(t, [[0]], np.ones((1, 3), D.dtype), out=dmlgpu.tensor(D, device=b))
        text = str(info.value)
        assert text.startswith("scatter_nd: out is a Tensor of another dmlgpu.Device object of the same device")
        assert f"{id(a):#x}" in text and f"{id(b):#x}" in text
        moved = dmlgpu.tensor(t, device=b)            # the fix the message names
        assert moved.device is b and np.array_equal(dmlgpu.gather(moved, [1], device=b).numpy(), D[[1]])
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_empty_index_lists_as_numpy(device, axis):
    for indices in ([], (), [[]]):
        expected = np.take(D, np.array(indices, np.int64), axis=axis)
        got = dmlgpu.take(D, indices, axis=axis, device=device)
        assert got.shape == expected.shape and got.dtype == D.dtype
        if axis is not None:
            got = dmlgpu.gather(D, indices, axis, device=device)
            assert got.shape == expected.shape and got.dtype == D.dtype
    assert dmlgpu.take(D, [], mode="wrap").shape == (0,)
    assert dmlgpu.take_along_axis(D, np.zeros((2, 0), np.int64), axis=1).shape == (2, 0)
    with pytest.raises(TypeError, match="take: indices must have an integer dtype"):
        dmlgpu.take(D, np.array([], np.float64))     # an explicit float array stays refused, as in NumPy


def test_device_may_be_an_index(device):
    index = device.info.index
    assert np.array_equal(dmlgpu.gather(D, [1, 0], device=index), D[[1, 0]])
    t = dmlgpu.tensor(D, device=index)
    assert t.device is dmlgpu.default_device()
    assert dmlgpu.empty((2,), np.int8, device=index).device is t.device
    assert np.array_equal(dmlgpu.take(t, [4], device=index).numpy(), [4.0])
    count = len(dmlgpu.devices())
    with pytest.raises(dmlgpu.DeviceError, match=re.escape(f"take: device={count} is no device index: "
                                                           f"dmlgpu.devices() lists {count}")):
        dmlgpu.take(D, [0], device=count)
    with pytest.raises(TypeError, match="tensor: device must be a dmlgpu.Device or a device index, not bool"):
        dmlgpu.tensor(D, device=True)


def test_tensor_of_a_tensor_copies_it_on_its_device(device):
    t = dmlgpu.tensor(D, device=device)
    copy = dmlgpu.tensor(t)
    assert copy.buffer is not t.buffer and copy.device is device
    assert copy.shape == t.shape and copy.dtype == t.dtype and np.array_equal(copy.numpy(), D)
    t.write(np.zeros_like(D))                          # the copy does not follow its source
    assert np.array_equal(copy.numpy(), D)
    empty = dmlgpu.tensor(dmlgpu.empty((0, 3), np.float32, device=device))
    assert empty.shape == (0, 3) and empty.numpy().shape == (0, 3)


class _BitsProducer:
    """A DLPack producer of bfloat16 (or float8) elements on the CPU, as PyTorch's CPU tensors are: it exports
    the capsule of a NumPy array of the elements' bits with DLPack's type code for them (kDLBfloat = 4, 16
    bits; the float8 codes of DLPack 1.1), which NumPy's from_dlpack refuses. Like a torch tensor of those
    types, it has no __array__ that would work (torch's raises "Got unsupported ScalarType BFloat16")."""

    def __init__(self, bits: np.ndarray, code: int):
        self.bits, self.code = bits, code

    def __dlpack__(self, **kwargs):
        if "max_version" in kwargs:
            raise TypeError("this producer makes legacy capsules")
        capsule = self.bits.__dlpack__()
        header = interop._DLTensor.from_address(interop._capsule_pointer(capsule, b"dltensor"))
        header.dtype.code = self.code
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("name, code", [("bfloat16", 4), ("float8_e4m3fn", 10), ("float8_e5m2", 12)])
def test_ml_dtypes_dlpack_producers_through_their_bits(device, name, code):
    dtype = np.dtype(getattr(ml_dtypes, name))
    values = np.array([[1.5, -2.0, 0.25], [3.0, 0.0, -0.5]], dtype)
    bits = values.view(np.uint16 if dtype.itemsize == 2 else np.uint8)
    producer = _BitsProducer(bits, code)
    with pytest.raises(Exception):
        np.from_dlpack(producer)                      # what NumPy alone does
    view = interop.host_array(producer)
    assert view.dtype == dtype and np.shares_memory(view, bits) and np.array_equal(view, values)
    got = dmlgpu.gather(producer, [1, 0], axis=1, device=device)
    assert got.dtype == dtype and np.array_equal(got.view(bits.dtype), bits[:, [1, 0]])
    t = dmlgpu.tensor(producer, device=device)
    assert t.dtype == dtype and np.array_equal(t.numpy().view(bits.dtype), bits)


def test_torch_bfloat16_cpu_tensors(device):
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(torch.bfloat16)
    got = dmlgpu.gather(x, [2, 0], device=device)
    expected = x[[2, 0]].float().numpy()
    assert got.dtype == np.dtype(ml_dtypes.bfloat16) and np.array_equal(got.astype(np.float32), expected)


def test_numpy_spellings_give_a_bad_index_position_in_the_key_they_were_given(device):
    """t[ids] = v and ufunc.at scatter ``ids[..., None]``: the IndexError's position is in the shape of the key the
    user passed (NumPy indices checked on the host, Tensor indices on the device), not in that column's."""
    t = dmlgpu.tensor(np.zeros((10, 4), np.float32), device=device)
    rows = np.ones((2, 4), np.float32)
    cases = [("numpy.add.at", "(1,)", np.array([3, 50]), lambda ids: np.add.at(t, ids, rows)),
             ("Tensor[]", "(1,)", np.array([3, 50]), lambda ids: t.__setitem__(ids, rows)),
             ("Tensor[]", "(1, 1)", np.array([[3, 1], [2, 50]]), lambda ids: t.__setitem__(ids, 1.0))]
    for who, pos, ids, call in cases:
        for host in (True, False):
            with pytest.raises(IndexError) as info:
                call(ids if host else dmlgpu.tensor(ids, device=device))
                device.synchronize()
            assert str(info.value).startswith(f"{who}: index 50 at indices position {pos} "), str(info.value)
            t.write(np.zeros((10, 4), np.float32))
    with pytest.raises(IndexError, match=r"^scatter_nd: index 50 at indices position \(1, 0\) "):
        dmlgpu.scatter_nd(t, np.array([[3], [50]]), rows, mode="raise")     # (its own indices' shape)
