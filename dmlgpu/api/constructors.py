"""NumPy-style constructors of dmlgpu.Tensor: tensor, asarray, empty, zeros, ones, full and their ``*_like``
forms, each with NumPy's signature and a ``device=``."""
from __future__ import annotations

import math
import operator
from typing import Any, Callable, Protocol, Sequence, SupportsIndex, TypeVar, Union

import numpy as np
from numpy.typing import DTypeLike

from ..errors import DeviceError
from .arguments import named
from . import dlpack
from .device import Runtime, as_runtime
from .dlpack import from_dlpack
from .interop import host_array
from .tensor import DeviceLike, Tensor, _upload
from .tensor_protocols import PYTHON_VALUES, assigned, cast_warnings
from .tensor_index import device_dtype as _device_dtype

ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]
_F = TypeVar("_F", bound=Callable[..., Any])


def _documented(raises: str, returns: str = "", params: str = "") -> Callable[[_F], _F]:
    """Fills a constructor's docstring: ``%(params)s`` with ``params`` (where shared: _SHAPE_PARAMS,
    _like_params) and ``%(ending)s`` with the sections every constructor's docstring ends with: Returns (a
    Tensor; ``returns``: what more it says of it), Raises (``raises``: numpydoc lines) and the Examples
    heading with the examples' import line."""
    said = f"\n        {returns}" if returns else ""
    ending = f"""\
    Returns
    -------
    Tensor{said}

    Raises
    ------
{raises}

    Examples
    --------
    >>> import numpy as np, dmlgpu"""

    def fill(fn: _F) -> _F:
        fn.__doc__ = (fn.__doc__ or "") % {"params": params, "ending": ending}
        return fn
    return fill


def _as(errors: str, base: str) -> str:
    """A Raises entry: ``errors`` (a comma-separated list) raised as ``base()`` raises them."""
    return f"    {errors}\n        As {base}()'s."


_DEVICE_ERROR = """\
    dmlgpu.DeviceError
        No such device index, or not enough device memory."""
_SHAPE_PARAMS = """\
    Parameters
    ----------
    shape : int or sequence of int
    dtype : dtype_like
        Default: float32.
    device : dmlgpu.Device, int or None
        A Device or a device index; default: the default device."""


def _like_params(fill: bool) -> str:
    """The Parameters section of the ``*_like`` constructors (``fill``: full_like's, with a fill value)."""
    return """\
    Parameters
    ----------
    a : Tensor or array_like
        The shape, the dtype (unless ``dtype`` is given) and, for a Tensor, the device (unless ``device`` is).
""" + ("    fill_value : scalar or array_like\n" if fill else "") + """\
    dtype : dtype_like, optional
    device : dmlgpu.Device, int or None"""


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


@_documented("""\
    TypeError
        A device that is neither a Device nor an index, or an object dtype.
""" + _DEVICE_ERROR, returns="Of ``array``'s shape, packed (``offset`` 0).")
def tensor(array: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A new Tensor holding a copy of ``array`` (NumPy's np.array(array, dtype) on a device).

    Parameters
    ----------
    array : array_like or Tensor
        A NumPy array or what NumPy can view (PyTorch CPU tensors, bfloat16 ones included: see
        dmlgpu.api.interop), of any fixed-size dtype, uploaded;
        a DLPack producer on the Device's GPU under CUDA (PyTorch, CuPy, JAX), copied on the device
        (dmlgpu.from_dlpack);
        or a Tensor, copied on its device (to another device, or to another dtype: through the host).
    dtype : dtype_like, optional
        Cast to it as NumPy casts (default: ``array``'s dtype).
    device : dmlgpu.Device, int or None
        A Device or a device index; default: a Tensor's own device, else the default device.

%(ending)s
    >>> t = dmlgpu.tensor(np.arange(4, dtype=np.int64), device=0)
    >>> u = dmlgpu.tensor(t)                   # a copy, on t's device
    >>> t.write(np.zeros(4, np.int64)); u.numpy()
    array([0, 1, 2, 3])
    >>> dmlgpu.tensor([1, 2], dtype="f2").numpy()
    array([1., 2.], dtype=float16)
    """
    if isinstance(array, Tensor):
        dev = array._rt.check_open() if device is None else as_runtime(device, "tensor")
        if dtype is not None and _device_dtype(dtype, "tensor") != array.dtype:
            return tensor(array.numpy().astype(dtype), device=dev.user)
        if dev is not array._rt:
            return tensor(array.numpy(), device=dev.user)
        try:
            return array.copy()
        except DeviceError as e:
            raise named(e, "tensor") from None
    if _on_cuda(array):        # a CUDA producer (PyTorch, CuPy, JAX): one device copy, no host trip (dlpack.py)
        return _cast(from_dlpack(array, device=device, copy=True), dtype, "tensor")
    if dtype is not None and isinstance(array, PYTHON_VALUES):     # NumPy's np.array(values, dtype) rule
        arr = assigned(array, _device_dtype(dtype, "tensor"), None, "tensor")
    else:
        arr = host_array(array)
    if dtype is not None:
        with cast_warnings():
            arr = arr.astype(_device_dtype(dtype, "tensor"), copy=False)
    else:
        _device_dtype(arr.dtype, "tensor")
    return _uploaded(arr, as_runtime(device, "tensor"), "tensor")


def _on_cuda(x: Any) -> bool:
    """Whether ``x`` is a DLPack producer (not a Tensor) whose data is on a CUDA device."""
    if isinstance(x, Tensor) or not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        return False
    kind: int = x.__dlpack_device__()[0]
    return kind in (dlpack.CUDA, dlpack.CUDA_MANAGED)


def _cast(t: Tensor, dtype: DTypeLike | None, who: str) -> Tensor:
    """``t`` itself, or cast to ``dtype`` as NumPy casts."""
    if dtype is None or _device_dtype(dtype, who) == t.dtype:
        return t
    with cast_warnings():
        return _upload(t.numpy().astype(_device_dtype(dtype, who)), t._rt)


def _uploaded(arr: np.ndarray, dev: Runtime, who: str) -> Tensor:
    """A new Tensor holding a copy of ``arr`` on ``dev``; a DeviceError (not enough memory) names ``who``."""
    try:
        return _upload(arr, dev)
    except DeviceError as e:
        raise named(e, who) from None


def _new(dev: Runtime, dims: tuple[int, ...], dt: np.dtype[Any], who: str) -> Tensor:
    """A new Tensor of ``dims`` and ``dt`` on ``dev`` whose contents are undefined; a DeviceError (not enough
    memory) names ``who``, the constructor the user called."""
    try:
        return Tensor._wrap(dev.take_buffer(math.prod(dims) * dt.itemsize), dims, dt)
    except DeviceError as e:
        raise named(e, who) from None


@_documented(_as("TypeError, dmlgpu.DeviceError", "tensor"))
def asarray(array: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """``array`` as a Tensor: a Tensor of that dtype on that device as it is (no copy), a CUDA tensor of the
    Device's GPU as from_dlpack(array) makes it (one device copy), anything else as tensor() makes it (NumPy's
    np.asarray on a device).

    Parameters
    ----------
    array : array_like or Tensor
    dtype : dtype_like, optional
        Default: ``array``'s dtype.
    device : dmlgpu.Device, int or None
        Default: a Tensor's own device, else the default device.

%(ending)s
    >>> t = dmlgpu.tensor(np.arange(3, dtype=np.float32))
    >>> dmlgpu.asarray(t) is t, dmlgpu.asarray(t, dtype=np.float64).dtype
    (True, dtype('float64'))
    """
    if isinstance(array, Tensor) and (dtype is None or np.dtype(dtype) == array.dtype) and \
            (device is None or as_runtime(device, "asarray") is array._rt):
        return array
    if _on_cuda(array):
        return _cast(from_dlpack(array, device=device), dtype, "asarray")
    return tensor(array, dtype, device)


@_documented("""\
    TypeError
        A shape that is not ints, a device that is neither a Device nor an index, or an object dtype.
    ValueError
        A negative dimension.
""" + _DEVICE_ERROR, "Not initialised (as NumPy's empty): its bytes are whatever the memory held.", _SHAPE_PARAMS)
def empty(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` whose contents are undefined (as NumPy's empty: nothing is
    written; use zeros() for zeros).

%(params)s

%(ending)s
    >>> t = dmlgpu.empty((2, 3), np.float16)
    >>> t.shape, t.dtype, dmlgpu.empty(5, 'f4').shape
    ((2, 3), dtype('float16'), (5,))
    """
    return _empty(shape, dtype, device, "empty")


def _empty(shape: ShapeLike, dtype: DTypeLike, device: DeviceLike, who: str) -> Tensor:
    """empty(), its errors naming ``who`` (the constructor the user called)."""
    dims = _shape(shape, who)
    dt = _device_dtype(dtype, who)
    return _new(as_runtime(device, who), dims, dt, who)


@_documented(_as("TypeError, ValueError, dmlgpu.DeviceError", "empty"), params=_SHAPE_PARAMS)
def zeros(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding zeros (zero bytes), filled on the device.

%(params)s

%(ending)s
    >>> dmlgpu.zeros((2, 2), np.float16).numpy()
    array([[0., 0.],
           [0., 0.]], dtype=float16)
    """
    return _zeros(shape, dtype, device, "zeros")


def _zeros(shape: ShapeLike, dtype: DTypeLike, device: DeviceLike, who: str) -> Tensor:
    """zeros(), its errors naming ``who`` (the constructor the user called)."""
    out = _empty(shape, dtype, device, who)
    out._rt.fill_buffer(out.buffer, 0, 0, out.buffer.nbytes)
    return out


def _ones(shape: ShapeLike, dtype: DTypeLike, device: DeviceLike, who: str) -> Tensor:
    return _full(shape, 1, dtype, device, who)


@_documented(_as("TypeError, ValueError, dmlgpu.DeviceError", "empty"), params=_SHAPE_PARAMS)
def ones(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding ones (full(shape, 1, dtype)).

%(params)s

%(ending)s
    >>> dmlgpu.ones(3, np.int8).numpy()
    array([1, 1, 1], dtype=int8)
    """
    return _full(shape, 1, dtype, device, "ones")


@_documented(_as("TypeError, dmlgpu.DeviceError", "empty") + """
    ValueError
        A negative dimension, or a fill value that does not broadcast to ``shape``.""")
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

%(ending)s
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
    value = assigned(fill_value, np.asarray(fill_value).dtype if dtype is None else dtype, None, who)  # NumPy's cast
    dt = _device_dtype(value.dtype, who)
    dev = as_runtime(device, who)
    if value.ndim:
        try:
            host = np.broadcast_to(value, dims)
        except ValueError:
            raise ValueError(f"{who}: a fill value of shape {value.shape} does not broadcast to shape {dims}") \
                from None
        return _uploaded(np.ascontiguousarray(host), dev, who)
    count, size = math.prod(dims), dt.itemsize
    out = _new(dev, dims, dt, who)
    if not count:
        return out
    item = value.tobytes()
    pattern = item * (4 // size) if size < 4 else item
    words = np.frombuffer(pattern[:len(pattern) // 4 * 4], np.uint32)
    if size in (1, 2, 4) or size % 4 == 0 and (words == words[0]).all():
        dev.fill_buffer(out.buffer, int(words[0]), 0, out.buffer.nbytes)
        return out
    dev.write_bytes(out.buffer, 0, np.frombuffer(item, np.uint8))       # one item, then doubled on the device
    done = 1
    while done < count:
        n = min(done, count - done)
        dev.copy_buffer(out.buffer, out.buffer, n * size, 0, done * size)
        done += n
    return out


def _like(a: Any, dtype: DTypeLike | None, device: DeviceLike) -> tuple[tuple[int, ...], np.dtype[Any], DeviceLike]:
    if isinstance(a, Tensor):
        return a.shape, np.dtype(dtype) if dtype is not None else a.dtype, a.device if device is None else device
    arr = np.asarray(a) if not hasattr(a, "shape") or not hasattr(a, "dtype") else a
    return tuple(arr.shape), np.dtype(dtype) if dtype is not None else np.dtype(arr.dtype), device


class _Like(Protocol):
    """The ``*_like`` constructors' signature (those _like_of makes)."""
    def __call__(self, a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor: ...


def _like_of(base: Callable[[ShapeLike, DTypeLike, DeviceLike, str], Tensor], name: str, examples: str) -> _Like:
    """``base``'s ``*_like`` form (empty_like, zeros_like, ones_like: ``name`` is ``base``'s public name):
    ``base`` of ``a``'s shape, dtype and device (_like), its errors naming ``name_like``, its docstring made
    from ``examples`` (doctest lines)."""
    who = f"{name}_like"

    def like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
        return base(*_like(a, dtype, device), who)
    like.__name__ = like.__qualname__ = who
    like.__doc__ = f"""{name}() of ``a``'s shape and dtype (default), on ``a``'s device if it is a \
Tensor (default).

%(params)s

%(ending)s
    {examples}
    """
    return _documented(_as("TypeError, dmlgpu.DeviceError", name), params=_like_params(False))(like)


empty_like = _like_of(_empty, "empty", """>>> dmlgpu.empty_like(np.zeros((2, 3), np.int8)).shape
    (2, 3)""")
zeros_like = _like_of(_zeros, "zeros", """>>> dmlgpu.zeros_like(dmlgpu.tensor(np.arange(3))).numpy()
    array([0, 0, 0])""")
ones_like = _like_of(_ones, "ones", """>>> dmlgpu.ones_like(np.zeros(2, np.float16)).numpy()
    array([1., 1.], dtype=float16)""")


@_documented(_as("TypeError, ValueError, dmlgpu.DeviceError", "full"), params=_like_params(True))
def full_like(a: Any, fill_value: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """full() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

%(params)s

%(ending)s
    >>> dmlgpu.full_like(np.zeros(2, np.int32), 9).numpy()
    array([9, 9], dtype=int32)
    """
    shape, dt, dev = _like(a, dtype, device)
    return _full(shape, fill_value, dt, dev, "full_like")
