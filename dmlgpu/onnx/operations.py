"""The operators of dmlgpu.onnx: the device operators (ONNX's gather and scatter operators over layer 2, in
mode="raise") and the host-side plumbing that exporters put around them (shapes, reshapes, integer casts).
Each is a row op_type: (function, its attributes and their defaults)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Union

import numpy as np
import onnx
from onnx import TensorProto

from ..api import arguments, functions
from ..api.device import Device
from ..plans.index_map import check_in_range
from ..api.tensor import Tensor

MODE: Final = "raise"   # ONNX: an index outside [-n, n) is an error

Value = Union[np.ndarray, Tensor]     # a value of the graph while it runs


def _tensor_scatter(dev: Device, past_cache: Any, update: Any, write_indices: Any = None, *, axis: int = -2,
                    mode: str = "linear") -> Any:
    """ONNX TensorScatter as one ScatterElements: update[b, .., s, ..] goes to position write_indices[b] + s
    (modulo the axis' size in mode "circular") of past_cache along ``axis``; dimension 0 is the batch."""
    past, upd = arguments._data(past_cache, "past_cache"), arguments._data(update, "update")
    if mode not in ("linear", "circular"):
        raise ValueError(f"TensorScatter: mode must be 'linear' or 'circular', not {mode!r}")
    axis = arguments._axis(axis, past.ndim, "past_cache")
    if axis == 0:
        raise ValueError("TensorScatter: axis must not be 0, the batch dimension")
    if upd.ndim != past.ndim or any(u != p for d, (u, p) in enumerate(zip(upd.shape, past.shape)) if d != axis) \
            or upd.shape[axis] > past.shape[axis]:
        raise ValueError(f"TensorScatter: update.shape {upd.shape} must equal past_cache.shape {past.shape} except "
                         f"along axis {axis}, where it may be smaller")
    size, batch = past.shape[axis], past.shape[0]
    starts = np.zeros(batch, np.int64) if write_indices is None else np.asarray(
        write_indices.numpy() if isinstance(write_indices, Tensor) else arguments._host_array(write_indices),
        dtype=np.int64)
    if starts.shape != (batch,):
        raise ValueError(f"TensorScatter: write_indices must have shape ({batch},), not {starts.shape}")
    positions = starts.reshape((batch,) + (1,) * (past.ndim - 1)) + \
        np.arange(upd.shape[axis], dtype=np.int64).reshape((-1,) + (1,) * (past.ndim - 1 - axis))
    if mode == "circular" and size:
        positions = positions % size
    return functions.scatter_elements(past, np.broadcast_to(positions, upd.shape), upd, axis, device=dev,
                                      mode=MODE)


# op_type: (function of (device, *inputs, **attributes), the attributes and their defaults)
OPERATORS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "Gather": (lambda dev, data, indices, axis: functions.gather(data, indices, axis, device=dev, mode=MODE),
               {"axis": 0}),
    "GatherElements": (lambda dev, data, indices, axis: functions.gather_elements(data, indices, axis, device=dev,
                                                                                  mode=MODE), {"axis": 0}),
    "GatherND": (lambda dev, data, indices, batch_dims: functions.gather_nd(data, indices, batch_dims, device=dev,
                                                                            mode=MODE), {"batch_dims": 0}),
    "ScatterND": (lambda dev, data, indices, updates, reduction: functions.scatter_nd(
        data, indices, updates, device=dev, mode=MODE, reduction=reduction), {"reduction": "none"}),
    "ScatterElements": (lambda dev, data, indices, updates, axis, reduction: functions.scatter_elements(
        data, indices, updates, axis, device=dev, mode=MODE, reduction=reduction), {"axis": 0, "reduction": "none"}),
    "Scatter": (lambda dev, data, indices, updates, axis: functions.scatter_elements(
        data, indices, updates, axis, device=dev, mode=MODE), {"axis": 0}),
    "TensorScatter": (_tensor_scatter, {"axis": -2, "mode": "linear"}),
}
LAYER_2 = ("gather", "gather_elements", "gather_nd", "scatter_nd", "scatter_elements", "TensorScatter")
# the names that the device operators' errors start with, replaced by the node's
DATA_INPUTS = {"ScatterND": (0, 2), "ScatterElements": (0, 2), "Scatter": (0, 2), "TensorScatter": (0, 1)}
# the inputs of each device operator that hold data (the others hold indices): (0,) unless listed


# ---- the host-side plumbing

class NodeError(ValueError):
    """A plumbing node cannot run on its inputs; _Node.run adds the node's name."""


def described(node: onnx.NodeProto) -> str:
    """How errors name a node: ``Gather node '/embed/Gather'``, or by its output where it has no name."""
    if node.name:
        return f"{node.op_type} node {node.name!r}"
    return f"{node.op_type} node (unnamed, output {node.output[0] if node.output else ''!r})"


def _view(x: Value, shape: Sequence[int]) -> Value:
    """``x`` with another shape of the same size: a NumPy view, or a Tensor view (of a packed copy of a
    strided view that no strides can reshape)."""
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) != math.prod(x.shape):
        raise NodeError(f"cannot reshape {tuple(x.shape)} ({math.prod(x.shape)} elements) to {shape}")
    if isinstance(x, Tensor):
        try:
            return x.reshape(shape)
        except ValueError:
            return x.copy().reshape(shape)
    return np.reshape(x, shape)


def _host_ints(x: Value, what: str) -> np.ndarray:
    """An integer tensor that must be on the host (a shape, axes, a small index tensor): a Tensor's values
    are downloaded (outside recordings)."""
    arr = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise NodeError(f"{what} must be an integer tensor, not {arr.dtype}")
    return arr


def _axes(axes: Any, rank: int) -> list[int]:
    """Squeeze's and Unsqueeze's axes (an attribute's list, or an input on the host) in [0, rank)."""
    out = [int(a) for a in (axes if isinstance(axes, list) else _host_ints(axes, "axes").reshape(-1))]
    if any(not -rank <= a < rank for a in out):
        raise NodeError(f"axes {out} must be in [{-rank}, {rank - 1}]")
    out = [a % rank for a in out]
    if len(set(out)) != len(out):
        raise NodeError(f"axes {out} repeat an axis")
    return out


def _identity(x: Value) -> Value:
    return x


def _shape(x: Value, start: int = 0, end: int | None = None) -> np.ndarray:
    return np.array(x.shape[start:end], dtype=np.int64)


def _reshape(x: Value, shape: Value, allowzero: int = 0) -> Value:
    dims = [int(d) for d in _host_ints(shape, "Reshape's shape").reshape(-1)]
    if not allowzero:
        dims = [x.shape[i] if d == 0 and i < len(x.shape) else d for i, d in enumerate(dims)]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise NodeError(f"shape {dims} may hold one -1 and no other negative size")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        size = math.prod(x.shape)
        if known == 0 or size % known:
            raise NodeError(f"cannot reshape {tuple(x.shape)} to {dims}")
        dims[dims.index(-1)] = size // known
    return _view(x, dims)


def _squeeze(x: Value, axes: Value | None = None) -> Value:
    drop = [d for d, n in enumerate(x.shape) if n == 1] if axes is None else _axes(axes, len(x.shape))
    if any(x.shape[d] != 1 for d in drop):
        raise NodeError(f"cannot squeeze axes {drop} of shape {tuple(x.shape)}: their sizes must be 1")
    return _view(x, [n for d, n in enumerate(x.shape) if d not in drop])


def _unsqueeze(x: Value, axes: Value) -> Value:
    rank = len(x.shape) + (len(axes) if isinstance(axes, list) else _host_ints(axes, "axes").size)
    new = _axes(axes, rank)
    dims = iter(x.shape)
    return _view(x, [1 if d in new else next(dims) for d in range(rank)])


def _flatten(x: Value, axis: int = 1) -> Value:
    rank = len(x.shape)
    if not -rank <= axis <= rank:
        raise NodeError(f"axis {axis} must be in [{-rank}, {rank}]")
    if axis < 0:
        axis += rank
    return _view(x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])


def _concat(*xs: Value, axis: int) -> np.ndarray:
    arrays = [_host_ints(x, "each input of Concat") for x in xs]
    if not arrays or not -arrays[0].ndim <= axis < arrays[0].ndim:
        raise NodeError(f"axis {axis} is out of range for inputs of rank {arrays[0].ndim if arrays else 0}")
    return np.concatenate(arrays, axis=axis)


def _cast(x: Value, to: int, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    target = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    arr = _host_ints(x, "Cast's input")
    return arr.astype(target)


def shape_gather(data: Value, indices: Value, axis: int = 0) -> np.ndarray:
    """Gather of a shape (a host integer tensor), with ONNX's index rules."""
    arr, idx = np.asarray(data), _host_ints(indices, "Gather's indices")
    a = arguments._axis(axis, arr.ndim, "data")
    check_in_range(idx, arr.shape[a], lambda pos, value: f"index {value} at indices position {pos} is out of "
                                                           f"range for a dimension of size {arr.shape[a]}")
    return np.take(arr, np.where(idx < 0, idx + arr.shape[a], idx).astype(np.int64), axis=a)


INDEX_TYPES = {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
               TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64}
# op_type: (function of (*inputs, **attributes) on host arrays or Tensors, the attributes and their defaults)
PLUMBING: dict[str, tuple[Callable[..., Value], dict[str, Any]]] = {
    "Identity": (_identity, {}),
    "Shape": (_shape, {"start": 0, "end": None}),
    "Reshape": (_reshape, {"allowzero": 0}),
    "Squeeze": (_squeeze, {"axes": None}),
    "Unsqueeze": (_unsqueeze, {"axes": None}),
    "Flatten": (_flatten, {"axis": 1}),
    "Concat": (_concat, {"axis": None}),
    "Cast": (_cast, {"to": None, "saturate": 1, "round_mode": "up"}),
}
HOST_ONLY = ("Concat", "Cast")          # of integer host tensors only: never of data

