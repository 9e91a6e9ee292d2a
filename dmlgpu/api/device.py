"""dmlgpu.Device: a Vulkan device (runtime.Device) that also carries the DirectML feature level layer-1
validation follows, and compiles operator descriptors; and the default device the functions use."""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .. import runtime
from ..layer1.dtypes import FeatureLevel
from ..errors import DeviceError
from ..layer1.descriptors import CompiledOperator, _OperatorDesc


class Device(runtime.Device):
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

    def __init__(self, index: int | None = None, *,
                 feature_level: FeatureLevel | str | float | tuple[int, int] = "4.1", memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None,
                 profile: str | None = None, hold_clocks: bool | None = None, exportable: bool | None = None):
        self.feature_level = FeatureLevel.parse(feature_level)
        # the layer-2 calls planned on this device, by signature; signature -> the buffers its last NumPy-in/out
        # call kept (functions.py)
        self._calls: dict[tuple[Any, ...], Any] = {}
        self._kept: dict[tuple[Any, ...], Any] = {}
        self.templates: dict[tuple[Any, ...], Any] = {}  # call templates by signature (call_templates.py)
        super().__init__(index, memory_limit=memory_limit, direct_memory=direct_memory, max_queued=max_queued,
                         chunk_bytes=chunk_bytes, profile=profile, hold_clocks=hold_clocks, exportable=exportable)

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
        with self.lock:
            for buffers in self._kept.values():
                self.give_buffers(*buffers)
            self._kept.clear()
            super().empty_cache()

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
        return CompiledOperator(self.check_open(), desc)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, feature level {self.feature_level}>"


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


def as_device(device: Device | int | None, who: str, name: str = "device") -> Device:
    """The open Device that ``device=`` names: a Device; a device index (as listed by dmlgpu.devices()): the
    default device if it has that index, else one Device per index, opened on first use and kept; None: the
    default device. TypeError (naming ``who``, the function called, and the argument ``name``) for anything
    else; DeviceError for an index out of range or a closed Device."""
    if device is None:
        return default_device().check_open()
    if isinstance(device, Device):
        return device.check_open()
    if isinstance(device, bool) or not isinstance(device, (int, np.integer)):
        raise TypeError(f"{who}: {name} must be a dmlgpu.Device or a device index, not {type(device).__name__}")
    index, count = int(device), len(runtime.devices())
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
