"""Float add, mul and mean scatter reductions on GPUs by one sort pass, tiles sorted in place and a fold per
bucket of keys: reduction.py's ReducePlan runs these steps in place of its sort's other passes and its fold where
they apply (reduction.py's docstring, "Plan", step 3).

Contract: the bits of the sorted plan (each target's updates folded in row-major order, from the output's value
or, with include_self=False, from its first update; "mean": that sum, then mean_of(sum, count)). A key is
j << (R + owner_bits) | owner << R | bucket, R the geometry's radix bits (``layout``):

1. one pass of the radix sort (radix_sort.py) over the keys' low digit: the bucket. The pass is stable, so each
   bucket's rows are in row-major order, and its places give each bucket's first row. Neighbouring keys land in
   different buckets, so that the hot keys of a skewed input (Zipf's are the first ones) are folded by different
   workgroups.
2. each tile of those rows sorted stably in its place by owner, the next ``owner_bits`` bits (radix_scatter_match
   .comp's TILE_LOCAL: no histogram or scan), with each owner's first place and count in the tile.
3. shaders/scatter_bucket.comp, a bucket's owners in one workgroup: an invocation per owner goes through the
   bucket's tiles and its rows in each, in order, folding them into the accumulators of its 2^``extra_bits`` keys,
   which it writes once. A heavy owner (more than HEAVY_ROWS rows and HEAVY_SHARE times the mean, estimated from
   four of its tiles) is left to a whole subgroup instead, which loads its rows together and folds each key's in
   order in one lane (subgroups of at most 32: fold_heavy's ballots are one word).

Where each owner has one key and a bucket's owners are a whole digit (keys of two digits' bits: 32,769 to 65,536
keys at 8-bit digits; RANKED), steps 2 and 3 are one: the fold ranks its bucket's rows by owner, a tile at a
time, in shared memory (tile_rank.glsl, radix_scatter_match.comp's ranking), where each owner's invocation folds
its rows in order; an owner of many rows then needs no subgroup to load them.

So step 2 is a sort pass without its histogram and scan, and step 3 takes the place of the sort's last passes
and of the fold: keys of up to 2 RADIX_BITS + kernels.BUCKET_MAX_E bits take one pass and steps 2 and 3, where
the sorted plan takes two or three passes and its fold. A plan has Buckets (``Buckets.of``) for float add, mul
and mean (the order is part of the result) on rows of one element of at most 4 bytes (the sort carries the
values), default order, keys of more than a digit's bits (fewer keys take the sorted plan's one pass and its
fold) and at most that many; a device runs it (``usable``) where it runs the kernels (Device.supports: subgroup
ballot, arithmetic and shuffle in compute shaders), its subgroups are at least kernels.MIN_SUBGROUP and divide the
workgroup (as radix_sort.scatter_kernel's), and every operand is in one block. By default (ENABLED None) only GPUs
with subgroups of at most 32 take them, for float32 and bfloat16 (DEFAULT_TYPES), with keys of at least two
digits' bits (a whole digit of owners per bucket: 65,536 invocations at 8-bit digits): where they beat the sorted
plan; fewer keys keep too few invocations busy, and float16 and float8 keep the sorted plan (the measurements:
bench/RESULTS.md, "Design notes moved from docstrings", and issue 20's sections). CPU devices fold without a sort (reduction_cpu.py).

Examples
--------
>>> import numpy as np
>>> from dmlgpu.kernels import table as kernels
>>> from dmlgpu.plans.index_map import Layout
>>> from dmlgpu.plans.reduction import ReducePlan
>>> n = 1 << 20                                 # float32 adds onto 2^20 targets: 256 buckets of 4,096 keys
>>> plan = ReducePlan.elements("add", np.float32, np.int64, Layout.packed((n,)), Layout.packed((n,)),
...                            Layout.packed((n,)), 0)
>>> plan.buckets.layout(kernels.FULL_GEOMETRY)     # (owner_bits, extra_bits): 256 owners of 16 keys a bucket
(8, 4)
"""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from .radix_sort import COUNTS, R_COUNT, R_MASK, R_SCAN_DIGITS, R_SHIFT, R_TILES, RadixSort
from ..runtime import Buffer, Device, Dispatch

ENABLED: bool | None = None     # None: where the docstring says; True: every device and type (tests); False: never
DEFAULT_TYPES = ("f32", "bf16")     # element types whose fold measured faster than the sorted plan's, skew or none
TILES = kernels.radix_scatter_variant(False, False, True, True)     # step 2's kernel
B_OWNER_BITS, B_FOLD_SHIFT, B_MODE, B_LAST_KEY, B_OWNERS, B_HEAVY, B_RANKED = range(R_SCAN_DIGITS + 1,
                                                                                     R_SCAN_DIGITS + 8)
HEAVY_ROWS = 128    # step 3: an owner of more rows than this and HEAVY_SHARE times its share is heavy (0: every one,
HEAVY_SHARE = 8     # tests)
RANKED = True       # keys of two digits' bits: steps 2 and 3 in one (False: as others, tests)
MODE_SOURCE = 4     # B_MODE's bit (with reduction.py's MODE_ bits): the fold takes the output's values from the input


class Buckets:
    """Steps 1-3 of a reduction (``kernel``: its fold kernel, reduction.py's fold_kernel) of ``rows`` rows whose
    keys have ``key_bits`` bits, the largest ``last_key``; ``shift``: target offset = key << shift; ``mode``: the
    fold's MODE_ bits; ``covers``: the keys are every offset of the output, whose layout is the input's (shift 0),
    so that the fold can take the output's values from the input and write every key (``dispatches``' source)."""

    def __init__(self, kernel: str, rows: int, key_bits: int, last_key: int, shift: int, mode: int, covers: bool):
        self.kernel = kernels.fold_variant(kernel, True, True, True)
        self.rows, self.key_bits, self.last_key, self.shift, self.mode = rows, key_bits, last_key, shift, mode
        self.covers = covers and shift == 0
        self._plans: dict = {}

    @classmethod
    def of(cls, kernel: str, values: bool, rows: int, last_key: int, shift: int, mode: int,
           covers: bool) -> "Buckets | None":
        """Buckets for a reduction's fold kernel (reduction.py's fold_kernel; the default order) if they apply: float
        add, mul and mean whose values the sort carries (``values``), keys up to ``last_key`` that fit; else None."""
        key_bits = last_key.bit_length()
        if (not values or not kernels.has_tree(kernel.removesuffix("_mean"))
                or not kernels.SMALL_RADIX_BITS < key_bits <= 2 * kernels.RADIX_BITS + kernels.BUCKET_MAX_E):
            return None
        return cls(kernel, rows, key_bits, last_key, shift, mode, covers)

    def layout(self, geometry: kernels.Geometry) -> tuple[int, int] | None:
        """(owner_bits, extra_bits) in a geometry, or None where the keys do not fit: a key is
        j << (R + owner_bits) | owner << R | bucket, with R the geometry's radix bits and j < 2^extra_bits."""
        rest = self.key_bits - geometry.radix_bits        # the bucket is the low digit: one pass sorts by it
        owner_bits = min(rest, geometry.radix_bits)
        return (owner_bits, rest - owner_bits) if 0 < rest and rest - owner_bits <= kernels.BUCKET_MAX_E else None

    def usable(self, device: Device) -> bool:
        """Whether ``device`` runs them (see the module's docstring)."""
        info, size = device.info, device.geometry.workgroup_size
        layout = self.layout(device.geometry)
        default = (info.type != "CPU" and info.subgroup_size <= 32     # (where heavy owners take a subgroup)
                   and self.kernel.split("_")[2] in DEFAULT_TYPES and layout is not None
                   and layout[0] == device.geometry.radix_bits)       # (a digit's owners a bucket)
        return ((ENABLED or (ENABLED is None and default)) and layout is not None
                and kernels.MIN_SUBGROUP <= info.subgroup_size <= size and size % info.subgroup_size == 0
                and device.supports(TILES) and device.supports(self.kernel))

    def _plan(self, geometry: kernels.Geometry) -> tuple:
        plan = self._plans.get((geometry.suffix, HEAVY_ROWS, RANKED))
        if plan is None:
            owner_bits, extra_bits = self.layout(geometry) or (0, 0)
            sort = RadixSort(self.rows, geometry.radix_bits, geometry)
            tiles = sort.pass_words[0].copy()
            tiles[[R_SHIFT, R_MASK]] = geometry.radix_bits, (1 << owner_bits) - 1
            ranked = RANKED and (owner_bits, extra_bits) == (geometry.radix_bits, 0)
            words = np.zeros(B_RANKED + 1, dtype=np.uint32)
            words[[R_COUNT, R_TILES]] = sort.pass_words[0][[R_COUNT, R_TILES]]
            owners = geometry.radix << owner_bits
            heavy = HEAVY_ROWS and max(HEAVY_ROWS, HEAVY_SHARE * -(-self.rows // owners))
            words[[R_SHIFT, B_OWNER_BITS, B_FOLD_SHIFT, B_MODE, B_LAST_KEY, B_OWNERS, B_HEAVY, B_RANKED]] = (
                extra_bits, owner_bits, self.shift, self.mode, self.last_key, owners, heavy, ranked)
            from_source = words.copy()
            from_source[B_MODE] |= MODE_SOURCE
            plan = self._plans[geometry.suffix, HEAVY_ROWS, RANKED] = (sort, tiles, words, from_source)
        return plan

    def sort(self, geometry: kernels.Geometry) -> RadixSort:
        """Step 1's sort (its one pass) in a geometry."""
        return self._plan(geometry)[0]

    def dispatches(self, device: Device, params, keys: Buffer, rows: Buffer, other_keys: Buffer,
                   other_rows: Buffer, output: Buffer, take, counted: bool = False,
                   source: Buffer | None = None) -> list:
        """Steps 1-3 (keys, rows -> other_keys, other_rows -> keys, rows, then the fold; ranked: step 1, then the
        fold of other_keys, other_rows) into ``output``:
        ``params(words)`` gives parameter buffers, ``take(nbytes)`` scratch; ``counted``: the key kernel made the
        pass's histogram (RadixSort.keyed_words); ``source`` (where ``covers``): the input, whose values the fold
        takes as the output's (MODE_SOURCE), writing every key: the output is not copied from it before."""
        assert source is None or self.covers
        geometry = device.geometry
        sort, tiles, words, from_source = self._plan(geometry)
        out, by_bucket, by_bucket_rows = sort.dispatches(device, params, keys, rows, other_keys, other_rows, False,
                                                         counted)
        assert by_bucket is other_keys and by_bucket_rows is other_rows      # (one pass)
        hist = device.zeroed(COUNTS, sort.hist_bytes)
        digits = hist           # (bound, not read, where the fold ranks the tiles itself)
        if not words[B_RANKED]:     # step 2
            digits = take(4 * geometry.radix * sort.tiles)
            out.append(Dispatch(TILES, (params(tiles), other_keys, other_rows, keys, rows, digits),
                                sort.tiles * geometry.workgroup_size))
            other_keys, other_rows = keys, rows
        return out + [Dispatch(self.kernel, (params(words if source is None else from_source), other_keys, other_rows,
                                             hist, digits, output, device.dummy if source is None else source),
                               int(words[B_OWNERS]))]
