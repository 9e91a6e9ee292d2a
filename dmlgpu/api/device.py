"""dmlgpu.Device: what users hold of a Vulkan device (the DirectML feature level that layer-1 validation follows,
compile(), buffers, synchronize(), record(), memory statistics and settings), over the runtime Device that does
the work (``Device.runtime``: a Runtime, dmlgpu's internals); and the default device the functions use."""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable

import numpy as np

from .. import runtime
from ..layer1.dtypes import FeatureLevel
from ..errors import DeviceError
from ..layer1.descriptors import CompiledOperator, _OperatorDesc
from ..runtime import Buffer, DeviceInfo, Recording
from ..runtime.clocks import ClockHold
from ..runtime.profiles import Profile


class Runtime(runtime.Device):
    """The runtime Device under a dmlgpu.Device (``Device.runtime``): dmlgpu's internals, not its API (its methods
    are the runtime's contract with the layers above: launches, scratch, parameter buffers, checks; no promise
    to users). Layer 2 runs every call on it, and keeps here what it keeps per device: ``feature_level`` (layer 1
    validates at it), the planned calls by signature, the buffers small NumPy-in/out calls keep for their next
    call (execution.py) and the call templates (call_templates.py). ``user``: the dmlgpu.Device that holds it
    (a Tensor's ``device``)."""

    def __init__(self, user: "Device", index: int | None, feature_level: FeatureLevel, **settings: Any):
        self.user = user
        self.feature_level = feature_level
        # the layer-2 calls planned on this device, by signature; signature -> the buffers its last NumPy-in/out
        # call kept (execution.py)
        self._calls: dict[tuple[Any, ...], Any] = {}
        self._kept: dict[tuple[Any, ...], Any] = {}
        self.templates: dict[tuple[Any, ...], Any] = {}  # call templates by signature (call_templates.py)
        super().__init__(index, **settings)

    def empty_cache(self) -> None:
        """Also gives back the buffers that small NumPy-in/out calls keep (Device.empty_cache)."""
        with self.lock:
            for buffers in self._kept.values():
                self.give_buffers(*buffers)
            self._kept.clear()
            super().empty_cache()

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, feature level {self.feature_level}>"


class Device:
    """A Vulkan device for dmlgpu's operators: its memory (a caching allocator), its queue of eager calls,
    its kernels' pipelines. One Device may be used from several threads: its submissions are serialised by
    a lock. Two Device objects of one GPU share nothing (a Tensor belongs to one of them).

    Parameters
    ----------
    index : int or None
        As listed by dmlgpu.devices(); default: DMLGPU_DEVICE, else the first discrete GPU, else the first
        device.
    feature_level : FeatureLevel, str, float or (int, int)
        The DirectML feature level that layer-1 validation follows (default "4.1").
    memory_limit, direct_memory, max_queued, chunk_bytes
        See dmlgpu.runtime.Device: the most bytes it holds, mapped memory instead of staging copies, the
        most eager calls queued before a submission (default 64, or DMLGPU_MAX_QUEUED), the block size of
        large buffers (a setting for tests).
    profile : str or None
        Open it as if it had fewer features and lower limits, e.g. "minimum" (dmlgpu/runtime/profiles.py;
        default: DMLGPU_DEVICE_PROFILE, else "full").
    hold_clocks : bool or None
        Keep an NVIDIA GPU at its working clocks while the Device is open (a retained CUDA primary context:
        dmlgpu/runtime/clocks.py; ``clock_hold.state`` says whether it is held); default: DMLGPU_HOLD_CLOCKS
        (0 or 1) if set, else **on**. It costs about 520 MiB of the GPU's memory and the power of working
        clocks while idle (about 125 W against 71 W on an H100); ``hold_clocks=False`` or
        ``DMLGPU_HOLD_CLOCKS=0`` turns it off. Other devices ignore it.
    exportable : bool or None
        Allocate memory that CUDA on the same GPU can map (DLPack's kDLCUDA path: dmlgpu.from_dlpack,
        Tensor.__dlpack__; dmlgpu/runtime/export.py); default: DMLGPU_EXPORTABLE (0 or 1) if set, else on NVIDIA
        GPUs that have VK_KHR_external_memory_fd (the feature "externalMemoryFd"). True elsewhere: DeviceError.

    Raises
    ------
    dmlgpu.DeviceError
        No such device, no usable Vulkan driver, or a kp build without dmlgpu's patches.
    ValueError
        A setting out of range.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dev = dmlgpu.Device(0, max_queued=16)
    >>> t = dmlgpu.tensor(np.arange(8, dtype=np.int32), device=dev)
    >>> out = dmlgpu.gather(t, dmlgpu.tensor(np.array([7, 0], np.int32), device=dev))   # queued
    >>> dev.synchronize(); out.numpy()
    array([7, 0], dtype=int32)
    >>> dev.close()
    """

    runtime: Runtime
    """The runtime Device that does the work: dmlgpu's internals (benchmarks and tests reach launches, scratch and
    the kernels' variants through it), not part of the API: its methods may change between versions."""

    def __init__(self, index: int | None = None, *,
                 feature_level: FeatureLevel | str | float | tuple[int, int] = "4.1", memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None,
                 profile: str | None = None, hold_clocks: bool | None = None, exportable: bool | None = None):
        self.runtime = Runtime(self, index, FeatureLevel.parse(feature_level), memory_limit=memory_limit,
                               direct_memory=direct_memory, max_queued=max_queued, chunk_bytes=chunk_bytes,
                               profile=profile, hold_clocks=hold_clocks, exportable=exportable)

    # ---- what it is ----
    @property
    def info(self) -> DeviceInfo:
        """The device's name, type, limits and features (dmlgpu.DeviceInfo), as its profile shows them."""
        info: DeviceInfo = self.runtime.info
        return info

    @property
    def physical_info(self) -> DeviceInfo:
        """The DeviceInfo as the device has it (``info`` with no profile applied)."""
        return self.runtime.physical_info

    @property
    def profile(self) -> Profile:
        """The device profile it was opened with (``profile=``: its ``name``, e.g. "full" or "minimum")."""
        return self.runtime.profile

    @property
    def features(self) -> frozenset[str]:
        """The optional Vulkan features enabled on it (those of ``info``), e.g. "externalMemoryHost"."""
        return self.runtime.features

    @property
    def feature_level(self) -> FeatureLevel:
        """The DirectML feature level that layer-1 validation (compile()) follows."""
        return self.runtime.feature_level

    @property
    def max_block(self) -> int:
        """The most bytes one block of device memory holds (a buffer larger than it is held in several)."""
        return int(self.runtime.max_block)

    @property
    def clock_hold(self) -> ClockHold:
        """The NVIDIA clock hold (``hold_clocks=``): its ``state`` says whether the GPU is kept at working clocks."""
        return self.runtime.clock_hold

    # ---- its settings (the constructor's) ----
    @property
    def memory_limit(self) -> int | None:
        """The most bytes of device memory it holds at once (in use and cached), or None for the driver's."""
        return self.runtime.memory_limit

    @property
    def direct_memory(self) -> bool:
        """Whether buffers are read and written through mapped memory instead of staging copies."""
        return bool(self.runtime.direct_memory)

    @property
    def max_queued(self) -> int:
        """The most eager calls queued before a submission (0: each call runs at once)."""
        return int(self.runtime.max_queued)

    @property
    def chunk_bytes(self) -> int:
        """The size of the blocks that hold a buffer larger than one block."""
        return int(self.runtime.chunk_bytes)

    @property
    def exportable(self) -> bool:
        """Whether its memory is allocated so that CUDA on the same GPU can map it (DLPack's kDLCUDA)."""
        return self.runtime.exportable

    @property
    def closed(self) -> bool:
        """Whether close() was called (using it afterwards raises DeviceError)."""
        return bool(self.runtime.closed)

    # ---- what it does ----
    def buffer(self, data: Any = None, nbytes: int | None = None) -> Buffer:
        """A new device buffer (layer 1's operands, a Tensor's memory).

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
        return self.runtime.buffer(data, nbytes)

    def synchronize(self) -> None:
        """Submits the queued eager calls and waits until the device has finished them (host reads of their
        results wait by themselves: this is for timing and for handing results to other APIs). It is the
        device-wide point of the device's own checks (mode="raise" on Tensor indices): it raises, once, every
        failure of a call on this device that no read has raised yet (one: its own exception; several: one of
        the first's type listing them all).

        Examples
        --------
        >>> import dmlgpu
        >>> dmlgpu.default_device().synchronize()
        """
        self.runtime.synchronize()

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
        return self.runtime.record(timestamps)

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
        return self.runtime.memory_stats()

    def empty_cache(self) -> None:
        """Releases the device memory of every cached (free) block, and of the buffers that small
        NumPy-in/out calls keep for their next call; buffers in use keep theirs.

        Examples
        --------
        >>> import dmlgpu
        >>> dev = dmlgpu.default_device()
        >>> dev.empty_cache(); dev.memory_stats()["cached_bytes"]
        0
        """
        self.runtime.empty_cache()

    def warmup(self, kernels: Iterable[str] | None = None,
               step: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
        """Builds the pipelines of kernel variants on this device and writes its pipeline cache to disk, so that
        later processes' first calls compile nothing (``python -m dmlgpu warmup``).

        Parameters
        ----------
        kernels : iterable of str, optional
            Variant names of the default geometry; default: every one. Each is built in the device's geometry.
        step : callable, optional
            Called with each name before it is built (a progress line).

        Returns
        -------
        (list of str, list of str)
            The variants built, and those skipped because the device lacks a feature or a limit they need
            (they never run on it).

        Examples
        --------
        >>> import dmlgpu
        >>> dmlgpu.default_device().warmup(["gather_u4_i32", "gather_u4_i64"])
        (['gather_u4_i32', 'gather_u4_i64'], [])
        """
        return self.runtime.warmup(kernels, step)

    def compile(self, desc: _OperatorDesc) -> CompiledOperator:
        """Validates a layer-1 operator descriptor at this device's feature level.

        Parameters
        ----------
        desc : GatherDesc, GatherElementsDesc, GatherNDDesc, GatherND1Desc, ScatterNDDesc or ScatterElementsDesc

        Returns
        -------
        CompiledOperator
            Its ``execute(**buffers)`` runs the operator on this device's buffers.

        Raises
        ------
        dmlgpu.DescError
            A rule of the operator's DirectML page broken (the message names the member and the rule).

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> from dmlgpu import DataType, TensorDesc
        >>> dev = dmlgpu.default_device()
        >>> desc = dmlgpu.GatherDesc(TensorDesc(DataType.FLOAT32, [1, 1, 3, 2]),
        ...                          TensorDesc(DataType.UINT32, [1, 1, 1, 2]),
        ...                          TensorDesc(DataType.FLOAT32, [1, 1, 2, 2]), axis=2, index_dimensions=1)
        >>> out = dev.buffer(nbytes=desc.output.total_size_in_bytes)
        >>> dev.compile(desc).execute(input=dev.buffer(np.arange(6, dtype=np.float32)),
        ...                           indices=dev.buffer(np.array([2, 0], np.uint32)), output=out)
        >>> out.read().view(np.float32)
        array([4., 5., 0., 1.], dtype=float32)
        """
        return CompiledOperator(self.runtime.check_open(), desc)

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
        self.runtime.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self.runtime)


_default: Device | None = None
_by_index: dict[int, Device] = {}     # the Devices that device=<index> opened, other than the default one
_default_lock = threading.Lock()


def default_device() -> Device:
    """The Device that functions use when no ``device=`` is given, opened on first use (again if it was
    closed): ``Device()``, i.e. DMLGPU_DEVICE, else the first discrete GPU, else the first device.

    Returns
    -------
    Device

    Raises
    ------
    dmlgpu.DeviceError
        No usable Vulkan device.

    Examples
    --------
    >>> import dmlgpu
    >>> dmlgpu.default_device() is dmlgpu.default_device()
    True
    """
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Device()
        return _default


def as_device(device: Device | Runtime | int | None, who: str, name: str = "device") -> Device:
    """The open Device that ``device=`` names: a Device (or its Runtime); a device index (as listed by
    dmlgpu.devices()): the default device if it has that index, else one Device per index, opened on first use
    and kept; None: the default device. TypeError (naming ``who``, the function called, and the argument
    ``name``) for anything else; DeviceError for an index out of range or a closed Device."""
    if device is None:
        dev = default_device()
    elif isinstance(device, Device):
        dev = device
    elif isinstance(device, Runtime):
        dev = device.user
    elif isinstance(device, bool) or not isinstance(device, (int, np.integer)):
        raise TypeError(f"{who}: {name} must be a dmlgpu.Device or a device index, not {type(device).__name__}")
    else:
        dev = _of_index(int(device), who, name)
    dev.runtime.check_open()
    return dev


def as_runtime(device: Device | Runtime | int | None, who: str, name: str = "device") -> Runtime:
    """The open Runtime of the Device that ``device=`` names (as_device): what layer 2 runs a call on."""
    if isinstance(device, Runtime):
        return device.check_open()
    return as_device(device, who, name).runtime


def _of_index(index: int, who: str, name: str) -> Device:
    count = len(runtime.devices())
    if not 0 <= index < count:
        raise DeviceError(f"{who}: {name}={index} is no device index: dmlgpu.devices() lists {count} "
                          f"(indices 0 to {count - 1})")
    default = default_device()
    if default.info.index == index:
        return default
    with _default_lock:
        dev = _by_index.get(index)
        if dev is None or dev.closed:
            dev = _by_index[index] = Device(index)
        return dev
