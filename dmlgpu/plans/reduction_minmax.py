"""Scatter reductions min and max without a sort, by 64-bit atomics: reduction.py's ReducePlan runs these three
passes in place of its keys, sort and fold where they apply (reduction.py's docstring, "Plan", step 7).

Contract: the bits of the sequential fold. For min and max that fold's result (shaders/arith.glsl) is the first
NaN of the sequence (the output's value first, its bits unchanged), else the least (greatest) value in
order_key's total order (-0 < +0): it depends on the order of the updates only through "first", which a 64-bit
slot per output element settles, compared as an integer, the least winning (shaders/scatter_minmax.comp):
tier 0, the output's own NaN; tier 1, a NaN update, by its row-major iteration number; tier 2, a value, by its
order key (inverted for max). So every order of the atomics gives the same slot, and the slot names the result.

1. every output element's slot from its value (after the copy of the input; include_self=False: no value);
2. each update element combines its tier and key into its target's slot (atomicMin, 64-bit);
3. every output element whose slot changed takes the value it names (race-free sub-word stores).

A plan has a MinMax (``MinMax.of``) for min and max on elements of at most 4 bytes (bool: the uint8 kernels)
where the output's span (its offsets from 0 to the last one the scatter reaches) is at most SPAN times the
updates' elements (two passes over the span, one over the updates; the slots are 8 bytes per offset of the
span); a device runs it where ``usable``: where it runs the three kernels (Device.supports: shaderInt64 and
shaderBufferInt64Atomics, subgroup ballot and arithmetic in compute shaders, as pass 2 combines the updates of
a subgroup that share its first one's target before their atomic, 5 storage buffers), every operand in one
block (its speed against the sort and fold: bench/RESULTS.md, "Design notes moved from docstrings").

Examples
--------
>>> import numpy as np
>>> from dmlgpu.plans.index_map import Layout
>>> from dmlgpu.plans.reduction import ReducePlan
>>> plan = ReducePlan.elements("max", np.float16, np.int64, Layout.packed((1000,)), Layout.packed((5000,)),
...                            Layout.packed((5000,)), 0)
>>> plan.minmax.kernels
('scatter_minmax_f16_max_s1', 'scatter_minmax_f16_max_s2_i64', 'scatter_minmax_f16_max_s3_i64')
"""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from .index_map import P_END, P_TOTAL
from ..runtime import Buffer, Device, Dispatch

SPAN = 4          # where the output's span is at most this many times the updates' elements
ENABLED = True    # False: the other plans (for tests)


class MinMax:
    """The three passes of a min or max reduction (``kernels``: their variants), with their parameter words:
    ``span_words`` (passes 1 and 3: the output's span) and ``words`` (pass 2: the scatter's index map over the
    update elements), both with the reduction's mode word (reduction.MODE_EXCLUDE_SELF) after the map's."""

    def __init__(self, kernels_: tuple[str, str, str], map_words: np.ndarray, span: int, mode: int):
        self.kernels = kernels_
        self.words = np.zeros(P_END + 1, dtype=np.uint32)
        self.words[:P_END] = map_words[:P_END]
        self.words[P_END] = mode
        self.span_words = self.words.copy()
        self.span_words[P_TOTAL] = span
        self.span = span

    @classmethod
    def of(cls, kernel: str, index_bytes: int, map_words, elements: int, span: int, mode: int) -> "MinMax | None":
        """The passes for a reduction kernel (reduction_args.kernel_for) whose scatter's index map (32-bit words,
        or None) has ``elements`` update elements and reaches output offsets up to ``span`` - 1; None where
        they do not apply."""
        stems = kernels.minmax_variants(kernel, index_bytes)
        if stems is None or map_words is None or span > SPAN * elements:
            return None
        return cls(stems, map_words, span, mode)

    def usable(self, device: Device) -> bool:
        """Whether ``device`` runs them (Device.supports each, and the slots fit one block; tests may turn them
        off)."""
        return ENABLED and all(map(device.supports, self.kernels)) and 8 * self.span <= device.whole_max

    def dispatches(self, params, take, indices: Buffer, output: Buffer, updates: Buffer | None) -> list:
        """The three dispatches (after the copy of the input into the output, if any): ``params(words)`` gives
        parameter buffers, ``take(nbytes)`` the slots' scratch."""
        bound = (indices, output, updates, take(8 * self.span))
        first, combine, last = self.kernels
        return [Dispatch(first, (params(self.span_words),) + bound, self.span),
                Dispatch(combine, (params(self.words),) + bound, int(self.words[P_TOTAL])),
                Dispatch(last, (params(self.span_words),) + bound, self.span)]
