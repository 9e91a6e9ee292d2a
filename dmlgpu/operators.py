"""Layer 1: DirectML's operator descriptors, validated rule by rule (desc_rules.py), planned by ops.py, and
compiled and executed on buffers (compiled.py)."""
from __future__ import annotations

from dataclasses import dataclass

from . import ops
from .compiled import CompiledOperator
from .desc_rules import (ND_RULE, OperatorDesc, check_count, check_leading_ones, check_reduction, check_same_but_axis,
                         check_same_sizes, conform, input_copy, layout, nd_layouts)
from .dtypes import FeatureLevel
from .index_map import take_shape
from .plan import Plan
from .tensor_desc import TensorDesc

_OperatorDesc = OperatorDesc      # the base of every descriptor (its earlier name)
__all__ = ["CompiledOperator", "GatherDesc", "GatherElementsDesc", "GatherNDDesc", "GatherND1Desc", "ScatterNDDesc",
           "ScatterElementsDesc"]


@dataclass(frozen=True)
class GatherDesc(OperatorDesc):
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
        axis = check_count(self.axis, "Axis", 0, r, "InputTensor.DimensionCount", False)
        # The page says [0, DimensionCount), but its examples 1 and 3 use IndexDimensions == DimensionCount.
        m = check_count(self.index_dimensions, "IndexDimensions", 0, r, "IndicesTensor.DimensionCount", True)
        check_leading_ones(idx, m, "IndexDimensions")
        idx_lay = layout(idx, m)
        expected = take_shape(inp.sizes, idx_lay.shape, axis)
        out_lay = conform(out, expected, "InputTensor.Sizes split at Axis around the last IndexDimensions "
                                          "sizes of IndicesTensor")
        return ops.gather(layout(inp), idx_lay, out_lay, axis, inp.data_type.numpy, idx.data_type.numpy)


@dataclass(frozen=True)
class GatherElementsDesc(OperatorDesc):
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
        axis = check_count(self.axis, "Axis", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        check_same_but_axis(idx, inp, axis)
        check_same_sizes(out, idx)
        return ops.gather_elements(layout(inp), layout(idx), layout(out), axis, inp.data_type.numpy,
                                   idx.data_type.numpy)


@dataclass(frozen=True)
class GatherNDDesc(OperatorDesc):
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
            b = check_count(b, "BatchDimensionCount", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        in_lay, idx_lay, expected = nd_layouts(inp, idx, self.input_dimension_count,
                                                self.indices_dimension_count, b)
        out_lay = conform(out, expected, ND_RULE)
        return ops.gather_nd(in_lay, idx_lay, out_lay, b, inp.data_type.numpy, idx.data_type.numpy)


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
class ScatterNDDesc(OperatorDesc):
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
        check_same_sizes(out, inp)
        in_lay, idx_lay, expected = nd_layouts(inp, idx, self.input_dimension_count,
                                                self.indices_dimension_count, 0)
        upd_lay = conform(upd, expected, ND_RULE)
        return ops.scatter_nd(layout(out, len(in_lay.shape)), idx_lay, upd_lay, inp.data_type.numpy,
                              idx.data_type.numpy, check_reduction(self.reduction), input_copy(inp, out))


@dataclass(frozen=True)
class ScatterElementsDesc(OperatorDesc):
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
        axis = check_count(self.axis, "Axis", 0, inp.dimension_count, "InputTensor.DimensionCount", False)
        check_same_sizes(out, inp)
        check_same_but_axis(idx, inp, axis)
        check_same_sizes(upd, idx)
        return ops.scatter_elements(layout(out), layout(idx), layout(upd), axis, inp.data_type.numpy,
                                    idx.data_type.numpy, check_reduction(self.reduction), input_copy(inp, out))
