"""A Vulkan device opened through Kompute: its buffers (runtime/buffer.py), synchronous runs of kernel
dispatches and their replays, and the batches of queued eager runs (runtime/batch.py).

How runs are ordered and when queued runs are submitted: runtime/runs.py (the mixin Runs); scratch,
parameter and zeroed buffers: runtime/scratch.py (the mixin Scratch)."""
from __future__ import annotations

import atexit
import os
import threading
import weakref

from typing import Any, Callable, Iterable, NamedTuple, TypeVar

import numpy as np

from ..kernels import table as kernels
from ..errors import DeviceError
from . import host, profiles, transfers
from .clocks import ClockHold
from .discovery import (DEVICE_LOCAL, HOST_COHERENT, HOST_VISIBLE, DeviceInfo, default_device_index, devices, kp,
                        open_manager)
from .batch import Batch
from .buffer import COPY, Buffer, MappedBuffer, _copy_ops, as_bytes
from .memory import Allocator, Block
from .pipelines import Pipelines
from .recording import Recording
from .runs import Runs
from .scratch import Scratch
from .transfers import BEFORE_COPY, BEFORE_DISPATCH, BEFORE_HOST_READ, Staging

_REPLAYS = 16            # recorded synchronous runs kept per device, submitted again when repeated
_MAX_QUEUED = 64         # eager runs a batch holds before it is submitted (Device's max_queued default)


_open_devices: "weakref.WeakSet[Device]" = weakref.WeakSet()
_D = TypeVar("_D", bound="Device")


@atexit.register
def _save_pipeline_caches() -> None:
    for dev in list(_open_devices):
        if not dev.closed:
            dev._pipelines.save()


CHECK_SLOTS = 256     # checks (Device.watch) that may await their reports at once: the check buffer's slots


class Watch(NamedTuple):
    """A check made by the device (Device.watch): its buffer and report slot, how to report it, the buffers
    that a failed check marks."""

    buffer: Buffer
    reports: Buffer
    slot: int
    report: Callable[[np.ndarray], BaseException | None]
    results: list

class Device(Runs, Scratch):
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
    """

    def __init__(self, index: int | None = None, *, memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None,
                 profile=None, hold_clocks: bool | None = None):
        listed = devices()
        if index is None:
            index = default_device_index()
        if not 0 <= index < len(listed):
            raise DeviceError(f"device index {index} must be in [0, {len(listed) - 1}]")
        self.profile = profiles.resolve(profile)
        self.physical_info: DeviceInfo = listed[index]
        self.info: DeviceInfo = profiles.apply(listed[index], self.profile)
        self.geometry = kernels.geometry(min(self.info.max_workgroup_invocations, self.info.max_workgroup_size[0]))
        if direct_memory is None:
            env = os.environ.get("DMLGPU_DIRECT_MEMORY", "")
            direct_memory = self.info.unified_memory if env == "" else env != "0"
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
        self._allocator = Allocator(lambda size: self._mgr.buffer(size, flags), self._forget, self.max_block,
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
        self._checks: tuple[Buffer, Buffer] | None = None   # the check buffers (watch()), made on first use
        self.dummy = Buffer(self, 4)
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
        if buf.nbytes > src.size:
            self.fill_buffer(buf, 0, src.size // 4 * 4, buf.nbytes - src.size // 4 * 4)
        buf.write(src)
        return buf

    def synchronize(self) -> None:
        """Submits the queued eager calls and waits until the device has finished them (host reads of their
        results wait by themselves: this is for timing and for handing results to other APIs).

        Examples
        --------
        >>> import dmlgpu
        >>> dmlgpu.default_device().synchronize()
        """
        with self.lock:
            self.check_open()._flush()
            self._report()

    def watch(self, report: Callable[[np.ndarray], BaseException | None]) -> Watch:
        """A check that the device itself makes of work about to be queued (mode="raise" on Tensor indices),
        through the device's check buffers: ``Watch.buffer`` (16 bytes of device memory, the checking kernels'
        own, zero but while a check runs) and ``Watch.reports`` (host-visible: read without a transfer), whose
        words 4 slot to 4 slot + 3 (``Watch.slot``) the check's last kernel writes, with the barrier that lets
        the host read them. Call it and queue the check's kernels in one launch (which holds the device's
        lock). Once that work has run, at the device's next synchronize() or host read
        (read_range), ``report`` gets the slot's four words (uint32) and returns an exception or None; the
        first exception returned is raised there (the other reports are still made). ``Watch.results``: a
        list the caller may fill with result buffers of the checked work; when ``report`` returns an
        exception, a host read of any of them raises it again."""
        with self.lock:
            if len(self._watched) == CHECK_SLOTS:   # every slot awaits its report: make them first
                self._flush()
                self._report()
            if self._checks is None:
                self._checks = (self.buffer(nbytes=16), self.buffer(nbytes=16 * CHECK_SLOTS) if self.direct_memory
                                else MappedBuffer(self, 16 * CHECK_SLOTS))
            watch = Watch(*self._checks, len(self._watched), report, [])
            self._watched.append(watch)
            return watch

    def _report(self) -> None:
        """Makes the watched reports (watch()) with one read of the check buffer, raising the first exception
        one returns."""
        if not self._watched:
            return
        watched, self._watched = self._watched, []
        words = self._read(watched[0].reports, 0, 16 * len(watched)).view(np.uint32)
        first = None
        for watch in watched:
            error = watch.report(words[4 * watch.slot:4 * watch.slot + 4])
            if error is not None:
                for buf in watch.results:
                    buf.error = error
                first = first or error
        if first is not None:
            raise first

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
                for buf in self._checks or ():
                    buf._release()
                self._checks = None
                self.closed = True
                self.clock_hold.release()
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
        once the watched reports are made (watch(): their exception raised instead, or the one that marked
        ``buf``)."""
        with self.lock:
            self.check_open()._report()
            if buf.error is not None:
                raise buf.error.with_traceback(None)
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
        with self.lock:
            self.check_open()
            if not self.max_queued:
                self._transfer_now(touched, dst, ops)
                return
            batch = self._batches
            batch.ops.append(kp.OpMemoryBarrier([t for b in touched for t in b._tensors], *BEFORE_COPY))
            batch.ops += ops
            for b in touched:
                for block in b.block_list:
                    block.batch = batch.number
            batch._added()

    def fill_buffer(self, buf: Buffer, word: int, offset: int, nbytes: int) -> None:
        """Fills ``nbytes`` of ``buf`` from byte ``offset`` (both multiples of 4) with a 32-bit word, now."""
        if nbytes > 0:
            self._transfer_now([buf], buf, [kp.OpFill(block.tensor, at, n, word)
                                            for block, at, _, n in buf._pieces(offset, nbytes)])

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
