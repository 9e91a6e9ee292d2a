"""dmlgpu.Device: a Vulkan device (runtime.Device) that also carries the DirectML feature level layer-1
validation follows, and compiles operator descriptors; and the default device the functions use."""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from . import runtime
from .dtypes import FeatureLevel
from .errors import DeviceError
from .operators import CompiledOperator, _OperatorDesc


class Device(runtime.Device):
    """A Vulkan device for dmlgpu's operators.

    ``index``: as listed by dmlgpu.devices(); default: DMLGPU_DEVICE, else the first discrete GPU, else
    the first device. ``feature_level``: the DirectML feature level layer-1 validation follows.
    ``memory_limit``, ``direct_memory``, ``max_queued``, ``chunk_bytes``: see dmlgpu.runtime.Device. One Device
    may be used from several threads: its submissions are serialised by a lock.
    """

    def __init__(self, index: int | None = None, *,
                 feature_level: FeatureLevel | str | float | tuple[int, int] = "4.1", memory_limit: int | None = None,
                 direct_memory: bool | None = None, max_queued: int | None = None, chunk_bytes: int | None = None):
        self.feature_level = FeatureLevel.parse(feature_level)
        # the layer-2 calls planned on this device, by signature; signature -> the buffers its last NumPy-in/out
        # call kept (functions.py)
        self._calls: dict[tuple[Any, ...], Any] = {}
        self._kept: dict[tuple[Any, ...], Any] = {}
        super().__init__(index, memory_limit=memory_limit, direct_memory=direct_memory, max_queued=max_queued,
                         chunk_bytes=chunk_bytes)

    def empty_cache(self) -> None:
        """Releases the device memory of every cached (free) block, and of the buffers that small
        NumPy-in/out calls keep for their next call; buffers in use keep theirs."""
        with self._lock:
            for buffers in self._kept.values():
                self._give(*buffers)
            self._kept.clear()
            super().empty_cache()

    def compile(self, desc: _OperatorDesc) -> CompiledOperator:
        """Validates an operator descriptor at this device's feature level; returns a CompiledOperator."""
        return CompiledOperator(self._open(), desc)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, feature level {self.feature_level}>"


_default: Device | None = None
_by_index: dict[int, Device] = {}     # the Devices that device=<index> opened, other than the default one
_default_lock = threading.Lock()


def default_device() -> Device:
    """The Device that functions use when no ``device=`` is given (opened on first use)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = Device()
        return _default


def as_device(device: Device | int | None, who: str, name: str = "device") -> Device:
    """The open Device that ``device=`` names: a Device; a device index (as listed by dmlgpu.devices()): the
    default device if it has that index, else one Device per index, opened on first use and kept; None: the
    default device. TypeError (naming ``who``, the function called, and the argument ``name``) for anything
    else; DeviceError for an index out of range or a closed Device."""
    if device is None:
        return default_device()._open()
    if isinstance(device, Device):
        return device._open()
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
        if dev is None or dev._closed:
            dev = _by_index[index] = Device(index)
        return dev
