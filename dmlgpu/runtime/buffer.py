"""Device buffers (Buffer: raw bytes in one or several blocks of a device's caching allocator)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import DeviceError
from . import transfers
from .discovery import HOST_COHERENT, HOST_VISIBLE
from .memory import Block, Memory, Owner, size_class

CANARY = 0x5EEDCAFE      # pattern of the guard words (test mode)


def as_bytes(data) -> np.ndarray:
    """The raw bytes of an array or bytes-like object, as a flat uint8 array (a view where possible)."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


class _HostMemory:
    """Exposes mapped memory to NumPy while keeping its owner (a Buffer) alive: arrays made from it hold it."""

    def __init__(self, owner, view: np.ndarray, nbytes: int):
        self.owner = owner
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (view.ctypes.data, False),
                                    "version": 3}


class Buffer:
    """A device buffer of raw bytes; its size is a multiple of 4. Made by Device.buffer() (and by operations
    for their results), backed by a block of the device's caching allocator, which gets it back when the
    Buffer is collected. A buffer larger than one block (``Device.max_block``; ``chunk_bytes`` if given) is
    held in several blocks (``chunked``): block i holds bytes [i * Device.chunk_bytes, (i + 1) * chunk_bytes);
    its kernels address it through the blocks' device addresses, and transfers move each block's share.

    Test mode: with ``Device.canary_words`` > 0, every new buffer has that many extra guard words after
    its ``nbytes``, holding CANARY; ``canary_intact()`` downloads and checks them. Kernels see the guard
    words as part of the buffer, so a write past a tensor's end changes them and a read past it returns
    them (and shows up in results).

    Parameters
    ----------
    memory : Memory
        The device's part that buffers get (runtime/memory.py); ``device`` is its owner, the Device.
    nbytes : int
        A positive multiple of 4.
    whole : bool
        Held in one block whatever its size (up to ``Device.max_block``).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> buf = dmlgpu.default_device().buffer(np.array([1, 2, 3], np.uint16))   # 6 bytes, padded to 8
    >>> buf.nbytes, buf.read().view(np.uint16)
    (8, array([1, 2, 3, 0], dtype=uint16))
    >>> buf.write(np.array([9], np.uint32), offset=4); buf.read().view(np.uint16)
    array([1, 2, 9, 0], dtype=uint16)
    """

    _pending: np.ndarray | None = None   # bytes to upload by the next run that lists this buffer
    _mirror: Any = None                  # host-visible copy for recordings (_mirror_array())
    _mirror_host: np.ndarray | None = None
    _host: np.ndarray | None = None      # its mapped memory as an array (_host_copy())
    pinned = False                       # a recording uses it: Device.give_buffers leaves it alone
    canary_words = 0                     # guard words after its bytes (test mode: Device's canary)
    chunked = False                      # held in several blocks
    recipe: Any = None                   # parameter words: how a call template makes them again (plan.wide_params)
    error: BaseException | None = None   # a failed check reached the work that wrote it: reads raise this
    lineage: int | None = None           # the checks that reach it, a bit per report slot (Device.taint), of ...
    lineage_gen = 0                      # ... this report generation: its reads wait for their reports (None:
                                         # nothing reaches it and it has not failed)

    def __init__(self, memory: Memory, nbytes: int, whole: bool = False):
        if nbytes <= 0 or nbytes % 4:
            raise ValueError(f"a buffer's size ({nbytes} bytes) must be a positive multiple of 4")
        if nbytes > memory.check_above:
            memory.check_sizes(nbytes)
        self.memory = memory
        self.device: Owner = memory.owner
        self.nbytes = nbytes
        self.canary_words = canary = memory.canary_words
        with memory.lock:                 # the allocator's lists are shared by the device's threads
            self.block_list: list[Block] = memory.allocator.allocate_span(
                nbytes + 4 * canary, memory.chunk_bytes, None if whole else memory.whole_max)
        self._block = self.block_list[0]
        self._tensor = self._block.tensor
        self.chunked = len(self.block_list) > 1      # held in several blocks
        if canary:
            memory.io.fill_buffer(self, CANARY, nbytes, 4 * canary)

    @classmethod
    def _in_block(cls, memory: Memory, nbytes: int) -> "Buffer":
        """A Buffer of ``nbytes`` in one block, contents undefined, for a caller that holds the device's lock
        and knows that ``nbytes`` is a positive multiple of 4 that one block holds and that the device adds no
        guard words (a call template's results and scratch: their sizes were checked when it was traced)."""
        return cls._of_class(memory, nbytes, size_class(nbytes, memory.allocator.max_block))

    @classmethod
    def _of_class(cls, memory: Memory, nbytes: int, size: int) -> "Buffer":
        """``_in_block(memory, nbytes)`` for a caller that knows the block size serving ``nbytes``
        (memory.size_class)."""
        buf = cls.__new__(cls)
        buf.memory, buf.device, buf.nbytes = memory, memory.owner, nbytes     # (no guard words, one block: the defaults)
        block = memory.allocator.allocate_class(size, nbytes)
        buf.block_list, buf._block, buf._tensor = [block], block, block.tensor
        return buf

    def write(self, data, offset: int = 0) -> None:
        """Uploads raw bytes (any array or bytes-like object) at byte ``offset`` (a multiple of 4), after the
        queued work that uses the buffer. ValueError if they do not fit."""
        src = as_bytes(data)
        if offset < 0 or offset % 4 or offset + src.size > self.nbytes:
            raise ValueError(f"{src.size} bytes at offset {offset} do not fit a buffer of {self.nbytes} bytes "
                             f"(the offset must be a multiple of 4)")
        if src.size:
            self.memory.io.queue_write(self, offset, src)

    def read(self) -> np.ndarray:
        """Downloads the buffer, once the queued work that writes it has run: a new uint8 array of nbytes
        bytes. RuntimeError inside a recording; the failure of a device check that reached it (Device.taint),
        as Device.read_range raises it."""
        return self.memory.io.read_buffer(self)

    @property
    def block_count(self) -> int:
        """The blocks that hold it (1 unless ``chunked``); block i holds bytes [i * Device.chunk_bytes, ...)."""
        return len(self.block_list)

    @property
    def _tensors(self) -> list:
        """The kp buffers of its blocks."""
        return [b.tensor for b in self.block_list]

    @property
    def _mirrored(self) -> bool:
        """True when recorded uploads of its bytes stage them in its mirror, not in its own mapped memory."""
        return self._block.view is None or self.chunked

    def _pieces(self, offset: int, nbytes: int) -> list:
        """(block, byte offset in the block, byte offset from ``offset``, bytes) for each block that the byte
        range [offset, offset + nbytes) touches, in order."""
        if not self.chunked:
            return [(self._block, offset, 0, nbytes)] if nbytes else []
        chunk, out, pos, end = self.memory.chunk_bytes, [], offset, offset + nbytes
        while pos < end:
            i, at = divmod(pos, chunk)
            n = min(end - pos, chunk - at)
            out.append((self.block_list[i], at, pos - offset, n))
            pos += n
        return out

    def _host_copy(self) -> np.ndarray:
        """Where a recording stages the bytes of an operand it uploads (NumPy operands of recorded calls:
        Recording._append): on unified memory (direct_memory) the device buffer itself, mapped, unless it is
        chunked; elsewhere its mirror (_mirror_array())."""
        if self._mirrored:
            return self._mirror_array()
        self.memory.io.sync_buffer(self)          # queued work may still use it
        if self._host is None:
            view = self._block.view
            assert view is not None
            self._host = np.asarray(_HostMemory(self, view, self.nbytes))
        return self._host

    def _mirror_array(self) -> np.ndarray:
        """The buffer's mirror: a separate host-visible buffer of its size (made on first use, kept while the
        Buffer lives), as uint8[nbytes]. A recording's uploads copy from it and its downloads into it
        (Recording.host, its public face); nothing else reaches it, on every memory type. DeviceError when a
        host copy that large cannot be allocated at once."""
        if self._mirror_host is None:
            size = sum(b.size for b in self.block_list)
            info = self.memory.info
            if size > info.max_memory_allocation_size:
                raise DeviceError(f"a host copy of {size} bytes exceeds {info.name}'s "
                                  f"maxMemoryAllocationSize ({info.max_memory_allocation_size} "
                                  f"bytes): use Tensor.numpy() and write() for this tensor")
            mirror = self.memory.mgr.buffer(size, transfers.download_memory_flags(info))
            self._mirror = mirror
            view = mirror.host_view()
            assert view is not None
            self._mirror_host = np.asarray(_HostMemory(self, view, self.nbytes))
        return self._mirror_host

    def canary_intact(self) -> bool:
        """Test mode: downloads the buffer and checks its guard words (True when there are none)."""
        if not self.canary_words:
            return True
        words = self.memory.io.read_range(self, self.nbytes, 4 * self.canary_words).view(np.uint32)
        return bool((words == CANARY).all())

    def stage(self, src: np.ndarray) -> None:
        """Keeps ``src`` (flat uint8, not copied: it must not change before the run) to be uploaded by the
        next run that lists this buffer among its uploads."""
        self._pending = src

    def _release(self) -> None:
        """Gives the blocks back to the allocator now (the Buffer must not be used afterwards)."""
        blocks = self.__dict__.pop("block_list", None)
        if blocks is not None:
            for block in blocks:
                self.memory.allocator.free(block)

    __del__ = _release          # a collected Buffer's block goes back (allocator.free is safe from any thread)

    def __repr__(self) -> str:
        held = f" in {len(self.block_list)} blocks" if self.chunked else ""
        return f"<dmlgpu.Buffer {self.nbytes} bytes{held} on {self.memory.info.name}>"


def _block_ids(bufs) -> tuple:
    return tuple(id(block) for b in bufs for block in b.block_list)


class OwnBuffer(Buffer):
    """A Buffer whose blocks are Vulkan buffers of its own, not the caching allocator's (MappedBuffer; a host
    array's imported pages: runtime/host.py's HostBuffer). Releasing it drops what refers to its blocks and
    destroys them, under the device's lock (the runs that used them have completed)."""

    def _release(self) -> None:
        blocks = self.__dict__.pop("block_list", None)
        if blocks is None:
            return
        memory = self.memory
        with memory.lock:
            for block in blocks:
                if not memory.closed:
                    memory.io.forget(block)
                block.tensor.destroy()

    __del__ = _release


class MappedBuffer(OwnBuffer):
    """A Buffer in host-visible memory of its own, read by the host without a transfer on every device: what
    kernels write for the host to read (the device's check reports: Device.watch)."""

    def __init__(self, memory: Memory, nbytes: int):
        self.memory, self.device, self.nbytes, self.canary_words, self.chunked = memory, memory.owner, nbytes, 0, False
        tensor = memory.mgr.buffer(nbytes, HOST_VISIBLE | HOST_COHERENT)
        self.block_list = [Block(tensor, nbytes, True)]
        self._block, self._tensor = self.block_list[0], tensor
