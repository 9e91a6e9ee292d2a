"""Scatter reductions "add" and "mean" of floats with ``order="fixed-point"``: sums in 64-bit integers, whose
bits do not depend on the order of the updates, the device or the schedule. reduction.py's ReducePlan runs these
passes in place of its keys, sort and fold (reduction.py's docstring, "Plan", step 8).

Contract (``reference.fixed_sum`` is the same algorithm in Python integers). A target's terms are its updates,
and its own value with include_self; targets without updates keep their value. With p the element type's
fraction bits (float32 23, float16 10, bfloat16 7, float8_e4m3fn 3, float8_e5m2 2) and n the call's update
elements (every update row's elements, all targets together):

* F = 63 - (p + 1) - H fraction bits below a target's largest exponent, H = bit_length(n + 1): headroom for
  n + 1 terms, so no sum of a target's terms reaches 2^63 (``fraction_bits``);
* E, the target's scale exponent: the largest of max(exponent field, 1) over its finite terms;
* each finite term, significand sig (hidden bit included) and exponent field e, is the integer
  round(sig * 2^(max(e, 1) - E + F)), to nearest even, negated for a negative term; the integers are summed
  exactly (64-bit two's complement, no overflow: |each| < 2^(p + 1 + F));
* the sum s is rounded once to nearest even in the element type: s * 2^(E - bias - p - F) (subnormals;
  overflow to infinity, float8_e4m3fn to NaN); an exact zero is -0 if every term is -0, else +0;
* a NaN term, or both +inf and -inf: the negative quiet NaN (float8_e4m3fn 0xFF); else an infinite term: that
  infinity;
* "mean": mean_of (arith.glsl, reference.mean_of) of that sum by the count of terms: the rule of every order.

Error bound. Each term is exact or off by at most half a unit, 2^(E - bias - p - F - 1) = 2^(E - bias + H - 63)
(p + F = 62 - H), that is 2^(H - 63) times the target's largest term (>= 2^(E - bias) when normal). So with k
terms (k < 2^H): |result - exact sum| <= k * 2^(H - 63) * |largest term| + half an ulp of the result (the one
rounding to the type), whatever the type; k * 2^(H - 63) <= 2^(2H - 63). E.g. 1M updates (H = 21): 2^-42 of the
largest term per term, below float32's own ulp of it up to k = 2^19 terms on one target. Row-major's sum of k
terms rounds k - 1 times, each up to half an ulp of its partial sum.

Plan (every device; zeroed scratch slots per output offset of the span, Device.zeroed, left zero):
with 64-bit integer atomics (``kernels.fixed_variants``: shaderInt64, shaderBufferInt64Atomics, subgroup
ballot and arithmetic, 6 storage buffers), three passes: over the update elements, the exponents and specials
(atomicMax; with include_self each update maxes its target's own value in too), then the 64-bit atomic adds (in
both, the updates of a subgroup that share its first one's target combine first, exactly, and take one atomic:
skewed keys), then one write per target: over the output's span where it is at most BY_SPAN times the update
elements (a read per offset, no atomic), else over the updates by the invocation that takes its slot back to
zero. Elsewhere (the
``no-int64`` and ``minimum`` profiles, 4 storage buffers, no subgroup arithmetic) the FEW variants compute the
same integers with 32-bit atomics on the low and high words (the low word's carries counted exactly), in four
passes (the targets' own values in a pass of their own), without the subgroups' combining. Both
give the same bits (tests/test_reductions_fixed.py). Operands held in several blocks: DeviceError.

Examples
--------
>>> import numpy as np
>>> from dmlgpu.plans.index_map import Layout
>>> from dmlgpu.plans.reduction import ReducePlan
>>> plan = ReducePlan.elements("add", np.float32, np.int32, Layout.packed((10,)), Layout.packed((50,)),
...                            Layout.packed((50,)), 0, order="fixed-point")
>>> plan.fixed.kernels       # (10 targets, 50 updates: the last pass goes over the output's span)
('scatter_fixed_f32_s1_i32', 'scatter_fixed_f32_s2_i32', 'scatter_fixed_f32_s4')
>>> plan.fixed.fraction
33
"""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from ..errors import DeviceError
from .index_map import P_END, P_TOTAL
from ..runtime import Buffer, Device, Dispatch

SUMS, SLOTS, FEW_SLOTS = "fixed_sums", "fixed_slots", "fixed_few_slots"    # Device.zeroed keys
INT64 = True                   # False: the FEW variants on every device (tests)
BY_SPAN = 1.0                  # the last pass goes over the output's span where it is at most this many times the
                               # update elements (a read per offset), else over the updates (an atomic per update)
MODE_EXCLUDE_SELF, MODE_MEAN = 1, 2     # scatter_fixed.comp's P_FX_MODE bits (reduction.py's MODE_*)
# fraction bits p of the element types that take it, by kernel stem's type
FRACTION_BITS = {"f16": 10, "f32": 23, "bf16": 7, "f8e4m3fn": 3, "f8e5m2": 2}


def fraction_bits(p: int, elements: int) -> int:
    """F: the fixed-point fraction bits below a target's largest exponent for a type of ``p`` fraction bits and a
    call of ``elements`` update elements."""
    return 63 - (p + 1) - (elements + 1).bit_length()


class FixedPoint:
    """The passes of a fixed-point add or mean: ``kernels`` (64-bit atomics) and ``few_kernels`` (32-bit words),
    each the passes that run (kernels.fixed_variants' stems: the last pass over the updates, or over the output's
    span where that is at most the update elements), with their parameter words (the scatter's index map over the
    update elements, then the output's span, the mode and the fraction bits; ``span_words``: over the span)."""

    def __init__(self, stems: tuple, few_stems: tuple, map_words: np.ndarray, span: int, mode: int, fraction: int):
        by_span = span <= BY_SPAN * int(map_words[P_TOTAL])
        pick = (lambda s: tuple(k for k in s[:3] if k is not None) + ((s[4],) if by_span else (s[3],)))
        self.kernels, self.few_kernels = pick(stems), pick(few_stems)
        self.words = np.zeros(P_END + 3, dtype=np.uint32)
        self.words[:P_END] = map_words[:P_END]
        self.words[P_END:] = (span, mode, fraction)
        self.span_words = self.words.copy() if by_span else self.words
        self.span_words[P_TOTAL] = span if by_span else self.words[P_TOTAL]
        self.span, self.mode, self.fraction = span, mode, fraction

    @classmethod
    def of(cls, kernel: str, index_bytes: int, map_words, elements: int, span: int,
           include_self: bool, mean: bool) -> "FixedPoint | None":
        """The passes for a reduction kernel (reduction_args.kernel_for: float add of at most 4 bytes) whose scatter's
        index map (32-bit words) has ``elements`` update elements and reaches output offsets up to ``span`` - 1;
        None for other kernels."""
        stems = kernels.fixed_variants(kernel, index_bytes)
        few = kernels.fixed_variants(kernel, index_bytes, True)
        if stems is None or few is None or map_words is None:
            return None
        p = FRACTION_BITS[kernel.removeprefix("scatter_reduce_").removesuffix("_add")]
        mode = (0 if include_self else MODE_EXCLUDE_SELF) | (MODE_MEAN if mean else 0)
        return cls(stems, few, map_words, span, mode, fraction_bits(p, elements))

    def family(self, device: Device) -> tuple:
        """The stems ``device`` runs: the 64-bit ones where it can (and INT64), else the FEW ones; DeviceError
        where it runs neither or the slots exceed one buffer."""
        slots = 4 * self.span * (5 if self.mode & MODE_MEAN else 4)
        if INT64 and all(map(device.supports, self.kernels)) and slots - 8 * self.span <= device.whole_max:
            return self.kernels   # (its slots in two buffers: 8 bytes per offset, and 8 or 12)
        if not all(map(device.supports, self.few_kernels)):
            raise DeviceError(f"order='fixed-point' needs kernels that {device.info.name} cannot run "
                              f"({', '.join(self.few_kernels)}); use order='row-major'")
        if slots > device.whole_max:
            raise DeviceError(f"order='fixed-point' needs {slots} bytes of scratch in one buffer for this scatter's "
                              f"output span, over {device.info.name}'s {device.whole_max}; split it into smaller "
                              f"ones or use order='row-major'")
        return self.few_kernels

    def dispatches(self, device: Device, params, indices: Buffer, output: Buffer, updates: Buffer | None) -> list:
        """The passes (after the copy of the input into the output, if any): ``params(words)`` gives parameter
        buffers; DeviceError (``family``) before any GPU work."""
        stems = self.family(device)
        p, last = params(self.words), params(self.span_words)
        count, last_count = int(self.words[P_TOTAL]), int(self.span_words[P_TOTAL])
        meta = 4 * self.span * (3 if self.mode & MODE_MEAN else 2)
        if stems is self.kernels:
            first, add, write = stems
            bound = (indices, output, updates, device.zeroed(SUMS, 8 * self.span), device.zeroed(SLOTS, meta))
            return [Dispatch(first, (p,) + bound, count), Dispatch(add, (p,) + bound, count),
                    Dispatch(write, (last,) + bound, last_count)]
        slots = device.zeroed(FEW_SLOTS, 8 * self.span + meta)
        own, first, add, write = stems
        out = [Dispatch(own, (p, indices, output, slots), count)] if not self.mode & MODE_EXCLUDE_SELF else []
        return out + [Dispatch(first, (p, indices, updates, slots), count),
                      Dispatch(add, (p, indices, updates, slots), count),
                      Dispatch(write, (last, indices, output, slots), last_count)]
