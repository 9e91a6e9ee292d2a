"""How a layer-2 call runs: its plan, found by signature (``_planned``), then run on the operands' buffers
(``_execute``): NumPy operands are uploaded and the result downloaded (but a gather's large NumPy table is read
where it is: ``reads_in_place``); Tensor operands are used where they are and the result is a new Tensor, queued,
or ``out``.

Repeated calls: each call's validation and planning depend only on its *signature* (the function, the
operands' shapes and dtypes, axis or batch_dims, mode, reduction, the kind of ``out``). Every Device keeps the
last ``CALL_CACHE`` planned calls by signature, so a repeated call checks only what depends on the values
(mode="raise" reads the indices) before it moves data.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple

import numpy as np

from . import call_templates as _calls
from ..plans import ops
from .call_templates import IN_PLACE, out_key
from .arguments import named, other_device
from .device import Runtime
from ..errors import DeviceError
from ..plans import index_check
from ..plans.index_check import IndexCheck
from ..plans.index_map import IndexMap, Layout
from ..plans.plan import GatherPlan
from ..runtime import as_bytes, host
from .constructors import empty, tensor
from .tensor import Tensor, covers_base

CALL_CACHE = 512      # planned calls kept per device
# NumPy tables read where they are (runtime/host.py: their pages imported, VK_EXT_external_memory_host): the one
# rule, reads_in_place(). A gather from a NumPy ``data`` of at least HOST_TABLE_BYTES whose result takes at most
# HOST_READ_SHARE of its bytes plus HOST_READ_BYTES (any share on unified memory, where the device's memory is the host's: lavapipe,
# integrated GPUs) reads the rows it needs from the caller's array instead of uploading the whole table
# (bench/RESULTS.md: the crossover); so does any gather from a table larger than the device's memory.
# A NumPy-in/out gather's result of at least HOST_OUT_BYTES is written by the kernels into the returned array
# itself (writes_in_place), whether its table is read in place or uploaded.
HOST_TABLE_BYTES = 1 << 20
HOST_READ_SHARE = 0.4
HOST_READ_BYTES = 32 << 20   # ... or at most this many bytes more than that share
HOST_OUT_BYTES = 1 << 20    # (= KEEP_BYTES: smaller calls keep their buffers and replay instead)
KEEP_BYTES = 1 << 20  # NumPy-in/out calls moving up to this many bytes keep their device buffers ...
KEEP_CALLS = 32       # ... for the last this many such signatures per device


class _Call(NamedTuple):
    """A planned call: ``plan`` (Plan or ReducePlan; None when the call moves nothing), the result's shape,
    ``check(values)`` (mode="raise": IndexError for a bad index value) or None, ``copy`` (True: a scatter
    that updates nothing returns a copy of data; else the empty result of ``out_shape``), and ``keep``: the
    call's signature when its operands and result take at most KEEP_BYTES (a NumPy-in/out call then keeps
    its device buffers for the next call of that signature, which submits the same recorded command buffer
    again: the runtime's replays of synchronous runs), else None; ``sig``: the call's signature (None: it has
    none), under which runs on Tensors are traced into a call template (dmlgpu/api/call_templates.py); ``guarded``:
    a mode="raise" scatter's plan with mode="drop", which runs a scatter in place on Tensor indices behind the
    device's check (IndexCheck.guard) instead of reading the indices back."""

    plan: Any           # Plan or ReducePlan
    out_shape: tuple
    check: IndexCheck | None = None
    copy: bool = False
    keep: tuple | None = None
    sig: tuple | None = None
    guarded: Any = None     # a scatter's plan with mode="drop", for a check that guards it in place (index_check)


def _planned(dev: Runtime, op: str, arrays: tuple, args: tuple, build: Callable[[], _Call], name: str | None = None) \
        -> _Call:
    """The planned call of ``op`` on ``arrays`` (NumPy arrays or Tensors, already checked by _operands) with
    ``args`` (axis or batch_dims, mode, reduction): from ``dev``'s cache by signature, else ``build()`` (all
    the checks that depend on the signature; they raise for bad input) and the check that every buffer fits
    the device, then cached. Arguments other than exact ints and strings (a bool or NumPy integer axis, a
    reduction that is no string) are part of no signature: such calls take the full checks each time. Errors
    name ``name`` (the function the user called, as build()'s own errors do), else ``op``."""
    if not all(type(a) is int or type(a) is str for a in args):
        return _built(name or op, lambda: _sized(dev, arrays, build(), None))
    sig = (op, *[x for a in arrays for x in (a.shape, a.dtype)], *args)     # (call_templates.signature's)
    calls = dev._calls
    call = calls.pop(sig, None)
    if call is None:
        call = _built(name or op, lambda: _sized(dev, arrays, build(), sig))
        while len(calls) >= CALL_CACHE:
            del calls[next(iter(calls))]
    calls[sig] = call                    # most recently used last
    return call


def _built(op: str, build: Callable[[], _Call]) -> _Call:
    """``build()`` (a call's checks and planning), its errors naming ``op``."""
    try:
        return build()
    except (TypeError, ValueError, IndexError, RuntimeError) as e:
        raise named(e, op) from None


def reads_in_place(dev: Runtime, plan: Any, data_nbytes: int, out_nbytes: int) -> bool:
    """The rule, by sizes alone, that a call's NumPy ``data`` is read where it is rather than uploaded (the
    constants above; the array must also be importable: runtime/host.py, else it is uploaded): a gather (a
    plan whose output is no copy of its input) on a device that imports host memory, from a table of at least
    HOST_TABLE_BYTES whose result is at most HOST_READ_SHARE of it plus HOST_READ_BYTES (reading rows over the
    bus costs by the bytes read, an upload by the table's bytes plus a fixed part; any share on unified memory),
    or larger than the device's memory."""
    return not plan.output_from_input and host.available(dev) and (
        data_nbytes >= HOST_TABLE_BYTES and (out_nbytes <= HOST_READ_SHARE * data_nbytes + HOST_READ_BYTES
                                             or dev.info.unified_memory)
        or data_nbytes > dev.memory_capacity)


def writes_in_place(dev: Runtime, plan: Any, out_nbytes: int) -> bool:
    """The rule that a NumPy-in/out gather's kernels write its result into the array returned (imported: it must
    also be importable, else the result is downloaded): a gather on a device that imports host memory, with a
    result of at least HOST_OUT_BYTES."""
    return not plan.output_from_input and out_nbytes >= HOST_OUT_BYTES and host.available(dev)


def _sized(dev: Runtime, arrays: tuple, call: _Call, sig: tuple | None) -> _Call:
    """``call``, once every buffer it needs fits ``dev`` (DeviceError before any GPU work otherwise), with
    ``keep`` set (to its signature ``sig``) for small calls. A NumPy table read in place (reads_in_place) takes
    no device memory."""
    if call.plan is None:
        return call
    sizes = [a.nbytes for a in arrays] + [math.prod(call.out_shape) * arrays[0].dtype.itemsize]
    held = sizes[1:] if isinstance(arrays[0], np.ndarray) and reads_in_place(dev, call.plan, sizes[0], sizes[-1]) \
        else sizes
    dev.check_sizes(*held)
    return call._replace(keep=sig if sig is not None and sum(sizes) <= KEEP_BYTES else None, sig=sig)


def check_out(op: str, out, data, operands: tuple, dev: Runtime) -> None:
    """The checks of ``out`` that need no plan: a Tensor of ``dev`` or a NumPy array (writable; only where
    the call returns a NumPy array), else TypeError / DeviceError naming ``op``."""
    check_out_kind(op, out, dev, dev.active_recording() is not None or
                   any(isinstance(o, Tensor) for o in (data,) + operands))


def check_out_kind(op: str, out, dev: Runtime, as_tensor: bool) -> None:
    """check_out's checks for a call that returns a Tensor (``as_tensor``) or a NumPy array."""
    if isinstance(out, Tensor):
        if out._rt is not dev:                   # (two Device objects of one GPU: arguments.other_device)
            raise DeviceError(f"{op}: out is a Tensor of " + (
                other_device(out._rt, dev) if out.device.info.index == dev.info.index else
                f"device {out.device.info.index} ({out.device.info.name}); the call runs on device {dev.info.index} "
                f"({dev.info.name})"))
    elif isinstance(out, np.ndarray):
        if as_tensor:
            raise TypeError(f"{op}: out is a NumPy array, but the call returns a Tensor (an operand is a Tensor, "
                            f"or it is recorded): pass a Tensor as out, or read the result with numpy()")
        if not out.flags.writeable:
            raise ValueError(f"{op}: out is read-only")
    else:
        raise TypeError(f"{op}: out must be a dmlgpu.Tensor or a NumPy array, not {type(out).__name__}")


def _execute(dev: Runtime, call: _Call, data, idx, values, updates=None, out=None, op: str = ""):
    """Runs a planned call: the checks of ``out`` (its shape and dtype: exactly the result's), its index
    check, then the plan (or the result of a call that moves nothing). The result goes to a new array or
    Tensor, or into ``out`` (returned): a NumPy ``out`` receives the downloaded result; a Tensor ``out`` is
    written on the device, by the kernels themselves where it is a packed buffer of its own (or, for a
    scatter, data's own bytes: in place, no copy of data), else through a new Tensor copied into it.
    Operands of another byte order than native are the caller's to convert where the plan's arithmetic needs it
    (scatter reductions: native())."""
    if out is not None and (out.shape != call.out_shape or out.dtype != data.dtype):
        raise ValueError(f"{op}: out has shape {out.shape} and dtype {out.dtype}; the result has shape "
                         f"{call.out_shape} and dtype {data.dtype}")
    if isinstance(out, np.ndarray):         # the call's own result (its index check included), copied in
        np.copyto(out, _execute(dev, call, data, idx, values, updates))
        return out
    lineage = None          # the checks awaiting their reports that the operands reach (plans/index_check.py)
    if dev.tainted:         # (a failed operand raises its failure here, before any GPU work)
        lineage = dev.taint(tuple(x.buffer if isinstance(x, Tensor) else None for x in (data, idx, updates)),
                            None if out is None else out.buffer,
                            out is not None and out_key(out, data) != IN_PLACE and covers_base(out))
    bound_idx = _bindable(idx)  # (packed once: the device's check and the run read the same copy)
    results = None          # the result buffers of a call whose indices the device checks (index_check)
    fused = None            # the check that a gather's kernel makes of its own indices (_run_tensors)
    if call.check is not None:
        if values is not None:
            call.check(values)
        elif isinstance(call.plan, GatherPlan) and out is None and type(data) is Tensor and \
                type(bound_idx) is Tensor and call.check.checkable(dev, bound_idx):
            fused = call.check
        elif call.guarded is not None and out is not None and out_key(out, data) == IN_PLACE and out.offset == 0 \
                and type(bound_idx) is Tensor and not (isinstance(updates, Tensor) and updates.buffer is out.buffer) \
                and bound_idx.buffer is not out.buffer and call.check.guardable(dev, bound_idx):
            return _guarded(dev, call, out, bound_idx, updates, op)
        elif call.plan is None or out is not None and out_key(out, data) == IN_PLACE or \
                (results := call.check.on_device(dev, bound_idx)) is None:
            call.check(idx.numpy())         # read back: what the device cannot check (index_check)
    if call.plan is None:
        if out is None:
            return _copy_result(data, dev) if call.copy else _empty_result(data, call.out_shape, dev)
        if call.copy and out_key(out, data) != IN_PLACE:
            out.write(data)                 # (a Tensor's on the device)
        return out
    run = functools.partial(_run, op=op)
    if fused is not None:
        nbytes = math.prod(call.out_shape) * data.dtype.itemsize
        return _reached(dev, lineage, _run_tensors(dev, call, _bindable(data), bound_idx, None, nbytes, fused=fused))
    if out is None:
        result = run(dev, call, _bindable(data), bound_idx, _bindable(updates))
        if results is not None:
            results.append(result.buffer)   # never handed out as valid if the check fails
        return _reached(dev, lineage, result)
    if out.offset == 0 and not any(isinstance(x, Tensor) and x.buffer is out.buffer for x in (idx, updates)):
        if out_key(out, data) == IN_PLACE:
            if call.plan.output_from_input:         # the kernels update data's bytes: no copy of data
                return _marked(results, run(dev, call, out, bound_idx, _bindable(updates), out=out))
        elif not (isinstance(data, Tensor) and data.buffer is out.buffer):
            return _marked(results, run(dev, call, _bindable(data), bound_idx, _bindable(updates), out=out))
    # out shares its buffer with an operand the kernels read, or sits at an offset: a new result, copied in
    out.write(_reached(dev, lineage, run(dev, call, _bindable(data), bound_idx, _bindable(updates), trace=False)))
    return _marked(results, out)


def _reached(dev: Runtime, lineage: tuple[int, int] | None, result):
    """A call's new result Tensor, holding the checks that its operands reach (Device.reach)."""
    if lineage is not None:
        dev.reach(lineage, result.buffer)
    return result


def _marked(results, out: Tensor) -> Tensor:
    """``out``, written by a call whose indices the device checks (``results``: the check's Marked, or None):
    it fails if the check does."""
    if results is not None:
        results.append(out.buffer)
    return out


def _guarded(dev: Runtime, call: _Call, out: Tensor, idx: Tensor, updates, op: str) -> Tensor:
    """A scatter in place on Tensor indices behind the device's check (IndexCheck.guard): the check, the copy of
    the indices that is all out of range where any is bad, the scatter of that copy with mode="drop" (nothing
    written then), and the report. ``out`` is the call's target as any checked call's result is: failed where an
    index is bad (its reads raise the IndexError until it is overwritten whole), its bytes unchanged."""
    assert call.check is not None
    copy = Tensor._wrap(dev.take_buffer(max(4, idx.nbytes)), idx.shape, idx.dtype)
    watch = call.check.guard(dev, idx, copy.buffer)
    result = _run(dev, call._replace(plan=call.guarded), out, copy, _bindable(updates), out=out, op=op, guard=True)
    watch.results.append(out.buffer)
    call.check.report(dev, idx, watch)
    return result


def _bindable(x):
    """An operand as the kernels bind it: a Tensor view at an offset as a packed copy of its bytes."""
    return x._packed() if isinstance(x, Tensor) and x.offset else x


def _empty_result(data, shape, device):
    """The result of an operation that moves nothing: an empty array/Tensor of ``shape``."""
    if isinstance(data, Tensor) or device is not None and device.active_recording() is not None:
        return empty(shape, data.dtype, device=device if device is not None else data.device)
    return np.empty(shape, dtype=data.dtype)


def _copy_result(data, device):
    """A scatter that updates nothing: a copy of data (a Tensor's on its device)."""
    if isinstance(data, Tensor):
        return tensor(data)
    return np.array(data, copy=True)


def _run(dev: Runtime, call: _Call, data, indices, updates=None, out: Tensor | None = None, trace: bool = True,
         op: str = "", guard: bool = False):
    """Runs the call's plan in one submission. NumPy operands are uploaded; the result is a new NumPy array,
    or a Tensor (queued: Launch.run) when an operand is a Tensor or the call is being recorded, or ``out``
    (a packed Tensor that no other operand than data shares: _execute), which the kernels write. ``trace``:
    the run may make the signature's call template. A NumPy ``data`` that reads_in_place() picks is read where it
    is (runtime/host.py) when its pages can be imported, and a NumPy result then written into the array returned;
    such a call runs and waits even where it returns a Tensor (the caller may change the array once it returns).
    ``op`` names the function in errors; ``guard``: the scatter of _guarded() (``indices`` the guard's copy)."""
    plan, out_shape = call.plan, call.out_shape
    recording = dev.active_recording() is not None
    nbytes = math.prod(out_shape) * data.dtype.itemsize      # the sizes are checked by _planned
    if not recording and type(data) is Tensor and type(indices) is Tensor and \
            (updates is None or type(updates) is Tensor):
        return _run_tensors(dev, call, data, indices, updates, nbytes, out, trace, guard=guard)
    as_tensor = recording or out is not None or isinstance(data, Tensor) or isinstance(indices, Tensor) or \
        isinstance(updates, Tensor)
    host_in = host_out = result = None
    if not recording and isinstance(data, np.ndarray) and reads_in_place(dev, plan, data.nbytes, nbytes):
        host_in = host.import_array(dev, data, cache=True) if host.importable(dev, data) else None
        if host_in is None:
            _uploaded(dev, data, nbytes, op)
    if not as_tensor and writes_in_place(dev, plan, nbytes):
        made = host.result_array(dev, out_shape, data.dtype)     # imported host memory, pooled
        if made is not None:
            result, host_out = made
    with dev.launch() as launch:
        uploads = []
        keep = call.keep if not as_tensor and host_in is None and host_out is None else None
        kept = iter(dev._kept.pop(keep, ()) if keep is not None else ())

        def scratch(n):             # operands' copies, the result, a reduction's sort: given back (or kept)
            buf = next(kept, None)
            if buf is None:
                return launch.scratch(n)
            launch.taken.append(buf)
            return buf

        def operand(x):
            if isinstance(x, Tensor):
                return x.buffer
            if x is data and host_in is not None:
                return host_in
            buf = scratch(x.nbytes)
            buf.stage(as_bytes(x))
            uploads.append(buf)
            return buf

        in_buf = operand(data)
        idx_buf = operand(indices)
        if out is not None:
            out_buf = out.buffer
        elif host_out is not None:           # the returned array itself (runtime/host.py)
            out_buf = host_out
        elif isinstance(data, Tensor) or as_tensor and not plan.output_from_input:
            out_buf = launch.output(nbytes)  # a Tensor's: not zero-filled (the kernels write all of it)
        elif not plan.output_from_input:     # a new output (a scatter copies data into it)
            out_buf = scratch(nbytes)
        else:                            # the uploaded copy of data is the output: update it in place
            out_buf = in_buf
        upd_buf = operand(updates) if updates is not None else None
        dispatches, params = plan.dispatches(dev, input=in_buf, indices=idx_buf, output=out_buf, updates=upd_buf,
                                             take=scratch)
        if as_tensor:
            # a NumPy table read in place: the call has finished with it when it returns (NumPy's contract),
            # so the call runs now, after the queued work, and waits, instead of being queued
            launch.run(dispatches, uploads=params + uploads, queue=host_in is None)
            if out is None and out_buf is in_buf:    # the operand's copy is the result: the Tensor keeps it
                launch.taken.remove(out_buf)
            return out if out is not None else Tensor._wrap(out_buf, out_shape, data.dtype)
        if host_out is not None:
            launch.run(dispatches, uploads=params + uploads, host_read=True)
            return result
        got = launch.run(dispatches, uploads=params + uploads, downloads=[out_buf])[0]
        if keep is not None:
            _keep(dev, keep, launch.keep())
        return got[:nbytes].view(data.dtype).reshape(out_shape)


def _uploaded(dev: Runtime, data: np.ndarray, nbytes: int, op: str) -> None:
    """A NumPy table that the rule would read in place but that cannot be imported is uploaded: DeviceError,
    before any GPU work, where the device cannot hold it."""
    try:
        dev.check_sizes(data.nbytes, nbytes)
    except DeviceError as e:
        if host.importable(dev, data):
            raise DeviceError(f"{op}: {e}; reading the NumPy table in place failed: the driver refused to import "
                              f"its pages ({host.refusal(dev)})") from None
        raise DeviceError(f"{op}: {e}; a NumPy table is read in place (not uploaded) only where it is C-contiguous, "
                          f"starts at a multiple of {host.ALIGNMENT} bytes and takes a multiple of 4 bytes: pass "
                          f"np.ascontiguousarray(data) or a copy made by np.empty") from None


def _run_tensors(dev: Runtime, call: _Call, data: Tensor, indices: Tensor, updates: Tensor | None,
                 nbytes: int, out: Tensor | None = None, trace: bool = True, fused: IndexCheck | None = None,
                 guard: bool = False) -> Tensor:
    """_run when every operand is a Tensor, outside recordings (the common eager call): queued, into a new
    Tensor or ``out``; a reduction's scratch goes back once queued (later queued work may reuse it:
    runtime/launch.py). The run is traced into the signature's call template (dmlgpu/api/call_templates.py) when it has
    one to trace. ``fused``: mode="raise"'s check of ``indices`` (packed, checkable) for a gather into a new Tensor,
    made by its kernel where the plan can and the indices number more than index_check.ONE_GROUP
    (GatherPlan.checks_indices: IndexCheck.clearing, the gather, then IndexCheck.fetch), else by the device's own
    check (IndexCheck.on_device, which the call's template makes in one workgroup beside the gather up to
    ONE_GROUP indices: IndexCheck.around). ``guard``: the scatter in place of
    _guarded() (``indices`` the guard's copy of the call's), traced into a template that queues the guard too."""
    with dev.launch() as launch:
        at = results = None
        if fused is None:
            out_buf = launch.output(nbytes) if out is None else out.buffer   # not zero-filled: the kernels write it all
        else:
            at, size = IndexCheck.fused_layout(nbytes)
            out_buf = launch.output(size)
        buffers = [data.buffer, indices.buffer, out_buf, None if updates is None else updates.buffer]
        if fused is not None and (indices.size <= index_check.ONE_GROUP or
                                  not call.plan.checks_indices(dev, buffers[1], buffers[0], out_buf)):
            at, results = None, fused.on_device(dev, indices)
        if fused is None or at is None:
            dispatches, params = call.plan.dispatches(dev, input=buffers[0], indices=buffers[1], output=out_buf,
                                                      updates=buffers[3], take=launch.scratch)
        else:
            clear, params = fused.clearing(dev, indices, out_buf, at)
            dispatches, more = call.plan.dispatches(dev, input=buffers[0], indices=buffers[1], output=out_buf,
                                                    raise_at=at)
            dispatches, params = [clear] + dispatches, params + more
        launch.run(dispatches, params, queue=True)
        if fused is not None and at is not None:
            results = fused.fetch(dev, indices, out_buf, at)
        if results is not None:
            results.append(out_buf)         # never handed out as valid if the check fails
        if trace and call.sig is not None and dev.max_queued and (call.check is None or out is None or guard or
                                                               out_key(out, data) != IN_PLACE):
            _calls.trace(dev, call.sig, dispatches, buffers, launch.taken, call.out_shape, call.check, at, guard)
        return out if out is not None else Tensor._wrap(out_buf, call.out_shape, data.dtype)


def _keep(dev: Runtime, sig: tuple, buffers: list) -> None:
    """Keeps a NumPy-in/out call's buffers for the next call of its signature (the last KEEP_CALLS)."""
    while len(dev._kept) >= KEEP_CALLS:
        dev.give_buffers(*dev._kept.pop(next(iter(dev._kept))))
    dev._kept[sig] = buffers


def _self_copy(data) -> IndexMap:
    """The copy of data into a scatter's output of the same packed layout."""
    return ops.input_copy(Layout.packed(data.shape), Layout.packed(data.shape), data.dtype)


def native(dev: Runtime, call: _Call, data: Any, idx: Any, values: Any, updates: Any, out: Any, op: str) -> Any:
    """_execute for a scatter reduction on operands of another byte order than native (its arithmetic needs native
    byte order): NumPy operands are converted to native byte order, run, and the result converted back (into a NumPy
    ``out`` where given); TypeError for Tensors, a Tensor ``out`` or a recording (no conversion on the device)."""
    if out is not None and (out.shape != call.out_shape or out.dtype != data.dtype):
        raise ValueError(f"{op}: out has shape {out.shape} and dtype {out.dtype}; the result has shape "
                         f"{call.out_shape} and dtype {data.dtype}")
    if isinstance(out, Tensor) or any(isinstance(x, Tensor) for x in (data, idx, updates)) or \
            dev.active_recording() is not None:
        raise TypeError(f"a scatter reduction needs a native byte order, not dtype {data.dtype}")
    native_dtype = data.dtype.newbyteorder("=")
    result = _execute(dev, call, data.astype(native_dtype), idx, values, updates.astype(native_dtype),
                      op=op).astype(data.dtype)
    if out is None:
        return result
    np.copyto(out, result)
    return out
