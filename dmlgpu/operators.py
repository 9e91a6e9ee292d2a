"""Layer 1: DirectML's operator descriptors, validated rule by rule, compiled and executed on buffers."""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import dtypes
from .dtypes import FeatureLevel
from .errors import DescError, DeviceError
from .index_map import Layout, copy_map, elements_map, nd_map, nd_shape, take_map, take_shape
from .plan import GatherPlan, Plan, ScatterPlan, scatter_elements_plan
from .reduction import REDUCTIONS, ReducePlan
from .runtime import Buffer, Device
from .tensor_desc import TensorDesc

if TYPE_CHECKING:
    from .device import Device as _Device     # a dmlgpu.Device (it carries the feature level)


def _fmt(sizes) -> str:
    return "{" + ",".join(str(s) for s in sizes) + "}"


def _layout(desc: TensorDesc, last: int | None = None) -> Layout:
    """The descriptor's layout; with ``last``, only its last ``last`` (meaningful) dimensions."""
    lay = Layout(desc.sizes, desc.element_strides)
    return lay if last is None else lay.aligned(last)


class _OperatorDesc:
    """Common rules: tensors are TensorDescs of one DimensionCount, of types and ranks the feature level
    allows; data tensors share the input's DataType."""

    OPERATOR = ""
    input: TensorDesc         # every operator's; the others by operator
    output: TensorDesc
    TENSORS: tuple = ()      # (attribute, DirectML member name, role: "data" | "indices")
    BINDINGS: tuple = ()     # execute() keyword arguments

    def _check_common(self, level: FeatureLevel) -> dict:
        needed = dtypes.OPERATOR_LEVELS[self.OPERATOR]
        if level.value < needed.value:
            raise DescError(f"{self.OPERATOR} requires DML_FEATURE_LEVEL_{str(needed).replace('.', '_')} or higher; "
                            f"the device's feature level is {level}")
        tensors = {}
        for attr, member, _ in self.TENSORS:
            desc = getattr(self, attr)
            if not isinstance(desc, TensorDesc):
                raise DescError(f"{member} must be a dmlgpu.TensorDesc, not {type(desc).__name__}")
            tensors[member] = desc.renamed(member)
        ranks = dtypes.dimension_counts(level)
        first = self.TENSORS[0][1]
        for _, member, role in self.TENSORS:
            desc = tensors[member]
            if desc.dimension_count not in ranks:
                rule = f"in [{ranks.start}, {ranks.stop - 1}]" if len(ranks) > 1 else f"{ranks.start}"
                raise DescError(f"{member}.DimensionCount ({desc.dimension_count}) must be {rule} "
                                f"at feature level {level}")
            if desc.dimension_count != tensors[first].dimension_count:
                raise DescError(f"{member}.DimensionCount ({desc.dimension_count}) must match "
                                f"{first}.DimensionCount ({tensors[first].dimension_count})")
            allowed = dtypes.index_types(level) if role == "indices" else dtypes.data_types(self.OPERATOR, level)
            if desc.data_type not in allowed:
                names = ", ".join(sorted(t.name for t in allowed))
                raise DescError(f"{member}.DataType ({desc.data_type.name}) is not supported by {self.OPERATOR} "
                                f"at feature level {level} (supported: {names})")
            if role == "data" and desc.data_type != tensors[first].data_type:
                raise DescError(f"{member}.DataType ({desc.data_type.name}) must match "
                                f"{first}.DataType ({tensors[first].data_type.name})")
        return tensors

    def plan(self, level) -> Plan:
        """Checks every rule of the operator's page at ``level``; returns the Plan that runs it."""
        raise NotImplementedError


def _check_count(value, name: str, low: int, high: int, high_name: str, closed: bool) -> int:
    """``value`` must be a whole number in [low, high] (closed) or [low, high)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise DescError(f"{name} ({value!r}) must be a whole number")
    value = int(value)
    if value < low or (value > high if closed else value >= high):
        bracket = "]" if closed else ")"
        raise DescError(f"{name} ({value}) must be in [{low}, {high_name} ({high}){bracket}")
    return value


def _check_leading_ones(desc: TensorDesc, meaningful: int, count_name: str) -> None:
    for i, s in enumerate(desc.sizes[: desc.dimension_count - meaningful]):
        if s != 1:
            raise DescError(f"{desc.name}.Sizes[{i}] ({s}) must be 1: only the last {count_name} "
                            f"({meaningful}) dimensions are meaningful")


def _conform(desc: TensorDesc, expected: tuple, rule: str) -> Layout:
    """Checks desc.Sizes against ``expected`` and returns desc's layout with ``expected``'s dimensions.

    The sizes must agree right-aligned (leading 1s added or cropped), or at least once all size-1
    dimensions are set aside: gather.md's example 3 writes a {3,1,2} result into an OutputTensor of
    sizes {3,2}. Size-1 dimensions do not move data, so both readings address the same elements.
    """
    r, expected = desc.dimension_count, tuple(expected)
    strides = desc.element_strides
    aligned = Layout(desc.sizes, strides).aligned(len(expected)) if _fits(desc.sizes, expected) else None
    if aligned is not None and aligned.shape == expected:
        return aligned
    real = [(n, t) for n, t in zip(desc.sizes, strides) if n != 1]
    if [n for n, _ in real] != [n for n in expected if n != 1]:
        shown = expected[len(expected) - r:] if len(expected) > r and all(
            n == 1 for n in expected[:len(expected) - r]) else (1,) * (r - len(expected)) + expected
        raise DescError(f"{desc.name}.Sizes ({_fmt(desc.sizes)}) must be {_fmt(shown)} ({rule})")
    it = iter(real)
    return Layout(expected, tuple(next(it)[1] if n != 1 else 0 for n in expected))


def _fits(sizes, expected) -> bool:
    """True when ``sizes`` can be right-aligned to len(expected) dimensions (only 1s cropped)."""
    extra = len(sizes) - len(expected)
    return extra <= 0 or all(n == 1 for n in sizes[:extra])


@dataclass(frozen=True)
class GatherDesc(_OperatorDesc):
    """DML_GATHER_OPERATOR_DESC: output[..] = input[.., indices[..], ..] along ``axis``.

    Parameters
    ----------
    input, indices, output : TensorDesc
        IndicesTensor of UINT32, INT32, UINT64 or INT64.
    axis : int
        InputTensor's dimension that the indices address.
    index_dimensions : int
        IndicesTensor's meaningful (trailing) dimensions.

    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D
    >>> desc = dmlgpu.GatherDesc(D(T.FLOAT32, [1, 1, 3, 2]), D(T.UINT32, [1, 1, 1, 2]), D(T.FLOAT32, [1, 1, 2, 2]),
    ...                          axis=2, index_dimensions=1)
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.arange(6, dtype=np.float32)),
    ...                           indices=dev.buffer(np.array([2, 0], np.uint32)), output=out)
    >>> out.read().view(np.float32)
    array([4., 5., 0., 1.], dtype=float32)
    """

    input: TensorDesc
    indices: TensorDesc
    output: TensorDesc
    axis: int
    index_dimensions: int

    OPERATOR = "GATHER"
    TENSORS = (("input", "InputTensor", "data"), ("indices", "IndicesTensor", "indices"),
               ("output", "OutputTensor", "data"))
    BINDINGS = ("input", "indices", "output")

    def plan(self, level) -> Plan:
        t = self._check_common(FeatureLevel.parse(level))
        inp, idx, out = t["InputTensor"], t["IndicesTensor"], t["OutputTensor"]
        r = inp.dimension_count
        axis = _check_count(self.axis, "Axis", 0, r, "InputTensor.DimensionCount", False)
        # The page says [0, DimensionCount), but its examples 1 and 3 use IndexDimensions == DimensionCount.
        m = _check_count(self.index_dimensions, "IndexDimensions", 0, r, "IndicesTensor.DimensionCount", True)
        _check_leading_ones(idx, m, "IndexDimensions")
        idx_lay = _layout(idx, m)
        expected = take_shape(inp.sizes, idx_lay.shape, axis)
        out_lay = _conform(out, expected, "InputTensor.Sizes split at Axis around the last IndexDimensions "
                                          "sizes of IndicesTensor")
        index_map = take_map(_layout(inp), idx_lay, out_lay, axis, inp.data_type.size)
        return GatherPlan(index_map, idx.data_type.numpy)


@dataclass(frozen=True)
class GatherElementsDesc(_OperatorDesc):
    """DML_GATHER_ELEMENTS_OPERATOR_DESC: output[i,j,..] = input[.., indices[i,j,..] at Axis, ..].

    Parameters
    ----------
    input, indices, output : TensorDesc
        OutputTensor of IndicesTensor's sizes.
    axis : int

    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D
    >>> desc = dmlgpu.GatherElementsDesc(D(T.FLOAT32, [1, 1, 2, 3]), D(T.UINT32, [1, 1, 2, 2]),
    ...                                  D(T.FLOAT32, [1, 1, 2, 2]), axis=3)
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.arange(6, dtype=np.float32)),
    ...                           indices=dev.buffer(np.array([2, 0, 1, 1], np.uint32)), output=out)
    >>> out.read().view(np.float32)
    array([2., 0., 4., 4.], dtype=float32)
    """

    input: TensorDesc
    indices: TensorDesc
    output: TensorDesc
    axis: int

    OPERATOR = "GATHER_ELEMENTS"
    TENSORS = GatherDesc.TENSORS
    BINDINGS = GatherDesc.BINDINGS

    def plan(self, level) -> Plan:
        t = self._check_common(FeatureLevel.parse(level))
        inp, idx, out = t["InputTensor"], t["IndicesTensor"], t["OutputTensor"]
        axis = _check_count(self.axis, "Axis", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        _check_same_but_axis(idx, inp, axis)
        _check_same_sizes(out, idx)
        return GatherPlan(elements_map(_layout(inp), _layout(idx), _layout(out), axis, inp.data_type.size),
                    idx.data_type.numpy)


def _check_same_sizes(desc: TensorDesc, other: TensorDesc) -> None:
    if desc.sizes != other.sizes:
        raise DescError(f"{desc.name}.Sizes ({_fmt(desc.sizes)}) must match {other.name}.Sizes ({_fmt(other.sizes)})")


def _check_same_but_axis(idx: TensorDesc, inp: TensorDesc, axis: int) -> None:
    for d, (a, b) in enumerate(zip(idx.sizes, inp.sizes)):
        if d != axis and a != b:
            raise DescError(f"{idx.name}.Sizes[{d}] ({a}) must match {inp.name}.Sizes[{d}] ({b}): "
                            f"sizes must match in every dimension except Axis")


def _nd_layouts(inp: TensorDesc, idx: TensorDesc, r_in, r_idx, batch: int):
    """Checks the ND rules shared by GATHER_ND, GATHER_ND1 and SCATTER_ND; returns the meaningful layouts
    of input and indices and the expected dense (output or updates) sizes."""
    r = inp.dimension_count
    r_in = _check_count(r_in, "InputDimensionCount", 1, r, "InputTensor.DimensionCount", True)
    r_idx = _check_count(r_idx, "IndicesDimensionCount", 1, r, "IndicesTensor.DimensionCount", True)
    _check_leading_ones(inp, r_in, "InputDimensionCount")
    _check_leading_ones(idx, r_idx, "IndicesDimensionCount")
    if batch >= r_in or batch >= r_idx:
        raise DescError(f"BatchDimensionCount ({batch}) must be less than InputDimensionCount ({r_in}) "
                        f"and IndicesDimensionCount ({r_idx})")
    in_lay, idx_lay = _layout(inp, r_in), _layout(idx, r_idx)
    k = idx_lay.shape[-1]
    if k > r_in - batch:
        raise DescError(f"IndicesTensor.Sizes[{r - 1}] ({k}), the index tuple size, must not exceed "
                        f"InputDimensionCount ({r_in}) - BatchDimensionCount ({batch})")
    for d in range(batch):
        if idx_lay.shape[d] != in_lay.shape[d]:
            di, dn = r - r_idx + d, r - r_in + d
            raise DescError(f"IndicesTensor.Sizes[{di}] ({idx_lay.shape[d]}) must match InputTensor.Sizes[{dn}] "
                            f"({in_lay.shape[d]}): batch dimensions must agree")
    return in_lay, idx_lay, nd_shape(in_lay.shape, idx_lay.shape, batch)


_ND_RULE = "IndicesTensor.Sizes without its last dimension, then InputTensor.Sizes after the indexed dimensions"


@dataclass(frozen=True)
class GatherNDDesc(_OperatorDesc):
    """DML_GATHER_ND_OPERATOR_DESC: output[..] = input[indices[..]] on whole sub-blocks.

    Parameters
    ----------
    input, indices, output : TensorDesc
    input_dimension_count, indices_dimension_count : int
        The meaningful (trailing) dimensions of InputTensor and IndicesTensor; IndicesTensor's last one
        holds each index tuple.

    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D
    >>> desc = dmlgpu.GatherNDDesc(D(T.FLOAT32, [1, 1, 2, 2]), D(T.UINT32, [1, 1, 2, 2]), D(T.FLOAT32, [1, 1, 1, 2]),
    ...                            input_dimension_count=2, indices_dimension_count=2)
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.arange(4, dtype=np.float32)),
    ...                           indices=dev.buffer(np.array([1, 0, 0, 1], np.uint32)), output=out)
    >>> out.read().view(np.float32)
    array([2., 1.], dtype=float32)
    """

    input: TensorDesc
    indices: TensorDesc
    output: TensorDesc
    input_dimension_count: int
    indices_dimension_count: int

    OPERATOR = "GATHER_ND"
    TENSORS = GatherDesc.TENSORS
    BINDINGS = GatherDesc.BINDINGS
    batch_dimension_count = 0

    def plan(self, level) -> Plan:
        t = self._check_common(FeatureLevel.parse(level))
        inp, idx, out = t["InputTensor"], t["IndicesTensor"], t["OutputTensor"]
        b = self.batch_dimension_count
        if self.OPERATOR == "GATHER_ND1":
            b = _check_count(b, "BatchDimensionCount", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        in_lay, idx_lay, expected = _nd_layouts(inp, idx, self.input_dimension_count,
                                                self.indices_dimension_count, b)
        out_lay = _conform(out, expected, _ND_RULE)
        index_map = nd_map(in_lay, idx_lay, out_lay, b, inp.data_type.size)
        return GatherPlan(index_map, idx.data_type.numpy)


@dataclass(frozen=True)
class GatherND1Desc(GatherNDDesc):
    """DML_GATHER_ND1_OPERATOR_DESC: GATHER_ND with leading batch dimensions shared by input and indices.

    Parameters
    ----------
    input, indices, output : TensorDesc
    input_dimension_count, indices_dimension_count : int
        As GatherNDDesc's.
    batch_dimension_count : int
        Leading meaningful dimensions shared by InputTensor and IndicesTensor.

    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D
    >>> desc = dmlgpu.GatherND1Desc(D(T.FLOAT32, [1, 1, 2, 2]), D(T.UINT32, [1, 1, 2, 1]),
    ...                             D(T.FLOAT32, [1, 1, 1, 2]), input_dimension_count=2, indices_dimension_count=2,
    ...                             batch_dimension_count=1)
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.arange(4, dtype=np.float32)),
    ...                           indices=dev.buffer(np.array([1, 0], np.uint32)), output=out)
    >>> out.read().view(np.float32)
    array([1., 2.], dtype=float32)
    """

    batch_dimension_count: int = 0

    OPERATOR = "GATHER_ND1"


@dataclass(frozen=True)
class ScatterNDDesc(_OperatorDesc):
    """DML_SCATTER_ND_OPERATOR_DESC: output = input; output[indices[..]] = updates[..] (sub-blocks).
    Duplicate targets: the update last in row-major order of the indices wins (dmlgpu's guarantee).

    ``reduction`` (dmlgpu's extension to DirectML, ONNX ScatterND opset 18): "none" (DirectML's
    operator), or "add", "mul", "min", "max": output[indices[..]] = output[indices[..]] op updates[..]
    for every update, duplicates included, in row-major order (deterministic; see dmlgpu/reduction.py).
    The grouping of the updates by target runs on the GPU: execute() reads nothing back.

    Parameters
    ----------
    input, indices, updates, output : TensorDesc
    input_dimension_count, indices_dimension_count : int
        The meaningful (trailing) dimensions of InputTensor and IndicesTensor.
    reduction : {"none", "add", "mul", "min", "max"}

    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D
    >>> desc = dmlgpu.ScatterNDDesc(D(T.INT32, [1, 1, 1, 4]), D(T.UINT32, [1, 1, 2, 1]), D(T.INT32, [1, 1, 1, 2]),
    ...                             D(T.INT32, [1, 1, 1, 4]), input_dimension_count=1, indices_dimension_count=2)
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.zeros(4, np.int32)),
    ...                           indices=dev.buffer(np.array([3, 1], np.uint32)),
    ...                           updates=dev.buffer(np.array([5, 6], np.int32)), output=out)
    >>> out.read().view(np.int32)
    array([0, 6, 0, 5], dtype=int32)
    """

    input: TensorDesc
    indices: TensorDesc
    updates: TensorDesc
    output: TensorDesc
    input_dimension_count: int
    indices_dimension_count: int
    reduction: str = "none"

    OPERATOR = "SCATTER_ND"
    TENSORS = (("input", "InputTensor", "data"), ("indices", "IndicesTensor", "indices"),
               ("updates", "UpdatesTensor", "data"), ("output", "OutputTensor", "data"))
    BINDINGS = ("input", "indices", "updates", "output")

    def plan(self, level) -> Plan:
        t = self._check_common(FeatureLevel.parse(level))
        inp, idx, upd, out = (t[n] for n in ("InputTensor", "IndicesTensor", "UpdatesTensor", "OutputTensor"))
        _check_same_sizes(out, inp)
        in_lay, idx_lay, expected = _nd_layouts(inp, idx, self.input_dimension_count,
                                                self.indices_dimension_count, 0)
        upd_lay = _conform(upd, expected, _ND_RULE)
        reduction = _check_reduction(self.reduction)
        if reduction != "none":
            return ReducePlan.nd(reduction, inp.data_type.numpy, idx.data_type.numpy, _layout(out, len(in_lay.shape)),
                                 idx_lay, upd_lay, _input_copy(inp, out))
        index_map = nd_map(_layout(out, len(in_lay.shape)), idx_lay, upd_lay, 0, inp.data_type.size)
        return ScatterPlan(index_map, idx.data_type.numpy,
                    _input_copy(inp, out))


@dataclass(frozen=True)
class ScatterElementsDesc(_OperatorDesc):
    """DML_SCATTER_OPERATOR_DESC (SCATTER_ELEMENTS): output = input; output[.., indices[i,j,..], ..] =
    updates[i,j,..]. Duplicate targets: the update last in row-major order wins (dmlgpu's guarantee).

    ``reduction`` (dmlgpu's extension to DirectML, ONNX ScatterElements opset 18): "none" (DirectML's
    operator), or "add", "mul", "min", "max", combining every update into its target, as ScatterNDDesc's.
    The grouping of the updates by target runs on the GPU: execute() reads nothing back.

    Parameters
    ----------
    input, indices, updates, output : TensorDesc
        UpdatesTensor of IndicesTensor's sizes, OutputTensor of InputTensor's.
    axis : int
    reduction : {"none", "add", "mul", "min", "max"}

    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D
    >>> desc = dmlgpu.ScatterElementsDesc(D(T.INT32, [1, 1, 2, 2]), D(T.UINT32, [1, 1, 1, 2]),
    ...                                   D(T.INT32, [1, 1, 1, 2]), D(T.INT32, [1, 1, 2, 2]), axis=2, reduction="add")
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.ones(4, np.int32)),
    ...                           indices=dev.buffer(np.array([1, 0], np.uint32)),
    ...                           updates=dev.buffer(np.array([5, 6], np.int32)), output=out)
    >>> out.read().view(np.int32)
    array([1, 7, 6, 1], dtype=int32)
    """

    input: TensorDesc
    indices: TensorDesc
    updates: TensorDesc
    output: TensorDesc
    axis: int
    reduction: str = "none"

    OPERATOR = "SCATTER_ELEMENTS"
    TENSORS = ScatterNDDesc.TENSORS
    BINDINGS = ScatterNDDesc.BINDINGS

    def plan(self, level) -> Plan:
        t = self._check_common(FeatureLevel.parse(level))
        inp, idx, upd, out = (t[n] for n in ("InputTensor", "IndicesTensor", "UpdatesTensor", "OutputTensor"))
        axis = _check_count(self.axis, "Axis", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        _check_same_sizes(out, inp)
        _check_same_but_axis(idx, inp, axis)
        _check_same_sizes(upd, idx)
        reduction = _check_reduction(self.reduction)
        if reduction != "none":
            return ReducePlan.elements(reduction, inp.data_type.numpy, idx.data_type.numpy, _layout(out),
                                       _layout(idx), _layout(upd), axis,
                                       _input_copy(inp, out))
        return scatter_elements_plan(_layout(out), _layout(idx), _layout(upd), axis, inp.data_type.size,
                                     idx.data_type.numpy, _input_copy(inp, out))


def _input_copy(inp: TensorDesc, out: TensorDesc):
    """A scatter's copy of InputTensor into OutputTensor, through both tensors' strides."""
    return copy_map(_layout(inp), _layout(out), inp.data_type.size)


def _check_reduction(reduction) -> str:
    """dmlgpu's Reduction member of the scatter descriptors: one of REDUCTIONS."""
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise DescError(f"Reduction ({reduction!r}) must be one of {', '.join(map(repr, REDUCTIONS))}")
    return reduction


class CompiledOperator:
    """An operator descriptor validated for a device; execute() runs it on that device's buffers.

    execute() takes the buffers by name (``input``, ``indices``, ``output`` and, for scatters,
    ``updates``); each must hold at least its TensorDesc's TotalTensorSizeInBytes. A scatter's output may
    be the input's buffer (an in-place update, no copy). It returns when the GPU has finished.

    Parameters
    ----------
    device : dmlgpu.Device
    desc : an operator descriptor (GatherDesc, ...)

    Raises
    ------
    TypeError
        ``desc`` is no operator descriptor.
    dmlgpu.DescError
        ``desc`` breaks a rule at the device's feature level.

    Examples
    --------
    See Device.compile(), which makes them.
    """

    def __init__(self, device: _Device, desc: _OperatorDesc):
        if not isinstance(desc, _OperatorDesc):
            raise TypeError(f"compile() takes an operator descriptor such as dmlgpu.GatherDesc, "
                            f"not {type(desc).__name__}")
        self.device = device
        self.desc = desc
        self.plan = desc.plan(device.feature_level)

    def execute(self, **buffers: Buffer) -> None:
        """Runs the operator on this device's buffers and waits for the GPU.

        Parameters
        ----------
        **buffers : dmlgpu.Buffer
            By name: ``input``, ``indices``, ``output`` and, for scatters, ``updates``; each holding at least
            its TensorDesc's TotalTensorSizeInBytes. A scatter's output may be the input's buffer (in place).

        Raises
        ------
        TypeError
            A buffer missing or unknown, or not a Buffer of this device.
        ValueError
            A buffer too small, or an output over an input it may not overwrite.

        Examples
        --------
        See Device.compile().
        """
        desc = self.desc
        missing = [n for n in desc.BINDINGS if n not in buffers]
        unknown = [n for n in buffers if n not in desc.BINDINGS]
        if missing or unknown:
            raise TypeError(f"{desc.OPERATOR}.execute() takes the buffers {', '.join(desc.BINDINGS)}"
                            + (f"; missing: {', '.join(missing)}" if missing else "")
                            + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
        for attr, member, _ in desc.TENSORS:
            buf = buffers[attr]
            if not isinstance(buf, Buffer):
                raise TypeError(f"{attr} must be a dmlgpu.Buffer (Device.buffer()), not {type(buf).__name__}")
            if buf.device is not self.device:
                raise DeviceError(f"{attr} is a buffer of another device ({buf.device.info.name})")
            need = getattr(desc, attr).total_size_in_bytes
            if buf.nbytes < need:
                raise ValueError(f"{attr} holds {buf.nbytes} bytes; {member}.TotalTensorSizeInBytes is {need}")
        out = buffers["output"]
        for name in ("indices", "updates") + (() if self.plan.output_from_input else ("input",)):
            if buffers.get(name) is out:
                raise ValueError(f"{desc.OPERATOR} cannot write its output over its {name}: bind another buffer")
        if out is buffers["input"] and (desc.output.sizes, desc.output.element_strides) != (
                desc.input.sizes, desc.input.element_strides):
            raise ValueError(f"{desc.OPERATOR} in place (output bound to the input's buffer) needs OutputTensor "
                             f"and InputTensor of the same sizes and strides")
        dev = self.device
        with dev._lock:
            taken = []

            def take(nbytes):                 # scratch (a reduction's sort), given back after the run
                buf = dev._take(nbytes)
                taken.append(buf)
                return buf

            dispatches, uploads = self.plan.dispatches(dev, take=take, **buffers)
            dev._run(dispatches, uploads=uploads)
            if dev._recording() is None:
                dev._give(*reversed(taken))
