"""A device's own checks of the work it queues (Device.watch: mode="raise" on Tensor indices,
dmlgpu/plans/index_check.py) and the poison they spread: a failed check fails the buffers written from the work it
checks and from them (Buffer.error), which raise it when read (Device.taint)."""
from __future__ import annotations

import copy
import weakref
from typing import Any, Callable, NamedTuple, NoReturn, Sequence

import numpy as np

from .buffer import Buffer
from .submit import Submitter

CHECK_SLOTS = 256     # checks (Device.watch) that may await their reports at once: the check buffer's slots
UNREPORTED = 64       # failures that synchronize() lists (past them it counts)
HISTORY = 256         # report generations whose failures are kept (for a lineage taken before their report)


def raised(error: BaseException) -> BaseException:
    """A copy of a kept failure to raise (same type, message and attributes): the failure itself never holds a
    traceback, whose frames would keep the caller's Tensors alive as long as it is kept."""
    return copy.copy(error).with_traceback(None)


class Marked:
    """A device check (Device.watch) and the buffers written from the work it checks (``append`` them), held
    weakly: a result its caller drops goes back to the allocator at once, as any other does, instead of at the
    report (then nothing is left of it to mark), so that a loop of checked calls reuses its blocks in the same
    order and its batches are replayed as recorded. ``open`` until the report is made; ``error``: the check's
    failure, or None. An appended buffer holds the check in its lineage (Buffer.lineage: ``bit``, the check's
    slot's, of report generation ``gen``) until the report, which fails it (Buffer.error) if the check failed
    and the buffer was not overwritten whole in between (Device.taint). ``checks``: the device's Checks."""

    __slots__ = ("_refs", "open", "error", "bit", "gen", "checks")

    def __init__(self, checks: "Checks", gen: int, slot: int) -> None:
        self._refs: list = []
        self.open = True
        self.error: BaseException | None = None
        self.bit = 1 << slot
        self.gen = gen
        self.checks = checks

    def append(self, buf: Buffer) -> None:
        if self.open:
            self._refs.append(weakref.ref(buf))
            held = buf.lineage
            if held is None or buf.lineage_gen != self.gen:
                buf.lineage, buf.lineage_gen = self.bit, self.gen
            else:
                buf.lineage = held | self.bit
            if self.open:
                return
        if self.error is not None:         # (reported meanwhile, by another thread)
            with self.checks.lock:
                self.checks.fail(buf, self.error)

    def __iter__(self):
        return (buf for buf in (ref() for ref in self._refs) if buf is not None)


class Watch(NamedTuple):
    """A check made by the device (Device.watch): its buffer and report slot, how to report it, the buffers
    that a failed check marks."""

    buffer: Buffer
    reports: Buffer
    slot: int
    report: Callable[[np.ndarray], BaseException | None]
    results: Marked


class Checks:
    """The checks of one device and their poison: its queue (``queue``: the host reads of the reports, the
    flush before them, the recording of this thread); ``make_buffers(slots)``: the check buffers (watch());
    ``slots``: how many checks may await their reports. ``tainted``: True while a check awaits its report, a
    failed buffer lives or a recording is open, so that calls must pass their operands through taint()."""

    def __init__(self, queue: Submitter, make_buffers: Callable[[int], tuple[Buffer, Buffer]], slots: int) -> None:
        self.queue, self.lock, self._make_buffers = queue, queue.lock, make_buffers
        self.slots = min(CHECK_SLOTS, slots)
        self.watched: list[Watch] = []   # watch()'s checks whose reports are not made yet, by slot
        self.tainted = False
        self.failed: weakref.WeakSet[Buffer] = weakref.WeakSet()   # the failed buffers alive
        self.unreported: list[BaseException] = []   # failures no read or synchronize() has raised (UNREPORTED)
        self.dropped = 0
        self.recordings = 0           # open recordings (Recording: they note their calls' reads, taint())
        self.gen = 0                  # report generation (report() starts a new one)
        self.history: dict[int, list] = {}   # generation -> its failed checks: (slot bits, error)
        self.buffers: tuple[Buffer, Buffer] | None = None   # the check buffers (watch()), made on first use

    def pending(self) -> bool:
        """Whether checks await their reports (the host reads them after the batch that makes them)."""
        return bool(self.watched)

    def watch(self, report: Callable[[np.ndarray], BaseException | None]) -> Watch:
        """A check that the device itself makes of work about to be queued (mode="raise" on Tensor indices),
        through the device's check buffers: ``Watch.buffer`` (16 bytes of device memory, the checking kernels'
        own, zero but while a check runs) and ``Watch.reports`` (host-visible: read without a transfer), whose
        words 4 slot to 4 slot + 3 (``Watch.slot``) the check's last kernel writes, with the barrier that lets
        the host read them. Call it and queue the check's kernels in one launch (which holds the device's
        lock). Once that work has run, at the device's next synchronize() or a host read of a buffer that the
        check reaches (read_range), ``report`` gets the slot's four words (uint32) and returns an exception or
        None; a slot whose first word is 0 reports nothing (its check passed: ``report`` is not called).
        ``Watch.results``: where the caller appends the buffers that the checked work writes (Marked: held
        weakly); they, and what later work writes from them (taint()), fail with the exception: every host read
        of them raises it, and synchronize() raises it once if no read has."""
        with self.lock:
            if len(self.watched) == self.slots:     # every slot awaits its report: make them first
                self.queue.flush()
                self.report()
            if self.buffers is None:
                self.buffers = self._make_buffers(self.slots)
            slot = len(self.watched)
            watch = Watch(*self.buffers, slot, report, Marked(self, self.gen, slot))
            self.watched.append(watch)
            self.tainted = True
            return watch

    def report(self) -> None:
        """Makes the watched reports (watch()) with one read of the check buffer: each failed check fails the
        buffers whose lineage still holds it (Buffer.error), and joins the failures that synchronize() raises;
        then a new report generation starts (the lineages of the last one are spent)."""
        if not self.watched:
            return
        watched, self.watched = self.watched, []
        reports = watched[0].reports
        view = reports._block.view
        if view is not None:            # (host-visible: Device._check_buffers) one copy of the slots' words
            self.queue.sync_buffer(reports)
            raw = view[:16 * len(watched)].tobytes()
        else:
            raw = self.queue.read_bytes(reports, 0, 16 * len(watched)).tobytes()
        for watch in watched:
            watch.results.open = False
        failed: list[tuple[Marked, BaseException]] = []
        if any(memoryview(raw).cast("I")[::4]):    # a slot's first word set: its check failed (watch())
            words = np.frombuffer(raw, np.uint32)
            for watch in watched:
                mark = watch.results
                error = mark.error = watch.report(words[4 * watch.slot:4 * watch.slot + 4])
                if error is not None:
                    failed.append((mark, error))
        gen = self.gen
        for mark, error in failed:
            bit = mark.bit
            for buf in mark:
                held = buf.lineage
                if held is not None and held & bit and buf.lineage_gen == gen:
                    self.fail(buf, error)
            if len(self.unreported) < UNREPORTED:
                self.unreported.append(error)
            else:
                self.dropped += 1
        if failed:
            self.history[gen] = [(mark.bit, error) for mark, error in failed]
            while len(self.history) > HISTORY:
                del self.history[next(iter(self.history))]
        self.gen = gen + 1
        for watch in watched:
            watch.results._refs = []
        if not self.failed and not self.recordings:
            self.tainted = False

    def raise_unreported(self) -> None:
        """Raises, once, the failures that no read has raised (Device.synchronize: after report())."""
        failures, dropped = self.unreported, self.dropped
        self.unreported, self.dropped = [], 0
        if len(failures) == 1:
            raise raised(failures[0])
        if failures:
            first = failures[0]
            kind = type(first) if all(type(f) is type(first) for f in failures) else RuntimeError
            more = f"; and {dropped} more" if dropped else ""
            raise kind(f"{len(failures) + dropped} of this device's checks failed: "
                       + "; ".join(str(f) for f in failures) + more)

    def close(self) -> None:
        """The device closes: reports not made are dropped (nothing reads the device again)."""
        self.watched = []
        self.gen += 1                  # (their lineages spent)
        for buf in self.buffers or ():
            buf._release()
        self.buffers = None

    # ---- poison ----
    def taint(self, reads: Sequence[Buffer | None], out: Buffer | None = None,
              whole: bool = False) -> tuple[int, int] | None:
        """The lineage of a call about to be queued that reads the buffers ``reads`` (None entries are
        skipped) and writes ``out`` (an existing buffer; its new results: reach()), for a caller that found
        ``tainted`` true (the fast path is that one test). Raises, before any GPU work, the failure of a read
        buffer (Buffer.error: a failed check reached it). Returns the checks awaiting their reports that the
        reads reach ((report generation, slot bits); None: none), which ``out`` then holds too; ``whole``: the
        call writes all of ``out``'s bytes (its Tensor overwritten whole), which then holds only those and is
        no longer failed. Inside a recording of this thread a call that reads buffers is noted for the
        recording's runs instead (Recording.run checks its reads then)."""
        gen = self.gen              # (read first: a report meanwhile makes it stale, which write sees)
        bits = 0
        for buf in reads:
            if buf is not None and buf.lineage is not None:     # (None: clean, the common case)
                if buf.error is not None:
                    with self.lock:
                        self.raise_failure(buf)
                if buf.lineage_gen == gen:
                    bits |= buf.lineage
        if self.recordings:
            with self.lock:
                rec = self.queue.recording()
                if rec is not None and any(buf is not None for buf in reads):   # (a host write runs now)
                    rec._flow(tuple(reads), out, whole)
                    return None
        if out is not None and (bits or out.lineage is not None):
            with self.lock:
                self.write(out, gen, bits, whole)
        if bits:
            return gen, bits
        if not self.watched and not self.failed and not self.recordings:
            with self.lock:         # nothing left that a check reaches: calls take the fast path again
                if not self.watched and not self.failed and not self.recordings:
                    self.tainted = False
        return None

    def reach(self, lineage: tuple[int, int], buf: Buffer) -> None:
        """A new buffer written by the call whose lineage taint() returned: it holds those checks (and fails
        at once with any that has failed since)."""
        with self.lock:
            self.write(buf, *lineage, False)

    def write(self, buf: Buffer, gen: int, bits: int, whole: bool) -> None:
        """``buf`` written from work that the checks ``bits`` of report generation ``gen`` reach (taint())."""
        if gen != self.gen:            # reported since taint(): their failures now
            for bit, error in self.history.get(gen, ()):
                if bits & bit:
                    self.fail(buf, error)
                    break
            gen, bits = self.gen, 0
        held = buf.lineage
        if held is not None and (whole or buf.lineage_gen != gen):
            held = None
        if whole and buf.error is not None:
            buf.error = None
            self.failed.discard(buf)
        if bits:
            new = bits & ~held if held else bits
            while new:
                low = new & -new
                self.watched[low.bit_length() - 1].results._refs.append(weakref.ref(buf))
                new ^= low
            buf.lineage, buf.lineage_gen = (held | bits if held else bits), gen
        elif held is None:
            buf.lineage = None if buf.error is None else 0

    def fail(self, buf: Buffer, error: BaseException) -> None:
        """``buf`` failed with ``error`` (the first failure that reaches it stays)."""
        if buf.error is None:
            buf.error = error
            if buf.lineage is None:
                buf.lineage = 0     # (a failed buffer's lineage is never None: taint()'s one test per read)
            self.failed.add(buf)
            self.tainted = True

    def raise_failure(self, buf: Buffer) -> NoReturn:
        """Raises the failure of ``buf``, which synchronize() then does not raise again."""
        error = buf.error
        assert error is not None
        for i, e in enumerate(self.unreported):
            if e is error:
                del self.unreported[i]
                break
        raise raised(error)

    def read_checked(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """Device.read_range: the bytes, once the reports of the checks that reach ``buf`` are made; its
        failure instead (Buffer.error)."""
        with self.lock:
            if buf.lineage and buf.lineage_gen == self.gen:   # checks that reach it: their reports first
                self.report()
            if buf.error is not None:
                self.raise_failure(buf)
            return self.queue.read_bytes(buf, offset, nbytes)

    def opened(self, rec: Any) -> None:
        """A recording opened (calls note their reads for its runs: taint())."""
        self.recordings += 1
        self.tainted = True

    def closed_recording(self) -> None:
        self.recordings -= 1
