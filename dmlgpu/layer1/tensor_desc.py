"""DML_BUFFER_TENSOR_DESC and DMLCalcBufferTensorSize (tensor_desc.md)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .dtypes import DataType
from ..errors import DescError
from ..plans.index_map import U32, packed_strides

MAX_DIMENSIONS = 8
_UINT32_MAX = U32 - 1


@dataclass(frozen=True)
class TensorDesc:
    """A buffer tensor (DML_BUFFER_TENSOR_DESC): data type, sizes and strides in elements, buffer size in
    bytes. Every rule of tensor_desc.md is checked on construction.

    Parameters
    ----------
    data_type : DataType
    sizes : sequence of int
        1 to 8 dimensions.
    strides : sequence of int or None
        In elements; None: packed (row-major). Zero strides broadcast.
    total_size_in_bytes : int or None
        None: calc_buffer_size() (the bytes the strides reach, rounded up to 4).
    guaranteed_base_offset_alignment : int
    name : str
        The member name that messages use (an operator descriptor renames its tensors).

    Raises
    ------
    dmlgpu.DescError
        A rule broken; the message names the member, e.g. ``TensorDesc.Sizes``.

    Examples
    --------
    >>> from dmlgpu import DataType, TensorDesc
    >>> d = TensorDesc(DataType.FLOAT16, [1, 1, 2, 3])
    >>> d.element_strides, d.total_size_in_bytes
    ((6, 6, 3, 1), 12)
    >>> TensorDesc(DataType.FLOAT16, [1, 1, 2, 3], strides=[0, 0, 1, 2]).total_size_in_bytes   # permuted
    12
    """

    data_type: DataType
    sizes: tuple
    strides: tuple | None = None
    total_size_in_bytes: int | None = None
    guaranteed_base_offset_alignment: int = 0
    name: str = field(default="TensorDesc", compare=False)

    def __post_init__(self):
        n = self.name
        if not isinstance(self.data_type, DataType):
            raise DescError(f"{n}.DataType ({self.data_type!r}) must be a dmlgpu.DataType")
        sizes = tuple(_whole(s, f"{n}.Sizes") for s in self.sizes)
        object.__setattr__(self, "sizes", sizes)
        if not 1 <= len(sizes) <= MAX_DIMENSIONS:
            raise DescError(f"{n}.DimensionCount ({len(sizes)}) must be in [1, {MAX_DIMENSIONS}]")
        for i, s in enumerate(sizes):
            if not 1 <= s <= _UINT32_MAX:
                raise DescError(f"{n}.Sizes[{i}] ({s}) must be in [1, 2^32-1]: a size of zero is invalid")
        if self.strides is not None:
            strides = tuple(_whole(s, f"{n}.Strides") for s in self.strides)
            if len(strides) != len(sizes):
                raise DescError(f"{n}.Strides has {len(strides)} entries; it must have DimensionCount ({len(sizes)})")
            for i, s in enumerate(strides):
                if not 0 <= s <= _UINT32_MAX:
                    raise DescError(f"{n}.Strides[{i}] ({s}) must be in [0, 2^32-1]")
            object.__setattr__(self, "strides", strides)
        minimum = self.calc_buffer_size()
        if self.total_size_in_bytes is None:
            object.__setattr__(self, "total_size_in_bytes", minimum)
        else:
            total = _whole(self.total_size_in_bytes, f"{n}.TotalTensorSizeInBytes")
            object.__setattr__(self, "total_size_in_bytes", total)
            if total < minimum:
                raise DescError(f"{n}.TotalTensorSizeInBytes ({total}) must be at least "
                                f"DMLCalcBufferTensorSize ({minimum})")
            if total % 4:
                raise DescError(f"{n}.TotalTensorSizeInBytes ({total}) must be a multiple of 4")
        align = _whole(self.guaranteed_base_offset_alignment, f"{n}.GuaranteedBaseOffsetAlignment")
        if align and align & (align - 1):
            raise DescError(f"{n}.GuaranteedBaseOffsetAlignment ({align}) must be 0 or a power of two")

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The strides in elements (packed ones when Strides is absent)."""
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    def calc_buffer_size(self) -> int:
        """DMLCalcBufferTensorSize: the minimum buffer size in bytes, a multiple of 4."""
        last = sum((s - 1) * t for s, t in zip(self.sizes, self.element_strides))
        return ((last + 1) * self.data_type.size + 3) // 4 * 4

    def renamed(self, name: str) -> "TensorDesc":
        """The same descriptor, reporting errors as ``name`` (e.g. "InputTensor")."""
        if name == self.name:
            return self
        return TensorDesc(self.data_type, self.sizes, self.strides, self.total_size_in_bytes,
                          self.guaranteed_base_offset_alignment, name)


def _whole(value, member: str) -> int:
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise DescError(f"{member} ({value!r}) must be a whole number") from None
    if as_int != value or isinstance(value, bool):
        raise DescError(f"{member} ({value!r}) must be a whole number")
    return as_int
