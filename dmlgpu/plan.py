"""A validated operation ready to run: its index map(s), and the dispatches that run it on a device."""
from __future__ import annotations

import functools

import numpy as np

from . import kernels
from .index_map import IndexMap
from .runtime import Buffer, Device, Dispatch


class Plan:
    """``kind`` "gather": dense (output) <- data (input) through ``index_map``.
    ``kind`` "scatter": output = input (a strided copy through ``copy_map``, skipped when the output is
    bound to the input's buffer), then every update claims its target and the last claim writes.
    ``index_dtype``: the indices' NumPy dtype (its width picks the kernel; its sign, wrapping)."""

    def __init__(self, kind: str, index_map: IndexMap, index_dtype, copy_map: IndexMap | None = None):
        assert kind in ("gather", "scatter")
        index_dtype = np.dtype(index_dtype)
        self.kind = kind
        self.map = index_map.optimized()
        self.copy = copy_map.optimized() if copy_map is not None else None
        self.signed = index_dtype.kind == "i"
        self.index_bytes = index_dtype.itemsize
        self.words = self.map.params(self.signed, word_loop=kind == "gather")  # DeviceError if over 32 bits
        # CPU devices (an invocation is a SIMD lane) gather whole rows per iteration where they can
        self.row_words = self.map.params(self.signed, row_loop=True) \
            if kind == "gather" and self.map.row_loop_ok() else None
        self.copy_words = self.copy.params(False, word_loop=True) if self.copy is not None else None

    def _words(self, device: Device) -> np.ndarray:
        """The gather's or scatter's parameter words for this device."""
        return self.row_words if self.row_words is not None and device.info.type == "CPU" else self.words

    def params(self, device: Device) -> tuple[list, list]:
        """(the parameter buffers on ``device``, those of them that are new and must be uploaded)."""
        pairs = [device._params(self._words(device))]
        if self.copy_words is not None:
            pairs.append(device._params(self.copy_words))
        return [b for b, _ in pairs], [b for b, fresh in pairs if fresh]

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """(the dispatches, the buffers to upload first) for one execution on these buffers. ``take``: the
        scratch allocator that reduction.ReducePlan uses (a Plan needs none: its claim scratch is the
        device's)."""
        params, uploads = self.params(device)
        m, out = self.map, []
        if self.kind == "gather":
            if m.count:
                out.append(Dispatch(kernels.variant("gather", m.unit, self.index_bytes),
                                    (params[0], indices, input, output), int(self._words(device)[1])))
            return out, uploads
        # claim, then the copy (independent of the claims: they may overlap), then the winners write
        owner = device._owner_scratch(-(-output.nbytes // m.unit)) if m.count else None
        scatter = [Dispatch(kernels.variant(kernel, m.unit, self.index_bytes),
                            (params[0], indices, output, updates, owner), m.count)
                   for kernel in ("scatter_claim", "scatter_write")] if m.count else []
        out += scatter[:1]
        if input is not output and self.copy.count:
            out.append(copy_dispatch(device, self.copy.unit, self.copy_words, params[1], input, output,
                                     barrier=not out))
        return out + scatter[1:], uploads


@functools.lru_cache(maxsize=1024)
def make_plan(kind: str, index_map: IndexMap, index_dtype, copy_map: IndexMap | None = None) -> Plan:
    """``Plan(...)``, made once for equal arguments (index maps are values): a repeated call skips folding,
    vectorizing and packing the parameter words."""
    return Plan(kind, index_map, np.dtype(index_dtype), copy_map)


def copy_dispatch(device: Device, unit: int, words: np.ndarray, params: Buffer, input: Buffer, output: Buffer,
                  barrier: bool = True) -> Dispatch:
    """The strided copy input -> output (the gather kernel with tuple size 0) of a copy map with access unit
    ``unit`` and parameter words ``words`` (``IndexMap.params(False, word_loop=True)``), held by ``params``."""
    return Dispatch(kernels.variant("gather", unit, 4), (params, device._dummy, input, output), int(words[1]),
                    barrier=barrier)
