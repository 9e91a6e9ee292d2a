"""A caching allocator of device memory, in the spirit of PyTorch's CUDA caching allocator.

Every buffer dmlgpu makes is a *block*: one Vulkan buffer (a kp buffer without a host array) whose size is a
size class at least as large as the request. Freed blocks are kept and handed out again for requests of
the same class, so steady-state operations allocate nothing (and reuse the descriptor sets bound to their
blocks). Classes: powers of two from 256 bytes to 1 MiB, then 8 classes per doubling (at most 12.5 % over
the request), never above the largest block (the device's maxStorageBufferRange, maxMemoryAllocationSize and
maxBufferSize). A buffer larger than that is a *span* of blocks (``allocate_span``): chunks of a power-of-two
size and a last block holding the rest, addressed by the large-tensor kernels through device addresses.

When an allocation fails (the driver is out of memory, or the device's ``memory_limit`` would be passed),
the allocator releases every cached block and tries once more, then raises DeviceError naming the size
asked for and what is in use. Blocks are returned from any thread (a collected Buffer's finalizer) through
a queue that the allocator drains under the device's lock.
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Protocol

from ..errors import DeviceError

SMALL = 1 << 20        # classes up to here are powers of two
MIN_CLASS = 256


class Block:
    """One device buffer: ``tensor`` (the kp buffer), ``size`` (its class, bytes), ``view`` (a uint8 NumPy
    view of its mapped memory, or None when it is not host-visible), ``batch`` (the number of the device's
    batch of queued runs that last used it: runtime/device.py), ``cuda`` (its mapping into CUDA, made once:
    runtime/export.py; None without one)."""

    __slots__ = ("tensor", "size", "view", "batch", "_address", "cuda")

    def __init__(self, tensor, size: int, mapped: bool):
        self.tensor = tensor
        self.size = size
        self.view = tensor.host_view() if mapped else None
        self.batch = 0
        self._address: int | None = None
        self.cuda: tuple[int, int, int] | None = None      # (CUDA ordinal, external memory, device pointer)

    @property
    def address(self) -> int:
        """The buffer's device address (devices with bufferDeviceAddress: kp patch 0015)."""
        if self._address is None:
            self._address = self.tensor.device_address()
        return self._address


def size_class(nbytes: int, limit: int) -> int:
    """The block size serving a request of ``nbytes`` (at most ``limit``, which is then the size itself)."""
    if nbytes <= SMALL:
        size = max(MIN_CLASS, 1 << (nbytes - 1).bit_length())
    else:
        step = 1 << (nbytes.bit_length() - 4)      # 8 classes per doubling
        size = -(-nbytes // step) * step
    return size if size <= limit else -(-nbytes // 4) * 4


class Allocator:
    """Blocks of one device. ``create(size)`` makes a kp buffer of ``size`` bytes (RuntimeError when the
    driver cannot); ``release(block)`` is called before a cached block is destroyed (to drop what refers to
    it); ``limit``: the most bytes of blocks (in use and cached) at once, or None."""

    def __init__(self, create, release, max_block: int, limit: int | None, mapped: bool):
        self._create = create
        self._release = release
        self.max_block = max_block
        self.limit = limit
        self.mapped = mapped
        self._free: dict[int, list[Block]] = {}
        self._returned: collections.deque = collections.deque()   # freed from any thread, drained later
        # the counters of memory_stats(), as attributes (a template hit's allocation updates three of them)
        self.allocated_bytes = self.cached_bytes = self.peak_allocated_bytes = 0
        self.device_allocations = self.cache_hits = self.cache_releases = 0

    def allocate(self, nbytes: int) -> Block:
        """A block of at least ``nbytes`` bytes (contents undefined)."""
        return self.allocate_class(size_class(max(4, nbytes), self.max_block), nbytes)

    def allocate_class(self, size: int, nbytes: int = 0) -> Block:
        """A block of the size class ``size`` (size_class()'s answer for a request of ``nbytes``, which errors
        name), contents undefined."""
        returned = self._returned
        if returned:
            if len(returned) == 1 and returned[0].size == size:      # (a loop's last result: taken again)
                self.cache_hits += 1                                # (still counted as allocated)
                return returned.popleft()
            self._drain()
        free = self._free.get(size)
        if free:
            block = free.pop()
            self.cached_bytes -= size
            self.cache_hits += 1
        else:
            block = self._new_block(size, nbytes or size)
        allocated = self.allocated_bytes = self.allocated_bytes + size
        if allocated > self.peak_allocated_bytes:
            self.peak_allocated_bytes = allocated
        return block

    def allocate_span(self, nbytes: int, chunk: int, whole: int | None = None) -> list[Block]:
        """Blocks holding ``nbytes`` bytes (contents undefined): one block when ``nbytes`` is at most ``whole``
        (default: the largest block), else blocks of ``chunk`` bytes (a power of two, at most the largest
        block) and a last one of the rest. DeviceError when the device cannot hold them all (none is kept)."""
        if nbytes <= (self.max_block if whole is None else whole):
            return [self.allocate(nbytes)]
        assert chunk & (chunk - 1) == 0 and chunk <= self.max_block
        sizes = [chunk] * (nbytes // chunk) + ([nbytes % chunk] if nbytes % chunk else [])
        blocks: list[Block] = []
        try:
            for size in sizes:
                blocks.append(self.allocate(size))
        except DeviceError as exc:
            for block in blocks:
                self.free(block)
            raise DeviceError(f"out of device memory: a buffer of {nbytes} bytes, held in {len(sizes)} blocks of at "
                              f"most {chunk} bytes, could not be allocated ({len(blocks)} were): {exc}") from None
        return blocks

    def free(self, block: Block) -> None:
        """Takes a block back into the cache (safe from any thread, at any time)."""
        self._returned.append(block)

    def empty_cache(self) -> None:
        """Destroys every cached block (blocks in use stay)."""
        self._drain()
        for size, blocks in self._free.items():
            for block in blocks:
                self._destroy(block)
            self.cached_bytes -= size * len(blocks)
            blocks.clear()

    def unmap_cached(self, unmap) -> None:
        """Calls ``unmap(block)`` for every cached block that has a CUDA mapping (the device is closing; blocks in
        use keep their mappings: another library may still hold them)."""
        self._drain()
        for blocks in self._free.values():
            for block in blocks:
                if block.cuda is not None:
                    unmap(block)

    def memory_stats(self) -> dict:
        self._drain()
        return dict(allocated_bytes=self.allocated_bytes, cached_bytes=self.cached_bytes,
                    peak_allocated_bytes=self.peak_allocated_bytes, device_allocations=self.device_allocations,
                    cache_hits=self.cache_hits, cache_releases=self.cache_releases,
                    reserved_bytes=self.allocated_bytes + self.cached_bytes)

    # ---- internal ----
    def _drain(self) -> None:
        while self._returned:
            block = self._returned.popleft()
            self._free.setdefault(block.size, []).append(block)
            self.allocated_bytes -= block.size
            self.cached_bytes += block.size

    def _new_block(self, size: int, nbytes: int) -> Block:
        for attempt in (0, 1):
            reserved = self.allocated_bytes + self.cached_bytes
            try:
                if self.limit is not None and reserved + size > self.limit:
                    raise RuntimeError(f"the device's memory_limit ({self.limit} bytes) would be exceeded")
                block = Block(self._create(size), size, self.mapped)
                self.device_allocations += 1
                return block
            except RuntimeError as exc:
                if attempt == 0 and self.cached_bytes:
                    self.empty_cache()       # free the cached blocks, then try once more
                    continue
                raise DeviceError(
                    f"out of device memory: a buffer of {nbytes} bytes (a block of {size}) could not be allocated "
                    f"({exc}); in use: {self.allocated_bytes} bytes in live buffers, {self.cached_bytes} cached, "
                    f"peak {self.peak_allocated_bytes}. Free Tensors you no longer need (del, or let them go out "
                    f"of scope) or split the operation") from None
        raise AssertionError("unreachable")

    def _destroy(self, block: Block) -> None:
        self._release(block)
        block.view = None
        block.tensor.destroy()
        self.cache_releases += 1


class Owner(Protocol):
    """The Device as its buffers name it (Buffer.device; runtime/device.py)."""

    @property
    def info(self) -> Any: ...
    @property
    def physical_info(self) -> Any: ...
    @property
    def exportable(self) -> bool: ...


class BufferIO(Protocol):
    """What a device does for its buffers beyond allocating them (the Device: runtime/device.py)."""

    def fill_buffer(self, buf: Any, word: int, offset: int, nbytes: int) -> None: ...
    def queue_write(self, buf: Any, offset: int, src: Any) -> None: ...
    def read_buffer(self, buf: Any) -> Any: ...
    def read_range(self, buf: Any, offset: int, nbytes: int) -> Any: ...
    def sync_buffer(self, buf: Any) -> None: ...
    def settle(self, buf: Any) -> None: ...
    def forget(self, block: Block) -> None: ...


class Memory:
    """The part of a device that its buffers get (runtime/buffer.py, runtime/host.py): its kp manager ``mgr``,
    DeviceInfo ``info``, ``lock``, caching ``allocator``, the block geometry (``chunk_bytes``, ``whole_max``:
    Device's), the guard words of test mode (``canary_words``), ``owner`` (the Device, as Buffer.device names
    it) and ``io`` (what the device does for its buffers: BufferIO). ``check_above``: buffers up to this size
    fit (their size is not checked)."""

    def __init__(self, owner: Owner, mgr: Any, info: Any, lock: threading.RLock, allocator: Allocator,
                 chunk_bytes: int, whole_max: int, memory_limit: int | None, canary_words: int) -> None:
        self.owner, self.mgr, self.info, self.lock = owner, mgr, info, lock
        self.io: BufferIO      # (set by the device once its parts are made: runtime/access.py's Access)
        self.allocator = allocator
        self.chunk_bytes, self.whole_max, self.memory_limit = chunk_bytes, whole_max, memory_limit
        self.canary_words = canary_words
        self.check_above = min(whole_max, self.capacity)
        self.closed = False

    def check_open(self) -> None:
        """DeviceError if the device is closed."""
        if self.closed:
            raise DeviceError(f"device {self.info.index} ({self.info.name}) is closed")

    @property
    def capacity(self) -> int:
        """Device.memory_capacity."""
        heap = self.info.device_memory
        return heap if self.memory_limit is None else min(heap, self.memory_limit)

    def check_sizes(self, *nbytes: int) -> None:
        """Device.check_sizes."""
        total, capacity = sum(nbytes), self.capacity
        if total > capacity:
            what = f"a tensor of {total} bytes exceeds" if len(nbytes) == 1 else \
                f"tensors of {' + '.join(map(str, nbytes))} = {total} bytes exceed"
            raise DeviceError(f"{what} this device's memory ({capacity} bytes, {self.info.name}"
                              f"{', its memory_limit' if capacity == self.memory_limit else ''}); "
                              f"split the operation into smaller ones")
