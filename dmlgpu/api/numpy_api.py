"""NumPy's names with NumPy's semantics and signatures, computed on the device: ``take``, ``take_along_axis``
and ``put_along_axis``.

They accept what the layer-2 functions accept (NumPy arrays, anything NumPy can view without a copy, lists,
dmlgpu.Tensors) plus a keyword-only ``device=``, and differ from layer 2 where NumPy does:

- indices follow NumPy's rules: ``take``'s ``mode`` is "raise" (the default: an index outside [-n, n) raises
  IndexError), "wrap" (modulo n) or "clip" (into [0, n - 1]: negative indices become 0, as in NumPy; layer
  2's "clamp" would count them from the end); ``take_along_axis`` and ``put_along_axis`` raise IndexError
  for an index outside [-n, n). The kernels resolve every mode: Tensor indices are never read back, and
  "raise" on them reports at the device's next synchronize or read (dmlgpu/plans/index_check.py says what a
  caller sees); NumPy indices raise before any GPU work;
- index values are read as NumPy reads them, as intp: a uint64 of 2**63 or more is negative (2**64 - 1 is -1:
  "wrap" gives the last element, "clip" the first, "raise" and the along-axis functions an IndexError below
  -n, as NumPy's), a Tensor's seen as int64 (a view, no copy); a Python int of 2**63 or more in a list raises
  OverflowError, as NumPy's conversion does; ``take`` reads booleans as 0 and 1, as ``np.take`` does (the
  along-axis functions raise IndexError for them, as NumPy's). The ONNX-semantics functions (layer 2:
  dmlgpu.gather, ...) keep full 64-bit uint64 values instead;
- ``axis=None`` flattens in row-major order, a strided Tensor view (``t.T``) too: through a packed copy
  made on the device, as the driver packs any strided operand (``put_along_axis`` writes it back into the
  view's elements, as NumPy 1.x's ``arr.flat`` did; NumPy 2.x raises ValueError there, as its flattened copy
  of a non-contiguous array is read-only);
- ``take_along_axis`` and ``put_along_axis`` broadcast the dimensions other than ``axis`` as NumPy does
  (a NumPy operand is broadcast on the host; a Tensor operand must already have the broadcast shape);
- ``put_along_axis`` writes into ``arr`` and returns None: a NumPy array (through a scatter of its copy), or
  a Tensor, in place on its device (one scatter that broadcasts indices and values by strides; Tensor
  indices are checked on the device and the check guards the scatter: nothing written where one is out of
  range, the IndexError at the next synchronize or read: dmlgpu/plans/index_check.py); values of any shape that
  broadcasts to the indexed shape (NumPy's ``arr[index] = values``: scalars, lists, arrays, Tensors, by
  strides on the device), where the ONNX-semantics scatters take updates of exactly their shape; where
  several values land on one element, the last one in row-major order wins, as in NumPy.
"""
from __future__ import annotations

import math
from typing import Any, Literal, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike

from . import driver
from .execution import _self_copy
from .arguments import GATHER_MODES, _axis, _data, _host_array, named
from .functions import DeviceLike, IndexLike, _gather_elements_rule, _gather_rule, gather, scatter_elements
from ..plans.index_map import Layout, as_index_array, check_in_range
from .constructors import tensor
from .tensor import Tensor
from .tensor_protocols import ARRAY_FUNCTIONS, assigned

TakeMode = Literal["raise", "wrap", "clip"]
TAKE_MODES = ("raise", "wrap", "clip")
_Out = TypeVar("_Out", bound="np.ndarray | Tensor")
_UINT64 = np.dtype(np.uint64)


def _flat(a: np.ndarray | Tensor) -> np.ndarray | Tensor:
    """``a`` as one dimension in row-major order (a 1-d one: itself; a packed Tensor: a view of its buffer; a
    strided view (``t.T``, ``t[:, ::2]``): a packed copy made on the device (tensor_index.pack), the copy the
    driver would make of it, so that no strides need to show its elements as one dimension)."""
    if a.ndim == 1:
        return a
    if isinstance(a, Tensor):
        return (a.copy() if a._strides is not None else a).reshape(-1)
    return np.reshape(a, -1)


def _as_intp(indices: Any, booleans: bool = False) -> Any:
    """Indices as NumPy's names read them, as intp: uint64 values as int64 (2**64 - 1 is -1; a Tensor's seen
    as int64, a view, no copy) and, where ``booleans`` (take's), booleans as 0 and 1. A Python int of 2**63
    or more in a list raises OverflowError, as NumPy's conversion to intp does. Other indices as they are."""
    if isinstance(indices, Tensor):
        kind = indices.dtype.kind           # (a big-endian uint64 Tensor stays: the driver refuses it)
        if kind == "u" and indices.dtype == _UINT64:
            return indices.view(np.int64)
        return indices.view(np.uint8) if kind == "b" and booleans else indices
    arr = _host_array(indices)
    kind = arr.dtype.kind
    if kind == "i":
        return arr
    if kind == "f" and arr.size == 0 and isinstance(indices, (list, tuple)):
        return arr.astype(np.int64)        # an empty list: NumPy takes it as integers
    if isinstance(indices, (list, tuple, int)) and (kind in "fO" or arr.dtype == _UINT64):
        _fit_intp(indices)          # (Python ints beyond int64 make uint64, float64 or object arrays)
    if kind == "u" and arr.dtype.itemsize == 8:
        return as_index_array(arr).view(np.int64)
    return arr.view(np.uint8) if kind == "b" and booleans else arr


def _fit_intp(indices: Any) -> None:
    """OverflowError, as NumPy's conversion of Python ints to intp, where the Python ints of ``indices`` (a
    list, tuple or int) do not all fit int64; nothing where any item is not an integer (other checks)."""
    try:
        items = np.asarray(indices, dtype=object).reshape(-1)
    except ValueError:
        return
    if all(isinstance(x, (int, np.integer)) for x in items) and \
            not all(-2**63 <= int(x) < 2**63 for x in items):
        raise OverflowError("Python int too large to convert to an index (NumPy reads indices as intp, int64, "
                            "and raises OverflowError here too)")


def _host_indices(indices: Any, what: str = "indices") -> np.ndarray:
    """Host indices as an index array, read as NumPy reads them (_as_intp); IndexError, as NumPy's, for a
    non-integer dtype."""
    arr = _as_intp(indices)
    if arr.dtype.kind not in "iu":
        raise IndexError(f"{what} must be an integer array, not {arr.dtype}")
    return as_index_array(arr, what)


@overload
def take(a: Tensor, indices: IndexLike, axis: int | None = None, out: None = None, mode: TakeMode = "raise", *,
         device: DeviceLike = None) -> Tensor: ...
@overload
def take(a: ArrayLike, indices: Tensor, axis: int | None = None, out: None = None, mode: TakeMode = "raise", *,
         device: DeviceLike = None) -> Tensor: ...
@overload
def take(a: Tensor | ArrayLike, indices: IndexLike, axis: int | None = None, *, out: _Out,
         mode: TakeMode = "raise", device: DeviceLike = None) -> _Out: ...
@overload
def take(a: Tensor | ArrayLike, indices: IndexLike, axis: int | None, out: _Out, mode: TakeMode = "raise", *,
         device: DeviceLike = None) -> _Out: ...
@overload
def take(a: ArrayLike, indices: int | np.integer[Any] | np.bool_, axis: int | None = None, out: None = None,
         mode: TakeMode = "raise", *, device: DeviceLike = None) -> Any: ...      # (a NumPy scalar)
@overload
def take(a: ArrayLike, indices: IndexLike, axis: int | None = None, out: None = None, mode: TakeMode = "raise", *,
         device: DeviceLike = None) -> np.ndarray: ...
def take(a: Any, indices: Any, axis: int | None = None, out: np.ndarray | Tensor | None = None, mode: TakeMode = "raise", *,
         device: DeviceLike = None) -> Any:
    """``numpy.take`` on the device: elements of ``a`` at ``indices`` along ``axis``.

    Parameters
    ----------
    a : array_like or Tensor
        Any fixed-size dtype (records and strings too).
    indices : array_like or Tensor
        Integers of any shape (an empty list is an empty integer array, as in NumPy), read as NumPy's intp
        (uint64 values of 2**63 or more are negative); booleans are 0 and 1, as in NumPy.
    axis : int or None
        The dimension indexed; None: the flattened ``a`` (row-major; a strided Tensor view too).
    out : np.ndarray or Tensor, optional
        Receives the result and is returned: a NumPy array (cast safely), or a Tensor of exactly the result's
        shape and dtype (written on the device).
    mode : {"raise", "wrap", "clip"}
        NumPy's: "raise": IndexError for an index outside [-n, n) (NumPy indices: before any GPU work;
        Tensor indices: checked on the device, raised by its next synchronize or read, and the result is
        never handed out as valid); "wrap": modulo n; "clip": into [0, n - 1] (negative indices become 0).
    device : dmlgpu.Device, int or None, keyword-only
        A Device or a device index; default: a Tensor operand's device, else ``dmlgpu.default_device()``.

    Returns
    -------
    np.ndarray, NumPy scalar or Tensor
        Shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``: a NumPy array (a NumPy scalar when
        0-d, as NumPy's), a Tensor when an operand is a Tensor, ``out`` when given.

    Raises
    ------
    IndexError
        mode="raise" and an index out of range (AxisError, also a ValueError, for an axis out of range).
    TypeError, ValueError
        A dtype dmlgpu cannot move, non-integer indices, an unknown mode, ``out`` of another shape.
    OverflowError
        A Python int index of 2**63 or more (NumPy's conversion to intp raises it too).
    dmlgpu.DeviceError
        A Tensor of another device.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> a = np.array([[4, 3], [5, 7]], np.int64)
    >>> dmlgpu.take(a, [0, 3])                       # the flattened a
    array([4, 7])
    >>> dmlgpu.take(a, [[1, -1]], axis=1, mode="wrap")
    array([[[3, 3]],
    <BLANKLINE>
           [[7, 7]]])
    >>> dmlgpu.take(a, [])
    array([], dtype=int64)
    >>> dmlgpu.take(a, np.array([2**64 - 1], np.uint64), mode="clip")    # intp: -1, clipped to 0
    array([4])
    >>> dmlgpu.take(dmlgpu.tensor(a).T, [0, 1]).numpy()                 # the flattened view, row-major
    array([4, 5])
    """
    try:
        if mode not in TAKE_MODES:
            raise ValueError(f"mode must be one of {TAKE_MODES}, not {mode!r}")
        data = _data(a, "a", any_size=True)
        indices = _as_intp(indices, booleans=True)
        if axis is None or data.ndim == 0:          # (NumPy takes a 0-d a as 1-d)
            data, axis = _flat(data), 0 if axis is None else axis
        axis = _axis(axis, data.ndim, "a")
        into = out if isinstance(out, Tensor) else None
        shape = data.shape[:axis] + tuple(indices.shape if isinstance(indices, Tensor) else np.shape(indices)) + \
            data.shape[axis + 1:]
        if isinstance(out, np.ndarray) and out.shape != shape:
            raise ValueError(f"out has shape {out.shape}; the result has shape {shape}")
        if isinstance(out, np.ndarray) and not np.can_cast(out.dtype, data.dtype, "safe"):
            raise TypeError(f"Cannot cast array data from {out.dtype!r} to {data.dtype!r} according to the rule "
                            f"'safe' (NumPy's rule for take's out: its dtype must cast safely to a's)")
        if 0 in shape:
            result = gather(data, indices, axis, device=device, mode="clamp", out=into)   # empty: no index read
        else:                   # (every mode resolves indices in the kernels; a Tensor's are never read back)
            result = driver.call("gather", _gather_rule, data, indices, None, (axis,), device=device, mode=mode,
                                 out=into, name="take", modes=GATHER_MODES)
        if into is not None:
            return into
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out must be a NumPy array, not {type(out).__name__}")
            if out.shape != result.shape:
                raise ValueError(f"out has shape {out.shape}; the result has shape {result.shape}")
            np.copyto(out, result.numpy() if isinstance(result, Tensor) else result, casting="unsafe")
            return out
        if isinstance(result, np.ndarray) and result.ndim == 0:
            return result[()]
        return result
    except (TypeError, ValueError, IndexError, RuntimeError, OverflowError) as e:
        raise named(e, "take", "gather") from None


def _broadcast_along(arr_shape: tuple[int, ...], idx_shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """NumPy's broadcast of the dimensions other than ``axis`` (ValueError where they do not broadcast);
    the ``axis`` entry is indices'."""
    if len(arr_shape) != len(idx_shape):
        raise ValueError(f"indices (rank {len(idx_shape)}) and arr (rank {len(arr_shape)}) must have the same "
                         f"number of dimensions")
    shape = []
    for d, (a, i) in enumerate(zip(arr_shape, idx_shape)):
        if d != axis and a != i and 1 not in (a, i):
            raise ValueError(f"shape mismatch: arr {arr_shape} and indices {idx_shape} do not broadcast together "
                             f"outside axis {axis} (dimension {d}: {a} and {i})")
        shape.append(i if d == axis else max(a, i) if 0 not in (a, i) else 0)
    return tuple(shape)


def _broadcast_to(x: np.ndarray | Tensor, shape: tuple[int, ...], what: str) -> np.ndarray | Tensor:
    if x.shape == shape:
        return x
    if isinstance(x, Tensor):
        raise ValueError(f"{what} is a Tensor of shape {x.shape}, which would need broadcasting to {shape}: "
                         f"pass a NumPy array, or a Tensor of the broadcast shape")
    return np.broadcast_to(x, shape)


def _along_axis(arr: np.ndarray | Tensor, indices: Any,
                axis: int | None) -> tuple[np.ndarray | Tensor, int, np.ndarray | Tensor]:
    """(arr, its axis, indices as an index array or Tensor) for the along-axis functions, NumPy's checks
    made: axis None flattens arr and needs 1-d indices."""
    idx: np.ndarray | Tensor
    if isinstance(indices, Tensor):
        if indices.dtype.kind not in "iu":
            raise IndexError(f"indices must be an integer array, not {indices.dtype}")
        idx = _as_intp(indices)
    else:
        idx = _host_indices(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(f"when axis is None, indices must have a single dimension (as NumPy says), not {idx.ndim}")
        return _flat(arr), 0, idx
    return arr, _axis(axis, arr.ndim, "arr"), idx


@overload
def take_along_axis(arr: Tensor, indices: IndexLike, axis: int | None = -1, *,
                    device: DeviceLike = None) -> Tensor: ...
@overload
def take_along_axis(arr: ArrayLike, indices: Tensor, axis: int | None = -1, *,
                    device: DeviceLike = None) -> Tensor: ...
@overload
def take_along_axis(arr: ArrayLike, indices: IndexLike, axis: int | None = -1, *,
                    device: DeviceLike = None) -> np.ndarray: ...
def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, *, device: DeviceLike = None) -> Any:
    """``numpy.take_along_axis`` on the device: ``out[..., j, ...] = arr[..., indices[..., j, ...], ...]``
    along ``axis``, the other dimensions broadcast as NumPy does.

    Parameters
    ----------
    arr : array_like or Tensor
        Any fixed-size dtype (records and strings too).
    indices : array_like or Tensor
        Integers of ``arr``'s rank (1-d when ``axis`` is None). A Tensor operand must already have the
        broadcast shape.
    axis : int or None
        The dimension indexed; None: the flattened ``arr`` (row-major; a strided Tensor view too).
    device : dmlgpu.Device, int or None, keyword-only
        A Device or a device index; default: a Tensor operand's device, else ``dmlgpu.default_device()``.

    Returns
    -------
    np.ndarray or Tensor
        The broadcast shape, with ``indices``' size along ``axis``; a Tensor when an operand is one.

    Raises
    ------
    IndexError
        An index outside [-n, n) (NumPy indices: before any GPU work; Tensor indices: checked on the device,
        raised by its next synchronize or read, as take's); non-integer indices.
    ValueError
        Shapes that do not broadcast (AxisError for an axis out of range).
    dmlgpu.DeviceError
        A Tensor of another device.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> scores = np.array([[0.5, 0.25, 2.0], [1.0, 3.0, 0.0]])
    >>> best = np.argsort(scores, axis=1)[:, ::-1][:, :2]
    >>> dmlgpu.take_along_axis(scores, best, axis=1)
    array([[2. , 0.5],
           [3. , 1. ]])
    """
    try:
        data, axis, idx = _along_axis(_data(arr, "arr", any_size=True), indices, axis)
        shape = _broadcast_along(data.shape, idx.shape, axis)
        data = _broadcast_to(data, shape[:axis] + (data.shape[axis],) + shape[axis + 1:], "arr")
        idx = _broadcast_to(idx, shape, "indices")
        return driver.call("gather_elements", _gather_elements_rule, data, idx, None, (axis,), device=device,
                           mode="raise", name="take_along_axis", takes_mode=False)
    except (TypeError, ValueError, IndexError, RuntimeError, OverflowError) as e:
        raise named(e, "take_along_axis", "gather_elements") from None


def put_along_axis(arr: np.ndarray | Tensor, indices: IndexLike, values: Tensor | ArrayLike, axis: int | None, *,
                   device: DeviceLike = None) -> None:
    """``numpy.put_along_axis`` on the device: ``arr[..., indices[..., j, ...], ...] = values[..., j, ...]``
    along ``axis``, in place.

    Parameters
    ----------
    arr : np.ndarray or Tensor
        Written in place (a Tensor on its device, without a host round trip).
    indices : array_like or Tensor
        Integers of ``arr``'s rank (1-d when ``axis`` is None), broadcast against ``arr`` outside ``axis``.
    values : array_like or Tensor
        Cast to ``arr``'s dtype (a Tensor must have it) and broadcast to the indexed shape, as NumPy's
        ``arr[index] = values``; where several land on one element, the last (row-major order) wins, as in
        NumPy.
    axis : int or None
        The dimension indexed; None: the flattened ``arr``, written through (a strided Tensor view: through
        a packed copy on the device, written back into its elements).
    device : dmlgpu.Device, int or None, keyword-only
        A Device or a device index; default: a Tensor operand's device, else ``dmlgpu.default_device()``.

    Raises
    ------
    IndexError
        An index outside [-n, n): before any GPU work for NumPy indices; for a Tensor's, at the device's next
        synchronize or read, ``arr`` unchanged.
    TypeError, ValueError
        ``arr`` neither an ndarray nor a Tensor, or read-only; shapes that do not broadcast (values that do
        not broadcast to the indexed shape: NumPy's message).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> a = np.zeros((2, 3), np.int32)
    >>> dmlgpu.put_along_axis(a, np.array([[2], [0]]), 9, axis=1)
    >>> a
    array([[0, 0, 9],
           [9, 0, 0]], dtype=int32)
    """
    try:
        if not isinstance(arr, (np.ndarray, Tensor)):
            raise TypeError(f"arr must be a NumPy array or a dmlgpu.Tensor (it is written in place), "
                            f"not {type(arr).__name__}")
        if isinstance(arr, np.ndarray) and not arr.flags.writeable:
            raise ValueError("arr is read-only")
        if isinstance(arr, Tensor):
            _put_along_axis_tensor(_data(arr, "arr"), indices, values, axis, device)
            return
        data = _data(arr, "arr")
        shape_in = data.shape
        data, axis, idx = _along_axis(data, indices, axis)
        if isinstance(idx, Tensor):     # on the device, into a copy of arr; its indices checked there
            copy = _put_along_axis_tensor(tensor(data, device=idx.device), idx, values, axis, device, in_place=False)
            if copy is not None:
                np.copyto(arr, copy.numpy().reshape(shape_in))     # (raises first if an index was bad)
            return
        shape = _broadcast_along(data.shape, idx.shape, axis)
        n = data.shape[axis]
        check_in_range(idx, n, lambda pos, value: f"index {value} at indices position {pos} is out of bounds for "
                                                  f"axis {axis} with size {n}")
        vals = assigned(values.numpy() if isinstance(values, Tensor) else values, data.dtype, None, "put_along_axis")
        vals = np.broadcast_to(_values_for(vals, shape), shape)
        if vals.size == 0:
            return
        # Each value's element as one linear index into the (packed) arr: a dimension of arr of size 1 that
        # indices broadcast over is written at 0 every time, in row-major order, as NumPy's assignment does.
        strides = np.cumprod((1,) + data.shape[:0:-1])[::-1]
        target = np.zeros(shape, dtype=np.int64)
        for d, size in enumerate(data.shape):
            if d == axis:
                coord = idx.astype(np.int64)
                coord = np.where(coord < 0, coord + n, coord)
            elif size == 1:
                continue
            else:
                coord = np.arange(size, dtype=np.int64).reshape((-1,) + (1,) * (len(shape) - 1 - d))
            target = target + coord * int(strides[d])
        result = scatter_elements(_flat(data), target.reshape(-1), np.ascontiguousarray(vals).reshape(-1), 0,
                                  device=device, mode="raise")
        np.copyto(arr, (result.numpy() if isinstance(result, Tensor) else result).reshape(shape_in))
    except (TypeError, ValueError, IndexError, RuntimeError, OverflowError) as e:
        raise named(e, "put_along_axis", "scatter_elements") from None


def _values_for(vals: Any, shape: tuple[int, ...]) -> Any:
    """``vals`` (an array or Tensor) as NumPy's assignment ``arr[index] = vals`` takes them for an indexing
    result of ``shape``: they must broadcast to it (dimensions beyond its rank must be 1: dropped, a view);
    ValueError, NumPy's, where they do not."""
    extra = max(vals.ndim - len(shape), 0)
    lead, rest = vals.shape[:extra], vals.shape[extra:]
    pad = len(shape) - len(rest)
    if any(n != 1 for n in lead) or any(v not in (1, n) for v, n in zip(rest, shape[pad:])):
        raise ValueError(f"shape mismatch: value array of shape {vals.shape} could not be broadcast to indexing "
                         f"result of shape {shape} (NumPy's rule for arr[index] = values)")
    return vals.reshape(rest) if extra else vals


def _broadcast_strides(shape: tuple[int, ...], of: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides that broadcast a packed array of shape ``of`` to ``shape`` (NumPy's rules,
    right-aligned): 0 along a dimension it repeats."""
    packed = Layout.packed(of).strides
    pad = len(shape) - len(of)
    return tuple(0 if d < pad or of[d - pad] == 1 and n != 1 else packed[d - pad] for d, n in enumerate(shape))


def _put_along_axis_tensor(arr: Tensor, indices: Any, values: Any, axis: int | None, device: DeviceLike,
                           in_place: bool = True) -> Tensor | None:
    """put_along_axis into a Tensor, on its device and in place: one scatter whose index map broadcasts
    the indices, the values and ``arr`` by strides (nothing is materialised, nothing of ``arr`` copied).
    NumPy indices are checked on the host first (IndexError); a Tensor's by the driver (mode="raise": on the
    device, guarding the scatter in place, nothing written where one is bad; where ``in_place`` is False the
    scatter writes a new Tensor, returned; where nothing is written, None)."""
    data, axis, idx = _along_axis(arr, indices, axis)   # (axis None on a strided view: data is a packed copy)
    shape = _broadcast_along(data.shape, idx.shape, axis)
    n = data.shape[axis]
    if not isinstance(idx, Tensor):
        check_in_range(idx, n, lambda pos, value: f"index {value} at indices position {pos} is out of bounds for "
                                                  f"axis {axis} with size {n}")
    if isinstance(values, Tensor):
        if values.dtype != data.dtype:
            raise TypeError(f"values is a Tensor of dtype {values.dtype}; arr's is {data.dtype} (cast it first)")
        vals: Any = values
    else:
        vals = assigned(values, data.dtype, None, "put_along_axis")      # NumPy's cast (a[...] = values)
    vals = _values_for(vals, shape)                 # ValueError where values do not broadcast to shape
    if math.prod(shape) == 0:
        return None

    def rule(data: Any, idx: Any, vals: Any, axis: int) -> driver.Signature:
        """scatter_elements through layouts that broadcast: where arr is broadcast (a stride 0), several
        updates land on one element, so the plan is claim-and-write (ops.scatter_elements picks it)."""
        arr_shape = tuple(n if d == axis else size for d, size in enumerate(shape))   # (disjoint() sees repeats)
        layouts = (Layout(arr_shape, _broadcast_strides(shape, data.shape)),
                   Layout(shape, _broadcast_strides(shape, idx.shape)), Layout(shape, _broadcast_strides(shape, vals.shape)))
        return driver.Signature(data.shape, n, (*layouts, axis, data.dtype, idx.dtype, "none", _self_copy(data)))

    mode = "raise" if isinstance(idx, Tensor) else "clamp"      # Tensor indices: checked as take's (the driver's)
    result: Tensor = driver.call("scatter_elements", rule, data, idx, vals, (axis,), device=device,
                                 out=data if in_place else None, mode=mode,
                                 key=(axis, mode, "put_along_axis", in_place), name="put_along_axis",
                                 takes_mode=False)
    if in_place and isinstance(data, Tensor) and data.buffer is not arr.buffer:     # the packed copy of a strided view: written back into it
        arr._write_packed(data.reshape(arr.shape))
    return None if in_place else result


# NumPy's np.take, np.take_along_axis and np.put_along_axis on Tensors run these (Tensor.__array_function__)
ARRAY_FUNCTIONS.update({np.take: take, np.take_along_axis: take_along_axis, np.put_along_axis: put_along_axis})
