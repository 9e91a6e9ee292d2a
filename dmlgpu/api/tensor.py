"""dmlgpu.Tensor: an array that lives in a device buffer, for chaining operations without host copies (its
NumPy-style constructors: dmlgpu/api/constructors.py; its indexing rules: dmlgpu/api/tensor_index.py)."""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NoReturn, Sequence, SupportsIndex, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import tensor_index as _index
from . import tensor_protocols as _protocols, tensor_views as _views
from .tensor_views import device_dtype as _device_dtype
from .device import Device, as_device
from ..runtime import Buffer, as_bytes

ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]
DeviceLike = Union[Device, int, None]


class Tensor:
    """A device-resident array: ``shape``, ``dtype`` and the bytes of ``buffer`` from byte ``offset``, packed
    in row-major order, or, for a strided view, at element ``strides``. Make one with dmlgpu.tensor() /
    asarray() (a copy of an array or Tensor), empty(), zeros(), ones() or full().

    Layer-2 functions accept Tensors wherever they accept arrays and then return Tensors, queued on the
    device (reading them waits). ``np.asarray(t)`` downloads a copy (as ``numpy()`` does); ``len(t)``,
    ``ndim``, ``size``, ``nbytes``, ``itemsize``, ``strides``. Basic indexing (ints, slices with steps, None,
    ...), ``T``/``transpose()``, ``squeeze()``, ``reshape()``/``flatten()`` and ``view(dtype)`` give views
    that share the buffer (``base``: the Tensor that owns it), or raise where no view can be made; writes
    through a view (``write(array)``, ``t[key] = value``, ``out=``) reach the base. ``copy()``,
    ``astype()``, ``to(device)``, ``tolist()``, ``item()``; recordings keep their own host copies
    (Recording.host). The buffer comes from the device's caching allocator and goes back to it when the last
    Tensor that uses it (views included) is collected.

    Parameters
    ----------
    buffer : dmlgpu.Buffer
        The device memory (``Device.buffer()``), of at least ``offset + size * dtype.itemsize`` bytes.
    shape : sequence of int
    dtype : dtype_like
    offset : int
        The byte offset of the first element in ``buffer``.

    Raises
    ------
    ValueError
        The buffer is smaller than the offset, shape and dtype need, or a negative offset or dimension.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> t.shape, t.dtype, t.nbytes, len(t)
    ((2, 3), dtype('float32'), 24, 2)
    >>> rows = dmlgpu.gather(t, dmlgpu.tensor(np.array([1, 1], np.int32)))   # stays on the device
    >>> rows.numpy()
    array([[3., 4., 5.],
           [3., 4., 5.]], dtype=float32)
    >>> t[1].tolist(), np.asarray(t[:, ::2]).sum()          # views: packed, strided
    ([3.0, 4.0, 5.0], np.float32(10.0))
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    buffer: Buffer
    offset: int = 0               # byte offset of the first element in ``buffer`` (views set it)
    base: "Tensor | None" = None  # the Tensor whose buffer a view shares (None: it owns it)
    _strides: "tuple[int, ...] | None" = None   # a strided view's element strides (None: packed, row-major)

    def __init__(self, buffer: Buffer, shape: Iterable[SupportsIndex], dtype: DTypeLike, offset: SupportsIndex = 0):
        self.buffer = buffer
        self.shape = tuple(operator.index(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.offset = operator.index(offset)
        if self.offset < 0 or any(s < 0 for s in self.shape):
            raise ValueError(f"Tensor: the offset ({self.offset}) and dimensions {self.shape} must not be negative")
        if self.offset + self.nbytes > buffer.nbytes:
            raise ValueError(f"Tensor: a {self.shape} {self.dtype} tensor at byte offset {self.offset} needs "
                             f"{self.offset + self.nbytes} bytes; the buffer has {buffer.nbytes}")

    @classmethod
    def _wrap(cls, buffer: Buffer, shape: tuple[int, ...], dtype: np.dtype[Any]) -> "Tensor":
        """A Tensor of a buffer known to be large enough: ``shape`` a tuple of ints, ``dtype`` an np.dtype
        (the operations' results: no checks)."""
        t = cls.__new__(cls)
        t.buffer, t.shape, t.dtype = buffer, shape, dtype
        return t

    def _view(self, shape: tuple[int, ...], dtype: np.dtype[Any], offset: int,
              strides: tuple[int, ...] | None = None) -> "Tensor":
        """A view of this tensor's buffer (no checks: the caller keeps its elements inside the tensor's bytes):
        ``strides`` in elements of ``dtype`` (None: packed)."""
        t = Tensor._wrap(self.buffer, shape, dtype)
        t.offset = offset
        if strides is not None and not _index.packed(shape, strides):
            t._strides = strides
        t.base = self.base if self.base is not None else self
        return t

    def _element_strides(self) -> tuple[int, ...]:
        """The strides in elements (row-major ones for a packed tensor)."""
        return self._strides if self._strides is not None else _index.packed_strides_of(self.shape)

    # ---- attributes ----
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
    def itemsize(self) -> int:
        """The bytes of one element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes of its elements: size * itemsize."""
        return self.size * self.dtype.itemsize

    @property
    def host(self) -> NoReturn:
        """Removed: it was the device memory itself on unified memory and a separate copy elsewhere, so code
        that wrote it worked on one kind of device only. Read with numpy(), write with write(); a recording's
        host copies are Recording.host(t). Raises AttributeError saying so."""
        raise AttributeError("Tensor.host was removed (it meant the device data on unified memory and a separate "
                             "copy elsewhere): read with numpy(), write with write(), and in recordings use "
                             "rec.host(t) with rec.upload(t) / rec.download(t)")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator["Tensor"]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"The truth value of a tensor with {self.size} elements is ambiguous (as NumPy's): "
                             f"use numpy().any() or numpy().all()")
        return bool(self.item())

    # ---- host reads and writes ----
    def numpy(self) -> np.ndarray:
        """A new NumPy array with the tensor's contents, once the queued work that writes it has run.

        Returns
        -------
        np.ndarray
            The tensor's shape and dtype.

        Raises
        ------
        RuntimeError
            Inside a recording (record ``download(t)`` and read ``Recording.host(t)`` after the block instead).

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.tensor(np.array([1, 2], np.uint8)).numpy()
        array([1, 2], dtype=uint8)
        """
        self._no_recording("numpy")
        if self._strides is not None:           # a strided view: its elements gathered on the device first
            return self.copy().numpy()
        return self.device.read_range(self.buffer, self.offset, self.nbytes).view(self.dtype).reshape(self.shape)

    if not TYPE_CHECKING:     # (typed, a Tensor would be ArrayLike: the layer-2 overloads tell Tensors apart)
        def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
            """``np.asarray(t)``, ``np.array(t)``: a downloaded copy (numpy()); ValueError for ``copy=False``."""
            if copy is False:
                raise ValueError("Tensor.__array__: a Tensor's data is on the device: NumPy cannot view it without "
                                 "a copy (copy=False); use np.asarray(t) or t.numpy()")
            arr = self.numpy()
            return arr if dtype is None else arr.astype(dtype, copy=False)

    def tolist(self) -> Any:
        """The tensor's contents as nested Python lists of Python scalars (numpy().tolist()).

        Returns
        -------
        list or scalar
            A scalar for a 0-d tensor.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.tensor(np.arange(4, dtype=np.int16).reshape(2, 2)).tolist()
        [[0, 1], [2, 3]]
        """
        return self.numpy().tolist()

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar, as NumPy's ndarray.item(): no argument for a tensor of one element,
        a flat index, or one index per dimension. Downloads that element only.

        Parameters
        ----------
        *args : int
            Nothing, a flat index, or ``ndim`` indices (or one tuple of them); negative ones count from the end.

        Returns
        -------
        Python scalar

        Raises
        ------
        ValueError
            No index for a tensor of more than one element.
        IndexError
            An index out of range, or the wrong number of them.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        >>> t.item(4), t.item(1, 2), t.item(-1)
        (4.0, 5.0, 5.0)
        """
        self._no_recording("item")
        flat = _index.flat_position(self.shape, args)
        size = self.dtype.itemsize
        if self._strides is not None:
            flat = sum(int(c) * s for c, s in zip(np.unravel_index(flat, self.shape), self._strides))
        raw = self.device.read_range(self.buffer, self.offset + flat * size, size)
        return raw.view(self.dtype)[0].item()

    def write(self, array: ArrayLike) -> None:
        """Uploads ``array`` into the tensor's bytes (after the queued work that uses its buffer); a view's
        write changes its base's data there.

        Parameters
        ----------
        array : array_like or Tensor
            Broadcast to the tensor's shape (as NumPy's ``a[...] = array``) and cast to its dtype. A Tensor of
            the same device, shape and dtype is copied on the device (queued); another through the host.

        Raises
        ------
        ValueError
            A shape that does not broadcast to the tensor's.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.zeros((2, 2), np.int32)
        >>> t[1].write([7, 8]); t.numpy()
        array([[0, 0],
               [7, 8]], dtype=int32)
        """
        if isinstance(array, Tensor):
            src = array
            if src.device is self.device and src.shape == self.shape and src.dtype == self.dtype:
                if self._strides is None and src._strides is None and (
                        src.buffer is not self.buffer or src.offset + src.nbytes <= self.offset
                        or self.offset + self.nbytes <= src.offset):   # (regions of one buffer must not overlap)
                    self.device.copy_buffer(src.buffer, self.buffer, self.nbytes, src.offset, self.offset)   # queued
                    return
                self._write_packed(src.copy())      # a packed copy of its own: no overlap with this view
                return
            array = src.numpy()
        arr = _protocols.assigned(array, self.dtype, self.shape, "Tensor.write")
        if self._strides is not None:
            self._write_packed(_upload(arr, self.device))
        elif self.nbytes:
            self.device.write_bytes(self.buffer, self.offset, as_bytes(np.ascontiguousarray(arr)))

    def _write_packed(self, src: "Tensor") -> None:
        """Writes a packed Tensor of this one's shape and dtype, at offset 0 of a buffer of its own, into this
        tensor's elements on the device (queued)."""
        if self._strides is None:
            self.device.copy_buffer(src.buffer, self.buffer, self.nbytes, 0, self.offset)
        else:
            _index.write_packed(self, src)

    # ---- views and copies ----
    def copy(self) -> "Tensor":
        """A new packed Tensor with a copy of the bytes, made on the device (queued, in order with the
        device's queued work; recorded inside a recording).

        Returns
        -------
        Tensor
            On the same device, with ``offset`` 0 and a buffer of its own.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(4, dtype=np.uint8))
        >>> c = t[1:3].copy(); t.write(np.zeros(4, np.uint8)); c.numpy()
        array([1, 2], dtype=uint8)
        """
        dev = self.device
        if self._strides is not None:
            out: Tensor = _index.pack(self)
            return out
        out = Tensor._wrap(dev.take_buffer(self.nbytes), self.shape, self.dtype)
        dev.copy_buffer(self.buffer, out.buffer, self.nbytes, src_offset=self.offset)
        return out

    def _packed(self) -> "Tensor":
        """The tensor itself when packed at ``offset`` 0, else a packed copy (copy(): queued after queued work)."""
        return self if self.offset == 0 and self._strides is None else self.copy()

    def astype(self, dtype: DTypeLike, copy: bool = True) -> "Tensor":
        """The values cast to ``dtype`` as NumPy's astype casts them (through the host), on the same device.

        Parameters
        ----------
        dtype : dtype_like
        copy : bool
            False: the tensor itself when it already has ``dtype``.

        Returns
        -------
        Tensor

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.tensor(np.array([1.5, -2.5])).astype(np.int32).numpy()
        array([ 1, -2], dtype=int32)
        """
        new = _device_dtype(dtype, "Tensor.astype")
        if new == self.dtype:
            return self.copy() if copy else self
        return _upload(self.numpy().astype(new), self.device)

    def to(self, device: Device | int) -> "Tensor":
        """The tensor on another device (a copy through the host), or the tensor itself on its own.

        Parameters
        ----------
        device : dmlgpu.Device or int
            A Device or a device index (dmlgpu.devices()).

        Returns
        -------
        Tensor

        Raises
        ------
        TypeError
            A device that is neither a Device nor an index.
        dmlgpu.DeviceError
            No such device index, or not enough device memory.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(3, dtype=np.int32))
        >>> t.to(0).numpy()
        array([0, 1, 2], dtype=int32)
        """
        dev = as_device(device, "Tensor.to")
        if dev is self.device:
            return self
        return _upload(self.numpy(), dev)

    # ---- views (dmlgpu/api/tensor_views.py): basic indexing, reshape, flatten, transpose, squeeze, view ----
    __getitem__ = _views.__getitem__
    __setitem__ = _views.__setitem__
    reshape = _views.reshape
    flatten = _views.flatten
    transpose = _views.transpose
    T = property(_views.transposed)
    squeeze = _views.squeeze
    strides = property(_views.strides)
    view = _views.view

    # ---- protocols (dmlgpu/api/tensor_protocols.py): comparisons, NumPy, scalars, copies, pickling ----
    __eq__ = _protocols.compare("==")
    __ne__ = _protocols.compare("!=")
    __lt__ = _protocols.compare("<")
    __le__ = _protocols.compare("<=")
    __gt__ = _protocols.compare(">")
    __ge__ = _protocols.compare(">=")
    __hash__ = object.__hash__             # (by identity, as before: Tensors stay dictionary keys)
    __contains__ = _protocols.__contains__
    __array_ufunc__ = _protocols.__array_ufunc__
    __array_function__ = _protocols.__array_function__
    __float__ = _protocols.__float__
    __int__ = _protocols.__int__
    __complex__ = _protocols.__complex__
    __index__ = _protocols.__index__
    __copy__ = _protocols.__copy__
    __deepcopy__ = _protocols.__deepcopy__

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling stores the data (downloaded); unpickling uploads it to the default device."""
        self._no_recording("pickle")
        return _unpickle, (self.numpy(),)

    # ---- representation ----
    def __repr__(self) -> str:
        where = f" at byte offset {self.offset}" if self.offset else ""
        if self._strides is not None:
            where += f" with strides {self.strides}"
        return (f"<dmlgpu.Tensor {self.shape} {self.dtype} on device {self.device.info.index} "
                f"({self.device.info.name}){where}>")

    def __str__(self) -> str:
        """repr() and, for up to 1000 elements outside a recording, the values (downloaded)."""
        if self.size > 1000 or self.device.active_recording() is not None:
            return repr(self)
        return f"{self!r}\n{self.numpy()}"

    def _no_recording(self, what: str) -> None:
        if self.device.active_recording() is not None:
            raise RuntimeError(f"{what}() cannot run inside a recording: record download(t) and read "
                               f"Recording.host(t) after the block")


# ---- helpers ----
def _upload(array: np.ndarray, device: Device) -> "Tensor":
    """A new Tensor holding a copy of a host array (uploaded, C order) on ``device``."""
    if not array.flags.c_contiguous:
        array = array.copy(order="C")     # (np.ascontiguousarray would make a 0-d array 1-d)
    return Tensor(device.buffer(array, nbytes=max(4, -(-array.nbytes // 4) * 4)), array.shape, array.dtype)


def _unpickle(array: np.ndarray) -> "Tensor":
    """A pickled Tensor's data, uploaded to the default device."""
    return _upload(array, as_device(None, "pickle"))
