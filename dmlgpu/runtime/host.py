"""Host arrays that kernels read and write where they are: their pages imported as device memory
(VK_EXT_external_memory_host, kp patch 0023) and held as a Buffer of one or several blocks, like any other.

``importable(device, array)`` says whether an array can be so imported; ``import_array(device, array, cache=)``
makes the HostBuffer (None where the driver refuses it); ``release(buf)`` lets it go. The device reads and
writes the caller's own bytes: the runtime never writes a buffer that a kernel only reads, and a HostBuffer is
never given to the caching allocator, nor filled, nor given guard words.

Lifetime: a HostBuffer holds a reference to its array, so the memory stays alive while any Vulkan object over it
does. ``release()`` destroys its buffers at once (after the runs that use them have completed: the callers'
runs are synchronous). With ``cache=True`` the import is kept for the array's owner (the NumPy array whose
memory it is, or its base) while that owner lives, and found again by the next call on the same bytes (an
import pins the pages on discrete GPUs, which costs time); it then holds no reference to the array, and is
released when the owner is collected (weakref.finalize, before NumPy frees the memory) or when the owner's data
moved (``ndarray.resize``).

Results written in place (``result_array``) live in host memory of dmlgpu's own, imported once and pooled per
device like the caching allocator's blocks: a result array, once collected, gives its buffer to the next result of
its size class (up to POOL_BYTES of free ones; ``release_results`` lets them go).

Where an array's pages cannot be imported (the device lacks the extension, or a profile withholds the
``externalMemoryHost`` feature; the array is not C-contiguous, not 16-byte aligned or not a multiple of 4 bytes;
the driver refuses the pointer), callers upload a copy as before.
"""
from __future__ import annotations

import collections
import weakref
from typing import Any, Protocol

import numpy as np

from .buffer import OwnBuffer
from .memory import Block, Memory, size_class


class Owner(Protocol):
    """What these functions take: a device (runtime/device.py's Device), through the part its buffers get."""

    @property
    def memory(self) -> Memory: ...

FEATURE = "externalMemoryHost"       # kp patch 0023's name of VK_EXT_external_memory_host in Device.features
ALIGNMENT = 16                       # the widest unit kernels load (uvec4): an array must start at such a byte
CACHE = 8                            # imports kept per device (cache=True), by owner, the least recently used dropped
POOL_BYTES = 256 << 20               # free result buffers kept per device (result_array), bytes at most


def available(device: Owner) -> bool:
    """True when ``device`` can import host memory (the feature is enabled on it)."""
    info = device.memory.info
    return FEATURE in info.features and info.min_imported_host_pointer_alignment > 0


def importable(device: Owner, array: Any) -> bool:
    """True when ``array``'s bytes can be imported in place: a C-contiguous NumPy array, 16-byte aligned, of a
    positive multiple of 4 bytes, on a device that can import host memory (the driver may still refuse it:
    import_array() then returns None)."""
    return (isinstance(array, np.ndarray) and available(device) and array.flags.c_contiguous and
            array.nbytes > 0 and array.nbytes % 4 == 0 and array.ctypes.data % ALIGNMENT == 0)


class HostBuffer(OwnBuffer):
    """A Buffer over a host array's own bytes (import_array()). Block i holds bytes [i * Device.chunk_bytes,
    (i + 1) * chunk_bytes) of the array, as for any Buffer; ``array`` is the flat uint8 view it was made from
    (None once released, or for a cached import, which holds no reference to its owner)."""

    array: np.ndarray | None
    cached = False

    def _release(self) -> None:
        """OwnBuffer's; the imported memory is freed with the last of its Vulkan buffers (kp patch 0023)."""
        super()._release()
        self.array = None

    __del__ = _release


def _make(memory: Memory, flat: np.ndarray) -> HostBuffer | None:
    """The HostBuffer over ``flat`` (a C-contiguous uint8 array; importable()), imported in as few allocations
    as maxMemoryAllocationSize allows (each a whole number of blocks; where the driver refuses that, one per
    block); None where the driver refuses it."""
    nbytes = flat.size
    chunk = memory.chunk_bytes if nbytes > memory.whole_max else nbytes
    align = memory.info.min_imported_host_pointer_alignment
    per_import = max(1, (memory.info.max_memory_allocation_size - 2 * align) // chunk) * chunk \
        if memory.info.max_memory_allocation_size else nbytes
    address = flat.ctypes.data
    tensors: list = []
    for per in dict.fromkeys((per_import, chunk)):
        try:
            for at in range(0, nbytes, per):
                tensors += memory.mgr.import_host_buffers(address + at, min(per, nbytes - at), chunk)
            break
        except RuntimeError as e:
            for t in tensors:
                t.destroy()
            tensors = []
            vars(memory)["host_refused"] = str(e)
    if not tensors:
        return None
    buf = HostBuffer.__new__(HostBuffer)
    buf.memory, buf.device, buf.nbytes, buf.canary_words = memory, memory.owner, nbytes, 0
    buf.block_list = [Block(t, 4 * t.size(), False) for t in tensors]     # (kp sizes are 32-bit words)
    buf._block, buf._tensor = buf.block_list[0], tensors[0]
    buf.chunked = len(tensors) > 1
    buf.array = flat
    return buf


def _owner(array: np.ndarray) -> Any:
    """The object whose memory ``array`` views: the last ndarray down its chain of bases."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def import_array(device: Owner, array: np.ndarray, cache: bool = False) -> HostBuffer | None:
    """A HostBuffer over ``array``'s bytes (importable(device, array) must hold), or None where the driver
    refuses them. ``cache``: keep the import while the array's owner lives and its data stays where it is,
    and reuse it for the same bytes (the module's docstring); the caller must then not release() it."""
    flat = array.reshape(-1).view(np.uint8)
    memory = device.memory
    if not cache:
        with memory.lock:                         # (kp's manager is shared by the device's threads)
            return _make(memory, flat)
    owner = _owner(array)
    key = (id(owner), flat.ctypes.data, flat.size)
    imports: dict = vars(memory).setdefault("host_imports", {})
    with memory.lock:
        entry = imports.pop(key, None)
        if entry is not None and entry[1]() is owner and owner.ctypes.data == entry[2]:
            imports[key] = entry                  # most recently used last
            return entry[0]
        if entry is not None:
            _drop(entry)
        buf = _make(memory, flat)
        if buf is None:
            return None
        try:
            ref = weakref.ref(owner)
        except TypeError:                         # an owner without weak references: not cached
            return buf
        buf.cached, buf.array = True, None
        entry = (buf, ref, owner.ctypes.data, weakref.finalize(owner, _forget_import, weakref.ref(memory), key))
        while len(imports) >= CACHE:
            _drop(imports.pop(next(iter(imports))))
        imports[key] = entry
        return buf


def _drop(entry: tuple) -> None:
    entry[3].detach()
    entry[0]._release()


def _forget_import(memory_ref: Any, key: tuple) -> None:
    """The owner of a cached import is being collected (before its memory is freed): the import goes now."""
    memory = memory_ref()
    entry = None if memory is None else vars(memory).get("host_imports", {}).pop(key, None)
    if entry is not None:
        entry[0]._release()


def refusal(device: Owner) -> str | None:
    """The driver's reason for the last import it refused on ``device`` (None: none refused)."""
    return vars(device.memory).get("host_refused")


def release(buf: HostBuffer) -> None:
    """Lets an uncached import go now (after the runs that use it have completed); a cached one stays."""
    if not buf.cached:
        buf._release()


def release_all(device: Owner) -> None:
    """Releases every cached import of ``device`` and its free result buffers (before it closes)."""
    imports = vars(device.memory).get("host_imports", {})
    while imports:
        _drop(imports.pop(next(iter(imports))))
    release_results(device)


class _Lease:
    """The memory of a result array (result_array()): NumPy arrays made from it hold it, and when the last of
    them goes, its HostBuffer goes back to the device's pool of free result buffers."""

    def __init__(self, pool: "_Pool", buf: HostBuffer, nbytes: int):
        self.pool, self.buf = pool, buf
        assert buf.array is not None
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (buf.array.ctypes.data, False),
                                    "version": 3}

    def __del__(self) -> None:
        self.pool.returned.append(self.buf)        # (any thread: drained under the device's lock)


class _Pool:
    """A device's free result buffers (imported host memory of our own), by size class."""

    def __init__(self) -> None:
        self.free: dict = collections.defaultdict(list)
        self.bytes = 0
        self.returned: collections.deque = collections.deque()

    def drain(self) -> None:
        while self.returned:
            buf = self.returned.popleft()
            if "block_list" not in buf.__dict__:
                continue                            # released meanwhile (the device closed)
            if self.bytes + buf.nbytes > POOL_BYTES:
                buf._release()
                continue
            self.free[buf.nbytes].append(buf)
            self.bytes += buf.nbytes


def result_array(device: Owner, shape: tuple, dtype: np.dtype) -> tuple[np.ndarray, HostBuffer] | None:
    """(a new array of ``shape`` and ``dtype``, contents undefined, and the HostBuffer over its memory) for a
    result that the kernels write in place, or None where the driver refuses the import. The memory is host
    memory of dmlgpu's own, imported once and pooled, like the caching allocator's blocks: when the array (and
    every view of it) is collected its buffer serves the next result of its size class, so that repeated calls
    import nothing (up to POOL_BYTES of free buffers are kept per device; release_results() lets them go). The
    HostBuffer spans the size class; the array views its first bytes."""
    nbytes = max(4, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    size = -(-size_class(nbytes, 1 << 62) // 16) * 16
    memory = device.memory
    with memory.lock:
        pool: _Pool = vars(memory).setdefault("host_results", _Pool())
        pool.drain()
        free = pool.free.get(size)
        if free:
            buf = free.pop()
            pool.bytes -= size
        else:
            raw = np.empty(size + 64, np.uint8)
            at = -raw.ctypes.data % 64
            made = _make(memory, raw[at:at + size])      # (64-byte aligned: any device's buffer offsets)
            if made is None:
                return None
            buf = made
    lease = _Lease(pool, buf, nbytes)
    array = np.asarray(lease)[:int(np.prod(shape)) * np.dtype(dtype).itemsize].view(dtype).reshape(shape)
    return array, buf


def release_results(device: Owner) -> None:
    """Releases ``device``'s free result buffers (those in use go when their arrays do)."""
    pool = vars(device.memory).get("host_results")
    if pool is None:
        return
    with device.memory.lock:
        pool.drain()
        for bufs in pool.free.values():
            for buf in bufs:
                buf._release()
        pool.free.clear()
        pool.bytes = 0
