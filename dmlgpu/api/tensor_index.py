"""Basic indexing of a dmlgpu.Tensor (``Tensor.__getitem__``): every basic key as a view (a byte offset and
element strides), the strides of reshapes without copies, and the device work of strided views: a packed copy
gathered from the buffer (``pack``) and a packed Tensor scattered into a view's elements (``write_packed``),
both by units of the widest size that divides the item, offset and strides (it sits below functions.py,
which imports the Tensor: it runs the gather's and scatter's plans itself)."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..plans.index_map import Layout, take_map
from ..plans import ops
from ..plans.plan import GatherPlan
from ..runtime import Buffer, as_bytes


def device_dtype(dtype: DTypeLike, who: str) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.hasobject or dt.itemsize == 0:
        raise TypeError(f"{who}: dtype {dt} cannot live on a device (Python objects or empty items): use a "
                        f"numeric dtype")
    return dt



def getitem(t: Any, key: Any) -> Any:
    """``t[key]`` for a Tensor ``t`` (Tensor.__getitem__'s contract): every basic index is a view of
    ``t``'s buffer, with element strides (ints move the offset, slices scale the strides, None inserts an
    axis of stride 0), as NumPy's."""
    entries, out_shape = _basic_key(key, t.shape)
    strides = t._element_strides()
    offset, out_strides, axis = 0, [], 0
    for e in entries:
        if e is None:
            out_strides.append(0)
            continue
        if isinstance(e, int):
            offset += e * strides[axis]
        else:
            first, count, step = e
            offset += first * strides[axis]
            out_strides.append(strides[axis] * step)
        axis += 1
    if math.prod(out_shape) == 0:
        offset = 0
    return t._view(out_shape, t.dtype, t.offset + offset * t.dtype.itemsize, tuple(out_strides))


def packed(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether element ``strides`` lay ``shape`` out packed in row-major order (dimensions of size 1 may have
    any stride; an empty shape is packed)."""
    if 0 in shape:
        return True
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


def nocopy_reshape(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The element strides of ``new`` over the elements of a strided layout (``shape``, ``strides``) in
    row-major order without moving them, or None where no strides can (NumPy's _attempt_nocopy_reshape)."""
    if 0 in shape or packed(shape, strides):
        return packed_strides_of(new)
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    out = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(old):
        np_, op = new[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):
            if old[ok][1] != old[ok + 1][0] * old[ok + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            out[nk - 1] = out[nk] * new[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    return tuple(out)


def packed_strides_of(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    return tuple(_strides(shape))


def _unit_positions(t: Any) -> tuple[np.dtype, np.ndarray]:
    """(the widest unit of 1 to 16 bytes that divides ``t``'s rows (its innermost dimension where that is
    contiguous, else one item), byte offset and byte strides, the position in such units of each unit of
    ``t``'s elements in its buffer, in row-major order, as an int32 or int64 index array)."""
    itemsize = t.dtype.itemsize
    dims = [(n, s * itemsize) for n, s in zip(t.shape, t._element_strides())]
    row = itemsize
    if dims and dims[-1][1] == itemsize:        # a contiguous innermost dimension: rows of bytes
        row = dims.pop()[0] * itemsize
    used = [b for n, b in dims if n > 1]
    unit = next(u for u in (16, 8, 4, 2, 1) if all(x % u == 0 for x in [row, t.offset, *used]))
    pos = np.array(t.offset // unit, np.int64)
    for n, b in dims:
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * (b // unit)
    pos = (pos[..., None] + np.arange(row // unit, dtype=np.int64)).reshape(-1)
    units = t.buffer.nbytes // unit
    return np.dtype(f"V{unit}"), pos.astype(np.int32 if units < 2**31 else np.int64)


def pack(t: Any) -> Any:
    """A new packed Tensor of a strided view's elements, gathered from its buffer on the device (queued)."""
    if t.size == 0:
        return type(t)._wrap(t._rt.take_buffer(0), t.shape, t.dtype)
    unit, pos = _unit_positions(t)
    flat = type(t)._wrap(t.buffer, (t.buffer.nbytes // unit.itemsize,), unit)
    rows = _gather_rows(flat, flat.shape, pos)
    return type(t)._wrap(rows.buffer, t.shape, t.dtype)


def write_packed(t: Any, src: Any) -> None:
    """Writes a packed Tensor ``src`` (offset 0, ``t``'s shape and dtype, another buffer) into the elements of
    a strided view ``t``, on the device (queued): one scatter of units into ``t``'s buffer, in place."""
    if t.size == 0:
        return
    unit, pos = _unit_positions(t)
    n_units = t.buffer.nbytes // unit.itemsize
    plan = ops.scatter_nd(Layout.packed((n_units,)), Layout.packed((pos.size, 1)), Layout.packed((pos.size,)), unit,
                          pos.dtype, "none", ops.input_copy(Layout.packed((n_units,)), Layout.packed((n_units,)), unit),
                          unique=True)
    idx = pos.reshape(-1, 1)
    dev = t._rt
    dev.check_sizes(t.buffer.nbytes, idx.nbytes, src.nbytes)
    with dev.launch() as launch:
        idx_buf = launch.scratch(idx.nbytes)
        idx_buf.stage(as_bytes(idx))
        dispatches, params = plan.dispatches(dev, input=t.buffer, indices=idx_buf, output=t.buffer,
                                             updates=src.buffer, take=launch.scratch)
        launch.run(dispatches, uploads=params + [idx_buf], queue=True)


def _gather_rows(t: Any, shape: tuple[int, ...], idx: np.ndarray) -> Any:
    """A new Tensor of the rows of the packed tensor ``t``, seen as ``shape``, at the row numbers ``idx`` (in
    range; int32 or int64): dmlgpu.gather(t.reshape(shape), idx) through its plan, queued (recorded in a
    recording; this module sits below functions.py, which imports it)."""
    dev = t._rt
    out_shape = idx.shape + shape[1:]
    index_map = take_map(Layout.packed(shape), Layout.packed(idx.shape), Layout.packed(out_shape), 0,
                         t.dtype.itemsize)
    plan = GatherPlan(index_map, idx.dtype)
    out_bytes = math.prod(out_shape) * t.dtype.itemsize
    dev.check_sizes(t.buffer.nbytes, idx.nbytes, out_bytes)
    with dev.launch() as launch:
        idx_buf, out_buf = launch.scratch(idx.nbytes), launch.output(out_bytes)
        idx_buf.stage(as_bytes(idx))
        dispatches, params = plan.dispatches(dev, input=t.buffer, indices=idx_buf, output=out_buf,
                                             take=launch.scratch)
        launch.run(dispatches, uploads=params + [idx_buf], queue=True)
    return type(t)._wrap(out_buf, out_shape, t.dtype)

def _strides(shape: tuple[int, ...]) -> list[int]:
    """Row-major strides in elements."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def _basic_key(key: Any, shape: tuple[int, ...]) -> tuple[list[Any], tuple[int, ...]]:
    """(entries, result shape) of a basic index: per input axis in key order an int (normalized) or a tuple
    (first, count, step), and None where the key inserts an axis."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not (k is None or k is Ellipsis or isinstance(k, slice)
                                                   or hasattr(k, "__index__")) or isinstance(k, np.ndarray) or hasattr(k, "buffer"):
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



def flat_position(shape: tuple[int, ...], args: tuple) -> int:
    """The flat (row-major) position of Tensor.item(*args)'s element in a tensor of ``shape``: no argument
    (one element), a flat index, or one index per dimension (or one tuple of them), as ndarray.item()."""
    size = math.prod(shape)
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]
    if not args:
        if size != 1:
            raise ValueError(f"Tensor.item: can only convert a tensor of size 1 to a Python scalar (it has "
                             f"{size} elements): pass an index")
        flat = 0
    elif len(args) == 1:
        flat = operator.index(args[0])
        if not -size <= flat < size:
            raise IndexError(f"Tensor.item: index {flat} is out of bounds for size {size}")
        flat %= size
    else:
        if len(args) != len(shape):
            raise IndexError(f"Tensor.item: {len(args)} indices for a {len(shape)}-dimensional tensor")
        idx = []
        for ax, (i, n) in enumerate(zip(args, shape)):
            i = operator.index(i)
            if not -n <= i < n:
                raise IndexError(f"Tensor.item: index {i} is out of bounds for axis {ax} with size {n}")
            idx.append(i % n)
        flat = int(np.ravel_multi_index(idx, shape))
    return flat


def reshaped(size: int, shape: tuple, order: str) -> tuple[int, ...]:
    """The dimensions of Tensor.reshape(*shape, order=order) for a tensor of ``size`` elements (one -1
    inferred), as NumPy's reshape of a contiguous array."""
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
        if known == 0 or size % known:
            raise ValueError(f"Tensor.reshape: cannot reshape a tensor of size {size} into shape "
                             f"{tuple(dims)}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"Tensor.reshape: cannot reshape a tensor of size {size} into shape {tuple(dims)}")
    return tuple(dims)


def viewed(shape: tuple[int, ...], old: np.dtype, new: np.dtype) -> tuple[int, ...]:
    """The shape of Tensor.view(new) of a tensor of ``shape`` and dtype ``old``: NumPy's rule for a changed
    item size (the last axis's bytes are divided into the new items)."""
    if new.itemsize == old.itemsize:
        return shape
    if not shape:
        raise ValueError("Tensor.view: changing the dtype of a 0-d tensor is only supported if the itemsize is "
                         "unchanged (reshape it to 1-d first)")
    last = shape[-1] * old.itemsize
    if new.itemsize < old.itemsize and old.itemsize % new.itemsize or last % new.itemsize:
        raise ValueError(f"Tensor.view: the last axis ({shape[-1]} items of {old.itemsize} bytes) "
                         f"cannot be viewed as items of {new.itemsize} bytes ({new}): its bytes must be a "
                         f"multiple of the new item size")
    return shape[:-1] + (last // new.itemsize,)
