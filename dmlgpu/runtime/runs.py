"""Running on a Device (its mixin Runs): synchronous runs of kernel dispatches and their replays, and the
queueing of eager runs into the device's batch (runtime/batch.py).

Ordering: Kompute's OpAlgoDispatch records no barrier of its own (kp patch 0016), so dmlgpu records one
global memory barrier before every dispatch (``BEFORE_DISPATCH`` on all memory, kp patch 0017: one
vkCmdPipelineBarrier, made once per device): all earlier transfer and compute writes are made available and
visible to the dispatch's reads and writes, and all earlier reads finish first. Two dependent dispatches in
one submission are therefore ordered (RAW, WAW and WAR alike). A dispatch marked ``barrier=False`` (a
scatter's copy, independent of the claim pass before it) shares the barrier of the dispatch before it, so
the two may overlap. Copies into and out of device buffers are preceded by ``BEFORE_COPY``; memory the host
reads after a submission (staging, or mapped device buffers on unified memory) is made visible to it by a
global ``BEFORE_HOST_READ`` at the end.

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
it (runtime/batch.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import DeviceError
from ..kernels import table as kernels, spirv
from . import profiles, transfers
from .buffer import COPY, Dispatch, _block_ids, _copy_ops
from .discovery import DeviceInfo, kp
from .launch import Launch
from .transfers import BEFORE_COPY, BEFORE_HOST_READ

if TYPE_CHECKING:
    import threading

    import numpy as np

    from .batch import Batch
    from .buffer import Buffer
    from .pipelines import Pipelines
    from .transfers import Staging

_FUSE_MAX = 4 << 20      # transfers up to this many bytes (each way) join the operation's own submission
STAGING_ALIGN = 16       # bytes: each piece of a run's staging buffer starts at a multiple of this


def _staging_offsets(sizes) -> list:
    """Byte offsets of consecutive pieces of these sizes in one staging buffer, each at a multiple of
    STAGING_ALIGN, followed by the total they take."""
    out, pos = [], 0
    for n in sizes:
        out.append(pos)
        pos += -(-n // STAGING_ALIGN) * STAGING_ALIGN
    return out + [pos]


class Runs:
    """Device's runs: ``_run`` (synchronous, or queued into the batch), ``_queue``, and what they record and
    submit (module docstring)."""

    if TYPE_CHECKING:       # the Device's, which these methods use
        _admitted: Any
        _supported: dict
        _barrier: Any
        _copy_barrier: Any
        _batches: Batch
        closed: bool
        _host_barrier: Any
        lock: threading.RLock
        _max_groups: int
        _mgr: Any
        _param_buffers: dict
        _pipelines: Pipelines
        _replays: dict
        _staging: Staging
        _submissions: int
        _zeroed: dict
        _zeroed_clean: bool
        direct_memory: bool
        features: frozenset
        geometry: kernels.Geometry
        info: DeviceInfo
        max_queued: int

        def check_open(self) -> Any: ...
        def active_recording(self) -> Any: ...
        def _replay_sequence(self) -> Any: ...
        def read_range(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray: ...
        def write_bytes(self, buf: Buffer, offset: int, src: np.ndarray) -> None: ...

    def launch(self) -> Launch:
        """A launch: the one way to run kernels on this device (runtime/launch.py): ``with dev.launch() as
        launch:`` holds the device's lock, ``launch.scratch(n)`` hands out scratch that goes back when the block
        ends, ``launch.run(dispatches, ...)`` runs, queues or records them.

        Raises
        ------
        dmlgpu.DeviceError
            A closed device.

        Examples
        --------
        >>> import dmlgpu
        >>> with dmlgpu.default_device().launch() as launch:
        ...     launch.scratch(16).nbytes, launch.run([])
        (16, [])
        """
        return Launch(self)     # type: ignore[arg-type]  # self: the Device

    def run(self, dispatches, uploads=(), downloads=()) -> list:
        """A launch of these dispatches without scratch of its own (Launch.run: recorded inside a recording of
        this thread, else submitted now, waiting for it; returns the downloaded bytes)."""
        with self.launch() as launch:
            return launch.run(dispatches, uploads, downloads)

    def clear_algorithms(self) -> None:
        """Drops the Kompute algorithms (descriptor sets) kept for the buffer sets of past dispatches; the
        pipelines stay. They keep their buffers' blocks alive until then."""
        with self.lock:
            self._pipelines.clear()

    def _run(self, dispatches, uploads=(), downloads=(), queue: bool = False, host_read: bool = False) -> list:
        """Uploads the buffers' staged bytes, runs the dispatches in order (a barrier before each),
        downloads; waits. Returns the downloaded bytes: a new uint8 array of each buffer's nbytes.
        Inside a recording of this thread the steps are appended to it instead (returns []). ``queue``
        (without downloads): appended to the device's batch instead, unless max_queued is 0 (returns []).
        ``host_read``: end with the barrier that makes the dispatches' writes visible to host reads (they write
        imported host memory: Launch.run)."""
        if self._admitted is not None:
            self._admit(dispatches, uploads)
        rec = self.active_recording()
        if rec is not None:
            rec._append(dispatches, uploads, downloads)
            return []
        with self.lock:
            self.check_open()
            if queue and self.max_queued and not downloads:
                self._batches.enqueue(dispatches, uploads)
                return []
            self._flush()
            pending = [b for b in uploads if b._pending is not None]
            up_sizes = [b._pending.size for b in pending]
            down_sizes = [b.nbytes for b in downloads]
            fused = self.direct_memory or (sum(up_sizes) <= _FUSE_MAX and sum(down_sizes) <= _FUSE_MAX)
            up_slot = down_slot = None
            if self.direct_memory or not fused:   # mapped, or large: through staging in submissions of their own
                for b in pending:
                    self.write_bytes(b, 0, b._pending)
            else:
                if pending:
                    up_pos = _staging_offsets(up_sizes)
                    up_slot = self._staging.slot("up", 0, up_pos[-1])
                    view = up_slot.view
                    for b, pos, n in zip(pending, up_pos, up_sizes):
                        transfers.host_copy(view[pos:pos + n], b._pending)
                if downloads:
                    down_pos = _staging_offsets(down_sizes)
                    down_slot = self._staging.slot("down", 0, down_pos[-1])
            for b in pending:
                b._pending = None
            if dispatches or up_slot or down_slot:
                self._submit_run(dispatches, pending, up_sizes, up_slot, downloads, down_sizes, down_slot,
                                 host_read)
            if down_slot is not None:
                view = down_slot.view
                return [view[pos:pos + n].copy() for pos, n in zip(down_pos, down_sizes)]
            return [self.read_range(b, 0, b.nbytes) for b in downloads]

    def _submit_run(self, dispatches, uploads, up_sizes, up_slot, downloads, down_sizes, down_slot,
                    host_read: bool = False) -> None:
        """Submits a synchronous run and waits: uploads from ``up_slot`` (if any), the dispatches, downloads
        into ``down_slot`` (if any). A run whose command buffer would be the same as one of the last
        _REPLAYS (same kernels, counts, blocks, staging buffers and sizes) submits that one again."""
        parts: list[Any] = []
        for d in dispatches:
            parts += (d.kernel, d.count, d.barrier, d.blocks, *_block_ids(d.buffers))
        if up_slot is not None:
            parts += ("up", up_slot.serial, *_block_ids(uploads), *up_sizes)
        if down_slot is not None:
            parts += ("down", down_slot.serial, *_block_ids(downloads), *down_sizes)
        if host_read:
            parts.append("host")
        key = tuple(parts)
        seq = self._replays.pop(key, None)
        if seq is None:
            seq = self._replay_sequence()
            ops = self._staged_copies(uploads, up_sizes, up_slot, True) + self._dispatch_ops(dispatches)
            if self.direct_memory or host_read:
                ops += self._host_read_ops(dispatches)
            ops += self._staged_copies(downloads, down_sizes, down_slot, False)
            for op in ops:
                seq.record(op)
        self._replays[key] = seq                 # most recently used last
        self._submit(seq, self._uses_zeroed(dispatches))

    @staticmethod
    def _staged_copies(bufs, sizes, slot, upload: bool) -> list:
        """The ops that copy ``sizes`` bytes of each buffer from the upload staging buffer (``upload``) or
        into the download one, at the offsets _staging_offsets() gives, with their barriers; [] without a slot."""
        if slot is None:
            return []
        ops = [kp.OpMemoryBarrier([t for b in bufs for t in b._tensors], *BEFORE_COPY)]
        for b, pos, n in zip(bufs, _staging_offsets(sizes), sizes):
            for block, at, off, m in b._pieces(0, n):
                ops.append(kp.OpCopyRegion(slot.tensor, block.tensor, pos + off, at, m) if upload else
                           kp.OpCopyRegion(block.tensor, slot.tensor, at, pos + off, m))
        if not upload:
            ops.append(kp.OpMemoryBarrier([slot.tensor], *BEFORE_HOST_READ))
        return ops

    # ---- internal: the batch of queued runs (runtime/batch.py) ----
    def _queue(self, dispatches, uploads=()) -> None:
        """``_run(dispatches, uploads, queue=True)`` for a caller that knows that no recording of this thread
        is open (the common eager call: one check fewer)."""
        if self._admitted is not None:
            self._admit(dispatches, uploads)
        with self.lock:
            if self.closed:
                self.check_open()
            if self.max_queued:
                self._batches.enqueue(dispatches, uploads)
            else:
                self._run(dispatches, uploads)

    def _sync_buffer(self, buf: Buffer) -> None:
        """Before ``buf`` is reached outside the batches: waits for the batches that use it."""
        for block in buf.block_list:
            self._batches.sync_block(block)

    def _flush(self, wait: bool = True) -> None:
        """Submits the open batch (Batch.flush)."""
        self._batches.flush(wait)

    def _dispatch_ops(self, dispatches) -> list:
        """The kp ops of dispatches in order: the global barrier before each one that has ``barrier`` (and
        before the kernel after a copy step, whose barrier orders transfers only); a copy's region copies after
        a global barrier before transfers (BEFORE_COPY)."""
        ops = []
        after_copy = False
        for d in dispatches:
            if d.kernel == COPY:
                ops.append(self._copy_barrier)
                ops += _copy_ops(d.buffers[0], 0, d.buffers[1], 0, d.count)
                after_copy = True
                continue
            if d.barrier or after_copy:
                ops.append(self._barrier)
            ops.append(self._algorithm(d).dispatch)
            after_copy = False
        return ops

    def command_count(self, dispatches) -> int:
        """The Vulkan commands that these dispatches record in order (each op of _dispatch_ops is one): a
        kernel's barrier (if it has one, or follows a copy step) and itself; a copy step's barrier and its
        region copies (one per block range)."""
        return len(self._dispatch_ops(dispatches))

    def _host_read_ops(self, dispatches) -> list:
        """Unified memory: the barrier that makes what the dispatches wrote visible to host reads (so that
        reading a mapped buffer afterwards needs no submission of its own)."""
        return [self._host_barrier] if dispatches else []

    def _uses_zeroed(self, dispatches) -> bool:
        """True when the dispatches use zeroed scratch (zeroed())."""
        held = {id(b) for b in self._zeroed.values()}
        return bool(held) and any(id(b) in held for d in dispatches for b in d.buffers)

    def workgroups(self, count: int) -> int:
        """The workgroups that a dispatch of ``count`` iterations launches on this device."""
        return self.geometry.workgroups(count, self._max_groups)

    def _algorithm(self, d: Dispatch):
        """The Kompute algorithm (shared pipeline, descriptor set of these buffers) for the dispatch, with
        its ops (pipelines.Bound)."""
        groups = self.geometry.workgroups(d.count, self._max_groups)
        if d.blocks is not None:
            return self._pipelines.algorithm(d.kernel, groups, [b.block_list[i or 0] for b, i in zip(d.buffers, d.blocks)])
        if not d.wide:
            for b in d.buffers:
                if b.chunked:
                    raise DeviceError(f"kernel {d.kernel} binds single blocks: it cannot address a buffer held in "
                                      f"several (a large-tensor variant must be chosen for it)")
        return self._pipelines.algorithm(d.kernel, groups, [b._block for b in d.buffers])

    def supports(self, stem: str) -> bool:
        """Whether this device, as its profile shows it, can run the kernel variant ``stem`` of its geometry
        (its SPIR-V's needs, every binding a storage buffer: profiles.limit_problem); each stem is checked once.
        Plans ask it to choose between variants where a device may lack what the faster one needs."""
        ok = self._supported.get(stem)
        if ok is None:
            need = spirv.requirements(stem + self.geometry.suffix)
            need = need._replace(storage_buffers=max(need.storage_buffers, need.bindings))
            ok = self._supported[stem] = profiles.limit_problem(self.info, self.features, need) is None
        return ok

    def _admit(self, dispatches, uploads) -> None:
        """DeviceError, before anything of the run is recorded, if a dispatch's kernel needs more than the
        device's limits or features (profiles.check_limits: its SPIR-V's needs, and as many storage buffers
        as the dispatch binds; each kernel is checked once). The run's new parameter buffers, never to be
        uploaded, are then dropped. Runs only on a device whose limits are below what some variant needs
        (``_admitted`` is None elsewhere)."""
        for d in dispatches:
            if d.kernel not in self._admitted:
                name = d.kernel + self.geometry.suffix
                need = spirv.requirements(name)
                try:
                    profiles.check_limits(self, name, need._replace(
                        storage_buffers=max(need.storage_buffers, len(d.buffers))))
                except DeviceError:
                    for key, buf in list(self._param_buffers.items()):
                        if buf._pending is not None and any(buf is b for b in uploads):
                            del self._param_buffers[key]
                    raise
                self._admitted[d.kernel] = True

    def _submit(self, seq, zeroed: bool) -> None:
        """Submits a recorded Sequence and waits. ``zeroed``: it uses zeroed scratch, which is renewed if the
        run fails (it may be left non-zero)."""
        try:
            seq.eval()
        except BaseException:
            if zeroed:
                self._zeroed_clean = False
            raise
        self._count_submission()

    def _count_submission(self) -> None:
        self._submissions += 1
        if self._submissions % 256 == 0:
            self._mgr.clear()   # let Kompute forget expired objects: host memory stays flat
