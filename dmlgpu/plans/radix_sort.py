"""The stable LSD radix sort that groups a scatter reduction's rows by target (dmlgpu/plans/reduction.py, step 2): the
(key, row) pairs sorted by key, RADIX_BITS per pass, over only the bits the largest key has, so that each
target's rows become a run in row-major order whatever the scheduling. shaders/radix.glsl describes its three
dispatches per pass (histogram, scan, scatter) and their buffers; this module plans them once per signature
and picks the scatter pass a device runs best (scatter_kernel)."""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from ..runtime import Buffer, Device, Dispatch

R_COUNT, R_SHIFT, R_MASK, R_TILES, R_SCAN_DIGITS = range(5)     # a pass's parameter words (radix.glsl)
COUNTS = "radix_counts"     # the totals, counts and places: zeroed scratch (Device.zeroed) whose totals the
                            # sort leaves zero (radix.glsl)
CPU_DIRECT = True           # CPU devices take the scatter pass that stores each pair in its chunk (False: tests)
HIST_GROUPS = 1024          # the most histogram workgroups: each adds its tiles' counts to the totals once
                            # (why: bench/RESULTS.md, "Design notes moved from docstrings")


class RadixSort:
    """The sort of ``pairs`` (key, row) pairs by keys of ``key_bits`` bits in a variant set's geometry
    (kernels.Geometry: its workgroup size and digit bits): ``tiles`` of geometry.radix_tile pairs, ``hist_bytes``
    of totals, counts and places, ``scan_groups`` workgroups of the scan (as many digits each as one step of
    it holds rows of counts: a power of two, at least one), the parameter words of each pass
    (``pass_words``: none for keys of no bits), from bit ``low`` up (the bits below it stay unsorted)."""

    def __init__(self, pairs: int, key_bits: int, geometry: kernels.Geometry, low: int = 0):
        self.geometry = geometry
        self.tiles = tiles = -(-pairs // geometry.radix_tile)
        digits = (min(geometry.radix, 1 << ((geometry.radix_scan_step // tiles).bit_length() - 1))
                  if tiles <= geometry.radix_scan_step else 1)
        self.hist_bytes = 4 * geometry.radix * (2 * tiles + 1)
        self.scan_groups = geometry.radix // digits
        self.pass_words = []
        for b in range(low, key_bits, geometry.radix_bits):
            words = np.zeros(R_SCAN_DIGITS + 1, dtype=np.uint32)
            words[[R_COUNT, R_SHIFT, R_MASK, R_TILES, R_SCAN_DIGITS]] = (
                pairs, b, (1 << min(geometry.radix_bits, key_bits - b)) - 1, tiles, digits)
            self.pass_words.append(words)
        self.hist_invocations = min(self.tiles, HIST_GROUPS) * geometry.workgroup_size   # a histogram's launch
        self._keyed: dict = {}

    def keyed_words(self, words: np.ndarray, at: int) -> np.ndarray:
        """A key kernel's parameter words ``words`` with the first pass's from ``at`` on (reduce_keys.comp's
        FIRST_HIST, which makes the first histogram as it writes the keys; kept for the last words given)."""
        kept = self._keyed.get(at)
        if kept is None or kept[0] is not words:
            out = words.copy()
            out[at:at + self.pass_words[0].size] = self.pass_words[0]
            kept = self._keyed[at] = (words, out)
        return kept[1]

    def dispatches(self, device: Device, params, keys: Buffer, rows: Buffer | None, other_keys: Buffer,
                   other_rows: Buffer | None, few: bool, counted: bool = False) -> tuple[list, Buffer, Buffer | None]:
        """(the dispatches of every pass, the buffers that then hold the sorted keys and rows): the pairs move
        between (keys, rows) and (other_keys, other_rows) each pass. ``params(words)``: their parameter buffer;
        ``few``: the FEW variants (each pair's row after the keys, in the keys' buffer; rows None); ``counted``:
        the key kernel made the first pass's histogram (keyed_words)."""
        size = self.geometry.workgroup_size
        hist = device.zeroed(COUNTS, self.hist_bytes)
        scatter = scatter_kernel(device, few)
        out: list = []
        for words in self.pass_words:
            p = params(words)
            if not counted or words is not self.pass_words[0]:
                out.append(Dispatch("radix_hist", (p, keys, hist), self.hist_invocations))
            out += [Dispatch("radix_scan", (p, hist), self.scan_groups * size),
                    Dispatch(scatter, (p, keys, other_keys, hist) if few else
                             (p, keys, rows, other_keys, other_rows, hist), self.tiles * size)]
            keys, rows, other_keys, other_rows = other_keys, other_rows, keys, rows
        return out, keys, rows


def scatter_kernel(device: Device, few: bool) -> str:
    """The scatter pass for a device (as its profile shows it: Device.supports): the one that ranks by
    subgroup ballots (radix_scatter_match.comp) where the device runs it (its subgroup operations in compute
    shaders, its shared memory) with subgroups of at least kernels.MIN_SUBGROUP invocations that divide the
    workgroup; else the one that sorts each tile in shared memory (radix_scatter.comp's LOCAL) where the device
    runs it; else the one that stores each pair in its chunk, which CPU devices take in any case (CPU_DIRECT).
    (Their times: bench/RESULTS.md, "Design notes moved from docstrings".)"""
    info, size = device.info, device.geometry.workgroup_size
    if CPU_DIRECT and info.type == "CPU":
        return kernels.radix_scatter_variant(few, False)
    match = kernels.radix_scatter_variant(few, False, True)
    if device.supports(match) and kernels.MIN_SUBGROUP <= info.subgroup_size <= size \
            and size % info.subgroup_size == 0:
        return match
    local = kernels.radix_scatter_variant(few, True)
    return local if device.supports(local) else kernels.radix_scatter_variant(few, False)
