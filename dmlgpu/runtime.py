"""The runtime on Kompute: devices, buffers, and recording and running kernel dispatches.

Ordering: Kompute's OpAlgoDispatch records only a transfer-to-compute barrier, so dmlgpu records its own
before every dispatch (``_BARRIER``): all earlier transfer and compute writes to the dispatch's buffers
are made available and visible to its reads and writes, and all earlier reads of them finish first.
Two dependent dispatches in one submission are therefore ordered (RAW, WAW and WAR alike). A dispatch
marked ``barrier=False`` (a scatter's copy, independent of the claim pass before it) shares the barrier
of the dispatch before it, which then covers its buffers too, so the two may overlap. An upload
recorded after dispatches waits for them to finish with its buffers (``_BEFORE_UPLOAD``); a download is
preceded by Kompute's own compute-to-transfer barrier.
"""
from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from . import kernels
from .errors import DeviceError

try:
    import kp
except ImportError as exc:  # importing dmlgpu works without kp; opening a device says what is missing
    kp = None
    _KP_IMPORT_ERROR = exc
else:
    _KP_IMPORT_ERROR = None

KP_PATCH_LEVEL = 4

# Vulkan flag bits
_TRANSFER_WRITE, _SHADER_READ, _SHADER_WRITE = 0x1000, 0x20, 0x40
_STAGE_COMPUTE, _STAGE_TRANSFER = 0x800, 0x1000
_BARRIER = (_SHADER_WRITE | _TRANSFER_WRITE, _SHADER_READ | _SHADER_WRITE, _STAGE_COMPUTE | _STAGE_TRANSFER,
            _STAGE_COMPUTE)
_BEFORE_UPLOAD = (_SHADER_WRITE, _TRANSFER_WRITE, _STAGE_COMPUTE, _STAGE_TRANSFER)

CANARY = 0x5EEDCAFE  # pattern of the guard words (test mode)
_ALGORITHM_CACHE = 256  # reusable algorithms kept per device (oldest dropped first)
_PARAMS_CACHE = 256     # parameter buffers kept per device
_POOL_MAX_BYTES = 1 << 20  # scratch buffers up to this size are pooled ...
_POOL_DEPTH = 8            # ... this many of each size

DEVICE_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}

INSTALL_HINT = ("install a Vulkan driver (on Debian/Ubuntu without a GPU: 'apt-get install mesa-vulkan-drivers' "
                "for lavapipe) and run the README's set-up command")


def _require_kp():
    if kp is None:
        raise DeviceError(f"the Kompute module 'kp' is not importable ({_KP_IMPORT_ERROR}); "
                          "build it with 'python tools/build_kp.py'")
    if getattr(kp, "__dmlgpu_patch__", 0) < KP_PATCH_LEVEL:
        raise DeviceError("the installed 'kp' lacks dmlgpu's patches (compute barriers, device limits); "
                          "rebuild it with 'python tools/build_kp.py --force'")


@dataclass(frozen=True)
class DeviceInfo:
    """A Vulkan device as dmlgpu.devices() lists it; limits in bytes or counts."""

    index: int
    name: str
    type: str
    max_storage_buffer_range: int
    max_push_constants_size: int
    max_workgroup_count: tuple
    max_workgroup_size: tuple
    max_workgroup_invocations: int
    timestamp_period_ns: float

    @classmethod
    def from_kp(cls, index: int, p: dict) -> "DeviceInfo":
        return cls(index, p["device_name"], DEVICE_TYPES.get(p["device_type"], "other"),
                   p["max_storage_buffer_range"], p["max_push_constants_size"], tuple(p["max_work_group_count"]),
                   tuple(p["max_work_group_size"]), p["max_work_group_invocations"], p["timestamp_period"])


def as_bytes(data) -> np.ndarray:
    """The raw bytes of an array or bytes-like object, as a flat uint8 array (a view where possible)."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)


def _vulkan_device_count() -> int:
    """Physical devices the Vulkan loader finds, asked through ctypes: Kompute aborts the process when
    there are none, so dmlgpu looks first. DeviceError when the loader or a driver is missing."""
    import ctypes

    class InstanceCreateInfo(ctypes.Structure):
        _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                    ("pApplicationInfo", ctypes.c_void_p), ("enabledLayerCount", ctypes.c_uint32),
                    ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", ctypes.c_uint32),
                    ("ppEnabledExtensionNames", ctypes.c_void_p)]

    try:
        vk = ctypes.CDLL("libvulkan.so.1")
    except OSError:
        raise DeviceError(f"the Vulkan loader (libvulkan.so.1) is not installed; {INSTALL_HINT}") from None
    instance = ctypes.c_void_p()
    info = InstanceCreateInfo(sType=1)   # VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
    result = vk.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance))
    if result != 0:
        raise DeviceError(f"no Vulkan instance could be created (VkResult {result}): no usable driver; "
                          f"{INSTALL_HINT}")
    count = ctypes.c_uint32(0)
    result = vk.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
    vk.vkDestroyInstance(instance, None)
    if result != 0 or count.value == 0:
        raise DeviceError(f"Vulkan finds no device (VkResult {result}); {INSTALL_HINT}")
    return count.value


_devices_cache: list | None = None
_devices_lock = threading.Lock()


def devices() -> list[DeviceInfo]:
    """The Vulkan devices, with the limits that matter to dmlgpu. DeviceError if there are none."""
    global _devices_cache
    _require_kp()
    with _devices_lock:
        if _devices_cache is None:
            from . import validation
            if validation.requested():
                validation.enable()
            _vulkan_device_count()
            try:
                mgr = kp.Manager()
                listed = mgr.list_devices()
                mgr.destroy()
            except Exception as exc:
                raise DeviceError(f"no Vulkan device could be opened ({exc}); {INSTALL_HINT}") from None
            _devices_cache = [DeviceInfo.from_kp(i, p) for i, p in enumerate(listed)]
        return list(_devices_cache)


def default_device_index() -> int:
    """DMLGPU_DEVICE if set, else the first discrete GPU, else the first device."""
    listed = devices()
    env = os.environ.get("DMLGPU_DEVICE")
    if env not in (None, ""):
        try:
            index = int(env)
        except ValueError:
            raise DeviceError(f"DMLGPU_DEVICE ({env!r}) must be a device index, 0 to {len(listed) - 1}") from None
        if not 0 <= index < len(listed):
            raise DeviceError(f"DMLGPU_DEVICE ({index}) must be a device index, 0 to {len(listed) - 1}")
        return index
    for info in listed:
        if info.type == "discrete GPU":
            return info.index
    return 0


class Buffer:
    """A device buffer of raw bytes; its size is a multiple of 4. Made by Device.buffer().

    Test mode: with ``Device.canary_words`` > 0, every new buffer has that many extra guard words after
    its ``nbytes``, holding CANARY; ``canary_intact()`` downloads and checks them. Kernels see the guard
    words as part of the buffer, so a write past a tensor's end changes them and a read past it returns
    them (and shows up in results).
    """

    def __init__(self, device: "Device", nbytes: int, storage: bool = False):
        if nbytes <= 0 or nbytes % 4:
            raise ValueError(f"a buffer's size ({nbytes} bytes) must be a positive multiple of 4")
        limit = device.info.max_storage_buffer_range
        if nbytes > limit:
            raise DeviceError(f"a buffer of {nbytes} bytes exceeds this device's maxStorageBufferRange "
                              f"({limit} bytes, {device.info.name})")
        self.device = device
        self.nbytes = nbytes
        self.canary_words = 0 if storage else device.canary_words
        kind = kp.TensorTypes.storage if storage else kp.TensorTypes.device
        words = np.zeros(nbytes // 4 + self.canary_words, dtype=np.uint32)
        words[nbytes // 4:] = CANARY
        self._tensor = device._mgr.tensor_t(words, kind)
        self._storage = storage
        self.pooled = False   # made by Device._take, goes back to its pool ...
        self.pinned = False   # ... unless a recording uses it

    def write(self, data) -> None:
        """Uploads raw bytes (any array or bytes-like object of at most nbytes bytes) at offset 0."""
        src = as_bytes(data)
        if src.size > self.nbytes:
            raise ValueError(f"{src.size} bytes do not fit a buffer of {self.nbytes} bytes")
        self._stage(src)
        self.device._run([], uploads=[self])

    def read(self) -> np.ndarray:
        """Downloads the buffer: a new uint8 array of nbytes bytes."""
        if self.device._recording() is not None:
            raise RuntimeError("read() cannot run inside a recording: record download() and read the "
                               "host copy after the block")
        self.device._run([], downloads=[self])
        return self._staged().copy()

    def canary_intact(self) -> bool:
        """Test mode: downloads the buffer and checks its guard words (True when there are none)."""
        if not self.canary_words:
            return True
        self.device._run([], downloads=[self])
        return bool((self._tensor.data()[self.nbytes // 4:] == CANARY).all())

    def _stage(self, src: np.ndarray) -> None:
        """Copies bytes into the host-side staging memory (uploaded by the next run that lists this buffer)."""
        staged = self._staged()
        staged[: src.size] = src
        staged[src.size:] = 0

    def _staged(self) -> np.ndarray:
        """The host-side copy of the buffer's nbytes (guard words excluded), as uint8."""
        if self._storage:
            raise DeviceError("a storage buffer has no host copy")
        return self._tensor.data().view(np.uint8)[: self.nbytes]

    def __repr__(self) -> str:
        return f"<dmlgpu.Buffer {self.nbytes} bytes on {self.device.info.name}>"


@dataclass
class Dispatch:
    """One kernel launch: SPIR-V variant name, its buffers in binding order, and the iteration count."""

    kernel: str
    buffers: tuple
    count: int
    barrier: bool = True  # False: may overlap the dispatch before it (independent of it); the barrier
                          # recorded before that one then covers this one's buffers too


class Device:
    """A Vulkan device opened through Kompute.

    ``index``: as listed by dmlgpu.devices(); default: DMLGPU_DEVICE, else the first discrete GPU, else
    the first device. ``feature_level``: the DirectML feature level layer-1 validation follows.
    One Device may be used from several threads: its submissions are serialised by a lock.
    """

    def __init__(self, index: int | None = None, *, feature_level="4.1"):
        from .dtypes import FeatureLevel
        listed = devices()
        if index is None:
            index = default_device_index()
        if not 0 <= index < len(listed):
            raise DeviceError(f"device index {index} must be in [0, {len(listed) - 1}]")
        self.info = listed[index]
        self.feature_level = FeatureLevel.parse(feature_level)
        self.canary_words = int(os.environ.get("DMLGPU_CANARY_WORDS", "0"))  # test mode: see Buffer
        self._lock = threading.RLock()
        try:
            self._mgr = kp.Manager(index)
        except Exception as exc:
            raise DeviceError(f"Vulkan device {index} could not be opened ({exc}); {INSTALL_HINT}") from None
        self._immediate = self._mgr.sequence()
        self._algorithms: dict = {}
        self._param_buffers: dict = {}
        self._pool: dict = {}
        self._local = threading.local()
        self._submissions = 0
        self._owner: Buffer | None = None
        self._owner_clean = True
        self._dummy = Buffer(self, 4)
        self._closed = False

    # ---- public ----
    def buffer(self, data=None, nbytes: int | None = None) -> Buffer:
        """A new device buffer: of ``nbytes`` zero bytes, or holding ``data``'s bytes (padded to 4)."""
        if data is None:
            if nbytes is None:
                raise ValueError("give data or nbytes")
            buf = Buffer(self._open(), (int(nbytes) + 3) // 4 * 4)
            self._run([], uploads=[buf])     # device memory starts undefined: send the zeros
            return buf
        src = as_bytes(data)
        buf = Buffer(self._open(), max(4, (max(src.size, nbytes or 0) + 3) // 4 * 4))
        buf.write(src)
        return buf

    def compile(self, desc):
        """Validates an operator descriptor at this device's feature level; returns a CompiledOperator."""
        from .operators import CompiledOperator
        return CompiledOperator(self._open(), desc)

    def close(self) -> None:
        """Releases the device; using it afterwards raises DeviceError."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._algorithms.clear()
                self._mgr.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return f"<dmlgpu.Device {self.info.index}: {self.info.name} ({self.info.type}), feature level {self.feature_level}>"

    # ---- internal ----
    def _open(self) -> "Device":
        if self._closed:
            raise DeviceError(f"device {self.info.index} ({self.info.name}) is closed")
        return self

    def _params(self, words: np.ndarray) -> tuple[Buffer, bool]:
        """(a buffer holding these kernel parameter words, True if it is new and must be uploaded).
        Buffers are shared by equal words, so repeated operations reuse their cached algorithms."""
        key = words.tobytes()
        buf = self._param_buffers.pop(key, None)
        fresh = buf is None
        if fresh:
            if len(self._param_buffers) >= _PARAMS_CACHE:
                self._param_buffers.pop(next(iter(self._param_buffers)))
            buf = Buffer(self, words.nbytes)
            buf._stage(words.view(np.uint8))
        self._param_buffers[key] = buf            # most recently used last
        return buf, fresh

    def _take(self, nbytes: int) -> Buffer:
        """A buffer of at least ``nbytes`` whose contents are undefined (test mode: its guard words are
        uploaded). Small ones come from a pool of power-of-two sizes and go back with _give(), so that
        repeated small operations reuse buffers and their cached algorithms."""
        pooled = nbytes <= _POOL_MAX_BYTES
        size = max(256, 1 << (nbytes - 1).bit_length()) if pooled else max(4, (nbytes + 3) // 4 * 4)
        free = self._pool.setdefault(size, []) if pooled else []
        if free:
            return free.pop()
        buf = Buffer(self._open(), size)
        buf.pooled = pooled
        if buf.canary_words:
            self._run([], uploads=[buf])
        return buf

    def _give(self, *bufs: Buffer) -> None:
        """Returns _take()n buffers (not those a recording uses); give them back in the reverse order of
        taking."""
        for buf in bufs:
            if buf.pooled and not buf.pinned:
                free = self._pool[buf.nbytes]
                if len(free) < _POOL_DEPTH and buf not in free:
                    free.append(buf)

    def _owner_scratch(self, words: int) -> Buffer:
        """The scatter claim buffer, all zeros, at least ``words`` long (scatter_write.comp re-zeroes it):
        one 32-bit word per unit of the output, so a scatter of 1-byte elements needs 4 bytes of it per
        element. DeviceError, before any GPU work, if that exceeds maxStorageBufferRange."""
        limit = self.info.max_storage_buffer_range
        if 4 * words > limit:
            raise DeviceError(f"this scatter needs {4 * words} bytes of claim scratch (4 bytes per unit of its "
                              f"output, {words} units), more than this device's maxStorageBufferRange ({limit} "
                              f"bytes, {self.info.name}); split the output into smaller tensors")
        if self._owner is None or self._owner.nbytes < 4 * words or not self._owner_clean:
            size = max(words, 1024, 0 if self._owner is None else self._owner.nbytes // 4)
            size = 1 << (size - 1).bit_length()
            size = min(size, self.info.max_storage_buffer_range // 4)
            self._owner = Buffer(self, 4 * max(size, words), storage=True)
            count = self._owner.nbytes // 4
            params, fresh = self._params(np.array([count], dtype=np.uint32))
            self._owner_clean = True
            self._run([Dispatch("fill", (params, self._owner), count)], uploads=[params] if fresh else [])
        return self._owner

    def _algorithm(self, d: Dispatch):
        """A Kompute algorithm (pipeline and bound buffers) for the dispatch, cached until one of its
        buffers is collected, so that a repeated operation creates no pipeline."""
        groups = kernels.workgroups(d.count, self.info.max_workgroup_count[0])
        key = (d.kernel, groups) + tuple(id(b) for b in d.buffers)
        algo = self._algorithms.get(key)
        if algo is not None:
            return algo
        algo = self._mgr.algorithm([b._tensor for b in d.buffers], kernels.spirv(d.kernel), (groups, 1, 1), [], [])
        if len(self._algorithms) >= _ALGORITHM_CACHE:
            self._algorithms.pop(next(iter(self._algorithms)))
        self._algorithms[key] = algo
        for b in d.buffers:    # the key names buffers by id: forget it when one of them goes
            weakref.finalize(b, self._algorithms.pop, key, None)
        return algo

    def record(self, timestamps: bool = False) -> "Recording":
        """A recording: ``with dev.record() as rec:`` captures the operations run on this device by this
        thread into one submission, submitted once when the block ends; ``rec.run()`` submits it again.
        ``timestamps=True``: the GPU writes a timestamp after each recorded step (Recording.timestamps)."""
        return Recording(self._open(), timestamps)

    def _recording(self) -> "Recording | None":
        return getattr(self._local, "recording", None)

    def _check_sizes(self, *nbytes: int) -> None:
        """DeviceError, before any GPU work, if a buffer of one of these sizes would exceed the device."""
        limit = self.info.max_storage_buffer_range
        for n in nbytes:
            if n > limit:
                raise DeviceError(f"a tensor of {n} bytes exceeds this device's maxStorageBufferRange ({limit} "
                                  f"bytes, {self.info.name}); split the operation into smaller ones")

    def _run(self, dispatches, uploads=(), downloads=()) -> None:
        """Uploads staged bytes, runs the dispatches in order (a barrier before each), downloads; waits.
        Inside a recording of this thread the steps are appended to it instead."""
        steps = [("upload", tuple(uploads))] if uploads else []
        steps += [("dispatch", d) for d in dispatches]
        if downloads:
            steps.append(("download", tuple(downloads)))
        rec = self._recording()
        if rec is not None:
            rec._steps.extend(steps)
            return
        with self._lock:
            self._open()
            seq = self._immediate                # one Sequence, re-recorded for every immediate run
            seq.clear()
            holds = self._record_steps(seq, steps)
            self._submit(seq, holds)

    def _record_steps(self, seq, steps) -> list:
        """Records steps into a kp Sequence; returns what must stay alive while it may run."""
        holds = []
        for n, (kind, what) in enumerate(steps):
            if kind == "dispatch":
                if what.barrier:    # covering the dispatches that may overlap this one, too
                    group = [what.buffers]
                    for later_kind, later in steps[n + 1:]:
                        if later_kind != "dispatch" or later.barrier:
                            break
                        group.append(later.buffers)
                    tensors = list({id(b): b._tensor for bufs in group for b in bufs}.values())
                    seq.record(kp.OpMemoryBarrier(tensors, *_BARRIER))
                algo = self._algorithm(what)
                seq.record(kp.OpAlgoDispatch(algo))
                holds.append((algo, what))
            else:
                tensors = [b._tensor for b in what]
                if kind == "upload":   # earlier dispatches in this submission finish with these buffers first
                    seq.record(kp.OpMemoryBarrier(tensors, *_BEFORE_UPLOAD))
                    seq.record(kp.OpTensorSyncDevice(tensors))
                else:
                    seq.record(kp.OpTensorSyncLocal(tensors))
                holds.append(what)
        return holds

    def _submit(self, seq, holds) -> None:
        """Submits a recorded Sequence and waits. While scatters run, the claim scratch is marked unclean,
        so an interrupted run makes the next scatter re-zero it."""
        scatters = any(isinstance(h[-1], Dispatch) and h[-1].kernel.startswith("scatter") for h in holds)
        if scatters:
            self._owner_clean = False
        seq.eval()
        if scatters:
            self._owner_clean = True
        self._submissions += 1
        if self._submissions % 256 == 0:
            self._mgr.clear()   # let Kompute forget expired objects: host memory stays flat


class Recording:
    """Operations recorded into one Vulkan submission (see Device.record). Layer-2 functions called in the
    block return dmlgpu.Tensors whose contents are valid once the block has ended (and after each run()).
    ``upload(*tensors)`` re-sends the tensors' host copies (Tensor.host) at that point of each run;
    ``download(*tensors)`` refreshes their host copies. mode="raise" cannot be recorded."""

    def __init__(self, device: Device, timestamps: bool = False):
        self.device = device
        self._timestamps = timestamps
        self._steps: list = []
        self._seq = None
        self._holds: list = []

    def __enter__(self) -> "Recording":
        if self.device._recording() is not None:
            raise RuntimeError("this thread is already recording on this device")
        if self._seq is not None:
            raise RuntimeError("this recording is finished: run() submits it again")
        self.device._local.recording = self
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.device._local.recording = None
        if exc_type is None:
            for kind, what in self._steps:     # these buffers stay out of the pools while it lives
                for buf in what.buffers if kind == "dispatch" else what:
                    buf.pinned = True
            with self.device._lock:
                # Kompute writes a timestamp before the first and after every recorded Vulkan operation
                ops = sum(1 if kind == "download" or kind == "dispatch" and not what.barrier else 2
                          for kind, what in self._steps)
                self._seq = self.device._mgr.sequence(0, ops + 1 if self._timestamps else 0)
                self._holds = self.device._record_steps(self._seq, self._steps)
            self.run()

    def upload(self, *tensors) -> None:
        self._steps.append(("upload", tuple(_buffer_of(t) for t in tensors)))

    def download(self, *tensors) -> None:
        self._steps.append(("download", tuple(_buffer_of(t) for t in tensors)))

    def run(self) -> None:
        """Submits the recorded operations again and waits for them."""
        if self._seq is None:
            raise RuntimeError("the recording has not ended yet")
        with self.device._lock:
            self.device._open()
            self.device._submit(self._seq, self._holds)

    def timestamps(self) -> list[float]:
        """GPU times in ns of the last run: one before the first recorded operation and one after each
        (a dispatch is two operations, its barrier and itself, or one without a barrier of its own; an upload
        is two, a download one). Needs record(timestamps=True)."""
        if not self._timestamps or self._seq is None:
            raise RuntimeError("timestamps need a finished recording made with record(timestamps=True)")
        period = self.device.info.timestamp_period_ns
        return [t * period for t in self._seq.get_timestamps()]


def _buffer_of(t) -> "Buffer":
    buf = getattr(t, "buffer", t)
    if not isinstance(buf, Buffer):
        raise TypeError(f"expected a dmlgpu.Tensor or Buffer, not {type(t).__name__}")
    return buf


_default: Device | None = None
_default_lock = threading.Lock()


def default_device() -> Device:
    """The Device that functions use when no ``device=`` is given (opened on first use)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = Device()
        return _default
