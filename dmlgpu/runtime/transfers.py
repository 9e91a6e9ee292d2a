"""Moving bytes between host arrays and device buffers.

* Unified memory (a CPU device such as lavapipe, an integrated GPU: ``DeviceInfo.unified_memory``): device
  buffers are mapped, and the host reads and writes them directly: one copy, no staging.
* Otherwise, bytes stream through reusable staging buffers in host-visible memory (for downloads,
  host-cached memory where the device has it): ``CHUNK`` bytes at a time, two chunks in flight, so the
  host's copy of one chunk overlaps the device's copy of the other; one host copy between the caller's
  array and staging, no other. Large host copies are split over a few threads (NumPy releases the GIL).
  Small transfers instead join the submission of the operation itself (``Submitter.run``: runtime/submit.py).

Ordering: every device-side copy is preceded by a barrier on the device buffer (earlier shader and transfer
writes, and reads, finish first) and a download's copy is followed by a barrier that makes the staging
memory visible to the host before the fence is waited on.
"""
from __future__ import annotations

import concurrent.futures
import itertools
import os
from typing import Callable

import numpy as np

from .discovery import HOST_CACHED, HOST_COHERENT, HOST_VISIBLE
from .encode import BEFORE_COPY, BEFORE_DISPATCH, BEFORE_HOST_READ, barrier, copy_region  # noqa: F401 (barriers)

CHUNK = 32 << 20            # bytes of one staging buffer
_PARALLEL_MIN = 8 << 20     # host copies at least this large are split over threads
_THREADS = max(1, min(8, (os.cpu_count() or 1) // 2))

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_serials = itertools.count()


def host_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[:] = src for flat uint8 arrays of one size; large copies on several threads."""
    global _pool
    n = dst.size
    if n < _PARALLEL_MIN or _THREADS == 1:
        np.copyto(dst, src)
        return
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(_THREADS, thread_name_prefix="dmlgpu-copy")
    step = -(-n // _THREADS + 4095) // 4096 * 4096
    list(_pool.map(lambda a: np.copyto(dst[a:a + step], src[a:a + step]), range(0, n, step)))


def download_memory_flags(info) -> int:
    """Host-visible memory for downloads: host-cached where the device has it (uncached reads are slow)."""
    cached = HOST_VISIBLE | HOST_COHERENT | HOST_CACHED
    return cached if info.has_memory(cached) else HOST_VISIBLE | HOST_COHERENT


class Slot:
    """A staging buffer of ``size`` bytes and a Sequence that copies through it; ``busy`` while that copy may
    run. ``serial`` tells it apart from every other slot made in the process (recorded runs name it)."""

    def __init__(self, mgr, flags: int, size: int):
        self.serial = next(_serials)
        self.size = size
        self.tensor = mgr.buffer(size, flags)
        self.view = self.tensor.host_view()
        self.seq = mgr.sequence()
        self.busy = False
        self.pending: tuple[np.ndarray, int] | None = None   # a download's (destination array slice, bytes) to copy out once done

    def wait(self) -> None:
        if self.busy:
            self.seq.eval_await()
            self.busy = False
            if self.pending is not None:
                dst, n = self.pending
                host_copy(dst, self.view[:n])
                self.pending = None


class Staging:
    """The staging buffers of one device: two for uploads, two for downloads, each made on first use as
    large as needed (a power of two from 64 KiB to CHUNK) and replaced by a larger one when needed."""

    def __init__(self, mgr, info):
        self._mgr = mgr
        self._flags = {"up": HOST_VISIBLE | HOST_COHERENT, "down": download_memory_flags(info)}
        self._slots: dict[str, list] = {"up": [None, None], "down": [None, None]}

    def slot(self, direction: str, i: int, nbytes: int) -> Slot:
        """Staging buffer ``i`` (0 or 1) of a direction ("up", "down"), idle, holding at least ``nbytes``."""
        slot = self._slots[direction][i]
        if slot is not None:
            slot.wait()
        if slot is None or slot.size < nbytes:
            size = min(CHUNK, max(64 << 10, 1 << (nbytes - 1).bit_length()))
            slot = self._slots[direction][i] = Slot(self._mgr, self._flags[direction], size)
        return slot

    def write(self, tensor, offset: int, src: np.ndarray) -> None:
        """Uploads ``src`` (flat uint8) into the device buffer ``tensor`` at byte ``offset``; waits."""
        def chunk(slot: Slot, pos: int, n: int) -> None:
            host_copy(slot.view[:n], src[pos:pos + n])
            slot.seq.record(copy_region(slot.tensor, tensor, 0, offset + pos, n))
        self._stream("up", tensor, src.size, chunk)

    def read(self, tensor, offset: int, out: np.ndarray) -> None:
        """Downloads ``out.size`` bytes of the device buffer ``tensor`` from byte ``offset`` into ``out``."""
        def chunk(slot: Slot, pos: int, n: int) -> None:
            slot.seq.record(copy_region(tensor, slot.tensor, offset + pos, 0, n))
            slot.seq.record(barrier([slot.tensor], BEFORE_HOST_READ))
            slot.pending = (out[pos:pos + n], n)
        self._stream("down", tensor, out.size, chunk)

    def _stream(self, direction: str, tensor, nbytes: int, chunk: Callable[[Slot, int, int], None]) -> None:
        """Moves ``nbytes`` between the device buffer ``tensor`` and the host ``CHUNK`` bytes at a time,
        through the two slots of ``direction`` in turn, then waits: each chunk's Sequence starts with a barrier
        on ``tensor`` (BEFORE_COPY); ``chunk(slot, pos, n)`` records the rest for bytes ``pos`` to ``pos + n``
        (and does the host's part of an upload, or leaves a download's in ``slot.pending``)."""
        used = []
        for i, pos in enumerate(range(0, nbytes, CHUNK)):
            slot = self.slot(direction, i % 2, min(CHUNK, nbytes))
            used.append(slot)
            slot.seq.clear()
            slot.seq.record(barrier([tensor], BEFORE_COPY))
            chunk(slot, pos, min(CHUNK, nbytes - pos))
            slot.seq.eval_async()
            slot.busy = True
        for slot in used:
            slot.wait()
