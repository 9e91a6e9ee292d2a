"""A device's scratch: kernel parameter buffers shared by equal words, the WIDE variants' block lists, zeroed
scratch (a scatter's claim words), and which kernels the device admits (the limits checked before any GPU work)."""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..errors import DeviceError
from ..kernels import spirv, table as kernels
from . import profiles
from .buffer import Buffer
from .encode import COPY
from .memory import Memory

PARAMS_CACHE = 256      # parameter buffers kept per device


class Scratch:
    """The scratch of one device (``memory``: its buffers' part); ``fill(buf, word, offset, nbytes)``: the
    device's fill in order with its queued work."""

    def __init__(self, memory: Memory, fill: Callable[[Buffer, int, int, int], None]) -> None:
        self._memory = memory
        self._fill = fill
        self.param_buffers: dict = {}
        self.zeroed_buffers: dict = {}    # zeroed scratch by key (zeroed())
        self.zeroed_clean = True   # False once a run that used zeroed scratch failed: the next request renews it
        self.zeroed_serial = 0     # counts the zeroed scratch buffers made (a call template names the one it used)

    def params(self, words: np.ndarray) -> tuple[Buffer, bool]:
        """Device.params."""
        key = words.tobytes()
        buf = self.param_buffers.pop(key, None)
        fresh = buf is None
        if fresh:
            if len(self.param_buffers) >= PARAMS_CACHE:
                self.param_buffers.pop(next(iter(self.param_buffers)))
            buf = Buffer(self._memory, words.nbytes, whole=True)    # bound whole at binding 0
            buf.stage(np.frombuffer(key, dtype=np.uint8))
        self.param_buffers[key] = buf            # most recently used last
        return buf, fresh

    def drop_new_params(self, uploads: Iterable[Buffer]) -> None:
        """Drops the parameter buffers among ``uploads`` whose words were never uploaded (a refused run's)."""
        ids = {id(b) for b in uploads}
        for key, buf in list(self.param_buffers.items()):
            if buf._pending is not None and id(buf) in ids:
                del self.param_buffers[key]

    def block_table(self, slots, base: int) -> np.ndarray:
        """Device.block_table."""
        head: list[int] = []
        addresses: list[int] = []
        start = base + 2 * len(slots)
        chunk = self._memory.chunk_bytes
        for buf in slots:
            blocks = buf.block_list if buf is not None else []
            head += [chunk.bit_length() - 1 if len(blocks) > 1 else 63, start + len(addresses)]
            addresses += [b.address for b in blocks] or [0]
        return np.array(head + addresses, dtype=np.uint64)

    def uses_zeroed(self, launches: Iterable[Any]) -> bool:
        """True when the launches (Dispatches holding Buffers) use zeroed scratch."""
        held = {id(b) for b in self.zeroed_buffers.values()}
        return bool(held) and any(id(b) in held for d in launches for b in d.buffers)

    def zeroed(self, key: str, nbytes: int, beside: tuple = ()) -> Buffer:
        """Device.zeroed."""
        buf = self.zeroed_buffers.get(key)
        if buf is None or buf.nbytes < nbytes or not self.zeroed_clean:
            memory = self._memory
            memory.check_sizes(*beside, nbytes)
            size = max(nbytes, 4096, 0 if buf is None else buf.nbytes)
            size = 1 << (size - 1).bit_length()        # powers of two up to one block, then what is asked
            if size > memory.whole_max:
                size = nbytes
            if not self.zeroed_clean:
                self.zeroed_buffers.clear()
                self.zeroed_clean = True
            self.zeroed_buffers.pop(key, None)
            buf = self.zeroed_buffers[key] = Buffer(memory, size)
            self.zeroed_serial += 1
            self._fill(buf, 0, 0, buf.nbytes)
        return buf


class Admission:
    """Which kernel variants a device runs: one with this DeviceInfo (as its profile shows it), enabled
    ``features``, ``profile`` (profiles.Profile) and geometry ``suffix``. ``admitted`` is None where every
    variant of the geometry fits the device's limits (nothing to check), else the kernels checked so far."""

    def __init__(self, info: Any, features: frozenset, profile: Any, suffix: str) -> None:
        self.info, self.features, self.profile = info, features, profile      # (what profiles.check_limits reads)
        self._suffix = suffix
        self._supported: dict = {}  # supports(): variant stem -> whether this device runs it
        self.admitted: dict | None = None if (
            info.max_per_stage_storage_buffers >= kernels.MOST_STORAGE_BUFFERS
            and info.max_compute_shared_memory_size >= kernels.MOST_SHARED_BYTES
            and not kernels.SUBGROUP_OPERATIONS & ~info.subgroup_operations) else {COPY: True}

    def supports(self, stem: str) -> bool:
        """Device.supports."""
        ok = self._supported.get(stem)
        if ok is None:
            need = spirv.requirements(stem + self._suffix)
            need = need._replace(storage_buffers=max(need.storage_buffers, need.bindings))
            ok = self._supported[stem] = profiles.limit_problem(self.info, self.features, need) is None
        return ok

    def admit(self, launches: Iterable[Any], refused: Callable[[], None]) -> None:
        """DeviceError, before anything of the run is recorded, if a launch's kernel needs more than the
        device's limits or features (profiles.check_limits: its SPIR-V's needs, and as many storage buffers
        as the launch binds; each kernel is checked once), after calling ``refused()``. Only where
        ``admitted`` is not None."""
        admitted = self.admitted
        assert admitted is not None
        for d in launches:
            if d.kernel not in admitted:
                name = d.kernel + self._suffix
                need = spirv.requirements(name)
                try:
                    profiles.check_limits(self, name, need._replace(
                        storage_buffers=max(need.storage_buffers, len(d.buffers))))
                except DeviceError:
                    refused()
                    raise
                admitted[d.kernel] = True
