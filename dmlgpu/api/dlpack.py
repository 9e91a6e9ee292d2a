"""DLPack both ways: ``Tensor.__dlpack__`` / ``__dlpack_device__`` (the array API standard's protocol) and
``dmlgpu.from_dlpack``; the capsules are built and read with ctypes (dlpack.h's structs, versions 0.8 and 1.x).

Producer (``Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)``): a capsule named
"dltensor_versioned" (a DLManagedTensorVersioned, version 1.1, or 1.0 where the consumer's ``max_version`` is
(1, 0)) when ``max_version`` is at least (1, 0), else a legacy "dltensor" (a DLManagedTensor). Where the Tensor's
bytes are (runtime/export.py):

* host memory mapped in this process, in one range (unified memory, lavapipe's and integrated GPUs', when
  ``Device.direct_memory``; a Tensor made by from_dlpack over a host array): a ``kDLCPU`` view at the Tensor's
  offset and strides (in elements), so ``np.from_dlpack(t)`` shares its memory;
* device memory that CUDA on the same NVIDIA GPU maps (a Device with ``exportable`` memory, kp patch 0026, and a
  CUDA device of the same UUID): a ``kDLCUDA`` view, its block imported into CUDA once and kept mapped, so
  ``torch.from_dlpack(t)``, ``cupy.from_dlpack(t)`` and ``jax.dlpack.from_dlpack(t)`` share it;
* elsewhere (``kDLVulkan``: device memory that no other API here can map; a Tensor held in several blocks) no
  view can be made: BufferError saying why, unless a copy is allowed (``copy=True``, or ``dl_device=(1, 0)``
  with ``copy=None``): then a host copy (``kDLCPU``, flagged DLPACK_FLAG_BITMASK_IS_COPIED). ``copy=True`` on a
  kDLCUDA Tensor copies it on the device into new exportable memory.

Ordering: the queued work that uses the Tensor is submitted and waited for before the capsule is returned (a
host synchronisation: every consumer stream then sees it finished; ``stream`` is accepted and needs nothing
more). Exporting a timeline semaphore for the consumer's stream to wait on, instead of the host, is not done
(a follow-up). Work queued on the Tensor *after* the export is seen by the consumer after
``Device.synchronize()`` (or any host read of the Tensor); what the consumer writes is seen by dmlgpu's later
calls once the consumer's own work has finished (synchronise its stream first: ``torch.cuda.synchronize()``).

Lifetime: the capsule holds the Tensor (so its buffer) until the consumer's deleter runs; a capsule consumed
twice is refused by the consumer (its name is changed when consumed); a capsule dropped unconsumed lets the Tensor
go at the next garbage collection or export (``_sweep``: the capsules have no destructor, so that a consumer's
exception raised while it drops the capsule is kept).

Element types by DLPack's codes: bool (kDLBool), signed and unsigned integers (kDLInt, kDLUInt), float16/32/64
(kDLFloat), complex64/128 (kDLComplex), ml_dtypes' bfloat16 (kDLBfloat) and float8 types (DLPack 1.1's codes,
dmlgpu/api/interop.py's table). Other dtypes (records, strings, datetimes, long double, non-native byte order)
raise BufferError naming the dtype.

Consumer (``from_dlpack``): CPU producers (kDLCPU, kDLCUDAHost) are read where they are when the device can
import host memory (VK_EXT_external_memory_host, as NumPy tables are: runtime/host.py), else uploaded once;
CUDA producers on the GPU of the Device (kDLCUDA, kDLCUDAManaged; same UUID) become a new Tensor by one
device-to-device copy (cuMemcpyDtoDAsync on the legacy default stream, which the producer's stream is made to
wait for through the protocol's ``stream=1``, then cuStreamSynchronize: no host trip); other devices raise
BufferError naming the producer's device. AMD's HIP path (hipImportExternalMemory) is not done.
"""
from __future__ import annotations

import ctypes
import math
import sys
from typing import Any, Protocol

import numpy as np

from ..errors import DeviceError
from ..runtime import export, host
from ..runtime.cuda import CudaError
from . import tensor_protocols
from .device import as_runtime
from .interop import host_array
from .tensor import DeviceLike, Tensor, _upload
from .tensor_index import device_dtype
from .tensor_index import packed
from .dlpack_abi import (CPU, CUDA, CUDA_HOST, CUDA_MANAGED, DEVICE_NAMES, IS_COPIED, NAME, NAME_VERSIONED, USED,
                         USED_VERSIONED, VERSION, VULKAN, _DLManagedTensor, _DLManagedTensorVersioned, _PY_DELETER,
                         _capsule, _is_valid, _pointer, _set_name, dl_dtype, numpy_dtype)


class SupportsDLPack(Protocol):
    """An object that DLPack's consumers take: ``__dlpack__`` (returns a PyCapsule) and ``__dlpack_device__``."""

    def __dlpack__(self, *, stream: Any = None) -> Any: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...


# ---- the producer ----
def _home(t: Tensor) -> tuple[int, int, str]:
    """(DLPack device type, id, why no view can be made: "" where one can) of the Tensor's bytes."""
    buf = t.buffer
    dev = t._rt
    mapped = export.host_address(buf) is not None
    if mapped and (dev.info.unified_memory or isinstance(buf, host.HostBuffer)):
        return CPU, 0, ""
    why = export.cuda_exportable(buf)
    if why is None:
        return CUDA, export.cuda_state(dev)[0] or 0, ""
    if mapped:
        return CPU, 0, ""
    if dev.info.unified_memory and not dev.direct_memory:
        why = f"{dev.info.name}'s Device does not map its buffers (direct_memory is off: DMLGPU_DIRECT_MEMORY=0)"
    elif buf.chunked and dev.direct_memory:
        why = f"the Tensor is held in {buf.block_count} blocks, which are not one range of host memory"
    else:
        why = f"{dev.info.name}'s memory is not mapped by the host, and CUDA cannot map it: {why}"
    return VULKAN, dev.info.index, why


def dlpack_device(t: Tensor) -> tuple[int, int]:
    """``Tensor.__dlpack_device__()``: (kDLCPU, 0), (kDLCUDA, CUDA ordinal) or (kDLVulkan, device index)."""
    kind, index, _ = _home(t)
    return kind, index


def dlpack(t: Tensor, stream: Any = None, max_version: Any = None, dl_device: Any = None,
           copy: bool | None = None) -> Any:
    """``Tensor.__dlpack__``: the capsule (the module's docstring says which)."""
    who = "Tensor.__dlpack__"
    if stream is not None and not isinstance(stream, int):
        raise TypeError(f"{who}: stream must be an int or None, not {type(stream).__name__}")
    if copy not in (None, True, False):
        raise ValueError(f"{who}: copy must be True, False or None, not {copy!r}")
    t._no_recording("__dlpack__")
    dtype = dl_dtype(t.dtype, who)
    kind, index, why = _home(t)
    target = kind
    if dl_device is not None:
        want = (int(dl_device[0]), int(dl_device[1]))
        if want[0] == CPU:
            target = CPU
        elif want != (kind, index) or kind != CUDA:
            raise BufferError(f"{who}: dl_device {want} ({_device_name(*want)}) is not where this Tensor can be "
                              f"handed: it is on {_device_name(kind, index)}; dmlgpu hands views on its own device "
                              f"and host copies (dl_device=(1, 0))")
    if target == CUDA:
        src = t.copy() if copy else t
        ordinal, ptr = export.cuda_pointer(src.buffer)
        export.settle(src.buffer)
        return _capsule(ptr + src.offset, (CUDA, ordinal), src.shape, src._strides, dtype, src, max_version,
                        IS_COPIED if copy else 0)
    if target == CPU and kind == CPU and not copy:
        address, owner = export.host_address(t.buffer) or (0, None)
        export.settle(t.buffer)
        return _capsule(address + t.offset, (CPU, 0), t.shape, t._strides, dtype, (t, owner), max_version)
    # a host copy: asked for (copy=True), or allowed (copy=None with dl_device kDLCPU)
    if not (copy or copy is None and dl_device is not None):
        raise BufferError(f"{who}: no view of this Tensor can be made ({why or 'copy=False'}); copy=True (or "
                          f"dl_device=(1, 0)) hands a host copy, as t.numpy() makes one")
    arr = t.numpy()
    return _capsule(arr.ctypes.data, (CPU, 0), arr.shape, None, dtype, arr, max_version, IS_COPIED)


# ---- the consumer ----
def _device_name(kind: int, index: int) -> str:
    return f"{DEVICE_NAMES.get(kind, f'DLPack device type {kind}')} {index}"


def from_dlpack(x: SupportsDLPack, *, device: DeviceLike = None, copy: bool | None = None) -> Tensor:
    """A Tensor of a DLPack producer's data (the array API's ``from_dlpack``): NumPy arrays, PyTorch, CuPy and JAX
    arrays, dmlgpu Tensors, anything with ``__dlpack__`` and ``__dlpack_device__``.

    Parameters
    ----------
    x : object with ``__dlpack__``
        On the CPU (kDLCPU, kDLCUDAHost), or on the CUDA device that is the Device's GPU (kDLCUDA,
        kDLCUDAManaged: the same UUID).
    device : dmlgpu.Device, int or None
        Default: a Tensor's own device, else the default device.
    copy : bool or None
        None (default): share the producer's memory where the device can (writable host memory that the device
        imports in place: VK_EXT_external_memory_host, ``"externalMemoryHost" in dev.features``), else copy it once (an
        upload, or one device-to-device copy for CUDA producers). True: always a new Tensor of dmlgpu's own.
        False: share or raise. (On a discrete GPU, kernels read host memory shared in place over PCIe: for a
        Tensor used many times, copy=True uploads it once.)

    Returns
    -------
    Tensor
        Of the producer's shape and dtype (bfloat16 and float8 as ml_dtypes' types). Sharing host memory, writes
        through either side are seen by the other once the writer's queued work has finished
        (``Device.synchronize()``); the Tensor keeps the producer's memory alive.

    Raises
    ------
    TypeError
        ``x`` has no ``__dlpack__``.
    BufferError
        A producer on a device dmlgpu cannot reach (its device is named), ``copy=False`` where the memory cannot
        be shared (the reason is named), or a dtype dmlgpu cannot hold.
    dmlgpu.DeviceError
        No such device, or not enough device memory.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> a = np.arange(8, dtype=np.float32)
    >>> t = dmlgpu.from_dlpack(a)             # in place where the device imports host memory
    >>> dmlgpu.take(t, dmlgpu.tensor(np.array([7, 0], np.int32))).numpy()
    array([7., 0.], dtype=float32)
    >>> dmlgpu.from_dlpack(a, copy=True).numpy()[:3]
    array([0., 1., 2.], dtype=float32)
    """
    who = "from_dlpack"
    if copy not in (None, True, False):
        raise ValueError(f"{who}: copy must be True, False or None, not {copy!r}")
    if isinstance(x, Tensor):
        dev = x._rt if device is None else as_runtime(device, who)
        if dev is x._rt and not copy:
            return x
        if copy is False:
            raise BufferError(f"{who}: copy=False, but the Tensor is on another device ({x.device.info.name})")
        try:
            return x.copy() if dev is x._rt else x.to(dev.user)
        except DeviceError as e:
            raise DeviceError(f"{who}: {e}") from None
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{who}: a {type(x).__name__} is no DLPack producer (it has no __dlpack__); pass a NumPy "
                        f"array, a PyTorch/CuPy/JAX array or a Tensor, or use dmlgpu.tensor(x)")
    kind, index = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (CPU, 0)
    dev = as_runtime(device, who)
    if kind in (CPU, CUDA_HOST):
        return _from_host(x, dev, copy)
    if kind in (CUDA, CUDA_MANAGED):
        return _from_cuda(x, dev, copy, (int(kind), int(index)))
    raise BufferError(f"{who}: a {type(x).__name__} on {_device_name(kind, index)}, which dmlgpu cannot reach: "
                      f"it takes CPU producers and CUDA ones on the Device's GPU; move it to the CPU first")


def _from_host(x: Any, dev: Any, copy: bool | None) -> Tensor:
    """from_dlpack of a producer on the CPU: in place where the device imports its pages, else uploaded."""
    arr = host_array(x)
    device_dtype(arr.dtype, "from_dlpack")
    if copy is not True:             # (read-only memory is not shared: dmlgpu's calls may write a Tensor)
        buf = host.import_array(dev, arr) if arr.flags.writeable and host.importable(dev, arr) else None
        if buf is not None:
            return Tensor(buf, arr.shape, arr.dtype)
        if copy is False:
            raise BufferError(f"from_dlpack: copy=False, but {dev.info.name} cannot read this {type(x).__name__}'s "
                              f"memory in place: {_import_problem(dev, arr)}")
    try:
        return _upload(arr, dev)
    except DeviceError as e:
        raise DeviceError(f"from_dlpack: {e}") from None


def _import_problem(dev: Any, arr: np.ndarray) -> str:
    """Why host.import_array() did not take ``arr``."""
    if not arr.flags.writeable:
        return "it is read-only, and a Tensor may be written"
    if not host.available(dev):
        return "the device cannot import host memory (VK_EXT_external_memory_host, the feature 'externalMemoryHost')"
    if not arr.flags.c_contiguous:
        return "it is not C-contiguous"
    if arr.nbytes == 0 or arr.nbytes % 4:
        return f"its size ({arr.nbytes} bytes) is not a positive multiple of 4 bytes"
    if arr.ctypes.data % host.ALIGNMENT:
        return f"it does not start at a multiple of {host.ALIGNMENT} bytes"
    return f"the driver refused its pages ({host.refusal(dev)})"


def _take_capsule(x: Any) -> tuple[Any, Any, bool]:
    """(capsule, its managed tensor struct, versioned) from a producer asked for a capsule for CUDA's legacy
    default stream (1); the capsule is marked consumed (renamed), and its deleter is the caller's to run."""
    try:
        capsule = x.__dlpack__(stream=1, max_version=VERSION)
    except TypeError:                    # a producer of the legacy protocol
        capsule = x.__dlpack__(stream=1)
    for name, used, struct in ((NAME_VERSIONED, USED_VERSIONED, _DLManagedTensorVersioned),
                               (NAME, USED, _DLManagedTensor)):
        if _is_valid(capsule, name):
            managed = struct.from_address(_pointer(capsule, name))
            _set_name(capsule, used)
            return capsule, managed, struct is _DLManagedTensorVersioned
    raise BufferError(f"from_dlpack: the {type(x).__name__}'s __dlpack__ returned no unused DLPack capsule")


def _from_cuda(x: Any, dev: Any, copy: bool | None, where: tuple[int, int]) -> Tensor:
    """from_dlpack of a producer on a CUDA device: one device-to-device copy into a new Tensor of ``dev``."""
    who = "from_dlpack"
    ordinal, why = export.cuda_state(dev)
    if ordinal != where[1]:
        raise BufferError(f"{who}: a {type(x).__name__} on {_device_name(*where)}, which is not {dev.info.name} "
                          f"({why or f'that GPU is CUDA device {ordinal}'}); pass device= the dmlgpu Device of that "
                          f"GPU, or move the data there")
    if copy is False:
        raise BufferError(f"{who}: copy=False, but Vulkan cannot use a CUDA allocation in place: copy=None makes "
                          f"one device-to-device copy")
    capsule, managed, versioned = _take_capsule(x)
    try:
        dl = managed.dl_tensor
        if (dl.device.device_type, dl.device.device_id) != where:
            raise BufferError(f"{who}: the capsule is on {_device_name(dl.device.device_type, dl.device.device_id)}, "
                              f"not on {_device_name(*where)} as __dlpack_device__ said")
        dtype = numpy_dtype(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes, who)
        shape = tuple((ctypes.c_int64 * dl.ndim).from_address(dl.shape)) if dl.ndim else ()
        strides = tuple((ctypes.c_int64 * dl.ndim).from_address(dl.strides)) if dl.strides and dl.ndim else \
            (() if dl.strides else None)
        src = (dl.data or 0) + dl.byte_offset
        size = dtype.itemsize
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides)) if strides and math.prod(shape) else 0
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) if strides and math.prod(shape) else \
            math.prod(shape) - 1
        span = max(0, hi - lo + 1) if math.prod(shape) else 0
        try:
            whole = Tensor._wrap(dev.take_buffer(span * size), (span,), dtype)
        except DeviceError as e:
            raise DeviceError(f"{who}: {e}") from None
        problem = export.cuda_exportable(whole.buffer)
        if problem is not None:
            raise BufferError(f"{who}: the new Tensor cannot be written by CUDA: {problem}")
        if span:
            try:
                export.copy_from_cuda(whole.buffer, 0, src + lo * size, span * size)
            except CudaError as e:
                raise BufferError(f"{who}: copying the {type(x).__name__} failed: {e}") from None
        if strides is None or span == math.prod(shape) and lo == 0 and packed(shape, strides):
            return whole.reshape(shape) if shape != (span,) else whole
        out: Tensor = whole._view(shape, dtype, -lo * size, strides)
        return out
    finally:
        if managed.deleter:          # (called holding the GIL: a deleter may take it, as NumPy's does)
            ctypes.cast(managed.deleter, _PY_DELETER)(ctypes.addressof(managed))
        del capsule


tensor_protocols.DLPACK = sys.modules[__name__]
