"""The CUDA driver API, as far as sharing device memory with CUDA on the same NVIDIA GPU needs it (DLPack's
kDLCUDA path: runtime/export.py), through ctypes and the library the clock hold loads (runtime/clocks.py).

A Vulkan allocation made exportable (kp patch 0026: an opaque file descriptor, VK_KHR_external_memory_fd) is
imported into CUDA once (``cuImportExternalMemory``, a dedicated allocation) and mapped as one device pointer
(``cuExternalMemoryGetMappedBuffer``), in the *primary context* of the CUDA device whose UUID is the Vulkan
device's (the context PyTorch, CuPy and JAX use). The context is retained on first use and kept for the
process. Every call runs with that context pushed on the calling thread and popped afterwards. Failures raise
CudaError with the driver's error name.
"""
from __future__ import annotations

import ctypes
import os
import threading

from . import clocks

OPAQUE_FD = 1                 # CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD
DEDICATED = 1                 # CUDA_EXTERNAL_MEMORY_DEDICATED

_lock = threading.Lock()
_contexts: dict[int, int] = {}        # CUDA ordinal -> its retained primary context


class CudaError(RuntimeError):
    """A CUDA driver call failed (or there is no usable CUDA driver)."""


class _Handle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("win32", ctypes.c_void_p * 2), ("nvSciBufObject", ctypes.c_void_p)]


class _MemoryHandleDesc(ctypes.Structure):        # CUDA_EXTERNAL_MEMORY_HANDLE_DESC
    _fields_ = [("type", ctypes.c_int), ("handle", _Handle), ("size", ctypes.c_ulonglong),
                ("flags", ctypes.c_uint), ("reserved", ctypes.c_uint * 16)]


class _BufferDesc(ctypes.Structure):              # CUDA_EXTERNAL_MEMORY_BUFFER_DESC
    _fields_ = [("offset", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong), ("flags", ctypes.c_uint),
                ("reserved", ctypes.c_uint * 16)]


def library() -> ctypes.CDLL:
    """libcuda, initialised; CudaError where there is none (the clock hold's loader)."""
    lib = clocks._library()
    if lib is None:
        raise CudaError(str(clocks._cuda_error))
    return lib


def ordinal(uuid: bytes) -> int | None:
    """The CUDA device ordinal whose UUID is ``uuid`` (a Vulkan device's), or None; CudaError without a driver."""
    return clocks._ordinal(library(), uuid) if len(uuid) == 16 else None


def _check(status: int, what: str) -> None:
    if status != 0:
        name = ctypes.c_char_p()
        try:
            clocks._cuda.cuGetErrorName(status, ctypes.byref(name))     # type: ignore[union-attr]
        except (AttributeError, OSError):
            pass
        raise CudaError(f"{what} failed: {name.value.decode() if name.value else status}")


class _Current:
    """``with _Current(ordinal):`` runs CUDA calls with the device's primary context pushed on this thread."""

    def __init__(self, ordinal_: int):
        self.lib = library()
        with _lock:
            ctx = _contexts.get(ordinal_)
            if ctx is None:
                handle = ctypes.c_void_p()
                _check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(handle), ctypes.c_int(ordinal_)),
                       "cuDevicePrimaryCtxRetain")
                ctx = _contexts[ordinal_] = handle.value or 0
        self.ctx = ctx

    def __enter__(self) -> ctypes.CDLL:
        _check(self.lib.cuCtxPushCurrent_v2(ctypes.c_void_p(self.ctx)), "cuCtxPushCurrent")
        return self.lib

    def __exit__(self, *exc: object) -> None:
        self.lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def import_memory(ordinal_: int, fd: int, allocation_size: int, nbytes: int) -> tuple[int, int]:
    """Imports the dedicated Vulkan allocation of file descriptor ``fd`` (``allocation_size`` bytes; CUDA takes
    the fd over, and closes it on failure here) into CUDA device ``ordinal_`` and maps its first ``nbytes``:
    (the external memory handle, the device pointer). release_memory() undoes it."""
    desc = _MemoryHandleDesc(type=OPAQUE_FD, size=allocation_size, flags=DEDICATED)
    desc.handle.fd = fd
    ext = ctypes.c_void_p()
    with _Current(ordinal_) as lib:
        try:
            _check(lib.cuImportExternalMemory(ctypes.byref(ext), ctypes.byref(desc)), "cuImportExternalMemory")
        except CudaError:
            os.close(fd)
            raise
        ptr = ctypes.c_ulonglong()
        buf = _BufferDesc(offset=0, size=nbytes, flags=0)
        status = lib.cuExternalMemoryGetMappedBuffer(ctypes.byref(ptr), ext, ctypes.byref(buf))
        if status != 0:
            lib.cuDestroyExternalMemory(ext)
            _check(status, "cuExternalMemoryGetMappedBuffer")
    return ext.value or 0, ptr.value


def release_memory(ordinal_: int, ext: int, ptr: int) -> None:
    """Unmaps and releases what import_memory() made (before the Vulkan memory is freed)."""
    with _Current(ordinal_) as lib:
        lib.cuMemFree_v2(ctypes.c_ulonglong(ptr))
        lib.cuDestroyExternalMemory(ctypes.c_void_p(ext))


def copy(ordinal_: int, dst: int, src: int, nbytes: int, stream: int = 0) -> None:
    """Copies ``nbytes`` from device pointer ``src`` to ``dst`` on CUDA stream ``stream`` (0: the legacy default
    stream) and waits for that stream."""
    with _Current(ordinal_) as lib:
        _check(lib.cuMemcpyDtoDAsync_v2(ctypes.c_ulonglong(dst), ctypes.c_ulonglong(src), ctypes.c_size_t(nbytes),
                                        ctypes.c_void_p(stream)), "cuMemcpyDtoDAsync")
        _check(lib.cuStreamSynchronize(ctypes.c_void_p(stream)), "cuStreamSynchronize")
