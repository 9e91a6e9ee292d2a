"""Plans: a validated operation ready to run (the Plan interface), and the plans of one index map: GatherPlan,
ScatterPlan (scatter reductions: reduction.ReducePlan)."""
from __future__ import annotations

import functools

import numpy as np

from . import kernels
from .errors import DeviceError
from .index_map import P_TOTAL, IndexMap
from .runtime import Buffer, Device, Dispatch

_U32 = 2**32


class Plan:
    """A validated operation, ready to run: what operators.py and functions.py use of every plan.
    ``output_from_input``: the output starts as a copy of the input and may be bound to the input's own
    buffer (the scatters); False: the output is a new tensor that must not overlap the input (gathers)."""

    output_from_input: bool

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """(the dispatches, the buffers to upload first) for one execution on these buffers. ``take(nbytes)``:
        scratch buffers that the caller gives back once the dispatches have run."""
        raise NotImplementedError


def needs_wide(device: Device, index_map: IndexMap, *buffers) -> bool:
    """True when a dispatch of ``index_map`` on these buffers (None: absent) needs the WIDE kernel variants
    (kernels.variant(wide=True)): a buffer is held in several blocks, or the map needs 64 bits. DeviceError,
    before any GPU work, when the device lacks their features."""
    wide = not index_map.fits_32_bits() or any(b is not None and b.chunked for b in buffers)
    if wide and not kernels.WIDE_FEATURES <= device.features:
        raise DeviceError(f"this operation has tensors larger than one buffer of {device.info.name} "
                          f"({device.max_block} bytes) or 2^32 units, which needs the device features "
                          f"{', '.join(sorted(kernels.WIDE_FEATURES - device.features))} that it lacks; split it "
                          f"into smaller ones")
    return wide


def wide_params(device: Device, words: np.ndarray, *slots) -> tuple[Buffer, bool]:
    """Device._params for a WIDE variant: its uint64 words followed by the block lists of the tensors in
    ``slots`` (units.glsl's SLOT_* order: indices, data, dense, owner; None: absent)."""
    return device._params(np.concatenate([words, device._block_table(slots, len(words))]))


class _MapPlan(Plan):
    """A plan of one index map: ``index_dtype`` is the indices' NumPy dtype (its width picks the kernel; its
    sign, wrapping). Maps that need 64 bits run only in the WIDE variants; the others in the 32-bit ones
    unless a buffer is held in several blocks."""

    def __init__(self, index_map: IndexMap, index_dtype):
        index_dtype = np.dtype(index_dtype)
        self.map = index_map.optimized()
        self.signed = index_dtype.kind == "i"
        self.index_bytes = index_dtype.itemsize
        self.narrow = self.map.fits_32_bits()
        self._wide_words: dict = {}         # params() arguments -> WIDE words, made on first use

    def wide_words(self, **kwargs) -> np.ndarray:
        key = tuple(sorted(kwargs.items()))
        if key not in self._wide_words:
            self._wide_words[key] = self.map.params(self.signed, wide=True, **kwargs)
        return self._wide_words[key]


class GatherPlan(_MapPlan):
    """dense (output) <- data (input) through ``index_map``."""

    output_from_input = False

    def __init__(self, index_map: IndexMap, index_dtype):
        super().__init__(index_map, index_dtype)
        self.words = self.map.params(self.signed, word_loop=True) if self.narrow else None
        # CPU devices (an invocation is a SIMD lane) gather whole rows per iteration where they can
        self.row_words = self.map.params(self.signed, row_loop=True) if self.narrow and self.map.row_loop_ok() \
            else None

    def _words(self, device: Device) -> np.ndarray:
        """The parameter words for this device."""
        return self.row_words if self.row_words is not None and device.info.type == "CPU" else self.words

    def _words_wide(self, device: Device) -> np.ndarray:
        """The WIDE variant's parameter words for this device."""
        if self.map.row_loop_ok() and device.info.type == "CPU":
            return self.wide_words(row_loop=True)
        return self.wide_words(word_loop=True)

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        if not self.map.count:
            return [], []
        wide = needs_wide(device, self.map, indices, input, output)
        words = self._words_wide(device) if wide else self._words(device)
        params, fresh = wide_params(device, words, indices, input, output, None) if wide else device._params(words)
        return ([Dispatch(kernels.variant("gather", self.map.unit, self.index_bytes, wide),
                          (params, indices, input, output), int(words[P_TOTAL]), wide=wide)],
                [params] if fresh else [])


class ScatterPlan(_MapPlan):
    """output = input (a strided copy through ``copy_map``, skipped when the output is bound to the input's
    buffer), then every update claims its target and the last claim writes."""

    output_from_input = True

    def __init__(self, index_map: IndexMap, index_dtype, copy_map: IndexMap):
        super().__init__(index_map, index_dtype)
        if self.map.count >= _U32 - 1:
            raise DeviceError(f"a scatter of {self.map.count} update units: its claims are 32-bit, so at most "
                              f"2^32 - 2 units; split it into smaller ones")
        self.words = self.map.params(self.signed) if self.narrow else None
        self.copy = CopyPlan(copy_map)

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """The claims, then the copy (independent of the claims: they may overlap), then the winners write.
        The claim scratch is the device's (``take`` is not used)."""
        m, out, uploads = self.map, [], []
        if m.count:
            owner = device._owner_scratch(-(-output.nbytes // m.unit),
                                          beside=_sizes(input, indices, output, updates))
            wide = needs_wide(device, m, indices, output, updates, owner)
            params, fresh = wide_params(device, self.wide_words(), indices, output, updates, owner) if wide \
                else device._params(self.words)
            uploads += [params] if fresh else []
            scatter = [Dispatch(kernels.variant(kernel, m.unit, self.index_bytes, wide),
                                (params, indices, output, updates, owner), m.count, wide=wide)
                       for kernel in ("scatter_claim", "scatter_write")]
        else:
            scatter = []
        out += scatter[:1]
        if input is not output and self.copy.map.count:
            copy, copy_uploads = self.copy.dispatch(device, input, output, barrier=not out)
            out.append(copy)
            uploads += copy_uploads
        return out + scatter[1:], uploads


@functools.lru_cache(maxsize=1024)
def make_plan(cls: type, *args) -> Plan:
    """``cls(*args)`` (GatherPlan or ScatterPlan), made once for equal arguments (index maps are values): a
    repeated call skips folding, vectorizing and packing the parameter words."""
    return cls(*args)


def _sizes(*buffers) -> tuple:
    """The sizes of the distinct buffers (None: absent)."""
    return tuple(b.nbytes for b in {id(b): b for b in buffers if b is not None}.values())


class CopyPlan:
    """The strided copy input -> output of a copy map (the gather kernel with tuple size 0)."""

    def __init__(self, copy_map: IndexMap):
        self.map = copy_map.optimized()
        self.narrow = self.map.fits_32_bits()
        self.words = self.map.params(False, word_loop=True) if self.narrow else None
        self.wide_words = None if self.narrow else self.map.params(False, word_loop=True, wide=True)

    def dispatch(self, device: Device, input: Buffer, output: Buffer, barrier: bool = True) -> tuple[Dispatch, list]:
        """(the copy's dispatch, [its parameter buffer] if it must be uploaded first, else [])."""
        wide = needs_wide(device, self.map, input, output)
        if wide:
            if self.wide_words is None:
                self.wide_words = self.map.params(False, word_loop=True, wide=True)
            words = self.wide_words
            params, fresh = wide_params(device, words, None, input, output, None)
        else:
            words = self.words
            params, fresh = device._params(words)
        return (Dispatch(kernels.variant("gather", self.map.unit, 4, wide), (params, device._dummy, input, output),
                         int(words[P_TOTAL]), barrier=barrier, wide=wide), [params] if fresh else [])
