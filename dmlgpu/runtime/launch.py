"""The runtime's one way to run work (``Device.launch()``): a launch holds the device's lock, hands out the
scratch buffers its kernels need and runs or queues their dispatches; when it ends, its scratch goes back.

A call's corridor, written once::

    with device.launch() as launch:
        out = launch.output(nbytes)                       # kept by the caller (a result)
        dispatches, params = plan.dispatches(device, input=..., output=out, take=launch.scratch)
        launch.run(dispatches, uploads=params, queue=True)

Scratch lifetime: a launch's scratch returns to the caching allocator when the ``with`` block ends, also when
it raises. A queued run may still use it then; the allocator hands a block that queued work uses only to
later work of the same queue, which the barrier before every dispatch orders after it (runtime/device.py), and
what reaches such a block from outside the batches first waits for them (runtime/batch.py). Inside a
recording of this thread the recording owns the buffers its steps bind, and the launch gives nothing back.
``keep()`` hands the scratch to the caller instead (buffers kept for the next call of a signature).

A call repeated with the same launches on new buffers (a call template: dmlgpu/api/call_templates.py) prepares
them once (``Device.prepare()``: a ``Prepared``) and queues them per call with ``Prepared.queue(buffers)``: the
same corridor, without the launch's generality (no recording, no parameter uploads, results and scratch of
sizes fixed when prepared).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .buffer import COPY, Buffer
from .memory import size_class

if TYPE_CHECKING:
    from .buffer import Dispatch
    from .device import Device


class Launch:
    """One launch on ``device`` (made by Device.launch(); a context manager). ``recording``: the recording
    of this thread that the launch's runs are appended to, or None."""

    __slots__ = ("device", "recording", "taken", "_kept")

    def __init__(self, device: Device):
        self.device = device
        self.recording: Any = None
        self.taken: list[Buffer] = []
        self._kept = False

    def __enter__(self) -> Launch:
        dev = self.device
        dev.lock.acquire()
        try:
            dev.check_open()
        except BaseException:
            dev.lock.release()
            raise
        self.recording = dev.active_recording()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.taken and not self._kept and self.recording is None:
                self.device.give_buffers(*self.taken)
        finally:
            self.device.lock.release()

    def scratch(self, nbytes: int, fits: bool = False) -> Buffer:
        """A buffer of at least ``nbytes`` (contents undefined) that the launch gives back when it ends
        (outside recordings). ``fits``: the caller knows that ``nbytes`` is a positive multiple of 4 that one
        block holds (a call template's sizes, checked when it was traced), so the size checks are skipped."""
        buf = self.output(nbytes, fits)
        self.taken.append(buf)
        return buf

    def output(self, nbytes: int, fits: bool = False) -> Buffer:
        """A new buffer of at least ``nbytes`` (contents undefined) that the caller keeps: a result.
        ``fits``: as for scratch()."""
        return fitted(self.device, nbytes) if fits else self.device.take_buffer(nbytes)

    def keep(self) -> list[Buffer]:
        """The launch's scratch, which it then does not give back: the caller owns it (returns it)."""
        self._kept = True
        return self.taken

    def run(self, dispatches: Sequence[Dispatch], uploads: Sequence[Buffer] = (),
            downloads: Sequence[Buffer] = (), queue: bool = False, host_read: bool = False) -> list:
        """Runs the dispatches in order after uploading the staged bytes of ``uploads``: appended to the
        recording of this thread if one is open; else queued into the device's open batch (``queue``,
        without downloads, and max_queued > 0); else submitted now and waited for, returning the bytes of
        each of ``downloads`` (a new uint8 array of its nbytes). Returns [] where it did not wait.
        ``host_read`` (a run submitted now): the dispatches write host memory (runtime/host.py) that the host
        reads when the run returns, so the run ends with the barrier that makes their writes visible to it."""
        dev = self.device
        if queue and self.recording is None and not downloads:
            dev._queue(dispatches, uploads)
            return []
        return dev._run(dispatches, uploads, downloads, queue, host_read)

    def stage(self, uploads: Sequence[Buffer]) -> None:
        """Uploads the staged bytes of these buffers (Buffer.stage: a parameter buffer's words) before what
        the device's open batch does next (outside recordings)."""
        self.device._batches.stage(uploads)

    def steps(self, steps: tuple, buffers: list, zeroed: bool, kernels_only: bool = False) -> None:
        """A call template's launches recorded into the open batch: ``steps`` are (kernel, workgroups,
        barrier, slots) (a COPY step's workgroups: its bytes), each slot an index into ``buffers`` or a
        Buffer; ``zeroed``: they use zeroed scratch (Device.zeroed); ``kernels_only``: the caller knows that no
        step is a COPY and that each buffer is held in one block (recorded in fewer operations). Only outside
        recordings, with max_queued > 0 (the caller checks both)."""
        self.device._batches.record_steps(steps, buffers, zeroed, kernels_only)


def fitted(device: Device, nbytes: int, size: int = 0) -> Buffer:
    """A new buffer of ``nbytes`` (contents undefined) for a caller that knows that one block holds it (a call
    template's sizes, checked when it was traced): taken from the allocator's size class ``size`` (its
    memory.size_class, where the caller has it) without the size checks; in test mode (guard words) made by
    Device.take_buffer, which adds them."""
    if device.canary_words:
        return device.take_buffer(nbytes)
    return Buffer._of_class(device, nbytes, size) if size else Buffer._in_block(device, nbytes)


class Prepared:
    """Launches prepared for repeated queuing (made by ``Device.prepare()``). ``steps``: (kernel, workgroups,
    barrier, slots) as ``Launch.steps`` takes them, each slot an index into the buffer list that ``queue``
    completes, or a Buffer; ``out_nbytes``: the result's size (slot 2); ``scratch``: the sizes of the scratch
    buffers that fill the slots after the caller's (given back once the launches are queued); ``owner``: the
    ``Device.zeroed_serial`` of the zeroed scratch that the launches use, or None where they use none. Every
    size is a positive multiple of 4 that one block holds (checked by the caller when it traced the launches)."""

    __slots__ = ("device", "steps", "out_nbytes", "out_class", "scratch", "owner", "kernels_only")

    def __init__(self, device: Device, steps: tuple, out_nbytes: int, scratch: tuple, owner: int | None):
        self.device = device
        self.steps = steps
        self.kernels_only = all(step[0] != COPY for step in steps)    # (recorded here; copy steps by the batch)
        self.out_nbytes = out_nbytes
        self.out_class = size_class(out_nbytes, device._allocator.max_block)
        self.scratch = scratch
        self.owner = owner

    def queue(self, buffers: list, out: Buffer | None = None) -> Buffer | None:
        """Queues the launches into the device's open batch on ``buffers`` (the slots before the result's, then
        those after it up to the scratch's; slot 2, the result, is ``out`` or a new buffer) and returns the
        result's buffer; None, having done nothing, where they cannot be queued now: a recording of this
        thread is open, queueing is off (max_queued 0), the device is closed, or the zeroed scratch they used
        when prepared has been renewed (or a run that used it failed)."""
        dev = self.device
        lock = dev.lock
        lock.acquire()
        try:
            if dev.closed or not dev.max_queued or getattr(dev._local, "recording", None) is not None:
                return None
            owner = self.owner
            if owner is not None and (owner != dev.zeroed_serial or not dev._zeroed_clean):
                return None
            if out is None:
                out = fitted(dev, self.out_nbytes, self.out_class)
            scratch = [fitted(dev, n) for n in self.scratch]
            buffers.insert(2, out)
            if scratch:
                buffers += scratch
            dev._batches.record_steps(self.steps, buffers, owner is not None, self.kernels_only)
            for b in scratch:
                b._release()
            return out
        finally:
            lock.release()
