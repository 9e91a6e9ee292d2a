"""dmlgpu.onnx, the ONNX backend: the backend and its prepared models (this module), the graph side (graph.py: nodes,
inputs, what a model uses) and its operators (operations.py). May import: errors, kernels, runtime, plans, api.

An ONNX backend (``onnx.backend.base.Backend``) that runs graphs of ONNX's gather and scatter operators on
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
operator runs in dmlgpu's mode="raise": IndexError names the node and the first bad index (never DirectML's
clamping): before any GPU work where the indices are on the host; where they are a Tensor (an input, or the
output of another device operator) the device checks them, and every value the failed node reaches is failed:
run() raises it when it reads the outputs, every time, and outputs that stay Tensors raise it at every read
(dmlgpu/plans/index_check.py). Duplicate scatter targets without
a reduction, which ONNX leaves undefined, resolve as in the rest of dmlgpu: the last update in row-major order wins.

Inputs live on the host (NumPy arrays, or anything dmlgpu's functions accept), which is what ONNX's device
"CPU" names, or on the device (dmlgpu.Tensor). run() checks each input against the graph's declared element
type and static dimensions (a named dimension must have one size across the inputs) before any GPU work.
Outputs are NumPy arrays, or dmlgpu.Tensors when an input was a Tensor (a Tensor that feeds host plumbing, a
Cast or a shape, has its values read on the host, outside recordings). Errors name a node by its name, or
by its output where it has none. Initializers that the device
operators read are uploaded once, at prepare(); in a graph of several device operators, or one that reads
an initializer, the values between them stay on the device. The work runs on ``dmlgpu.default_device()``,
or on the device given as ``prepare(model, "CPU", dml_device=...)`` (a dmlgpu.Device or a device index).

    import dmlgpu.onnx
    rep = dmlgpu.onnx.prepare("model.onnx")   # a ModelProto, a path or the serialized bytes
    outputs = rep.run([data, indices])        # a tuple, also indexable by output name
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import onnx
except ModuleNotFoundError as e:       # an optional dependency: pip install dmlgpu[onnx]
    raise ModuleNotFoundError("dmlgpu.onnx needs the onnx package: pip install onnx", name="onnx") from e
from onnx import TensorProto, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device as OnnxDevice, DeviceType, namedtupledict

from ..api.device import Device, as_device
from .graph import (ModelSource, Node, attributes, declared, feeds as check_feeds, load_model, opset_of, unsupported,
                    value_types)
from .operations import DATA_INPUTS, HOST_ONLY, described, INDEX_TYPES, MODE, OPERATORS, PLUMBING, Value, shape_gather
from ..api.constructors import tensor
from ..api.tensor import Tensor

__all__ = ["DmlgpuBackend", "DmlgpuRep", "MODE", "UnsupportedModelError", "is_compatible", "prepare", "run_model",
           "run_node", "supports_device", "unsupported"]


def __dir__() -> list[str]:
    """dir(dmlgpu.onnx) and completion: the public names (``__all__``), the submodules and the module's dunders, not
    what it imports for itself (numpy as np, typing's Any, ...)."""
    return sorted({*__all__, "graph", "operations", *(n for n in globals() if n.startswith("__"))})


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


def _constant(node: onnx.NodeProto) -> np.ndarray:
    """The value of a Constant node."""
    if len(node.attribute) != 1:
        raise UnsupportedModelError(f"{described(node)} must have one value attribute, not "
                                    f"{[a.name for a in node.attribute]}")
    attr = node.attribute[0]
    if attr.name == "value":
        return numpy_helper.to_array(attr.t)
    kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}
    if attr.name not in kinds:
        raise UnsupportedModelError(f"{described(node)}: dmlgpu.onnx takes a value, value_float(s) or "
                                    f"value_int(s), not {attr.name}")
    return np.array(onnx.helper.get_attribute_value(attr), dtype=kinds[attr.name])


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
        self.inputs = [declared(i) for i in graph.input if i.name not in constants]
        self.input_names = [i.name for i in self.inputs]
        self.output_names = [o.name for o in graph.output]
        types = value_types(graph, opset)
        shapes: set[str] = set()        # values that hold shapes: a Gather of them runs on the host
        nodes: list[Node] = []
        for node in graph.node:
            if len(node.output) != 1:
                raise ValueError(f"{described(node)} must have one output, not {len(node.output)}")
            if node.op_type == "Constant":
                constants[node.output[0]] = _constant(node)
                continue
            inputs = list(node.input)
            if node.op_type in ("Squeeze", "Unsqueeze") and len(inputs) > 1 and any(
                    a.name == "axes" for a in node.attribute):
                raise ValueError(f"{described(node)} has axes both as an attribute and an input")
            if node.op_type in HOST_ONLY:
                _check_integer_types(node, types)
            host = node.op_type in PLUMBING or node.op_type == "Gather" and node.input[0] in shapes
            if host:
                fn, defaults = (shape_gather, {"axis": 0}) if node.op_type == "Gather" else PLUMBING[node.op_type]
            else:
                fn, defaults = OPERATORS[node.op_type]
            attrs = {k: v for k, v in attributes(node, defaults).items() if v is not None}
            n = Node(fn, inputs, node.output[0], attrs, node, not host)
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
            An index out of range (ONNX: never clamped): before any GPU work for indices on the host; for indices
            on the device, when run() reads an output that the failed node reaches (Tensor outputs: at their
            reads).

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
                raise ValueError(f"{described(n.node)} needs {missing}, which no input or earlier "
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
        """The inputs by name, checked against the graph's declarations (onnx_graph.feeds)."""
        return check_feeds(inputs, self.inputs, self._constants)


def _check_integer_types(node: onnx.NodeProto, types: dict[str, int]) -> None:
    """prepare(): UnsupportedModelError for a Concat or Cast that the model's types show to be of data."""
    names = [name for name in node.input if name]
    if node.op_type == "Cast":
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if to is not None and to not in INDEX_TYPES:
            raise UnsupportedModelError(
                f"{described(node)} converts to {TensorProto.DataType.Name(to)}: dmlgpu.onnx casts only "
                f"integer tensors (shapes, indices) to integer types, never data")
    for name in names:
        if types.get(name) and types[name] not in INDEX_TYPES:
            raise UnsupportedModelError(
                f"{described(node)} reads {name!r} of type "
                f"{TensorProto.DataType.Name(types[name])}: dmlgpu.onnx runs {node.op_type} on integer tensors "
                f"(shapes, indices) only, on the host, never on data")


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
        return cls.supports_device(device) and not unsupported(load_model(model).graph)

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
        model = load_model(model)
        dev = as_device(kwargs.get("dml_device"), "prepare()", "dml_device")
        super().prepare(model, device, **kwargs)
        return DmlgpuRep(model.graph, dev, opset_of(model))

    @classmethod
    def run_model(cls, model: ModelSource, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        """``prepare(model, device, **kwargs).run(inputs)``.

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
        outputs_info : sequence of (dtype, shape), optional
            Not used: ONNX's backend interface passes it (the outputs' types and shapes come from the run).
        dml_device : dmlgpu.Device or int, keyword
            As prepare()'s.

        Returns
        -------
        tuple of np.ndarray or Tensor
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

