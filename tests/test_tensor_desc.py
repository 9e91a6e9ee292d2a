"""TensorDesc (DML_BUFFER_TENSOR_DESC) and DMLCalcBufferTensorSize: one test per rule of tensor_desc.md.

Expected buffer sizes are worked out by hand from the page's formula:
    IndexOfLastElement = dot(Sizes - 1, Strides);  size = roundup((IndexOfLastElement + 1) * ElementSize, 4)
"""
import dataclasses

import numpy as np
import pytest

import dmlgpu
from dmlgpu import DataType, DescError, TensorDesc

ALL_TYPES = list(DataType)
BY_SIZE = {1: [DataType.UINT8, DataType.INT8],
           2: [DataType.FLOAT16, DataType.UINT16, DataType.INT16],
           4: [DataType.FLOAT32, DataType.UINT32, DataType.INT32],
           8: [DataType.FLOAT64, DataType.UINT64, DataType.INT64]}
F32 = DataType.FLOAT32


def test_element_sizes_match_the_page():
    assert sorted(t.name for ts in BY_SIZE.values() for t in ts) == sorted(t.name for t in DataType)
    for size, types in BY_SIZE.items():
        for t in types:
            assert t.size == size
            assert t.numpy.itemsize == size


def test_desc_error_is_a_value_error():
    assert issubclass(DescError, ValueError)
    assert dmlgpu.DescError is DescError


# ---- DimensionCount: 1 to 8 ----

@pytest.mark.parametrize("rank", range(1, 9))
def test_dimension_count_1_to_8_valid(rank):
    d = TensorDesc(F32, [1] * (rank - 1) + [3])
    assert d.dimension_count == rank
    assert d.sizes == (1,) * (rank - 1) + (3,)


@pytest.mark.parametrize("rank", [0, 9, 12])
def test_dimension_count_out_of_range(rank):
    with pytest.raises(DescError, match=rf"DimensionCount \({rank}\) must be in \[1, 8\]"):
        TensorDesc(F32, [2] * rank)


# ---- Sizes ----

def test_zero_size_is_invalid():
    with pytest.raises(DescError, match=r"Sizes\[1\] \(0\).*size of zero is invalid"):
        TensorDesc(F32, [2, 0, 3])


def test_zero_size_first_dimension_is_invalid():
    with pytest.raises(DescError, match=r"Sizes\[0\] \(0\)"):
        TensorDesc(DataType.UINT8, [0])


def test_negative_size_is_invalid():
    with pytest.raises(DescError, match=r"Sizes\[2\] \(-1\)"):
        TensorDesc(F32, [2, 3, -1])


def test_too_large_size_is_invalid():
    TensorDesc(DataType.UINT8, [2**32 - 1])            # UINT max is fine (no buffer is allocated)
    with pytest.raises(DescError, match=r"Sizes\[1\] \(4294967296\) must be in \[1, 2\^32-1\]"):
        TensorDesc(F32, [1, 2**32])


@pytest.mark.parametrize("bad", [2.5, "3", None, True])
def test_non_integer_size_is_invalid(bad):
    with pytest.raises(DescError, match=r"Sizes .*must be a whole number"):
        TensorDesc(F32, [2, bad])


def test_numpy_integer_sizes_are_accepted():
    d = TensorDesc(F32, np.array([2, 3], dtype=np.int64))
    assert d.sizes == (2, 3) and all(type(s) is int for s in d.sizes)


# ---- Strides ----

def test_strides_length_must_equal_dimension_count():
    with pytest.raises(DescError, match=r"Strides has 1 entries; it must have DimensionCount \(2\)"):
        TensorDesc(F32, [2, 3], strides=[1])
    with pytest.raises(DescError, match=r"Strides has 3 entries; it must have DimensionCount \(2\)"):
        TensorDesc(F32, [2, 3], strides=[3, 1, 1])


def test_negative_stride_is_invalid():
    with pytest.raises(DescError, match=r"Strides\[1\] \(-1\) must be in \[0, 2\^32-1\]"):
        TensorDesc(F32, [2, 3], strides=[3, -1])


def test_too_large_stride_is_invalid():
    with pytest.raises(DescError, match=r"Strides\[0\] \(4294967296\)"):
        TensorDesc(DataType.UINT8, [2, 3], strides=[2**32, 1])


def test_non_integer_stride_is_invalid():
    with pytest.raises(DescError, match=r"Strides .*must be a whole number"):
        TensorDesc(F32, [2, 3], strides=[3, 0.5])


def test_zero_strides_are_valid_broadcast():
    d = TensorDesc(F32, [4, 3], strides=[0, 0])
    assert d.strides == (0, 0)
    assert d.calc_buffer_size() == 4


def test_no_strides_means_packed():
    d = TensorDesc(F32, [2, 3, 4])
    assert d.strides is None
    assert d.element_strides == (12, 4, 1)
    assert TensorDesc(F32, [5]).element_strides == (1,)


# ---- TotalTensorSizeInBytes ----

def test_total_size_defaults_to_calc_buffer_size():
    d = TensorDesc(DataType.UINT8, [5])
    assert d.total_size_in_bytes == d.calc_buffer_size() == 8


def test_total_size_at_least_calc_buffer_size():
    TensorDesc(F32, [2, 3], total_size_in_bytes=24)
    TensorDesc(F32, [2, 3], total_size_in_bytes=28)
    with pytest.raises(DescError, match=r"TotalTensorSizeInBytes \(20\) must be at least DMLCalcBufferTensorSize \(24\)"):
        TensorDesc(F32, [2, 3], total_size_in_bytes=20)


def test_total_size_below_minimum_with_strides():
    # sizes {2,3}, strides {5,1}: last element 7, 8 * 4 = 32 bytes
    with pytest.raises(DescError, match=r"TotalTensorSizeInBytes \(28\).*\(32\)"):
        TensorDesc(F32, [2, 3], strides=[5, 1], total_size_in_bytes=28)


def test_total_size_must_be_multiple_of_4():
    with pytest.raises(DescError, match=r"TotalTensorSizeInBytes \(26\) must be a multiple of 4"):
        TensorDesc(F32, [2, 3], total_size_in_bytes=26)
    with pytest.raises(DescError, match=r"TotalTensorSizeInBytes \(10\) must be a multiple of 4"):
        TensorDesc(DataType.UINT8, [5], total_size_in_bytes=10)  # above the minimum (8) but not DWORD-aligned


def test_negative_total_size_is_invalid():
    with pytest.raises(DescError, match=r"TotalTensorSizeInBytes \(-4\)"):
        TensorDesc(F32, [1], total_size_in_bytes=-4)


def test_non_integer_total_size_is_invalid():
    with pytest.raises(DescError, match=r"TotalTensorSizeInBytes .*whole number"):
        TensorDesc(F32, [1], total_size_in_bytes=8.5)


def test_total_size_of_8_byte_types_need_only_be_multiple_of_4():
    # roundup to 4 (not 8): an explicit size of 28 for 3 FLOAT64 (24 bytes) is fine
    assert TensorDesc(DataType.FLOAT64, [3], total_size_in_bytes=28).total_size_in_bytes == 28


# ---- GuaranteedBaseOffsetAlignment ----

@pytest.mark.parametrize("align", [0, 1, 2, 4, 8, 16, 256, 4096])
def test_alignment_zero_or_power_of_two_valid(align):
    assert TensorDesc(F32, [4], guaranteed_base_offset_alignment=align).guaranteed_base_offset_alignment == align


@pytest.mark.parametrize("align", [3, 6, 12, 100, -4])
def test_alignment_not_power_of_two_invalid(align):
    with pytest.raises(DescError, match=rf"GuaranteedBaseOffsetAlignment \({align}\) must be 0 or a power of two"):
        TensorDesc(F32, [4], guaranteed_base_offset_alignment=align)


def test_non_integer_alignment_invalid():
    with pytest.raises(DescError, match=r"GuaranteedBaseOffsetAlignment .*whole number"):
        TensorDesc(F32, [4], guaranteed_base_offset_alignment=1.5)


# ---- DataType ----

@pytest.mark.parametrize("bad", ["FLOAT32", 0, np.float32, np.dtype("float32"), None])
def test_data_type_must_be_a_data_type(bad):
    with pytest.raises(DescError, match=r"DataType .*must be a dmlgpu.DataType"):
        TensorDesc(bad, [4])


@pytest.mark.parametrize("dt", ALL_TYPES, ids=lambda t: t.name)
def test_every_data_type_is_accepted(dt):
    assert TensorDesc(dt, [3]).data_type is dt


# ---- the member name in messages, immutability ----

def test_renamed_reports_the_member_name():
    d = TensorDesc(F32, [2, 3])
    r = d.renamed("InputTensor")
    assert r == d and r.name == "InputTensor"
    with pytest.raises(DescError, match=r"^InputTensor\.Sizes\[0\] \(0\)"):
        TensorDesc(F32, [0, 3], name="InputTensor")


def test_desc_is_frozen():
    d = TensorDesc(F32, [2, 3])
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.sizes = (4,)


# ---- DMLCalcBufferTensorSize, by hand, for each element size ----
# name: (sizes, strides, {element size: expected bytes})
LAYOUTS = {
    # packed: 24 elements
    "packed_2x3x4": ([2, 3, 4], None, {1: 24, 2: 48, 4: 96, 8: 192}),
    # packed: 5 elements -> 5, 10, 20, 40 bytes, rounded up to 4
    "packed_5": ([5], None, {1: 8, 2: 12, 4: 20, 8: 40}),
    # one element
    "packed_1": ([1], None, {1: 4, 2: 4, 4: 4, 8: 8}),
    # leading 1s change nothing: 7 elements
    "packed_1x1x7": ([1, 1, 7], None, {1: 8, 2: 16, 4: 28, 8: 56}),
    # explicit packed strides == no strides: 6 elements
    "explicit_packed_2x3": ([2, 3], [3, 1], {1: 8, 2: 12, 4: 24, 8: 48}),
    # padded rows: last = 1*5 + 2*1 = 7 -> 8 elements
    "padded_2x3_s5_1": ([2, 3], [5, 1], {1: 8, 2: 16, 4: 32, 8: 64}),
    # padded rows: last = 2*4 + 1 = 9 -> 10 elements
    "padded_3x2_s4_1": ([3, 2], [4, 1], {1: 12, 2: 20, 4: 40, 8: 80}),
    # padded inner stride: last = 1*7 + 2*2 = 11 -> 12 elements
    "padded_2x3_s7_2": ([2, 3], [7, 2], {1: 12, 2: 24, 4: 48, 8: 96}),
    # 3D padding: last = 1*20 + 2*6 + 3*1 = 35 -> 36 elements
    "padded_2x3x4_s20_6_1": ([2, 3, 4], [20, 6, 1], {1: 36, 2: 72, 4: 144, 8: 288}),
    # broadcast rows: last = 0 + 2 = 2 -> 3 elements
    "broadcast_4x3_s0_1": ([4, 3], [0, 1], {1: 4, 2: 8, 4: 12, 8: 24}),
    # broadcast columns: last = 3*1 + 0 = 3 -> 4 elements
    "broadcast_4x3_s1_0": ([4, 3], [1, 0], {1: 4, 2: 8, 4: 16, 8: 32}),
    # broadcast everything: 1 element
    "broadcast_5x7_s0_0": ([5, 7], [0, 0], {1: 4, 2: 4, 4: 4, 8: 8}),
    # broadcast middle: last = 2*2 + 0 + 1 = 5 -> 6 elements
    "broadcast_3x4x2_s2_0_1": ([3, 4, 2], [2, 0, 1], {1: 8, 2: 12, 4: 24, 8: 48}),
    # permuted (transposed 3x5): last = 2*1 + 4*3 = 14 -> 15 elements
    "permuted_3x5_s1_3": ([3, 5], [1, 3], {1: 16, 2: 32, 4: 60, 8: 120}),
    # permuted 2x3x4 laid out as (1, 2, 0): last = 1*1 + 2*8 + 3*2 = 23 -> 24 elements
    "permuted_2x3x4_s1_8_2": ([2, 3, 4], [1, 8, 2], {1: 24, 2: 48, 4: 96, 8: 192}),
    # permuted and padded: last = 1*1 + 2*3 = 7 -> 8 elements
    "permuted_padded_2x3_s1_3": ([2, 3], [1, 3], {1: 8, 2: 16, 4: 32, 8: 64}),
    # 8 dimensions, packed: 2*1*3*1*1*2*1*1 = 12 elements
    "packed_8d": ([2, 1, 3, 1, 1, 2, 1, 1], None, {1: 12, 2: 24, 4: 48, 8: 96}),
    # a size-1 dimension's stride does not matter: last = 1*2 + 0*1000 + 1*1 = 3 -> 4 elements
    "size1_big_stride": ([2, 1, 2], [2, 1000, 1], {1: 4, 2: 8, 4: 16, 8: 32}),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("dt", ALL_TYPES, ids=lambda t: t.name)
def test_calc_buffer_size(layout, dt):
    sizes, strides, expected = LAYOUTS[layout]
    d = TensorDesc(dt, sizes, strides)
    assert d.calc_buffer_size() == expected[dt.size]
    assert d.total_size_in_bytes == expected[dt.size]
    assert d.calc_buffer_size() % 4 == 0


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_exact_minimum_total_size_accepted_and_one_dword_less_rejected(layout):
    sizes, strides, expected = LAYOUTS[layout]
    for dt in (DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.INT64):
        need = expected[dt.size]
        TensorDesc(dt, sizes, strides, total_size_in_bytes=need)
        TensorDesc(dt, sizes, strides, total_size_in_bytes=need + 4)
        with pytest.raises(DescError, match=r"TotalTensorSizeInBytes"):
            TensorDesc(dt, sizes, strides, total_size_in_bytes=need - 4)
