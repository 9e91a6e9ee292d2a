"""mode="raise": the check of a call's index values, on the host for NumPy indices and on the device for
Tensor indices, which are never read back.

A Tensor's indices are checked by one more launch queued beside the call (shaders/index_check.comp: the first
index outside its dimension, in row-major order, and its value), which the device reports at its next
``synchronize()`` or host read (runtime Device.watch). What a caller sees when an index is out of range:

- the call returns its result Tensor (or ``out``) at once, as any queued call does; the kernels resolve the
  bad index as mode="clamp" would, so nothing outside a tensor is read or written;
- the next ``synchronize()`` or host read of that device (``numpy()``, ``item()``, ``np.asarray``, a call
  that returns a NumPy array) raises the IndexError that the host check would have raised (the function's
  name, the index's position and value), before it returns any data;
- reading the failed call's new result Tensor later raises the same IndexError again: it is never handed out
  as valid. An ``out=`` Tensor keeps what the kernels wrote (the clamped gather): the first read after the
  call raises, later reads do not.

Where the device cannot check (an index tensor held in several blocks, or of 2^32 - 1 elements or more, or a
scatter in place, whose data would change before the error is known), the indices are read back and checked
on the host before any GPU work, as for NumPy indices.
"""
from __future__ import annotations

import contextvars
from typing import Callable

import numpy as np

from ..kernels import table as kernels
from .index_map import check_in_range
from ..runtime import Buffer, Device, Dispatch

MAX_COUNT = 2**32 - 2         # the most indices the device checks (index_check.comp: ~position != 0)
MAX_DIMS = 8                  # entries of its dimension list (index tuples of up to 8 components)
C_WORDS = 8 + 2 * MAX_DIMS    # its parameter words: count, dims' entries, signed, pass, slot, 3 unused, dims
# The name a device check's report starts with where it is not the function's own (the ONNX backend's node:
# "Gather node 'n'"), set around the call that queues the check
CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("dmlgpu_index_check_caller", default=None)
UNROLL = 8                    # indices an invocation checks per step (index_check.comp's C_UNROLL)


class IndexCheck:
    """mode="raise"'s check of the indices of a call of ``op``: each index outside [-dim, dim) (a signed type)
    or [0, dim) is an IndexError naming the first one in row-major order. ``dims``: the dimension every index
    addresses (0-d), or the one each position of an index tuple addresses (1-d: the indices' last axis)."""

    def __init__(self, op: str, dims: np.ndarray):
        self.op = op
        self.dims = np.asarray(dims, dtype=np.int64)
        self._words: dict = {}      # (count, index dtype, report slot) -> the two passes' parameter words
        self._steps: dict = {}      # the same -> (the device, the two passes' launches: Launch.steps' form)
        self._reports: dict = {}    # (indices' shape, dtype, caller) -> the report of a check (_report)

    def words(self, count: int, dtype: np.dtype, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """The parameter words of index_check.comp's two passes over ``count`` indices of ``dtype``, reporting
        into ``slot``: made once (an IndexCheck is planned per signature, which fixes the count and dtype)."""
        key = (count, dtype, slot)
        made = self._words.get(key)
        if made is None:
            words = np.zeros(C_WORDS, np.uint32)
            dims = np.atleast_1d(self.dims).astype(np.uint64)
            words[:3] = count, dims.size, dtype.kind == "i"
            words[8:8 + 2 * dims.size] = dims.view(np.uint32)      # little-endian: (low, high) pairs
            fetch = words.copy()
            fetch[3:5] = 1, slot
            made = self._words[key] = (words, fetch)
        return made

    def message(self, pos: tuple, value: int, caller: str | None = None) -> str:
        """The IndexError's message, starting with ``caller`` (default: the function's name)."""
        dim = self.dims if self.dims.ndim == 0 else self.dims[pos[-1]]
        return (f"{caller or self.op}: index {value} at indices position {pos} is out of range for a dimension "
                f"of size {dim} (valid: [-size, size))")

    def __call__(self, values: np.ndarray) -> None:
        """The host check of index values: IndexError for the first one out of range."""
        check_in_range(values, self.dims, self.message)

    def checkable(self, dev: Device, indices) -> bool:
        """True where ``dev`` can check this packed index Tensor (``indices``: its buffer at offset 0) itself;
        elsewhere (module docstring) the caller checks the values on the host."""
        return 0 < indices.size <= MAX_COUNT and not indices.buffer.chunked and self.dims.size <= MAX_DIMS and \
            dev.active_recording() is None

    def on_device(self, dev: Device, indices) -> list[Buffer] | None:
        """Queues the device check of a packed index Tensor (``indices``: its buffer at offset 0) on ``dev``;
        returns the list of the call's result buffers to fill (Device.watch), or None where the device cannot
        check these indices (checkable()): the caller checks them on the host then. The check's two launches
        are made once per index count, dtype and report slot, and queued again on later calls."""
        if not self.checkable(dev, indices):
            return None
        count, dtype = indices.size, indices.dtype
        bound = [indices.buffer]
        with dev.launch() as launch:
            caller = CALLER.get()
            report = self._reports.get((indices.shape, dtype, caller))
            if report is None:
                if len(self._reports) >= 64:
                    self._reports.clear()
                report = self._reports[indices.shape, dtype, caller] = self._report(indices.shape, dtype, caller)
            watch = dev.watch(report)
            bound += (watch.buffer, watch.reports)
            key = (count, dtype, watch.slot)
            made = self._steps.get(key)
            if made is not None and made[0] is dev and dev.max_queued:
                launch.steps(made[1], bound, False, kernels_only=True)  # (the parameters were uploaded when made)
                return watch.results
            kernel = kernels.check_variant(dtype.itemsize)
            words, fetch = self.words(count, dtype, watch.slot)
            (params, fresh), (fetch_params, fetch_fresh) = dev.params(words), dev.params(fetch)
            dispatches = [Dispatch(kernel, (params, *bound), -(-count // UNROLL)),
                          Dispatch(kernel, (fetch_params, *bound), 1)]
            launch.run(dispatches, uploads=[b for b, new in ((params, fresh), (fetch_params, fetch_fresh)) if new],
                       queue=True, host_read=True)
            self._steps[key] = (dev, tuple((d.kernel, dev.workgroups(d.count), True, (d.buffers[0], 0, 1, 2))
                                           for d in dispatches))
        return watch.results

    def _report(self, shape: tuple, dtype: np.dtype, caller: str | None) -> Callable[[np.ndarray], BaseException | None]:
        """The report of the device check's slot (index_check.comp: the accumulated word, the first bad
        position, its value's low and high words): None, or the IndexError."""
        def report(words: np.ndarray) -> BaseException | None:
            if not words[0]:
                return None
            bits = 8 * dtype.itemsize
            value = (int(words[2]) | int(words[3]) << 32) & ((1 << bits) - 1)
            if dtype.kind == "i" and value >> (bits - 1):
                value -= 1 << bits
            pos = tuple(int(c) for c in np.unravel_index(int(words[1]), shape))
            return IndexError(self.message(pos, value, caller))
        return report
