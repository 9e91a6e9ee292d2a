"""mode="raise": the check of a call's index values, on the host for NumPy indices and on the device for
Tensor indices, which are never read back.

A gather of Tensors into a new Tensor checks its indices in its own kernel (GatherPlan.dispatches' ``raise_at``:
FLAG_RAISE in the index map, shaders/index_map.glsl): the result's buffer holds a report word past its bytes
(fused_layout), made 0 by a one-invocation launch before the gather (clearing), and a launch after it
reports the first index outside its dimension, in row-major order, and its value (fetch). Other calls (a
gather into ``out=``, or through the large-tensor variants; a scatter) are checked by two more launches queued
with the call (shaders/index_check.comp over the indices, then its report: on_device). Either way the device
reports at the next ``synchronize()`` or host read of what the check reaches (runtime Device.watch). What a
caller sees when an index is out of range:

- the call returns its result Tensor (or ``out``) at once, as any queued call does; the kernels resolve the
  bad index as mode="clamp" would, so nothing outside a tensor is read or written;
- the failure travels with the data: the call's result and ``out=`` Tensor, and every Tensor that a later
  queued call writes from them (its result, ``out=`` or in-place target; transitively: copies, gathers,
  scatters, views' packed copies, ``write(t)``, ONNX values), are failed. A view shares
  its base's state (a failure of any part of a buffer fails all of it);
- every host read of a failed Tensor or of any view of it (``numpy()``, ``tolist()``, ``item()``,
  ``np.asarray``, layer 1's ``Buffer.read()``) raises the IndexError that the host check would
  have raised (the function's name, or the ONNX node's, the index's position and value), every time, before
  it returns any data (a Tensor that several failures reached raises the first); a call that reads it (as
  data, indices or updates) raises it at the call, before any GPU work, once the failure is known (a call
  queued before the check's report returns, and what it writes is failed: its reads raise);
  ``Recording.run()`` raises it, before any GPU work, when a recorded call reads it;
- it stays failed until it is overwritten whole by a call that reads nothing failed: ``write()`` of all its
  elements, ``t[...] = x``, or a call into ``out=t`` that writes all of it (not in place); a write of part
  of it leaves it failed;
- errors reach only what they concern: a read of a Tensor that no failed call reached never raises another
  call's error (on any thread); ``synchronize()`` is the device-wide point: it raises, once, every failure of
  that device that no read or call has raised yet (several: one IndexError listing them all), so that a
  failure whose results were dropped is not lost.

A scatter in place (``out=`` its data: ``t[ids] = v``, ``np.add.at``, ``scatter_nd(t, ..., out=t)``) is guarded
instead (guard): the check, then a copy of the indices in which every index is replaced by one out of range
when any is bad, which the scatter reads with mode="drop": it writes nothing unless every index is good, and
the target is failed as any checked call's ``out=`` is (above: every read raises until it is overwritten whole),
its bytes unchanged.

Where the device cannot check (an index tensor held in several blocks, or of 2^32 - 1 elements or more, or
one whose type's largest value lies inside a dimension), the indices are read back and checked on the host
before any GPU work, as for NumPy indices.

Examples
--------
>>> import numpy as np, dmlgpu
>>> table = dmlgpu.tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
>>> rows = dmlgpu.take(table, dmlgpu.tensor(np.array([1, 4])), axis=0)     # 4 is out of range: queued
>>> copied = rows.copy()                                                    # queued: reached
>>> copied.numpy()
Traceback (most recent call last):
    ...
IndexError: take: index 4 at indices position (1,) is out of range for a dimension of size 4 (valid: [-size, size))
>>> table.numpy()[1]                                                        # not reached
array([2., 3.], dtype=float32)
>>> copied.write(np.zeros((2, 2))); copied.numpy()                         # overwritten whole
array([[0., 0.],
       [0., 0.]], dtype=float32)
"""
from __future__ import annotations

import contextvars
from typing import Callable

import numpy as np

from ..kernels import table as kernels
from .index_map import check_in_range
from ..runtime import Buffer, Device, Dispatch, Marked, Watch

MAX_COUNT = 2**32 - 2         # the most indices the device checks (index_check.comp: ~position != 0)
MAX_DIMS = 8                  # entries of its dimension list (index tuples of up to 8 components)
C_WORDS = 8 + 2 * MAX_DIMS    # its parameter words: count, dims' entries, signed, pass, slot, at, copy, report, dims
# The name a device check's report starts with where it is not the function's own (the ONNX backend's node:
# "Gather node 'n'"), set around the call that queues the check
CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("dmlgpu_index_check_caller", default=None)
UNROLL = 8                    # indices an invocation checks per step (index_check.comp's C_UNROLL)
# Where a call template's own device check runs (around()): False, before its launches (the first of them beside
# it); True, after them, beside the last (a measurement's switch: bench/probes/checked_split.py times both)
CHECK_AFTER = False
ONE_GROUP = 8192              # the most indices that index_check.comp's pass 4 checks in one workgroup (around())
_LARGEST = {np.dtype(t): int(np.iinfo(t).max) for t in (np.int32, np.uint32, np.int64, np.uint64)}   # (by index dtype)


class IndexCheck:
    """mode="raise"'s check of the indices of a call of ``op``: each index outside [-dim, dim) (a signed type)
    or [0, dim) is an IndexError naming the first one in row-major order. ``dims``: the dimension every index
    addresses (0-d), or the one each position of an index tuple addresses (1-d: the indices' last axis);
    ``column``: the indices are the caller's as a column of 1-tuples, whose positions the error gives without
    that last axis."""

    def __init__(self, op: str, dims: np.ndarray, column: bool = False):
        self.op = op
        self.dims = np.asarray(dims, dtype=np.int64)
        self.column = column        # the caller's indices as a column of 1-tuples (``ids[..., None]``: NumPy's
                                    # t[ids] = v and ufunc.at): positions are reported in the caller's shape
        self._largest = int(np.max(self.dims, initial=0))   # (guardable(): against each index type's largest value)
        self._words: dict = {}      # (count, index dtype, pass, report slot, word) -> a pass's parameter words
        self._steps: dict = {}      # a queued group of passes -> (the device, their launches: a runtime.Prepared)
        self._reports: dict = {}    # (indices' shape, dtype, caller) -> the report of a check (_report)

    def words(self, count: int, dtype: np.dtype, fetch: int = 0, slot: int = 0, at: int = 0,
              copy: bool = False, report: bool = False) -> np.ndarray:
        """The parameter words of index_check.comp's pass ``fetch`` (0: the check, its last workgroup reporting
        into ``slot`` where ``report``, 1: the report into ``slot``, 2: the accumulating word made 0, 3: the guard's
        copy, 4: the check and its report in one workgroup, with the guard's copy where ``copy``) over ``count``
        indices of ``dtype``, its accumulating word ``at`` of the status buffer: made once (an IndexCheck is
        planned per signature, which fixes the count and dtype)."""
        key = (count, dtype, fetch, slot, at, copy, report)
        words = self._words.get(key)
        if words is None:
            words = np.zeros(C_WORDS, np.uint32)
            dims = np.atleast_1d(self.dims).astype(np.uint64)
            words[:8] = count, dims.size, dtype.kind == "i", fetch, slot, at, copy, report
            words[8:8 + 2 * dims.size] = dims.view(np.uint32)      # little-endian: (low, high) pairs
            self._words[key] = words
        return words

    def message(self, pos: tuple, value: int, caller: str | None = None) -> str:
        """The IndexError's message, starting with ``caller`` (default: the function's name)."""
        dim = self.dims if self.dims.ndim == 0 else self.dims[pos[-1]]
        if self.column:
            pos = pos[:-1]
        return (f"{caller or self.op}: index {value} at indices position {pos} is out of range for a dimension "
                f"of size {dim} (valid: [-size, size))")

    def __call__(self, values: np.ndarray) -> None:
        """The host check of index values: IndexError for the first one out of range."""
        check_in_range(values, self.dims, self.message)

    def checkable(self, dev: Device, indices) -> bool:
        """True where ``dev`` can check this packed index Tensor (``indices``: its buffer at offset 0) itself;
        elsewhere (module docstring) the caller checks the values on the host."""
        return 0 < indices.size <= MAX_COUNT and not indices.buffer.chunked and self.dims.size <= MAX_DIMS and \
            dev.active_recording() is None

    def on_device(self, dev: Device, indices) -> Marked | None:
        """Queues the device check of a packed index Tensor (``indices``: its buffer at offset 0) on ``dev``;
        returns where to append the call's result buffers (Device.watch's Marked), or None where the device cannot
        check these indices (checkable()): the caller checks them on the host then. The check's two launches
        are made once per index count, dtype and report slot, and queued again on later calls."""
        if not self.checkable(dev, indices):
            return None
        with dev.lock:
            dev.check_open()
            watch = self.watch(dev, indices)
            count, dtype = indices.size, indices.dtype
            self._queue(dev, (count, dtype, 0, watch.slot),
                        lambda: (self._checking(count, dtype), self._reporting(count, dtype, watch.slot)),
                        bound=[indices.buffer, watch.buffer, watch.reports])
        return watch.results

    def guardable(self, dev: Device, indices) -> bool:
        """True where a scatter in place can be guarded by the device's check of these indices (guard()): the
        device checks them (checkable()), the largest value of their type lies outside every dimension's range
        (the guard's stand-in for each index when one is bad), and their 32-bit words number under 2^32 - 1."""
        dtype = indices.dtype
        return self.checkable(dev, indices) and indices.size * (dtype.itemsize // 4) < MAX_COUNT and \
            self._largest <= (_LARGEST.get(dtype) or int(np.iinfo(dtype).max))

    def guard(self, dev: Device, indices, into: Buffer):
        """Queues the check of a packed index Tensor (guardable()) and the copy of its indices into ``into`` (a
        buffer of their bytes), every one replaced by the largest value of its type where one is bad
        (index_check.comp's pass 3): a scatter of that copy with mode="drop" writes nothing unless every index
        is good. Returns the check's watch, which report() takes after the scatter is queued. The two launches are
        made once per index count and dtype, and queued again on later calls."""
        with dev.lock:
            dev.check_open()
            watch = self.watch(dev, indices)
            count, dtype = indices.size, indices.dtype
            self._queue(dev, (count, dtype, 3),
                        lambda: (self._checking(count, dtype) + ((0, 1, 2),),
                                 self._copying(count, dtype) + ((0, 1, 3),)),
                        bound=[indices.buffer, watch.buffer, watch.reports, into], host_read=False)
        return watch

    def report(self, dev: Device, indices, watch) -> None:
        """Queues the report of a guard()'s check (after the guarded scatter): an IndexError at the device's next
        synchronize() or host read when an index was bad, the scatter having written nothing."""
        with dev.lock:
            dev.check_open()
            count, dtype = indices.size, indices.dtype
            self._queue(dev, (count, dtype, 1, watch.slot), lambda: (self._reporting(count, dtype, watch.slot),),
                        bound=[indices.buffer, watch.buffer, watch.reports])

    @staticmethod
    def fused_layout(nbytes: int) -> tuple[int, int]:
        """For a gather that checks its own indices (GatherPlan.dispatches' ``raise_at``) into a result of
        ``nbytes``: (the report word, counted in 32-bit words from the start of the result's buffer, the buffer's
        bytes). The word follows the result's bytes rounded up to 16, which no store of the gather touches."""
        at = -(-nbytes // 16) * 4
        return at, 4 * at + 16

    def clearing(self, dev: Device, indices, output: Buffer, at: int) -> tuple[Dispatch, list[Buffer]]:
        """(the launch, its parameter buffer if it needs uploading) that precedes a gather checking its own
        ``indices`` (a packed Tensor that checkable() accepts) into word ``at`` of ``output`` (fused_layout):
        that word made 0. The caller runs it with the gather's launches (a call template keeps it with them).
        ``output`` is bound as the reports too, which this pass does not write (so that no other buffer is seen
        as written by it)."""
        params, fresh = dev.params(self.words(indices.size, indices.dtype, 2, 0, at))
        kernel = kernels.check_variant(indices.dtype.itemsize)
        return Dispatch(kernel, (params, indices.buffer, output, output), 1), [params] if fresh else []

    def fetch(self, dev: Device, indices, output: Buffer, at: int) -> Marked:
        """Queues what follows a gather that checked its own ``indices`` into word ``at`` of ``output`` (after
        clearing()): the report of its first bad index, as on_device's check reports it; returns where to append
        the call's result buffers (Device.watch's Marked)."""
        with dev.lock:
            dev.check_open()
            watch = self.watch(dev, indices)
            count, dtype = indices.size, indices.dtype
            self._queue(dev, (count, dtype, 1, watch.slot, at),
                        lambda: (self._reporting(count, dtype, watch.slot, at),),
                        bound=[indices.buffer, output, watch.reports])
        return watch.results

    def around(self, dev: Device, indices, slot: int, at: int | None = None, guard: int | None = None) -> \
            tuple[tuple, tuple, bool] | None:
        """For a call template that queues this check with its own launches in one Prepared (Template.checked): the
        check's passes before and after those launches, as template Dispatches whose buffers are the template's
        slots (1: the indices, 2: the result) or the device's check buffers, the report written into ``slot``, and
        whether the launches and the passes next to them may run beside each other (the barrier dropped of the
        first launch, after passes before them, or of the pass after them: the barrier before the first of the
        two orders both after earlier work; the launches write neither the indices, nor the check's word, nor the
        reports). Up to ONE_GROUP indices, the device's check or the guard (``guard``: the slot of the copy of the
        indices that the launches scatter) is one workgroup's pass (index_check.comp's pass 4: the check, its
        report and the guard's copy) before the launches (the device's check after them where CHECK_AFTER; the
        launches run beside it unless they read the guard's copy). Otherwise: the device's check before the
        launches (after them where CHECK_AFTER), its last workgroup making the report (pass 0 with C_SELF); the
        report of the gather's own check into word ``at`` of its result after them (pass 1: it reads what they
        write, so not beside them); or the guard's check, copy and report before the launches (passes 0, 3 and 1:
        they scatter the copy, which the report's barrier orders before them). Parameter buffers are made once
        (Device.params) and uploaded before the launches that read them. None where the device's check buffers are
        not made yet (its first watch)."""
        count, dtype = indices.size, indices.dtype
        buffers = dev.checks.buffers
        if buffers is None:
            return None
        watched, reports = buffers
        if at is not None:
            return (), (self._pass(dev, indices, self._reporting(count, dtype, slot, at), (1, 2, reports)),), False
        if count <= ONE_GROUP:
            one = (self.words(count, dtype, 4, slot, 0, guard is not None), 1)
            made = self._pass(dev, indices, one, (1, reports, reports if guard is None else guard))
            if guard is None:
                return ((), (made,), True) if CHECK_AFTER else ((made,), (), True)
            return (made,), (), False
        if guard is None:           # (its last workgroup reports)
            made = self._pass(dev, indices, self._checking(count, dtype, slot, True), (1, watched, reports))
            return ((), (made,), True) if CHECK_AFTER else ((made,), (), True)
        return (self._pass(dev, indices, self._checking(count, dtype), (1, watched, reports)),
                self._pass(dev, indices, self._copying(count, dtype), (1, watched, guard)),
                self._pass(dev, indices, self._reporting(count, dtype, slot), (1, watched, reports))), (), True

    def _checking(self, count: int, dtype: np.dtype, slot: int = 0, report: bool = False) -> tuple:
        """(parameter words, invocations) of the check's pass 0 (``report``: its last workgroup reports into
        ``slot``)."""
        return self.words(count, dtype, 0, slot, report=report), -(-count // UNROLL)

    def _copying(self, count: int, dtype: np.dtype) -> tuple:
        """(parameter words, invocations) of the guard's copy (pass 3): an invocation per 32-bit word."""
        return self.words(count, dtype, 3), count * (dtype.itemsize // 4)

    def _reporting(self, count: int, dtype: np.dtype, slot: int, at: int = 0) -> tuple:
        """(parameter words, invocations) of the report of accumulating word ``at`` into ``slot`` (pass 1)."""
        return self.words(count, dtype, 1, slot, at), 1

    @staticmethod
    def _pass(dev: Device, indices, made: tuple, bound: tuple) -> Dispatch:
        """A template Dispatch of index_check.comp's pass ``made`` ((parameter words, invocations): their buffer
        uploaded before the next launches where it is new) on ``bound`` (template slots or Buffers)."""
        params, fresh = dev.params(made[0])
        if fresh:
            with dev.launch() as launch:
                launch.stage([params])
        return Dispatch(kernels.check_variant(indices.dtype.itemsize), (params, *bound), made[1],
                        groups=dev.workgroups(made[1]))

    def watch(self, dev: Device, indices) -> Watch:
        """A watch of ``dev`` (Device.watch) whose report is this check's for these indices and the caller, for a
        caller that holds the device's lock and queues the check's passes with it (Template.checked, and this
        class's own calls)."""
        caller = CALLER.get()
        report = self._reports.get((indices.shape, indices.dtype, caller))
        if report is None:
            if len(self._reports) >= 64:
                self._reports.clear()
            report = self._reports[indices.shape, indices.dtype, caller] = self._report(indices.shape, indices.dtype,
                                                                                         caller)
        return dev.watch(report)

    def _queue(self, dev: Device, key: tuple, passes: Callable[[], tuple], bound: list, host_read: bool = True) -> None:
        """Queues index_check.comp's passes (``passes()``: (parameter words, invocations[, the slots of ``bound``
        that the pass binds: default (0, 1, 2)]) each) on ``dev`` on ``bound`` (the indices' buffer, the
        accumulating buffer, the reports' buffer[, the guard's copy]), for a caller that holds the device's lock:
        their launches made once per ``key`` (a runtime.Prepared, whose hit needs no launch) and queued again on
        later calls. ``host_read``: a run made now (no queueing) ends with the barrier before the host's reads."""
        made = self._steps.get(key)
        if made is not None and made[0] is dev and dev.max_queued and dev.active_recording() is None:
            made[1].append(bound)           # (the parameters were uploaded when made)
            return
        kernel = kernels.check_variant(key[1].itemsize)
        made_passes = passes()
        slots = [p[2] if len(p) > 2 else (0, 1, 2) for p in made_passes]
        params = [dev.params(p[0]) for p in made_passes]
        dispatches = [Dispatch(kernel, (prm, *[bound[s] for s in at]), p[1])
                      for (prm, _), p, at in zip(params, made_passes, slots)]
        with dev.launch() as launch:
            launch.run(dispatches, uploads=[p for p, fresh in params if fresh], queue=True, host_read=host_read)
        self._steps[key] = (dev, dev.prepare(tuple(Dispatch(d.kernel, (d.buffers[0], *at), d.count,
                                                            groups=dev.workgroups(d.count))
                                                   for d, at in zip(dispatches, slots)), 0))

    def _report(self, shape: tuple, dtype: np.dtype, caller: str | None) -> Callable[[np.ndarray], BaseException | None]:
        """The report of the device check's slot (index_check.comp: the accumulated word, the first bad
        position, its value's low and high words): None, or the IndexError."""
        def report(words: np.ndarray) -> BaseException | None:
            if not words[0]:
                return None
            bits = 8 * dtype.itemsize
            value = (int(words[2]) | int(words[3]) << 32) & ((1 << bits) - 1)
            if dtype.kind == "i" and value >> (bits - 1):
                value -= 1 << bits
            pos = tuple(int(c) for c in np.unravel_index(int(words[1]), shape))
            error = IndexError(self.message(pos, value, caller))
            setattr(error, "device_check", True)     # (re-raised as it is by later calls: arguments.named)
            return error
        return report
