"""Layer 1: DirectML's operator descriptors, validated rule by rule (rules.py), planned by ops.py, and
compiled and executed on buffers (compiled.py)."""
from __future__ import annotations

from dataclasses import dataclass

from ..plans import ops
from .compiled import CompiledOperator
from .rules import (ND_RULE, GatherTensors, OperatorDesc, ScatterTensors, check_count, check_leading_ones,
                    check_reduction, check_same_but_axis, check_same_sizes, conform, documented, input_copy, layout,
                    nd_layouts)
from ..plans.index_map import take_shape
from ..plans.plan import Plan
from .tensor_desc import TensorDesc

_OperatorDesc = OperatorDesc      # the base of every descriptor (its earlier name)
__all__ = ["CompiledOperator", "GatherDesc", "GatherElementsDesc", "GatherNDDesc", "GatherND1Desc", "ScatterNDDesc",
           "ScatterElementsDesc"]


@documented
@dataclass(frozen=True)
class GatherDesc(GatherTensors):
    """DML_GATHER_OPERATOR_DESC: output[..] = input[.., indices[..], ..] along ``axis``.

    Parameters
    ----------
    input, indices, output : TensorDesc
        IndicesTensor of UINT32, INT32, UINT64 or INT64.
    axis : int
        InputTensor's dimension that the indices address.
    index_dimensions : int
        IndicesTensor's meaningful (trailing) dimensions.

%(raises)s
    >>> desc = dmlgpu.GatherDesc(D(T.FLOAT32, [1, 1, 3, 2]), D(T.UINT32, [1, 1, 1, 2]), D(T.FLOAT32, [1, 1, 2, 2]),
    ...                          axis=2, index_dimensions=1)
    >>> dev = dmlgpu.default_device()
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> dev.compile(desc).execute(input=dev.buffer(np.arange(6, dtype=np.float32)),
    ...                           indices=dev.buffer(np.array([2, 0], np.uint32)), output=out)
    >>> out.read().view(np.float32)
    array([4., 5., 0., 1.], dtype=float32)
    """

    axis: int
    index_dimensions: int

    OPERATOR = "GATHER"

    def plan(self, level) -> Plan:
        inp, idx, out = self.checked(level)
        r = inp.dimension_count
        axis = check_count(self.axis, "Axis", 0, r, "InputTensor.DimensionCount", False)
        # The page says [0, DimensionCount), but its examples 1 and 3 use IndexDimensions == DimensionCount.
        m = check_count(self.index_dimensions, "IndexDimensions", 0, r, "IndicesTensor.DimensionCount", True)
        check_leading_ones(idx, m, "IndexDimensions")
        idx_lay = layout(idx, m)
        expected = take_shape(inp.sizes, idx_lay.shape, axis)
        out_lay = conform(out, expected, "InputTensor.Sizes split at Axis around the last IndexDimensions "
                                          "sizes of IndicesTensor")
        return ops.gather(layout(inp), idx_lay, out_lay, axis, inp.data_type.numpy, idx.data_type.numpy)


@documented
@dataclass(frozen=True)
class GatherElementsDesc(GatherTensors):
    """DML_GATHER_ELEMENTS_OPERATOR_DESC: output[i,j,..] = input[.., indices[i,j,..] at Axis, ..], one element
    per index (numpy.take_along_axis).

    Parameters
    ----------
    input, indices, output : TensorDesc
        OutputTensor of IndicesTensor's sizes.
    axis : int

%(raises)s
    >>> desc = dmlgpu.GatherElementsDesc(D(T.FLOAT32, [1, 1, 2, 3]), D(T.UINT32, [1, 1, 2, 2]),
    ...                                  D(T.FLOAT32, [1, 1, 2, 2]), axis=3)
    >>> dev = dmlgpu.default_device()
    >>> op = dev.compile(desc)
    >>> inp, idx = dev.buffer(np.arange(6, dtype=np.float32)), dev.buffer(np.array([2, 0, 1, 1], np.uint32))
    >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> op.execute(input=inp, indices=idx, output=out)
    >>> out.read().view(np.float32)
    array([2., 0., 4., 4.], dtype=float32)
    """

    axis: int

    OPERATOR = "GATHER_ELEMENTS"

    def plan(self, level) -> Plan:
        inp, idx, out = self.checked(level)
        axis = check_count(self.axis, "Axis", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        check_same_but_axis(idx, inp, axis)
        check_same_sizes(out, idx)
        return ops.gather_elements(layout(inp), layout(idx), layout(out), axis, inp.data_type.numpy,
                                   idx.data_type.numpy)


@documented
@dataclass(frozen=True)
class GatherNDDesc(GatherTensors):
    """DML_GATHER_ND_OPERATOR_DESC: output[..] = input[indices[..]] on whole sub-blocks, each index tuple
    addressing InputTensor's leading meaningful dimensions.

    Parameters
    ----------
    input, indices, output : TensorDesc
    input_dimension_count, indices_dimension_count : int
        The meaningful (trailing) dimensions of InputTensor and IndicesTensor; IndicesTensor's last one
        holds each index tuple.

%(raises)s
    >>> desc = dmlgpu.GatherNDDesc(D(T.FLOAT32, [1, 1, 2, 2]), D(T.UINT32, [1, 1, 2, 2]), D(T.FLOAT32, [1, 1, 1, 2]),
    ...                            input_dimension_count=2, indices_dimension_count=2)
    >>> dev = dmlgpu.default_device()
    >>> buffers = dict(input=dev.buffer(np.arange(4, dtype=np.float32)),
    ...                indices=dev.buffer(np.array([1, 0, 0, 1], np.uint32)),
    ...                output=dev.buffer(nbytes=desc.output.total_size_in_bytes))
    >>> dev.compile(desc).execute(**buffers)
    >>> buffers["output"].read().view(np.float32)
    array([2., 1.], dtype=float32)
    """

    input_dimension_count: int
    indices_dimension_count: int

    OPERATOR = "GATHER_ND"
    batch_dimension_count = 0

    def plan(self, level) -> Plan:
        inp, idx, out = self.checked(level)
        b = self.batch_dimension_count
        if self.OPERATOR == "GATHER_ND1":
            b = check_count(b, "BatchDimensionCount", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        in_lay, idx_lay, expected = nd_layouts(inp, idx, self.input_dimension_count,
                                                self.indices_dimension_count, b)
        out_lay = conform(out, expected, ND_RULE)
        return ops.gather_nd(in_lay, idx_lay, out_lay, b, inp.data_type.numpy, idx.data_type.numpy)


@documented
@dataclass(frozen=True)
class GatherND1Desc(GatherNDDesc):
    """DML_GATHER_ND1_OPERATOR_DESC: GATHER_ND with leading batch dimensions shared by input and indices, gathered
    batch by batch.

    Parameters
    ----------
    input, indices, output : TensorDesc
    input_dimension_count, indices_dimension_count : int
        As GatherNDDesc's.
    batch_dimension_count : int
        Leading meaningful dimensions shared by InputTensor and IndicesTensor.

%(raises)s
    >>> desc = dmlgpu.GatherND1Desc(D(T.FLOAT32, [1, 1, 2, 2]), D(T.UINT32, [1, 1, 2, 1]),
    ...                             D(T.FLOAT32, [1, 1, 1, 2]), input_dimension_count=2, indices_dimension_count=2,
    ...                             batch_dimension_count=1)
    >>> dev = dmlgpu.default_device()
    >>> op, out = dev.compile(desc), dev.buffer(nbytes=desc.output.total_size_in_bytes)
    >>> for table in (np.arange(4, dtype=np.float32), np.arange(4, 8, dtype=np.float32)):   # compiled once
    ...     op.execute(input=dev.buffer(table), indices=dev.buffer(np.array([1, 0], np.uint32)), output=out)
    ...     print(out.read().view(np.float32))
    [1. 2.]
    [5. 6.]
    """

    batch_dimension_count: int = 0

    OPERATOR = "GATHER_ND1"


@documented
@dataclass(frozen=True)
class ScatterNDDesc(ScatterTensors):
    """DML_SCATTER_ND_OPERATOR_DESC: output = input; output[indices[..]] = updates[..] (sub-blocks).
    Duplicate targets: the update last in row-major order of the indices wins (dmlgpu's guarantee).

    ``reduction`` (dmlgpu's extension to DirectML, ONNX ScatterND opset 18): "none" (DirectML's
    operator), or "add", "mul", "min", "max": output[indices[..]] = output[indices[..]] op updates[..]
    for every update, duplicates included, in row-major order (deterministic; see dmlgpu/plans/reduction.py).
    The grouping of the updates by target runs on the GPU: execute() reads nothing back.

    Parameters
    ----------
    input, indices, updates, output : TensorDesc
    input_dimension_count, indices_dimension_count : int
        The meaningful (trailing) dimensions of InputTensor and IndicesTensor.
    reduction : {"none", "add", "mul", "min", "max"}

%(raises)s
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

    input_dimension_count: int
    indices_dimension_count: int
    reduction: str = "none"

    OPERATOR = "SCATTER_ND"

    def plan(self, level) -> Plan:
        inp, idx, upd, out = self.checked(level)
        check_same_sizes(out, inp)
        in_lay, idx_lay, expected = nd_layouts(inp, idx, self.input_dimension_count,
                                                self.indices_dimension_count, 0)
        upd_lay = conform(upd, expected, ND_RULE)
        return ops.scatter_nd(layout(out, len(in_lay.shape)), idx_lay, upd_lay, inp.data_type.numpy,
                              idx.data_type.numpy, check_reduction(self.reduction), input_copy(inp, out))


@documented
@dataclass(frozen=True)
class ScatterElementsDesc(ScatterTensors):
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

%(raises)s
    >>> desc = dmlgpu.ScatterElementsDesc(D(T.INT32, [1, 1, 2, 2]), D(T.UINT32, [1, 1, 1, 2]),
    ...                                   D(T.INT32, [1, 1, 1, 2]), D(T.INT32, [1, 1, 2, 2]), axis=2, reduction="add")
    >>> dev = dmlgpu.default_device()
    >>> data = dev.buffer(np.ones(4, np.int32))          # updated in place: bound as input and output
    >>> op = dev.compile(desc)
    >>> op.execute(input=data, indices=dev.buffer(np.array([1, 0], np.uint32)),
    ...            updates=dev.buffer(np.array([5, 6], np.int32)), output=data)
    >>> data.read().view(np.int32)
    array([1, 7, 6, 1], dtype=int32)
    """

    axis: int
    reduction: str = "none"

    OPERATOR = "SCATTER_ELEMENTS"

    def plan(self, level) -> Plan:
        inp, idx, upd, out = self.checked(level)
        axis = check_count(self.axis, "Axis", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        check_same_sizes(out, inp)
        check_same_but_axis(idx, inp, axis)
        check_same_sizes(upd, idx)
        return ops.scatter_elements(layout(out), layout(idx), layout(upd), axis, inp.data_type.numpy,
                                    idx.data_type.numpy, check_reduction(self.reduction), input_copy(inp, out))
