"""Scatter reductions on CPU devices (lavapipe) without a sort: reduction.py's ReducePlan runs this fold in place
of its sort and sorted fold on CPU devices (reduction.py's docstring, "Plan", step 6).

Contract: the bits of the sorted plan (each target's updates folded in row-major order, from the output's
value or, with include_self=False, from its first update; "mean": that sum, then mean_of(sum, count)), since
each target (key and slice position) is folded by one invocation that goes through the rows in row-major order:

1. keys: reduce_keys.comp, as the sorted plan's step 1 (each row's key and updates offset, or its value).
2. fold (shaders/scatter_fold_cpu.comp): ``owners`` invocations per slice position each own a contiguous range
   of ``span`` keys and go through the keys in row-major order, in pieces of CPU_FOLD_PIECE rows (one dispatch
   each, after a barrier: llvmpipe ends an invocation's loops after 65535 iterations in all; the output
   carries the fold from one piece to the next), folding the rows they own into the output. include_self=False
   and "mean" count each target's rows in zeroed scratch (one word per key and slice position, its owner's).
3. with counts, a FINISH pass over every key and slice position: "mean" divides (mean_of, once), and every
   count goes back to zero.

Every key is read by each of the ``owners * slice / CPU_LANES`` working SIMD vectors (one per workgroup), so
the plan keeps their number near the host's CPU count (CPU_THREADS: llvmpipe runs a thread per CPU); the
result does not depend on it. A plan has a CpuFold (``CpuFold.of``) unless it has order="tree", takes the atomics
or counts more than COUNTED_KEYS_PER_ROW keys per update row; a device runs it where ``usable`` (a CPU device
binding FOLD_BUFFERS storage buffers, the counts in one block) and every operand is in one block.

Examples
--------
>>> import numpy as np
>>> from dmlgpu.plans.index_map import Layout
>>> from dmlgpu.plans.reduction import ReducePlan
>>> n = 200_000                                 # float32 adds onto 1000 targets: 4 pieces of rows
>>> plan = ReducePlan.elements("add", np.float32, np.int64, Layout.packed((1000,)), Layout.packed((n,)),
...                            Layout.packed((n,)), 0)
>>> plan.cpu.fold, len(plan.cpu.piece_words), plan.cpu.counted
('scatter_reduce_f32_add_cpu_values', 4, False)
"""
from __future__ import annotations

import os

import numpy as np

from ..kernels import table as kernels
from .index_map import P_END, P_TOTAL
from ..runtime import Buffer, Device, Dispatch

# rows per dispatch, a multiple of 32: a block of 32 rows costs an invocation at most 34 loop iterations
CPU_FOLD_PIECE = 57344


def _threads() -> int:
    """llvmpipe's threads: LP_NUM_THREADS where set (0: none beside the caller's), else one per CPU it may use."""
    try:
        return max(1, int(os.environ["LP_NUM_THREADS"]))
    except (KeyError, ValueError):
        affinity = getattr(os, "sched_getaffinity", None)
        return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


CPU_THREADS = _threads()              # the workgroups that the fold aims at
COUNTED_KEYS_PER_ROW = 4              # with counts: keys (targets) per update row at most, else the sorted plan
FOLD_BUFFERS = 6                      # scatter_fold_cpu.comp binds params, keys, output, updates, rows, counts
P_SLICE, P_FOLD_SHIFT, P_FIRST, P_LAST, P_SPAN = range(P_END, P_END + 5)   # scatter_fold_cpu.comp's words
COUNTS = "reduce_counts"              # the zeroed scratch's key (Device.zeroed)
CPU_FOLD = True                       # False: CPU devices run the sorted plan too (tests of that plan)


class CpuFold:
    """The CPU fold of a reduction plan (reduction.ReducePlan): its kernels and parameter words, worked out once.
    ``fold_words``: the sorted fold's words (the slice map, P_MODE), which this fold's own replace."""

    def __init__(self, kernel: str, values: bool, mean: bool, counted: bool, rows: int, slice_count: int,
                 keys: int, shift: int, fold_words: np.ndarray):
        self.fold = kernel + ("_cpu_values" if values else "_cpu")         # kernels/table.py's table names them so
        # the FINISH pass: its float add's, or float32's without MODE_MEAN (it clears the counts only)
        self.finish = kernels.mean_variant(kernel if mean else "scatter_reduce_f32_add") + "_cpu_finish"
        self.counted, self.rows, self.slice_count, self.keys = counted, rows, slice_count, keys
        lanes = kernels.CPU_LANES
        owners = max(1, min(keys, -(-CPU_THREADS * lanes // slice_count)))
        span = -(-keys // owners)
        owners = -(-keys // span)
        self.invocations = owners * slice_count
        self.groups = -(-self.invocations // lanes)
        words = fold_words.copy()
        words[P_END:P_END + 6] = 0
        words[P_TOTAL] = self.invocations
        words[[P_SLICE, P_FOLD_SHIFT, P_SPAN]] = (slice_count, shift, span)
        self.piece_words = []
        for first in range(0, rows, CPU_FOLD_PIECE):
            piece = words.copy()
            piece[[P_FIRST, P_LAST]] = (first, min(rows, first + CPU_FOLD_PIECE))
            self.piece_words.append(piece)
        self.finish_words = words.copy()
        self.finish_words[P_TOTAL] = keys * slice_count

    @classmethod
    def of(cls, kernel: str, values: bool, reduction: str, include_self: bool, rows: int, slice_count: int,
           last_key: int, shift: int, fold_words: np.ndarray) -> "CpuFold | None":
        """The CPU fold of a plan whose largest key is ``last_key``, or None where it has none (see the module
        docstring)."""
        counted = reduction == "mean" or not include_self
        keys = last_key + 1
        if keys * slice_count >= 1 << 32 or (counted and keys > COUNTED_KEYS_PER_ROW * rows + (1 << 16)):
            return None
        return cls(kernel, values, reduction == "mean", counted, rows, slice_count, keys, shift, fold_words)

    def usable(self, device: Device) -> bool:
        """Whether ``device`` runs this fold (a CPU device binding FOLD_BUFFERS storage buffers, the counts in one
        block); the caller checks that the operands are in one block each."""
        return (CPU_FOLD and device.info.type == "CPU" and device.info.max_per_stage_storage_buffers >= FOLD_BUFFERS
                and 4 * self.keys * self.slice_count <= device.whole_max)

    def dispatches(self, device: Device, params, keys: Buffer, rows: Buffer, output: Buffer,
                   updates: Buffer | None) -> list:
        """The fold's dispatches after the keys kernel's (``params(words)``: their parameter buffer)."""
        counts = device.zeroed(COUNTS, 4 * self.keys * self.slice_count if self.counted else 4)
        size = device.geometry.workgroup_size
        bound = (keys, output, updates if updates is not None else rows, rows, counts)
        out = [Dispatch(self.fold, (params(words),) + bound, self.groups * size) for words in self.piece_words]
        if self.counted:
            out.append(Dispatch(self.finish, (params(self.finish_words),) + bound, self.keys * self.slice_count))
        return out
