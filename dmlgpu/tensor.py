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
    """A device-resident array: ``shape``, ``dtype`` and a Buffer of at least size * itemsize bytes, packed
    in row-major order. Make one with dmlgpu.tensor() (a copy of an array or Tensor) or dmlgpu.empty().

    Layer-2 functions accept Tensors wherever they accept arrays and then return Tensors, queued on the
    device (reading them waits). ``numpy()`` downloads a copy; ``write(array)`` uploads; ``host`` is the
    host-side copy as an array view (what Recording.upload sends and Recording.download fills), for loops
    that avoid allocations. Its buffer comes from the device's caching allocator and goes back to it when
    the Tensor is collected, so repeated operations allocate nothing.

    Parameters
    ----------
    buffer : dmlgpu.Buffer
        The device memory (``Device.buffer()``), of at least ``size * dtype.itemsize`` bytes.
    shape : sequence of int
    dtype : dtype_like

    Raises
    ------
    ValueError
        The buffer is smaller than the shape and dtype need.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> t.shape, t.dtype, t.nbytes
    ((2, 3), dtype('float32'), 24)
    >>> rows = dmlgpu.gather(t, dmlgpu.tensor(np.array([1, 1], np.int32)))   # stays on the device
    >>> rows.numpy()
    array([[3., 4., 5.],
           [3., 4., 5.]], dtype=float32)
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    offset: int = 0          # bytes before the first element in ``buffer`` (views); packed from there on

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

    def _packed(self) -> "Tensor":
        """The tensor itself when it starts at its buffer's first byte, else a new Tensor holding a copy of its
        bytes (on the device)."""
        if not self.offset:
            return self
        out = Tensor(self.device.buffer(nbytes=max(4, -(-self.nbytes // 4) * 4)), self.shape, self.dtype)
        self.device._copy(self.buffer, out.buffer, self.nbytes, src_offset=self.offset)
        return out

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
        """The host-side copy as a writable array view of the tensor's shape and dtype: on unified memory the
        device buffer itself (mapped), else a host-visible mirror that Recording.upload sends and
        Recording.download fills."""
        return self.buffer.host[: self.nbytes].view(self.dtype).reshape(self.shape)

    def numpy(self) -> np.ndarray:
        """A new NumPy array with the tensor's contents, once the queued work that writes it has run.

        Returns
        -------
        np.ndarray
            The tensor's shape and dtype.

        Raises
        ------
        RuntimeError
            Inside a recording (record ``download()`` and read ``host`` after the block instead).

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.tensor(np.array([1, 2], np.uint8)).numpy()
        array([1, 2], dtype=uint8)
        """
        if self.device._recording() is not None:
            raise RuntimeError("numpy() cannot run inside a recording: record download() and read Tensor.host "
                               "after the block")
        return self.device._read_range(self.buffer, 0, self.nbytes).view(self.dtype).reshape(self.shape)

    def write(self, array: ArrayLike) -> None:
        """Uploads ``array`` into the tensor (after the queued work that uses it).

        Parameters
        ----------
        array : array_like
            The tensor's shape; cast to its dtype.

        Raises
        ------
        ValueError
            Another shape.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.empty((2,), np.int32)
        >>> t.write([7, 8]); t.numpy()
        array([7, 8], dtype=int32)
        """
        arr = np.asarray(array, dtype=self.dtype)
        if arr.shape != self.shape:
            raise ValueError(f"array of shape {arr.shape} does not match the tensor's shape {self.shape}")
        self.buffer.write(arr)     # one copy, from arr to device memory or to staging

    def __repr__(self) -> str:
        return f"<dmlgpu.Tensor {self.shape} {self.dtype} on {self.device.info.name}>"


def tensor(array: Any, device: Device | int | None = None) -> Tensor:
    """A new Tensor holding a copy of ``array``.

    Parameters
    ----------
    array : array_like or Tensor
        A NumPy array or what NumPy can view (PyTorch CPU tensors, bfloat16 ones included: see
        dmlgpu.interop), of any dtype of 1, 2, 4, 8 or 16-byte items, uploaded; or a Tensor, copied on its
        device (to another device: through the host).
    device : dmlgpu.Device, int or None
        A Device or a device index; default: a Tensor's own device, else the default device.

    Returns
    -------
    Tensor
        Of ``array``'s shape and dtype.

    Raises
    ------
    TypeError
        A device that is neither a Device nor an index.
    dmlgpu.DeviceError
        No such device index, or not enough device memory.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(4, dtype=np.int64), device=0)
    >>> u = dmlgpu.tensor(t)                   # a copy, on t's device
    >>> t.write(np.zeros(4, np.int64)); u.numpy()
    array([0, 1, 2, 3])
    """
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
    """A new Tensor of ``shape`` and ``dtype`` holding zero bytes.

    Parameters
    ----------
    shape : sequence of int
    dtype : dtype_like
    device : dmlgpu.Device, int or None
        A Device or a device index; default: the default device.

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, dmlgpu.DeviceError
        As tensor()'s.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.empty((2, 2), np.float16).numpy()
    array([[0., 0.],
           [0., 0.]], dtype=float16)
    """
    dev = as_device(device, "empty")
    dtype = np.dtype(dtype)
    dims = tuple(operator.index(s) for s in shape)
    nbytes = math.prod(dims) * dtype.itemsize
    return Tensor(dev.buffer(nbytes=max(4, nbytes)), dims, dtype)
