"""The batch of queued eager runs of one device (Submitter.batch: runtime/submit.py): runs that produce device
Tensors are collected into the open batch, a list of kp ops, and submitted together. The open batch is recorded into one of two kp Sequences when it is submitted, in one call; a batch
whose ops are those that Sequence already holds (a loop of a call and a synchronize) is submitted again
without recording. At most one batch is in flight: the next one is collected while the GPU runs it, and
submitting it waits for the one in flight first.

Every block records the number of the batch that last used it (``Block.batch``), so what reaches a block
outside the batches (host reads and writes, staging transfers, fills, destroying it) first waits for the
batch that uses it (``sync_block``). All methods run under the device's lock.

Queued eager calls: runs that produce device Tensors (``Launch.run(..., queue=True)``) join the device's
open batch, submitted together when the host needs a result: a host read or write of a buffer the batch
uses, a synchronous run (NumPy results, layer-1 execute(), Buffer.read()), a recording's submission,
``Device.synchronize()``, or ``max_queued`` runs in the batch; with ``eager_submit`` (an opt-in), also the
first run queued while no batch is in flight. There is one open batch per device, shared by
its threads under the device's lock, so the order of the calls is the order in which the threads got the
lock. A batch submitted because it is full is not waited for: the next one is collected while the GPU runs
it. The caching allocator may hand a block that a queued run still uses to a later queued run: the batches
run in submission order on one queue, and the barrier before each dispatch makes earlier reads and writes
finish first (PyTorch's same-stream reuse). What would reach such a block outside the batches (host reads
and writes of mapped memory, staging transfers, fills, destroying it) first waits for the batch that uses
it.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from ..errors import DeviceError

from . import transfers
from .discovery import DEVICE_LOCAL, HOST_COHERENT, HOST_VISIBLE
from .encode import Dispatch, Encoder, staging_upload
from .export import direct_memory_default
from .memory import Block
from .scratch import Scratch

MAX_QUEUED = 64           # eager runs a batch holds before it is submitted (Device's max_queued default)
QUEUE_UPLOADS = 1 << 20   # bytes of host data (per batch) that queued runs upload through the batch's own staging
UPLOAD_OPS = 1024         # the upload copies whose kp ops a batch keeps (Batch.upload)


class Settings:
    """A device's queueing settings (Device's arguments of the same names): ``max_queued``, ``eager_submit``,
    ``direct_memory``."""

    __slots__ = ("max_queued", "eager_submit", "direct_memory")

    def __init__(self, max_queued: int, eager_submit: bool, direct_memory: bool) -> None:
        self.max_queued, self.eager_submit, self.direct_memory = max_queued, eager_submit, direct_memory

    @classmethod
    def resolve(cls, info: Any, max_queued: int | None, direct_memory: bool | None) -> "Settings":
        """The settings of a device of DeviceInfo ``info`` opened with these arguments (None: the defaults,
        runtime/device.py's Device says them); ``eager_submit`` from DMLGPU_EAGER_SUBMIT."""
        if max_queued is None:
            max_queued = int(os.environ.get("DMLGPU_MAX_QUEUED", MAX_QUEUED))
        if max_queued < 0:
            raise ValueError(f"max_queued ({max_queued}) must be 0 (no queueing) or more")
        if direct_memory is None:
            direct_memory = direct_memory_default(info)
        elif direct_memory and not info.has_memory(DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT):
            raise DeviceError(f"{info.name} has no host-visible device memory: direct_memory=True is not possible")
        return cls(int(max_queued), os.environ.get("DMLGPU_EAGER_SUBMIT", "0") != "0", bool(direct_memory))


class Batch:
    """The open batch (``ops``, recorded into ``seq`` when submitted) and the one in flight (``spare_seq``) of
    the device whose kp manager is ``mgr``: its launches encoded by ``encoder``, its zeroed scratch in
    ``scratch``, its ``settings``; ``write(buf, offset, src)`` writes a buffer now (after the batches that use
    it), ``submitted()`` counts a submission, ``reports_pending()`` says whether device checks await their
    reports (Checks: the host reads them after the batch)."""

    def __init__(self, mgr: Any, encoder: Encoder, scratch: Scratch, settings: Settings,
                 write: Callable[[Any, int, Any], None], submitted: Callable[[], None],
                 reports_pending: Callable[[], bool]):
        self.mgr, self.encoder, self.scratch, self.settings = mgr, encoder, scratch, settings
        self.write, self.submitted, self.reports_pending = write, submitted, reports_pending
        self.seq = mgr.sequence()     # the Sequence the open batch is recorded into when submitted
        self.ops: list = []           # the open batch's kp ops, in order
        self.held: list | None = None             # the ops ``seq`` holds recorded (None: none known)
        self.spare_seq = mgr.sequence()           # the previous batch's Sequence: in flight, or idle
        self.spare_held: list | None = None
        self.number = 1               # number of the open batch (Block.batch of the blocks it uses)
        self.queued = 0               # runs in the open batch
        self.zeroed = False           # the open batch uses zeroed scratch (Device.zeroed)
        self.uploads: Any = None      # the batch's upload staging buffer and its host view
        self.upload_pos = 0           # bytes of it used
        self.spare_uploads: Any = None
        self.inflight = 0             # number of the batch submitted and not waited for (0: none)
        self.inflight_zeroed = False
        self.upload_ops: dict = {}    # (staging, position, block, offset, bytes) -> the ops of that copy (upload())

    def enqueue(self, dispatches: Sequence[Dispatch], uploads: Sequence[Any] = ()) -> None:
        """Adds a run to the open batch (its uploads first: stage()), and submits the batch once it holds
        max_queued runs."""
        if uploads:
            self.stage(uploads)
        self.encoder.encode(dispatches, self.ops, None, self.number)
        if not self.zeroed and self.scratch.zeroed_buffers:
            self.zeroed = self.scratch.uses_zeroed(dispatches)
        self.added()

    def stage(self, uploads) -> None:
        """Uploads the staged bytes of these buffers (Buffer.stage) before what the batch does next. Host
        data of up to a quarter of QUEUE_UPLOADS per buffer goes through the batch's upload buffer (copied there
        now, into its device buffer by the batch: a block that the batch still uses may be reused); larger
        data is written now (mapped, or by a staging transfer), after the batch if the block is one it uses."""
        for b in uploads:
            if b._pending is None:
                continue
            src, n = b._pending, b._pending.size
            if n > QUEUE_UPLOADS // 4 or b.chunked:
                self.write(b, 0, src)               # after the batch if it uses the buffer
            else:
                self.upload(b, 0, src)
            b._pending = None

    def upload(self, buf, offset: int, src) -> None:
        """Copies ``src`` (flat uint8, at most a quarter of QUEUE_UPLOADS bytes) into the batch's upload buffer
        now and queues its copy into ``buf`` (one block) at byte ``offset``, after what the batch does before."""
        n = src.size
        if self.upload_pos + n > QUEUE_UPLOADS:
            self.flush(wait=False)
        if self.uploads is None:
            staging = self.mgr.buffer(QUEUE_UPLOADS, HOST_VISIBLE | HOST_COHERENT)
            self.uploads = (staging, staging.host_view())
        staging, view = self.uploads
        pos = self.upload_pos
        transfers.host_copy(view[pos:pos + n], src)
        key = (id(staging), pos, id(buf._block), offset, n)
        ops = self.upload_ops.get(key)
        if ops is None:     # the same ops for the same copy, so that a loop's batch is submitted again as recorded
            if len(self.upload_ops) >= UPLOAD_OPS:
                self.upload_ops.clear()
            ops = self.upload_ops[key] = staging_upload(staging, pos, buf._tensor, offset, n)
        self.ops += ops
        self.upload_pos = pos + -(-n // 16) * 16
        buf._block.batch = self.number

    def added(self) -> None:
        """A run was added to the open batch: submits it once it holds max_queued runs (or at once, with eager
        submission, when none is in flight)."""
        self.queued += 1
        settings = self.settings
        if self.queued >= settings.max_queued or not self.inflight and settings.eager_submit:
            self.flush(wait=False)        # collecting the next batch overlaps the GPU's work on this one

    def uses(self, block: Block) -> bool:
        """Whether the open batch or the one in flight uses ``block``."""
        return block.batch == self.number or bool(self.inflight) and block.batch == self.inflight

    def sync_block(self, block: Block) -> None:
        """Before ``block`` is reached outside the batches: submits the open batch and waits for it if it
        uses the block, or waits for the batch in flight if that one does."""
        if block.batch == self.number:
            if self.ops:
                self.flush()
        elif block.batch == self.inflight:
            self.await_inflight()

    def flush(self, wait: bool = True) -> None:
        """Submits the open batch (if it holds anything: queued runs, or uploads alone), after waiting for the
        one in flight, and opens a new batch in the other Sequence. ``wait``: then waits for it too (every queued
        run has finished when this returns); else it stays in flight while the next batch is collected."""
        if self.ops:           # queued runs, or uploads alone (Device.buffer's: runtime/device.py)
            self.await_inflight()
            seq, ops, zeroed = self.seq, self.ops, self.zeroed
            if self.settings.direct_memory or self.reports_pending():   # (the host reads the checks' reports)
                ops.append(self.encoder.host_barrier)
            try:
                if ops != self.held:            # (kp ops compare by identity)
                    self.held = None
                    seq.clear()
                    seq.record_ops(ops)
                    self.held = ops
                seq.eval_async()
                self.inflight, self.inflight_zeroed = self.number, zeroed
            except BaseException:
                seq.clear()
                self.held = None
                if zeroed:
                    self.scratch.zeroed_clean = False   # it may be left non-zero: the next request renews it
                raise
            finally:
                self.seq, self.spare_seq = self.spare_seq, seq
                self.held, self.spare_held = self.spare_held, self.held
                self.ops = []
                self.uploads, self.spare_uploads = self.spare_uploads, self.uploads
                self.zeroed = False
                self.upload_pos = 0
                self.queued = 0
                self.number += 1
                self.submitted()
        if wait:
            self.await_inflight()

    def await_inflight(self) -> None:
        """Waits for the batch in flight, if any (its Sequence keeps what it holds, to be submitted again if
        the next batch it takes is the same)."""
        if self.inflight:
            try:
                self.spare_seq.eval_await()
            except BaseException:
                self.spare_held = None
                if self.inflight_zeroed:
                    self.scratch.zeroed_clean = False
                raise
            finally:
                self.inflight = 0

    def forget(self) -> None:
        """A block is being destroyed: no Sequence is submitted again as it holds (it may bind the block)."""
        self.held = self.spare_held = None
        self.upload_ops.clear()
