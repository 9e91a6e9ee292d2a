"""A device's queue: where its work goes (the recording of this thread, the open batch of queued runs:
runtime/batch.py, or a submission now), its synchronous runs and their replays, its transfers of buffers'
bytes, and the count of its submissions.

A synchronous run uploads the staged bytes of its buffers, runs its launches and downloads, in one submission
where the bytes are few (``FUSE_MAX`` each way, through the device's staging buffers), and waits. A run whose
command buffer would be the same as one of the last ``REPLAYS`` (same kernels, counts, blocks, staging buffers
and sizes) submits that one again."""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import encode, transfers
from .batch import QUEUE_UPLOADS, Batch, Settings
from .buffer import Buffer
from .encode import Dispatch, Encoder
from .memory import Block, Memory
from .scratch import Admission, Scratch
from .transfers import Staging

REPLAYS = 16             # recorded synchronous runs kept per device, submitted again when repeated
FUSE_MAX = 4 << 20       # transfers up to this many bytes (each way) join the operation's own submission
STAGING_ALIGN = 16       # bytes: each piece of a run's staging buffer starts at a multiple of this


def staging_offsets(sizes: Sequence[int]) -> list:
    """Byte offsets of consecutive pieces of these sizes in one staging buffer, each at a multiple of
    STAGING_ALIGN, followed by the total they take."""
    out, pos = [], 0
    for n in sizes:
        out.append(pos)
        pos += -(-n // STAGING_ALIGN) * STAGING_ALIGN
    return out + [pos]


def block_ids(bufs: Sequence[Buffer]) -> tuple:
    return tuple(id(block) for b in bufs for block in b.block_list)


class _ThreadState(threading.local):
    """A queue's state per thread: ``recording``, the open recording of the thread (runtime/recording.py) or
    None (a class default: reading it costs no exception on a thread that never recorded)."""

    recording: Any = None


class Submitter:
    """The queue of one device (``memory``: its buffers' part; ``encoder``, ``scratch``, ``admission``,
    ``settings``: its other parts). ``checked_read(buf, offset, nbytes)``: a host read of a buffer once the
    reports of the checks that reach it are made (Device.read_range); ``reports_pending()``: whether checks
    await their reports. ``batch``: the batches of queued runs; ``local.recording``: the recording of this
    thread (runtime/recording.py) or None."""

    def __init__(self, memory: Memory, encoder: Encoder, scratch: Scratch, admission: Admission,
                 settings: Settings, checked_read: Callable[[Buffer, int, int], np.ndarray],
                 reports_pending: Callable[[], bool]) -> None:
        self.memory, self.encoder, self.scratch, self.admission, self.settings = \
            memory, encoder, scratch, admission, settings
        self.mgr, self.lock = memory.mgr, memory.lock
        self._checked_read = checked_read
        self.staging = Staging(memory.mgr, memory.info)
        self.immediate = memory.mgr.sequence()     # re-recorded for each copy or fill run now (transfer_now)
        self.batch = Batch(memory.mgr, encoder, scratch, settings, self.write_bytes, self.count_submission,
                           reports_pending)
        self.replays: dict = {}    # synchronous runs (_submit_run's key) -> the kp Sequence recorded for them
        self.local = _ThreadState()
        self.submissions = 0

    def recording(self) -> Any:
        """The open recording of this thread, or None."""
        return self.local.recording

    # ---- launches ----
    def queue(self, dispatches: Sequence[Dispatch], uploads: Sequence[Buffer] = ()) -> None:
        """``run(dispatches, uploads, queue=True)`` for a caller that knows that no recording of this thread
        is open (the common eager call: one check fewer)."""
        if self.admission.admitted is not None:
            self._admit(dispatches, uploads)
        with self.lock:
            if self.memory.closed:
                self.memory.check_open()
            if self.settings.max_queued:
                self.batch.enqueue(dispatches, uploads)
            else:
                self.run(dispatches, uploads)

    def run(self, dispatches: Sequence[Dispatch], uploads: Sequence[Buffer] = (), downloads: Sequence[Buffer] = (),
            queue: bool = False, host_read: bool = False) -> list:
        """Uploads the buffers' staged bytes, runs the dispatches in order (a barrier before each),
        downloads; waits. Returns the downloaded bytes: a new uint8 array of each buffer's nbytes.
        Inside a recording of this thread the steps are appended to it instead (returns []). ``queue``
        (without downloads): appended to the device's batch instead, unless max_queued is 0 (returns []).
        ``host_read``: end with the barrier that makes the dispatches' writes visible to host reads (they write
        imported host memory: Launch.run)."""
        if self.admission.admitted is not None:
            self._admit(dispatches, uploads)
        rec = self.recording()
        if rec is not None:
            rec._append(dispatches, uploads, downloads)
            return []
        with self.lock:
            self.memory.check_open()
            if queue and self.settings.max_queued and not downloads:
                self.batch.enqueue(dispatches, uploads)
                return []
            self.batch.flush()
            staged = [(b, b._pending) for b in uploads if b._pending is not None]
            pending = [b for b, _ in staged]
            up_sizes = [src.size for _, src in staged]
            down_sizes = [b.nbytes for b in downloads]
            direct = self.settings.direct_memory
            fused = direct or (sum(up_sizes) <= FUSE_MAX and sum(down_sizes) <= FUSE_MAX)
            up_slot = down_slot = None
            if direct or not fused:   # mapped, or large: through staging in submissions of their own
                for b, src in staged:
                    self.write_bytes(b, 0, src)
            else:
                if pending:
                    up_pos = staging_offsets(up_sizes)
                    up_slot = self.staging.slot("up", 0, up_pos[-1])
                    view = up_slot.view
                    for (_, src), pos in zip(staged, up_pos):
                        transfers.host_copy(view[pos:pos + src.size], src)
                if downloads:
                    down_pos = staging_offsets(down_sizes)
                    down_slot = self.staging.slot("down", 0, down_pos[-1])
            for b in pending:
                b._pending = None
            if dispatches or up_slot or down_slot:
                self._submit_run(dispatches, pending, up_sizes, up_slot, downloads, down_sizes, down_slot,
                                 host_read)
            if down_slot is not None:
                view = down_slot.view
                return [view[pos:pos + n].copy() for pos, n in zip(down_pos, down_sizes)]
            return [self._checked_read(b, 0, b.nbytes) for b in downloads]

    def _admit(self, dispatches: Sequence[Dispatch], uploads: Sequence[Buffer]) -> None:
        """Admission.admit; a refused run's new parameter buffers, never to be uploaded, are dropped."""
        self.admission.admit(dispatches, lambda: self.scratch.drop_new_params(uploads))

    def _submit_run(self, dispatches, uploads, up_sizes, up_slot, downloads, down_sizes, down_slot,
                    host_read: bool = False) -> None:
        """Submits a synchronous run and waits: uploads from ``up_slot`` (if any), the dispatches, downloads
        into ``down_slot`` (if any); a run recorded before (the module's docstring) is submitted again."""
        parts: list[Any] = []
        for d in dispatches:
            parts += (d.kernel, d.count, d.barrier, d.blocks, *block_ids(d.buffers))
        if up_slot is not None:
            parts += ("up", up_slot.serial, *block_ids(uploads), *up_sizes)
        if down_slot is not None:
            parts += ("down", down_slot.serial, *block_ids(downloads), *down_sizes)
        if host_read:
            parts.append("host")
        key = tuple(parts)
        seq = self.replays.pop(key, None)
        if seq is None:
            seq = self._replay_sequence()
            ops = [] if up_slot is None else \
                encode.staged_copies(uploads, staging_offsets(up_sizes), up_sizes, up_slot.tensor, True)
            self.encoder.encode(dispatches, ops)
            if (self.settings.direct_memory or host_read) and dispatches:
                ops.append(self.encoder.host_barrier)     # the host reads what they wrote (mapped memory)
            if down_slot is not None:
                ops += encode.staged_copies(downloads, staging_offsets(down_sizes), down_sizes, down_slot.tensor,
                                            False)
            for op in ops:
                seq.record(op)
        self.replays[key] = seq                 # most recently used last
        self.submit(seq, self.scratch.uses_zeroed(dispatches))

    def _replay_sequence(self) -> Any:
        """A cleared kp Sequence for a run that may be submitted again as recorded (the least recently used
        one once REPLAYS are kept)."""
        if len(self.replays) < REPLAYS:
            return self.mgr.sequence()
        seq = self.replays.pop(next(iter(self.replays)))
        seq.clear()
        return seq

    def submit(self, seq: Any, zeroed: bool) -> None:
        """Submits a recorded Sequence and waits. ``zeroed``: it uses zeroed scratch, which is renewed if the
        run fails (it may be left non-zero)."""
        try:
            seq.eval()
        except BaseException:
            if zeroed:
                self.scratch.zeroed_clean = False
            raise
        self.count_submission()

    def count_submission(self) -> None:
        self.submissions += 1
        if self.submissions % 256 == 0:
            self.mgr.clear()   # let Kompute forget expired objects: host memory stays flat

    def flush(self, wait: bool = True) -> None:
        """Submits the open batch (Batch.flush)."""
        self.batch.flush(wait)

    def sync_buffer(self, buf: Buffer) -> None:
        """Before ``buf`` is reached outside the batches: waits for the batches that use it."""
        for block in buf.block_list:
            self.batch.sync_block(block)

    def forget(self, block: Block) -> None:
        """A cached block is about to be destroyed: no Sequence that may bind it is submitted again."""
        self.batch.sync_block(block)
        self.batch.forget()        # batches that bound it are never submitted again
        self.immediate.clear()
        for seq in self.replays.values():
            seq.clear()
        self.replays.clear()

    # ---- transfers ----
    def write_bytes(self, buf: Buffer, offset: int, src: np.ndarray) -> None:
        """Uploads ``src`` (flat uint8) into ``buf`` at byte ``offset``, now."""
        with self.lock:
            self.memory.check_open()
            self.sync_buffer(buf)
            for block, at, pos, n in buf._pieces(offset, src.size):
                if block.view is not None:
                    transfers.host_copy(block.view[at:at + n], src[pos:pos + n])
                else:
                    self.staging.write(block.tensor, at, src[pos:pos + n])

    def read_bytes(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """A new uint8 array with ``nbytes`` bytes of ``buf`` from byte ``offset``, after the batches that use
        it (no check's report is made: Device.read_range)."""
        with self.lock:
            self.sync_buffer(buf)
            out = np.empty(nbytes, dtype=np.uint8)
            for block, at, pos, n in buf._pieces(offset, nbytes):
                if block.view is not None:
                    transfers.host_copy(out[pos:pos + n], block.view[at:at + n])
                else:
                    self.staging.read(block.tensor, at, out[pos:pos + n])
            return out

    def queue_write(self, buf: Buffer, offset: int, src: np.ndarray) -> bool:
        """Device.queue_write where it can write without waiting (False, having done nothing, elsewhere)."""
        if src.size <= QUEUE_UPLOADS // 4 and not buf.chunked and self.settings.max_queued:
            with self.lock:
                if self.recording() is None:
                    self.memory.check_open()
                    block = buf._block
                    if block.view is not None and not self.batch.uses(block):
                        transfers.host_copy(block.view[offset:offset + src.size], src)
                    else:
                        self.batch.upload(buf, offset, src)  # (not a run: it does not count towards max_queued)
                    return True
        return False

    def transfer(self, touched: list, written: Buffer, ops: list, now: bool = False) -> None:
        """Transfer ops on device buffers after a barrier on the buffers they touch: appended to the open batch
        (a run of the batch: it counts towards max_queued); or, with ``now`` or when max_queued is 0, submitted
        now and waited for (followed, on unified memory, by the barrier that lets the host read ``written``)."""
        with self.lock:
            self.memory.check_open()
            if now or not self.settings.max_queued:
                for b in touched:
                    self.sync_buffer(b)
                seq = self.immediate
                seq.clear()
                for op in encode.transfer(touched, ops, [written] if self.settings.direct_memory else ()):
                    seq.record(op)
                self.submit(seq, False)
                return
            batch = self.batch
            batch.ops += encode.transfer(touched, ops)
            for b in touched:
                for block in b.block_list:
                    block.batch = batch.number
            batch.added()

