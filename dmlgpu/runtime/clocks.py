"""Keeping an NVIDIA GPU at its working clocks while a Device is open (Device's ``hold_clocks``).

NVIDIA's driver runs a GPU that only Vulkan uses at idle clocks between bursts of work: a short call made
after a pause runs at a fraction of the clock it gets under sustained load, and work submitted every few
milliseconds does not raise it. A process that holds a CUDA context keeps the GPU at its working clocks
while the context exists, idle or not; PyTorch users have one in every process. So, where the driver's
CUDA library (``libcuda.so.1``) is present, an open Device on an NVIDIA GPU retains that GPU's CUDA
*primary context* (``cuDevicePrimaryCtxRetain``; found by the Vulkan device's UUID, ``cuDeviceGetUuid``) and
releases it when the Device closes. It runs no CUDA work and allocates nothing itself; the cost is the
context's device memory and the GPU's idle power at working clocks (bench/RESULTS.md gives both).

``DMLGPU_HOLD_CLOCKS=0`` (or ``Device(hold_clocks=False)``) turns it off; other vendors' drivers and devices
without the CUDA library are left alone. A hold that cannot be made is no error: ``ClockHold.state`` says
why. Contexts are counted per CUDA device, so several Devices of one GPU share one retain.
"""
from __future__ import annotations

import ctypes
import os
import threading

NVIDIA = 0x10de

_lock = threading.Lock()          # the holds and their counts
_init_lock = threading.Lock()     # loading and initialising libcuda (slow: outside _lock, so release() never waits)
_cuda: ctypes.CDLL | None = None
_cuda_error: str | None = None
_retained: dict[int, int] = {}       # CUDA device ordinal -> Devices holding it


def _library() -> ctypes.CDLL | None:
    """libcuda, initialised (None where it is absent or fails: _cuda_error says why)."""
    global _cuda, _cuda_error
    with _init_lock:
        if _cuda is None and _cuda_error is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                status = lib.cuInit(0)
                if status != 0:
                    raise OSError(f"cuInit returned {status}")
                _cuda = lib
            except OSError as e:
                _cuda_error = f"no usable CUDA driver library ({e})"
    return _cuda


def _ordinal(lib: ctypes.CDLL, uuid: bytes) -> int | None:
    """The CUDA device ordinal whose UUID is ``uuid``, or None."""
    count = ctypes.c_int()
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    for i in range(count.value):
        dev = ctypes.c_int()
        got = (ctypes.c_char * 16)()
        if lib.cuDeviceGet(ctypes.byref(dev), i) == 0 and lib.cuDeviceGetUuid(got, dev) == 0 and bytes(got) == uuid:
            return dev.value
    return None


COST = ("about 520 MiB of the GPU's memory (the CUDA context) and the power of working clocks while idle (about 125 W "
        "against 71 W on an H100)")     # measured: bench/RESULTS.md


def enabled_by_default() -> bool:
    """Whether a Device holds the clocks when ``hold_clocks`` is not given: DMLGPU_HOLD_CLOCKS, else on."""
    return os.environ.get("DMLGPU_HOLD_CLOCKS", "1") != "0"


def notice(vendor_id: int) -> str | None:
    """What an open Device does to a GPU of ``vendor_id`` and what it costs, with the switch (``python -m dmlgpu
    info`` prints it), or None for other vendors' devices, which are left alone."""
    if vendor_id != NVIDIA:
        return None
    if not enabled_by_default():
        return "clock hold: off (DMLGPU_HOLD_CLOCKS=0): this GPU runs at idle clocks between bursts of work"
    return (f"clock hold: an open Device keeps this NVIDIA GPU at its working clocks (a retained CUDA primary "
            f"context, where libcuda.so.1 is present): {COST}; DMLGPU_HOLD_CLOCKS=0 or Device(hold_clocks=False) "
            f"turns it off")


class ClockHold:
    """The clock hold of one Device: started in the background when the Device opens (cuInit takes a while;
    the Device's first calls do not wait for it), released by ``release()``. ``state``: "held (CUDA device
    N)", "off" or why it is not held."""

    def __init__(self, vendor_id: int, uuid: bytes, enabled: bool | None):
        if enabled is None:
            enabled = enabled_by_default()
        self._ordinal: int | None = None
        self._released = False
        self._thread: threading.Thread | None = None
        if not enabled:
            self.state = "off"
        elif vendor_id != NVIDIA:
            self.state = "not an NVIDIA GPU"
        elif len(uuid) != 16:
            self.state = "the device reports no UUID"
        else:
            self.state = "starting"
            self._thread = threading.Thread(target=self._retain, args=(uuid,), name="dmlgpu-clock-hold",
                                            daemon=True)
            self._thread.start()

    def _retain(self, uuid: bytes) -> None:
        lib = _library()
        with _lock:
            if self._released:
                return
            if lib is None:
                self.state = str(_cuda_error)
                return
            ordinal = _ordinal(lib, uuid)
            if ordinal is None:
                self.state = "no CUDA device has this GPU's UUID"
                return
            if not _retained.get(ordinal):
                ctx = ctypes.c_void_p()
                status = lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), ctypes.c_int(ordinal))
                if status != 0:
                    self.state = f"cuDevicePrimaryCtxRetain returned {status}"
                    return
            _retained[ordinal] = _retained.get(ordinal, 0) + 1
            self._ordinal = ordinal
            self.state = f"held (CUDA device {ordinal})"

    def wait(self) -> str:
        """Waits for the hold to be made (or found impossible); returns ``state``."""
        if self._thread is not None:
            self._thread.join()
        return self.state

    def release(self) -> None:
        """Releases the hold (once; the context goes when no Device of its GPU holds it). It does not wait
        for a hold still being made: that one is then not made."""
        with _lock:
            self._released = True
            ordinal, self._ordinal = self._ordinal, None
            if ordinal is None:
                if self.state == "starting":
                    self.state = "released before it was made"
                return
            _retained[ordinal] -= 1
            if not _retained[ordinal] and _cuda is not None:
                del _retained[ordinal]
                _cuda.cuDevicePrimaryCtxRelease(ctypes.c_int(ordinal))
            self.state = "released"
