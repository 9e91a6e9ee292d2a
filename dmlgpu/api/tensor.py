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
from .device import Device, Runtime, as_runtime
from ..runtime import Buffer, as_bytes

_AxisError = getattr(np, "exceptions", np).AxisError     # NumPy's (an IndexError and a ValueError)


def device_dtype(dtype: DTypeLike, who: str) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.hasobject or dt.itemsize == 0:
        raise TypeError(f"{who}: dtype {dt} cannot live on a device (Python objects or empty items): use a "
                        f"numeric dtype")
    return dt


_device_dtype = device_dtype

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

    # ---- views: basic indexing, reshape, flatten, transpose, squeeze, view (the index rules: tensor_index.py) ----
    def __getitem__(self: Tensor, key: Any) -> Tensor:
        """NumPy's indexing. Basic indexing (ints, slices with any step, None, Ellipsis) is always a view of the
        buffer, at a byte offset with element strides, whose writes (write(), ``t[key] = value``, ``out=``)
        reach the base (the rules: dmlgpu/api/tensor_index.py). Advanced indexing (integer arrays given as
        lists, NumPy arrays or Tensors, broadcast together; boolean arrays and Tensors, as their nonzero();
        mixed with basic indices, placed as NumPy places them) gives a new Tensor made by one gather (queued):
        ``t[ids]`` is ``dmlgpu.take(t, ids, axis=0)``. Out-of-range NumPy indices raise IndexError before any
        GPU work; a Tensor's are checked on the device, as take's (dmlgpu/plans/index_check.py). A boolean
        Tensor index is read back (its count decides the result's shape: one synchronisation), and so are the
        Tensor indices of a key with several index arrays (combined on the host). dmlgpu/api/indexing.py.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        >>> t[[2, 0]].numpy()
        array([[ 8.,  9., 10., 11.],
               [ 0.,  1.,  2.,  3.]], dtype=float32)
        >>> t[[0, 2], [1, 3]].numpy(), t[:, [3]].numpy().ravel()
        (array([ 1., 11.], dtype=float32), array([ 3.,  7., 11.], dtype=float32))
        >>> t[np.array([True, False, True])].shape
        (2, 4)
        """
        if key.__class__ is Tensor or not _protocols.INDEXING.is_basic(key):
            adv: Tensor = _protocols.INDEXING.getitem(self, key)
            return adv
        out: Tensor = _index.getitem(self, key)
        return out

    def __setitem__(self: Tensor, key: Any, value: Any) -> None:
        """``t[key] = value``, with NumPy's broadcasting of ``value`` to the indexed shape and its casting
        (``a[...] = value``). Basic indexing: ``t[key].write(value)``, on the device for Tensor values.
        Advanced indexing (as ``__getitem__`` takes it): one scatter into ``t``'s buffer in place (also through
        views); where several indices select one element, the last value in row-major order wins, on every
        device. Out-of-range indices raise IndexError and leave ``t`` unchanged: NumPy indices before any GPU
        work; a Tensor's are checked on the device, and the check guards the scatter (nothing is written where one
        is bad, and ``t`` then fails: its reads raise the IndexError until it is overwritten whole, as
        dmlgpu/plans/index_check.py says). A key with several
        index arrays of which one is a Tensor, or a boolean Tensor, is read back first, as for reads.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> cache = dmlgpu.zeros((4, 2), np.float32)
        >>> cache[[3, 0, 3]] = np.array([[1, 1], [2, 2], [3, 3]], np.float32)    # the last duplicate wins
        >>> cache[:, 1] = 9.0
        >>> cache.numpy()
        array([[2., 9.],
               [0., 9.],
               [0., 9.],
               [3., 9.]], dtype=float32)
        """
        if key.__class__ is Tensor or not _protocols.INDEXING.is_basic(key):
            _protocols.INDEXING.setitem(self, key, value)
            return
        self[key].write(value)

    @property
    def at(self: Tensor) -> _protocols.At[Tensor]:
        """JAX's functional updates (``jax.Array.at``): ``t.at[key].get(mode=, fill_value=)``, ``.set(v)``,
        ``.add(v)``, ``.multiply(v)``, ``.min(v)``, ``.max(v)`` return a new Tensor and leave ``t`` unchanged.
        ``mode``: None (JAX's default: a get clamps out-of-range indices, an update drops them),
        "promise_in_bounds", "clip", "fill" (get) or "drop" (updates); ``.set`` with duplicates keeps the last in
        row-major order (JAX leaves it unspecified); the reductions apply every update in row-major order.
        dmlgpu/api/tensor_protocols.py's AtRef.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> x = dmlgpu.tensor(np.zeros(4, np.float32))
        >>> x.at[[0, 0, 9]].add(1.0).numpy()            # 9 is out of range: dropped
        array([2., 0., 0., 0.], dtype=float32)
        >>> x.at[[1, 9]].get(mode="fill", fill_value=-1.0).numpy()
        array([ 0., -1.], dtype=float32)
        >>> x.numpy()                                   # unchanged
        array([0., 0., 0., 0.], dtype=float32)
        """
        return _protocols.At(self)

    def reshape(self: Tensor, *shape: Any, order: str = "C") -> Tensor:
        """The same elements as another shape: a view sharing the buffer (as NumPy's reshape where it needs no
        copy; a strided view that no strides can reshape raises ValueError: reshape ``t.copy()``).

        Parameters
        ----------
        *shape : int or sequence of int
            ``reshape(2, 3)`` or ``reshape((2, 3))``; one dimension may be -1 (inferred).
        order : {"C"}
            Row-major only.

        Returns
        -------
        Tensor
            A view of this tensor's buffer.

        Raises
        ------
        ValueError
            A shape of another size, more than one -1, a negative dimension, another order, or a strided view
            that no strides can show as ``shape``.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32))
        >>> t.reshape(2, -1).numpy()
        array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        """
        dims = _index.reshaped(self.size, shape, order)
        if self._strides is None:
            return self._view(dims, self.dtype, self.offset)
        strides = _index.nocopy_reshape(self.shape, self._strides, dims)
        if strides is None:
            raise ValueError(f"Tensor.reshape: this strided view (shape {self.shape}, element strides "
                             f"{self._strides}) cannot be seen as shape {dims} without a copy: reshape "
                             f"t.copy(), or write through the base")
        return self._view(dims, self.dtype, self.offset, strides)

    def flatten(self: Tensor) -> Tensor:
        """The elements as one dimension in row-major order: a view sharing the buffer (as PyTorch's
        flatten and NumPy's ravel where they need no copy); ValueError for a strided view whose elements
        no single stride reaches (flatten ``t.copy()``).

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
        >>> f = t.flatten(); f.base is t, f.tolist()
        (True, [0, 1, 2, 3, 4, 5])
        """
        return self.reshape(-1)

    def transpose(self: Tensor, *axes: Any) -> Tensor:
        """The axes permuted (reversed without arguments): a strided view sharing the buffer, as NumPy's.

        Parameters
        ----------
        *axes : int
            A permutation of ``range(ndim)`` (or one tuple of it); negative ones count from the end.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
        >>> t.T.shape, t.transpose(1, 0).tolist()
        ((3, 2), [[0, 3], [1, 4], [2, 5]])
        """
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = tuple(axes[0]) if axes[0] is not None else ()
        perm = [operator.index(a) for a in axes] if axes else list(range(self.ndim))[::-1]
        if sorted(a % self.ndim if -self.ndim <= a < self.ndim else a for a in perm) != list(range(self.ndim)):
            raise ValueError(f"Tensor.transpose: axes {tuple(perm)} are not a permutation of the "
                             f"{self.ndim} axes")
        perm = [a % self.ndim for a in perm]
        strides = self._element_strides()
        return self._view(tuple(self.shape[a] for a in perm), self.dtype, self.offset,
                          tuple(strides[a] for a in perm))

    def squeeze(self: Tensor, axis: Any = None) -> Tensor:
        """The dimensions of size 1 removed (all, or those of ``axis``: an int or a tuple): a view, as NumPy's.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.zeros((1, 3, 1)).squeeze().shape, dmlgpu.zeros((1, 3, 1)).squeeze(0).shape
        ((3,), (3, 1))
        """
        if axis is None:
            drop = {d for d, n in enumerate(self.shape) if n == 1}
        else:
            drop = set()
            for a in (axis if isinstance(axis, tuple) else (axis,)):
                a = operator.index(a)
                if not -self.ndim <= a < self.ndim:
                    raise _AxisError(f"Tensor.squeeze: axis {a} is out of bounds for a tensor of rank {self.ndim}")
                if self.shape[a] != 1:
                    raise ValueError(f"Tensor.squeeze: cannot select an axis to squeeze out which has size not "
                                     f"equal to one (axis {a} has size {self.shape[a]})")
                drop.add(a % self.ndim)
        strides = self._element_strides()
        keep = [d for d in range(self.ndim) if d not in drop]
        return self._view(tuple(self.shape[d] for d in keep), self.dtype, self.offset, tuple(strides[d] for d in keep))

    def view(self: Tensor, dtype: DTypeLike) -> Tensor:
        """The same bytes as another dtype: a view sharing the buffer, with NumPy's rule for a changed item
        size (the last axis's bytes are divided into the new items).

        Parameters
        ----------
        dtype : dtype_like

        Returns
        -------
        Tensor
            A view of this tensor's buffer; its last dimension scaled by the ratio of the item sizes.

        Raises
        ------
        ValueError
            Another item size on a 0-d tensor, or a last axis whose bytes the new item size does not divide.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dmlgpu.tensor(np.array([1.0], np.float32)).view(np.uint16).numpy()
        array([    0, 16256], dtype=uint16)
        """
        new = _device_dtype(dtype, "Tensor.view")
        if self._strides is not None:
            if new.itemsize != self.dtype.itemsize:
                raise ValueError(f"Tensor.view: a strided view's items cannot change size ({self.dtype} to {new}): "
                                 f"view t.copy()")
            return self._view(self.shape, new, self.offset, self._strides)
        return self._view(_index.viewed(self.shape, self.dtype, new), new, self.offset)

    @property
    def T(self) -> Tensor:
        """transpose(): the axes reversed, a view."""
        return self.transpose()

    @property
    def strides(self) -> tuple[int, ...]:
        """The bytes between neighbours along each dimension (NumPy's strides; a packed tensor's are
        row-major)."""
        return tuple(s * self.dtype.itemsize for s in self._element_strides())

    # ---- protocols: comparisons, NumPy, scalars, copies, pickling (helpers: tensor_protocols.py) ----
    def _compare(self, other: Any, op: str) -> NoReturn:
        """A rich comparison: TypeError, never an answer by identity."""
        raise TypeError(f"Tensor {op} {type(other).__name__}: {_protocols.host_hint('a comparison')} "
                        f"(t.numpy() {op} ...), or `t is u` to ask whether two Tensors are one object")

    def __eq__(self, other: Any) -> Any:
        self._compare(other, "==")

    def __ne__(self, other: Any) -> Any:
        self._compare(other, "!=")

    def __lt__(self, other: Any) -> Any:
        self._compare(other, "<")

    def __le__(self, other: Any) -> Any:
        self._compare(other, "<=")

    def __gt__(self, other: Any) -> Any:
        self._compare(other, ">")

    def __ge__(self, other: Any) -> Any:
        self._compare(other, ">=")

    __hash__ = object.__hash__             # (by identity, as before: Tensors stay dictionary keys)

    def __contains__(self: Tensor, value: Any) -> bool:
        raise TypeError(f"`x in t` for a Tensor: {_protocols.host_hint('membership')} (x in t.numpy())")

    def __array_ufunc__(self: Tensor, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ``ufunc.at(t, key, values)`` for np.add, np.multiply, np.maximum and np.minimum: in place on
        the device, each update applied in row-major order (NumPy's order, so NumPy's bits; key and values as
        ``t[key] = values`` takes them). Every other ufunc call raises TypeError (dmlgpu computes no elementwise
        arithmetic).

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> grad = dmlgpu.zeros(3, np.float32)
        >>> np.add.at(grad, [0, 2, 0], np.float32(1.5)); grad.numpy()
        array([3. , 0. , 1.5], dtype=float32)
        """
        if method == "at" and inputs and inputs[0] is self and not kwargs:
            _protocols.INDEXING.ufunc_at(ufunc, *inputs)
            return None
        if method == "at":
            raise TypeError(f"numpy.{ufunc.__name__}.at: the target must be the Tensor itself (a Tensor's values go "
                            f"into a NumPy target through t.numpy())")
        raise TypeError(f"numpy.{ufunc.__name__}: {_protocols.host_hint('a NumPy ufunc')} (ufunc.at runs for "
                        f"np.add, np.multiply, np.maximum and np.minimum)")

    def __array_function__(self: Tensor, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy's functions on Tensors: dmlgpu's where _protocols.ARRAY_FUNCTIONS has them (results are Tensors), else
        TypeError naming t.numpy() (no silent download)."""
        impl = _protocols.ARRAY_FUNCTIONS.get(func)
        if impl is None:
            name = getattr(func, "__name__", str(func))
            raise TypeError(f"numpy.{name} does not run on a dmlgpu.Tensor: dmlgpu has take, take_along_axis and "
                            f"put_along_axis (np.{name} of t.numpy() runs on a host copy)")
        return impl(*args, **kwargs)

    def _one(self, who: str) -> Any:
        if self.size != 1:
            raise TypeError(f"{who}() of a Tensor of {self.size} elements: only a one-element Tensor converts to a "
                            f"Python scalar (use t.item(i) or t.numpy())")
        return self.item()

    def __float__(self: Tensor) -> float:
        return float(self._one("float"))

    def __int__(self: Tensor) -> int:
        return int(self._one("int"))

    def __complex__(self: Tensor) -> complex:
        return complex(self._one("complex"))

    def __index__(self: Tensor) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"operator.index() of a Tensor of dtype {self.dtype}: only integer Tensors of one element "
                            f"are indices")
        return int(self._one("operator.index"))

    def __copy__(self: Tensor) -> Tensor:
        """copy.copy(t): t.copy() (a packed copy on the device), as copy.copy of an ndarray copies its data."""
        return self.copy()

    def __deepcopy__(self: Tensor, memo: dict[int, Any]) -> Tensor:
        return self.copy()

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
        """repr() and, outside a recording, the values as ``str(ndarray)`` shows them under NumPy's print options
        (np.get_printoptions(), np.printoptions): a Tensor of up to ``threshold`` elements (default 1000) is
        downloaded whole; a larger one is summarised with "...", as NumPy summarises it, and only the items shown
        (``edgeitems``, default 3, at each end of each axis, and one more per long axis) are gathered on the
        device and downloaded.

        >>> import numpy as np, dmlgpu
        >>> print(dmlgpu.tensor(np.arange(2000, dtype=np.int32)))     # doctest: +ELLIPSIS
        <dmlgpu.Tensor (2000,) int32 on device 0 (...)>
        [   0    1    2 ... 1997 1998 1999]
        """
        if self._rt.active_recording() is not None:
            return repr(self)
        options = np.get_printoptions()
        if self.size <= options["threshold"] or self.ndim == 0:
            return f"{self!r}\n{self.numpy()}"
        edge = options["edgeitems"]
        # per long axis: its first and last ``edge`` items and one between (2 * edge + 1, so that NumPy summarises
        # that axis as it would the whole, showing the same items, formatted alike), taken on the device (np.take:
        # dmlgpu's, through __array_function__), the longest axis first
        shown: Any = self
        for axis in sorted(range(self.ndim), key=lambda k: -self.shape[k]):
            n = self.shape[axis]
            if n > 2 * edge + 1:
                shown = np.take(shown, np.r_[0:edge, edge, n - edge:n], axis=axis)
        return f"{self!r}\n{np.array2string(shown.numpy(), threshold=0)}"

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
