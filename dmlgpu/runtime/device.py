"""A Vulkan device opened through Kompute: its buffers (runtime/buffer.py), synchronous runs of kernel
dispatches and their replays, and the batches of queued eager runs (runtime/batch.py).

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

Scratch: the size checks before any GPU work, scratch buffers, kernel parameter buffers shared by equal words,
the WIDE variants' block lists, and zeroed scratch (a scatter's claim words)."""
from __future__ import annotations

import atexit
import copy
import os
import threading
import weakref

from typing import Any, Callable, Iterable, NamedTuple, NoReturn, Sequence, TypeVar

import numpy as np

from ..kernels import spirv, table as kernels
from ..errors import DeviceError
from . import export, host, profiles, transfers
from .clocks import ClockHold
from .launch import Launch, Prepared
from .discovery import (DEVICE_LOCAL, HOST_COHERENT, HOST_VISIBLE, DeviceInfo, default_device_index, devices, kp,
                        open_manager)
from .batch import QUEUE_UPLOADS, Batch
from .buffer import COPY, Buffer, Dispatch, MappedBuffer, _block_ids, _copy_ops, as_bytes
from .memory import Allocator, Block
from .pipelines import Pipelines
from .recording import Recording
from .transfers import BEFORE_COPY, BEFORE_DISPATCH, BEFORE_HOST_READ, Staging

_REPLAYS = 16            # recorded synchronous runs kept per device, submitted again when repeated
_MAX_QUEUED = 64         # eager runs a batch holds before it is submitted (Device's max_queued default)


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


_PARAMS_CACHE = 256      # parameter buffers kept per device



_open_devices: "weakref.WeakSet[Device]" = weakref.WeakSet()
_D = TypeVar("_D", bound="Device")


@atexit.register
def _save_pipeline_caches() -> None:
    for dev in list(_open_devices):
        if not dev.closed:
            dev._pipelines.save()


CHECK_SLOTS = 256     # checks (Device.watch) that may await their reports at once: the check buffer's slots
_UNREPORTED = 64      # failures that synchronize() lists (past them it counts)
_HISTORY = 256        # report generations whose failures are kept (for a lineage taken before their report)


def _raised(error: BaseException) -> BaseException:
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
    and the buffer was not overwritten whole in between (Device.taint)."""

    __slots__ = ("_refs", "open", "error", "bit", "gen", "device")

    def __init__(self, device: "Device", gen: int, slot: int) -> None:
        self._refs: list = []
        self.open = True
        self.error: BaseException | None = None
        self.bit = 1 << slot
        self.gen = gen
        self.device = device

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
            with self.device.lock:
                self.device._fail(buf, self.error)

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

class Device:
    """A Vulkan device opened through Kompute.

    ``index``: as listed by dmlgpu.devices(); default: DMLGPU_DEVICE, else the first discrete GPU, else
    the first device. ``memory_limit``: the most bytes of device memory this Device's allocator holds at once
    (in use and cached), or None for what the driver gives. ``direct_memory``: read and write buffers through
    mapped memory instead of staging copies; default: DMLGPU_DIRECT_MEMORY (0 or 1) if set, else on
    unified-memory devices (DeviceInfo.unified_memory). ``max_queued``: the most eager calls on device
    Tensors that wait in the device's batch before it is submitted; 0 runs each call at once; default:
    DMLGPU_MAX_QUEUED if set, else 64 (see the module's docstring for when a batch is submitted).
    ``eager_submit``: a queued call is submitted at once when no batch is in flight (the GPU starts while the
    caller goes on; later calls collect into the next batch); default: DMLGPU_EAGER_SUBMIT (0 or 1) if set,
    else off (bench/RESULTS.md: it hides the GPU's time behind host work, and slows a loop that makes new
    Tensors each step).
    ``chunk_bytes``: the size of the blocks that hold a buffer larger than one block (a power of two of at
    least 256 bytes; buffers larger than it are then held in several blocks: a setting for tests); default: the
    largest power of two that one block may have (``max_block``: the least of maxStorageBufferRange,
    maxMemoryAllocationSize and maxBufferSize).
    One Device may be used from several threads: its submissions are serialised by a lock, and all threads
    share its one batch of queued calls.
    ``profile``: open it as if it had fewer features and lower limits (runtime/profiles.py: "full",
    "minimum" (Vulkan 1.1's required limits, no optional feature), ...); default: DMLGPU_DEVICE_PROFILE,
    else "full". ``info`` is the DeviceInfo as the profile shows it (``physical_info``: as the device has it).
    ``features``: the optional Vulkan features enabled on it (those of ``info``).
    ``geometry``: the kernel variant set its plans use (kernels.Geometry: the small one where
    maxComputeWorkGroupInvocations is below kernels.WORKGROUP_SIZE). A run whose kernel needs more than
    the device's limits or features raises DeviceError naming them before any GPU work.
    ``hold_clocks``: keep an NVIDIA GPU at its working clocks while the Device is open (runtime/clocks.py:
    a retained CUDA primary context); default: DMLGPU_HOLD_CLOCKS (0 or 1) if set, else on. ``clock_hold``
    says whether it is held (``clock_hold.state``).
    ``exportable``: allocate the blocks' memory exportable (kp patch 0026: an opaque fd, VK_KHR_external_memory_fd),
    so that CUDA on the same GPU can map any Tensor in place (DLPack: runtime/export.py); default:
    DMLGPU_EXPORTABLE (0 or 1) if set, else on NVIDIA GPUs; only where the device has the feature
    "externalMemoryFd" (True on a device without it: DeviceError; the variable is then ignored).
    """

    def __init__(self, index: int | None = None, *, memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None,
                 profile=None, hold_clocks: bool | None = None, exportable: bool | None = None):
        listed = devices()
        if index is None:
            index = default_device_index()
        if not 0 <= index < len(listed):
            raise DeviceError(f"device index {index} must be in [0, {len(listed) - 1}]")
        self.profile = profiles.resolve(profile)
        self.physical_info: DeviceInfo = listed[index]
        self.info: DeviceInfo = profiles.apply(listed[index], self.profile)
        if exportable and export.FEATURE not in self.info.features:
            raise DeviceError(f"{self.info.name} cannot export its memory (it lacks VK_KHR_external_memory_fd, the "
                              f"feature {export.FEATURE!r}, or a profile withholds it): exportable=True is not possible")
        self.exportable = export.exportable_default(self.info) if exportable is None else bool(exportable)
        self.geometry = kernels.geometry(min(self.info.max_workgroup_invocations, self.info.max_workgroup_size[0]))
        if direct_memory is None:
            direct_memory = export.direct_memory_default(self.info)
        elif direct_memory and not self.info.has_memory(DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT):
            raise DeviceError(f"{self.info.name} has no host-visible device memory: direct_memory=True is not possible")
        self.direct_memory = bool(direct_memory)
        if max_queued is None:
            max_queued = int(os.environ.get("DMLGPU_MAX_QUEUED", _MAX_QUEUED))
        if max_queued < 0:
            raise ValueError(f"max_queued ({max_queued}) must be 0 (no queueing) or more")
        self.max_queued = int(max_queued)
        self.eager_submit = os.environ.get("DMLGPU_EAGER_SUBMIT", "0") != "0"
        self.canary_words = int(os.environ.get("DMLGPU_CANARY_WORDS", "0"))  # test mode: see Buffer
        self.lock = threading.RLock()
        self._mgr = open_manager(index, self.profile.withheld & self.physical_info.features)
        self.clock_hold = ClockHold(self.physical_info.vendor_id, self.physical_info.device_uuid, hold_clocks)
        # the optional features the device has are enabled (kp patch 0015), but those the profile withholds
        # (kp patch 0018); kernels use only these
        self.features = frozenset(name for name, on in self._mgr.enabled_features().items() if on)
        if self.features != self.info.features:
            raise DeviceError(f"{self.info.name}: kp enabled the features {sorted(self.features)}, not those the "
                              f"device has ({sorted(self.info.features)}); rebuild kp with 'python tools/build_kp.py "
                              f"--force'")
        # whether a run's kernels must be checked against the limits (_admit): where a limit is below what
        # some variant of the device's geometry needs
        self._supported: dict = {}  # supports(): variant stem -> whether this device runs it
        self._admitted: Any = None if (
            self.info.max_per_stage_storage_buffers >= kernels.MOST_STORAGE_BUFFERS
            and self.info.max_compute_shared_memory_size >= kernels.MOST_SHARED_BYTES
            and not kernels.SUBGROUP_OPERATIONS & ~self.info.subgroup_operations) else {COPY: True}
        exported = self.exportable
        flags = DEVICE_LOCAL | (HOST_VISIBLE | HOST_COHERENT if self.direct_memory else 0)
        info = self.info
        self.max_block = min(info.max_storage_buffer_range, info.max_memory_allocation_size or 2**64,
                             info.max_buffer_size or 2**64) // 4 * 4     # bytes of one block
        if chunk_bytes is None:
            self.chunk_bytes = 1 << (self.max_block.bit_length() - 1)
        elif chunk_bytes & (chunk_bytes - 1) or not 256 <= chunk_bytes <= self.max_block:
            raise ValueError(f"chunk_bytes ({chunk_bytes}) must be a power of two from 256 to {self.max_block}")
        else:
            self.chunk_bytes = int(chunk_bytes)
        self.whole_max = self.chunk_bytes if chunk_bytes is not None else self.max_block   # larger: chunked
        self.memory_limit = memory_limit
        self._check_above = min(self.whole_max, self.memory_capacity)  # buffers up to this size fit: unchecked
        self._allocator = Allocator((lambda size: self._mgr.buffer(size, flags, True)) if exported else
                                    (lambda size: self._mgr.buffer(size, flags)), self._forget, self.max_block,
                                    memory_limit, self.direct_memory)
        self._pipelines = Pipelines(self._mgr, self.info, self.geometry.suffix,
                                    "" if self.profile.name == "full" else self.profile.name)
        self._max_groups = self.info.max_workgroup_count[0]
        self._staging = Staging(self._mgr, self.info)
        self._immediate = self._mgr.sequence()     # re-recorded for each copy or fill (_transfer_now)
        self._batches = Batch(self)  # queued eager runs (runtime/batch.py)
        self._replays: dict = {}    # synchronous runs (_submit_run's key) -> the kp Sequence recorded for them
        self._param_buffers: dict = {}
        self._local = threading.local()
        self._submissions = 0
        self._zeroed: dict = {}     # zeroed scratch by key (zeroed())
        self._zeroed_clean = True   # False once a run that used zeroed scratch failed: the next request renews it
        self.zeroed_serial = 0      # counts the zeroed scratch buffers made (a call template names the one it used)
        self.closed = False
        self._watched: list[Watch] = []   # watch()'s checks whose reports are not made yet, by slot
        # poison (Device.taint): True while a check awaits its report, a failed buffer lives or a recording is
        # open, so that calls must pass their operands through taint(); the failed buffers alive; the failures
        # that no read or synchronize() has raised yet (at most _UNREPORTED, then counted); open recordings
        self.tainted = False
        self._failed: weakref.WeakSet[Buffer] = weakref.WeakSet()
        self._unreported: list[BaseException] = []
        self._dropped = 0
        self._recordings = 0
        self._gen = 0                 # report generation (_report starts a new one)
        self._history: dict[int, list] = {}   # generation -> its failed checks: (slot bits, error)
        self._checks: tuple[Buffer, Buffer] | None = None   # the check buffers (watch()), made on first use
        self.dummy = Buffer(self, 4)
        self._pipelines.placeholder = self.dummy._block.tensor    # push-descriptor bases bind it
        self._barrier = kp.OpMemoryBarrier([], *BEFORE_DISPATCH)       # global (kp patch 0017)
        self._copy_barrier = kp.OpMemoryBarrier([], *BEFORE_COPY)       # before a copy step (Dispatch COPY)
        self._host_barrier = kp.OpMemoryBarrier([], *BEFORE_HOST_READ)
        _open_devices.add(self)

    # ---- public ----
    def buffer(self, data: Any = None, nbytes: int | None = None) -> Buffer:
        """A new device buffer (layer 1's operands).

        Parameters
        ----------
        data : array or bytes-like, optional
            Its bytes are uploaded.
        nbytes : int, optional
            The size in bytes without ``data``; with it, the least size. Sizes round up to a multiple of 4;
            the bytes past ``data`` are zero.

        Returns
        -------
        Buffer

        Raises
        ------
        ValueError
            Neither ``data`` nor ``nbytes``.
        dmlgpu.DeviceError
            Not enough device memory, or a closed device.

        Examples
        --------
        >>> import dmlgpu
        >>> dmlgpu.default_device().buffer(nbytes=6).read()
        array([0, 0, 0, 0, 0, 0, 0, 0], dtype=uint8)
        """
        self.check_open()
        if data is None:
            if nbytes is None:
                raise ValueError("give data or nbytes")
            buf = Buffer(self, max(4, (int(nbytes) + 3) // 4 * 4))
            self.fill_buffer(buf, 0, 0, buf.nbytes)
            return buf
        src = as_bytes(data)
        buf = Buffer(self, max(4, (max(src.size, nbytes or 0) + 3) // 4 * 4))
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
        in several blocks, queueing off: max_queued 0, or a recording of this thread open), write_bytes()
        writes it now."""
        if src.size <= QUEUE_UPLOADS // 4 and not buf.chunked and self.max_queued:
            with self.lock:
                if self.active_recording() is None:
                    self.check_open()
                    block = buf._block
                    if block.view is not None and not self._batches.uses(block):
                        transfers.host_copy(block.view[offset:offset + src.size], src)
                    else:
                        self._batches.upload(buf, offset, src)  # (not a run: it does not count towards max_queued)
                    return
        self.write_bytes(buf, offset, src)

    def synchronize(self) -> None:
        """Submits the queued eager calls and waits until the device has finished them (host reads of their
        results wait by themselves: this is for timing and for handing results to other APIs).

        The device-wide point of the device's own checks (mode="raise" on Tensor indices:
        dmlgpu/plans/index_check.py): it makes their reports and raises, once, every failure of a call on this
        device that no read has raised yet, whichever thread queued it (one: its own exception; several: one
        of the first's type listing them all).

        Examples
        --------
        >>> import dmlgpu
        >>> dmlgpu.default_device().synchronize()
        """
        with self.lock:
            self.check_open()._flush()
            self._report()
            failures, dropped = self._unreported, self._dropped
            self._unreported, self._dropped = [], 0
        if len(failures) == 1:
            raise _raised(failures[0])
        if failures:
            first = failures[0]
            kind = type(first) if all(type(f) is type(first) for f in failures) else RuntimeError
            more = f"; and {dropped} more" if dropped else ""
            raise kind(f"{len(failures) + dropped} of this device's checks failed: "
                       + "; ".join(str(f) for f in failures) + more)

    def watch(self, report: Callable[[np.ndarray], BaseException | None]) -> Watch:
        """A check that the device itself makes of work about to be queued (mode="raise" on Tensor indices),
        through the device's check buffers: ``Watch.buffer`` (16 bytes of device memory, the checking kernels'
        own, zero but while a check runs) and ``Watch.reports`` (host-visible: read without a transfer), whose
        words 4 slot to 4 slot + 3 (``Watch.slot``) the check's last kernel writes, with the barrier that lets
        the host read them. Call it and queue the check's kernels in one launch (which holds the device's
        lock). Once that work has run, at the device's next synchronize() or a host read of a buffer that the
        check reaches (read_range), ``report`` gets the slot's four words (uint32) and returns an exception or
        None. ``Watch.results``: where the caller appends the buffers that the checked work writes (Marked:
        held weakly); they, and what later work writes from them (taint()), fail with the exception: every
        host read of them raises it, and synchronize() raises it once if no read has."""
        with self.lock:
            slots = min(CHECK_SLOTS, self.chunk_bytes // 16)    # (in one block: the check kernel binds it)
            if len(self._watched) == slots:         # every slot awaits its report: make them first
                self._flush()
                self._report()
            if self._checks is None:
                self._checks = (self.buffer(nbytes=16), self.buffer(nbytes=16 * slots) if self.direct_memory
                                else MappedBuffer(self, 16 * slots))
            slot = len(self._watched)
            watch = Watch(*self._checks, slot, report, Marked(self, self._gen, slot))
            self._watched.append(watch)
            self.tainted = True
            return watch

    def _report(self) -> None:
        """Makes the watched reports (watch()) with one read of the check buffer: each failed check fails the
        buffers whose lineage still holds it (Buffer.error), and joins the failures that synchronize() raises;
        then a new report generation starts (the lineages of the last one are spent)."""
        if not self._watched:
            return
        watched, self._watched = self._watched, []
        words = self._read(watched[0].reports, 0, 16 * len(watched)).view(np.uint32)
        failed: list[tuple[Marked, BaseException]] = []
        for watch in watched:
            mark = watch.results
            mark.open = False
            error = mark.error = watch.report(words[4 * watch.slot:4 * watch.slot + 4])
            if error is not None:
                failed.append((mark, error))
        gen = self._gen
        for mark, error in failed:
            bit = mark.bit
            for buf in mark:
                held = buf.lineage
                if held is not None and held & bit and buf.lineage_gen == gen:
                    self._fail(buf, error)
            if len(self._unreported) < _UNREPORTED:
                self._unreported.append(error)
            else:
                self._dropped += 1
        if failed:
            self._history[gen] = [(mark.bit, error) for mark, error in failed]
            while len(self._history) > _HISTORY:
                del self._history[next(iter(self._history))]
        self._gen = gen + 1
        for watch in watched:
            watch.results._refs = []
        if not self._failed and not self._recordings:
            self.tainted = False

    # ---- poison: what a failed check reaches (watch(); plans/index_check.py says what a caller sees) ----
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
        gen = self._gen             # (read first: a report meanwhile makes it stale, which _write sees)
        bits = 0
        for buf in reads:
            if buf is not None and buf.lineage is not None:     # (None: clean, the common case)
                if buf.error is not None:
                    with self.lock:
                        self._raise(buf)
                if buf.lineage_gen == gen:
                    bits |= buf.lineage
        if self._recordings:
            with self.lock:
                rec = self.active_recording()
                if rec is not None and any(buf is not None for buf in reads):   # (a host write runs now)
                    rec._flow(tuple(reads), out, whole)
                    return None
        if out is not None and (bits or out.lineage is not None):
            with self.lock:
                self._write(out, gen, bits, whole)
        if bits:
            return gen, bits
        if not self._watched and not self._failed and not self._recordings:
            with self.lock:         # nothing left that a check reaches: calls take the fast path again
                if not self._watched and not self._failed and not self._recordings:
                    self.tainted = False
        return None

    def reach(self, lineage: tuple[int, int], buf: Buffer) -> None:
        """A new buffer written by the call whose lineage taint() returned: it holds those checks (and fails
        at once with any that has failed since)."""
        with self.lock:
            self._write(buf, *lineage, False)

    def _write(self, buf: Buffer, gen: int, bits: int, whole: bool) -> None:
        """``buf`` written from work that the checks ``bits`` of report generation ``gen`` reach (taint())."""
        if gen != self._gen:            # reported since taint(): their failures now
            for bit, error in self._history.get(gen, ()):
                if bits & bit:
                    self._fail(buf, error)
                    break
            gen, bits = self._gen, 0
        held = buf.lineage
        if held is not None and (whole or buf.lineage_gen != gen):
            held = None
        if whole and buf.error is not None:
            buf.error = None
            self._failed.discard(buf)
        if bits:
            new = bits & ~held if held else bits
            while new:
                low = new & -new
                self._watched[low.bit_length() - 1].results._refs.append(weakref.ref(buf))
                new ^= low
            buf.lineage, buf.lineage_gen = (held | bits if held else bits), gen
        elif held is None:
            buf.lineage = None if buf.error is None else 0

    def _fail(self, buf: Buffer, error: BaseException) -> None:
        """``buf`` failed with ``error`` (the first failure that reaches it stays)."""
        if buf.error is None:
            buf.error = error
            if buf.lineage is None:
                buf.lineage = 0     # (a failed buffer's lineage is never None: taint()'s one test per read)
            self._failed.add(buf)
            self.tainted = True

    def _raise(self, buf: Buffer) -> NoReturn:
        """Raises the failure of ``buf``, which synchronize() then does not raise again."""
        error = buf.error
        assert error is not None
        for i, e in enumerate(self._unreported):
            if e is error:
                del self._unreported[i]
                break
        raise _raised(error)

    def memory_stats(self) -> dict[str, int]:
        """The caching allocator's counters.

        Returns
        -------
        dict of str to int
            ``allocated_bytes`` (blocks of live buffers), ``cached_bytes`` (free blocks kept for reuse),
            ``reserved_bytes`` (both), ``peak_allocated_bytes``, ``device_allocations`` (vkAllocateMemory
            calls), ``cache_hits`` (requests served from the cache), ``cache_releases`` (blocks destroyed by
            empty_cache or to make room), ``pipelines`` (VkPipelines built) and ``algorithms`` (descriptor
            sets kept for buffer sets).

        Examples
        --------
        >>> import dmlgpu
        >>> stats = dmlgpu.default_device().memory_stats()
        >>> stats["reserved_bytes"] == stats["allocated_bytes"] + stats["cached_bytes"]
        True
        """
        with self.lock:
            stats = self._allocator.memory_stats()
            stats["pipelines"] = self._pipelines.pipeline_count
            stats["algorithms"] = len(self._pipelines)
            return stats

    def empty_cache(self) -> None:
        """Releases the device memory of every cached (free) block, and the pooled host memory of free results
        written in place (runtime/host.py); buffers in use keep theirs (example: dmlgpu.Device.empty_cache)."""
        with self.lock:
            self.check_open()._flush()
            self._allocator.empty_cache()
            host.release_results(self)

    def close(self) -> None:
        """Releases the device (after its queued work; saving its pipeline cache); using it afterwards raises
        DeviceError. A Device is also a context manager that closes it.

        Examples
        --------
        >>> import dmlgpu
        >>> with dmlgpu.Device(0) as dev:
        ...     dev.buffer(nbytes=4).nbytes
        4
        """
        with self.lock:
            if not self.closed:
                self._flush()
                host.release_all(self)          # host arrays' imports (runtime/host.py)
                self._pipelines.save()
                self._watched = []              # reports not made: nothing reads this device again
                self._gen += 1                  # (their lineages spent)
                for buf in self._checks or ():
                    buf._release()
                self._checks = None
                self.closed = True
                self.clock_hold.release()
                self._allocator.unmap_cached(export.unmap)     # CUDA's mappings of cached blocks (runtime/export.py)
                self._pipelines.clear()
                self._mgr.destroy()

    def __enter__(self: _D) -> _D:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<dmlgpu.Device {self.info.index}: {self.info.name} ({self.info.type})>"

    def record(self, timestamps: bool = False) -> Recording:
        """A recording: ``with dev.record() as rec:`` captures the operations run on this device by this
        thread into one submission, submitted once when the block ends; ``rec.run()`` submits it again.

        Parameters
        ----------
        timestamps : bool
            The GPU writes a timestamp after each recorded step (Recording.timestamps()).

        Returns
        -------
        Recording

        Raises
        ------
        dmlgpu.DeviceError
            A closed device.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> dev = dmlgpu.default_device()
        >>> table = dmlgpu.tensor(np.arange(10, dtype=np.float32), device=dev)
        >>> ids = dmlgpu.tensor(np.zeros(2, np.int32), device=dev)
        >>> with dev.record() as rec:
        ...     rec.upload(ids)
        ...     out = dmlgpu.gather(table, ids)
        ...     rec.download(out)
        >>> rec.host(ids)[:] = [9, 4]; rec.run(); rec.host(out)
        array([9., 4.], dtype=float32)
        """
        return Recording(self.check_open(), timestamps)

    def warmup(self, kernels_: Iterable[str] | None = None,
               step: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
        """Builds the pipelines of kernel variants on this device and writes its pipeline cache to disk
        (pipelines.py), so that later processes' first calls compile nothing (``python -m dmlgpu warmup``).

        Parameters
        ----------
        kernels_ : iterable of str, optional
            Variant names of the default geometry (kernels.VARIANTS' without SMALL_SUFFIX); default: every
            one. Each is built in the device's geometry (``geometry.suffix`` appended).
        step : callable, optional
            Called with each name before it is built (a progress line).

        Returns
        -------
        (list of str, list of str)
            The variants built, and those skipped because the device lacks a feature or a limit they need
            (Device.supports: they never run on it).

        Examples
        --------
        >>> import dmlgpu
        >>> built, skipped = dmlgpu.default_device().warmup(["gather_u4_i32", "gather_u4_i64"])
        >>> built, skipped
        (['gather_u4_i32', 'gather_u4_i64'], [])
        """
        self.check_open()
        built: list[str] = []
        skipped: list[str] = []
        stems = [n for n in kernels.VARIANTS if not n.endswith(kernels.SMALL_SUFFIX)] if kernels_ is None \
            else list(kernels_)
        with self.lock:
            for stem in stems:
                name = stem + self.geometry.suffix
                if step is not None:
                    step(name)
                if not self.supports(stem):
                    skipped.append(name)
                    continue
                self._pipelines.build(name, self.dummy._block.tensor)
                built.append(name)
            self._pipelines.save()
        return built, skipped

    # ---- internal: buffers ----
    def check_open(self: _D) -> _D:
        if self.closed:
            raise DeviceError(f"device {self.info.index} ({self.info.name}) is closed")
        return self

    def _forget(self, block: Block) -> None:
        """Called before a cached block is destroyed: nothing may refer to it afterwards."""
        self._batches.sync_block(block)
        if block.cuda is not None:
            export.unmap(block)
        self._pipelines.forget(block)
        self._batches.forget()        # batches that bound it are never submitted again
        self._immediate.clear()
        for seq in self._replays.values():
            seq.clear()
        self._replays.clear()

    def _replay_sequence(self):
        """A cleared kp Sequence for a run that may be submitted again as recorded (the least recently used
        one once _REPLAYS are kept)."""
        if len(self._replays) < _REPLAYS:
            return self._mgr.sequence()
        seq = self._replays.pop(next(iter(self._replays)))
        seq.clear()
        return seq

    # ---- internal: transfers ----
    def write_bytes(self, buf: Buffer, offset: int, src: np.ndarray) -> None:
        """Uploads ``src`` (flat uint8) into ``buf`` at byte ``offset``, now."""
        with self.lock:
            self.check_open()._sync_buffer(buf)
            for block, at, pos, n in buf._pieces(offset, src.size):
                if block.view is not None:
                    transfers.host_copy(block.view[at:at + n], src[pos:pos + n])
                else:
                    self._staging.write(block.tensor, at, src[pos:pos + n])

    def read_range(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """A new uint8 array with ``nbytes`` bytes of ``buf`` from byte ``offset`` (guard words included),
        once the reports of the checks that reach ``buf`` are made (watch()); raises ``buf``'s failure instead
        (Buffer.error), every time until it is overwritten whole."""
        with self.lock:
            self.check_open()
            if buf.lineage and buf.lineage_gen == self._gen:   # checks that reach it: their reports first
                self._report()
            if buf.error is not None:
                self._raise(buf)
            return self._read(buf, offset, nbytes)

    def _read(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """read_range() without the reports."""
        with self.lock:
            self._sync_buffer(buf)
            out = np.empty(nbytes, dtype=np.uint8)
            for block, at, pos, n in buf._pieces(offset, nbytes):
                if block.view is not None:
                    transfers.host_copy(out[pos:pos + n], block.view[at:at + n])
                else:
                    self._staging.read(block.tensor, at, out[pos:pos + n])
            return out

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
        ops = _copy_ops(src, src_offset, dst, dst_offset, nbytes)
        rec = self.active_recording()
        if rec is not None:
            rec._append_copy(touched, ops)
            return
        self._queue_transfer(touched, dst, ops)

    def fill_buffer(self, buf: Buffer, word: int, offset: int, nbytes: int) -> None:
        """Fills ``nbytes`` of ``buf`` from byte ``offset`` (both multiples of 4) with a 32-bit word, in order
        with the queued work: appended to the device's open batch (a host read of ``buf`` waits for it), or
        run now inside a recording of this thread or when ``max_queued`` is 0."""
        if nbytes > 0:
            ops = [kp.OpFill(block.tensor, at, n, word) for block, at, _, n in buf._pieces(offset, nbytes)]
            if self.active_recording() is not None:
                self._transfer_now([buf], buf, ops)
            else:
                self._queue_transfer([buf], buf, ops)

    def _queue_transfer(self, touched: list, written: Buffer, ops: list) -> None:
        """Transfer ops on device buffers appended to the open batch after a barrier on the buffers they touch
        (a run of the batch: it counts towards max_queued), or run now when max_queued is 0."""
        with self.lock:
            self.check_open()
            if not self.max_queued:
                self._transfer_now(touched, written, ops)
                return
            batch = self._batches
            batch.ops.append(kp.OpMemoryBarrier([t for b in touched for t in b._tensors], *BEFORE_COPY))
            batch.ops += ops
            for b in touched:
                for block in b.block_list:
                    block.batch = batch.number
            batch.added()

    def _transfer_now(self, touched: list, written: Buffer, ops: list) -> None:
        """Submits transfer ops on device buffers and waits: after a barrier on the buffers they touch, and
        followed, on unified memory, by the barrier that lets the host read what they wrote."""
        with self.lock:
            self.check_open()
            for b in touched:
                self._sync_buffer(b)
            seq = self._immediate
            seq.clear()
            seq.record(kp.OpMemoryBarrier([t for b in touched for t in b._tensors], *BEFORE_COPY))
            for op in ops:
                seq.record(op)
            if self.direct_memory:
                seq.record(kp.OpMemoryBarrier(written._tensors, *BEFORE_HOST_READ))
            self._submit(seq, False)

    # ---- internal: running ----
    def active_recording(self):
        return getattr(self._local, "recording", None)

    # ---- runs: synchronous runs, their replays, the queue (module docstring) ----
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
        >>> with dmlgpu.default_device().runtime.launch() as launch:    # (dmlgpu.Device.runtime: this Device)
        ...     launch.scratch(16).nbytes, launch.run([])
        (16, [])
        """
        return Launch(self)

    def prepare(self, steps: tuple, out_nbytes: int, scratch: tuple = (), owner: int | None = None) -> Prepared:
        """Launches prepared once and queued per call on new buffers (runtime/launch.py's Prepared: a call
        template's; ``steps`` as Launch.steps takes them, the result in slot 2, ``scratch`` sizes after the
        caller's slots, ``owner`` the zeroed_serial of the zeroed scratch they use or None)."""
        return Prepared(self, steps, out_nbytes, scratch, owner)

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

    # ---- scratch, parameter and zeroed buffers; the size checks ----
    @property
    def memory_capacity(self) -> int:
        """The most bytes of buffers this Device can hold at once: its memory_limit, else the device's largest
        device-local memory heap."""
        heap = self.info.device_memory
        return heap if self.memory_limit is None else min(heap, self.memory_limit)

    def check_sizes(self, *nbytes: int) -> None:
        """DeviceError, before any GPU work, if buffers of these sizes (one operation's) cannot be held by the
        device together."""
        total, capacity = sum(nbytes), self.memory_capacity
        if total > capacity:
            what = f"a tensor of {total} bytes exceeds" if len(nbytes) == 1 else \
                f"tensors of {' + '.join(map(str, nbytes))} = {total} bytes exceed"
            raise DeviceError(f"{what} this device's memory ({capacity} bytes, {self.info.name}"
                              f"{', its memory_limit' if capacity == self.memory_limit else ''}); "
                              f"split the operation into smaller ones")


    def take_buffer(self, nbytes: int) -> Buffer:
        """A buffer of at least ``nbytes`` whose contents are undefined."""
        if self.closed:
            self.check_open()
        return Buffer(self, max(4, (nbytes + 3) & ~3))

    def give_buffers(self, *bufs: Buffer) -> None:
        """Returns _take()n buffers to the allocator now (those a recording uses stay until it goes)."""
        for buf in bufs:
            if not buf.pinned:
                buf._release()

    def params(self, words: np.ndarray) -> tuple[Buffer, bool]:
        """(a buffer holding these kernel parameter words, True if it is new: its words are staged and it
        must be listed among the uploads of the run that uses it). Buffers are shared by equal words, so
        repeated operations reuse their algorithms."""
        key = words.tobytes()
        buf = self._param_buffers.pop(key, None)
        fresh = buf is None
        if fresh:
            if len(self._param_buffers) >= _PARAMS_CACHE:
                self._param_buffers.pop(next(iter(self._param_buffers)))
            buf = Buffer(self, words.nbytes, whole=True)    # bound whole at binding 0
            buf.stage(np.frombuffer(key, dtype=np.uint8))
        self._param_buffers[key] = buf            # most recently used last
        return buf, fresh

    def block_table(self, slots, base: int) -> np.ndarray:
        """The block lists of the WIDE kernel variants (shaders/index_map.glsl's P_BLOCKS) for the buffers in
        ``slots`` (None: absent), to be placed at word ``base`` of their parameter words: per slot, the log2 of
        its block size in bytes (63: one block) and the word where its blocks' addresses start; then the
        addresses (uint64)."""
        head: list[int] = []
        addresses: list[int] = []
        start = base + 2 * len(slots)
        for buf in slots:
            blocks = buf.block_list if buf is not None else []
            head += [self.chunk_bytes.bit_length() - 1 if len(blocks) > 1 else 63, start + len(addresses)]
            addresses += [b.address for b in blocks] or [0]
        return np.array(head + addresses, dtype=np.uint64)

    def zeroed_buffer(self, key: str) -> Buffer | None:
        """The zeroed scratch kept for ``key`` (zeroed()), or None where none was made."""
        return self._zeroed.get(key)

    @property
    def zeroed_clean(self) -> bool:
        """False after a run that used zeroed scratch failed (the next zeroed() request renews it)."""
        return self._zeroed_clean

    def zeroed(self, key: str, nbytes: int, beside: tuple = ()) -> Buffer:
        """Zeroed scratch: a buffer of at least ``nbytes`` (a multiple of 4), all zeros, kept for ``key`` and
        shared by the runs that ask for it. The kernels that use it must leave it all zeros again (a scatter's
        claim words: dmlgpu/plans/plan.py), or at least the part they rely on being zero where they write the rest
        before reading it (the radix sort's totals: shaders/radix.glsl); after a run that used zeroed scratch fails, the next request gets a new,
        zeroed one. It grows by powers of two up to one block (chunked past it). DeviceError, before any GPU
        work, if the device cannot hold it beside the operation's tensors ``beside`` (bytes)."""
        buf = self._zeroed.get(key)
        if buf is None or buf.nbytes < nbytes or not self._zeroed_clean:
            self.check_sizes(*beside, nbytes)
            size = max(nbytes, 4096, 0 if buf is None else buf.nbytes)
            size = 1 << (size - 1).bit_length()        # powers of two up to one block, then what is asked
            if size > self.whole_max:
                size = nbytes
            if not self._zeroed_clean:
                self._zeroed.clear()
                self._zeroed_clean = True
            self._zeroed.pop(key, None)
            buf = self._zeroed[key] = Buffer(self, size)
            self.zeroed_serial += 1
            self.fill_buffer(buf, 0, 0, buf.nbytes)
        return buf
