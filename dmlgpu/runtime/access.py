"""What a device does for its buffers beyond allocating them (memory.BufferIO, the part Buffer.memory.io names):
host writes and reads of their bytes in order with the queued work (reads after the reports of the device checks
that reach them), device copies and fills, and what must happen before a block is destroyed."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import encode
from .batch import QUEUE_UPLOADS
from .buffer import Buffer, as_bytes
from .checks import Checks
from .memory import Block
from .submit import Submitter


class Access:
    """The buffer access of one device: through its queue (``submitter``) and its ``checks``;
    ``forget(block)``: what the device does before a cached block is destroyed (Device.forget)."""

    def __init__(self, submitter: Submitter, checks: Checks, forget: Callable[[Block], None]) -> None:
        self.submitter, self.checks, self.forget = submitter, checks, forget
        self.lock = submitter.lock

    def new_buffer(self, data: Any = None, nbytes: int | None = None) -> Buffer:
        """Device.buffer: a new buffer of ``data``'s bytes (uploaded, small ones queued) or of ``nbytes`` zeros
        (a least size with ``data``; sizes round up to a multiple of 4, the bytes past ``data`` zero)."""
        memory = self.submitter.memory
        if data is None:
            if nbytes is None:
                raise ValueError("give data or nbytes")
            buf = Buffer(memory, max(4, (int(nbytes) + 3) // 4 * 4))
            self.fill_buffer(buf, 0, 0, buf.nbytes)
            return buf
        src = as_bytes(data)
        buf = Buffer(memory, max(4, (max(src.size, nbytes or 0) + 3) // 4 * 4))
        if buf.nbytes <= QUEUE_UPLOADS // 4:           # small: one write of its bytes and zeros, queued
            if src.size < buf.nbytes:
                padded = np.zeros(buf.nbytes, np.uint8)
                padded[:src.size] = src
                src = padded
            self.queue_write(buf, 0, src)
            return buf
        if buf.nbytes > src.size:
            self.fill_buffer(buf, 0, src.size // 4 * 4, buf.nbytes - src.size // 4 * 4)
        buf.write(src)
        return buf

    def queue_write(self, buf: Buffer, offset: int, src: np.ndarray) -> None:
        """Writes ``src`` (flat uint8) into ``buf`` at byte ``offset`` after the work queued before that uses
        it (Buffer.write, Tensor.write, Device.buffer), without waiting for that work where it can: into its
        mapped memory now where no batch uses its block, else copied now into the open batch's upload buffer
        and queued (Batch.upload). Where it cannot (more than a quarter of QUEUE_UPLOADS bytes, a buffer held
        in several blocks, queueing off: max_queued 0, or a recording of this thread open), it is written now
        (Submitter.write_bytes)."""
        if not self.submitter.queue_write(buf, offset, src):
            self.submitter.write_bytes(buf, offset, src)

    def read_range(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """A new uint8 array with ``nbytes`` bytes of ``buf`` from byte ``offset`` (guard words included),
        once the reports of the checks that reach ``buf`` are made (Device.watch); raises ``buf``'s failure
        instead (Buffer.error), every time until it is overwritten whole."""
        with self.lock:
            self.submitter.memory.check_open()
            return self.checks.read_checked(buf, offset, nbytes)

    def read_buffer(self, buf: Buffer) -> np.ndarray:
        """Buffer.read: all its bytes, once the queued work that writes it has run (RuntimeError inside a
        recording; its failure as read_range raises it): a synchronous run (Submitter.run)."""
        if self.submitter.recording() is not None:
            raise RuntimeError("read() cannot run inside a recording: record download() and read "
                               "Recording.host(buffer) after the block")
        if buf.lineage is not None:        # a check may reach it, or it failed (read_range)
            with self.lock:
                self.checks.report()
                if buf.error is not None:
                    self.checks.raise_failure(buf)
        return self.submitter.run([], downloads=[buf])[0]

    def sync_buffer(self, buf: Buffer) -> None:
        """Before ``buf`` is reached outside the batches: waits for the batches that use it."""
        self.submitter.sync_buffer(buf)

    def settle(self, buf: Buffer) -> None:
        """Submits the queued work that uses ``buf`` and waits for it, after making the device's pending check
        reports (raising their exception, or the one that marked ``buf``, as a host read does)."""
        with self.lock:
            self.submitter.memory.check_open()
            self.checks.report()
            if buf.error is not None:
                raise buf.error.with_traceback(None)
            self.submitter.sync_buffer(buf)

    def copy_buffer(self, src: Buffer, dst: Buffer, nbytes: int, src_offset: int = 0, dst_offset: int = 0) -> None:
        """Copies ``nbytes`` of ``src`` from byte ``src_offset`` into ``dst`` at byte ``dst_offset`` on the
        device (no host round trip; any offsets, chunked buffers too; the two ranges must not overlap when
        ``src`` is ``dst``), in order with the queued work: appended to the device's open batch after a
        barrier on both buffers (a host read of ``dst`` waits for it, as for a queued kernel), recorded inside
        a recording of this thread, or run now when ``max_queued`` is 0. ValueError for a range outside a
        buffer."""
        if nbytes <= 0:
            return
        for buf, at in ((src, src_offset), (dst, dst_offset)):
            if at < 0 or at + nbytes > buf.nbytes:
                raise ValueError(f"a copy of {nbytes} bytes at offset {at} does not fit a buffer of {buf.nbytes} "
                                 f"bytes")
        touched = [src] if src is dst else [src, dst]
        ops = encode.copy_ops(src, src_offset, dst, dst_offset, nbytes)
        rec = self.submitter.recording()
        if rec is not None:
            rec._append_copy(touched, ops)
            return
        self.submitter.transfer(touched, dst, ops)

    def fill_buffer(self, buf: Buffer, word: int, offset: int, nbytes: int) -> None:
        """Fills ``nbytes`` of ``buf`` from byte ``offset`` (both multiples of 4) with a 32-bit word, in order
        with the queued work: appended to the device's open batch (a host read of ``buf`` waits for it), or
        run now inside a recording of this thread or when ``max_queued`` is 0."""
        if nbytes > 0:
            self.submitter.transfer([buf], buf, encode.fill_ops(buf, word, offset, nbytes),
                                    now=self.submitter.recording() is not None)
