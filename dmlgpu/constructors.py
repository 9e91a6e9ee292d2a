"""NumPy-style constructors of dmlgpu.Tensor: tensor, asarray, empty, zeros, ones, full and their ``*_like``
forms, each with NumPy's signature and a ``device=``."""
from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence, SupportsIndex, TypeVar, Union

import numpy as np
from numpy.typing import DTypeLike

from .device import as_device
from .interop import host_array
from .tensor import DeviceLike, Tensor, _device_dtype, _upload

ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]
_F = TypeVar("_F", bound=Callable[..., Any])


def _shape(shape: ShapeLike, who: str) -> tuple[int, ...]:
    try:
        dims: tuple[int, ...] = (operator.index(shape),)     # type: ignore[arg-type]
    except TypeError:
        try:
            dims = tuple(operator.index(s) for s in shape)      # type: ignore[union-attr]
        except TypeError:
            raise TypeError(f"{who}: shape must be an int or a sequence of ints, not {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{who}: negative dimensions are not allowed: {dims}")
    return dims


def tensor(array: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A new Tensor holding a copy of ``array`` (NumPy's np.array(array, dtype) on a device).

    Parameters
    ----------
    array : array_like or Tensor
        A NumPy array or what NumPy can view (PyTorch CPU tensors, bfloat16 ones included: see
        dmlgpu.interop), of any dtype (items of 1, 2, 4, 8 or 16 bytes are what the operations move), uploaded;
        or a Tensor, copied on its device (to another device, or to another dtype: through the host).
    dtype : dtype_like, optional
        Cast to it as NumPy casts (default: ``array``'s dtype).
    device : dmlgpu.Device, int or None
        A Device or a device index; default: a Tensor's own device, else the default device.

    Returns
    -------
    Tensor
        Of ``array``'s shape, packed (``offset`` 0).

    Raises
    ------
    TypeError
        A device that is neither a Device nor an index, or an object dtype.
    dmlgpu.DeviceError
        No such device index, or not enough device memory.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(4, dtype=np.int64), device=0)
    >>> u = dmlgpu.tensor(t)                   # a copy, on t's device
    >>> t.write(np.zeros(4, np.int64)); u.numpy()
    array([0, 1, 2, 3])
    >>> dmlgpu.tensor([1, 2], dtype="f2").numpy()
    array([1., 2.], dtype=float16)
    """
    if isinstance(array, Tensor):
        dev = array.device._open() if device is None else as_device(device, "tensor")
        if dtype is not None and _device_dtype(dtype, "tensor") != array.dtype:
            return tensor(array.numpy().astype(dtype), device=dev)
        if dev is not array.device:
            return tensor(array.numpy(), device=dev)
        return array.copy()
    arr = host_array(array)
    if dtype is not None:
        arr = arr.astype(_device_dtype(dtype, "tensor"), copy=False)
    else:
        _device_dtype(arr.dtype, "tensor")
    return _upload(arr, as_device(device, "tensor"))


def asarray(array: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """``array`` as a Tensor: a Tensor of that dtype on that device as it is (no copy), anything else as
    tensor() makes it (NumPy's np.asarray on a device).

    Parameters
    ----------
    array : array_like or Tensor
    dtype : dtype_like, optional
        Default: ``array``'s dtype.
    device : dmlgpu.Device, int or None
        Default: a Tensor's own device, else the default device.

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
    >>> t = dmlgpu.tensor(np.arange(3, dtype=np.float32))
    >>> dmlgpu.asarray(t) is t, dmlgpu.asarray(t, dtype=np.float64).dtype
    (True, dtype('float64'))
    """
    if isinstance(array, Tensor) and (dtype is None or np.dtype(dtype) == array.dtype) and \
            (device is None or as_device(device, "asarray") is array.device):
        return array
    return tensor(array, dtype, device)


def empty(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` whose contents are undefined (as NumPy's empty: nothing is
    written; use zeros() for zeros).

    Parameters
    ----------
    shape : int or sequence of int
    dtype : dtype_like
        Default: float32.
    device : dmlgpu.Device, int or None
        A Device or a device index; default: the default device.

    Returns
    -------
    Tensor
        Not initialised (as NumPy's empty): its bytes are whatever the memory held.

    Raises
    ------
    TypeError
        A shape that is not ints, a device that is neither a Device nor an index, or an object dtype.
    ValueError
        A negative dimension.
    dmlgpu.DeviceError
        No such device index, or not enough device memory.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.empty((2, 3), np.float16)
    >>> t.shape, t.dtype, dmlgpu.empty(5, 'f4').shape
    ((2, 3), dtype('float16'), (5,))
    """
    dims = _shape(shape, "empty")
    dt = _device_dtype(dtype, "empty")
    dev = as_device(device, "empty")
    return Tensor._wrap(dev._take(math.prod(dims) * dt.itemsize), dims, dt)


_FILLED_PARTS = """\
    Parameters
    ----------
    shape : int or sequence of int
    dtype : dtype_like
        Default: float32.
    device : dmlgpu.Device, int or None
        A Device or a device index; default: the default device.

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, ValueError, dmlgpu.DeviceError
        As empty()'s."""


def _filled_documented(fn: _F) -> _F:
    """Fills ``%(filled)s`` in zeros()'s and ones()'s docstrings with what the two share."""
    fn.__doc__ = (fn.__doc__ or "") % {"filled": _FILLED_PARTS}
    return fn


@_filled_documented
def zeros(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding zeros (zero bytes), filled on the device.

%(filled)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.zeros((2, 2), np.float16).numpy()
    array([[0., 0.],
           [0., 0.]], dtype=float16)
    """
    dims = _shape(shape, "zeros")
    dt = _device_dtype(dtype, "zeros")
    dev = as_device(device, "zeros")
    out = Tensor._wrap(dev._take(math.prod(dims) * dt.itemsize), dims, dt)
    dev._fill(out.buffer, 0, 0, out.buffer.nbytes)
    return out


@_filled_documented
def ones(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding ones (full(shape, 1, dtype)).

%(filled)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.ones(3, np.int8).numpy()
    array([1, 1, 1], dtype=int8)
    """
    return _full(shape, 1, dtype, device, "ones")


def full(shape: ShapeLike, fill_value: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` holding ``fill_value`` everywhere (NumPy's full). A scalar is filled on
    the device: a 32-bit word pattern for items of 1, 2 or 4 bytes (and wider items made of one repeated
    word), else one item uploaded and doubled by device copies; an array fill value is broadcast on the host
    and uploaded.

    Parameters
    ----------
    shape : int or sequence of int
    fill_value : scalar or array_like
        Broadcast to ``shape``.
    dtype : dtype_like, optional
        Default: ``np.array(fill_value).dtype``, as NumPy's.
    device : dmlgpu.Device, int or None
        A Device or a device index; default: the default device.

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, dmlgpu.DeviceError
        As empty()'s.
    ValueError
        A negative dimension, or a fill value that does not broadcast to ``shape``.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.full((2, 2), 7, np.uint16).numpy()
    array([[7, 7],
           [7, 7]], dtype=uint16)
    >>> dmlgpu.full(3, 1.5).numpy()
    array([1.5, 1.5, 1.5])
    """
    return _full(shape, fill_value, dtype, device, "full")


def _full(shape: ShapeLike, fill_value: Any, dtype: DTypeLike | None, device: DeviceLike, who: str) -> Tensor:
    dims = _shape(shape, who)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.numpy()
    value = np.asarray(fill_value, dtype=dtype)
    dt = _device_dtype(value.dtype, who)
    dev = as_device(device, who)
    if value.ndim:
        try:
            host = np.broadcast_to(value, dims)
        except ValueError:
            raise ValueError(f"{who}: a fill value of shape {value.shape} does not broadcast to shape {dims}") \
                from None
        return tensor(np.ascontiguousarray(host), device=dev)
    count, size = math.prod(dims), dt.itemsize
    out = Tensor._wrap(dev._take(count * size), dims, dt)
    if not count:
        return out
    item = value.tobytes()
    pattern = item * (4 // size) if size < 4 else item
    words = np.frombuffer(pattern[:len(pattern) // 4 * 4], np.uint32)
    if size in (1, 2, 4) or size % 4 == 0 and (words == words[0]).all():
        dev._fill(out.buffer, int(words[0]), 0, out.buffer.nbytes)
        return out
    dev._write(out.buffer, 0, np.frombuffer(item, np.uint8))       # one item, then doubled on the device
    done = 1
    while done < count:
        n = min(done, count - done)
        dev._copy(out.buffer, out.buffer, n * size, 0, done * size)
        done += n
    return out


_LIKE_PARTS = """\
    Parameters
    ----------
    a : Tensor or array_like
        The shape, the dtype (unless ``dtype`` is given) and, for a Tensor, the device (unless ``device`` is).
    dtype : dtype_like, optional
    device : dmlgpu.Device, int or None

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, dmlgpu.DeviceError
        As %s()'s."""


def _like_documented(base: str) -> Callable[[_F], _F]:
    """Fills ``%(like)s`` in a ``*_like`` constructor's docstring with the parameters, result and errors the
    three share (those of ``base``'s)."""
    def fill(fn: _F) -> _F:
        fn.__doc__ = (fn.__doc__ or "") % {"like": _LIKE_PARTS % base}
        return fn
    return fill


def _like(a: Any, dtype: DTypeLike | None, device: DeviceLike) -> tuple[tuple[int, ...], np.dtype[Any], DeviceLike]:
    if isinstance(a, Tensor):
        return a.shape, np.dtype(dtype) if dtype is not None else a.dtype, a.device if device is None else device
    arr = np.asarray(a) if not hasattr(a, "shape") or not hasattr(a, "dtype") else a
    return tuple(arr.shape), np.dtype(dtype) if dtype is not None else np.dtype(arr.dtype), device


@_like_documented("empty")
def empty_like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """empty() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

%(like)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.empty_like(np.zeros((2, 3), np.int8)).shape
    (2, 3)
    """
    return empty(*_like(a, dtype, device))


@_like_documented("zeros")
def zeros_like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """zeros() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

%(like)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.zeros_like(dmlgpu.tensor(np.arange(3))).numpy()
    array([0, 0, 0])
    """
    return zeros(*_like(a, dtype, device))


@_like_documented("ones")
def ones_like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """ones() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

%(like)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.ones_like(np.zeros(2, np.float16)).numpy()
    array([1., 1.], dtype=float16)
    """
    return ones(*_like(a, dtype, device))


def full_like(a: Any, fill_value: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """full() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

    Parameters
    ----------
    a : Tensor or array_like
    fill_value : scalar or array_like
    dtype : dtype_like, optional
    device : dmlgpu.Device, int or None

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, ValueError, dmlgpu.DeviceError
        As full()'s.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.full_like(np.zeros(2, np.int32), 9).numpy()
    array([9, 9], dtype=int32)
    """
    shape, dt, dev = _like(a, dtype, device)
    return _full(shape, fill_value, dt, dev, "full_like")
