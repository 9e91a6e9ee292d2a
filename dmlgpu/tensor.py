"""dmlgpu.Tensor: an array that lives in a device buffer, for chaining operations without host copies."""
from __future__ import annotations

import math
import operator
from typing import Any, Iterable, SupportsIndex

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .device import Device, as_device
from .interop import host_array
from .runtime import Buffer


class Tensor:
    """A device-resident array: ``shape``, ``dtype`` and a Buffer of at least size * itemsize bytes.

    Layer-2 functions accept Tensors wherever they accept arrays and then return Tensors. ``numpy()``
    downloads a copy; ``write(array)`` uploads; ``host`` is the host-side copy as an array view (what
    Recording.upload sends and Recording.download fills), for loops that avoid allocations.
    Its buffer comes from the device's caching allocator and goes back to it when the Tensor is collected,
    so repeated operations allocate nothing and reuse their algorithms.
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    def __init__(self, buffer: Buffer, shape: Iterable[SupportsIndex], dtype: DTypeLike):
        self.buffer = buffer
        self.shape = tuple(operator.index(s) for s in shape)
        self.dtype = np.dtype(dtype)
        if self.nbytes > buffer.nbytes:
            raise ValueError(f"a {self.shape} {self.dtype} tensor needs {self.nbytes} bytes; the buffer has "
                             f"{buffer.nbytes}")

    @classmethod
    def _wrap(cls, buffer: Buffer, shape: tuple[int, ...], dtype: np.dtype[Any]) -> "Tensor":
        """A Tensor of a buffer known to be large enough: ``shape`` a tuple of ints, ``dtype`` an np.dtype
        (the operations' results: no checks)."""
        t = cls.__new__(cls)
        t.buffer, t.shape, t.dtype = buffer, shape, dtype
        return t

    @property
    def device(self) -> Device:
        """The dmlgpu.Device that holds the tensor's buffer."""
        return self.buffer.device  # type: ignore[return-value]   # (buffers of a dmlgpu.Device's making)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """The bytes of its elements: size * dtype.itemsize."""
        return self.size * self.dtype.itemsize

    @property
    def host(self) -> np.ndarray:
        return self.buffer.host[: self.nbytes].view(self.dtype).reshape(self.shape)

    def numpy(self) -> np.ndarray:
        """A new NumPy array with the tensor's current contents."""
        if self.device._recording() is not None:
            raise RuntimeError("numpy() cannot run inside a recording: record download() and read Tensor.host "
                               "after the block")
        return self.device._read_range(self.buffer, 0, self.nbytes).view(self.dtype).reshape(self.shape)

    def write(self, array: ArrayLike) -> None:
        """Uploads ``array`` (same shape; cast to the tensor's dtype)."""
        arr = np.asarray(array, dtype=self.dtype)
        if arr.shape != self.shape:
            raise ValueError(f"array of shape {arr.shape} does not match the tensor's shape {self.shape}")
        self.buffer.write(arr)     # one copy, from arr to device memory or to staging

    def __repr__(self) -> str:
        return f"<dmlgpu.Tensor {self.shape} {self.dtype} on {self.device.info.name}>"


def tensor(array: Any, device: Device | int | None = None) -> Tensor:
    """A new Tensor holding a copy of ``array``: a NumPy array or what NumPy can view (any dtype of item size
    1, 2, 4, 8 or 16; dmlgpu.interop.host_array), uploaded; or a Tensor, copied on its device (to another
    device: through the host). ``device``: a Device or a device index; default: a Tensor's own device, else
    the default device."""
    if isinstance(array, Tensor):
        dev = array.device._open() if device is None else as_device(device, "tensor")
        if dev is not array.device:
            return tensor(array.numpy(), dev)
        out = Tensor(dev.buffer(nbytes=max(4, array.nbytes)), array.shape, array.dtype)
        dev._copy(array.buffer, out.buffer, array.nbytes)
        return out
    arr = host_array(array)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")       # (np.ascontiguousarray would make a 0-d array 1-d)
    dev = as_device(device, "tensor")
    return Tensor(dev.buffer(arr, nbytes=max(4, arr.nbytes)), arr.shape, arr.dtype)


def empty(shape: Iterable[SupportsIndex], dtype: DTypeLike, device: Device | int | None = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding zero bytes, on ``device`` (a Device or a device index;
    default: the default device)."""
    dev = as_device(device, "empty")
    dtype = np.dtype(dtype)
    dims = tuple(operator.index(s) for s in shape)
    nbytes = math.prod(dims) * dtype.itemsize
    return Tensor(dev.buffer(nbytes=max(4, nbytes)), dims, dtype)
