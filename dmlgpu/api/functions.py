"""Layer 2: NumPy-style gather and scatter functions with ONNX semantics.

Each takes NumPy arrays (any fixed-size dtype: values move bit-exact, dmlgpu/api/items.py beyond 16 bytes), what
NumPy can view without a copy (PyTorch CPU tensors and other DLPack producers, ``__array__``, the buffer
protocol: see dmlgpu.api.interop.host_array) or dmlgpu.Tensors, ``device=`` (a Device or a device index; default:
the device of a Tensor operand, else dmlgpu.default_device()) and ``mode=``: "clamp" (DirectML's behaviour:
negative indices count from the end, then out-of-range ones are clamped), "raise" (IndexError naming the
first offending index, before any GPU work), and JAX's "fill" on the gathers (an out-of-range index tuple
reads ``fill_value``) and "drop" on the scatters (an out-of-range update is skipped). Errors name the
function called. Inputs are never modified, except a scatter's data given as its ``out`` (in place). Results
are new NumPy arrays, or new Tensors when an operand is a Tensor or the call is made inside a Device.record()
block, or ``out``.

Calls that return Tensors are queued on their device and return at once (Device.synchronize() and host reads
wait: see dmlgpu.runtime.device); NumPy results are complete when the call returns.

Repeated calls are planned once per signature (dmlgpu/api/execution.py).
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from . import call_templates as calls, driver, signatures
from ..plans import reduction_args as _reduction
from .doc_parts import documented
from .arguments import DROP_MODES, FILL_MODES, _axis, _check_elements_shapes, _check_nd, _fill
from .execution import _self_copy
from ..plans.index_map import Layout, nd_shape, take_shape
from .signatures import DeviceLike, GatherMode, IndexLike, Order, Reduction, ScatterMode   # IndexLike: numpy_api
from .tensor import Tensor

_F = TypeVar("_F", bound=Callable[..., Any])

# What the functions' docstrings share beyond doc_parts.PARTS: the Returns heading and result type, the
# Raises section with the Examples heading and import line, the operands of the *_elements functions, and
# the scatters' keywords and result.
_SHARED = {
    "returns": """\
    Returns
    -------
    np.ndarray or Tensor""",
    "ending": """\
    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu""",
    "elements": """\
    data : array_like or Tensor
        At least one dimension; any fixed-size dtype.
    indices : array_like or Tensor
        Integers of ``data``'s rank, no larger than ``data`` outside ``axis``.""",
    "scatter_keywords": """\
%(scatter_modes)s
%(reduction)s
%(scatter_out)s

    Returns
    -------
    np.ndarray or Tensor
        ``data``'s shape and dtype; a Tensor when an operand is one or the call is recorded.""",
}


def _documented(fn: _F) -> _F:
    """``fn`` with its docstring's ``%(name)s`` parts filled in: _SHARED's, then doc_parts.PARTS'."""
    doc = fn.__doc__ or ""
    for name, text in _SHARED.items():
        doc = doc.replace(f"%({name})s", text)
    fn.__doc__ = doc
    return documented(fn)


def _unique(unique_indices: bool) -> tuple:
    """unique_indices's part of a scatter's signature."""
    return ("unique",) if unique_indices else ()


def _layouts(*shapes: tuple) -> tuple:
    return tuple(Layout.packed(shape) for shape in shapes)


# The operators' shape rules (driver.Rule): checks, result shape, index dimensions, the plan's arguments.
def _gather_rule(data, idx, upd, axis) -> driver.Signature:
    a = _axis(axis, data.ndim)
    out_shape = take_shape(data.shape, idx.shape, a)
    return driver.Signature(out_shape, data.shape[a], None if 0 in out_shape else
                            (*_layouts(data.shape, idx.shape, out_shape), a, data.dtype, idx.dtype))


def _gather_elements_rule(data, idx, upd, axis) -> driver.Signature:
    a = _axis(axis, data.ndim)
    _check_elements_shapes("gather_elements", data, idx, a)
    return driver.Signature(idx.shape, data.shape[a], None if idx.size == 0 else
                            (*_layouts(data.shape, idx.shape, idx.shape), a, data.dtype, idx.dtype))


def _gather_nd_rule(data, idx, upd, batch_dims) -> driver.Signature:
    dims = _check_nd("gather_nd", data, idx, batch_dims)
    out_shape = nd_shape(data.shape, idx.shape, batch_dims)
    return driver.Signature(out_shape, dims, None if 0 in out_shape else
                            (*_layouts(data.shape, idx.shape, out_shape), batch_dims, data.dtype, idx.dtype))


def _scatter_nd_rule(data, idx, upd, reduction, include_self, order, unique) -> driver.Signature:
    red = _reduction.check(reduction, data.dtype, include_self, order, "scatter_nd")
    dims = _check_nd("scatter_nd", data, idx, 0)
    upd_shape = nd_shape(data.shape, idx.shape, 0)
    if upd.shape != upd_shape:
        raise ValueError(f"scatter_nd: updates must have shape {upd_shape} (indices.shape[:-1] + "
                         f"data.shape[indices.shape[-1]:]), not {upd.shape} (ONNX's rule: no broadcasting; "
                         f"dmlgpu.put_along_axis or t[key] = v broadcast)")
    return driver.Signature(data.shape, dims, None if data.size == 0 or upd.size == 0 else
                            (*_layouts(data.shape, idx.shape, upd_shape), data.dtype, idx.dtype, red, _self_copy(data),
                             bool(unique), bool(include_self), order))


def _scatter_elements_rule(data, idx, upd, axis, reduction, include_self, order, unique) -> driver.Signature:
    red = _reduction.check(reduction, data.dtype, include_self, order, "scatter_elements")
    a = _axis(axis, data.ndim)
    _check_elements_shapes("scatter_elements", data, idx, a, upd)
    return driver.Signature(data.shape, data.shape[a], None if data.size == 0 or idx.size == 0 else
                            (*_layouts(data.shape, idx.shape, idx.shape), a, data.dtype, idx.dtype, red,
                             _self_copy(data), bool(unique), bool(include_self), order))


@signatures.along_axis
@_documented
def gather(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
           mode: GatherMode = "clamp", fill_value: Any = None, out: Tensor | np.ndarray | None = None) -> Any:
    """Elements of ``data`` at ``indices`` along ``axis``: ONNX Gather, ``numpy.take(data, indices, axis)``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any fixed-size dtype (moved bit-exact).
    indices : array_like or Tensor
        Integers (int32, uint32, int64, uint64; narrower ones are widened), of any shape.
    axis : int
        The dimension of ``data`` they index; negative counts from the end.
%(gather_modes)s
%(out)s

%(returns)s
        Shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``: a NumPy array, or a Tensor
        (queued on the device) when ``data`` or ``indices`` is a Tensor or the call is recorded.

%(ending)s
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
    >>> dmlgpu.gather(table, [1, -1, 3, -4], mode="fill", fill_value=-7)     # -1 counts from the end
    array([[ 2,  3],
           [ 4,  5],
           [-7, -7],
           [-7, -7]], dtype=int32)
    """
    if out is None and device is None and fill_value is None:       # a repeated call on Tensors: its template
        res = calls.gathered("gather", data, indices, axis, mode)
        if res is not None:
            return res
    return driver.call("gather", _gather_rule, data, indices, None, (axis,), device=device, mode=mode, out=out,
                       modes=FILL_MODES, fill=_fill("gather", mode, fill_value, data))


@signatures.along_axis
@_documented
def gather_elements(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
                    mode: GatherMode = "clamp", fill_value: Any = None,
                    out: Tensor | np.ndarray | None = None) -> Any:
    """One element of ``data`` per index, along ``axis``: ONNX GatherElements, ``numpy.take_along_axis``
    without broadcasting. ``out[i][j] = data[indices[i][j]][j]`` for axis 0, and so on.

    Parameters
    ----------
%(elements)s
    axis : int
        The dimension of ``data`` they index.
%(gather_modes)s
%(out)s

%(returns)s
        Of ``indices``' shape: a NumPy array, or a Tensor when an operand is a Tensor or the call is
        recorded.

%(ending)s
    >>> scores = np.array([[10, 11, 12], [20, 21, 22]], np.int64)
    >>> dmlgpu.gather_elements(scores, np.array([[2, 0], [1, 1]]), axis=1)
    array([[12, 10],
           [21, 21]])
    """
    if out is None and device is None and fill_value is None:       # a repeated call on Tensors: its template
        res = calls.gathered("gather_elements", data, indices, axis, mode)
        if res is not None:
            return res
    return driver.call("gather_elements", _gather_elements_rule, data, indices, None, (axis,), device=device, mode=mode,
                       out=out, modes=FILL_MODES, fill=_fill("gather_elements", mode, fill_value, data))


@signatures.batch_dims
@_documented
def gather_nd(data: Any, indices: Any, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: GatherMode = "clamp", fill_value: Any = None, out: Tensor | np.ndarray | None = None) -> Any:
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
%(gather_modes)s
%(out)s

%(returns)s
        Shape ``indices.shape[:-1] + data.shape[batch_dims + k:]``; a Tensor when an operand is one or the
        call is recorded.

%(ending)s
    >>> grid = np.arange(9, dtype=np.int16).reshape(3, 3)
    >>> dmlgpu.gather_nd(grid, [[0, 1], [2, 2]])
    array([1, 8], dtype=int16)
    >>> dmlgpu.gather_nd(grid, [[2]])               # k=1: whole rows
    array([[6, 7, 8]], dtype=int16)
    >>> dmlgpu.gather_nd(grid, [[0, 1], [3, 0], [1, -4]], mode="fill", fill_value=-1)
    array([ 1, -1, -1], dtype=int16)
    """
    if out is None and device is None and fill_value is None:       # a repeated call on Tensors: its template
        res = calls.gathered("gather_nd", data, indices, batch_dims, mode)
        if res is not None:
            return res
    return driver.call("gather_nd", _gather_nd_rule, data, indices, None, (batch_dims,), device=device, mode=mode,
                       out=out, modes=FILL_MODES, fill=_fill("gather_nd", mode, fill_value, data))


@signatures.scatter_nd
@_documented
def scatter_nd(data: Any, indices: Any, updates: Any, *,
               device: DeviceLike = None, mode: ScatterMode = "clamp", reduction: Reduction = "none",
               include_self: bool = True, order: Order = "row-major", out: Tensor | np.ndarray | None = None,
               unique_indices: bool = False) -> Any:
    """A copy of ``data`` with slices replaced at index tuples: ONNX ScatterND,
    ``out[*indices[i.., :]] = updates[i..]``. ``data`` itself is modified only when it is ``out``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any fixed-size dtype.
    indices : array_like or Tensor
        Integers whose last dimension (k, 1 to ``data.ndim``) holds each target's index tuple.
    updates : array_like or Tensor
        ``data``'s dtype, shape ``indices.shape[:-1] + data.shape[k:]``.
%(scatter_keywords)s

%(ending)s
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [3], [1]], np.array([5, 6, 7], np.int32))
    array([0, 7, 0, 6], dtype=int32)
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [3], [1]], np.array([5, 6, 7], np.int32), reduction="add")
    array([ 0, 12,  0,  6], dtype=int32)
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [-1], [4]], np.array([5, 6, 7], np.int32), mode="drop")
    array([0, 5, 0, 6], dtype=int32)
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
    return driver.call("scatter_nd", _scatter_nd_rule, data, indices, updates,
                       (reduction, include_self, order, unique_indices), device=device, mode=mode, out=out,
                       key=(mode, reduction, _reduction.self_key(include_self), order) + _unique(unique_indices),
                       byte_order=reduction != "none", modes=DROP_MODES)


@signatures.scatter_elements
@_documented
def scatter_elements(data: Any, indices: Any, updates: Any, axis: int = 0, *,
                     device: DeviceLike = None, mode: ScatterMode = "clamp",
                     reduction: Reduction = "none", include_self: bool = True, order: Order = "row-major",
                     out: Tensor | np.ndarray | None = None, unique_indices: bool = False) -> Any:
    """A copy of ``data`` with one element replaced per index, along ``axis``: ONNX ScatterElements,
    ``out[.., indices[i, j, ..], ..] = updates[i, j, ..]`` (the index in position ``axis``). ``data``
    itself is modified only when it is ``out``.

    Parameters
    ----------
%(elements)s
    updates : array_like or Tensor
        ``data``'s dtype, ``indices``' shape.
    axis : int
        The dimension of ``data`` they index.
%(scatter_keywords)s

%(ending)s
    >>> cache = np.zeros((2, 4), np.float32)
    >>> dmlgpu.scatter_elements(cache, [[3], [0]], np.array([[1.5], [2.5]], np.float32), axis=1)
    array([[0. , 0. , 0. , 1.5],
           [2.5, 0. , 0. , 0. ]], dtype=float32)
    >>> ones, upd = np.ones(3, np.float32), np.array([2, 4, 8], np.float32)
    >>> dmlgpu.scatter_elements(ones, [0, 0, 2], upd, reduction="mean")      # (1 + 2 + 4) / 3, (1 + 8) / 2
    array([2.3333333, 1.       , 4.5      ], dtype=float32)
    >>> dmlgpu.scatter_elements(ones, [0, 0, 2], upd, reduction="max", include_self=False)
    array([4., 1., 8.], dtype=float32)
    """
    return driver.call("scatter_elements", _scatter_elements_rule, data, indices, updates,
                       (axis, reduction, include_self, order, unique_indices), device=device, mode=mode, out=out,
                       key=(axis, mode, reduction, _reduction.self_key(include_self), order) + _unique(unique_indices),
                       byte_order=reduction != "none", modes=DROP_MODES)

