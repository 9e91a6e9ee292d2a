"""An ONNX backend (``onnx.backend.base.Backend``) that runs graphs of ONNX's gather and scatter operators on
a dmlgpu device, with the plumbing that exporters put around them.

Operators (default domain, every attribute):

- on the device: Gather (axis), GatherElements (axis), GatherND (batch_dims), ScatterND (reduction: none,
  add, mul, min, max), ScatterElements (axis, reduction), Scatter (the deprecated opset 9-10 alias of
  ScatterElements: axis) and TensorScatter (opset 24: axis, mode "linear" or "circular", optional
  write_indices);
- on the host, never on data: Constant, Identity, Shape (start, end), Reshape (allowzero), Squeeze and
  Unsqueeze (axes as an attribute, opsets up to 12, or an input), Flatten (axis), Concat and Cast (of
  integer tensors only: shapes and indices), and a Gather of a shape (``x.shape[i]``, as exporters write
  it). Identity, Reshape, Squeeze, Unsqueeze and Flatten of a tensor on the device are views of its buffer
  (no copy); Concat or Cast of anything but an integer tensor on the host is refused: at prepare() where the
  model's types say so, else at run().

A model with any other operator, or another domain, is refused by prepare() with UnsupportedModelError
naming them (is_compatible() says so beforehand). Nodes that depend only on initializers and Constants
(the plumbing ones) are computed once, at prepare().

Indices follow ONNX: negative ones count from the end, and an index outside [-n, n) is an error, so every
operator runs in dmlgpu's mode="raise": IndexError names the node and the first bad index, before any GPU
work (never DirectML's clamping). Duplicate scatter targets without a reduction, which ONNX leaves undefined,
resolve as in the rest of dmlgpu: the last update in row-major order wins.

Inputs live on the host (NumPy arrays, or anything dmlgpu's functions accept), which is what ONNX's device
"CPU" names, or on the device (dmlgpu.Tensor). run() checks each input against the graph's declared element
type and static dimensions (a named dimension must have one size across the inputs) before any GPU work.
Outputs are NumPy arrays, or dmlgpu.Tensors when an input was a Tensor. Initializers that the device
operators read are uploaded once, at prepare(); in a graph of several device operators, or one that reads
an initializer, the values between them stay on the device. The work runs on ``dmlgpu.default_device()``,
or on the device given as ``prepare(model, "CPU", dml_device=...)`` (a dmlgpu.Device or a device index).

    import dmlgpu.onnx
    rep = dmlgpu.onnx.prepare("model.onnx")   # a ModelProto, a path or the serialized bytes
    outputs = rep.run([data, indices])        # a tuple, also indexable by output name
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple, Union

import numpy as np

try:
    import onnx
except ModuleNotFoundError as e:       # an optional dependency: pip install dmlgpu[onnx]
    raise ModuleNotFoundError("dmlgpu.onnx needs the onnx package: pip install onnx", name="onnx") from e
from onnx import TensorProto, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device as OnnxDevice, DeviceType, namedtupledict

from . import functions
from .device import Device, as_device
from .index_map import check_in_range
from .tensor import Tensor, tensor

MODE: Final = "raise"   # ONNX: an index outside [-n, n) is an error

ModelSource = Union[onnx.ModelProto, str, "os.PathLike[str]", bytes]
Value = Union[np.ndarray, Tensor]     # a value of the graph while it runs


class UnsupportedModelError(NotImplementedError):
    """The model uses an operator, a domain or a type conversion that dmlgpu.onnx does not run (the message
    names them), raised by prepare() before any GPU work.

    Examples
    --------
    >>> import dmlgpu.onnx
    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph([helper.make_node("Add", ["a", "a"], ["b"])], "g",
    ...                           [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
    ...                           [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    >>> dmlgpu.onnx.prepare(helper.make_model(graph))
    Traceback (most recent call last):
    dmlgpu.onnx.UnsupportedModelError: dmlgpu.onnx runs ...; this model also uses Add
    """


def _tensor_scatter(dev: Device, past_cache: Any, update: Any, write_indices: Any = None, *, axis: int = -2,
                    mode: str = "linear") -> Any:
    """ONNX TensorScatter as one ScatterElements: update[b, .., s, ..] goes to position write_indices[b] + s
    (modulo the axis' size in mode "circular") of past_cache along ``axis``; dimension 0 is the batch."""
    past, upd = functions._data(past_cache, "past_cache"), functions._data(update, "update")
    if mode not in ("linear", "circular"):
        raise ValueError(f"TensorScatter: mode must be 'linear' or 'circular', not {mode!r}")
    axis = functions._axis(axis, past.ndim, "past_cache")
    if axis == 0:
        raise ValueError("TensorScatter: axis must not be 0, the batch dimension")
    if upd.ndim != past.ndim or any(u != p for d, (u, p) in enumerate(zip(upd.shape, past.shape)) if d != axis) \
            or upd.shape[axis] > past.shape[axis]:
        raise ValueError(f"TensorScatter: update.shape {upd.shape} must equal past_cache.shape {past.shape} except "
                         f"along axis {axis}, where it may be smaller")
    size, batch = past.shape[axis], past.shape[0]
    starts = np.zeros(batch, np.int64) if write_indices is None else np.asarray(
        write_indices.numpy() if isinstance(write_indices, Tensor) else functions._host_array(write_indices),
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


# ---------------------------------------------------------------- the host-side plumbing

class _NodeError(ValueError):
    """A plumbing node cannot run on its inputs; _Node.run adds the node's name."""


def _view(x: Value, shape: Sequence[int]) -> Value:
    """``x`` with another shape of the same size: a NumPy view, or a Tensor of the same buffer."""
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) != math.prod(x.shape):
        raise _NodeError(f"cannot reshape {tuple(x.shape)} ({math.prod(x.shape)} elements) to {shape}")
    if isinstance(x, Tensor):
        return Tensor._wrap(x.buffer, shape, x.dtype)
    return np.reshape(x, shape)


def _host_ints(x: Value, what: str) -> np.ndarray:
    """An integer tensor that must be on the host (a shape, axes, a small index tensor)."""
    if isinstance(x, Tensor):
        raise _NodeError(f"{what} is a dmlgpu.Tensor (on the device); dmlgpu.onnx computes shapes and index "
                         f"tensors on the host: pass it as a NumPy array")
    arr = np.asarray(x)
    if arr.dtype.kind not in "iu":
        raise _NodeError(f"{what} must be an integer tensor, not {arr.dtype}")
    return arr


def _axes(axes: Any, rank: int) -> list[int]:
    """Squeeze's and Unsqueeze's axes (an attribute's list, or an input on the host) in [0, rank)."""
    out = [int(a) for a in (axes if isinstance(axes, list) else _host_ints(axes, "axes").reshape(-1))]
    if any(not -rank <= a < rank for a in out):
        raise _NodeError(f"axes {out} must be in [{-rank}, {rank - 1}]")
    out = [a % rank for a in out]
    if len(set(out)) != len(out):
        raise _NodeError(f"axes {out} repeat an axis")
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
        raise _NodeError(f"shape {dims} may hold one -1 and no other negative size")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        size = math.prod(x.shape)
        if known == 0 or size % known:
            raise _NodeError(f"cannot reshape {tuple(x.shape)} to {dims}")
        dims[dims.index(-1)] = size // known
    return _view(x, dims)


def _squeeze(x: Value, axes: Value | None = None) -> Value:
    drop = [d for d, n in enumerate(x.shape) if n == 1] if axes is None else _axes(axes, len(x.shape))
    if any(x.shape[d] != 1 for d in drop):
        raise _NodeError(f"cannot squeeze axes {drop} of shape {tuple(x.shape)}: their sizes must be 1")
    return _view(x, [n for d, n in enumerate(x.shape) if d not in drop])


def _unsqueeze(x: Value, axes: Value) -> Value:
    rank = len(x.shape) + (len(axes) if isinstance(axes, list) else _host_ints(axes, "axes").size)
    new = _axes(axes, rank)
    dims = iter(x.shape)
    return _view(x, [1 if d in new else next(dims) for d in range(rank)])


def _flatten(x: Value, axis: int = 1) -> Value:
    rank = len(x.shape)
    if not -rank <= axis <= rank:
        raise _NodeError(f"axis {axis} must be in [{-rank}, {rank}]")
    if axis < 0:
        axis += rank
    return _view(x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])


def _concat(*xs: Value, axis: int) -> np.ndarray:
    arrays = [_host_ints(x, "each input of Concat") for x in xs]
    if not arrays or not -arrays[0].ndim <= axis < arrays[0].ndim:
        raise _NodeError(f"axis {axis} is out of range for inputs of rank {arrays[0].ndim if arrays else 0}")
    return np.concatenate(arrays, axis=axis)


def _cast(x: Value, to: int, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    target = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    arr = _host_ints(x, "Cast's input")
    return arr.astype(target)


def _shape_gather(data: Value, indices: Value, axis: int = 0) -> np.ndarray:
    """Gather of a shape (a host integer tensor), with ONNX's index rules."""
    arr, idx = np.asarray(data), _host_ints(indices, "Gather's indices")
    a = functions._axis(axis, arr.ndim, "data")
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


def _constant(node: onnx.NodeProto) -> np.ndarray:
    """The value of a Constant node."""
    if len(node.attribute) != 1:
        raise UnsupportedModelError(f"Constant node {node.name!r} must have one value attribute, not "
                                    f"{[a.name for a in node.attribute]}")
    attr = node.attribute[0]
    if attr.name == "value":
        return numpy_helper.to_array(attr.t)
    kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}
    if attr.name not in kinds:
        raise UnsupportedModelError(f"Constant node {node.name!r}: dmlgpu.onnx takes a value, value_float(s) or "
                                    f"value_int(s), not {attr.name}")
    return np.array(onnx.helper.get_attribute_value(attr), dtype=kinds[attr.name])


# ---------------------------------------------------------------- the graph

def _attributes(node: onnx.NodeProto, defaults: dict[str, Any]) -> dict[str, Any]:
    """The node's attributes over the operator's defaults; ValueError for one the operator does not have."""
    attrs = dict(defaults)
    for attr in node.attribute:
        if attr.name not in defaults:
            raise ValueError(f"{node.op_type} node {node.name!r} has an attribute {attr.name!r}; {node.op_type} "
                             f"has {sorted(defaults)}")
        value = onnx.helper.get_attribute_value(attr)
        attrs[attr.name] = value.decode() if isinstance(value, bytes) else value
    for name, value in attrs.items():
        if value is None and name not in ("end", "axes"):
            raise ValueError(f"{node.op_type} node {node.name!r} needs the attribute {name!r}")
    return attrs


def unsupported(graph: onnx.GraphProto) -> list[str]:
    """The graph's operators (op_type, with its domain when not ONNX's) that dmlgpu.onnx does not run."""
    found = []
    for node in graph.node:
        name = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        known = node.op_type in OPERATORS or node.op_type in PLUMBING or node.op_type == "Constant"
        if (node.domain not in ("", "ai.onnx") or not known) and name not in found:
            found.append(name)
    return found


class _Node(NamedTuple):
    """A node to run: ``fn(*inputs, **attrs)``; ``device``: a device operator (fn takes the Device first)."""

    fn: Callable[..., Any]
    inputs: list[str]
    output: str
    attrs: dict[str, Any]
    node: onnx.NodeProto
    device: bool

    def run(self, dev: Device, args: list[Any]) -> Any:
        """The node's output; its errors name the node (``"Gather node '/embed/Gather': ..."``)."""
        if not self.device:
            try:
                return self.fn(*args, **self.attrs)
            except _NodeError as e:
                raise ValueError(f"{self.node.op_type} node {self.node.name!r}: {e}") from None
        try:
            return self.fn(dev, *args, **self.attrs)
        except (TypeError, ValueError, IndexError, RuntimeError) as e:
            raise functions.named(e, f"{self.node.op_type} node {self.node.name!r}", LAYER_2) from None


class _Input(NamedTuple):
    """A graph input as declared: its name, element type (None: not declared) and dimensions (None: rank
    not declared; each an int, a dimension's name, or None)."""

    name: str
    dtype: np.dtype | None
    dims: tuple[int | str | None, ...] | None


def _declared(value: onnx.ValueInfoProto) -> _Input:
    t = value.type.tensor_type if value.type.HasField("tensor_type") else None
    if t is None or not t.elem_type:
        return _Input(value.name, None, None)
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
    if not t.HasField("shape"):
        return _Input(value.name, dtype, None)
    dims = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None
                 for d in t.shape.dim)
    return _Input(value.name, dtype, dims)


def _types(graph: onnx.GraphProto, opset: int) -> dict[str, int]:
    """The element type of every value that ONNX's shape inference can tell (for prepare()'s checks)."""
    try:
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:        # inference is a help to refuse early: run() checks the values anyway
        inferred = graph
    return {v.name: v.type.tensor_type.elem_type
            for v in [*inferred.input, *inferred.value_info, *inferred.output] if v.type.HasField("tensor_type")}


class DmlgpuRep(BackendRep):
    """A prepared graph (made by prepare()): its constants computed once (the plumbing that depends only on
    them folded, the initializers that device operators read uploaded), its nodes in their (topological)
    order. ``input_names`` and ``output_names`` list the graph's; ``device`` is the dmlgpu.Device it runs on.

    Examples
    --------
    See prepare() and run().
    """

    def __init__(self, graph: onnx.GraphProto, device: Device, opset: int = 18):
        missing = unsupported(graph)
        if missing:
            raise UnsupportedModelError(f"dmlgpu.onnx runs {', '.join(OPERATORS)} and {', '.join(PLUMBING)}, "
                                        f"Constant (default domain); this model also uses {', '.join(missing)}")
        self.device = device
        constants: dict[str, Value] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.inputs = [_declared(i) for i in graph.input if i.name not in constants]
        self.input_names = [i.name for i in self.inputs]
        self.output_names = [o.name for o in graph.output]
        types = _types(graph, opset)
        shapes: set[str] = set()        # values that hold shapes: a Gather of them runs on the host
        nodes: list[_Node] = []
        for node in graph.node:
            if len(node.output) != 1:
                raise ValueError(f"{node.op_type} node {node.name!r} must have one output, not {len(node.output)}")
            if node.op_type == "Constant":
                constants[node.output[0]] = _constant(node)
                continue
            inputs = list(node.input)
            if node.op_type in ("Squeeze", "Unsqueeze") and len(inputs) > 1 and any(
                    a.name == "axes" for a in node.attribute):
                raise ValueError(f"{node.op_type} node {node.name!r} has axes both as an attribute and an input")
            if node.op_type in HOST_ONLY:
                _check_integer_types(node, types)
            host = node.op_type in PLUMBING or node.op_type == "Gather" and node.input[0] in shapes
            if host:
                fn, defaults = (_shape_gather, {"axis": 0}) if node.op_type == "Gather" else PLUMBING[node.op_type]
            else:
                fn, defaults = OPERATORS[node.op_type]
            attrs = {k: v for k, v in _attributes(node, defaults).items() if v is not None}
            n = _Node(fn, inputs, node.output[0], attrs, node, not host)
            known = [name for name in inputs if name]
            if host and all(name in constants for name in known):     # folded now, once
                constants[n.output] = n.run(device, [constants[name] if name else None for name in inputs])
                continue
            if host and (node.op_type == "Shape" or any(name in shapes for name in known)):
                shapes.add(n.output)
            nodes.append(n)
        # the initializers that device operators read as data: uploaded once (an array under several names,
        # through Identity, once), so that they stay on the device
        uploaded: dict[int, Tensor] = {}
        for n in nodes:
            if n.device:
                for i in DATA_INPUTS.get(n.node.op_type, (0,)):
                    name = n.inputs[i] if i < len(n.inputs) else ""
                    value = constants.get(name)
                    if isinstance(value, np.ndarray):
                        if id(value) not in uploaded:
                            uploaded[id(value)] = tensor(value, device=device)
                        constants[name] = uploaded[id(value)]
        self._constants = constants
        self._nodes = nodes
        # with several device operators, the data they read from the inputs is uploaded first: the values
        # between them then stay on the device
        self._upload_inputs = sum(n.device for n in nodes) > 1

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Runs the graph.

        Parameters
        ----------
        inputs : sequence, mapping or array
            In the order of the graph's (non-initializer) inputs, by name, or one array for a graph of one
            input: NumPy arrays, what NumPy can view, or dmlgpu.Tensors.

        Returns
        -------
        tuple
            The outputs, also indexable by output name: NumPy arrays, or Tensors if an input was a Tensor.

        Raises
        ------
        ValueError
            An input missing, unknown, or of a shape other than the declared static one (a named dimension
            of two sizes); a plumbing node that cannot run (naming it).
        TypeError
            An input of a dtype other than the declared one.
        IndexError
            An index out of range (ONNX: never clamped), before any GPU work.

        Examples
        --------
        See prepare().
        """
        feeds = self._feeds(inputs)
        values: dict[str, Any] = dict(self._constants)
        values.update(feeds)
        if self._upload_inputs:
            for n in self._nodes:
                if n.device:
                    for i in DATA_INPUTS.get(n.node.op_type, (0,)):
                        name = n.inputs[i] if i < len(n.inputs) else ""
                        if name in feeds and not isinstance(values[name], Tensor):
                            values[name] = tensor(values[name], device=self.device)
        for n in self._nodes:
            missing = [name for name in n.inputs if name and name not in values]
            if missing:
                raise ValueError(f"{n.node.op_type} node {n.node.name!r} needs {missing}, which no input or earlier "
                                 f"node provides")
            args = [values[name] if name else None for name in n.inputs]
            while args and args[-1] is None:   # omitted optional inputs at the end
                args.pop()
            values[n.output] = n.run(self.device, args)
        as_tensors = any(isinstance(v, Tensor) for v in feeds.values())
        outputs: list[Value] = []
        for name in self.output_names:
            v = values[name]
            if as_tensors:
                outputs.append(v if isinstance(v, Tensor) else tensor(v, device=self.device))
            else:
                outputs.append(v.numpy() if isinstance(v, Tensor) else np.asarray(v))
        named_outputs: Any = namedtupledict("Outputs", self.output_names)    # a namedtuple class
        result: tuple[Any, ...] = named_outputs(*outputs)
        return result

    def _feeds(self, inputs: Any) -> dict[str, Value]:
        """The inputs by name, checked against the graph's declarations."""
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
            unknown = [name for name in feeds if name not in self.input_names and name not in self._constants]
            if unknown:
                raise ValueError(f"run(): {unknown} are no inputs of the graph; it takes {self.input_names}")
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) > len(self.input_names):
                raise ValueError(f"run(): {len(inputs)} inputs given; the graph takes {len(self.input_names)}: "
                                 f"{self.input_names}")
            feeds = dict(zip(self.input_names, inputs))
        missing = [name for name in self.input_names if name not in feeds]
        if missing:
            raise ValueError(f"run(): the graph's inputs {missing} are missing; it takes {self.input_names}")
        sizes: dict[str, tuple[int, str]] = {}     # a named dimension: its size, and the input that set it
        for decl in self.inputs:
            x = feeds[decl.name]
            if not isinstance(x, Tensor):
                x = feeds[decl.name] = functions._host_array(x)
            if decl.dtype is not None and x.dtype != decl.dtype:
                raise TypeError(f"run(): input {decl.name!r} has dtype {x.dtype}; the graph declares "
                                f"{decl.dtype}")
            if decl.dims is None:
                continue
            if len(x.shape) != len(decl.dims):
                raise ValueError(f"run(): input {decl.name!r} has shape {tuple(x.shape)}; the graph declares rank "
                                 f"{len(decl.dims)} ({_dims(decl.dims)})")
            for d, (n, want) in enumerate(zip(x.shape, decl.dims)):
                if isinstance(want, int) and want > 0 and n != want:
                    raise ValueError(f"run(): input {decl.name!r} has shape {tuple(x.shape)}; the graph declares "
                                     f"{_dims(decl.dims)}")
                if isinstance(want, str):
                    size, where = sizes.setdefault(want, (n, decl.name))
                    if size != n:
                        raise ValueError(f"run(): dimension {want!r} is {size} in input {where!r} and {n} in "
                                         f"input {decl.name!r}")
        return feeds


def _dims(dims: tuple[int | str | None, ...]) -> str:
    return "[" + ", ".join("?" if d is None or d == 0 else str(d) for d in dims) + "]"


def _check_integer_types(node: onnx.NodeProto, types: dict[str, int]) -> None:
    """prepare(): UnsupportedModelError for a Concat or Cast that the model's types show to be of data."""
    names = [name for name in node.input if name]
    if node.op_type == "Cast":
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if to is not None and to not in INDEX_TYPES:
            raise UnsupportedModelError(
                f"Cast node {node.name!r} converts to {TensorProto.DataType.Name(to)}: dmlgpu.onnx casts only "
                f"integer tensors (shapes, indices) to integer types, never data")
    for name in names:
        if types.get(name) and types[name] not in INDEX_TYPES:
            raise UnsupportedModelError(
                f"{node.op_type} node {node.name!r} reads {name!r} of type "
                f"{TensorProto.DataType.Name(types[name])}: dmlgpu.onnx runs {node.op_type} on integer tensors "
                f"(shapes, indices) only, on the host, never on data")


def _load(model: ModelSource) -> onnx.ModelProto:
    """A ModelProto, from itself, a path or serialized bytes."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(os.fspath(model))
    raise TypeError(f"prepare(): model must be an onnx.ModelProto, a path or bytes, not {type(model).__name__}")


def _opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 18)


class DmlgpuBackend(Backend):
    """ONNX's backend interface (onnx.backend.base.Backend) over dmlgpu: what the module's docstring says it
    runs, on the host's device "CPU". Its class methods are also the module's functions (prepare, run_model,
    run_node, is_compatible, supports_device).

    Examples
    --------
    >>> import dmlgpu.onnx
    >>> dmlgpu.onnx.DmlgpuBackend.supports_device("CPU"), dmlgpu.onnx.DmlgpuBackend.supports_device("CUDA")
    (True, False)
    """

    @classmethod
    def is_compatible(cls, model: ModelSource, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether prepare() would accept the model's operators and domains on ``device``.

        Parameters
        ----------
        model : onnx.ModelProto, path or bytes
        device : str
            ONNX's device name; only "CPU" (where the inputs live).

        Returns
        -------
        bool

        Examples
        --------
        See prepare() (its model is compatible; one with any other operator is not).
        """
        return cls.supports_device(device) and not unsupported(_load(model).graph)

    @classmethod
    def prepare(cls, model: ModelSource, device: str = "CPU", **kwargs: Any) -> DmlgpuRep:
        """Checks the model (onnx.checker) and prepares it to run.

        Parameters
        ----------
        model : onnx.ModelProto, path or bytes
            A model, the path of a .onnx file, or its serialized bytes.
        device : str
            ONNX's device name: "CPU", where the inputs and outputs live.
        dml_device : dmlgpu.Device or int, keyword
            The device that runs it, or its index; default: dmlgpu.default_device().

        Returns
        -------
        DmlgpuRep
            Its ``run(inputs)`` runs the graph.

        Raises
        ------
        UnsupportedModelError
            An operator, a domain or a Cast or Concat of data that dmlgpu.onnx does not run.
        onnx.checker.ValidationError
            An invalid model.
        TypeError, dmlgpu.DeviceError
            A ``dml_device`` that is neither a Device nor an index, or no such device; a ``model`` that is
            neither a model, a path nor bytes.
        ValueError
            A device other than "CPU"; a node with an attribute its operator does not have.

        Examples
        --------
        >>> import numpy as np, onnx, dmlgpu.onnx
        >>> from onnx import TensorProto, helper
        >>> node = helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0)
        >>> graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        ...                           [helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["n", 2])],
        ...                           [onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "table")])
        >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        >>> dmlgpu.onnx.is_compatible(model)
        True
        >>> rep = dmlgpu.onnx.prepare(model, dml_device=0)
        >>> rep.run([np.array([2, -3])])["rows"]
        array([[4., 5.],
               [0., 1.]], dtype=float32)
        >>> rep.run({"ids": np.array([2.0])})
        Traceback (most recent call last):
        TypeError: run(): input 'ids' has dtype float64; the graph declares int64
        >>> dmlgpu.onnx.run_model(model, [np.array([0, 0])])[0].tolist()
        [[0.0, 1.0], [0.0, 1.0]]
        """
        if not cls.supports_device(device):
            raise ValueError(f"dmlgpu.onnx takes its inputs on the host: device 'CPU', not {device!r}")
        model = _load(model)
        dev = as_device(kwargs.get("dml_device"), "prepare()", "dml_device")
        super().prepare(model, device, **kwargs)
        return DmlgpuRep(model.graph, dev, _opset(model))

    @classmethod
    def run_model(cls, model: ModelSource, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        """prepare(model, device, **kwargs).run(inputs).

        Parameters
        ----------
        model : onnx.ModelProto, path or bytes
        inputs : sequence, mapping or array
            As DmlgpuRep.run's.
        device : str
            "CPU".
        dml_device : dmlgpu.Device or int, keyword
            As prepare()'s.

        Returns
        -------
        tuple
            As DmlgpuRep.run's.

        Raises
        ------
        UnsupportedModelError, ValueError, TypeError, IndexError, dmlgpu.DeviceError
            As prepare() and DmlgpuRep.run().

        Examples
        --------
        See prepare().
        """
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        """Runs one node (ONNX's node tests call this).

        Parameters
        ----------
        node : onnx.NodeProto
        inputs : sequence or mapping
            In the node's input order, or by name.
        device : str
            "CPU".
        dml_device : dmlgpu.Device or int, keyword
            As prepare()'s.

        Returns
        -------
        tuple
            The node's outputs (as DmlgpuRep.run returns them).

        Raises
        ------
        UnsupportedModelError, ValueError, TypeError, IndexError
            As prepare() and DmlgpuRep.run().

        Examples
        --------
        >>> import numpy as np, dmlgpu.onnx
        >>> from onnx import helper
        >>> node = helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)
        >>> dmlgpu.onnx.run_node(node, [np.array([[1, 2], [3, 4]]), np.array([[1], [0]])])[0]
        array([[2],
               [3]])
        """
        super().run_node(node, inputs, device, outputs_info, **kwargs)
        graph = onnx.helper.make_graph(
            [node], "node", [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in node.input if name],
            [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in node.output])
        rep = DmlgpuRep(graph, as_device(kwargs.get("dml_device"), "run_node()", "dml_device"))
        return rep.run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Whether ``device`` (ONNX's device name) is "CPU", where dmlgpu.onnx takes its inputs.

        Parameters
        ----------
        device : str

        Returns
        -------
        bool

        Examples
        --------
        >>> import dmlgpu.onnx
        >>> dmlgpu.onnx.supports_device("CPU")
        True
        """
        try:
            return bool(OnnxDevice(device).type == DeviceType.CPU)
        except (AttributeError, ValueError):
            return False


prepare = DmlgpuBackend.prepare
run_model = DmlgpuBackend.run_model
run_node = DmlgpuBackend.run_node
supports_device = DmlgpuBackend.supports_device
is_compatible = DmlgpuBackend.is_compatible
