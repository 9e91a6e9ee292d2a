"""A Device's memory for the runs (its mixin Scratch): the size checks before any GPU work, scratch buffers,
kernel parameter buffers shared by equal words, the WIDE variants' block lists, and zeroed scratch (a scatter's
claim words)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DeviceError
from .buffer import Buffer

if TYPE_CHECKING:
    from .discovery import DeviceInfo

_PARAMS_CACHE = 256      # parameter buffers kept per device


class Scratch:
    """Device's scratch, parameter and zeroed buffers, and the checks of what it can hold."""

    if TYPE_CHECKING:       # the Device's, which these methods use
        closed: bool
        _param_buffers: dict
        whole_max: int
        _zeroed: dict
        _zeroed_clean: bool
        chunk_bytes: int
        info: DeviceInfo
        memory_limit: int | None
        zeroed_serial: int

        def check_open(self) -> Any: ...
        def fill_buffer(self, buf: Buffer, word: int, offset: int, nbytes: int) -> None: ...

    @property
    def memory_capacity(self) -> int:
        """The most bytes of buffers this Device can hold at once: its memory_limit, else the device's largest
        device-local memory heap."""
        heap = self.info.device_memory
        return heap if self.memory_limit is None else min(heap, self.memory_limit)

    def check_sizes(self, *nbytes: int) -> None:
        """DeviceError, before any GPU work, if buffers of these sizes (one operation's) cannot be held by the
        device together."""
        total, capacity = sum(nbytes), self.memory_capacity
        if total > capacity:
            what = f"a tensor of {total} bytes exceeds" if len(nbytes) == 1 else \
                f"tensors of {' + '.join(map(str, nbytes))} = {total} bytes exceed"
            raise DeviceError(f"{what} this device's memory ({capacity} bytes, {self.info.name}"
                              f"{', its memory_limit' if capacity == self.memory_limit else ''}); "
                              f"split the operation into smaller ones")


    def take_buffer(self, nbytes: int) -> Buffer:
        """A buffer of at least ``nbytes`` whose contents are undefined."""
        if self.closed:
            self.check_open()
        return Buffer(self, max(4, (nbytes + 3) & ~3))   # type: ignore[arg-type]  # self: the Device

    def give_buffers(self, *bufs: Buffer) -> None:
        """Returns _take()n buffers to the allocator now (those a recording uses stay until it goes)."""
        for buf in bufs:
            if not buf.pinned:
                buf._release()

    def params(self, words: np.ndarray) -> tuple[Buffer, bool]:
        """(a buffer holding these kernel parameter words, True if it is new: its words are staged and it
        must be listed among the uploads of the run that uses it). Buffers are shared by equal words, so
        repeated operations reuse their algorithms."""
        key = words.tobytes()
        buf = self._param_buffers.pop(key, None)
        fresh = buf is None
        if fresh:
            if len(self._param_buffers) >= _PARAMS_CACHE:
                self._param_buffers.pop(next(iter(self._param_buffers)))
            buf = Buffer(self, words.nbytes, whole=True)    # type: ignore[arg-type]  # bound whole at binding 0
            buf.stage(np.frombuffer(key, dtype=np.uint8))
        self._param_buffers[key] = buf            # most recently used last
        return buf, fresh

    def block_table(self, slots, base: int) -> np.ndarray:
        """The block lists of the WIDE kernel variants (shaders/index_map.glsl's P_BLOCKS) for the buffers in
        ``slots`` (None: absent), to be placed at word ``base`` of their parameter words: per slot, the log2 of
        its block size in bytes (63: one block) and the word where its blocks' addresses start; then the
        addresses (uint64)."""
        head: list[int] = []
        addresses: list[int] = []
        start = base + 2 * len(slots)
        for buf in slots:
            blocks = buf.block_list if buf is not None else []
            head += [self.chunk_bytes.bit_length() - 1 if len(blocks) > 1 else 63, start + len(addresses)]
            addresses += [b.address for b in blocks] or [0]
        return np.array(head + addresses, dtype=np.uint64)

    def zeroed_buffer(self, key: str) -> Buffer | None:
        """The zeroed scratch kept for ``key`` (zeroed()), or None where none was made."""
        return self._zeroed.get(key)

    @property
    def zeroed_clean(self) -> bool:
        """False after a run that used zeroed scratch failed (the next zeroed() request renews it)."""
        return self._zeroed_clean

    def zeroed(self, key: str, nbytes: int, beside: tuple = ()) -> Buffer:
        """Zeroed scratch: a buffer of at least ``nbytes`` (a multiple of 4), all zeros, kept for ``key`` and
        shared by the runs that ask for it. The kernels that use it must leave it all zeros again (a scatter's
        claim words: dmlgpu/plans/plan.py), or at least the part they rely on being zero where they write the rest
        before reading it (the radix sort's totals: shaders/radix.glsl); after a run that used zeroed scratch fails, the next request gets a new,
        zeroed one. It grows by powers of two up to one block (chunked past it). DeviceError, before any GPU
        work, if the device cannot hold it beside the operation's tensors ``beside`` (bytes)."""
        buf = self._zeroed.get(key)
        if buf is None or buf.nbytes < nbytes or not self._zeroed_clean:
            self.check_sizes(*beside, nbytes)
            size = max(nbytes, 4096, 0 if buf is None else buf.nbytes)
            size = 1 << (size - 1).bit_length()        # powers of two up to one block, then what is asked
            if size > self.whole_max:
                size = nbytes
            if not self._zeroed_clean:
                self._zeroed.clear()
                self._zeroed_clean = True
            self._zeroed.pop(key, None)
            buf = self._zeroed[key] = Buffer(self, size)   # type: ignore[arg-type]
            self.zeroed_serial += 1
            self.fill_buffer(buf, 0, 0, buf.nbytes)
        return buf
