"""Host arrays from other libraries: what NumPy can view without a copy, and DLPack producers of element types
NumPy has no dtype for (bfloat16, the float8 types), viewed through their bits as ml_dtypes' types."""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

# DLPack's type codes (dlpack.h, DLDataTypeCode) that NumPy's from_dlpack refuses, by bits: the ml_dtypes name
ML_DTYPES = {(4, 16): "bfloat16", (7, 8): "float8_e3m4", (8, 8): "float8_e4m3", (9, 8): "float8_e4m3b11fnuz",
             (10, 8): "float8_e4m3fn", (11, 8): "float8_e4m3fnuz", (12, 8): "float8_e5m2", (13, 8): "float8_e5m2fnuz",
             (14, 8): "float8_e8m0fnu"}
_DL_UINT = 1


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):     # the first member of a (legacy, "dltensor") DLManagedTensor
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class MissingMlDtypes(TypeError):
    """A DLPack producer's element type needs ml_dtypes, which is not installed."""


class _Bits:
    """A DLPack producer of one capsule, whose element type has been rewritten to unsigned integers of the same
    size (what NumPy's from_dlpack takes)."""

    def __init__(self, capsule: Any, device: tuple[int, int]):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, **kwargs: Any) -> Any:
        if "max_version" in kwargs:          # NumPy asks for a versioned capsule first: this one is legacy
            raise TypeError("legacy capsule")
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def _bits_view(x: Any) -> np.ndarray | None:
    """``x``'s elements viewed through their bits as an ml_dtypes dtype, for a DLPack producer of one of the
    types in ML_DTYPES; None for any other type."""
    capsule = x.__dlpack__()
    tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    name = ML_DTYPES.get((tensor.dtype.code, tensor.dtype.bits))
    if name is None or tensor.dtype.lanes != 1:
        return None
    try:
        import ml_dtypes
    except ModuleNotFoundError as e:
        raise MissingMlDtypes(f"a {type(x).__name__} of {name} elements needs the ml_dtypes package for its NumPy "
                              f"dtype: pip install ml_dtypes") from e
    tensor.dtype.code = _DL_UINT
    bits: np.ndarray = np.from_dlpack(_Bits(capsule, x.__dlpack_device__()))
    dtype: np.dtype[Any] = np.dtype(getattr(ml_dtypes, name))
    return bits.view(dtype)


def host_array(x: Any) -> np.ndarray:
    """``x`` as a NumPy array, without a copy where NumPy can view it: an ndarray, a ``__dlpack__`` producer
    on the CPU (PyTorch, JAX, CuPy's host arrays...; bfloat16 and float8 ones through a view of their bits as
    ml_dtypes' types), ``__array__``, the buffer protocol; lists and scalars are converted. A DLPack producer
    on another device raises TypeError naming the fix."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        if hasattr(x, "__array__") and hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] not in (1, 3):
            return np.asarray(x)             # not on the CPU (kDLCPU, kDLCUDAHost): its own conversion (a dmlgpu
        try:                                 # Tensor's download), no capsule made for nothing
            return np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            try:
                bits = _bits_view(x)
            except MissingMlDtypes:
                raise
            except (BufferError, RuntimeError, TypeError, ValueError):
                bits = None
            if bits is not None:
                return bits
            if not hasattr(x, "__array__"):
                raise TypeError(f"NumPy cannot view a {type(x).__name__} through DLPack ({e}); pass an array on "
                                f"the CPU") from e
    return np.asarray(x)
