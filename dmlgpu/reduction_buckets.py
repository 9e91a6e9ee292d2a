"""Float add, mul and mean scatter reductions on GPUs by one sort pass, tiles sorted in place and a fold per
bucket of keys: reduction.py's ReducePlan runs these steps in place of its sort's other passes and its fold where
they apply (reduction.py's docstring, "Plan", step 3).

Contract: the bits of the sorted plan (each target's updates folded in row-major order, from the output's value
or, with include_self=False, from its first update; "mean": that sum, then mean_of(sum, count)):

1. one pass of the radix sort (radix_sort.py) over the keys' top bits, key >> ``low``: the bucket. The pass is
   stable, so each bucket's rows are in row-major order, and its places give each bucket's first row.
2. each tile of those rows sorted stably in its place by owner, key & (2^``owner_bits`` - 1) (radix_scatter_match
   .comp's TILE_LOCAL: no histogram or scan), with each owner's first place and count in the tile.
3. an invocation per owner of a bucket (shaders/scatter_bucket.comp) goes through the bucket's tiles and its rows
   in each, in order, folding them into the accumulators of its 2^(low - owner_bits) keys, which it writes once.

So step 2 is a sort pass without its histogram and scan, and step 3 takes the place of the sort's last passes
and of the fold: keys of up to 2 RADIX_BITS + kernels.BUCKET_MAX_E bits take one pass and steps 2 and 3, where
the sorted plan takes two or three passes and its fold. A plan has Buckets (``Buckets.of``) for float add, mul
and mean (the order is part of the result) on rows of one element of at most 4 bytes (the sort carries the
values), default order, keys of more than a digit's bits (fewer keys take the sorted plan's one pass and its
fold) and at most that many; a device runs it (``usable``) where it runs the kernels (Device.supports: subgroup
ballot and arithmetic in compute shaders), its subgroups are at least kernels.MIN_SUBGROUP and divide the
workgroup (as radix_sort.scatter_kernel's), and it is no CPU device (they fold without a sort:
reduction_cpu.py); every operand is in one block.

Off by default (ENABLED): on an H200 (bench/RESULTS.md, issue 20's section of 2026-11-26) it took 0.79x the
sorted plan's GPU time with uniform keys (1M float32 adds onto 65,536 targets: 78.6 against 99.5 us; 16M onto
1M: 811 against 1,041 us), but 3.2x with Zipf-skewed keys (9.1 against 2.8 ms): the hot keys are owned by
neighbouring invocations of one subgroup, each reading its own rows, so every load of the subgroup touches 32
cache lines, all in one multiprocessor. The sorted plan folds each hot key in an invocation of a subgroup of
its own. Skew cannot be known before the call (the host reads no index), so the plan that does not lose on
either stays the default.

Examples
--------
>>> import numpy as np
>>> from dmlgpu import kernels
>>> from dmlgpu.index_map import Layout
>>> from dmlgpu.reduction import ReducePlan
>>> n = 1 << 20                                 # float32 adds onto 2^20 targets: 256 buckets of 4,096 keys
>>> plan = ReducePlan.elements("add", np.float32, np.int64, Layout.packed((n,)), Layout.packed((n,)),
...                            Layout.packed((n,)), 0)
>>> plan.buckets.layout(kernels.FULL_GEOMETRY)            # (low, owner_bits): 16 keys per owner
(12, 8)
"""
from __future__ import annotations

import numpy as np

from . import kernels
from .radix_sort import COUNTS, R_COUNT, R_MASK, R_SCAN_DIGITS, R_SHIFT, R_TILES, RadixSort
from .runtime import Buffer, Device, Dispatch

ENABLED: bool | None = False    # False: never (see above); None: on devices other than CPUs; True: also on CPU
                                # devices (tests)
TILES = kernels.radix_scatter_variant(False, False, True, True)     # step 2's kernel
B_OWNER_BITS, B_FOLD_SHIFT, B_MODE, B_LAST_KEY, B_OWNERS = range(R_SCAN_DIGITS + 1, R_SCAN_DIGITS + 6)  # step 3's


class Buckets:
    """Steps 1-3 of a reduction (``kernel``: its fold kernel, reduction.py's fold_kernel) of ``rows`` rows whose
    keys have ``key_bits`` bits, the largest ``last_key``; ``shift``: target offset = key << shift; ``mode``: the
    fold's MODE_ bits."""

    def __init__(self, kernel: str, rows: int, key_bits: int, last_key: int, shift: int, mode: int):
        self.kernel = kernels.fold_variant(kernel, True, True, True)
        self.rows, self.key_bits, self.last_key, self.shift, self.mode = rows, key_bits, last_key, shift, mode
        self._plans: dict = {}

    @classmethod
    def of(cls, kernel: str, values: bool, rows: int, last_key: int, shift: int, mode: int) -> "Buckets | None":
        """Buckets for a reduction's fold kernel (reduction.py's fold_kernel; the default order) if they apply: float
        add, mul and mean whose values the sort carries (``values``), keys up to ``last_key`` that fit; else None."""
        key_bits = last_key.bit_length()
        if (not values or not kernels.has_tree(kernel.removesuffix("_mean"))
                or not kernels.SMALL_RADIX_BITS < key_bits <= 2 * kernels.RADIX_BITS + kernels.BUCKET_MAX_E):
            return None
        return cls(kernel, rows, key_bits, last_key, shift, mode)

    def layout(self, geometry: kernels.Geometry) -> tuple[int, int] | None:
        """(low: bits of a bucket's keys, owner_bits) in a geometry, or None where the keys do not fit."""
        low = self.key_bits - geometry.radix_bits        # one pass sorts the rest
        owner_bits = min(low, geometry.radix_bits)
        return (low, owner_bits) if 0 < low and low - owner_bits <= kernels.BUCKET_MAX_E else None

    def usable(self, device: Device) -> bool:
        """Whether ``device`` runs them (see the module's docstring)."""
        info, size = device.info, device.geometry.workgroup_size
        return ((ENABLED or (ENABLED is None and info.type != "CPU")) and self.layout(device.geometry) is not None
                and kernels.MIN_SUBGROUP <= info.subgroup_size <= size and size % info.subgroup_size == 0
                and device.supports(TILES) and device.supports(self.kernel))

    def _plan(self, geometry: kernels.Geometry) -> tuple:
        plan = self._plans.get(geometry.suffix)
        if plan is None:
            low, owner_bits = self.layout(geometry) or (0, 0)
            sort = RadixSort(self.rows, self.key_bits, geometry, low)
            tiles = sort.pass_words[0].copy()
            tiles[[R_SHIFT, R_MASK]] = 0, (1 << owner_bits) - 1
            words = np.zeros(B_OWNERS + 1, dtype=np.uint32)
            words[[R_COUNT, R_SHIFT, R_TILES]] = sort.pass_words[0][[R_COUNT, R_SHIFT, R_TILES]]
            words[[B_OWNER_BITS, B_FOLD_SHIFT, B_MODE, B_LAST_KEY, B_OWNERS]] = (
                owner_bits, self.shift, self.mode, self.last_key, 1 << (self.key_bits - low + owner_bits))
            plan = self._plans[geometry.suffix] = (sort, tiles, words)
        return plan

    def sort(self, geometry: kernels.Geometry) -> RadixSort:
        """Step 1's sort (its one pass) in a geometry."""
        return self._plan(geometry)[0]

    def dispatches(self, device: Device, params, keys: Buffer, rows: Buffer, other_keys: Buffer,
                   other_rows: Buffer, output: Buffer, take, counted: bool = False) -> list:
        """Steps 1-3 (keys, rows -> other_keys, other_rows -> keys, rows, then the fold) into ``output``:
        ``params(words)`` gives parameter buffers, ``take(nbytes)`` scratch; ``counted``: the key kernel made the
        pass's histogram (RadixSort.keyed_words)."""
        geometry = device.geometry
        sort, tiles, words = self._plan(geometry)
        out, by_bucket, by_bucket_rows = sort.dispatches(device, params, keys, rows, other_keys, other_rows, False,
                                                         counted)
        assert by_bucket is other_keys and by_bucket_rows is other_rows      # (one pass)
        hist = device.zeroed(COUNTS, sort.hist_bytes)
        digits = take(4 * geometry.radix * sort.tiles)
        return out + [Dispatch(TILES, (params(tiles), other_keys, other_rows, keys, rows, digits),
                               sort.tiles * geometry.workgroup_size),
                      Dispatch(self.kernel, (params(words), keys, rows, hist, digits, output), int(words[B_OWNERS]))]
