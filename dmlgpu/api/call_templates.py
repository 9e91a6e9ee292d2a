"""Call templates: what a repeated eager call on Tensors records, worked out once per signature and device.

A layer-2 call on device Tensors whose signature (the function, the operands' shapes and dtypes, the other
arguments) was planned before records the same launches each time: the same kernel variants, workgroup
counts, barriers and parameter buffers, on new buffers (the result, a reduction's scratch). A template is
those launches with the per-call buffers as slots: ``[data, indices, output, updates, claims, scratch...]``
(claims: the device's scatter claim buffer, which a template never holds). A hit
costs the argument checks of the fast path (``templated``: driver.call tries it before any other argument
handling; the gathers try ``gathered``, the same key made for their arguments alone, before driver.call), a
dictionary lookup, ``Template.hit`` (the operands' conditions; ``run`` where the template needs more than its
launches) and ``Prepared.queue`` (runtime/launch.py: the template's launches prepared
once by ``Device.prepare()``), which takes the result (and scratch) from the caching allocator and appends the
launches' kp ops to the device's open batch (made once per set of blocks they bind, and kept); a template of
mode="raise" then queues the report of the check that its gather made (IndexCheck.fetch), or the device's check
of the indices (IndexCheck.on_device), their launches also made once; later hits queue the launches and the check's
passes as one Prepared per report slot of the device's check buffers (``Template.checked``: IndexCheck.around), then
take the slot's watch.
Templates of large-tensor launches (operands held in several blocks) queue through it too, their parameter
buffers (the blocks' addresses: ``Template.params``) made once per set of block lists and kept with the ops.

embedding_bag and segment_reduce on Tensors (dmlgpu/api/fused.py) take the same fast path: their operands fill the
data, indices and updates slots (table, ids, offsets; data, offsets), embedding_bag's template queuing the device's
check of its ids; calls with weights, ``initial`` or operands that a launch would copy first are never traced.
Templates are made by tracing: the first two planned runs of a signature (execution._run_tensors) are traced,
and the template is kept only when both traces agree, slot for slot, on every launch and every buffer that is
not a per-call one (parameter buffers, the dummy binding, the scatter claim buffer); a run whose operands share a
buffer (a scatter's updates a view of its data) is not traced, its slots being ambiguous. A run whose launches
depend on more than the signature (a check of the index values on the host: mode="raise" with NumPy indices, or
indices the device cannot check) is never templated, and takes the planned path every time; mode="raise" on Tensor
indices is, its template queuing the device's check of the indices (plans/index_check.py) with its launches, or,
for a scatter in place (t[ids] = v, ufunc.at), the guard before them (IndexCheck.guard: the check and a copy of the
indices that the launches scatter with mode="drop") and its report after them. A large-tensor variant's parameters
hold its buffers' block addresses: its template makes them per set of blocks (``Template.params``).

Conditions checked on a hit (otherwise the call takes the planned path, which re-traces): no recording of this
thread is open, queueing is on (max_queued > 0), every operand is on the template's device (held in one block,
but for large-tensor templates), and the scatter claim buffer is still the one traced (Device.zeroed_serial) and
clean. Parameter words that hold block addresses belong to the large-tensor launches alone
(shaders/addressing.glsl), so the other templates' parameter buffers hold only words fixed by their signature.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any


from ..plans.index_check import IndexCheck
from ..plans.addressing import block_params
from ..plans.plan import CLAIMS as CLAIMS_KEY
from ..runtime import COPY, Dispatch, Prepared
from .tensor import Tensor, covers_base

if TYPE_CHECKING:
    from .device import Runtime

CLAIMS, SCRATCH = 4, 5        # the slot of the scatter claim buffer; slots from SCRATCH on: a run's scratch


class Template:
    """The launches of one planned call on one device; ``run(operands)`` records them on new buffers."""

    __slots__ = ("device", "steps", "out_shape", "out_nbytes", "scratch", "owner", "recipes", "check", "at",
                 "guard", "prepared", "plain", "slotted")

    def __init__(self, device: Runtime, steps: tuple, out_shape: tuple, out_nbytes: int, scratch: tuple, owner,
                 recipes: tuple, check: IndexCheck | None = None, at: int | None = None, guard: bool = False):
        self.device = device
        self.steps = steps            # template Dispatches: slots for buffers, workgroups fixed (runtime/encode.py)
        self.out_shape = out_shape
        self.out_nbytes = out_nbytes
        self.scratch = scratch        # sizes of the scratch buffers, in the order the plan took them
        self.owner = owner            # Device.zeroed_serial of the claim buffer the launches use, or None
        self.recipes = recipes        # large-tensor launches' parameters, made per call: (words, block-list slots,
                                      # words padded to or 0), their buffers in the slots after the scratch, in order
        self.check = check            # mode="raise": the device check of the indices, queued with the launches
        self.at = at                  # ... made by the gather's kernel itself: the report word in the result's
                                      # buffer (IndexCheck.fused_layout; the steps clear it), reported after them
        self.guard = guard            # ... guarding a scatter in place (IndexCheck.guard): queued before the steps,
                                      # which scatter its copy of the indices (slot 1), and reported after them
        self.prepared: Prepared | None = None   # the launches prepared for queuing (Device.prepare), once the template is kept
        self.plain: Prepared | None = None      # ``prepared`` where a hit needs nothing else: no check, no claim
                                                # buffer, no scratch (hit())
        self.slotted: dict = {}       # a checked template's report slot -> (the device's check buffers, the
                                      # launches with the check's passes: a Prepared) (checked())

    def __eq__(self, other) -> bool:
        return isinstance(other, Template) and self.steps == other.steps and self.scratch == other.scratch and \
            self.owner == other.owner and self.out_nbytes == other.out_nbytes and self.check is other.check and \
            self.at == other.at and self.guard == other.guard and \
            [(w.tobytes(), s, n) for w, s, n in self.recipes] == [(w.tobytes(), s, n) for w, s, n in other.recipes]

    def run(self, operands: tuple, out: Tensor | None = None):
        """The result Tensor of the call on ``operands`` (data, indices[, updates]: Tensors of the traced
        shapes and dtypes), queued, in a new Tensor or ``out`` (the Tensor of the signature's out_key());
        None when a hit's conditions do not hold (module docstring)."""
        dev = self.device
        recipes = self.recipes
        prepared = self.prepared
        if prepared is None:
            return None
        bufs = []
        for o in operands:
            b = o.buffer
            if b.device is not dev or o.offset or b.chunked and not recipes:
                return None
            bufs.append(b)
        if out is not None:
            b = out.buffer
            if b.device is not dev or b.chunked and not recipes or out.offset or b in bufs[1:] or \
                    out.shape != self.out_shape or out.dtype != operands[0].dtype:
                return None         # (out is data's buffer only in place: out_key())
        lineage = None              # poison (plans/index_check.py): a failed operand raises here
        if dev.tainted:
            lineage = dev.taint(bufs, None if out is None else out.buffer,
                                out is not None and out.buffer is not bufs[0] and covers_base(out))
        check = self.check
        if len(bufs) < CLAIMS - 1:
            bufs.append(None)
        bufs.append(None if self.owner is None else dev.zeroed_buffer(CLAIMS_KEY))
        if check is None:
            result = prepared.queue(bufs, None if out is None else out.buffer)
            if result is None:
                return None
        else:
            result = self.checked(bufs, operands[1], out)
            if result is None:
                return None
            if result is False:     # (the long way: checked()'s docstring says when)
                if self.guard:
                    return self._guarded(bufs, operands[1], out)
                with dev.lock:      # (the launches, then the device's check of their indices, with nothing between)
                    if not check.checkable(dev, operands[1]):
                        return None
                    result = prepared.queue(bufs, None if out is None else out.buffer)
                    if result is None:
                        return None
                    self._check(operands[1], result, out)
        if out is not None:
            return out
        if lineage is not None:
            dev.reach(lineage, result)
        return _wrap(result, self.out_shape, operands[0].dtype)

    def checked(self, bufs: list, indices: Tensor, out: Tensor | None) -> Any:
        """run() of a checked template (``check``: the device's check of ``indices``, the report of the gather's own
        check, or the guard of a scatter in place) as one Prepared per report slot of the device's check buffers:
        the check's passes before and after the launches (IndexCheck.around; for the guard, the launches scatter
        the copy of the indices that its passes make in a scratch buffer), queued together, then the device's watch
        of the slot taken and the result appended to it. Returns the result's buffer (``out``'s, in place), None
        where it cannot be queued now (nothing queued: the caller takes the planned path), or False where the next
        slot's Prepared cannot be made (every slot awaits its report, the device's check buffers are not made yet,
        the indices are held in several blocks: the caller takes the long way, _check or _guarded)."""
        dev, check = self.device, self.check
        assert check is not None
        checks = dev.checks
        if indices.buffer.chunked:
            return False
        with dev.lock:
            slot = len(checks.watched)              # (the slot Checks.watch gives next, under the same lock)
            made = self.slotted.get(slot)
            if made is None or made[0] is not checks.buffers:
                if slot >= checks.slots:
                    return False
                copy = SCRATCH + len(self.scratch) if self.guard else None
                passes = check.around(dev, indices, slot, self.at, copy)
                if passes is None:
                    return False
                steps = self.steps if copy is None else \
                    tuple(dataclasses.replace(d, buffers=tuple(copy if b.__class__ is int and b == 1 else b
                                                               for b in d.buffers)) for d in self.steps)
                before, after, beside = passes
                if beside and before and steps[0].kernel != COPY:      # (beside the last pass before them)
                    steps = (dataclasses.replace(steps[0], barrier=False),) + steps[1:]
                if beside and after and steps[-1].kernel != COPY:      # (the first pass after them beside them)
                    after = (dataclasses.replace(after[0], barrier=False),) + after[1:]
                scratch = self.scratch if copy is None else self.scratch + (max(4, indices.nbytes),)
                made = self.slotted[slot] = (checks.buffers, dev.prepare(
                    before + steps + after, self.out_nbytes, scratch, self.owner,
                    self.params if self.recipes else None, SCRATCH + len(self.scratch)))
            result = made[1].queue(bufs, None if out is None else out.buffer)
            if result is None:
                return None
            check.watch(dev, indices).results.append(result)
            return result

    def _guarded(self, bufs: list, indices: Tensor, out: Tensor | None) -> Tensor | None:
        """run() of a scatter in place guarded by the device's check of ``indices`` (``guard``; execution._guarded's
        launches): the check and the copy of the indices (all out of range where any is bad) into a new buffer,
        the steps on that copy, then the check's report, which ``out`` (the target, unchanged where an index is
        bad) awaits. None, having queued nothing, where they cannot be queued now (no queueing, a recording of
        this thread, the claim buffer renewed, indices the guard cannot take)."""
        dev, check, owner = self.device, self.check, self.owner
        assert check is not None and out is not None and self.prepared is not None
        if not dev.max_queued:
            return None
        with dev.launch() as launch:
            if launch.recording is not None or owner is not None and (owner != dev.zeroed_serial or
                                                                      not dev.zeroed_clean) or \
                    not check.guardable(dev, indices):
                return None
            bufs[1] = copy = launch.scratch(max(4, indices.nbytes), True)    # (given back when the launch ends)
            watch = check.guard(dev, indices, copy)
            queued = self.prepared.queue(bufs, out.buffer) is not None
            if queued:
                watch.results.append(out.buffer)
            check.report(dev, indices, watch)
        return out if queued else None

    def params(self, bufs: list) -> tuple[list, list] | None:
        """The parameter buffers of the large-tensor launches (``recipes``) for the buffers ``bufs`` (every slot
        before theirs filled), and those of them that are new (their words to be uploaded first); None where a
        list outgrows the words padded when traced (an operand held in more blocks than its shape needs)."""
        dev = self.device
        bodies = [block_params(words, dev.block_table([None if s is None else bufs[s] for s in slots], len(words)),
                               size) for words, slots, size in self.recipes]
        ready = [body for body in bodies if body is not None]
        if len(ready) < len(bodies):
            return None
        made, fresh = [], []
        for body in ready:
            params, new = dev.params(body)
            made.append(params)
            if new:
                fresh.append(params)
        return made, fresh

    def hit(self, data: Tensor, indices: Tensor, updates: Tensor | None = None, out: Tensor | None = None) -> Any:
        """``run((data, indices[, updates]), out)``, shortened where the template is ``plain`` and the operands are
        the common ones (each in one block of the template's device at offset 0, ``out`` none or of the traced
        shape and dtype, no device check failed): the launches queued by Prepared.queue, nothing else."""
        plain = self.plain
        dev = self.device
        if plain is not None and not dev.checks.tainted:
            b0, b1 = data.buffer, indices.buffer
            if b0.device is dev and b1.device is dev and not (data.offset or indices.offset or b0.chunked or
                                                              b1.chunked):
                if updates is None:
                    bufs = [b0, b1, None, None]
                else:
                    b3 = updates.buffer
                    if b3.device is not dev or updates.offset or b3.chunked:
                        return None
                    bufs = [b0, b1, b3, None]
                if out is None:
                    result = plain.queue(bufs)
                    return None if result is None else _wrap(result, self.out_shape, data.dtype)
                b = out.buffer
                if b.device is not dev or b.chunked or out.offset or b is b1 or updates is not None and b is b3 or \
                        out.shape != self.out_shape or out.dtype != data.dtype:
                    return None     # (out is data's buffer only in place: out_key())
                return None if plain.queue(bufs, b) is None else out
        return self.run((data, indices) if updates is None else (data, indices, updates), out)

    def _check(self, indices: Tensor, result, out: Tensor | None) -> None:
        """mode="raise" (``check``; the caller has made sure that it is checkable()): queues, after the launches
        (which write no indices: ``out`` is never the indices' buffer), the report of the check that the gather
        made (``at``: the steps cleared its word) or the device's check of ``indices``; ``result`` (new, or
        ``out``'s buffer) is never read as valid if it fails."""
        check = self.check
        if check is not None:
            results = check.on_device(self.device, indices) if self.at is None else \
                check.fetch(self.device, indices, result, self.at)
            if results is not None:
                results.append(result)


def trace(dev: Runtime, sig, dispatches: list, buffers: list, scratch: list, out_shape: tuple,
          check: IndexCheck | None = None, at: int | None = None, guard: bool = False) -> None:
    """Records a planned run on ``dev`` (its ``dispatches`` on ``buffers`` = [data, indices, output, updates
    or None] and the ``scratch`` buffers the plan took, in order) for signature ``sig``: the second trace that
    equals the first makes the signature's template. ``check``: the device check of the indices that the run
    was queued with (mode="raise"; never in place), which the template queues with its launches too; ``at``:
    the gather's kernel made it (the report word in the result's buffer: IndexCheck.fused_layout), the
    template then queuing only its report (IndexCheck.fetch) after its launches; ``guard``: the run is the
    scatter in place of execution._guarded (``buffers[1]`` the guard's copy of the indices), the template queuing
    the guard before its launches and the report after them (never for large tensors' launches)."""
    per_call = buffers + [dev.zeroed_buffer(CLAIMS_KEY)] + scratch
    slots = {id(b): n for n, b in enumerate(per_call) if b is not None}
    if len(slots) < sum(b is not None for b in per_call) - (per_call[2] is per_call[0]):
        return      # one buffer in two slots (updates a view of data): its launches' slots cannot be told apart
                    # (but data's own buffer as the output: in place, which the signature's key says)
    steps: list[Any] = []
    recipes: list[Any] = []
    for d in dispatches:
        bound = tuple(slots.get(id(b), b) for b in d.buffers)
        if d.kernel != COPY and (d.wide or any(b.chunked for b in d.buffers)):
            recipe = d.buffers[0].recipe      # the block lists: remade per call from these slots
            if not d.wide or recipe is None or any(s is not None and s not in slots for s in recipe[1]):
                return
            bound = (len(per_call) + len(recipes),) + bound[1:]
            recipes.append((recipe[0], tuple(None if s is None else slots[s] for s in recipe[1]), recipe[2]))
        steps.append(Dispatch(d.kernel, bound, d.count, d.barrier, d.wide, groups=dev.workgroups(d.count)))
    if guard and recipes:
        return
    uses_owner = any(s == CLAIMS for step in steps for s in step.buffers if s.__class__ is int)
    out = buffers[2]
    template = Template(dev, tuple(steps), out_shape, out.nbytes, tuple(b.nbytes for b in scratch),
                        dev.zeroed_serial if uses_owner else None, tuple(recipes), check, at, guard)
    known = dev.templates.pop(sig, None)
    while len(dev.templates) >= TEMPLATES:
        del dev.templates[next(iter(dev.templates))]
    if isinstance(known, _Candidate) and known.template == template:
        template.prepared = dev.prepare(template.steps, template.out_nbytes, template.scratch, template.owner,
                                        template.params if recipes else None, len(per_call))
        if check is None and template.owner is None and not template.scratch and not recipes:
            template.plain = template.prepared
        dev.templates[sig] = template
    else:
        dev.templates[sig] = _Candidate(template)


class _Candidate:
    """A first trace, waiting for a second that agrees with it (``run`` declines every call until then)."""

    __slots__ = ("template",)

    def __init__(self, template: Template):
        self.template = template

    @staticmethod
    def run(operands: tuple, out=None) -> None:
        return None

    @staticmethod
    def hit(data, indices, updates=None, out=None) -> None:
        return None


TEMPLATES = 512               # templates (and candidates) kept per device
_wrap = Tensor._wrap


def held(dev: Runtime) -> list:
    """The buffers that ``dev``'s templates (and candidates) keep alive: their parameter buffers and the dummy
    binding (each once)."""
    kept = {}
    for t in dev.templates.values():
        for step in (t.template if isinstance(t, _Candidate) else t).steps:
            for s in step.buffers:
                if s.__class__ is not int:
                    kept[id(s)] = s
    return list(kept.values())


def templated(op: str, data: Tensor, indices: Tensor, updates: Any, args: tuple, out: Any = None) -> Any:
    """The result of ``op`` on packed Tensors ``data`` and ``indices`` (and ``updates``, a Tensor or None) with
    the other arguments ``args`` (its signature's key: template only where each is an exact int or str) and
    ``out`` (a Tensor or None) through the device's template for that signature, or None (no template yet, an
    operand of another kind, or a hit's conditions do not hold: the caller takes the planned path)."""
    key = signature(op, data, indices, updates, args, out)
    if key is None:
        return None
    template = data.buffer.device.templates.get(key)    # type: ignore[attr-defined]   # (a Runtime: Tensor's contract)
    return None if template is None else template.hit(data, indices, updates, out)


def gathered(op: str, data: Any, indices: Any, arg: Any, mode: Any) -> Tensor | None:
    """``templated(op, data, indices, None, (arg, mode))`` for the gathers' calls without ``out``, ``device`` or
    ``fill_value`` (dmlgpu.gather, gather_elements, gather_nd: their one argument ``arg``, then ``mode``), tried by
    them before their driver.call: the same key, made without its general case. None where driver.call decides."""
    if data.__class__ is Tensor and indices.__class__ is Tensor and data._strides is None and \
            indices._strides is None and arg.__class__ is int and mode.__class__ is str:
        template = data.buffer.device.templates.get(      # type: ignore[attr-defined]   # (a Runtime: Tensor._rt)
            (op, data.shape, data.dtype, indices.shape, indices.dtype, arg, mode))
        if template is not None:
            return template.hit(data, indices)
    return None


def signature(op: str, data: Any, indices: Any, updates: Any, args: tuple, out: Any = None) -> tuple | None:
    """The template key of a call (templated()'s), or None where the call has none: an argument in ``args`` that
    is not an exact int or str, ``updates`` other than None or a packed Tensor, ``out`` other than None or a
    packed Tensor."""
    for a in args:
        if a.__class__ is not int and a.__class__ is not str:
            return None
    if updates is None:
        key: tuple = (op, data.shape, data.dtype, indices.shape, indices.dtype, *args)
    elif updates.__class__ is Tensor and updates._strides is None:
        key = (op, data.shape, data.dtype, indices.shape, indices.dtype, updates.shape, updates.dtype, *args)
    else:
        return None
    if out is not None:
        if out.__class__ is not Tensor or out._strides is not None:
            return None
        key += out_key(out, data)
    return key


def out_key(out, data) -> tuple:
    """The part of a call's signature that ``out`` decides: () without one (or a NumPy ``out``, which the
    call fills from its result), ("in place",) for a Tensor at ``data``'s own bytes (the same buffer and
    offset), ("out",) for another Tensor. Call templates (dmlgpu/api/call_templates.py) are keyed by it too."""
    if not isinstance(out, Tensor):
        return ()
    if out is data or isinstance(data, Tensor) and out.buffer is data.buffer and out.offset == data.offset:
        return IN_PLACE
    return OUT


IN_PLACE, OUT = ("in place",), ("out",)

