"""The runtime's one way to run work (``Device.launch()``): a launch holds the device's lock, hands out the
scratch buffers its kernels need and runs or queues their dispatches; when it ends, its scratch goes back.

A call's corridor, written once::

    with device.launch() as launch:
        out = launch.output(nbytes)                       # kept by the caller (a result)
        dispatches, params = plan.dispatches(device, input=..., output=out, take=launch.scratch)
        launch.run(dispatches, uploads=params, queue=True)

Scratch lifetime: a launch's scratch returns to the caching allocator when the ``with`` block ends, also when
it raises. A queued run may still use it then; the allocator hands a block that queued work uses only to
later work of the same queue, which the barrier before every dispatch orders after it (runtime/encode.py), and
what reaches such a block from outside the batches first waits for them (runtime/batch.py). Inside a
recording of this thread the recording owns the buffers its steps bind, and the launch gives nothing back.
``keep()`` hands the scratch to the caller instead (buffers kept for the next call of a signature).

A call repeated with the same launches on new buffers (a call template: dmlgpu/api/call_templates.py) prepares
them once (``Device.prepare()``: a ``Prepared``) and queues them per call with ``Prepared.queue(buffers)``: the
same corridor, without the launch's generality (no recording, results and scratch of sizes fixed when prepared,
parameter buffers only where the launches bind buffers held in several blocks: made once per set of block lists).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .buffer import Buffer
from .encode import Dispatch
from .memory import Memory, size_class
from .submit import Submitter

class Launch:
    """One launch on a device's queue (``queue``: runtime/submit.py's Submitter; made by Device.launch(); a
    context manager). ``recording``: the recording of this thread that the launch's runs are appended to, or
    None."""

    __slots__ = ("submitter", "recording", "taken", "_kept")

    def __init__(self, queue: Submitter):
        self.submitter = queue
        self.recording: Any = None
        self.taken: list[Buffer] = []
        self._kept = False

    def __enter__(self) -> Launch:
        queue = self.submitter
        queue.lock.acquire()
        try:
            queue.memory.check_open()
        except BaseException:
            queue.lock.release()
            raise
        self.recording = queue.recording()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.taken and not self._kept and self.recording is None:
                give_back(self.taken)
        finally:
            self.submitter.lock.release()

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
        return fitted(self.submitter.memory, nbytes) if fits else take(self.submitter.memory, nbytes)

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
        if queue and self.recording is None and not downloads:
            self.submitter.queue(dispatches, uploads)
            return []
        return self.submitter.run(dispatches, uploads, downloads, queue, host_read)

    def stage(self, uploads: Sequence[Buffer]) -> None:
        """Uploads the staged bytes of these buffers (Buffer.stage: a parameter buffer's words) before what
        the device's open batch does next (outside recordings)."""
        self.submitter.batch.stage(uploads)


def take(memory: Memory, nbytes: int) -> Buffer:
    """Device.take_buffer: a buffer of at least ``nbytes`` whose contents are undefined."""
    if memory.closed:
        memory.check_open()
    return Buffer(memory, max(4, (nbytes + 3) & ~3))


def give_back(bufs: Sequence[Buffer]) -> None:
    """Device.give_buffers: the buffers go back to the allocator now (those a recording uses stay)."""
    for buf in bufs:
        if not buf.pinned:
            buf._release()


def fitted(memory: Memory, nbytes: int, size: int = 0) -> Buffer:
    """A new buffer of ``nbytes`` (contents undefined) for a caller that knows that one block holds it (a call
    template's sizes, checked when it was traced): taken from the allocator's size class ``size`` (its
    memory.size_class, where the caller has it) without the size checks; in test mode (guard words) made by
    take(), which adds them."""
    if memory.canary_words:
        return take(memory, nbytes)
    return Buffer._of_class(memory, nbytes, size) if size else Buffer._in_block(memory, nbytes)


class Prepared:
    """Launches prepared for repeated queuing (made by ``Device.prepare()``) on a device's queue. ``steps``:
    template Dispatches (runtime/encode.py), each buffer a slot (an index into the buffer list that ``queue``
    completes) or a Buffer; ``out_nbytes``: the result's size (slot 2; 0 for launches without a result, which
    only append() queues: a device check's); ``scratch``: the sizes of the scratch
    buffers that fill the slots after the caller's (given back once the launches are queued); ``owner``: the
    ``Device.zeroed_serial`` of the zeroed scratch that the launches use, or None where they use none. Every
    size is a positive multiple of 4 that one block holds (checked by the caller when it traced the launches),
    but where ``derive`` is given: launches that bind buffers held in several blocks (large-tensor variants),
    whose slots from ``given`` on hold parameter buffers that list the other slots' blocks, made by
    ``derive(buffers)`` -> (those buffers, the new ones among them: uploaded first), or None where it cannot make
    them; their results and scratch may be held in several blocks too.
    ``pipelines``: the device's (runtime/pipelines.py), whose ``generation`` says whether kept ops are valid.

    The kp ops of the launches on one set of blocks are made once (Encoder.encode) and kept, keyed by the
    blocks of the slots they bind (at most OP_SETS sets; with ``derive``, each slot's whole block list, and the
    derived buffers kept with the ops): a loop whose results come back to the same blocks from the caching
    allocator appends the same ops again, as a recorded batch is submitted again. They are dropped when the
    device drops any algorithm (a block destroyed, the algorithm cache full or cleared)."""

    __slots__ = ("submitter", "steps", "out_nbytes", "out_class", "scratch", "owner", "pipelines", "derive", "slots",
                 "key", "fixed", "sets", "generation", "scratch_classes")

    def __init__(self, queue: Submitter, steps: tuple, out_nbytes: int, scratch: tuple, owner: int | None,
                 pipelines: Any, derive: Callable[[list], tuple[list, list] | None] | None = None, given: int = 0):
        self.submitter = queue
        self.steps = steps
        self.out_nbytes = out_nbytes
        self.out_class = size_class(out_nbytes, queue.memory.allocator.max_block)
        self.scratch = scratch
        self.scratch_classes = tuple((n, size_class(n, queue.memory.allocator.max_block)) for n in scratch)
        self.owner = owner
        self.pipelines = pipelines
        self.derive = derive
        self.slots = tuple(sorted({s for d in steps for s in d.buffers if s.__class__ is int}))
        self.key = _keyer(self.slots) if derive is None else _lists_keyer(tuple(s for s in self.slots if s < given))
        # the blocks of the launches' own buffers (parameters, the dummy binding), marked with the slots' ones
        self.fixed = tuple({id(blk): blk for d in steps for b in d.buffers if b.__class__ is not int
                            for blk in b.block_list}.values())
        self.sets: dict = {}          # the slots' blocks -> (the ops, the blocks they use)
        self.generation = pipelines.generation

    def queue(self, buffers: list, out: Buffer | None = None) -> Buffer | None:
        """Queues the launches into the device's open batch on ``buffers`` (the slots before the result's, then
        those after it up to the scratch's; slot 2, the result, is ``out`` or a new buffer) and returns the
        result's buffer; None, having done nothing, where they cannot be queued now: a recording of this
        thread is open, queueing is off (max_queued 0), the device is closed, or the zeroed scratch they used
        when prepared has been renewed (or a run that used it failed)."""
        queue = self.submitter
        memory = queue.memory
        with queue.lock:
            if memory.closed or not queue.settings.max_queued or queue.local.recording is not None:
                return None
            owner = self.owner
            if owner is not None:
                scratch = queue.scratch
                if owner != scratch.zeroed_serial or not scratch.zeroed_clean:
                    return None
            made = None
            if out is None:
                out = made = fitted(memory, self.out_nbytes, self.out_class) if self.derive is None else \
                    take(memory, self.out_nbytes)
            buffers.insert(2, out)
            if not self.scratch:
                if self.append(buffers, owner is not None):
                    return out
            else:
                taken = [fitted(memory, n, c) for n, c in self.scratch_classes] if self.derive is None else \
                    [take(memory, n) for n in self.scratch]
                buffers += taken
                queued = self.append(buffers, owner is not None)
                for b in taken:
                    b._release()
                if queued:
                    return out
            if made is not None:
                made._release()
            return None

    def append(self, buffers: list, zeroed: bool = False) -> bool:
        """Appends the launches on ``buffers`` (every slot filled but ``derive``'s) to the device's open batch,
        their ops kept per set of blocks (the class docstring); ``zeroed``: they use the device's zeroed scratch.
        False, having done nothing, where ``derive`` could not make its buffers. For a caller that holds the
        device's lock outside recordings, with max_queued > 0 (queue(), or a device check's launches)."""
        batch = self.submitter.batch
        sets = self.sets
        if self.generation != self.pipelines.generation:
            sets.clear()
            self.generation = self.pipelines.generation
        key = self.key(buffers)
        made = sets.get(key)
        if made is None:
            derived: Any = ()
            if self.derive is not None:
                made = self.derive(buffers)
                if made is None:
                    return False
                derived, fresh = made
                buffers = buffers + derived
                if fresh:
                    batch.stage(fresh)    # (their words uploaded before the launches that read them)
            if len(sets) >= OP_SETS:
                sets.clear()
            ops = batch.encoder.encode(self.steps, [], buffers)
            blocks = {id(blk): blk for s in self.slots for blk in buffers[s].block_list}
            blocks.update((id(blk), blk) for blk in self.fixed)
            made = sets[key] = (ops, tuple(blocks.values()), derived)     # (derived: its buffers kept alive)
        batch.ops += made[0]
        number = batch.number
        for blk in made[1]:
            blk.batch = number
        if zeroed:
            batch.zeroed = True
        batch.added()
        return True


OP_SETS = 1024    # the block sets whose ops a Prepared keeps: a decode loop binds a new index Tensor each step (bench apps:
                  # 512 steps), and its results alternate between a few blocks; the device keeps ALGORITHMS in all


def _keyer(slots: tuple) -> Any:
    """A function of a buffer list: the blocks of its buffers at ``slots`` (in order), as a tuple (a kept set's
    key). Written out for these slots (ints): a generic map over them costs several times as much per call."""
    return eval("lambda b: (" + "".join(f"b[{int(s)}]._block, " for s in slots) + ")")   # noqa: S307 (ints only)


def _lists_keyer(slots: tuple) -> Any:
    """_keyer for launches that bind buffers held in several blocks (a Prepared with ``derive``): each slot's
    whole block list, as a tuple."""
    return eval("lambda b: (" + "".join(f"tuple(b[{int(s)}].block_list), " for s in slots) + ")")   # noqa: S307
