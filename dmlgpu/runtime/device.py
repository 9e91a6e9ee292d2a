"""A Vulkan device opened through Kompute: its buffers, and recording and running kernel dispatches.

Ordering: Kompute's OpAlgoDispatch records no barrier of its own (kp patch 0016), so dmlgpu records one
global memory barrier before every dispatch (``BEFORE_DISPATCH`` on all memory, kp patch 0017: one
vkCmdPipelineBarrier, made once per device): all earlier transfer and compute writes are made available and
visible to the dispatch's reads and writes, and all earlier reads finish first. Two dependent dispatches in
one submission are therefore ordered (RAW, WAW and WAR alike). A dispatch marked ``barrier=False`` (a
scatter's copy, independent of the claim pass before it) shares the barrier of the dispatch before it, so
the two may overlap. Copies into and out of
device buffers are preceded by ``BEFORE_COPY``; memory the host reads after a submission (staging, or
mapped device buffers on unified memory) is made visible to it by a global ``BEFORE_HOST_READ`` at the end.

Queued eager calls: runs that produce device Tensors (``Device._run(..., queue=True)``) are collected into the
device's open *batch* (a list of kp ops, recorded into one of two kp Sequences when the batch is submitted, in
one call; a batch whose ops are those that Sequence already holds, as in a loop of a call and a synchronize,
is submitted again without recording), and submitted together when the host needs a result: a host read or
write of a buffer the batch uses, a synchronous run (NumPy results, layer-1 execute(), Buffer.read()), a
recording's submission, ``Device.synchronize()``, or ``max_queued`` runs in the batch. There is one open
batch per device, shared by its threads under the device's lock, so the order of the calls is the order in
which the threads got the lock. A batch submitted because it is full is not waited for: the next one is
recorded while the GPU runs it (at most one is in flight; the next submission waits for it first).
The caching allocator may hand a block that a queued run still uses to a later queued run: the batches run in
submission order on one queue, and the barrier before each dispatch makes earlier reads and writes of its
buffers finish first (PyTorch's same-stream reuse). What would reach such a block outside the batches (host
reads and writes of mapped memory, staging transfers, fills, destroying it) first submits the open batch and
waits for it, or waits for the batch in flight, if that batch uses the block: every block records the batch
that last used it (``Block.batch``).
"""
from __future__ import annotations

import atexit
import os
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

import numpy as np

from .. import kernels
from ..errors import DeviceError
from . import transfers
from .devices import DEVICE_LOCAL, HOST_COHERENT, HOST_VISIBLE, DeviceInfo, default_device_index, devices, kp, \
    open_manager
from .memory import Allocator, Block
from .pipelines import Pipelines

if TYPE_CHECKING:
    from .recording import Recording
from .transfers import BEFORE_COPY, BEFORE_DISPATCH, BEFORE_HOST_READ, Staging

CANARY = 0x5EEDCAFE      # pattern of the guard words (test mode)
_PARAMS_CACHE = 256      # parameter buffers kept per device
_FUSE_MAX = 4 << 20      # transfers up to this many bytes (each way) join the operation's own submission
_REPLAYS = 16            # recorded synchronous runs kept per device, submitted again when repeated
_MAX_QUEUED = 64         # eager runs a batch holds before it is submitted (Device's max_queued default)
_QUEUE_UPLOADS = 1 << 20 # bytes of host data (per batch) that queued runs upload through the batch's own staging


def _packed(sizes) -> list:
    """Byte offsets of consecutive pieces of these sizes in one staging buffer, each at a multiple of 16,
    followed by the total they take."""
    out, pos = [], 0
    for n in sizes:
        out.append(pos)
        pos += -(-n // 16) * 16
    return out + [pos]


def as_bytes(data) -> np.ndarray:
    """The raw bytes of an array or bytes-like object, as a flat uint8 array (a view where possible)."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


class _HostMemory:
    """Exposes mapped memory to NumPy while keeping its owner (a Buffer) alive: arrays made from it hold it."""

    def __init__(self, owner, view: np.ndarray, nbytes: int):
        self.owner = owner
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (view.ctypes.data, False),
                                    "version": 3}


class Buffer:
    """A device buffer of raw bytes; its size is a multiple of 4. Made by Device.buffer() (and by operations
    for their results), backed by a block of the device's caching allocator, which gets it back when the
    Buffer is collected. A buffer larger than one block (``Device.max_block``; ``chunk_bytes`` if given) is
    held in several blocks (``chunked``): block i holds bytes [i * Device.chunk_bytes, (i + 1) * chunk_bytes);
    its kernels address it through the blocks' device addresses, and transfers move each block's share.

    Test mode: with ``Device.canary_words`` > 0, every new buffer has that many extra guard words after
    its ``nbytes``, holding CANARY; ``canary_intact()`` downloads and checks them. Kernels see the guard
    words as part of the buffer, so a write past a tensor's end changes them and a read past it returns
    them (and shows up in results).

    Parameters
    ----------
    device : Device
    nbytes : int
        A positive multiple of 4.
    whole : bool
        Held in one block whatever its size (up to ``Device.max_block``).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> buf = dmlgpu.default_device().buffer(np.array([1, 2, 3], np.uint16))   # 6 bytes, padded to 8
    >>> buf.nbytes, buf.read().view(np.uint16)
    (8, array([1, 2, 3, 0], dtype=uint16))
    >>> buf.write(np.array([9], np.uint32), offset=4); buf.read().view(np.uint16)
    array([1, 2, 9, 0], dtype=uint16)
    """

    _pending: np.ndarray | None = None   # bytes to upload by the next run that lists this buffer
    _mirror: Any = None                  # host-visible copy for recordings (staging devices only)
    _host: np.ndarray | None = None
    pinned = False                       # a recording uses it: Device._give leaves it alone

    def __init__(self, device: "Device", nbytes: int, whole: bool = False):
        if nbytes <= 0 or nbytes % 4:
            raise ValueError(f"a buffer's size ({nbytes} bytes) must be a positive multiple of 4")
        if nbytes > device._check_above:
            device._check_sizes(nbytes)
        self.device = device
        self.nbytes = nbytes
        self.canary_words = canary = device.canary_words
        with device._lock:                 # the allocator's lists are shared by the device's threads
            self._blocks: list[Block] = device._allocator.allocate_span(
                nbytes + 4 * canary, device.chunk_bytes, None if whole else device._whole_max)
        self._block = self._blocks[0]
        self._tensor = self._block.tensor
        self.chunked = len(self._blocks) > 1      # held in several blocks
        if canary:
            device._fill(self, CANARY, nbytes, 4 * canary)

    @classmethod
    def _in_block(cls, device: "Device", nbytes: int) -> "Buffer":
        """A Buffer of ``nbytes`` in one block, contents undefined, for a caller that holds the device's lock
        and knows that ``nbytes`` is a positive multiple of 4 that one block holds and that the device adds no
        guard words (a call template's results and scratch: their sizes were checked when it was traced)."""
        buf = cls.__new__(cls)
        buf.device, buf.nbytes, buf.canary_words, buf.chunked = device, nbytes, 0, False
        block = device._allocator.allocate(nbytes)
        buf._blocks, buf._block, buf._tensor = [block], block, block.tensor
        return buf

    def write(self, data, offset: int = 0) -> None:
        """Uploads raw bytes (any array or bytes-like object) at byte ``offset`` (a multiple of 4), after the
        queued work that uses the buffer. ValueError if they do not fit."""
        src = as_bytes(data)
        if offset < 0 or offset % 4 or offset + src.size > self.nbytes:
            raise ValueError(f"{src.size} bytes at offset {offset} do not fit a buffer of {self.nbytes} bytes "
                             f"(the offset must be a multiple of 4)")
        if src.size:
            self.device._write(self, offset, src)

    def read(self) -> np.ndarray:
        """Downloads the buffer, once the queued work that writes it has run: a new uint8 array of nbytes
        bytes. RuntimeError inside a recording."""
        if self.device._recording() is not None:
            raise RuntimeError("read() cannot run inside a recording: record download() and read the "
                               "host copy after the block")
        return self.device._run([], downloads=[self])[0]

    @property
    def _tensors(self) -> list:
        """The kp buffers of its blocks."""
        return [b.tensor for b in self._blocks]

    @property
    def _mirrored(self) -> bool:
        """True when its host copy (``host``) is a separate host-visible buffer, not its own mapped memory."""
        return self._block.view is None or self.chunked

    def _pieces(self, offset: int, nbytes: int) -> list:
        """(block, byte offset in the block, byte offset from ``offset``, bytes) for each block that the byte
        range [offset, offset + nbytes) touches, in order."""
        if not self.chunked:
            return [(self._block, offset, 0, nbytes)] if nbytes else []
        chunk, out, pos, end = self.device.chunk_bytes, [], offset, offset + nbytes
        while pos < end:
            i, at = divmod(pos, chunk)
            n = min(end - pos, chunk - at)
            out.append((self._blocks[i], at, pos - offset, n))
            pos += n
        return out

    @property
    def host(self) -> np.ndarray:
        """The host copy of the buffer (uint8[nbytes]) that Recording.upload sends and Recording.download
        fills. On unified memory (lavapipe, integrated GPUs) it is the device buffer itself, mapped, unless
        the buffer is chunked. DeviceError when a host copy that large cannot be allocated at once."""
        self.device._sync_buffer(self)            # queued work may still write it
        if self._host is None:
            if not self._mirrored:
                view = self._block.view
            else:
                size = sum(b.size for b in self._blocks)
                if size > self.device.info.max_memory_allocation_size:
                    raise DeviceError(f"a host copy of {size} bytes exceeds {self.device.info.name}'s "
                                      f"maxMemoryAllocationSize ({self.device.info.max_memory_allocation_size} "
                                      f"bytes): use Tensor.numpy() and write() for this tensor")
                mirror = self.device._mgr.buffer(size, transfers.download_memory_flags(self.device.info))
                self._mirror = mirror
                view = mirror.host_view()
            assert view is not None
            self._host = np.asarray(_HostMemory(self, view, self.nbytes))
        return self._host

    def canary_intact(self) -> bool:
        """Test mode: downloads the buffer and checks its guard words (True when there are none)."""
        if not self.canary_words:
            return True
        words = self.device._read_range(self, self.nbytes, 4 * self.canary_words).view(np.uint32)
        return bool((words == CANARY).all())

    def _stage(self, src: np.ndarray) -> None:
        """Keeps ``src`` (flat uint8, not copied: it must not change before the run) to be uploaded by the
        next run that lists this buffer among its uploads."""
        self._pending = src

    def _release(self) -> None:
        """Gives the blocks back to the allocator now (the Buffer must not be used afterwards)."""
        blocks = self.__dict__.pop("_blocks", None)
        if blocks is not None:
            for block in blocks:
                self.device._allocator.free(block)

    __del__ = _release          # a collected Buffer's block goes back (allocator.free is safe from any thread)

    def __repr__(self) -> str:
        held = f" in {len(self._blocks)} blocks" if self.chunked else ""
        return f"<dmlgpu.Buffer {self.nbytes} bytes{held} on {self.device.info.name}>"


def _block_ids(bufs) -> tuple:
    return tuple(id(block) for b in bufs for block in b._blocks)


def _copy_ops(src: Buffer, src_offset: int, dst: Buffer, dst_offset: int, nbytes: int) -> list:
    """The region copies that move ``nbytes`` from ``src`` at ``src_offset`` to ``dst`` at ``dst_offset``,
    split where either buffer's blocks end."""
    ops = []
    for s_block, s_at, pos, n in src._pieces(src_offset, nbytes):
        for d_block, d_at, d_pos, m in dst._pieces(dst_offset + pos, n):
            ops.append(kp.OpCopyRegion(s_block.tensor, d_block.tensor, s_at + d_pos, d_at, m))
    return ops


@dataclass(slots=True)
class Dispatch:
    """One kernel launch: SPIR-V variant name, its buffers in binding order, and the iteration count."""

    kernel: str
    buffers: tuple
    count: int
    barrier: bool = True  # False: may overlap the dispatch before it (independent of it); the barrier
                          # recorded before that one then covers this one's buffers too
    wide: bool = False    # a WIDE or ADDR variant (shaders/addressing.glsl): reaches its operands through the
                          # device addresses listed in its parameters (chunked ones too), so its barrier covers
                          # every block; the others bind each buffer's one block and refuse chunked buffers


_open_devices: "weakref.WeakSet[Device]" = weakref.WeakSet()
_D = TypeVar("_D", bound="Device")


@atexit.register
def _save_pipeline_caches() -> None:
    for dev in list(_open_devices):
        if not dev._closed:
            dev._pipelines.save()


class Device:
    """A Vulkan device opened through Kompute.

    ``index``: as listed by dmlgpu.devices(); default: DMLGPU_DEVICE, else the first discrete GPU, else
    the first device. ``memory_limit``: the most bytes of device memory this Device's allocator holds at once
    (in use and cached), or None for what the driver gives. ``direct_memory``: read and write buffers through
    mapped memory instead of staging copies; default: DMLGPU_DIRECT_MEMORY (0 or 1) if set, else on
    unified-memory devices (DeviceInfo.unified_memory). ``max_queued``: the most eager calls on device
    Tensors that wait in the device's batch before it is submitted; 0 runs each call at once; default:
    DMLGPU_MAX_QUEUED if set, else 64 (see the module's docstring for when a batch is submitted).
    ``chunk_bytes``: the size of the blocks that hold a buffer larger than one block (a power of two of at
    least 256 bytes; buffers larger than it are then held in several blocks: a setting for tests); default: the
    largest power of two that one block may have (``max_block``: the least of maxStorageBufferRange,
    maxMemoryAllocationSize and maxBufferSize).
    One Device may be used from several threads: its submissions are serialised by a lock, and all threads
    share its one batch of queued calls.
    ``features``: the optional Vulkan features enabled on it (DeviceInfo.features: all the device has).
    """

    def __init__(self, index: int | None = None, *, memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None):
        listed = devices()
        if index is None:
            index = default_device_index()
        if not 0 <= index < len(listed):
            raise DeviceError(f"device index {index} must be in [0, {len(listed) - 1}]")
        self.info: DeviceInfo = listed[index]
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
        self.canary_words = int(os.environ.get("DMLGPU_CANARY_WORDS", "0"))  # test mode: see Buffer
        self._lock = threading.RLock()
        self._mgr = open_manager(index)
        # the optional features the device has are enabled (kp patch 0015); kernels use only these
        self.features = frozenset(name for name, on in self._mgr.enabled_features().items() if on)
        if self.features != self.info.features:
            raise DeviceError(f"{self.info.name}: kp enabled the features {sorted(self.features)}, not those the "
                              f"device has ({sorted(self.info.features)}); rebuild kp with 'python tools/build_kp.py "
                              f"--force'")
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
        self._whole_max = self.chunk_bytes if chunk_bytes is not None else self.max_block   # larger: chunked
        self.memory_limit = memory_limit
        self._check_above = min(self._whole_max, self.memory_capacity)  # buffers up to this size fit: unchecked
        self._allocator = Allocator(lambda size: self._mgr.buffer(size, flags), self._forget, self.max_block,
                                    memory_limit, self.direct_memory)
        self._pipelines = Pipelines(self._mgr, self.info)
        self._max_groups = self.info.max_workgroup_count[0]
        self._staging = Staging(self._mgr, self.info)
        self._immediate = self._mgr.sequence()     # re-recorded for each copy or fill (_transfer_now)
        self._replays: dict = {}    # synchronous runs (_submit_run's key) -> the kp Sequence recorded for them
        self._batch_seq = self._mgr.sequence()     # the Sequence the open batch is recorded into when submitted
        self._batch_ops: list = []  # the open batch's kp ops, in order
        self._held: list | None = None             # the ops _batch_seq holds recorded (None: none known)
        self._spare_held: list | None = None       # likewise for _spare_seq
        self._batch = 1             # number of the open batch (Block.batch of the blocks it uses)
        self._queued = 0            # runs in the open batch
        self._batch_scatters = False              # the open batch uses the scatter claim buffer
        self._batch_uploads: tuple[Any, np.ndarray] | None = None  # the batch's upload staging buffer (and its host view), and the bytes used
        self._batch_upload_pos = 0
        self._spare_seq = self._mgr.sequence()     # the previous batch's Sequence: in flight, or idle
        self._spare_uploads = None
        self._inflight = 0          # number of the batch submitted and not waited for (0: none)
        self._inflight_scatters = False
        self._param_buffers: dict = {}
        self._local = threading.local()
        self._submissions = 0
        self._owner: Buffer | None = None
        self._owner_clean = True
        self.claims_serial = 0      # counts the claim buffers made (a call template names the one it used)
        self._closed = False
        self._dummy = Buffer(self, 4)
        self._barrier = kp.OpMemoryBarrier([], *BEFORE_DISPATCH)       # global (kp patch 0017)
        self._host_barrier = kp.OpMemoryBarrier([], *BEFORE_HOST_READ)
        self.templates: dict = {}   # call templates by signature (dmlgpu/calls.py): what repeated calls record
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
        self._open()
        if data is None:
            if nbytes is None:
                raise ValueError("give data or nbytes")
            buf = Buffer(self, max(4, (int(nbytes) + 3) // 4 * 4))
            self._fill(buf, 0, 0, buf.nbytes)
            return buf
        src = as_bytes(data)
        buf = Buffer(self, max(4, (max(src.size, nbytes or 0) + 3) // 4 * 4))
        if buf.nbytes > src.size:
            self._fill(buf, 0, src.size // 4 * 4, buf.nbytes - src.size // 4 * 4)
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
        with self._lock:
            self._open()._flush()

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
        with self._lock:
            stats = self._allocator.memory_stats()
            stats["pipelines"] = self._pipelines.pipeline_count
            stats["algorithms"] = len(self._pipelines)
            return stats

    def empty_cache(self) -> None:
        """Releases the device memory of every cached (free) block; buffers in use keep theirs (example:
        dmlgpu.Device.empty_cache)."""
        with self._lock:
            self._open()._flush()
            self._allocator.empty_cache()

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
        with self._lock:
            if not self._closed:
                self._flush()
                self._pipelines.save()
                self._closed = True
                self._pipelines.clear()
                self._mgr.destroy()

    def __enter__(self: _D) -> _D:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<dmlgpu.Device {self.info.index}: {self.info.name} ({self.info.type})>"

    def record(self, timestamps: bool = False) -> "Recording":
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
        >>> ids.host[:] = [9, 4]; rec.run(); out.host
        array([9., 4.], dtype=float32)
        """
        from .recording import Recording
        return Recording(self._open(), timestamps)

    def warmup(self, kernels_: Iterable[str] | None = None,
               step: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
        """Builds the pipelines of kernel variants on this device and writes its pipeline cache to disk
        (pipelines.py), so that later processes' first calls compile nothing (``python -m dmlgpu warmup``).

        Parameters
        ----------
        kernels_ : iterable of str, optional
            Variant names (kernels.VARIANTS); default: every one.
        step : callable, optional
            Called with each name before it is built (a progress line).

        Returns
        -------
        (list of str, list of str)
            The variants built, and those skipped because the device lacks a feature they need (they never
            run on it).

        Examples
        --------
        >>> import dmlgpu
        >>> built, skipped = dmlgpu.default_device().warmup(["gather_u4_i32", "gather_u4_i64"])
        >>> built, skipped
        (['gather_u4_i32', 'gather_u4_i64'], [])
        """
        self._open()
        built, skipped = [], []
        with self._lock:
            for name in kernels.VARIANTS if kernels_ is None else kernels_:
                if step is not None:
                    step(name)
                if kernels.interface(name)[1] <= self.features:
                    self._pipelines.build(name, self._dummy._block.tensor)
                    built.append(name)
                else:
                    skipped.append(name)
            self._pipelines.save()
        return built, skipped

    # ---- internal: buffers ----
    def _open(self: _D) -> _D:
        if self._closed:
            raise DeviceError(f"device {self.info.index} ({self.info.name}) is closed")
        return self

    @property
    def memory_capacity(self) -> int:
        """The most bytes of buffers this Device can hold at once: its memory_limit, else the device's largest
        device-local memory heap."""
        heap = self.info.device_memory
        return heap if self.memory_limit is None else min(heap, self.memory_limit)

    def _check_sizes(self, *nbytes: int) -> None:
        """DeviceError, before any GPU work, if buffers of these sizes (one operation's) cannot be held by the
        device together."""
        total, capacity = sum(nbytes), self.memory_capacity
        if total > capacity:
            what = f"a tensor of {total} bytes exceeds" if len(nbytes) == 1 else \
                f"tensors of {' + '.join(map(str, nbytes))} = {total} bytes exceed"
            raise DeviceError(f"{what} this device's memory ({capacity} bytes, {self.info.name}"
                              f"{', its memory_limit' if capacity == self.memory_limit else ''}); "
                              f"split the operation into smaller ones")


    def _take(self, nbytes: int) -> Buffer:
        """A buffer of at least ``nbytes`` whose contents are undefined."""
        if self._closed:
            self._open()
        return Buffer(self, max(4, (nbytes + 3) & ~3))

    def _give(self, *bufs: Buffer) -> None:
        """Returns _take()n buffers to the allocator now (those a recording uses stay until it goes)."""
        for buf in bufs:
            if not buf.pinned:
                buf._release()

    def _params(self, words: np.ndarray) -> tuple[Buffer, bool]:
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
            buf._stage(np.frombuffer(key, dtype=np.uint8))
        self._param_buffers[key] = buf            # most recently used last
        return buf, fresh

    def _block_table(self, slots, base: int) -> np.ndarray:
        """The block lists of the WIDE kernel variants (shaders/index_map.glsl's P_BLOCKS) for the buffers in
        ``slots`` (None: absent), to be placed at word ``base`` of their parameter words: per slot, the log2 of
        its block size in bytes (63: one block) and the word where its blocks' addresses start; then the
        addresses (uint64)."""
        head: list[int] = []
        addresses: list[int] = []
        start = base + 2 * len(slots)
        for buf in slots:
            blocks = buf._blocks if buf is not None else []
            head += [self.chunk_bytes.bit_length() - 1 if len(blocks) > 1 else 63, start + len(addresses)]
            addresses += [b.address for b in blocks] or [0]
        return np.array(head + addresses, dtype=np.uint64)

    def _owner_scratch(self, words: int, beside: tuple = ()) -> Buffer:
        """The scatter claim buffer, all zeros, at least ``words`` long (scatter_write.comp re-zeroes it):
        one 32-bit word per unit of the output, so a scatter of 1-byte elements needs 4 bytes of it per
        element (chunked past the largest block). DeviceError, before any GPU work, if the device cannot hold
        it beside the operation's tensors ``beside`` (bytes)."""
        if self._owner is None or self._owner.nbytes < 4 * words or not self._owner_clean:
            self._check_sizes(*beside, 4 * words)
            size = max(words, 1024, 0 if self._owner is None else self._owner.nbytes // 4)
            size = 1 << (size - 1).bit_length()        # powers of two up to one block, then what is asked
            if 4 * size > self._whole_max:
                size = words
            self._owner = None
            self._owner = Buffer(self, 4 * size)
            self.claims_serial += 1
            self._fill(self._owner, 0, 0, self._owner.nbytes)
            self._owner_clean = True
        return self._owner

    def _forget(self, block: Block) -> None:
        """Called before a cached block is destroyed: nothing may refer to it afterwards."""
        self._sync_block(block)
        self._pipelines.forget(block)
        self._held = self._spare_held = None        # batches that bound it are never submitted again
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
    def _write(self, buf: Buffer, offset: int, src: np.ndarray) -> None:
        """Uploads ``src`` (flat uint8) into ``buf`` at byte ``offset``, now."""
        with self._lock:
            self._open()._sync_buffer(buf)
            for block, at, pos, n in buf._pieces(offset, src.size):
                if block.view is not None:
                    transfers.host_copy(block.view[at:at + n], src[pos:pos + n])
                else:
                    self._staging.write(block.tensor, at, src[pos:pos + n])

    def _read_range(self, buf: Buffer, offset: int, nbytes: int) -> np.ndarray:
        """A new uint8 array with ``nbytes`` bytes of ``buf`` from byte ``offset`` (guard words included)."""
        with self._lock:
            self._open()._sync_buffer(buf)
            out = np.empty(nbytes, dtype=np.uint8)
            for block, at, pos, n in buf._pieces(offset, nbytes):
                if block.view is not None:
                    transfers.host_copy(out[pos:pos + n], block.view[at:at + n])
                else:
                    self._staging.read(block.tensor, at, out[pos:pos + n])
            return out

    def _copy(self, src: Buffer, dst: Buffer, nbytes: int) -> None:
        """Copies the first ``nbytes`` of ``src`` into ``dst`` on the device, now (no host round trip)."""
        if nbytes > 0:
            self._transfer_now([src, dst], dst, _copy_ops(src, 0, dst, 0, nbytes))

    def _fill(self, buf: Buffer, word: int, offset: int, nbytes: int) -> None:
        """Fills ``nbytes`` of ``buf`` from byte ``offset`` (both multiples of 4) with a 32-bit word, now."""
        if nbytes > 0:
            self._transfer_now([buf], buf, [kp.OpFill(block.tensor, at, n, word)
                                            for block, at, _, n in buf._pieces(offset, nbytes)])

    def _transfer_now(self, touched: list, written: Buffer, ops: list) -> None:
        """Submits transfer ops on device buffers and waits: after a barrier on the buffers they touch, and
        followed, on unified memory, by the barrier that lets the host read what they wrote."""
        with self._lock:
            self._open()
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
    def _recording(self):
        return getattr(self._local, "recording", None)

    def _run(self, dispatches, uploads=(), downloads=(), queue: bool = False) -> list:
        """Uploads the buffers' staged bytes, runs the dispatches in order (a barrier before each),
        downloads; waits. Returns the downloaded bytes: a new uint8 array of each buffer's nbytes.
        Inside a recording of this thread the steps are appended to it instead (returns []). ``queue``
        (without downloads): appended to the device's batch instead, unless max_queued is 0 (returns [])."""
        rec = self._recording()
        if rec is not None:
            rec._append(dispatches, uploads, downloads)
            return []
        with self._lock:
            self._open()
            if queue and self.max_queued and not downloads:
                self._enqueue(dispatches, uploads)
                return []
            self._flush()
            pending = [b for b in uploads if b._pending is not None]
            up_sizes = [b._pending.size for b in pending]
            down_sizes = [b.nbytes for b in downloads]
            fused = self.direct_memory or (sum(up_sizes) <= _FUSE_MAX and sum(down_sizes) <= _FUSE_MAX)
            up_slot = down_slot = None
            if self.direct_memory or not fused:   # mapped, or large: through staging in submissions of their own
                for b in pending:
                    self._write(b, 0, b._pending)
            else:
                if pending:
                    up_pos = _packed(up_sizes)
                    up_slot = self._staging.slot("up", 0, up_pos[-1])
                    view = up_slot.view
                    for b, pos, n in zip(pending, up_pos, up_sizes):
                        transfers.host_copy(view[pos:pos + n], b._pending)
                if downloads:
                    down_pos = _packed(down_sizes)
                    down_slot = self._staging.slot("down", 0, down_pos[-1])
            for b in pending:
                b._pending = None
            if dispatches or up_slot or down_slot:
                self._submit_run(dispatches, pending, up_sizes, up_slot, downloads, down_sizes, down_slot)
            if down_slot is not None:
                view = down_slot.view
                return [view[pos:pos + n].copy() for pos, n in zip(down_pos, down_sizes)]
            return [self._read_range(b, 0, b.nbytes) for b in downloads]

    def _submit_run(self, dispatches, uploads, up_sizes, up_slot, downloads, down_sizes, down_slot) -> None:
        """Submits a synchronous run and waits: uploads from ``up_slot`` (if any), the dispatches, downloads
        into ``down_slot`` (if any). A run whose command buffer would be the same as one of the last
        _REPLAYS (same kernels, counts, blocks, staging buffers and sizes) submits that one again."""
        parts: list[Any] = []
        for d in dispatches:
            parts += (d.kernel, d.count, d.barrier, *_block_ids(d.buffers))
        if up_slot is not None:
            parts += ("up", up_slot.serial, *_block_ids(uploads), *up_sizes)
        if down_slot is not None:
            parts += ("down", down_slot.serial, *_block_ids(downloads), *down_sizes)
        key = tuple(parts)
        seq = self._replays.pop(key, None)
        if seq is None:
            seq = self._replay_sequence()
            ops = self._staged_copies(uploads, up_sizes, up_slot, True) + self._dispatch_ops(dispatches)
            if self.direct_memory:
                ops += self._host_read_ops(dispatches)
            ops += self._staged_copies(downloads, down_sizes, down_slot, False)
            for op in ops:
                seq.record(op)
        self._replays[key] = seq                 # most recently used last
        self._submit(seq, self._uses_owner(dispatches))

    @staticmethod
    def _staged_copies(bufs, sizes, slot, upload: bool) -> list:
        """The ops that copy ``sizes`` bytes of each buffer from the upload staging buffer (``upload``) or
        into the download one, at the offsets _packed() gives, with their barriers; [] without a slot."""
        if slot is None:
            return []
        ops = [kp.OpMemoryBarrier([t for b in bufs for t in b._tensors], *BEFORE_COPY)]
        for b, pos, n in zip(bufs, _packed(sizes), sizes):
            for block, at, off, m in b._pieces(0, n):
                ops.append(kp.OpCopyRegion(slot.tensor, block.tensor, pos + off, at, m) if upload else
                           kp.OpCopyRegion(block.tensor, slot.tensor, at, pos + off, m))
        if not upload:
            ops.append(kp.OpMemoryBarrier([slot.tensor], *BEFORE_HOST_READ))
        return ops

    # ---- internal: the batch of queued runs ----
    def _queue(self, dispatches, uploads=()) -> None:
        """``_run(dispatches, uploads, queue=True)`` for a caller that knows that no recording of this thread
        is open (the common eager call: one check fewer)."""
        with self._lock:
            if self._closed:
                self._open()
            if self.max_queued:
                self._enqueue(dispatches, uploads)
            else:
                self._run(dispatches, uploads)

    def _enqueue(self, dispatches, uploads) -> None:
        """Records a run into the open batch (its uploads first), and submits the batch once it holds
        max_queued runs. Host data of up to a quarter of _QUEUE_UPLOADS per buffer goes through the batch's
        upload buffer (copied there now, into its device buffer by the batch: a block that the batch still
        uses may be reused); larger data is written now (mapped, or by a staging transfer), after the batch
        if the block is one it uses."""
        batch = self._batch
        for b in uploads:
            if b._pending is None:
                continue
            src, n = b._pending, b._pending.size
            if n > _QUEUE_UPLOADS // 4 or b.chunked:
                self._write(b, 0, src)         # after the batch if it uses the buffer
            else:
                if self._batch_upload_pos + n > _QUEUE_UPLOADS:
                    self._flush(wait=False)
                    batch = self._batch
                if self._batch_uploads is None:
                    staging = self._mgr.buffer(_QUEUE_UPLOADS, HOST_VISIBLE | HOST_COHERENT)
                    self._batch_uploads = (staging, staging.host_view())
                staging, view = self._batch_uploads
                pos = self._batch_upload_pos
                transfers.host_copy(view[pos:pos + n], src)
                self._batch_ops += (kp.OpMemoryBarrier([b._tensor], *BEFORE_COPY),
                                    kp.OpCopyRegion(staging, b._tensor, pos, 0, n))
                self._batch_upload_pos = pos + -(-n // 16) * 16
                b._block.batch = batch
            b._pending = None
        self._batch_ops += self._dispatch_ops(dispatches)
        owner = self._owner
        for d in dispatches:
            for b in d.buffers:
                for block in b._blocks:
                    block.batch = batch
                if b is owner:
                    self._batch_scatters = True
        self._queued += 1
        if self._queued >= self.max_queued:
            self._flush(wait=False)       # recording the next batch overlaps the GPU's work on this one

    def queue_steps(self, steps, buffers: list, scatters: bool) -> None:
        """Records a call template's launches into the open batch (the caller holds the device's lock, and
        has checked that no recording of this thread is open and that max_queued is not 0): ``steps`` are
        (kernel, workgroups, barrier, slots), each slot an index into ``buffers`` or a Buffer; every buffer
        is held in one block. ``scatters``: the launches use the scatter claim buffer."""
        batch, algorithm, barrier = self._batch, self._pipelines.algorithm, self._barrier
        ops = self._batch_ops
        for kernel, groups, before, slots in steps:
            blocks = tuple([(buffers[s] if s.__class__ is int else s)._block for s in slots])
            if before:
                ops.append(barrier)
            ops.append(algorithm(kernel, groups, blocks).dispatch)
            for block in blocks:
                block.batch = batch
        if scatters:
            self._batch_scatters = True
        self._queued += 1
        if self._queued >= self.max_queued:
            self._flush(wait=False)

    def _sync_buffer(self, buf: Buffer) -> None:
        """_sync_block for each of the buffer's blocks."""
        for block in buf._blocks:
            self._sync_block(block)

    def _sync_block(self, block: Block) -> None:
        """Before ``block`` is reached outside the batches: submits the open batch and waits for it if it
        uses the block, or waits for the batch in flight if that one does."""
        if block.batch == self._batch:
            if self._queued:
                self._flush()
        elif block.batch == self._inflight:
            self._await_inflight()

    def _flush(self, wait: bool = True) -> None:
        """Submits the open batch (if any run is queued), after waiting for the one in flight (at most one
        is), and opens a new batch in the other Sequence. ``wait``: then waits for it too (every queued run
        has finished when this returns); else it stays in flight while the next batch is recorded."""
        if self._queued:
            self._await_inflight()
            seq, ops, scatters = self._batch_seq, self._batch_ops, self._batch_scatters
            if self.direct_memory:
                ops.append(self._host_barrier)
            try:
                if ops != self._held:           # (kp ops compare by identity)
                    self._held = None
                    seq.clear()
                    seq.record_ops(ops)
                    self._held = ops
                seq.eval_async()
                self._inflight, self._inflight_scatters = self._batch, scatters
            except BaseException:
                seq.clear()
                self._held = None
                if scatters:
                    self._owner_clean = False   # claims may be left set: the next scatter re-zeroes them
                raise
            finally:
                self._batch_seq, self._spare_seq = self._spare_seq, seq
                self._held, self._spare_held = self._spare_held, self._held
                self._batch_ops = []
                self._batch_uploads, self._spare_uploads = self._spare_uploads, self._batch_uploads
                self._batch_scatters = False
                self._batch_upload_pos = 0
                self._queued = 0
                self._batch += 1
                self._count_submission()
        if wait:
            self._await_inflight()

    def _await_inflight(self) -> None:
        """Waits for the batch in flight, if any (its Sequence keeps what it holds, to be submitted again if
        the next batch it takes is the same)."""
        if self._inflight:
            try:
                self._spare_seq.eval_await()
            except BaseException:
                self._spare_held = None
                if self._inflight_scatters:
                    self._owner_clean = False
                raise
            finally:
                self._inflight = 0

    def _dispatch_ops(self, dispatches) -> list:
        """The kp ops of dispatches in order: the global barrier before each one that has ``barrier``."""
        ops = []
        for d in dispatches:
            if d.barrier:
                ops.append(self._barrier)
            ops.append(self._algorithm(d).dispatch)
        return ops

    def _host_read_ops(self, dispatches) -> list:
        """Unified memory: the barrier that makes what the dispatches wrote visible to host reads (so that
        reading a mapped buffer afterwards needs no submission of its own)."""
        return [self._host_barrier] if dispatches else []

    def _uses_owner(self, dispatches) -> bool:
        return self._owner is not None and any(b is self._owner for d in dispatches for b in d.buffers)

    def workgroups(self, count: int) -> int:
        """The workgroups that a dispatch of ``count`` iterations launches on this device."""
        return kernels.workgroups(count, self._max_groups)

    def _algorithm(self, d: Dispatch):
        """The Kompute algorithm (shared pipeline, descriptor set of these buffers) for the dispatch, with
        its ops (pipelines.Bound)."""
        groups = kernels.workgroups(d.count, self._max_groups)
        if not d.wide:
            for b in d.buffers:
                if b.chunked:
                    raise DeviceError(f"kernel {d.kernel} binds single blocks: it cannot address a buffer held in "
                                      f"several (a large-tensor variant must be chosen for it)")
        return self._pipelines.algorithm(d.kernel, groups, tuple(b._block for b in d.buffers))

    def _submit(self, seq, scatters: bool) -> None:
        """Submits a recorded Sequence and waits. A run with scatters that fails may leave claims set in the
        claim scratch: it is then marked unclean, so the next scatter re-zeroes it."""
        try:
            seq.eval()
        except BaseException:
            if scatters:
                self._owner_clean = False
            raise
        self._count_submission()

    def _count_submission(self) -> None:
        self._submissions += 1
        if self._submissions % 256 == 0:
            self._mgr.clear()   # let Kompute forget expired objects: host memory stays flat
