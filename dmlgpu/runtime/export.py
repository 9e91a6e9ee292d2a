"""A buffer's memory handed to other libraries in place (DLPack: dmlgpu/api/dlpack.py), and bytes copied in from
CUDA device memory.

Where a buffer's bytes are: ``host_address(buf)`` gives the host address of its byte 0 where they are host memory
mapped in this process, in one range (a buffer of one mapped block: unified memory, or ``direct_memory``; a host
array's imported pages: runtime/host.py); ``cuda_pointer(buf)`` the CUDA device pointer of its byte 0 where the
device shares memory with CUDA (``cuda_state(device)``: an NVIDIA GPU whose Device allocates exportable memory,
kp patch 0026, and a CUDA driver with a device of the same UUID): its block is imported into CUDA on first use
(runtime/cuda.py) and stays mapped while the block lives, in use or cached by the allocator; ``unmap(block)``
releases the mapping before the block is destroyed (Device does this).

Ordering: ``settle(buf)`` submits and waits for the queued work that uses the buffer (and makes the device's
pending check reports), so that what another library reads afterwards is what that work wrote; a host
synchronisation, not a semaphore (exporting Vulkan timeline semaphores to CUDA streams is not done).
``copy_from_cuda`` waits for its CUDA stream before returning, so dmlgpu's later work sees the bytes.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from . import clocks, cuda
from .buffer import OwnBuffer
from .host import HostBuffer
from .memory import Owner

if TYPE_CHECKING:
    from .buffer import Buffer
    from .discovery import DeviceInfo
    from .memory import Block

FEATURE = "externalMemoryFd"       # kp patch 0026's name of VK_KHR_external_memory_fd in Device.features


def settle(buf: "Buffer") -> None:
    """Submits the queued work that uses ``buf`` and waits for it, after making the device's pending check
    reports (raising their exception, or the one that marked ``buf``, as a host read does)."""
    buf.memory.io.settle(buf)


def host_address(buf: "Buffer") -> tuple[int, Any] | None:
    """(the host address of ``buf``'s byte 0, an object that keeps that memory alive) where its bytes are host
    memory mapped in this process in one range; else None (device memory, or a buffer in several mapped blocks)."""
    owner: Any = buf
    if isinstance(buf, HostBuffer):
        owner = buf.array
        if owner is None:                        # (released)
            return None
    at = buf.__dict__.get("_host_at")
    if at is None:
        if owner is not buf:
            at = owner.ctypes.data
        else:
            at = buf._block.view.ctypes.data if not buf.chunked and buf._block.view is not None else 0
        buf.__dict__["_host_at"] = at            # (a Buffer's blocks and their mapping never change)
    return (at, owner) if at else None


def cuda_state(device: Owner) -> tuple[int | None, str]:
    """(the CUDA device ordinal that shares memory with ``device``, or None; the reason where None), found once
    per Device."""
    state = device.__dict__.get("_cuda_state")
    if state is None:
        if not device.exportable:
            state = (None, f"{device.info.name}'s Device does not allocate exportable memory (it needs "
                           f"VK_KHR_external_memory_fd, the feature {FEATURE!r}, and Device(exportable=True), the "
                           f"default on NVIDIA GPUs)")
        else:
            try:
                found = cuda.ordinal(device.physical_info.device_uuid)
            except cuda.CudaError as e:
                state = (None, f"no CUDA device shares {device.info.name}'s memory: {e}")
            else:
                state = (found, "") if found is not None else \
                    (None, f"no CUDA device has the UUID of {device.info.name}")
        device.__dict__["_cuda_state"] = state
    return state


def cuda_exportable(buf: "Buffer") -> str | None:
    """None where cuda_pointer(buf) can map ``buf``'s memory into CUDA; else why not."""
    ordinal, why = cuda_state(buf.device)
    if ordinal is None:
        return why
    if isinstance(buf, OwnBuffer):
        return "its memory is not the device's exportable memory (imported host memory, or a mapped buffer of its own)"
    if buf.chunked:
        return f"it is held in {len(buf.block_list)} blocks, which CUDA does not see as one range"
    return None


def cuda_pointer(buf: "Buffer") -> tuple[int, int]:
    """(the CUDA device ordinal, the device pointer of ``buf``'s byte 0) for a buffer that cuda_exportable()
    accepts, its block mapped into CUDA once (cuda.CudaError where the driver refuses)."""
    ordinal = cuda_state(buf.device)[0]
    assert ordinal is not None
    block = buf._block
    with buf.memory.lock:
        if block.cuda is None:
            fd = block.tensor.memory_fd()
            ext, ptr = cuda.import_memory(ordinal, fd, block.tensor.allocation_size(), block.size)
            block.cuda = (ordinal, ext, ptr)
        return ordinal, block.cuda[2]


def unmap(block: "Block") -> None:
    """Releases ``block``'s CUDA mapping, if it has one (before the block is destroyed)."""
    if block.cuda is not None:
        ordinal, ext, ptr = block.cuda
        block.cuda = None
        cuda.release_memory(ordinal, ext, ptr)


def copy_from_cuda(buf: "Buffer", offset: int, src: int, nbytes: int) -> None:
    """Copies ``nbytes`` from CUDA device pointer ``src`` into ``buf`` at byte ``offset`` (a buffer that
    cuda_exportable() accepts), on the CUDA device's legacy default stream, after dmlgpu's queued work that uses
    ``buf``; returns once the copy is done."""
    ordinal, ptr = cuda_pointer(buf)
    settle(buf)
    cuda.copy(ordinal, ptr + offset, src, nbytes)


def direct_memory_default(info: "DeviceInfo") -> bool:
    """Whether a Device of ``info`` opened without ``direct_memory`` maps its buffers: DMLGPU_DIRECT_MEMORY (0 or
    1) if set, else on unified memory."""
    env = os.environ.get("DMLGPU_DIRECT_MEMORY", "")
    return info.unified_memory if env == "" else env != "0"


def exportable_default(info: "DeviceInfo") -> bool:
    """Whether a Device of ``info`` opened without ``exportable`` allocates exportable memory: DMLGPU_EXPORTABLE
    (0 or 1) if set, else on NVIDIA GPUs; only where the device has the feature."""
    env = os.environ.get("DMLGPU_EXPORTABLE", "")
    wanted = info.vendor_id == clocks.NVIDIA if env == "" else env != "0"
    return wanted and FEATURE in info.features


def describe(info: "DeviceInfo") -> str:
    """``python -m dmlgpu info``'s DLPack line for a device as a Device opened with the defaults has it: what
    Tensor.__dlpack__ hands ("kDLCPU zero-copy", "kDLCUDA export", or "host copies only") and what from_dlpack
    takes in place."""
    ordinal: int | None = None
    if exportable_default(info):
        try:
            ordinal = cuda.ordinal(info.device_uuid)
        except cuda.CudaError:
            ordinal = None
    if direct_memory_default(info) and info.unified_memory:
        out = "kDLCPU zero-copy (np.from_dlpack(t) shares memory)"
    elif ordinal is not None:
        out = f"kDLCUDA export (CUDA device {ordinal}: torch/cupy/jax.from_dlpack(t) share memory)"
    else:
        out = "host copies only (np.from_dlpack(t, copy=True))"
    cpu = "read in place" if "externalMemoryHost" in info.features and info.min_imported_host_pointer_alignment \
        else "uploaded"
    cuda_in = f"CUDA device {ordinal}'s by one device copy" if ordinal is not None else "no CUDA producers"
    return f"DLPack: {out}; from_dlpack: CPU producers {cpu}, {cuda_in}"
