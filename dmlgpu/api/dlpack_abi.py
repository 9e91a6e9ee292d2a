"""DLPack's C ABI for dmlgpu/api/dlpack.py: its device and type codes, the structures (DLTensor, DLManagedTensor and
the versioned one), the capsules made over them with the deleter that consumers call (what each keeps alive, and
the sweeps that let go of capsules dropped unconsumed), and the dtype conversions both ways."""
from __future__ import annotations

import ctypes
import gc
import math
import sys
from typing import Any

import numpy as np

from .interop import ML_DTYPES

# DLDeviceType
CPU, CUDA, CUDA_HOST, OPENCL, VULKAN, METAL, VPI, ROCM, ROCM_HOST, EXT_DEV, CUDA_MANAGED, ONE_API = \
    1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14
DEVICE_NAMES = {CPU: "kDLCPU", CUDA: "kDLCUDA", CUDA_HOST: "kDLCUDAHost", OPENCL: "kDLOpenCL", VULKAN: "kDLVulkan",
                METAL: "kDLMetal", VPI: "kDLVPI", ROCM: "kDLROCM", ROCM_HOST: "kDLROCMHost", EXT_DEV: "kDLExtDev",
                CUDA_MANAGED: "kDLCUDAManaged", ONE_API: "kDLOneAPI"}
# DLDataTypeCode
INT, UINT, FLOAT, BFLOAT, COMPLEX, BOOL = 0, 1, 2, 4, 5, 6
VERSION = (1, 1)                 # the DLPack version of the capsules made (1.0 for consumers that ask for it)
IS_COPIED = 2                    # DLPACK_FLAG_BITMASK_IS_COPIED
_ML_CODES = {name: code for (code, _bits), name in ML_DTYPES.items()}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),     # int64_t*
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_PY_DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):             # "dltensor" (legacy)
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):    # "dltensor_versioned"
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


# the Python C API, through prototypes of our own (interop.py sets argtypes on ctypes.pythonapi's shared ones)
_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _api))

# capsule names: module constants, so that the char* each capsule holds stays valid
NAME, USED = b"dltensor", b"used_dltensor"
NAME_VERSIONED, USED_VERSIONED = b"dltensor_versioned", b"used_dltensor_versioned"

class _Export:
    """What a managed tensor made here keeps alive until its deleter runs, and its capsule while no consumer has
    taken it (``capsule``; None once taken)."""

    __slots__ = ("managed", "shape", "strides", "keep", "capsule")

    def __init__(self, managed: Any, shape: Any, strides: Any, keep: Any):
        self.managed, self.shape, self.strides, self.keep = managed, shape, strides, keep
        self.capsule: Any = None


_live: dict[int, _Export] = {}      # address of a DLManagedTensor(Versioned) made here -> what it keeps alive
_unclaimed: dict[int, _Export] = {}  # those whose capsules no sweep has found consumed yet


@_DELETER
def _deleter(address: int | None) -> None:
    """The deleter of the managed tensors made here, which the consumer calls (any thread; ctypes takes the GIL):
    lets go of what it holds."""
    if address is not None:
        _live.pop(address, None)


def _sweep() -> None:
    """Lets go of the managed tensors whose capsules were dropped unconsumed, and forgets the capsules that were
    consumed (their consumers call the deleter).

    The capsules have no destructor: a consumer that fails drops the capsule while its exception is being raised,
    and a destructor written in Python (ctypes) could not keep that exception. So the capsules are held here until
    a sweep finds them consumed (renamed "used_...") or held by nothing else; sweeps run at each export and after
    each garbage collection (gc.callbacks)."""
    for address, ex in list(_unclaimed.items()):
        capsule = ex.capsule
        if not (_is_valid(capsule, NAME_VERSIONED) or _is_valid(capsule, NAME)):
            ex.capsule = None                      # consumed: the consumer's deleter lets it go
            del _unclaimed[address]
        elif sys.getrefcount(capsule) <= 3:        # (ex.capsule, this name, getrefcount's argument)
            del capsule
            del _unclaimed[address]
            _live.pop(address, None)


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and _unclaimed:
        _sweep()


gc.callbacks.append(_after_collection)


def dl_dtype(dtype: np.dtype[Any], who: str) -> tuple[int, int]:
    """(DLPack type code, bits) of ``dtype``; BufferError naming it where DLPack has no code for it."""
    found = _CODES.get(dtype)
    if found is None:
        found = _CODES[dtype] = _dl_dtype(dtype, who)
    return found


_CODES: dict[np.dtype[Any], tuple[int, int]] = {}


def _dl_dtype(dtype: np.dtype[Any], who: str) -> tuple[int, int]:
    code = _ML_CODES.get(dtype.name)
    if code is not None and dtype.itemsize == 1 + (code == BFLOAT):      # ml_dtypes.bfloat16, float8_*
        return code, dtype.itemsize * 8
    if dtype.isnative and not dtype.fields and not dtype.subdtype:
        if dtype.kind == "b":
            return BOOL, 8
        if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
            return (INT if dtype.kind == "i" else UINT), dtype.itemsize * 8
        if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
            return FLOAT, dtype.itemsize * 8
        if dtype.kind == "c" and dtype.itemsize in (8, 16):
            return COMPLEX, dtype.itemsize * 8
    raise BufferError(f"{who}: DLPack has no type code for dtype {dtype} (it has bool, integers, float16/32/64, "
                      f"complex64/128, bfloat16 and the float8 types, in native byte order): cast the Tensor first "
                      f"(astype)")


def numpy_dtype(code: int, bits: int, lanes: int, who: str) -> np.dtype[Any]:
    """The NumPy dtype of a DLPack type (ml_dtypes' for bfloat16 and float8); BufferError where there is none."""
    kinds = {INT: "i", UINT: "u", FLOAT: "f", COMPLEX: "c"}
    if lanes == 1:
        if code == BOOL and bits == 8:
            return np.dtype(np.bool_)
        if code in kinds and bits % 8 == 0:
            try:
                return np.dtype(f"{kinds[code]}{bits // 8}")
            except TypeError:
                pass
        name = ML_DTYPES.get((code, bits))
        if name is not None:
            try:
                import ml_dtypes
            except ModuleNotFoundError:
                raise BufferError(f"{who}: {name} elements need the ml_dtypes package for their NumPy dtype: pip "
                                  f"install ml_dtypes") from None
            return np.dtype(getattr(ml_dtypes, name))
    raise BufferError(f"{who}: DLPack type code {code} of {bits} bits and {lanes} lanes has no dtype dmlgpu holds")


def _capsule(data: int, device: tuple[int, int], shape: tuple[int, ...], strides: tuple[int, ...] | None,
             dtype: tuple[int, int], keep: Any, max_version: Any, flags: int = 0) -> Any:
    """A new capsule of a DLManagedTensor (legacy, ``max_version`` None or below 1) or DLManagedTensorVersioned
    over ``data`` (an address on ``device``), ``shape``, ``strides`` (elements; None: row-major, written out) and
    ``dtype`` ((code, bits)), which holds ``keep`` until its deleter runs."""
    versioned = max_version is not None and int(max_version[0]) >= 1
    ndim = len(shape)
    c_shape = (ctypes.c_int64 * max(1, ndim))(*shape)
    if strides is None:                  # (given always: DLPack 1.2 deprecates NULL strides)
        strides = tuple(math.prod(shape[i + 1:]) for i in range(ndim))
    c_strides = (ctypes.c_int64 * max(1, ndim))(*strides)
    managed: Any = _DLManagedTensorVersioned() if versioned else _DLManagedTensor()
    t = managed.dl_tensor
    t.data = data
    t.device = _DLDevice(*device)
    t.ndim = ndim
    t.dtype = _DLDataType(dtype[0], dtype[1], 1)
    t.shape = ctypes.addressof(c_shape)
    t.strides = ctypes.addressof(c_strides)
    t.byte_offset = 0
    managed.deleter = _deleter
    if versioned:
        minor = VERSION[1] if tuple(int(v) for v in max_version[:2]) >= VERSION else 0
        managed.version = _DLPackVersion(1, minor)
        managed.flags = flags
    _sweep()
    address = ctypes.addressof(managed)
    ex = _live[address] = _Export(managed, c_shape, c_strides, keep)
    try:
        ex.capsule = _capsule_new(address, NAME_VERSIONED if versioned else NAME, None)
    except BaseException:
        _live.pop(address, None)
        raise
    _unclaimed[address] = ex
    return ex.capsule
