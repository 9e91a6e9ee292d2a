"""A Vulkan device opened through Kompute, composed of parts with one job each:

- ``memory`` (runtime/memory.py's Memory): the caching allocator and the block geometry, the part its buffers
  get (runtime/buffer.py);
- ``encoder`` (runtime/encode.py): turns launches (Dispatch, the one launch form) into kp commands and
  barriers, the only place that builds them (the module's docstring says how work is ordered);
- ``submitter`` (runtime/submit.py): the queue: where work goes (the recording of a thread, the open batch of
  queued runs: runtime/batch.py, or a submission now), synchronous runs and their replays, transfers;
- ``scratch`` and ``admission`` (runtime/scratch.py): parameter buffers, block tables, zeroed scratch; the
  kernels the device's limits admit;
- ``checks`` (runtime/checks.py): the device's own checks of queued work and the poison they spread.

When queued eager calls are submitted: runtime/batch.py's docstring."""
from __future__ import annotations

import atexit
import operator
import os
import threading
import weakref
from typing import Any, Callable, Iterable, Sequence, TypeVar

import numpy as np

from ..errors import DeviceError
from ..kernels import table as kernels
from . import export, host, profiles
from .access import Access
from .batch import Settings
from .buffer import Buffer, MappedBuffer
from .checks import Checks, Watch
from .clocks import ClockHold
from .discovery import (DEVICE_LOCAL, HOST_COHERENT, HOST_VISIBLE, DeviceInfo, default_device_index, devices,
                        open_manager)
from .encode import Dispatch, Encoder
from .launch import Launch, Prepared, give_back, take
from .memory import Allocator, Block, Memory
from .pipelines import Pipelines
from .recording import Recording
from .scratch import Admission, Scratch
from .submit import Submitter

_open_devices: "weakref.WeakSet[Device]" = weakref.WeakSet()
_D = TypeVar("_D", bound="Device")


def _held(part: str, name: str, doc: str) -> Any:
    """A Device attribute that one of its parts holds (read and set through the Device)."""
    return property(operator.attrgetter(f"{part}.{name}"),
                    lambda self, value: setattr(getattr(self, part), name, value), doc=doc)


@atexit.register
def _save_pipeline_caches() -> None:
    for dev in list(_open_devices):
        if not dev.closed:
            dev._pipelines.save()


def _selected(index: int | None, profile: Any) -> tuple[int, profiles.Profile, DeviceInfo, DeviceInfo]:
    """Device's ``index`` (default: default_device_index()), its profile, DeviceInfo and the info as the profile
    shows it."""
    listed = devices()
    if index is None:
        index = default_device_index()
    if not 0 <= index < len(listed):
        raise DeviceError(f"device index {index} must be in [0, {len(listed) - 1}]")
    resolved = profiles.resolve(profile)
    return index, resolved, listed[index], profiles.apply(listed[index], resolved)


def _exportable(info: DeviceInfo, exportable: bool | None) -> bool:
    """Device's ``exportable``: the default (export.exportable_default), or True where the device can export."""
    if exportable and export.FEATURE not in info.features:
        raise DeviceError(f"{info.name} cannot export its memory (it lacks VK_KHR_external_memory_fd, the "
                          f"feature {export.FEATURE!r}, or a profile withholds it): exportable=True is not possible")
    return export.exportable_default(info) if exportable is None else bool(exportable)


def _enabled(info: DeviceInfo, mgr: Any) -> frozenset[str]:
    """The optional features kp enabled (kp patch 0015: those the device has; 0018: but those the profile
    withholds); kernels use only these."""
    features = frozenset(name for name, on in mgr.enabled_features().items() if on)
    if features != info.features:
        raise DeviceError(f"{info.name}: kp enabled the features {sorted(features)}, not those the device has "
                          f"({sorted(info.features)}); rebuild kp with 'python tools/build_kp.py --force'")
    return features


def _block_sizes(info: DeviceInfo, chunk_bytes: int | None) -> tuple[int, int, int]:
    """(bytes of one block, Device's ``chunk_bytes``, the largest buffer held in one block: larger are chunked)."""
    max_block = min(info.max_storage_buffer_range, info.max_memory_allocation_size or 2**64,
                    info.max_buffer_size or 2**64) // 4 * 4
    if chunk_bytes is not None and (chunk_bytes & (chunk_bytes - 1) or not 256 <= chunk_bytes <= max_block):
        raise ValueError(f"chunk_bytes ({chunk_bytes}) must be a power of two from 256 to {max_block}")
    chunk = 1 << (max_block.bit_length() - 1) if chunk_bytes is None else int(chunk_bytes)
    return max_block, chunk, chunk if chunk_bytes is not None else max_block


def _first_buffer(memory: Memory, direct: bool, name: str, clock_hold: ClockHold) -> Buffer:
    """A device's first buffer (4 bytes; push-descriptor kernels bind it as their placeholder). Refused where
    direct memory was asked for, it says that the device-local host-visible memory type takes no storage buffer
    (an H100's), not that memory ran out."""
    try:
        return Buffer(memory, 4)
    except DeviceError as e:
        if not direct:
            raise
        clock_hold.release()
        raise DeviceError(f"{name} has no host-visible device memory that takes storage buffers: "
                          f"direct_memory=True is not possible (its first buffer: {e})") from None


class Device:
    """A Vulkan device opened through Kompute.

    ``index``: as listed by dmlgpu.devices(); default: DMLGPU_DEVICE, else the first discrete GPU, else
    the first device. ``memory_limit``: the most bytes of device memory this Device's allocator holds at once
    (in use and cached), or None for what the driver gives. ``direct_memory``: read and write buffers through
    mapped memory instead of staging copies; default: DMLGPU_DIRECT_MEMORY (0 or 1) if set, else on
    unified-memory devices (DeviceInfo.unified_memory); DeviceError where no device-local host-visible memory type
    takes storage buffers (an H100's does not). ``max_queued``: the most eager calls on device
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
    ``profile``, ``hold_clocks``, ``exportable``: as dmlgpu.Device documents them (runtime/profiles.py,
    runtime/clocks.py, runtime/export.py). ``info`` is the DeviceInfo as the profile shows it
    (``physical_info``: as the device has it); ``features``: the optional Vulkan features enabled on it;
    ``geometry``: the kernel variant set its plans use (kernels.Geometry). A run whose kernel needs more than
    the device's limits or features raises DeviceError naming them before any GPU work.
    """

    def __init__(self, index: int | None = None, *, memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None,
                 profile=None, hold_clocks: bool | None = None, exportable: bool | None = None):
        index, self.profile, self.physical_info, info = _selected(index, profile)
        self.info = info
        self.exportable = _exportable(info, exportable)
        self.geometry = kernels.geometry(min(info.max_workgroup_invocations, info.max_workgroup_size[0]))
        self.queueing = Settings.resolve(info, max_queued, direct_memory)
        self.lock = threading.RLock()
        self._mgr = open_manager(index, self.profile.withheld & self.physical_info.features)
        self.clock_hold = ClockHold(self.physical_info.vendor_id, self.physical_info.device_uuid, hold_clocks)
        self.features = _enabled(info, self._mgr)
        self.max_block, self.chunk_bytes, self.whole_max = _block_sizes(info, chunk_bytes)
        self.memory_limit = memory_limit
        flags, mgr = DEVICE_LOCAL | (HOST_VISIBLE | HOST_COHERENT if self.direct_memory else 0), self._mgr
        allocator = Allocator((lambda size: mgr.buffer(size, flags, True)) if self.exportable else
                              (lambda size: mgr.buffer(size, flags)), self.forget, self.max_block,
                              memory_limit, self.direct_memory)
        self.memory = Memory(self, mgr, info, self.lock, allocator, self.chunk_bytes, self.whole_max,
                             memory_limit, int(os.environ.get("DMLGPU_CANARY_WORDS", "0")))  # (test mode)
        self._pipelines = Pipelines(mgr, info, self.geometry.suffix,
                                    "" if self.profile.name == "full" else self.profile.name)
        self._max_groups = info.max_workgroup_count[0]
        self.encoder = Encoder(self._pipelines.algorithm, self.workgroups)
        self.scratch = Scratch(self.memory, lambda *fill: self.access.fill_buffer(*fill))
        # which kernels must be checked against the limits: where a limit is below what some variant needs
        self.admission = Admission(info, self.features, self.profile, self.geometry.suffix)
        self.submitter = Submitter(self.memory, self.encoder, self.scratch, self.admission, self.queueing,
                                   self.read_range, lambda: bool(self.checks.watched))
        self.checks = Checks(self.submitter, self._check_buffers, self.chunk_bytes // 16)
        self.access = self.memory.io = Access(self.submitter, self.checks, self.forget)
        self.dummy = _first_buffer(self.memory, bool(self.direct_memory), info.name, self.clock_hold)
        self._pipelines.placeholder = self.dummy._block.tensor    # push-descriptor bases bind it
        _open_devices.add(self)

    # ---- settings and state that its parts hold ----
    max_queued = _held("queueing", "max_queued", "Device's argument (0: nothing is queued)")
    eager_submit = _held("queueing", "eager_submit", "Device's argument")
    direct_memory = _held("queueing", "direct_memory", "Device's argument")
    canary_words = _held("memory", "canary_words", "test mode: the guard words after every new buffer (Buffer)")
    closed = _held("memory", "closed", "True once close() ran")
    tainted = _held("checks", "tainted", "Checks.tainted: calls must pass their operands through taint()")
    zeroed_serial = _held("scratch", "zeroed_serial", "Scratch.zeroed_serial")
    zeroed_clean = _held("scratch", "zeroed_clean", "False after a run that used zeroed scratch failed")

    memory_capacity = property(lambda self: self.memory.capacity, doc="""The most bytes of buffers this Device
        can hold at once: its memory_limit, else the device's largest device-local memory heap (Memory.capacity)""")

    # ---- public ----
    def buffer(self, data: Any = None, nbytes: int | None = None) -> Buffer:
        """A Buffer of ``nbytes`` bytes, or holding ``data``'s bytes (dmlgpu.Device.buffer documents it for users)."""
        self.check_open()
        return self.access.new_buffer(data, nbytes)

    def watch(self, report: Callable[[np.ndarray], BaseException | None]) -> Watch:
        """A check that the device makes of work about to be queued (Checks.watch)."""
        return self.checks.watch(report)

    def taint(self, reads: Sequence[Buffer | None], out: Buffer | None = None,
              whole: bool = False) -> tuple[int, int] | None:
        """The lineage of a call about to be queued (Checks.taint)."""
        return self.checks.taint(reads, out, whole)

    def reach(self, lineage: tuple[int, int], buf: Buffer) -> None:
        """A new buffer written by the call whose lineage taint() returned (Checks.reach)."""
        self.checks.reach(lineage, buf)

    def _check_buffers(self, slots: int) -> tuple[Buffer, Buffer]:
        """The check buffers of ``slots`` reports (watch()): zeroed device memory, and host-visible memory."""
        return self.buffer(nbytes=16), (self.buffer(nbytes=16 * slots) if self.direct_memory
                                        else MappedBuffer(self.memory, 16 * slots))

    def synchronize(self) -> None:
        """Submits the queued calls and waits for the device to finish them, raising what a check of the
        queued work found (dmlgpu.Device.synchronize documents it for users)."""
        with self.lock:
            self.check_open()
            self.submitter.flush()
            self.checks.report()
            self.checks.raise_unreported()

    def memory_stats(self) -> dict[str, int]:
        """The allocator's counters and the pipelines built (dmlgpu.Device.memory_stats documents the keys)."""
        with self.lock:
            stats = self.memory.allocator.memory_stats()
            stats["pipelines"] = self._pipelines.pipeline_count
            stats["algorithms"] = len(self._pipelines)
            return stats

    def empty_cache(self) -> None:
        """Releases the device memory of every cached (free) block, and the pooled host memory of free results
        written in place (runtime/host.py); buffers in use keep theirs (example: dmlgpu.Device.empty_cache)."""
        with self.lock:
            self.check_open()
            self.submitter.flush()
            self.memory.allocator.empty_cache()
            host.release_results(self)

    def close(self) -> None:
        """Waits for queued work, frees the device's memory and pipelines; idempotent (dmlgpu.Device.close)."""
        with self.lock:
            if not self.closed:
                self.submitter.flush()
                host.release_all(self)          # host arrays' imports (runtime/host.py)
                self._pipelines.save()
                self.checks.close()             # reports not made: nothing reads this device again
                self.closed = True
                self.clock_hold.release()
                self.memory.allocator.unmap_cached(export.unmap)     # CUDA's mappings of cached blocks (runtime/export.py)
                self._pipelines.clear()
                self._mgr.destroy()

    def __enter__(self: _D) -> _D:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<dmlgpu.Device {self.info.index}: {self.info.name} ({self.info.type})>"

    def record(self, timestamps: bool = False) -> Recording:
        """A Recording of this thread's operations on the device (dmlgpu.Device.record documents it for users)."""
        self.check_open()
        return Recording(self.submitter, self.checks, timestamps)

    def warmup(self, kernels_: Iterable[str] | None = None,
               step: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
        """Builds the pipelines of ``kernels_`` (default: every variant of the default geometry) in this
        device's geometry and saves the pipeline cache: (built, skipped) (dmlgpu.Device.warmup documents it)."""
        self.check_open()
        with self.lock:
            return self._pipelines.warmup(kernels_, self.supports, self.dummy._block.tensor, step)

    def check_open(self: _D) -> _D:
        """The device, or DeviceError if it is closed."""
        self.memory.check_open()
        return self

    def forget(self, block: Block) -> None:
        """Called before a cached block is destroyed: nothing may refer to it afterwards."""
        self.submitter.forget(block)
        if block.cuda is not None:
            export.unmap(block)
        self._pipelines.forget(block)

    # ---- buffers' bytes (runtime/access.py) ----
    def queue_write(self, buf: Buffer, offset: int, src: np.ndarray) -> None:
        """Writes ``src`` into ``buf`` at byte ``offset`` after the queued work that uses it (Access)."""
        self.access.queue_write(buf, offset, src)

    def write_bytes(self, buf: Buffer, offset: int, src: np.ndarray) -> None:
        """Uploads ``src`` (flat uint8) into ``buf`` at byte ``offset``, now (Submitter.write_bytes)."""
        self.submitter.write_bytes(buf, offset, src)

    def read_range(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """``nbytes`` of ``buf`` from byte ``offset``, after the checks' reports (Access.read_range)."""
        return self.access.read_range(buf, offset, nbytes)

    def copy_buffer(self, src: Buffer, dst: Buffer, nbytes: int, src_offset: int = 0, dst_offset: int = 0) -> None:
        """Copies bytes between buffers on the device, in order with the queued work (Access.copy_buffer)."""
        self.access.copy_buffer(src, dst, nbytes, src_offset, dst_offset)

    def fill_buffer(self, buf: Buffer, word: int, offset: int, nbytes: int) -> None:
        """Fills bytes of ``buf`` with a 32-bit word, in order with the queued work (Access.fill_buffer)."""
        self.access.fill_buffer(buf, word, offset, nbytes)

    # ---- runs (module docstring) ----
    def active_recording(self) -> Any:
        """The open recording of this thread, or None."""
        return self.submitter.recording()

    def launch(self) -> Launch:
        """A launch: the one way to run kernels on this device (runtime/launch.py): ``with dev.launch() as
        launch:`` holds the device's lock, ``launch.scratch(n)`` hands out scratch that goes back when the block
        ends, ``launch.run(dispatches, ...)`` runs, queues or records them (DeviceError: a closed device).

        >>> import dmlgpu
        >>> with dmlgpu.default_device().runtime.launch() as launch:    # (dmlgpu.Device.runtime: this Device)
        ...     launch.scratch(16).nbytes, launch.run([])
        (16, [])
        """
        return Launch(self.submitter)

    def prepare(self, steps: tuple, out_nbytes: int, scratch: tuple = (), owner: int | None = None,
                derive: Callable[[list], tuple[list, list] | None] | None = None, given: int = 0) -> Prepared:
        """Launches prepared once and queued per call on new buffers (runtime/launch.py's Prepared: a call
        template's; ``steps`` template Dispatches, their buffers slots or Buffers, the result in slot 2; ``scratch``
        sizes after the caller's slots, ``owner`` the zeroed_serial of the zeroed scratch they use or None;
        ``derive`` and ``given``: launches on buffers held in several blocks, whose slots from ``given`` on hold the
        parameter buffers that ``derive`` makes from the others)."""
        return Prepared(self.submitter, steps, out_nbytes, scratch, owner, self._pipelines, derive, given)

    def run(self, dispatches: Sequence[Dispatch], uploads: Sequence[Buffer] = (),
            downloads: Sequence[Buffer] = ()) -> list:
        """A launch of these dispatches without scratch of its own (Launch.run: recorded inside a recording of
        this thread, else submitted now, waiting for it; returns the downloaded bytes)."""
        with self.launch() as launch:
            return launch.run(dispatches, uploads, downloads)

    def _run(self, dispatches: Sequence[Dispatch], uploads: Sequence[Buffer] = (), downloads: Sequence[Buffer] = (),
             queue: bool = False, host_read: bool = False) -> list:
        """A synchronous run, or one recorded or queued (Submitter.run)."""
        return self.submitter.run(dispatches, uploads, downloads, queue, host_read)

    def clear_algorithms(self) -> None:
        """Drops the Kompute algorithms (descriptor sets) kept for the buffer sets of past dispatches; the
        pipelines stay. They keep their buffers' blocks alive until then."""
        with self.lock:
            self._pipelines.clear()

    def command_count(self, dispatches: Iterable[Dispatch]) -> int:
        """The Vulkan commands that these dispatches record in order: a kernel's barrier (if it has one, or
        follows a copy step) and itself; a copy step's barrier and its region copies (one per block range)."""
        return self.encoder.count(dispatches)

    def workgroups(self, count: int) -> int:
        """The workgroups that a dispatch of ``count`` iterations launches on this device."""
        return self.geometry.workgroups(count, self._max_groups)

    def supports(self, stem: str) -> bool:
        """Whether this device, as its profile shows it, can run the kernel variant ``stem`` of its geometry
        (its SPIR-V's needs, every binding a storage buffer: profiles.limit_problem); each stem is checked once.
        Plans ask it to choose between variants where a device may lack what the faster one needs."""
        return self.admission.supports(stem)

    # ---- scratch, parameter and zeroed buffers; the size checks (runtime/scratch.py) ----
    def check_sizes(self, *nbytes: int) -> None:
        """DeviceError, before any GPU work, if buffers of these sizes (one operation's) cannot be held by the
        device together."""
        self.memory.check_sizes(*nbytes)

    def take_buffer(self, nbytes: int) -> Buffer:
        """A buffer of at least ``nbytes`` whose contents are undefined."""
        return take(self.memory, nbytes)

    def give_buffers(self, *bufs: Buffer) -> None:
        """Returns take_buffer()'s buffers to the allocator now (those a recording uses stay until it goes)."""
        give_back(bufs)

    def params(self, words: np.ndarray) -> tuple[Buffer, bool]:
        """(a buffer holding these kernel parameter words, True if it is new: its words are staged and it
        must be listed among the uploads of the run that uses it). Buffers are shared by equal words, so
        repeated operations reuse their algorithms."""
        return self.scratch.params(words)

    def block_table(self, slots, base: int) -> np.ndarray:
        """The block lists of the WIDE kernel variants (shaders/index_map.glsl's P_BLOCKS) for the buffers in
        ``slots`` (None: absent), to be placed at word ``base`` of their parameter words: per slot, the log2 of
        its block size in bytes (63: one block) and the word where its blocks' addresses start; then the
        addresses (uint64)."""
        return self.scratch.block_table(slots, base)

    def zeroed_buffer(self, key: str) -> Buffer | None:
        """The zeroed scratch kept for ``key`` (zeroed()), or None where none was made."""
        return self.scratch.zeroed_buffers.get(key)

    def zeroed(self, key: str, nbytes: int, beside: tuple = ()) -> Buffer:
        """Zeroed scratch: a buffer of at least ``nbytes`` (a multiple of 4), all zeros, kept for ``key`` and
        shared by the runs that ask for it. The kernels that use it must leave it all zeros again (a scatter's
        claim words: dmlgpu/plans/plan.py), or at least the part they rely on being zero where they write the
        rest before reading it (the radix sort's totals: shaders/radix.glsl); after a run that used zeroed
        scratch fails, the next request gets a new, zeroed one. It grows by powers of two up to one block
        (chunked past it). DeviceError, before any GPU work, if the device cannot hold it beside the
        operation's tensors ``beside`` (bytes)."""
        return self.scratch.zeroed(key, nbytes, beside)

