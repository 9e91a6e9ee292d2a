"""DirectML data types, feature levels, and the data-type/dimension tables of the operator pages."""
from __future__ import annotations

import enum

import numpy as np


class DataType(enum.Enum):
    """DML_TENSOR_DATA_TYPE. ``size`` is the element size in bytes, ``numpy`` the matching NumPy dtype.

    Examples
    --------
    >>> from dmlgpu import DataType
    >>> DataType.FLOAT16.size, DataType.FLOAT16.numpy
    (2, dtype('float16'))
    """

    FLOAT32 = ("float32", 4)
    FLOAT16 = ("float16", 2)
    UINT32 = ("uint32", 4)
    UINT16 = ("uint16", 2)
    UINT8 = ("uint8", 1)
    INT32 = ("int32", 4)
    INT16 = ("int16", 2)
    INT8 = ("int8", 1)
    FLOAT64 = ("float64", 8)
    UINT64 = ("uint64", 8)
    INT64 = ("int64", 8)

    @property
    def size(self) -> int:
        return self.value[1]

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.value[0])

    @property
    def is_signed_integer(self) -> bool:
        return self in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)

    @classmethod
    def from_numpy(cls, dtype) -> "DataType":
        """The DataType of a NumPy dtype; ValueError for dtypes DirectML has no type for."""
        dtype = np.dtype(dtype)
        for member in cls:
            if member.numpy == dtype:
                return member
        raise ValueError(f"DirectML has no data type for NumPy dtype {dtype}")


class FeatureLevel(enum.Enum):
    """DML_FEATURE_LEVEL values that change what this operator family accepts (a Device's
    ``feature_level``).

    Examples
    --------
    >>> from dmlgpu import FeatureLevel
    >>> FeatureLevel.parse("3.0") is FeatureLevel.FL_3_0, str(FeatureLevel.FL_4_1)
    (True, '4.1')
    """

    FL_1_0 = (1, 0)
    FL_2_1 = (2, 1)
    FL_3_0 = (3, 0)
    FL_4_1 = (4, 1)

    def __str__(self) -> str:
        return f"{self.value[0]}.{self.value[1]}"

    @classmethod
    def parse(cls, level: "FeatureLevel | str | float | tuple[int, int]") -> "FeatureLevel":
        """The FeatureLevel of a FeatureLevel, "3.0", 3.0 or (3, 0); ValueError for an unknown one."""
        if isinstance(level, cls):
            return level
        if isinstance(level, (tuple, list)):
            key = tuple(int(x) for x in level)
        else:
            major, _, minor = str(level).partition(".")
            key = (int(major), int(minor or 0))
        for member in cls:
            if member.value == key:
                return member
        raise ValueError(f"unknown feature level {level!r}; known: {', '.join(str(m) for m in cls)}")


_F = DataType
_EIGHT = frozenset({_F.FLOAT32, _F.FLOAT16, _F.INT32, _F.INT16, _F.INT8, _F.UINT32, _F.UINT16, _F.UINT8})
_ELEVEN = _EIGHT | {_F.FLOAT64, _F.INT64, _F.UINT64}
_INDEX_ALL = frozenset({_F.INT64, _F.INT32, _F.UINT64, _F.UINT32})

OPERATOR_LEVELS = {
    "GATHER": FeatureLevel.FL_1_0,
    "GATHER_ELEMENTS": FeatureLevel.FL_2_1,
    "GATHER_ND": FeatureLevel.FL_2_1,
    "GATHER_ND1": FeatureLevel.FL_3_0,
    "SCATTER_ND": FeatureLevel.FL_2_1,
    "SCATTER_ELEMENTS": FeatureLevel.FL_2_1,
}


def data_types(operator: str, level: FeatureLevel) -> frozenset:
    """Data types the operator's data tensors (input, updates, output) support at this feature level."""
    if operator == "GATHER":
        if level == FeatureLevel.FL_1_0:
            return frozenset({_F.FLOAT32, _F.FLOAT16})
        if level == FeatureLevel.FL_4_1:
            return _ELEVEN
    return _EIGHT


def index_types(level: FeatureLevel) -> frozenset:
    """Index data types supported at this feature level."""
    return _INDEX_ALL if level.value >= (3, 0) else frozenset({_F.UINT32})


def dimension_counts(level: FeatureLevel) -> range:
    """Supported DimensionCounts: exactly 4 before 3.0, 1 to 8 from 3.0."""
    return range(1, 9) if level.value >= (3, 0) else range(4, 5)
