"""An ONNX backend (``onnx.backend.base.Backend``) that runs graphs of ONNX's gather and scatter operators on
a dmlgpu device.

Operators (default domain, every attribute): Gather (axis), GatherElements (axis), GatherND (batch_dims),
ScatterND (reduction: none, add, mul, min, max), ScatterElements (axis, reduction), Scatter (the deprecated
opset 9-10 alias of ScatterElements: axis) and TensorScatter (opset 24: axis, mode "linear" or "circular",
optional write_indices). A model with any other operator, or another domain, is refused by prepare() with
UnsupportedModelError naming them (is_compatible() says so beforehand).

Indices follow ONNX: negative ones count from the end, and an index outside [-n, n) is an error, so every
operator runs in dmlgpu's mode="raise": IndexError names the first bad index, before any GPU work (never
DirectML's clamping). Duplicate scatter targets without a reduction, which ONNX leaves undefined, resolve as
in the rest of dmlgpu: the last update in row-major order wins.

Inputs and outputs live on the host (NumPy arrays, or anything dmlgpu's functions accept), which is what
ONNX's device "CPU" names; the work runs on ``dmlgpu.default_device()``, or on the dmlgpu.Device given as
``prepare(model, "CPU", dml_device=...)``.

    import dmlgpu.onnx
    rep = dmlgpu.onnx.prepare(model)          # or dmlgpu.onnx.DmlgpuBackend.prepare(model)
    outputs = rep.run([data, indices])        # a tuple, also indexable by output name
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

try:
    import onnx
except ModuleNotFoundError as e:       # an optional dependency: pip install dmlgpu[onnx]
    raise ModuleNotFoundError("dmlgpu.onnx needs the onnx package: pip install onnx", name="onnx") from e
from onnx import numpy_helper
from onnx.backend.base import Backend, BackendRep, Device as OnnxDevice, DeviceType, namedtupledict

from . import functions
from .device import Device, default_device

MODE = "raise"   # ONNX: an index outside [-n, n) is an error


class UnsupportedModelError(NotImplementedError):
    """The model uses an operator or a domain that dmlgpu.onnx does not run (the message names them)."""


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
    starts = np.zeros(batch, np.int64) if write_indices is None else \
        np.asarray(functions._host_array(write_indices), dtype=np.int64)
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


def _attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes over the operator's defaults; ValueError for one the operator does not have."""
    defaults = OPERATORS[node.op_type][1]
    attrs = dict(defaults)
    for attr in node.attribute:
        if attr.name not in defaults:
            raise ValueError(f"{node.op_type} node {node.name!r} has an attribute {attr.name!r}; {node.op_type} "
                             f"has {sorted(defaults)}")
        value = onnx.helper.get_attribute_value(attr)
        attrs[attr.name] = value.decode() if isinstance(value, bytes) else value
    return attrs


def unsupported(graph: onnx.GraphProto) -> list[str]:
    """The graph's operators (op_type, with its domain when not ONNX's) that dmlgpu.onnx does not run."""
    found = []
    for node in graph.node:
        name = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        if (node.domain not in ("", "ai.onnx") or node.op_type not in OPERATORS) and name not in found:
            found.append(name)
    return found


class DmlgpuRep(BackendRep):
    """A prepared graph: its initializers converted once, its nodes in their (topological) order."""

    def __init__(self, graph: onnx.GraphProto, device: Device):
        missing = unsupported(graph)
        if missing:
            raise UnsupportedModelError(f"dmlgpu.onnx runs {', '.join(OPERATORS)} (default domain); this model "
                                        f"also uses {', '.join(missing)}")
        self.device = device
        self._constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in self._constants]
        self.output_names = [o.name for o in graph.output]
        self._nodes = [(OPERATORS[n.op_type][0], list(n.input), list(n.output), _attributes(n), n)
                       for n in graph.node]
        for fn, inputs, outputs, attrs, node in self._nodes:
            if len(outputs) != 1:
                raise ValueError(f"{node.op_type} node {node.name!r} must have one output, not {len(outputs)}")

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Runs the graph on ``inputs``: a sequence in the order of the graph's (non-initializer) inputs, a
        mapping by name, or one array for a graph of one input. Returns the outputs as NumPy arrays, in a
        tuple that is also indexable by output name."""
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) > len(self.input_names):
                raise ValueError(f"{len(inputs)} inputs given; the graph takes {len(self.input_names)}: "
                                 f"{self.input_names}")
            feeds = dict(zip(self.input_names, inputs))
        values: dict[str, Any] = dict(self._constants)
        values.update(feeds)
        for fn, inputs_, outputs, attrs, node in self._nodes:
            args = [values[name] if name else None for name in inputs_]
            while args and args[-1] is None:   # omitted optional inputs at the end
                args.pop()
            missing = [name for name in inputs_ if name and name not in values]
            if missing:
                raise ValueError(f"{node.op_type} node {node.name!r} needs {missing}, which no input or earlier "
                                 f"node provides")
            values[outputs[0]] = fn(self.device, *args, **attrs)
        return namedtupledict("Outputs", self.output_names)(*(np.asarray(values[n]) for n in self.output_names))


class DmlgpuBackend(Backend):
    """ONNX's backend interface over dmlgpu (see the module's docstring)."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device) and not unsupported(model.graph)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> DmlgpuRep:
        """Checks the model (onnx.checker) and prepares it; ``dml_device=`` picks the dmlgpu.Device."""
        if not cls.supports_device(device):
            raise ValueError(f"dmlgpu.onnx takes its inputs on the host: device 'CPU', not {device!r}")
        super().prepare(model, device, **kwargs)
        return DmlgpuRep(model.graph, kwargs.get("dml_device") or default_device())

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        """Runs one node on ``inputs`` (a sequence in the node's input order, or a mapping by name)."""
        super().run_node(node, inputs, device, outputs_info, **kwargs)
        graph = onnx.helper.make_graph(
            [node], "node", [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in node.input if name],
            [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in node.output])
        rep = DmlgpuRep(graph, kwargs.get("dml_device") or default_device())
        return rep.run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return OnnxDevice(device).type == DeviceType.CPU
        except (AttributeError, ValueError):
            return False


prepare = DmlgpuBackend.prepare
run_model = DmlgpuBackend.run_model
run_node = DmlgpuBackend.run_node
supports_device = DmlgpuBackend.supports_device
is_compatible = DmlgpuBackend.is_compatible
