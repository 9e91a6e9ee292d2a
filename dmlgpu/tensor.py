"""dmlgpu.Tensor: an array that lives in a device buffer, for chaining operations without host copies, and its
NumPy-style constructors (tensor, asarray, empty, zeros, ones, full and their ``*_like`` forms)."""
from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NoReturn, Sequence, SupportsIndex, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .device import Device, as_device
from .index_map import Layout, take_map
from .interop import host_array
from .plan import GatherPlan
from .runtime import Buffer, as_bytes

ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]
DeviceLike = Union[Device, int, None]


class Tensor:
    """A device-resident array: ``shape``, ``dtype`` and the bytes of ``buffer`` from byte ``offset``, packed
    in row-major order. Make one with dmlgpu.tensor() / asarray() (a copy of an array or Tensor), empty(),
    zeros(), ones() or full().

    Layer-2 functions accept Tensors wherever they accept arrays and then return Tensors, queued on the
    device (reading them waits). A Tensor behaves like a read-only array where NumPy expects one:
    ``np.asarray(t)`` downloads a copy (as ``numpy()`` does), ``len(t)``, ``ndim``, ``size``, ``nbytes``,
    ``itemsize``; ``reshape()``, ``view(dtype)`` and basic indexing on the leading axis (``t[2]``,
    ``t[1:5]``, ``t[1:5, ...]``) give views that share the buffer; other basic indexing (steps, later axes,
    None) gives a new Tensor computed on the device; ``copy()``, ``astype()``, ``to(device)``,
    ``tolist()``, ``item()``. Writes from the host go through ``write(array)`` only; recordings keep their
    own host copies (Recording.host). The buffer comes from the device's caching allocator and goes back to
    it when the last Tensor that uses it (views included) is collected.

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
    >>> t[1].tolist(), np.asarray(t[:, ::2]).sum()          # a view; a strided selection made on the device
    ([3.0, 4.0, 5.0], np.float32(10.0))
    """

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    buffer: Buffer
    offset: int = 0               # byte offset of the first element in ``buffer`` (views set it)
    base: "Tensor | None" = None  # the Tensor whose buffer a view shares (None: it owns it)

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

    def _view(self, shape: tuple[int, ...], dtype: np.dtype[Any], offset: int) -> "Tensor":
        """A view of this tensor's buffer (no checks: the caller keeps it inside the tensor's bytes)."""
        t = Tensor._wrap(self.buffer, shape, dtype)
        t.offset = offset
        t.base = self.base if self.base is not None else self
        return t

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
        return self.device._read_range(self.buffer, self.offset, self.nbytes).view(self.dtype).reshape(self.shape)

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
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        if not args:
            if self.size != 1:
                raise ValueError(f"Tensor.item: can only convert a tensor of size 1 to a Python scalar (it has "
                                 f"{self.size} elements): pass an index")
            flat = 0
        elif len(args) == 1:
            flat = operator.index(args[0])
            if not -self.size <= flat < self.size:
                raise IndexError(f"Tensor.item: index {flat} is out of bounds for size {self.size}")
            flat %= self.size
        else:
            if len(args) != self.ndim:
                raise IndexError(f"Tensor.item: {len(args)} indices for a {self.ndim}-dimensional tensor")
            idx = []
            for ax, (i, n) in enumerate(zip(args, self.shape)):
                i = operator.index(i)
                if not -n <= i < n:
                    raise IndexError(f"Tensor.item: index {i} is out of bounds for axis {ax} with size {n}")
                idx.append(i % n)
            flat = int(np.ravel_multi_index(idx, self.shape))
        size = self.dtype.itemsize
        raw = self.device._read_range(self.buffer, self.offset + flat * size, size)
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
            if src.device is self.device and src.shape == self.shape and src.dtype == self.dtype and (
                    src.buffer is not self.buffer or src.offset + src.nbytes <= self.offset
                    or self.offset + self.nbytes <= src.offset):       # (regions of one buffer must not overlap)
                self.device._copy(src.buffer, self.buffer, self.nbytes, src.offset, self.offset)   # queued
                return
            array = src.numpy()
        arr = np.asarray(array, dtype=self.dtype)
        if arr.shape != self.shape:
            try:
                arr = np.broadcast_to(arr, self.shape)
            except ValueError:
                raise ValueError(f"Tensor.write: an array of shape {arr.shape} does not broadcast to the tensor's "
                                 f"shape {self.shape}") from None
        if self.nbytes:
            self.device._write(self.buffer, self.offset, as_bytes(np.ascontiguousarray(arr)))

    # ---- views and copies ----
    def reshape(self, *shape: Any, order: str = "C") -> "Tensor":
        """The same bytes as another shape: a view sharing the buffer (as NumPy's reshape of a contiguous
        array).

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
            A shape of another size, more than one -1, a negative dimension, or another order.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32))
        >>> t.reshape(2, -1).numpy()
        array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)
        """
        if order != "C":
            raise ValueError(f"Tensor.reshape: order={order!r}: a Tensor is row-major; only order='C' is possible")
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) and hasattr(shape[0], "__len__"):
            shape = tuple(shape[0])
        try:
            dims = [operator.index(s) for s in shape]
        except TypeError:
            raise TypeError(f"Tensor.reshape: the shape must be ints, not {shape!r}") from None
        unknown = [i for i, d in enumerate(dims) if d == -1]
        if len(unknown) > 1:
            raise ValueError("Tensor.reshape: can only specify one unknown dimension (-1)")
        if any(d < -1 for d in dims):
            raise ValueError(f"Tensor.reshape: negative dimensions are not allowed: {tuple(dims)}")
        known = math.prod(d for d in dims if d != -1)
        if unknown:
            if known == 0 or self.size % known:
                raise ValueError(f"Tensor.reshape: cannot reshape a tensor of size {self.size} into shape "
                                 f"{tuple(dims)}")
            dims[unknown[0]] = self.size // known
        elif known != self.size:
            raise ValueError(f"Tensor.reshape: cannot reshape a tensor of size {self.size} into shape {tuple(dims)}")
        return self._view(tuple(dims), self.dtype, self.offset)

    def view(self, dtype: DTypeLike) -> "Tensor":
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
        if new.itemsize == self.dtype.itemsize:
            return self._view(self.shape, new, self.offset)
        if not self.shape:
            raise ValueError("Tensor.view: changing the dtype of a 0-d tensor is only supported if the itemsize is "
                             "unchanged (reshape it to 1-d first)")
        last = self.shape[-1] * self.dtype.itemsize
        if new.itemsize < self.dtype.itemsize and self.dtype.itemsize % new.itemsize or last % new.itemsize:
            raise ValueError(f"Tensor.view: the last axis ({self.shape[-1]} items of {self.dtype.itemsize} bytes) "
                             f"cannot be viewed as items of {new.itemsize} bytes ({new}): its bytes must be a "
                             f"multiple of the new item size")
        return self._view(self.shape[:-1] + (last // new.itemsize,), new, self.offset)

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
        out = Tensor._wrap(dev._take(self.nbytes), self.shape, self.dtype)
        dev._copy(self.buffer, out.buffer, self.nbytes, src_offset=self.offset)
        return out

    def _packed(self) -> "Tensor":
        """The tensor itself when ``offset`` is 0, else a packed copy (copy(): queued after queued work)."""
        return self if self.offset == 0 else self.copy()

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
        return tensor(self.numpy().astype(new), device=self.device)

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
        return tensor(self.numpy(), device=dev)

    # ---- indexing ----
    def __getitem__(self, key: Any) -> "Tensor":
        """Basic indexing (ints, slices, None, Ellipsis). A selection of whole rows (leading ints, then at
        most one step-1 slice, then whole axes) is a view of the buffer at a byte offset; any other is a new
        Tensor gathered on the device. Arrays as indices: TypeError (use dmlgpu.take / gather)."""
        entries, out_shape = _basic_key(key, self.shape)
        itemsize = self.dtype.itemsize
        strides = _strides(self.shape)
        if math.prod(out_shape) == 0:
            return self._view(out_shape, self.dtype, self.offset)
        axes = [e for e in entries if e is not None]
        k = next((i for i, e in enumerate(axes) if isinstance(e, slice) or isinstance(e, tuple)), len(axes))
        start = sum(e * strides[i] for i, e in enumerate(axes[:k]))   # leading ints: element offset
        rest = axes[k:]
        contiguous = all(_whole(e, n) for e, n in zip(rest[1:], self.shape[k + 1:]))
        if rest and contiguous:
            first, n, step = rest[0]
            if step == 1 or n <= 1:
                return self._view(out_shape, self.dtype, self.offset + (start + first * strides[k]) * itemsize)
        elif not rest:
            return self._view(out_shape, self.dtype, self.offset + start * itemsize)
        # computed on the device: rows of the trailing whole axes (no None among them), gathered by a
        # host-built index array over the leading axes
        suffix = 0
        for e, n in zip(reversed(entries), range(len(entries))):
            if e is None or not isinstance(e, tuple) or not _whole(e, self.shape[self.ndim - 1 - suffix]):
                break
            suffix += 1
        lead_entries = entries[:len(entries) - suffix]
        lead_shape = self.shape[:self.ndim - suffix]
        lead_strides = _strides(lead_shape)
        rank = sum(1 for e in lead_entries if not isinstance(e, int))
        flat = np.zeros((1,) * rank, np.int64)
        pos = axis = 0
        for e in lead_entries:
            if e is None:
                pos += 1
            elif isinstance(e, int):
                flat = flat + e * lead_strides[axis]
                axis += 1
            else:
                first, n, step = e
                coord = first + step * np.arange(n, dtype=np.int64)
                flat = flat + (coord * lead_strides[axis]).reshape((1,) * pos + (n,) + (1,) * (rank - pos - 1))
                pos += 1
                axis += 1
        rows = math.prod(lead_shape)
        idx = np.ascontiguousarray(flat, dtype=np.int32 if rows < 2**31 else np.int64)
        return self._packed()._gather_rows((rows,) + self.shape[self.ndim - suffix:], idx).reshape(out_shape)

    def _gather_rows(self, shape: tuple[int, ...], idx: np.ndarray) -> "Tensor":
        """A new Tensor of the rows of this packed tensor, seen as ``shape``, at the row numbers ``idx`` (in
        range; int32 or int64): dmlgpu.gather(t.reshape(shape), idx) through its plan, queued (recorded in a
        recording; this module sits below functions.py, which imports it)."""
        dev = self.device
        out_shape = idx.shape + shape[1:]
        index_map = take_map(Layout.packed(shape), Layout.packed(idx.shape), Layout.packed(out_shape), 0,
                             self.dtype.itemsize)
        plan = GatherPlan(index_map, idx.dtype)
        out_bytes = math.prod(out_shape) * self.dtype.itemsize
        dev._check_sizes(self.buffer.nbytes, idx.nbytes, out_bytes)
        recording = dev._recording() is not None
        with dev._lock:
            taken: list[Buffer] = []

            def scratch(n: int) -> Buffer:
                taken.append(dev._take(n))
                return taken[-1]

            idx_buf, out_buf = scratch(idx.nbytes), dev._take(out_bytes)
            idx_buf._stage(as_bytes(idx))
            dispatches, params = plan.dispatches(dev, input=self.buffer, indices=idx_buf, output=out_buf,
                                                 take=scratch)
            dev._run(dispatches, uploads=params + [idx_buf], queue=True)
            if not recording:            # free now: later queued work may reuse them (Device._run)
                dev._give(*taken)
        return Tensor._wrap(out_buf, out_shape, self.dtype)

    # ---- representation ----
    def __repr__(self) -> str:
        where = f" at byte offset {self.offset}" if self.offset else ""
        return (f"<dmlgpu.Tensor {self.shape} {self.dtype} on device {self.device.info.index} "
                f"({self.device.info.name}){where}>")

    def __str__(self) -> str:
        """repr() and, for up to 1000 elements outside a recording, the values (downloaded)."""
        if self.size > 1000 or self.device._recording() is not None:
            return repr(self)
        return f"{self!r}\n{self.numpy()}"

    def _no_recording(self, what: str) -> None:
        if self.device._recording() is not None:
            raise RuntimeError(f"{what}() cannot run inside a recording: record download(t) and read "
                               f"Recording.host(t) after the block")


# ---- indexing helpers ----
def _strides(shape: tuple[int, ...]) -> list[int]:
    """Row-major strides in elements."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def _whole(e: Any, n: int) -> bool:
    """A normalized slice entry (first, count, step) that selects all of an axis of size n in order."""
    return isinstance(e, tuple) and e[0] == 0 and e[1] == n and (e[2] == 1 or n <= 1)


def _basic_key(key: Any, shape: tuple[int, ...]) -> tuple[list[Any], tuple[int, ...]]:
    """(entries, result shape) of a basic index: per input axis in key order an int (normalized) or a tuple
    (first, count, step), and None where the key inserts an axis."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not (k is None or k is Ellipsis or isinstance(k, slice)
                                                   or hasattr(k, "__index__")) or isinstance(k, (np.ndarray, Tensor)):
            raise TypeError(f"Tensor[]: only integers, slices, None and ... are valid indices, not "
                            f"{type(k).__name__}: for index arrays use dmlgpu.take(t, indices, axis) or "
                            f"dmlgpu.gather / gather_nd")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("Tensor[]: an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > len(shape):
        raise IndexError(f"Tensor[]: too many indices for tensor: tensor is {len(shape)}-dimensional, but {used} "
                         f"were indexed")
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - used) + key[at + 1:]
    else:
        key = key + (slice(None),) * (len(shape) - used)
    entries: list[Any] = []
    out: list[int] = []
    axis = 0
    for k in key:
        if k is None:
            entries.append(None)
            out.append(1)
            continue
        n = shape[axis]
        if isinstance(k, slice):
            first, stop, step = k.indices(n)
            count = len(range(first, stop, step))
            entries.append((first if count else 0, count, step))
            out.append(count)
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"Tensor[]: index {i} is out of bounds for axis {axis} with size {n}")
            entries.append(i % n)
        axis += 1
    return entries, tuple(out)


# ---- constructors ----
def _device_dtype(dtype: DTypeLike, who: str) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.hasobject or dt.itemsize == 0:
        raise TypeError(f"{who}: dtype {dt} cannot live on a device (Python objects or empty items): use a "
                        f"numeric dtype")
    return dt


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
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")       # (np.ascontiguousarray would make a 0-d array 1-d)
    dev = as_device(device, "tensor")
    return Tensor(dev.buffer(arr, nbytes=max(4, arr.nbytes)), arr.shape, arr.dtype)


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


def zeros(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding zeros (zero bytes), filled on the device.

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
        As empty()'s.

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


def ones(shape: ShapeLike, dtype: DTypeLike = np.float32, device: DeviceLike = None) -> Tensor:
    """A new Tensor of ``shape`` and ``dtype`` holding ones (full(shape, 1, dtype)).

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
        As empty()'s.

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


def _like(a: Any, dtype: DTypeLike | None, device: DeviceLike) -> tuple[tuple[int, ...], np.dtype[Any], DeviceLike]:
    if isinstance(a, Tensor):
        return a.shape, np.dtype(dtype) if dtype is not None else a.dtype, a.device if device is None else device
    arr = np.asarray(a) if not hasattr(a, "shape") or not hasattr(a, "dtype") else a
    return tuple(arr.shape), np.dtype(dtype) if dtype is not None else np.dtype(arr.dtype), device


def empty_like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """empty() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

    Parameters
    ----------
    a : Tensor or array_like
    dtype : dtype_like, optional
    device : dmlgpu.Device, int or None

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, dmlgpu.DeviceError
        As empty()'s.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.empty_like(np.zeros((2, 3), np.int8)).shape
    (2, 3)
    """
    return empty(*_like(a, dtype, device))


def zeros_like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """zeros() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

    Parameters
    ----------
    a : Tensor or array_like
    dtype : dtype_like, optional
    device : dmlgpu.Device, int or None

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, dmlgpu.DeviceError
        As zeros()'s.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.zeros_like(dmlgpu.tensor(np.arange(3))).numpy()
    array([0, 0, 0])
    """
    return zeros(*_like(a, dtype, device))


def ones_like(a: Any, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """ones() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor (default).

    Parameters
    ----------
    a : Tensor or array_like
    dtype : dtype_like, optional
    device : dmlgpu.Device, int or None

    Returns
    -------
    Tensor

    Raises
    ------
    TypeError, dmlgpu.DeviceError
        As ones()'s.

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
