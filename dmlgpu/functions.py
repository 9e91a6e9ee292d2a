"""Layer 2: NumPy-style gather and scatter functions with ONNX semantics.

Each takes NumPy arrays (any dtype whose item size is 1, 2, 4, 8 or 16 bytes: values move bit-exact),
``device=`` (default: dmlgpu.default_device()) and ``mode=``: "clamp" (DirectML's behaviour: negative
indices count from the end, then out-of-range ones are clamped) or "raise" (IndexError naming the first
offending index, before any GPU work). Inputs are never modified; results are new NumPy arrays.
"""
from __future__ import annotations

import numpy as np

from .index_map import (Layout, as_index_array, check_in_range, copy_map, elements_map, nd_map, nd_shape,
                        take_map, take_shape)
from .plan import Plan
from .runtime import Device, default_device

MODES = ("clamp", "raise")
ITEM_SIZES = (1, 2, 4, 8, 16)


def _device(device) -> Device:
    if device is None:
        return default_device()
    if not isinstance(device, Device):
        raise TypeError(f"device must be a dmlgpu.Device, not {type(device).__name__}")
    return device._open()


def _data(arr, what: str) -> np.ndarray:
    a = np.asarray(arr)
    if a.dtype.hasobject:
        raise TypeError(f"{what} has dtype {a.dtype}, which holds Python objects; "
                        "use a numeric, boolean or other fixed-size dtype")
    if a.dtype.itemsize not in ITEM_SIZES:
        raise TypeError(f"{what} has dtype {a.dtype} of {a.dtype.itemsize} bytes; "
                        f"dmlgpu moves items of {', '.join(map(str, ITEM_SIZES))} bytes")
    return a


def _mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return mode


def _axis(axis, ndim: int, what: str = "data") -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an integer, not {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, f"axis {axis} is out of bounds for {what} of rank {ndim}") \
            if hasattr(np, "exceptions") else ValueError(f"axis {axis} is out of bounds for {what} of rank {ndim}")
    return int(axis) % ndim


def _run(dev: Device, plan: Plan, data: np.ndarray, indices: np.ndarray, out_shape, updates=None) -> np.ndarray:
    """Uploads, runs the plan, downloads the result (shape ``out_shape``, data's dtype)."""
    in_buf = dev.buffer(data)
    idx_buf = dev.buffer(indices)
    if plan.kind == "gather":
        out_buf = dev.buffer(nbytes=max(4, int(np.prod(out_shape)) * data.dtype.itemsize))
        upd_buf = None
    else:   # the output starts as a copy of data: update it in place
        out_buf, upd_buf = in_buf, dev.buffer(updates)
    dispatches, uploads = plan.dispatches(dev, input=in_buf, indices=idx_buf, output=out_buf, updates=upd_buf)
    dev._run(dispatches, uploads=uploads, downloads=[out_buf])
    nbytes = int(np.prod(out_shape)) * data.dtype.itemsize
    return out_buf._staged()[:nbytes].view(data.dtype).reshape(out_shape).copy()


def _dims_message(op: str, dims_of):
    def describe(pos, value):
        return (f"{op}: index {value} at indices position {pos} is out of range for a dimension of size "
                f"{dims_of(pos)} (valid: [-size, size))")
    return describe


def gather(data, indices, axis: int = 0, *, device: Device | None = None, mode: str = "clamp") -> np.ndarray:
    """ONNX Gather / numpy.take(data, indices, axis): shape data[:axis] + indices.shape + data[axis+1:]."""
    mode = _mode(mode)
    data = _data(data, "data")
    idx = as_index_array(indices)
    if data.ndim == 0:
        raise ValueError("gather: data must have at least one dimension")
    axis = _axis(axis, data.ndim)
    dim = data.shape[axis]
    if mode == "raise" or dim == 0:
        check_in_range(idx, dim, _dims_message("gather", lambda pos: dim))
    out_shape = take_shape(data.shape, idx.shape, axis)
    if 0 in out_shape:
        return np.empty(out_shape, dtype=data.dtype)
    dev = _device(device)
    index_map = take_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out_shape), axis,
                         data.dtype.itemsize)
    return _run(dev, Plan("gather", index_map, idx.dtype), data, idx, out_shape)


def _check_elements_shapes(op: str, data, idx, axis: int, updates=None):
    if idx.ndim != data.ndim:
        raise ValueError(f"{op}: indices must have the rank of data ({data.ndim}), not {idx.ndim}")
    for d, (a, b) in enumerate(zip(idx.shape, data.shape)):
        if d != axis and a > b:
            raise ValueError(f"{op}: indices.shape[{d}] ({a}) must not exceed data.shape[{d}] ({b}) "
                             f"outside the axis")
    if updates is not None and updates.shape != idx.shape:
        raise ValueError(f"{op}: updates.shape {updates.shape} must equal indices.shape {idx.shape}")


def gather_elements(data, indices, axis: int = 0, *, device: Device | None = None,
                    mode: str = "clamp") -> np.ndarray:
    """ONNX GatherElements / numpy.take_along_axis: out[i][j] = data[indices[i][j]][j] (axis 0), and so
    on; indices has data's rank and may be smaller outside the axis; the result has indices' shape."""
    mode = _mode(mode)
    data = _data(data, "data")
    idx = as_index_array(indices)
    if data.ndim == 0:
        raise ValueError("gather_elements: data must have at least one dimension")
    axis = _axis(axis, data.ndim)
    _check_elements_shapes("gather_elements", data, idx, axis)
    dim = data.shape[axis]
    if mode == "raise" or dim == 0:
        check_in_range(idx, dim, _dims_message("gather_elements", lambda pos: dim))
    if idx.size == 0:
        return np.empty(idx.shape, dtype=data.dtype)
    dev = _device(device)
    index_map = elements_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(idx.shape), axis,
                             data.dtype.itemsize)
    return _run(dev, Plan("gather", index_map, idx.dtype), data, idx, idx.shape)


def _check_nd(op: str, data, idx, batch_dims: int):
    if not isinstance(batch_dims, (int, np.integer)) or isinstance(batch_dims, bool) or batch_dims < 0:
        raise ValueError(f"{op}: batch_dims must be a non-negative integer, not {batch_dims!r}")
    if data.ndim < 1 or idx.ndim < 1:
        raise ValueError(f"{op}: data and indices must have at least one dimension")
    if batch_dims >= min(data.ndim, idx.ndim):
        raise ValueError(f"{op}: batch_dims ({batch_dims}) must be less than the ranks of data ({data.ndim}) "
                         f"and indices ({idx.ndim})")
    k = idx.shape[-1]
    if not 1 <= k <= data.ndim - batch_dims:
        raise ValueError(f"{op}: indices.shape[-1] ({k}), the index tuple size, must be in "
                         f"[1, data rank - batch_dims ({data.ndim - batch_dims})]")
    if idx.shape[:batch_dims] != data.shape[:batch_dims]:
        raise ValueError(f"{op}: the batch dimensions of indices {idx.shape[:batch_dims]} and data "
                         f"{data.shape[:batch_dims]} must be equal")
    dims = np.array(data.shape[batch_dims:batch_dims + k], dtype=np.int64)
    return k, dims


def gather_nd(data, indices, batch_dims: int = 0, *, device: Device | None = None,
              mode: str = "clamp") -> np.ndarray:
    """ONNX GatherND: out[b.., i..] = data[b.., *indices[b.., i.., :]]; shape
    indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:]."""
    mode = _mode(mode)
    data = _data(data, "data")
    idx = as_index_array(indices)
    k, dims = _check_nd("gather_nd", data, idx, batch_dims)
    if mode == "raise" or 0 in dims:
        check_in_range(idx, dims, _dims_message("gather_nd", lambda pos: dims[pos[-1]]))
    out_shape = nd_shape(data.shape, idx.shape, batch_dims)
    if 0 in out_shape:
        return np.empty(out_shape, dtype=data.dtype)
    dev = _device(device)
    index_map = nd_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out_shape), batch_dims,
                       data.dtype.itemsize)
    return _run(dev, Plan("gather", index_map, idx.dtype), data, idx, out_shape)


def _updates(updates, data: np.ndarray, op: str) -> np.ndarray:
    upd = np.asarray(updates)
    if upd.dtype != data.dtype:
        raise TypeError(f"{op}: updates has dtype {upd.dtype}; it must be data's dtype ({data.dtype})")
    return upd


def scatter_nd(data, indices, updates, *, device: Device | None = None, mode: str = "clamp") -> np.ndarray:
    """ONNX ScatterND: a copy of data with out[*indices[i.., :]] = updates[i..]; updates has shape
    indices.shape[:-1] + data.shape[indices.shape[-1]:]. Duplicate targets: the last update (row-major
    order of the indices) wins."""
    mode = _mode(mode)
    data = _data(data, "data")
    idx = as_index_array(indices)
    upd = _updates(updates, data, "scatter_nd")
    k, dims = _check_nd("scatter_nd", data, idx, 0)
    upd_shape = nd_shape(data.shape, idx.shape, 0)
    if upd.shape != upd_shape:
        raise ValueError(f"scatter_nd: updates.shape {upd.shape} must be {upd_shape} "
                         f"(indices.shape[:-1] + data.shape[indices.shape[-1]:])")
    if mode == "raise" or (0 in dims and upd.size):
        check_in_range(idx, dims, _dims_message("scatter_nd", lambda pos: dims[pos[-1]]))
    if data.size == 0 or upd.size == 0:
        return data.copy()
    dev = _device(device)
    index_map = nd_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(upd_shape), 0,
                       data.dtype.itemsize)
    plan = Plan("scatter", index_map, idx.dtype,
                copy_map(Layout.packed(data.shape), Layout.packed(data.shape), data.dtype.itemsize))
    return _run(dev, plan, data, idx, data.shape, updates=upd)


def scatter_elements(data, indices, updates, axis: int = 0, *, device: Device | None = None,
                     mode: str = "clamp") -> np.ndarray:
    """ONNX ScatterElements: a copy of data with out[.., indices[i,j,..] at axis, ..] = updates[i,j,..];
    updates has indices' shape. Duplicate targets: the last update (row-major order) wins."""
    mode = _mode(mode)
    data = _data(data, "data")
    idx = as_index_array(indices)
    upd = _updates(updates, data, "scatter_elements")
    if data.ndim == 0:
        raise ValueError("scatter_elements: data must have at least one dimension")
    axis = _axis(axis, data.ndim)
    _check_elements_shapes("scatter_elements", data, idx, axis, upd)
    dim = data.shape[axis]
    if mode == "raise" or (dim == 0 and idx.size):
        check_in_range(idx, dim, _dims_message("scatter_elements", lambda pos: dim))
    if data.size == 0 or idx.size == 0:
        return data.copy()
    dev = _device(device)
    index_map = elements_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(idx.shape), axis,
                             data.dtype.itemsize)
    plan = Plan("scatter", index_map, idx.dtype,
                copy_map(Layout.packed(data.shape), Layout.packed(data.shape), data.dtype.itemsize))
    return _run(dev, plan, data, idx, data.shape, updates=upd)
