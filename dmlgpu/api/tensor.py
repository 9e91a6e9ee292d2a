"""dmlgpu.Tensor: an array that lives in a device buffer, for chaining operations without host copies (its
NumPy-style constructors: dmlgpu/api/constructors.py; its indexing rules: dmlgpu/api/tensor_index.py)."""
from __future__ import annotations

import math
import operator
from typing import Any, Iterable, Iterator, NoReturn, Sequence, SupportsIndex, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import tensor_index as _index
from . import tensor_protocols as _protocols
from .tensor_index import device_dtype
from .tensor_protocols import TensorProtocols
from .tensor_views import TensorViews
from .device import Device, Runtime, as_runtime
from ..runtime import Buffer, as_bytes

_device_dtype = device_dtype

ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]
DeviceLike = Union[Device, int, None]


class Tensor(TensorViews, TensorProtocols):
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
    TypeError
        ``buffer`` is not a dmlgpu.Device's (``Device.buffer()``).
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
        if not isinstance(getattr(buffer, "device", None), Runtime):
            raise TypeError(f"Tensor: buffer must be a dmlgpu.Buffer of a dmlgpu.Device (Device.buffer()), not "
                            f"{type(buffer).__name__}" + (" of a runtime Device" if isinstance(buffer, Buffer) else ""))
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
        return self.buffer.device.user  # type: ignore[attr-defined, no-any-return]   # (a Runtime: __init__)

    @property
    def _rt(self) -> Runtime:
        """The Runtime under ``device`` (what layer 2 runs the Tensor's work on)."""
        return self.buffer.device  # type: ignore[return-value]   # (a Runtime: __init__)

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
        IndexError
            A device check of Tensor indices (mode="raise") failed for a call whose data reached this Tensor or
            its base: every read raises it, until the Tensor is overwritten whole (dmlgpu/plans/index_check.py);
            so do tolist(), item(), ``np.asarray(t)`` and the calls that read it.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.tensor(np.array([1, 2], np.uint8)).numpy()
        array([1, 2], dtype=uint8)
        """
        self._no_recording("numpy")
        if self._strides is not None:           # a strided view: its elements gathered on the device first
            return self.copy().numpy()
        return self._rt.read_range(self.buffer, self.offset, self.nbytes).view(self.dtype).reshape(self.shape)

    # Typed, so a Tensor is an ArrayLike to NumPy's stubs (np.take(t, ids) type-checks); the overloads of
    # dmlgpu's functions list Tensor operands first, so that a Tensor still gives a Tensor there.
    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(t)``, ``np.array(t)``: a downloaded copy (numpy()); ValueError for ``copy=False``."""
        if copy is False:
            raise ValueError("Tensor.__array__: a Tensor's data is on the device: NumPy cannot view it without "
                             "a copy (copy=False); use np.asarray(t) or t.numpy()")
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """DLPack's export (the array API standard's protocol): a PyCapsule of the Tensor's data for
        ``np.from_dlpack(t)``, ``torch.from_dlpack(t)`` and the like, once the queued work that uses the Tensor
        has finished; a view where its memory can be shared (kDLCPU on unified memory, kDLCUDA on NVIDIA GPUs
        with CUDA), else, where a copy is allowed, a host copy; BufferError otherwise and for dtypes DLPack cannot
        express. The capsule keeps the Tensor alive. Rules: dmlgpu/api/dlpack.py.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int16).reshape(2, 3))
        >>> np.from_dlpack(t[:, ::2], copy=True)
        array([[0, 2],
               [3, 5]], dtype=int16)
        """
        return _protocols.DLPACK.dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's (device type, device id) of the Tensor's data: (1, 0) kDLCPU for host memory, (2, ordinal)
        kDLCUDA for memory CUDA maps, else (7, device index) kDLVulkan (dmlgpu/api/dlpack.py)."""
        out: tuple[int, int] = _protocols.DLPACK.dlpack_device(self)
        return out

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
        raw = self._rt.read_range(self.buffer, self.offset + flat * size, size)
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
        IndexError
            ``array`` is a Tensor that a failed device check reached (numpy()). A write of all of a Tensor's
            elements from anything else makes it no longer failed; a write of part of it does not.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.zeros((2, 2), np.int32)
        >>> t[1].write([7, 8]); t.numpy()
        array([[0, 0],
               [7, 8]], dtype=int32)
        """
        dev = self._rt
        if isinstance(array, Tensor):
            src = array
            if src._rt is dev and src.shape == self.shape and src.dtype == self.dtype:
                if self._strides is None and src._strides is None and (
                        src.buffer is not self.buffer or src.offset + src.nbytes <= self.offset
                        or self.offset + self.nbytes <= src.offset):   # (regions of one buffer must not overlap)
                    if dev.tainted:     # (poison: plans/index_check.py)
                        dev.taint((src.buffer,), self.buffer, covers_base(self))
                    dev.copy_buffer(src.buffer, self.buffer, self.nbytes, src.offset, self.offset)   # queued
                    return
                self._write_packed(src.copy())      # a packed copy of its own: no overlap with this view
                return
            array = src.numpy()
        arr = _protocols.assigned(array, self.dtype, self.shape, "Tensor.write")
        if self._strides is not None:
            self._write_packed(_upload(arr, dev))
        elif self.nbytes:
            if dev.tainted and covers_base(self):      # host data overwrites it whole: no longer failed
                dev.taint((), self.buffer, True)
            dev.queue_write(self.buffer, self.offset, as_bytes(np.ascontiguousarray(arr)))  # (small: queued)

    def _write_packed(self, src: "Tensor") -> None:
        """Writes a packed Tensor of this one's shape and dtype, at offset 0 of a buffer of its own, into this
        tensor's elements on the device (queued)."""
        dev = self._rt
        if dev.tainted:
            dev.taint((src.buffer,), self.buffer, covers_base(self))
        if self._strides is None:
            self._rt.copy_buffer(src.buffer, self.buffer, self.nbytes, 0, self.offset)
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
        dev = self._rt
        lineage = dev.taint((self.buffer,)) if dev.tainted else None    # (poison: plans/index_check.py)
        if self._strides is not None:
            out: Tensor = _index.pack(self)
        else:
            out = Tensor._wrap(dev.take_buffer(self.nbytes), self.shape, self.dtype)
            dev.copy_buffer(self.buffer, out.buffer, self.nbytes, src_offset=self.offset)
        if lineage is not None:
            dev.reach(lineage, out.buffer)
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
        return _upload(self.numpy().astype(new), self._rt)

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
        dev = as_runtime(device, "Tensor.to")
        if dev is self._rt:
            return self
        return _upload(self.numpy(), dev)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling stores the data (downloaded); unpickling uploads it to the default device."""
        self._no_recording("pickle")
        return _unpickle, (self.numpy(),)

    def _no_recording(self, what: str) -> None:
        if self._rt.active_recording() is not None:
            raise RuntimeError(f"{what}() cannot run inside a recording: record download(t) and read "
                               f"Recording.host(t) after the block")


# ---- helpers ----
def covers_base(t: Tensor) -> bool:
    """True when ``t``'s elements are all the bytes of the Tensor whose buffer it uses (itself, or its ``base``):
    a write of all of them overwrites that Tensor whole (a view's elements are distinct bytes of its base)."""
    base = t.base
    return t.offset == 0 if base is None else t.nbytes == base.nbytes


def _upload(array: np.ndarray, device: Runtime) -> "Tensor":
    """A new Tensor holding a copy of a host array (uploaded, C order) on ``device``."""
    if not array.flags.c_contiguous:
        array = array.copy(order="C")     # (np.ascontiguousarray would make a 0-d array 1-d)
    return Tensor._wrap(device.buffer(array, nbytes=max(4, -(-array.nbytes // 4) * 4)), array.shape, array.dtype)


def _unpickle(array: np.ndarray) -> "Tensor":
    """A pickled Tensor's data, uploaded to the default device."""
    return _upload(array, as_runtime(None, "pickle"))
