"""The graph side of dmlgpu.onnx: which operators a graph uses, its nodes as they run (Node), and its inputs
as declared (Input) and as given to run() (feeds)."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Union

import numpy as np
import onnx

from ..api import arguments
from ..plans import index_check
from ..api.device import Device
from .operations import LAYER_2, OPERATORS, PLUMBING, NodeError, Value, described
from ..api.tensor import Tensor

ModelSource = Union[onnx.ModelProto, str, "os.PathLike[str]", bytes]   # what prepare() takes


def attributes(node: onnx.NodeProto, defaults: dict[str, Any]) -> dict[str, Any]:
    """The node's attributes over the operator's defaults; ValueError for one the operator does not have."""
    attrs = dict(defaults)
    for attr in node.attribute:
        if attr.name not in defaults:
            raise ValueError(f"{described(node)} has an attribute {attr.name!r}; {node.op_type} "
                             f"has {sorted(defaults)}")
        value = onnx.helper.get_attribute_value(attr)
        attrs[attr.name] = value.decode() if isinstance(value, bytes) else value
    for name, value in attrs.items():
        if value is None and name not in ("end", "axes"):
            raise ValueError(f"{described(node)} needs the attribute {name!r}")
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


class Node(NamedTuple):
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
            except NodeError as e:
                raise ValueError(f"{described(self.node)}: {e}") from None
        name = described(self.node)
        token = index_check.CALLER.set(name)          # (a Tensor's indices: the device's report names the node)
        try:
            return self.fn(dev, *args, **self.attrs)
        except (TypeError, ValueError, IndexError, RuntimeError) as e:
            raise arguments.named(e, name, LAYER_2) from None
        finally:
            index_check.CALLER.reset(token)


class Input(NamedTuple):
    """A graph input as declared: its name, element type (None: not declared) and dimensions (None: rank
    not declared; each an int, a dimension's name, or None)."""

    name: str
    dtype: np.dtype | None
    dims: tuple[int | str | None, ...] | None


def declared(value: onnx.ValueInfoProto) -> Input:
    t = value.type.tensor_type if value.type.HasField("tensor_type") else None
    if t is None or not t.elem_type:
        return Input(value.name, None, None)
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
    if not t.HasField("shape"):
        return Input(value.name, dtype, None)
    dims = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None
                 for d in t.shape.dim)
    return Input(value.name, dtype, dims)


def value_types(graph: onnx.GraphProto, opset: int) -> dict[str, int]:
    """The element type of every value that ONNX's shape inference can tell (for prepare()'s checks)."""
    try:
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:        # inference is a help to refuse early: run() checks the values anyway
        inferred = graph
    return {v.name: v.type.tensor_type.elem_type
            for v in [*inferred.input, *inferred.value_info, *inferred.output] if v.type.HasField("tensor_type")}


def dims_text(dims: tuple[int | str | None, ...]) -> str:
    """Declared dimensions as an error message shows them (``[?, 4]``)."""
    return "[" + ", ".join("?" if d is None or d == 0 else str(d) for d in dims) + "]"


def feeds(inputs: Any, declared_inputs: list[Input], constants: Mapping[str, Any]) -> dict[str, Value]:
    """DmlgpuRep.run()'s inputs by name, checked against the graph's declared inputs (``constants``: the
    initializers, which an input of that name replaces)."""
    input_names = [i.name for i in declared_inputs]
    if isinstance(inputs, Mapping):
        feeds = dict(inputs)
        unknown = [name for name in feeds if name not in input_names and name not in constants]
        if unknown:
            raise ValueError(f"run(): {unknown} are no inputs of the graph; it takes {input_names}")
    else:
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) > len(input_names):
            raise ValueError(f"run(): {len(inputs)} inputs given; the graph takes {len(input_names)}: "
                             f"{input_names}")
        feeds = dict(zip(input_names, inputs))
    missing = [name for name in input_names if name not in feeds]
    if missing:
        raise ValueError(f"run(): the graph's inputs {missing} are missing; it takes {input_names}")
    sizes: dict[str, tuple[int, str]] = {}     # a named dimension: its size, and the input that set it
    for decl in declared_inputs:
        x = feeds[decl.name]
        if not isinstance(x, Tensor):
            x = feeds[decl.name] = arguments._host_array(x)
        if decl.dtype is not None and x.dtype != decl.dtype:
            raise TypeError(f"run(): input {decl.name!r} has dtype {x.dtype}; the graph declares "
                            f"{decl.dtype}")
        if decl.dims is None:
            continue
        if len(x.shape) != len(decl.dims):
            raise ValueError(f"run(): input {decl.name!r} has shape {tuple(x.shape)}; the graph declares rank "
                             f"{len(decl.dims)} ({dims_text(decl.dims)})")
        for d, (n, want) in enumerate(zip(x.shape, decl.dims)):
            if isinstance(want, int) and want > 0 and n != want:
                raise ValueError(f"run(): input {decl.name!r} has shape {tuple(x.shape)}; the graph declares "
                                 f"{dims_text(decl.dims)}")
            if isinstance(want, str):
                size, where = sizes.setdefault(want, (n, decl.name))
                if size != n:
                    raise ValueError(f"run(): dimension {want!r} is {size} in input {where!r} and {n} in "
                                     f"input {decl.name!r}")
    return feeds


def load_model(model: ModelSource) -> onnx.ModelProto:
    """A ModelProto, from itself, a path or serialized bytes."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(os.fspath(model))
    raise TypeError(f"prepare(): model must be an onnx.ModelProto, a path or bytes, not {type(model).__name__}")


def opset_of(model: onnx.ModelProto) -> int:
    """The model's opset of the default domain (18 when it names none)."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 18)
