"""The rules that layer 1's operator descriptors share (descriptors.py): the common checks of every
descriptor (OperatorDesc), the checks of counts, sizes and ND layouts, and how a TensorDesc's sizes conform to
the shape an operator expects. Every failure is a DescError naming the member and the rule."""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from . import dtypes
from ..plans import ops, reduction_args
from .dtypes import FeatureLevel
from ..errors import DescError
from ..plans.index_map import IndexMap, Layout, nd_shape
from ..plans.plan import Plan
from .tensor_desc import TensorDesc


def fmt(sizes) -> str:
    return "{" + ",".join(str(s) for s in sizes) + "}"


def layout(desc: TensorDesc, last: int | None = None) -> Layout:
    """The descriptor's layout; with ``last``, only its last ``last`` (meaningful) dimensions."""
    lay = Layout(desc.sizes, desc.element_strides)
    return lay if last is None else lay.aligned(last)


class OperatorDesc:
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

    def checked(self, level) -> tuple[TensorDesc, ...]:
        """The common rules checked at ``level`` (a FeatureLevel or its name): the tensors in TENSORS' order,
        each named as its member."""
        tensors = self._check_common(FeatureLevel.parse(level))
        return tuple(tensors[member] for _, member, _ in self.TENSORS)

    def plan(self, level) -> Plan:
        """Checks every rule of the operator's page at ``level``; returns the Plan that runs it."""
        raise NotImplementedError


@dataclass(frozen=True)
class GatherTensors(OperatorDesc):
    """The tensors of the gathers' descriptors (their first fields)."""

    input: TensorDesc
    indices: TensorDesc
    output: TensorDesc

    TENSORS = (("input", "InputTensor", "data"), ("indices", "IndicesTensor", "indices"),
               ("output", "OutputTensor", "data"))
    BINDINGS = ("input", "indices", "output")


@dataclass(frozen=True)
class ScatterTensors(OperatorDesc):
    """The tensors of the scatters' descriptors (their first fields)."""

    input: TensorDesc
    indices: TensorDesc
    updates: TensorDesc
    output: TensorDesc

    TENSORS = (("input", "InputTensor", "data"), ("indices", "IndicesTensor", "indices"),
               ("updates", "UpdatesTensor", "data"), ("output", "OutputTensor", "data"))
    BINDINGS = ("input", "indices", "updates", "output")


# What every descriptor's docstring shares (``%(raises)s``, filled in by documented()): its Raises section and
# the first lines of its example
_DOC_PARTS = {"raises": """\
    Raises
    ------
    dmlgpu.DescError
        From ``Device.compile()``: a rule of the DirectML page broken at the device's feature level (the
        message names the member and the rule).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> from dmlgpu import DataType as T, TensorDesc as D"""}
_C = TypeVar("_C", bound=type)


def documented(cls: _C) -> _C:
    """``cls`` with the shared parts of its docstring filled in."""
    cls.__doc__ = (cls.__doc__ or "") % _DOC_PARTS
    return cls


def check_count(value, name: str, low: int, high: int, high_name: str, closed: bool) -> int:
    """``value`` must be a whole number in [low, high] (closed) or [low, high)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise DescError(f"{name} ({value!r}) must be a whole number")
    value = int(value)
    if value < low or (value > high if closed else value >= high):
        bracket = "]" if closed else ")"
        raise DescError(f"{name} ({value}) must be in [{low}, {high_name} ({high}){bracket}")
    return value


def check_leading_ones(desc: TensorDesc, meaningful: int, count_name: str) -> None:
    for i, s in enumerate(desc.sizes[: desc.dimension_count - meaningful]):
        if s != 1:
            raise DescError(f"{desc.name}.Sizes[{i}] ({s}) must be 1: only the last {count_name} "
                            f"({meaningful}) dimensions are meaningful")


def conform(desc: TensorDesc, expected: tuple, rule: str) -> Layout:
    """Checks desc.Sizes against ``expected`` and returns desc's layout with ``expected``'s dimensions.

    The sizes must agree right-aligned (leading 1s added or cropped), or at least once all size-1
    dimensions are set aside: gather.md's example 3 writes a {3,1,2} result into an OutputTensor of
    sizes {3,2}. Size-1 dimensions do not move data, so both readings address the same elements.
    """
    r, expected = desc.dimension_count, tuple(expected)
    strides = desc.element_strides
    aligned = Layout(desc.sizes, strides).aligned(len(expected)) if fits(desc.sizes, expected) else None
    if aligned is not None and aligned.shape == expected:
        return aligned
    real = [(n, t) for n, t in zip(desc.sizes, strides) if n != 1]
    if [n for n, _ in real] != [n for n in expected if n != 1]:
        shown = expected[len(expected) - r:] if len(expected) > r and all(
            n == 1 for n in expected[:len(expected) - r]) else (1,) * (r - len(expected)) + expected
        raise DescError(f"{desc.name}.Sizes ({fmt(desc.sizes)}) must be {fmt(shown)} ({rule})")
    it = iter(real)
    return Layout(expected, tuple(next(it)[1] if n != 1 else 0 for n in expected))


def fits(sizes, expected) -> bool:
    """True when ``sizes`` can be right-aligned to len(expected) dimensions (only 1s cropped)."""
    extra = len(sizes) - len(expected)
    return extra <= 0 or all(n == 1 for n in sizes[:extra])


def check_same_sizes(desc: TensorDesc, other: TensorDesc) -> None:
    if desc.sizes != other.sizes:
        raise DescError(f"{desc.name}.Sizes ({fmt(desc.sizes)}) must match {other.name}.Sizes ({fmt(other.sizes)})")


def check_same_but_axis(idx: TensorDesc, inp: TensorDesc, axis: int) -> None:
    for d, (a, b) in enumerate(zip(idx.sizes, inp.sizes)):
        if d != axis and a != b:
            raise DescError(f"{idx.name}.Sizes[{d}] ({a}) must match {inp.name}.Sizes[{d}] ({b}): "
                            f"sizes must match in every dimension except Axis")


def nd_layouts(inp: TensorDesc, idx: TensorDesc, r_in, r_idx, batch: int):
    """Checks the ND rules shared by GATHER_ND, GATHER_ND1 and SCATTER_ND; returns the meaningful layouts
    of input and indices and the expected dense (output or updates) sizes."""
    r = inp.dimension_count
    r_in = check_count(r_in, "InputDimensionCount", 1, r, "InputTensor.DimensionCount", True)
    r_idx = check_count(r_idx, "IndicesDimensionCount", 1, r, "IndicesTensor.DimensionCount", True)
    check_leading_ones(inp, r_in, "InputDimensionCount")
    check_leading_ones(idx, r_idx, "IndicesDimensionCount")
    if batch >= r_in or batch >= r_idx:
        raise DescError(f"BatchDimensionCount ({batch}) must be less than InputDimensionCount ({r_in}) "
                        f"and IndicesDimensionCount ({r_idx})")
    in_lay, idx_lay = layout(inp, r_in), layout(idx, r_idx)
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


ND_RULE = "IndicesTensor.Sizes without its last dimension, then InputTensor.Sizes after the indexed dimensions"


def input_copy(inp: TensorDesc, out: TensorDesc) -> IndexMap:
    """A scatter's copy of InputTensor into OutputTensor, through both tensors' strides."""
    return ops.input_copy(layout(inp), layout(out), inp.data_type.numpy)


def check_reduction(value: object) -> str:
    """dmlgpu's Reduction member of the scatter descriptors: reduction_args.check_reduction's rule, as a DescError
    naming the member."""
    try:
        return reduction_args.check_reduction(value, reduction_args.REDUCTIONS)
    except ValueError as e:
        raise DescError("Reduction " + str(e).removeprefix("reduction ")) from None
