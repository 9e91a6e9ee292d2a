"""Layer 2: NumPy-style gather and scatter functions with ONNX semantics.

Each takes NumPy arrays (any dtype whose item size is 1, 2, 4, 8 or 16 bytes: values move bit-exact), what
NumPy can view without a copy (PyTorch CPU tensors and other DLPack producers, ``__array__``, the buffer
protocol: see dmlgpu.interop.host_array) or dmlgpu.Tensors, ``device=`` (a Device or a device index; default:
the device of a Tensor operand, else dmlgpu.default_device()) and ``mode=``: "clamp" (DirectML's behaviour:
negative indices count from the end, then out-of-range ones are clamped) or "raise" (IndexError naming the
first offending index, before any GPU work). Errors name the function called. Inputs are never
modified, except a scatter's data given as its ``out`` (in place). Results are new NumPy arrays, or new
Tensors when an operand is a Tensor or the call is made inside a Device.record() block, or ``out``.

Calls that return Tensors are queued on their device and return at once (Device.synchronize() and host reads
wait: see dmlgpu.runtime.device); NumPy results are complete when the call returns.

Repeated calls are planned once per signature (dmlgpu/execution.py).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Literal, TypeVar, Union, overload

import numpy as np
from numpy.typing import ArrayLike

from . import calls as _calls, reduction as _reduction
from .arguments import (_axis, _check_elements_shapes, _check_nd, _data, _host_array, _index_array, _index_check,
                        _operands, _updates, named)
from .execution import _Call, _execute, _planned, _self_copy, check_out, out_key
from . import ops
from .index_map import Layout, nd_shape, take_shape
from .device import Device
from .tensor import Tensor

Mode = Literal["clamp", "raise"]
Reduction = Literal["none", "add", "mul", "min", "max"]
DeviceLike = Union[Device, int, None]     # a Device, a device index, or None: the default (device.as_device)
ArrayInput = ArrayLike                    # an ndarray, what NumPy can view (interop.host_array), lists, scalars
IndexLike = Union[Tensor, ArrayInput]


# The parameters and errors that the five functions' docstrings share, written once (_documented puts them in).
_DOC_PARTS = {
    "device_mode": """\
    device : dmlgpu.Device, int or None
        Where it runs: a Device or a device index (``dmlgpu.devices()``); default: a Tensor operand's device,
        else ``dmlgpu.default_device()``.
    mode : {"clamp", "raise"}
        "clamp" (DirectML's): a negative index counts from the end once, then clamps into range; "raise":
        IndexError for an index outside [-n, n), before any GPU work.""",
    "raises": """\
    TypeError
        A dtype dmlgpu cannot move, non-integer indices, a non-integer axis.
    ValueError
        Shapes that do not fit together, an unknown mode (AxisError, also an IndexError, for an axis out of
        range).
    IndexError
        mode="raise" and an index out of range.
    dmlgpu.DeviceError
        A Tensor of another device, or tensors larger than the device can hold.""",
    "reduction": """\
    reduction : {"none", "add", "mul", "min", "max"}
        "none": the last update for a target (row-major order of the updates) wins. The others (ONNX
        opsets 16/18) combine every update into its target in that order, bit-reproducibly: integers wrap,
        floats round to nearest even, min/max propagate NaN, bool's add/max are or and mul/min are and.
        float32 uses the device's arithmetic, which may flush subnormals on some GPUs (float16 and float64
        never do); other dtypes raise TypeError (details: dmlgpu/reduction.py).""",
}
_DOC_PARTS["out"] = """\
    out : Tensor or np.ndarray, optional
        Receives the result and is returned: exactly the result's shape and dtype (ValueError otherwise,
        before any GPU work). A Tensor of the call's device is written there (queued); a NumPy array only
        where the call returns NumPy arrays. An ``out`` that shares memory with an operand gets the result
        through a new Tensor copied into it."""
_DOC_PARTS["scatter_out"] = _DOC_PARTS["out"] + """ It may be ``data`` itself: the call then updates ``data`` in
        place and runs only the scatter (no copy of ``data``); a reduction folds into the existing values in
        the same order, with the same bits, as the copying call.
    unique_indices : bool
        A promise that no two updates address the same element (JAX's name): the scatter may skip settling
        collisions between them. The result is defined only when the promise holds; it is not checked."""
_F = TypeVar("_F", bound=Callable[..., Any])
_O = TypeVar("_O", Tensor, np.ndarray)    # out=: the result is out


def _documented(fn: _F) -> _F:
    """``fn`` with the shared parts of its docstring (``%(name)s``: _DOC_PARTS) filled in."""
    fn.__doc__ = (fn.__doc__ or "") % _DOC_PARTS
    return fn


def _unique(unique_indices: bool) -> tuple:
    """unique_indices's part of a scatter's signature."""
    return ("unique",) if unique_indices else ()


def _out(op: str, out, data, operands: tuple, dev: Device) -> tuple:
    """``out``'s checks that need no plan (execution.check_out) and its part of the call's signature."""
    if out is None:
        return ()
    check_out(op, out, data, operands, dev)
    return out_key(out, data)


@overload
def gather(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None, mode: Mode = "clamp",
           out: _O) -> _O: ...
@overload
def gather(data: Tensor, indices: IndexLike, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp", out: None = None) -> Tensor: ...
@overload
def gather(data: ArrayInput, indices: Tensor, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp", out: None = None) -> Tensor: ...
@overload
def gather(data: ArrayInput, indices: ArrayInput, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp", out: None = None) -> np.ndarray: ...
@_documented
def gather(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp", out: Tensor | np.ndarray | None = None) -> Any:
    """Elements of ``data`` at ``indices`` along ``axis``: ONNX Gather, ``numpy.take(data, indices, axis)``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items (moved bit-exact).
    indices : array_like or Tensor
        Integers (int32, uint32, int64, uint64; narrower ones are widened), of any shape.
    axis : int
        The dimension of ``data`` they index; negative counts from the end.
%(device_mode)s
%(out)s

    Returns
    -------
    np.ndarray or Tensor
        Shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``: a NumPy array, or a Tensor
        (queued on the device) when ``data`` or ``indices`` is a Tensor or the call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> table = np.arange(6, dtype=np.int32).reshape(3, 2)
    >>> dmlgpu.gather(table, [2, -1, 0])
    array([[4, 5],
           [4, 5],
           [0, 1]], dtype=int32)
    >>> dmlgpu.gather(table, [5])                    # clamped to the last row
    array([[4, 5]], dtype=int32)
    >>> dmlgpu.gather(table, [5], mode="raise")
    Traceback (most recent call last):
    IndexError: gather: index 5 at indices position (0,) is out of range for a dimension of size 3 (valid: [-size, size))
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(axis) is int and \
            (out is None or type(out) is Tensor):
        res = _calls.templated("gather", (data, indices), (axis, mode), out)
        if res is not None:
            return res
    data, idx, values, dev, mode = _operands("gather", data, indices, device, mode)

    def build() -> _Call:
        a = _axis(axis, data.ndim)
        dim = data.shape[a]
        out_shape = take_shape(data.shape, idx.shape, a)
        check = _index_check("gather", math.prod(out_shape), dim, mode, lambda pos: dim)
        if 0 in out_shape:
            return _Call(None, out_shape, check)
        plan = ops.gather(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out_shape), a,
                          data.dtype, idx.dtype)
        return _Call(plan, out_shape, check)

    return _execute(dev, _planned(dev, "gather", (data, idx), (axis, mode) + _out("gather", out, data, (idx,), dev),
                                  build), data, idx, values, out=out, op="gather")


@overload
def gather_elements(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp", out: _O) -> _O: ...
@overload
def gather_elements(data: Tensor, indices: IndexLike, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp", out: None = None) -> Tensor: ...
@overload
def gather_elements(data: ArrayInput, indices: Tensor, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp", out: None = None) -> Tensor: ...
@overload
def gather_elements(data: ArrayInput, indices: ArrayInput, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp", out: None = None) -> np.ndarray: ...
@_documented
def gather_elements(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp", out: Tensor | np.ndarray | None = None) -> Any:
    """One element of ``data`` per index, along ``axis``: ONNX GatherElements, ``numpy.take_along_axis``
    without broadcasting. ``out[i][j] = data[indices[i][j]][j]`` for axis 0, and so on.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items.
    indices : array_like or Tensor
        Integers of ``data``'s rank, no larger than ``data`` outside ``axis``.
    axis : int
        The dimension of ``data`` they index.
%(device_mode)s
%(out)s

    Returns
    -------
    np.ndarray or Tensor
        Of ``indices``' shape: a NumPy array, or a Tensor when an operand is a Tensor or the call is
        recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> scores = np.array([[10, 11, 12], [20, 21, 22]], np.int64)
    >>> dmlgpu.gather_elements(scores, np.array([[2, 0], [1, 1]]), axis=1)
    array([[12, 10],
           [21, 21]])
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(axis) is int and \
            (out is None or type(out) is Tensor):
        res = _calls.templated("gather_elements", (data, indices), (axis, mode), out)
        if res is not None:
            return res
    data, idx, values, dev, mode = _operands("gather_elements", data, indices, device, mode)

    def build() -> _Call:
        a = _axis(axis, data.ndim)
        _check_elements_shapes("gather_elements", data, idx, a)
        dim = data.shape[a]
        check = _index_check("gather_elements", idx.size, dim, mode, lambda pos: dim)
        if idx.size == 0:
            return _Call(None, idx.shape, check)
        plan = ops.gather_elements(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(idx.shape),
                                   a, data.dtype, idx.dtype)
        return _Call(plan, idx.shape, check)

    args = (axis, mode) + _out("gather_elements", out, data, (idx,), dev)
    return _execute(dev, _planned(dev, "gather_elements", (data, idx), args, build), data, idx, values, out=out,
                    op="gather_elements")


@overload
def gather_nd(data: Any, indices: Any, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp", out: _O) -> _O: ...
@overload
def gather_nd(data: Tensor, indices: IndexLike, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp", out: None = None) -> Tensor: ...
@overload
def gather_nd(data: ArrayInput, indices: Tensor, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp", out: None = None) -> Tensor: ...
@overload
def gather_nd(data: ArrayInput, indices: ArrayInput, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp", out: None = None) -> np.ndarray: ...
@_documented
def gather_nd(data: Any, indices: Any, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp", out: Tensor | np.ndarray | None = None) -> Any:
    """Slices of ``data`` at index tuples: ONNX GatherND. ``out[b.., i..] = data[b.., *indices[b.., i.., :]]``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension more than ``batch_dims``.
    indices : array_like or Tensor
        Integers whose last dimension (k, from 1 to ``data.ndim - batch_dims``) holds each index tuple; its
        first ``batch_dims`` dimensions equal ``data``'s.
    batch_dims : int
        Leading dimensions that ``data`` and ``indices`` share, gathered batch by batch.
%(device_mode)s
%(out)s

    Returns
    -------
    np.ndarray or Tensor
        Shape ``indices.shape[:-1] + data.shape[batch_dims + k:]``; a Tensor when an operand is one or the
        call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> grid = np.arange(9, dtype=np.int16).reshape(3, 3)
    >>> dmlgpu.gather_nd(grid, [[0, 1], [2, 2]])
    array([1, 8], dtype=int16)
    >>> dmlgpu.gather_nd(grid, [[2]])               # k=1: whole rows
    array([[6, 7, 8]], dtype=int16)
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(batch_dims) is int and \
            (out is None or type(out) is Tensor):
        res = _calls.templated("gather_nd", (data, indices), (batch_dims, mode), out)
        if res is not None:
            return res
    data, idx, values, dev, mode = _operands("gather_nd", data, indices, device, mode)

    def build() -> _Call:
        dims = _check_nd("gather_nd", data, idx, batch_dims)
        out_shape = nd_shape(data.shape, idx.shape, batch_dims)
        check = _index_check("gather_nd", math.prod(out_shape), dims, mode, lambda pos: dims[pos[-1]])
        if 0 in out_shape:
            return _Call(None, out_shape, check)
        plan = ops.gather_nd(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out_shape),
                             batch_dims, data.dtype, idx.dtype)
        return _Call(plan, out_shape, check)

    args = (batch_dims, mode) + _out("gather_nd", out, data, (idx,), dev)
    return _execute(dev, _planned(dev, "gather_nd", (data, idx), args, build), data, idx, values, out=out,
                    op="gather_nd")


@overload
def scatter_nd(data: Any, indices: Any, updates: Any, *, device: DeviceLike = None, mode: Mode = "clamp",
               reduction: Reduction = "none", out: _O, unique_indices: bool = False) -> _O: ...
@overload
def scatter_nd(data: Tensor, indices: IndexLike, updates: Tensor | ArrayInput, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> Tensor: ...
@overload
def scatter_nd(data: ArrayInput, indices: Tensor, updates: Tensor | ArrayInput, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> Tensor: ...
@overload
def scatter_nd(data: ArrayInput, indices: ArrayInput, updates: Tensor, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> Tensor: ...
@overload
def scatter_nd(data: ArrayInput, indices: ArrayInput, updates: ArrayInput, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> np.ndarray: ...
@_documented
def scatter_nd(data: Any, indices: Any, updates: Any, *,
               device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none", out: Tensor | np.ndarray | None = None,
               unique_indices: bool = False) -> Any:
    """A copy of ``data`` with slices replaced at index tuples: ONNX ScatterND,
    ``out[*indices[i.., :]] = updates[i..]``. ``data`` itself is modified only when it is ``out``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items.
    indices : array_like or Tensor
        Integers whose last dimension (k, 1 to ``data.ndim``) holds each target's index tuple.
    updates : array_like or Tensor
        ``data``'s dtype, shape ``indices.shape[:-1] + data.shape[k:]``.
%(device_mode)s
%(reduction)s
%(scatter_out)s

    Returns
    -------
    np.ndarray or Tensor
        ``data``'s shape and dtype; a Tensor when an operand is one or the call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [3], [1]], np.array([5, 6, 7], np.int32))
    array([0, 7, 0, 6], dtype=int32)
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [3], [1]], np.array([5, 6, 7], np.int32), reduction="add")
    array([ 0, 12,  0,  6], dtype=int32)
    >>> cache = dmlgpu.tensor(np.zeros((4, 2), np.float16))          # e.g. a KV cache, updated in place
    >>> rows = dmlgpu.tensor(np.array([[3], [0]], np.int32))
    >>> dmlgpu.scatter_nd(cache, rows, dmlgpu.tensor(np.ones((2, 2), np.float16)), out=cache) is cache
    True
    >>> cache.numpy()
    array([[1., 1.],
           [0., 0.],
           [0., 0.],
           [1., 1.]], dtype=float16)
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(updates) is Tensor and \
            (out is None or type(out) is Tensor):
        res = _calls.templated("scatter_nd", (data, indices, updates), (mode, reduction) + _unique(unique_indices),
                               out)
        if res is not None:
            return res
    data, idx, values, dev, mode = _operands("scatter_nd", data, indices, device, mode, updates)
    upd = _updates(updates, data, "scatter_nd")

    def build() -> _Call:
        red = _reduction.check(reduction, data.dtype)
        dims = _check_nd("scatter_nd", data, idx, 0)
        upd_shape = nd_shape(data.shape, idx.shape, 0)
        if upd.shape != upd_shape:
            raise ValueError(f"scatter_nd: updates.shape {upd.shape} must be {upd_shape} "
                             f"(indices.shape[:-1] + data.shape[indices.shape[-1]:])")
        check = _index_check("scatter_nd", upd.size, dims, mode, lambda pos: dims[pos[-1]])
        if data.size == 0 or upd.size == 0:
            return _Call(None, data.shape, check, copy=True)
        layouts = Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(upd_shape)
        plan = ops.scatter_nd(*layouts, data.dtype, idx.dtype, red, _self_copy(data), bool(unique_indices))
        return _Call(plan, data.shape, check)

    args = (mode, reduction) + _unique(unique_indices) + _out("scatter_nd", out, data, (idx, upd), dev)
    call = _planned(dev, "scatter_nd", (data, idx, upd), args, build)
    return _execute(dev, call, data, idx, values, upd, native=reduction == "none", out=out, op="scatter_nd")


@overload
def scatter_elements(data: Any, indices: Any, updates: Any, axis: int = 0, *, device: DeviceLike = None,
                     mode: Mode = "clamp", reduction: Reduction = "none", out: _O,
                     unique_indices: bool = False) -> _O: ...
@overload
def scatter_elements(data: Tensor, indices: IndexLike, updates: Tensor | ArrayInput, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> Tensor: ...
@overload
def scatter_elements(data: ArrayInput, indices: Tensor, updates: Tensor | ArrayInput, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> Tensor: ...
@overload
def scatter_elements(data: ArrayInput, indices: ArrayInput, updates: Tensor, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> Tensor: ...
@overload
def scatter_elements(data: ArrayInput, indices: ArrayInput, updates: ArrayInput, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp",
                     reduction: Reduction = "none", out: None = None,
               unique_indices: bool = False) -> np.ndarray: ...
@_documented
def scatter_elements(data: Any, indices: Any, updates: Any, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp",
                     reduction: Reduction = "none", out: Tensor | np.ndarray | None = None,
               unique_indices: bool = False) -> Any:
    """A copy of ``data`` with one element replaced per index, along ``axis``: ONNX ScatterElements,
    ``out[.., indices[i, j, ..], ..] = updates[i, j, ..]`` (the index in position ``axis``). ``data``
    itself is modified only when it is ``out``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items.
    indices : array_like or Tensor
        Integers of ``data``'s rank, no larger than ``data`` outside ``axis``.
    updates : array_like or Tensor
        ``data``'s dtype, ``indices``' shape.
    axis : int
        The dimension of ``data`` they index.
%(device_mode)s
%(reduction)s
%(scatter_out)s

    Returns
    -------
    np.ndarray or Tensor
        ``data``'s shape and dtype; a Tensor when an operand is one or the call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> cache = np.zeros((2, 4), np.float32)
    >>> dmlgpu.scatter_elements(cache, [[3], [0]], np.array([[1.5], [2.5]], np.float32), axis=1)
    array([[0. , 0. , 0. , 1.5],
           [2.5, 0. , 0. , 0. ]], dtype=float32)
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(updates) is Tensor and \
            type(axis) is int and (out is None or type(out) is Tensor):
        res = _calls.templated("scatter_elements", (data, indices, updates),
                               (axis, mode, reduction) + _unique(unique_indices), out)
        if res is not None:
            return res
    data, idx, values, dev, mode = _operands("scatter_elements", data, indices, device, mode, updates)
    upd = _updates(updates, data, "scatter_elements")

    def build() -> _Call:
        red = _reduction.check(reduction, data.dtype)
        a = _axis(axis, data.ndim)
        _check_elements_shapes("scatter_elements", data, idx, a, upd)
        dim = data.shape[a]
        check = _index_check("scatter_elements", idx.size, dim, mode, lambda pos: dim)
        if data.size == 0 or idx.size == 0:
            return _Call(None, data.shape, check, copy=True)
        layouts = Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(idx.shape)
        plan = ops.scatter_elements(*layouts, a, data.dtype, idx.dtype, red, _self_copy(data), bool(unique_indices))
        return _Call(plan, data.shape, check)

    args = (axis, mode, reduction) + _unique(unique_indices) + _out("scatter_elements", out, data, (idx, upd), dev)
    call = _planned(dev, "scatter_elements", (data, idx, upd), args, build)
    return _execute(dev, call, data, idx, values, upd, native=reduction == "none", out=out, op="scatter_elements")

