"""SCATTER_ELEMENTS by lines (shaders/scatter_lines.comp): ScatterLinesPlan, and scatter_elements_plan, which
picks it or plan.ScatterPlan."""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from .index_map import P_END, IndexMap, Layout, elements_lines, elements_map, magic
from .addressing import _chunked
from .plan import CopyPlan, Plan, ScatterPlan
from ..runtime import Buffer, Device, Dispatch


# Parameter words of scatter_lines.comp after the lines' index map (names as there: tests/test_kernels.py)
P_LINE_M, P_LINE_DENSE, P_LINE_INDEX, P_LINE_N, P_LINE_DATA, P_LINE_GROUP, P_LINE_MAGIC, P_LINE_SHIFT = \
    range(P_END, P_END + 8)
SPARSE_LINES = 16     # lines with fewer updates than 1/SPARSE_LINES of their length are sparse (ScatterLinesPlan)
COPY_LINES: bool | None = None   # the lines' own copy (scatter_lines.comp's COPY) where it applies: None on devices
                                 # other than CPUs (lavapipe: 1.5x the copy and the lines pass), True on every
                                 # device (tests), False never


class ScatterLinesPlan(Plan):
    """SCATTER_ELEMENTS in one pass after the copy (shaders/scatter_lines.comp): a workgroup takes whole lines
    along the axis, where alone updates can collide, and settles their claims in shared memory. Needs the
    output's axis to have at most kernels.LINE_CLAIM_WORDS elements and a disjoint output layout
    (scatter_elements_plan checks). ``lines``, ``axis``: index_map.elements_lines(). Where the lines are the
    output's innermost dimension and cover it, in 4-byte elements, with half as many at most, and the output has
    the input's packed layout, GPUs (COPY_LINES) take one pass that copies the input too (scatter_lines.comp's
    COPY)."""

    output_from_input = True

    def __init__(self, lines: IndexMap, axis: tuple, index_dtype, copy_map: IndexMap, fallback: ScatterPlan):
        self.fallback = fallback        # the claim-and-write ScatterPlan, for tensors held in several blocks,
                                        # devices with less shared memory than its claims (none: 16 KiB is Vulkan's
                                        # minimum; a device profile may lower it), and unique updates without COPY
        index_dtype = np.dtype(index_dtype)
        m, n = axis[0], axis[3]
        assert n <= kernels.LINE_CLAIM_WORDS
        group = max(1, min(kernels.LINE_CLAIM_WORDS // n, -(-kernels.LINE_ITEMS * kernels.WORKGROUP_SIZE // m)))
        self.words = np.zeros(P_END + 8, dtype=np.uint32)
        self.words[:P_END] = lines.params(index_dtype.kind == "i")   # DeviceError if over 32 bits
        self.words[P_LINE_M:P_LINE_DATA + 1] = axis
        self.words[P_LINE_GROUP] = group
        if m > 1:
            self.words[P_LINE_MAGIC], self.words[P_LINE_SHIFT] = magic(m)
        self.kernel = kernels.lines_variant(lines.unit, index_dtype.itemsize)
        # few updates per line (under 1/SPARSE_LINES of its length): a workgroup clears more shared claims than
        # it has updates, which a CPU device (lavapipe) pays in full: there, the claim-and-write plan
        self.sparse = m * SPARSE_LINES < n
        self.groups = -(-lines.count // group)
        self.copy = CopyPlan(copy_map)
        # the lines one after the other along the output's innermost dimension, covering an output of the input's
        # packed layout, in 4-byte elements: the lines copy the input themselves (scatter_lines.comp's COPY)
        self.copy_words: np.ndarray | None = None
        if (lines.unit == 4 and n <= kernels.LINE_CLAIM_WORDS // 2 and axis[4] == 1 and self.copy.identity()
                and lines.count * n == copy_map.count and len(lines.dims) <= 1
                and all(d.data == n for d in lines.dims)):
            self.copy_words = self.words.copy()
            self.copy_words[P_LINE_GROUP] = max(1, min(kernels.LINE_CLAIM_WORDS // 2 // n, group))
            self.copy_kernel = kernels.lines_variant(4, index_dtype.itemsize, True)
            self.copy_groups = -(-lines.count // int(self.copy_words[P_LINE_GROUP]))

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        runs = not _chunked(input, indices, output, updates) and \
            device.info.max_compute_shared_memory_size >= kernels.MOST_SHARED_BYTES
        if runs and self.copy_words is not None and input is not output and \
                device.info.gpu_choice(COPY_LINES) and device.supports(self.copy_kernel):
            params, fresh = device.params(self.copy_words)
            return [Dispatch(self.copy_kernel, (params, indices, output, updates, input),
                             self.copy_groups * kernels.WORKGROUP_SIZE)], [params] if fresh else []
        if not runs or self.sparse and device.info.type == "CPU" or self.fallback.unique:
            return self.fallback.dispatches(device, input=input, indices=indices, output=output, updates=updates,
                                            take=take)
        params, fresh = device.params(self.words)
        return self.copy.then(device, input, output, [params] if fresh else [],
                              Dispatch(self.kernel, (params, indices, output, updates),
                                       self.groups * kernels.WORKGROUP_SIZE))


def scatter_elements_plan(data: Layout, indices: Layout, dense: Layout, axis: int, elem: int, index_dtype,
                          copy_map: IndexMap, unique: bool = False, index_mode: str = "clamp") -> Plan:
    """SCATTER_ELEMENTS (reduction "none") of these layouts (as index_map.elements_map takes them): the
    one-pass ScatterLinesPlan where the output's axis fits the shared claims and its layout is disjoint, else
    the claim-and-write ScatterPlan (``unique``: updates that promise distinct targets, ScatterPlan's, which
    the lines plan runs where it does not take its COPY, one pass that beats the copy and the claim-free
    write). ``index_mode`` "drop" (index_map.INDEX_MODE_FLAGS): the claim-and-write plan, whose passes skip an
    update out of range (the lines read their targets themselves)."""
    plan = ScatterPlan(elements_map(data, indices, dense, axis, elem), index_dtype, copy_map, unique, index_mode)
    if data.shape[axis] <= kernels.LINE_CLAIM_WORDS and data.disjoint() and plan.narrow and index_mode != "drop":
        lines = ScatterLinesPlan(*elements_lines(data, indices, dense, axis, elem), index_dtype, copy_map, plan)
        if not unique or lines.copy_words is not None:    # unique: the lines' own copy (COPY) where it applies
            return lines
    return plan
