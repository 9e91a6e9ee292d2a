"""Layer-1 validation: every rule of the six operator pages, at each feature level, and execute()'s checks.

The data-type, index-type and rank tables below are transcribed from the pages (shared/spec/*.md), not
taken from dmlgpu.layer1.dtypes, so that they check it.
"""
import dataclasses

import numpy as np
import pytest

import dmlgpu
from dmlgpu import (DataType, DescError, DeviceError, GatherDesc, GatherElementsDesc, GatherND1Desc, GatherNDDesc,
                    ScatterElementsDesc, ScatterNDDesc, TensorDesc)

D = DataType
F32, F16, U32 = D.FLOAT32, D.FLOAT16, D.UINT32
LEVELS = ("1.0", "2.1", "3.0", "4.1")
OPS = ("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1", "SCATTER_ND", "SCATTER_ELEMENTS")
INTRODUCED = {"GATHER": "1.0", "GATHER_ELEMENTS": "2.1", "GATHER_ND": "2.1", "GATHER_ND1": "3.0",
              "SCATTER_ND": "2.1", "SCATTER_ELEMENTS": "2.1"}
EIGHT = {D.FLOAT32, D.FLOAT16, D.INT32, D.INT16, D.INT8, D.UINT32, D.UINT16, D.UINT8}
DATA_TYPES = {  # the pages' "Supported data types" of InputTensor / UpdatesTensor / OutputTensor
    "GATHER": {"1.0": {F32, F16}, "2.1": EIGHT, "3.0": EIGHT, "4.1": EIGHT | {D.FLOAT64, D.INT64, D.UINT64}},
    "GATHER_ELEMENTS": {"2.1": EIGHT, "3.0": EIGHT, "4.1": EIGHT},
    "GATHER_ND": {"2.1": EIGHT, "3.0": EIGHT, "4.1": EIGHT},
    "GATHER_ND1": {"3.0": EIGHT, "4.1": EIGHT},
    "SCATTER_ND": {"2.1": EIGHT, "3.0": EIGHT, "4.1": EIGHT},
    "SCATTER_ELEMENTS": {"2.1": EIGHT, "3.0": EIGHT, "4.1": EIGHT},
}
INDEX_TYPES = {"1.0": {U32}, "2.1": {U32}, "3.0": {D.INT64, D.INT32, D.UINT64, D.UINT32},
               "4.1": {D.INT64, D.INT32, D.UINT64, D.UINT32}}
RANKS = {"1.0": {4}, "2.1": {4}, "3.0": set(range(1, 9)), "4.1": set(range(1, 9))}
MEMBERS = {  # (attribute, DirectML member)
    "GATHER": (("input", "InputTensor"), ("indices", "IndicesTensor"), ("output", "OutputTensor")),
    "SCATTER": (("input", "InputTensor"), ("indices", "IndicesTensor"), ("updates", "UpdatesTensor"),
                ("output", "OutputTensor")),
}


def members(op):
    return MEMBERS["SCATTER" if op.startswith("SCATTER") else "GATHER"]


def level_ok(op, level):
    return LEVELS.index(level) >= LEVELS.index(INTRODUCED[op])


OP_LEVELS = [(op, lv) for op in OPS for lv in LEVELS if level_ok(op, lv)]


def T(dt, sizes, strides=None):
    return TensorDesc(dt, sizes, strides)


def pad(shape, r):
    """Right-aligned: leading 1s up to r dimensions."""
    return [1] * (r - len(shape)) + list(shape)


def make(op, r=4, dt=F32, it=U32):
    """A valid descriptor of ``op``: all tensors of DimensionCount r, data type dt, index type it."""
    if r == 1:
        in_m, idx_e, nd_idx, nd_out = (3,), (2,), (1,), ()
    else:
        in_m, idx_e, nd_idx, nd_out = (3, 4), (2, 4), (2, 1), (2, 4)
    rn = min(r, 2)
    if op == "GATHER":
        return GatherDesc(T(dt, pad(in_m, r)), T(it, pad((2,), r)), T(dt, pad(idx_e, r)), r - rn, 1)
    if op == "GATHER_ELEMENTS":
        return GatherElementsDesc(T(dt, pad(in_m, r)), T(it, pad(idx_e, r)), T(dt, pad(idx_e, r)), r - rn)
    if op == "GATHER_ND":
        return GatherNDDesc(T(dt, pad(in_m, r)), T(it, pad(nd_idx, r)), T(dt, pad(nd_out, r)), rn, rn)
    if op == "GATHER_ND1":
        return GatherND1Desc(T(dt, pad(in_m, r)), T(it, pad(nd_idx, r)), T(dt, pad(nd_out, r)), rn, rn, 0)
    if op == "SCATTER_ND":
        return ScatterNDDesc(T(dt, pad(in_m, r)), T(it, pad(nd_idx, r)), T(dt, pad(nd_out, r)), T(dt, pad(in_m, r)),
                             rn, rn)
    if op == "SCATTER_ELEMENTS":
        return ScatterElementsDesc(T(dt, pad(in_m, r)), T(it, pad(idx_e, r)), T(dt, pad(idx_e, r)),
                                   T(dt, pad(in_m, r)), r - rn)
    raise AssertionError(op)


def with_type(desc, dt):
    """desc with every data tensor (input, updates, output) of DataType dt."""
    changes = {a: TensorDesc(dt, getattr(desc, a).sizes) for a in ("input", "updates", "output") if hasattr(desc, a)}
    return dataclasses.replace(desc, **changes)


def rejects(desc, level, *fragments):
    with pytest.raises(DescError) as info:
        desc.plan(level)
    for f in fragments:
        assert f in str(info.value), f"{f!r} not in {str(info.value)!r}"
    return str(info.value)


@pytest.fixture(scope="module")
def devices():
    devs = {lv: dmlgpu.Device(feature_level=lv) for lv in LEVELS}
    yield devs
    for d in devs.values():
        d.close()


# ======================================================================================================
# Rules common to the six operators
# ======================================================================================================

@pytest.mark.parametrize("op,level", OP_LEVELS)
def test_valid_descriptor_compiles_at_each_level(op, level, devices):
    dev = devices[level]
    assert dev.feature_level == dmlgpu.FeatureLevel.parse(level)
    compiled = dev.compile(make(op))
    assert isinstance(compiled, dmlgpu.CompiledOperator)
    assert compiled.plan.output_from_input == op.startswith("SCATTER")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("level", LEVELS)
def test_operator_requires_its_feature_level(op, level, devices):
    if level_ok(op, level):
        make(op).plan(level)
        return
    rejects(make(op), level, f"{op} requires DML_FEATURE_LEVEL_", f"feature level is {level}")
    with pytest.raises(DescError, match=f"{op} requires"):
        devices[level].compile(make(op))


def test_feature_level_values():
    for lv in LEVELS:
        assert str(dmlgpu.FeatureLevel.parse(lv)) == lv
    with pytest.raises(ValueError, match="unknown feature level"):
        make("GATHER").plan("5.0")


@pytest.mark.parametrize("op,level", OP_LEVELS)
@pytest.mark.parametrize("r", range(1, 9))
def test_dimension_counts_allowed_per_level(op, level, r):
    desc = make(op, r=r)
    if r in RANKS[level]:
        desc.plan(level)
    else:
        rejects(desc, level, f"InputTensor.DimensionCount ({r}) must be 4 at feature level {level}")


@pytest.mark.parametrize("op", OPS)
def test_dimension_count_mismatch(op):
    """Every tensor must have InputTensor's DimensionCount (valid sizes, one more leading 1)."""
    base = make(op, r=4)
    for attr, member in members(op)[1:]:
        t = getattr(base, attr)
        bad = dataclasses.replace(base, **{attr: TensorDesc(t.data_type, [1] + list(t.sizes))})
        rejects(bad, "3.0", f"{member}.DimensionCount (5) must match InputTensor.DimensionCount (4)")


@pytest.mark.parametrize("op", [op for op in OPS if op != "GATHER_ND1"])   # GATHER_ND1 starts at 3.0
def test_dimension_count_mismatch_below_3_0_names_the_rank_rule(op):
    base, level = make(op, r=4), INTRODUCED[op]
    t = base.indices
    bad = dataclasses.replace(base, indices=TensorDesc(t.data_type, [1] + list(t.sizes)))
    rejects(bad, level, "IndicesTensor.DimensionCount (5) must be 4")


@pytest.mark.parametrize("op,level", OP_LEVELS)
@pytest.mark.parametrize("dt", list(DataType), ids=lambda t: t.name)
def test_data_types_per_level(op, level, dt):
    desc = with_type(make(op), dt)
    if dt in DATA_TYPES[op][level]:
        desc.plan(level)
    else:
        rejects(desc, level, f"InputTensor.DataType ({dt.name}) is not supported by {op} at feature level {level}")


@pytest.mark.parametrize("level", ["3.0", "4.1"])
def test_gather_float64_int64_uint64_only_at_4_1(level):
    for dt in (D.FLOAT64, D.INT64, D.UINT64):
        desc = with_type(make("GATHER"), dt)
        if level == "4.1":
            desc.plan(level)
        else:
            rejects(desc, level, f"InputTensor.DataType ({dt.name}) is not supported by GATHER")
        for op in ("GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1", "SCATTER_ND", "SCATTER_ELEMENTS"):
            rejects(with_type(make(op), dt), level, f"({dt.name}) is not supported by {op}")


def test_gather_1_0_only_float32_float16():
    for dt in DataType:
        desc = with_type(make("GATHER"), dt)
        if dt in (F32, F16):
            desc.plan("1.0")
            desc.plan("2.1")
        else:
            rejects(desc, "1.0", f"({dt.name}) is not supported by GATHER at feature level 1.0")


@pytest.mark.parametrize("op,level", OP_LEVELS)
@pytest.mark.parametrize("it", list(DataType), ids=lambda t: t.name)
def test_index_types_per_level(op, level, it):
    desc = make(op, it=it)
    if it in INDEX_TYPES[level]:
        desc.plan(level)
    else:
        rejects(desc, level, f"IndicesTensor.DataType ({it.name}) is not supported by {op} at feature level {level}")


@pytest.mark.parametrize("op", OPS)
def test_data_type_must_match_input(op):
    base = make(op)
    for attr, member in members(op):
        if attr in ("input", "indices"):
            continue
        t = getattr(base, attr)
        bad = dataclasses.replace(base, **{attr: TensorDesc(F16, t.sizes)})
        rejects(bad, "4.1", f"{member}.DataType (FLOAT16) must match InputTensor.DataType (FLOAT32)")
        # both of a supported type, and still different
        bad = dataclasses.replace(with_type(base, D.INT8), **{attr: TensorDesc(D.UINT8, t.sizes)})
        rejects(bad, "3.0", f"{member}.DataType (UINT8) must match InputTensor.DataType (INT8)")


@pytest.mark.parametrize("op", OPS)
def test_members_must_be_tensor_descs(op):
    base = make(op)
    for attr, member in members(op):
        bad = dataclasses.replace(base, **{attr: [1, 1, 3, 4]})
        rejects(bad, "4.1", f"{member} must be a dmlgpu.TensorDesc")


# ======================================================================================================
# GATHER
# ======================================================================================================

def gather(in_sizes, idx_sizes, out_sizes, axis, m, dt=F32, it=U32):
    return GatherDesc(T(dt, in_sizes), T(it, idx_sizes), T(dt, out_sizes), axis, m)


def test_gather_axis_range():
    for axis in range(4):
        expected = [2, 3, 4, 5]
        expected[axis] = 6
        gather([2, 3, 4, 5], [1, 1, 1, 6], expected, axis, 1).plan("2.1")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 3, 4], 4, 1), "2.1",
            "Axis (4) must be in [0, InputTensor.DimensionCount (4))")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 3, 4], -1, 1), "2.1", "Axis (-1) must be in [0,")


@pytest.mark.parametrize("bad", [1.0, "1", None, True])
def test_gather_axis_must_be_whole(bad):
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 2, 4], bad, 1), "2.1", "Axis", "must be a whole number")


def test_numpy_integer_parameters_are_accepted():
    gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 2, 4], np.int64(2), np.int64(1)).plan("2.1")


def test_gather_index_dimensions_range():
    # IndexDimensions == DimensionCount is what the page's examples 1 and 3 use
    gather([4], [5], [5], 0, 1).plan("3.0")
    gather([3, 2], [1, 2], [3, 2], 1, 2).plan("3.0")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 2, 4], 2, 5), "2.1",
            "IndexDimensions (5) must be in [0, IndicesTensor.DimensionCount (4)")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 2, 4], 2, -1), "2.1", "IndexDimensions (-1) must be in [0,")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 2, 4], 2, 1.5), "2.1", "IndexDimensions", "whole number")


def test_gather_index_dimensions_zero_is_a_scalar_index():
    # the axis dimension disappears: output meaningful shape {4}
    gather([1, 1, 3, 4], [1, 1, 1, 1], [1, 1, 1, 4], 2, 0).plan("2.1")
    gather([3, 4], [1, 1], [1, 4], 0, 0).plan("3.0")
    gather([3, 4], [1, 1], [1, 3], 1, 0).plan("3.0")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 1], [1, 1, 3, 4], 2, 0), "2.1", "OutputTensor.Sizes ({1,1,3,4}) must be")


def test_gather_leading_index_dimensions_must_be_1():
    rejects(gather([1, 1, 3, 4], [1, 2, 1, 2], [1, 1, 2, 4], 2, 2), "2.1",
            "IndicesTensor.Sizes[1] (2) must be 1: only the last IndexDimensions (2) dimensions are meaningful")
    rejects(gather([1, 1, 3, 4], [1, 1, 1, 2], [1, 1, 1, 4], 2, 0), "2.1",
            "IndicesTensor.Sizes[3] (2) must be 1: only the last IndexDimensions (0)")
    gather([1, 1, 3, 4], [1, 1, 5, 2], [1, 5, 2, 4], 2, 2).plan("2.1")


def test_gather_output_sizes():
    # OutputTensor.Sizes = {Input[0..Axis], Indices' last IndexDimensions sizes, Input[Axis+1..]}
    gather([2, 3, 4, 5], [1, 1, 1, 6], [2, 6, 4, 5], 1, 1).plan("2.1")
    gather([2, 3, 4, 5], [1, 1, 1, 6], [2, 3, 4, 6], 3, 1).plan("2.1")
    gather([1, 3, 4, 5], [1, 1, 6, 7], [6, 7, 4, 5], 1, 2).plan("2.1")   # leading 1 of input cropped
    msg = rejects(gather([2, 3, 4, 5], [1, 1, 1, 6], [2, 3, 4, 5], 1, 1), "2.1", "OutputTensor.Sizes ({2,3,4,5}) must be "
                  "{2,6,4,5}")
    assert "Axis" in msg and "IndexDimensions" in msg
    rejects(gather([2, 3, 4, 5], [1, 1, 1, 6], [1, 2, 6, 4], 1, 1), "2.1", "OutputTensor.Sizes")


def test_gather_output_rank_must_hold_the_result():
    # original rank 4 + IndexDimensions 2 - 1 = 5 meaningful dimensions > 4
    rejects(gather([2, 3, 4, 5], [1, 1, 6, 7], [2, 6, 7, 4], 1, 2), "2.1", "OutputTensor.Sizes ({2,6,7,4}) must be "
            "{2,6,7,4,5}")
    # fits at 3.0 with 5 dimensions
    gather([1, 2, 3, 4, 5], [1, 1, 1, 6, 7], [2, 6, 7, 4, 5], 2, 2).plan("3.0")


def test_gather_output_size_1_dimensions_may_be_set_aside():
    # page example 3: a {3,1,2} result in an OutputTensor of sizes {3,2}
    gather([3, 2], [1, 2], [3, 2], 1, 2).plan("3.0")


# ======================================================================================================
# GATHER_ELEMENTS
# ======================================================================================================

def gather_el(in_sizes, idx_sizes, out_sizes, axis, dt=F32, it=U32):
    return GatherElementsDesc(T(dt, in_sizes), T(it, idx_sizes), T(dt, out_sizes), axis)


def test_gather_elements_axis_range():
    for axis in range(4):
        gather_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], axis).plan("2.1")
    rejects(gather_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], 4), "2.1",
            "Axis (4) must be in [0, InputTensor.DimensionCount (4))")
    rejects(gather_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], -1), "2.1", "Axis (-1)")


def test_gather_elements_indices_sizes_match_input_except_axis():
    gather_el([2, 3, 4, 5], [2, 7, 4, 5], [2, 7, 4, 5], 1).plan("2.1")   # any size along Axis
    gather_el([2, 3, 4, 5], [2, 1, 4, 5], [2, 1, 4, 5], 1).plan("2.1")
    rejects(gather_el([2, 3, 4, 5], [2, 3, 3, 5], [2, 3, 3, 5], 1), "2.1",
            "IndicesTensor.Sizes[2] (3) must match InputTensor.Sizes[2] (4): sizes must match in every dimension "
            "except Axis")
    rejects(gather_el([2, 3, 4, 5], [1, 3, 4, 5], [1, 3, 4, 5], 1), "2.1", "IndicesTensor.Sizes[0] (1) must match")


def test_gather_elements_output_sizes_match_indices():
    rejects(gather_el([2, 3, 4, 5], [2, 7, 4, 5], [2, 3, 4, 5], 1), "2.1",
            "OutputTensor.Sizes ({2,3,4,5}) must match IndicesTensor.Sizes ({2,7,4,5})")


def test_gather_elements_page_example_types():
    # errata: the page's OutputTensor must be FLOAT32 like the input, not UINT32
    gather_el([3, 3], [2, 3], [2, 3], 0).plan("3.0")
    rejects(GatherElementsDesc(T(F32, [1, 1, 3, 3]), T(U32, [1, 1, 2, 3]), T(U32, [1, 1, 2, 3]), 2), "2.1",
            "OutputTensor.DataType (UINT32) must match InputTensor.DataType (FLOAT32)")


# ======================================================================================================
# GATHER_ND, GATHER_ND1, SCATTER_ND: the ND rules
# ======================================================================================================

def nd(op, in_sizes, idx_sizes, dense_sizes, r_in, r_idx, b=0, dt=F32, it=U32):
    """dense_sizes: OutputTensor's (gathers) or UpdatesTensor's (SCATTER_ND) sizes."""
    if op == "GATHER_ND":
        assert b == 0
        return GatherNDDesc(T(dt, in_sizes), T(it, idx_sizes), T(dt, dense_sizes), r_in, r_idx)
    if op == "GATHER_ND1":
        return GatherND1Desc(T(dt, in_sizes), T(it, idx_sizes), T(dt, dense_sizes), r_in, r_idx, b)
    assert b == 0
    return ScatterNDDesc(T(dt, in_sizes), T(it, idx_sizes), T(dt, dense_sizes), T(dt, in_sizes), r_in, r_idx)


ND_OPS = ("GATHER_ND", "GATHER_ND1", "SCATTER_ND")
DENSE = {"GATHER_ND": "OutputTensor", "GATHER_ND1": "OutputTensor", "SCATTER_ND": "UpdatesTensor"}


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_input_dimension_count_range(op):
    # the 1-tuples index the first meaningful input dimension: the output keeps the ones after it
    for r_in, dense in ((2, [1, 1, 2, 4]), (3, [1, 2, 3, 4]), (4, [2, 1, 3, 4])):
        nd(op, [1, 1, 3, 4], [1, 1, 2, 1], dense, r_in, 2).plan("3.0")
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 0, 2), "3.0",
            "InputDimensionCount (0) must be in [1, InputTensor.DimensionCount (4)]")
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 5, 2), "3.0",
            "InputDimensionCount (5) must be in [1, InputTensor.DimensionCount (4)]")
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2.0, 2), "3.0", "InputDimensionCount", "whole number")


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_indices_dimension_count_range(op):
    for r_idx in (2, 3, 4):
        nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2, r_idx).plan("3.0")
    nd(op, [1, 1, 3, 4], [1, 1, 1, 1], [1, 1, 1, 4], 2, 1).plan("3.0")   # a single 1-tuple
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2, 0), "3.0",
            "IndicesDimensionCount (0) must be in [1, IndicesTensor.DimensionCount (4)]")
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2, 5), "3.0",
            "IndicesDimensionCount (5) must be in [1, IndicesTensor.DimensionCount (4)]")


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_leading_input_dimensions_must_be_1(op):
    rejects(nd(op, [1, 2, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2, 2), "3.0",
            "InputTensor.Sizes[1] (2) must be 1: only the last InputDimensionCount (2) dimensions are meaningful")


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_leading_indices_dimensions_must_be_1(op):
    rejects(nd(op, [1, 1, 3, 4], [2, 1, 2, 1], [1, 1, 2, 4], 2, 2), "3.0",
            "IndicesTensor.Sizes[0] (2) must be 1: only the last IndicesDimensionCount (2) dimensions are meaningful")


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_tuple_size_limit(op):
    nd(op, [1, 1, 3, 4], [1, 1, 2, 2], [1, 1, 1, 2], 2, 2).plan("3.0")   # k == InputDimensionCount
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 3], [1, 1, 1, 2], 2, 2), "3.0",
            "IndicesTensor.Sizes[3] (3), the index tuple size, must not exceed InputDimensionCount (2)")
    rejects(nd(op, [1, 3, 4], [1, 2, 4], [1, 1, 2], 3, 2), "3.0", "the index tuple size, must not exceed "
            "InputDimensionCount (3)")


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_dense_sizes(op):
    member = DENSE[op]
    # page example: Input {3,4,5,6,7}, Indices {1,1,1,2,3} (IndicesDimensionCount 3) -> {1,1,2,6,7}
    nd(op, [3, 4, 5, 6, 7], [1, 1, 1, 2, 3], [1, 1, 2, 6, 7], 5, 3).plan("3.0")
    msg = rejects(nd(op, [3, 4, 5, 6, 7], [1, 1, 1, 2, 3], [1, 1, 2, 7, 6], 5, 3), "3.0",
                  f"{member}.Sizes ({{1,1,2,7,6}}) must be {{1,1,2,6,7}}")
    assert "IndicesTensor.Sizes without its last dimension" in msg
    rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 3, 4], 2, 2), "3.0", f"{member}.Sizes ({{1,1,3,4}}) must be "
            "{1,1,2,4}")


@pytest.mark.parametrize("op", ND_OPS)
def test_nd_levels_and_types(op):
    lv = INTRODUCED[op]
    nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2, 2).plan(lv)
    if lv == "2.1":
        rejects(nd(op, [3, 4], [2, 1], [2, 4], 2, 2), "2.1", "InputTensor.DimensionCount (2) must be 4")
        rejects(nd(op, [1, 1, 3, 4], [1, 1, 2, 1], [1, 1, 2, 4], 2, 2, it=D.INT64), "2.1",
                "IndicesTensor.DataType (INT64) is not supported")
    nd(op, [3, 4], [2, 1], [2, 4], 2, 2, it=D.INT64).plan("3.0")


# ---- GATHER_ND1: BatchDimensionCount ----

def test_nd1_batch_dimension_count_range():
    # page example 2: Input {1,3,2,2}, Indices {1,3,2,2}, Batch 1 -> Output {1,1,3,2}
    nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 2, 2], [1, 1, 3, 2], 3, 3, 1).plan("3.0")
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 2, 2], [1, 1, 3, 2], 3, 3, 4), "3.0",
            "BatchDimensionCount (4) must be in [0, InputTensor.DimensionCount (4))")
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 2, 2], [1, 1, 3, 2], 3, 3, -1), "3.0",
            "BatchDimensionCount (-1) must be in [0,")
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 2, 2], [1, 1, 3, 2], 3, 3, 1.0), "3.0",
            "BatchDimensionCount", "whole number")


def test_nd1_batch_dimension_count_below_meaningful_counts():
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 2, 2], [1, 1, 3, 2], 3, 3, 3), "3.0",
            "BatchDimensionCount (3) must be less than InputDimensionCount (3) and IndicesDimensionCount (3)")
    rejects(nd("GATHER_ND1", [1, 1, 3, 4], [1, 3, 2, 1], [1, 1, 3, 2], 2, 3, 2), "3.0",
            "BatchDimensionCount (2) must be less than InputDimensionCount (2)")
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 1, 3, 2], [1, 1, 1, 3], 3, 2, 2), "3.0",
            "BatchDimensionCount (2) must be less than InputDimensionCount (3) and IndicesDimensionCount (2)")


def test_nd1_batch_sizes_must_agree():
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 4, 2, 2], [1, 1, 4, 2], 3, 3, 1), "3.0",
            "IndicesTensor.Sizes[1] (4) must match InputTensor.Sizes[1] (3): batch dimensions must agree")
    # right-aligned meaningful dimensions: batch dims are the first of each tensor's meaningful ones
    nd("GATHER_ND1", [1, 3, 2, 2], [3, 5, 2, 1], [3, 5, 2, 2], 3, 4, 1).plan("3.0")
    rejects(nd("GATHER_ND1", [2, 3, 5, 6], [2, 4, 7, 1], [2, 4, 7, 6], 4, 4, 2), "3.0",
            "IndicesTensor.Sizes[1] (4) must match InputTensor.Sizes[1] (3)")


def test_nd1_tuple_size_limit_counts_batch_dimensions():
    nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 5, 2], [1, 1, 3, 5], 3, 3, 1).plan("3.0")
    rejects(nd("GATHER_ND1", [1, 3, 2, 2], [1, 3, 5, 3], [1, 1, 3, 5], 3, 3, 1), "3.0",
            "IndicesTensor.Sizes[3] (3), the index tuple size, must not exceed InputDimensionCount (3) - "
            "BatchDimensionCount (1)")


def test_nd1_output_sizes_with_batch():
    # {batch 2} + {5} + input after batch and the 1-tuple: {4}
    nd("GATHER_ND1", [1, 2, 3, 4], [1, 2, 5, 1], [1, 2, 5, 4], 3, 3, 1).plan("3.0")
    rejects(nd("GATHER_ND1", [1, 2, 3, 4], [1, 2, 5, 1], [1, 2, 5, 3], 3, 3, 1), "3.0",
            "OutputTensor.Sizes ({1,2,5,3}) must be {1,2,5,4}")


def test_gather_nd_has_no_batch_dimensions():
    assert GatherNDDesc.batch_dimension_count == 0
    with pytest.raises(TypeError):
        GatherNDDesc(T(F32, [3, 4]), T(U32, [2, 1]), T(F32, [2, 4]), 2, 2, 1)


# ---- SCATTER_ND ----

def test_scatter_nd_output_sizes_match_input():
    d = make("SCATTER_ND")
    rejects(dataclasses.replace(d, output=T(F32, [1, 1, 4, 3])), "2.1",
            "OutputTensor.Sizes ({1,1,4,3}) must match InputTensor.Sizes ({1,1,3,4})")
    rejects(dataclasses.replace(d, output=T(F32, [1, 1, 3, 5])), "2.1", "OutputTensor.Sizes")


def test_scatter_nd_updates_sizes_and_type():
    d = make("SCATTER_ND")
    rejects(dataclasses.replace(d, updates=T(F32, [1, 1, 2, 3])), "2.1", "UpdatesTensor.Sizes ({1,1,2,3}) must be "
            "{1,1,2,4}")
    rejects(dataclasses.replace(d, updates=T(F16, [1, 1, 2, 4])), "2.1",
            "UpdatesTensor.DataType (FLOAT16) must match InputTensor.DataType (FLOAT32)")


def test_scatter_nd_page_example():
    # errata: IndicesTensor is UINT32, tensors padded with leading 1s
    ScatterNDDesc(T(F32, [1, 8]), T(U32, [4, 1]), T(F32, [1, 4]), T(F32, [1, 8]), 1, 2).plan("3.0")
    rejects(ScatterNDDesc(T(F32, [1, 8]), T(F32, [4, 1]), T(F32, [1, 4]), T(F32, [1, 8]), 1, 2), "3.0",
            "IndicesTensor.DataType (FLOAT32) is not supported")
    rejects(ScatterNDDesc(T(F32, [8]), T(U32, [4, 1]), T(F32, [4]), T(F32, [8]), 1, 2), "3.0",
            "DimensionCount (2) must match InputTensor.DimensionCount (1)")


# ======================================================================================================
# SCATTER_ELEMENTS
# ======================================================================================================

def scatter_el(in_sizes, idx_sizes, upd_sizes, out_sizes, axis, dt=F32, it=U32):
    return ScatterElementsDesc(T(dt, in_sizes), T(it, idx_sizes), T(dt, upd_sizes), T(dt, out_sizes), axis)


def test_scatter_elements_axis_range():
    for axis in range(4):
        scatter_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], axis).plan("2.1")
    rejects(scatter_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], 4), "2.1",
            "Axis (4) must be in [0, InputTensor.DimensionCount (4))")
    rejects(scatter_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], -1), "2.1", "Axis (-1)")


def test_scatter_elements_output_sizes_match_input():
    rejects(scatter_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 6], 1), "2.1",
            "OutputTensor.Sizes ({2,3,4,6}) must match InputTensor.Sizes ({2,3,4,5})")


def test_scatter_elements_indices_sizes_match_input_except_axis():
    scatter_el([2, 3, 4, 5], [2, 1, 4, 5], [2, 1, 4, 5], [2, 3, 4, 5], 1).plan("2.1")
    scatter_el([2, 3, 4, 5], [2, 6, 4, 5], [2, 6, 4, 5], [2, 3, 4, 5], 1).plan("2.1")
    rejects(scatter_el([2, 3, 4, 5], [2, 3, 4, 2], [2, 3, 4, 2], [2, 3, 4, 5], 1), "2.1",
            "IndicesTensor.Sizes[3] (2) must match InputTensor.Sizes[3] (5): sizes must match in every dimension "
            "except Axis")


def test_scatter_elements_updates_sizes_and_type():
    rejects(scatter_el([2, 3, 4, 5], [2, 1, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], 1), "2.1",
            "UpdatesTensor.Sizes ({2,3,4,5}) must match IndicesTensor.Sizes ({2,1,4,5})")
    d = scatter_el([2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], [2, 3, 4, 5], 1)
    rejects(dataclasses.replace(d, updates=T(D.INT32, [2, 3, 4, 5])), "2.1",
            "UpdatesTensor.DataType (INT32) must match InputTensor.DataType (FLOAT32)")


# ======================================================================================================
# Higher ranks at 3.0: right-aligned tensors of 1 to 8 dimensions
# ======================================================================================================

@pytest.mark.parametrize("r", range(1, 9))
def test_all_ranks_with_leading_ones_validate_at_3_0(r):
    if r >= 3:
        gather(pad([3, 4], r), pad([2, 2], r), pad([2, 2, 4], r), r - 2, 2).plan("3.0")
        nd("GATHER_ND1", pad([2, 3, 4], r), pad([2, 5, 1], r), pad([2, 5, 4], r), 3, 3, 1).plan("3.0")
    full = [2] * r
    gather_el(full, full, full, r - 1).plan("3.0")
    scatter_el(full, full, full, full, 0).plan("3.0")
    nd("SCATTER_ND", full, pad([3, r], r) if r >= 2 else [1], pad([3], r) if r >= 2 else [1], r, min(r, 2)).plan("3.0")


# ======================================================================================================
# compile() and execute()
# ======================================================================================================

def test_compile_rejects_non_descriptors(device):
    with pytest.raises(TypeError, match="operator descriptor"):
        device.compile(T(F32, [4]))


def test_compile_on_closed_device_raises():
    dev = dmlgpu.Device(feature_level="3.0")
    dev.close()
    with pytest.raises(DeviceError, match="closed"):
        dev.compile(make("GATHER"))


@pytest.fixture
def gather_op(device):
    op = device.compile(make("GATHER"))   # input {1,1,3,4}, indices {1,1,1,2}, output {1,1,2,4}
    bufs = dict(input=device.buffer(np.arange(12, dtype=np.float32)),
                indices=device.buffer(np.array([2, 0], dtype=np.uint32)),
                output=device.buffer(nbytes=32))
    return op, bufs


def test_execute_runs(gather_op):
    op, bufs = gather_op
    op.execute(**bufs)
    assert bufs["output"].read().view(np.float32).tolist() == [8, 9, 10, 11, 0, 1, 2, 3]


def test_execute_missing_buffer(gather_op):
    op, bufs = gather_op
    del bufs["output"]
    with pytest.raises(TypeError, match="missing: output"):
        op.execute(**bufs)


def test_execute_unknown_buffer(gather_op):
    op, bufs = gather_op
    with pytest.raises(TypeError, match="unknown: updates"):
        op.execute(updates=bufs["input"], **bufs)
    with pytest.raises(TypeError, match="unknown: out"):
        op.execute(input=bufs["input"], indices=bufs["indices"], out=bufs["output"])


def test_execute_scatter_requires_updates(device):
    op = device.compile(make("SCATTER_ELEMENTS"))
    b = device.buffer(nbytes=64)
    with pytest.raises(TypeError, match="missing: updates"):
        op.execute(input=b, indices=device.buffer(nbytes=32), output=device.buffer(nbytes=64))


def test_execute_non_buffer(gather_op):
    op, bufs = gather_op
    bufs["input"] = np.arange(12, dtype=np.float32)
    with pytest.raises(TypeError, match="input must be a dmlgpu.Buffer"):
        op.execute(**bufs)


@pytest.mark.parametrize("which,member", [("input", "InputTensor"), ("indices", "IndicesTensor"),
                                          ("output", "OutputTensor")])
def test_execute_buffer_smaller_than_total_size(gather_op, device, which, member):
    op, bufs = gather_op
    need = getattr(op.desc, which).total_size_in_bytes
    bufs[which] = device.buffer(nbytes=need - 4)
    with pytest.raises(ValueError, match=rf"{member}.TotalTensorSizeInBytes is {need}"):
        op.execute(**bufs)


def test_execute_buffer_smaller_than_explicit_total_size(device):
    desc = GatherDesc(T(F32, [1, 1, 3, 4]), T(U32, [1, 1, 1, 2]), TensorDesc(F32, [1, 1, 2, 4], None, 64), 2, 1)
    op = device.compile(desc)
    bufs = dict(input=device.buffer(nbytes=48), indices=device.buffer(nbytes=8), output=device.buffer(nbytes=32))
    with pytest.raises(ValueError, match="OutputTensor.TotalTensorSizeInBytes is 64"):
        op.execute(**bufs)
    bufs["output"] = device.buffer(nbytes=64)
    op.execute(**bufs)


def test_execute_scatter_updates_buffer_too_small(device):
    op = device.compile(make("SCATTER_ND"))   # updates {1,1,2,4}: 32 bytes
    with pytest.raises(ValueError, match="UpdatesTensor.TotalTensorSizeInBytes is 32"):
        op.execute(input=device.buffer(nbytes=48), indices=device.buffer(nbytes=8),
                   updates=device.buffer(nbytes=28), output=device.buffer(nbytes=48))


def test_execute_buffer_from_another_device(gather_op, devices):
    op, bufs = gather_op
    bufs["indices"] = devices["3.0"].buffer(np.array([2, 0], dtype=np.uint32))
    with pytest.raises(DeviceError, match="indices is a buffer of another device"):
        op.execute(**bufs)


@pytest.mark.parametrize("op_name", ["GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1"])
def test_execute_gather_output_bound_to_input(device, op_name):
    op = device.compile(make(op_name))
    buf = device.buffer(nbytes=64)
    with pytest.raises(ValueError, match="cannot write its output over its input"):
        op.execute(input=buf, indices=device.buffer(nbytes=64), output=buf)


def test_execute_scatter_in_place_allowed(device):
    op = device.compile(make("SCATTER_ND", dt=D.INT32))   # input {1,1,3,4}, indices {1,1,2,1}, updates {1,1,2,4}
    buf = device.buffer(np.arange(12, dtype=np.int32))
    op.execute(input=buf, indices=device.buffer(np.array([2, 0], np.uint32)),
               updates=device.buffer(np.full(8, -1, np.int32)), output=buf)
    assert buf.read().view(np.int32).tolist() == [-1] * 4 + [4, 5, 6, 7] + [-1] * 4
