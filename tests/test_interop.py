"""Operands from other libraries: whatever NumPy can view without a copy (a DLPack producer on the CPU,
``__array__``, the buffer protocol) is accepted where a NumPy array is, and gives the same bytes; PyTorch CPU
tensors when torch is installed (scripts/setup.sh does not install it: PyPI's Linux wheel is the CUDA one)."""
import array

import numpy as np
import pytest

import dmlgpu
from dmlgpu.api.arguments import _host_array

from strategies import same_bytes


class DLPackOnly:
    """A DLPack producer with nothing else (no __array__, no buffer protocol): NumPy's own, wrapped."""

    def __init__(self, a: np.ndarray):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayLike:
    """Only ``__array__``."""

    def __init__(self, a: np.ndarray):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class OnAnotherDevice:
    """A DLPack producer that cannot export to the CPU (as a GPU array does)."""

    def __dlpack__(self, **kwargs):
        raise BufferError("this array lives on cuda:0")

    def __dlpack_device__(self):
        return (2, 0)


WRAPPERS = {"dlpack": DLPackOnly, "array": ArrayLike, "memoryview": memoryview}


def _case():
    rng = np.random.default_rng(7)
    data = rng.standard_normal((5, 4)).astype(np.float32)
    idx = np.array([[4, 0], [-1, 2]], np.int64)
    upd = rng.standard_normal((2, 4)).astype(np.float32)
    return data, idx, upd


@pytest.mark.parametrize("wrap", sorted(WRAPPERS))
def test_views_without_copy(wrap):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    view = _host_array(WRAPPERS[wrap](a))
    assert np.shares_memory(view, a) and view.shape == a.shape and view.dtype == a.dtype


def test_buffer_protocol_objects():
    same_bytes(_host_array(array.array("f", [1.5, -2.0])), np.array([1.5, -2.0], np.float32))
    raw = bytearray(b"\x01\x02\x03")
    view = _host_array(raw)
    assert view.dtype == np.uint8 and view.tolist() == [1, 2, 3]
    raw[0] = 9
    assert view[0] == 9                                     # a view, not a copy


@pytest.mark.parametrize("wrap", sorted(WRAPPERS))
def test_every_function_takes_foreign_operands(device, wrap):
    w = WRAPPERS[wrap]
    data, idx, upd = _case()
    same_bytes(dmlgpu.gather(w(data), w(idx), 0, device=device), dmlgpu.gather(data, idx, 0, device=device))
    same_bytes(dmlgpu.gather_nd(w(data), w(idx[..., :1]), device=device),
               dmlgpu.gather_nd(data, idx[..., :1], device=device))
    same_bytes(dmlgpu.scatter_nd(w(data), w(idx[..., :1]), w(upd), device=device),
               dmlgpu.scatter_nd(data, idx[..., :1], upd, device=device))
    e_idx = np.array([[1, 0, 3, 2]], np.int32)
    same_bytes(dmlgpu.scatter_elements(w(data), w(e_idx), w(data[:1]), 1, reduction="add", device=device),
               dmlgpu.scatter_elements(data, e_idx, data[:1], 1, reduction="add", device=device))
    same_bytes(dmlgpu.take_along_axis(w(data), w(e_idx), 1, device=device), np.take_along_axis(data, e_idx, 1))
    same_bytes(dmlgpu.take(w(data), w(idx), device=device), np.take(data, idx))


def test_a_producer_on_another_device_is_refused_by_name():
    with pytest.raises(TypeError, match="CPU"):
        dmlgpu.gather(OnAnotherDevice(), np.array([0]))


def test_torch_cpu_tensors(device):
    torch = pytest.importorskip("torch")
    data, idx, upd = _case()
    t_data, t_idx, t_upd = torch.from_numpy(data), torch.from_numpy(idx), torch.from_numpy(upd)
    assert np.shares_memory(_host_array(t_data), data)
    same_bytes(dmlgpu.gather(t_data, t_idx, 0, device=device), data[[4, 0, 4, 2]].reshape(2, 2, 4))
    same_bytes(dmlgpu.scatter_nd(t_data, t_idx[..., :1], t_upd, device=device),
               dmlgpu.scatter_nd(data, idx[..., :1], upd, device=device))
    got = dmlgpu.take_along_axis(t_data, torch.tensor([[3], [2], [1], [0], [0]]), 1, device=device)
    same_bytes(got, torch.take_along_dim(t_data, torch.tensor([[3], [2], [1], [0], [0]]), 1).numpy())
    half = torch.arange(6, dtype=torch.float16)
    same_bytes(dmlgpu.gather(half, torch.tensor([5, 0]), device=device), np.array([5, 0], np.float16))
