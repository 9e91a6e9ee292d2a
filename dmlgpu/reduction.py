"""Scatter reductions: SCATTER_ND and SCATTER_ELEMENTS with ``reduction`` "add", "mul", "min" or "max".

Semantics are ONNX's (ScatterND opset 18, ScatterElements opset 18): the output starts as a copy of the
data, and each update is combined into its target with the data's value taking part, duplicates included.
dmlgpu makes the result deterministic on every device, bit for bit: the updates of one target combine
in a fixed order, the row-major order of the updates (that of ``reference.scatter_nd`` with a reduction, a plain
sequential loop). Arithmetic (shaders/arith.glsl):

* integers (int8..int64, uint8..uint64) wrap like NumPy's fixed-width arithmetic;
* float16, float32, float64: IEEE round to nearest even. float16 goes through an exact conversion to
  float32 and back; float64 is computed in software (shaders/softfloat64.glsl), subnormals included;
  float32 uses the device's own add and multiply, which on some GPUs flush subnormal inputs and results
  to zero (the one device-dependent case);
* ml_dtypes' bfloat16, float8_e4m3fn and float8_e5m2 (recognised by dtype name; ml_dtypes is not imported):
  the bits ml_dtypes gives (its float32 operation, then one rounding to nearest even: the exact result
  rounded once), subnormals included on every device (bfloat16 operations with a subnormal operand or
  result are computed in software), overflow to infinity (float8_e4m3fn, which has none: NaN); NaN results
  are the type's quiet NaN with ml_dtypes' sign (shaders/arith.glsl says which);
* min/max: a NaN propagates (like numpy.minimum/maximum; the accumulated value's NaN when both are),
  and -0 counts as less than +0 (IEEE 754-2019 minimum/maximum; NumPy's choice between equal zeros
  depends on the dtype);
* NaN results: a NaN operand comes back quieted; an invalid operation (inf - inf, 0 * inf) gives the
  x86 default NaN (negative, quiet);
* bool: "add" and "max" are logical or, "mul" and "min" logical and (NumPy's bool arithmetic).
  Complex and other dtypes raise TypeError.

Design (everything on the GPU; the host does O(1) work per call: it reads no index and sorts nothing).
The scatter's index map (that of the plain scatter: updates = dense side, output = data side) splits into
the update *rows* (scatter_elements: every element; scatter_nd: each index tuple's slice) and the *slice*
(a row's elements). n rows, m elements per row:

1. keys (shaders/reduce_keys.comp, n iterations): row r's target offset in the output, through
   index_map.glsl (indices read, negative ones wrapped, then clamped, exactly as every other kernel
   does), shifted right by the low bits that every target offset has at zero, is its *key*; its updates
   offset is its *value* (rows of one element of at most 4 bytes: the update itself, so that the sort
   carries the updates and the fold reads them in order). Keys of distinct targets differ; keys of one
   target are equal.
2. a stable LSD radix sort of the (key, value) pairs by key (shaders/radix.glsl), 8 bits per pass, over
   only the bits the largest key has (none for a single target, one pass up to 256 targets, three up to
   2^24). Each pass is reduce-then-scan: per-tile digit counts (digit-major: count[digit][tile]); their
   exclusive prefix sum in that order, by blocks (each block's sum, then each block scanned from the sum of
   the blocks before it), which gives each (digit, tile) its place in the output: all pairs of smaller
   digits and those of its digit in earlier tiles come before; then each tile moves its pairs, in order,
   to that place + the pair's rank among those of its digit earlier in the tile (a bit mask per digit in
   shared memory and population counts). No workgroup waits for another (no forward-progress
   assumption); consecutive passes are ordered by the runtime's compute-to-compute barriers. Stability
   makes each target's rows a run in row-major order, so the order is the same on every device and every
   run, whatever the scheduling.
3. fold (shaders/scatter_reduce.comp, n / 16 * m iterations: chunk of 16 sorted rows, slice position):
   run boundaries are where a sorted key differs from its predecessor's. An invocation folds every run
   whose head (first row) lies in its chunk, the last one to its end even past the chunk: it reads the
   output once, combines the run's updates in order, and writes once. Each run is folded by exactly one
   invocation, and each invocation goes through about 16 rows whatever the run lengths (a single target
   of n rows is one invocation's sequential loop: inherently sequential). No value atomics, no races
   between runs (1- and 2-byte outputs use the race-free sub-word stores of units.glsl). This is how float
   add and mul fold (their order is part of the result); associative reductions fold by levels (below).
   float32 add and
   mul have a variant for GPUs that folds long runs by blocks of 16 (loads together, then the device's
   adds in a row; the same bits: see scatter_reduce.comp), chosen on every device type but CPU, where it
   measures 2x slower on lavapipe (FOLD_BLOCKS overrides the choice).

Associative reductions (min and max of every dtype, bool included; integer add and mul, wrapping) fold long
runs by levels of partials instead (scatter_reduce.comp's PARTIALS variants), so that no invocation goes
through more than about 16 rows or elements, whatever the run lengths: a single target of 16M rows takes
the rows' pass and five more, each a loop of at most 16 steps per invocation.
* level 0 (the rows, chunks of FOLD_CHUNK): runs headed and ending in the chunk are folded and written as
  above. The run that comes into the chunk from an earlier one is folded over its rows in the chunk, without
  the output's value, into *element* c of level 1 (a value per slice position, and the run's key; chunks
  whose first row is a head have no element: key NO_KEY). The last run headed in the chunk, if it goes on
  past the chunk, leaves its accumulator (the output's value combined with its rows in the chunk) as the
  chunk's *head* instead of writing.
* level L >= 1 (the elements of level L - 1's chunks, chunks of PARTIAL_CHUNK): the same over the elements,
  NO_KEY elements belonging to no run; a run headed at element e starts from the head that chunk e - 1 of
  level L - 1 left (the run is headed there and goes on past it), instead of the output's value. Levels go
  on until one has a single chunk, where nothing goes on past its end. Each level is one dispatch; they are
  ordered by the runtime's compute-to-compute barriers (no workgroup waits for another).
So a target's value is combine(...combine(combine(output, rows of its head chunk), element), ..., element):
the output's value first, then every row once, in order, grouped into consecutive partials and those into
consecutive groups. It equals the sequential left fold because combine is associative on these operations
(any bracketing of the same sequence, kept in order, gives the same bits):
* integers: addition and multiplication modulo 2^bits are associative; min and max of a total order (signed
  or unsigned) too; bool is uint8 max (or) and min (and).
* floats, min/max (arith.glsl): combine(a, x) = a if a is a NaN, else x if x is a NaN (its bits unchanged),
  else the smaller (larger) of a and x in the order of order_key(), a total order on the bits that are no
  NaN, -0 < +0 included. Write f for it. If a is a NaN, f(f(a, b), c) = f(a, c) = a = f(a, f(b, c)). If only
  b of a, b is, f(f(a, b), c) = f(b, c) = b and f(a, f(b, c)) = f(a, b) = b. If a and b are not NaNs but c
  is, both give c (f(min(a, b), c) = c; f(a, f(b, c)) = f(a, c) = c). With no NaN, min (max) of a total order
  is associative. So the fold's result is the first NaN of the sequence (the output's value first), its bits
  unchanged, else the least (greatest) value: the same for every grouping that keeps the order, which the
  levels do (a quieting "x | quiet bit" would do as well, since quieting twice is quieting once).
Float add and mul are not associative and keep the sequential fold. The keys must stay below NO_KEY
(2^32 - 1), or the plan keeps the sequential fold. Scratch for the levels, from the caller's take: two
sets (keys, elements, heads) of ceil(n / 16) and ceil(n / 256) entries (elements and heads: one per slice
position, 8 bytes for 8-byte dtypes, else 4), written by alternate levels. On lavapipe (2 threads; 1M
updates onto 64K targets, the fold's dispatches alone) the levels take 1.3x the sequential fold's time for
uniform float32 targets (8.5 -> 11 ms) and 1.0-1.06x for int64, 1.3-1.8x for a single target (4-5 -> 5-8.5
ms: 4 more passes, no parallelism to gain on 2 threads), 0.5-0.7x for Zipf-skewed int64 (50-75 -> 31-41 ms);
a whole call (150-210 ms, the sort most of it) measures the same within noise. They also keep every loop
short there, where a run of more than 65535 rows folded by one invocation comes out wrong.

CPU devices (lavapipe): llvmpipe ends a shader invocation's loops after 65535 iterations in all (one counter
shared by every loop of the invocation, LP_MAX_TGSI_LOOP_ITERATIONS), so a run that float add or mul fold
sequentially in one invocation would stop short past that (the host-grouped fold before issue 11 did). There
the sequential fold runs in ceil(n / CPU_PIECE) passes: pass 0 folds each run's first CPU_PIECE rows and
writes the accumulator to the output; pass k goes on from the output's value with the run's rows
[head + k CPU_PIECE, head + (k + 1) CPU_PIECE) (the accumulator is of the element type: the same bits as one
loop). GPUs fold in one pass.

Order-free reductions: 32-bit integer add (wrapping), min and max (signed and unsigned) with rows of fewer
than 8 elements skip the grouping: shaders/scatter_atomic.comp combines each update into its target with
one atomicAdd/Min/Max. Wrapping addition, min and max are associative and commutative, so every order
gives the same bits as the sequential reference. The atomics cost per element and the sort per row: on
lavapipe (dmlgpu/bench/reductions.py) the atomics take a fifth of the sort's time for single elements, as long
at 8 elements per row, and three times as long at 64.

order="tree" (layer 2; float add, mul and mean): a target's L updates u_0..u_{L-1} (row-major order) combine
in a pairwise tree shaped by L alone: T(u_0) = u_0, T(u_0..u_{L-1}) = combine(T(u_0..u_{H-1}), T(u_H..u_{L-1}))
with H the largest power of two below L (reference.tree), then combine(output's value, T) with include_self.
shaders/scatter_tree.comp replaces the fold: the sorted updates are copied into a scratch array, ceil(log2 n)
passes of strides 1, 2, 4, ... combine, at each run position p that is a multiple of 2 stride, the element
p + stride of its run into p (run heads by binary search in the sorted keys), and a last pass writes each
run head's value into its target. Operands held in several blocks: DeviceError (not supported).

Scratch: two key and two value arrays of n words, and the tile counts (256 words per tile of 4096 pairs,
plus one per block of 4096 counts), and the levels' (above), taken from the device's scratch (Device._take) and given back by the
caller after the run.
Operands held in several blocks (tensors past one binding): the key and fold kernels' ADDR variants reach
them through their blocks' device addresses (shaders/addressing.glsl), the order-free ones the atomics' WIDE
variants. Limits (DeviceError before any GPU work): n * m < 2^32 - 1 and offsets below 2^32 (past that,
the order-free reductions only), 4 n bytes within one block (Device.max_block: maxStorageBufferRange and the
allocation limits).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import kernels
from .errors import DeviceError
from .index_map import P_ADDR, P_END, P_TOTAL, IndexMap, Layout, elements_map, nd_map
from .plan import CopyPlan, Plan, needs_wide, wide_params
from .runtime import Buffer, Device, Dispatch

REDUCTIONS = ("none", "add", "mul", "min", "max")   # layer 1: the descriptors' Reduction member (operators.py)
LAYER2_REDUCTIONS = REDUCTIONS + ("mean",)          # scatter_nd / scatter_elements' reduction=
ORDERS = ("sequential", "tree")                     # their order=
FLOAT_KINDS = "f"     # with NARROW_FLOATS: the dtypes "mean" takes

# Parameter words after an index map's, named as in the shaders (tests/test_kernels.py checks them):
P_KEY_SHIFT = P_END                                              # reduce_keys.comp
P_SLICE, P_FOLD_SHIFT, P_ROWS, P_CHUNK, P_PIECE, P_PASS, P_MODE = range(P_END, P_END + 7)  # scatter_reduce.comp
MODE_EXCLUDE_SELF = 1  # P_MODE's bits: include_self=False ...
MODE_MEAN = 2          # ... and reduction "mean" (float add, then mean_of in arith.glsl)
R_COUNT, R_SHIFT, R_MASK, R_TILES, R_BLOCKS = range(5)          # the radix sort's passes (radix.glsl)
CPU_PIECE = 60000     # CPU devices: rows of a run one pass of the sequential fold folds (llvmpipe's loop
                      # limit; at least FOLD_CHUNK: only the last run headed in a chunk can be longer)
FOLD_CHUNK = 16       # sorted rows per invocation of the fold
ATOMIC_MAX_SLICE = 8  # rows of fewer elements take the atomics where they can (see "Order-free reductions")
FOLD_BLOCKS = None    # fold float32 add/mul runs by blocks: None = on every device but CPUs (lavapipe), or a bool
PARTIAL_CHUNK = 16    # elements per invocation on the levels of partials (see "Associative reductions")
PARTIALS = True       # fold associative reductions by levels of partials (False: one invocation per run, for tests)
NO_KEY = 0xFFFFFFFF   # scatter_reduce.comp's "no element" key: keys stay below it
EXTRA_WORDS = P_ADDR - P_END   # the kernels' own words; ADDR variants' block lists follow them
_BOOL_OPS = {"add": "max", "max": "max", "mul": "min", "min": "min"}
# ml_dtypes' float types by dtype name (recognised without importing ml_dtypes) -> kernels.NARROW_FLOATS kind
NARROW_FLOATS = {"bfloat16": ("bf", 2), "float8_e4m3fn": ("f8e4m3fn", 1), "float8_e5m2": ("f8e5m2", 1)}


def check_reduction(reduction) -> str:
    """``reduction`` if it is one of LAYER2_REDUCTIONS, else ValueError."""
    if not isinstance(reduction, str) or reduction not in LAYER2_REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(map(repr, LAYER2_REDUCTIONS))}, not {reduction!r}")
    return reduction


def check_order(order) -> str:
    """``order`` if it is one of ORDERS, else ValueError."""
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(map(repr, ORDERS))}, not {order!r}")
    return order


def check_include_self(include_self) -> bool:
    """``include_self`` as a bool if it is one (Python's or NumPy's), else TypeError."""
    if not isinstance(include_self, (bool, np.bool_)):
        raise TypeError(f"include_self must be True or False, not {include_self!r}")
    return bool(include_self)


def self_key(include_self):
    """``include_self`` as the planned-call signature takes it (exact strings: "include_self" or
    "exclude_self" for a bool; anything else as it is, which keeps the call out of the caches, so that its
    checks raise)."""
    if isinstance(include_self, (bool, np.bool_)):
        return "include_self" if include_self else "exclude_self"
    return include_self


def is_float(dtype) -> bool:
    """Whether ``dtype`` is one of the float dtypes reductions take (float16/32/64, ml_dtypes' NARROW_FLOATS)."""
    dtype = np.dtype(dtype)
    narrow = NARROW_FLOATS.get(dtype.name)
    return (narrow is not None and narrow[1] == dtype.itemsize) or (dtype.kind in FLOAT_KINDS and
                                                                  dtype.itemsize in (2, 4, 8))


def kernel_for(dtype, reduction: str) -> str:
    """The kernel variant of a reduction on elements of ``dtype`` ("mean": float add's); TypeError for dtypes
    without arithmetic, and for "mean" on other than float dtypes."""
    dtype = np.dtype(dtype)
    if reduction == "mean":
        if not is_float(dtype):
            raise TypeError(f"reduction 'mean' is not supported for dtype {dtype}: it takes float16, float32, "
                            f"float64 and ml_dtypes' bfloat16, float8_e4m3fn and float8_e5m2 (for integers, "
                            f"reduce with 'add' and divide by the counts as your rounding needs)")
        reduction = "add"
    narrow = NARROW_FLOATS.get(dtype.name)
    if narrow is not None and narrow[1] == dtype.itemsize:
        return kernels.reduce_variant(narrow[0], dtype.itemsize * 8, reduction)
    if dtype.kind == "b":
        return kernels.reduce_variant("u", 8, _BOOL_OPS[reduction])
    if (dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8)) or (dtype.kind == "f" and dtype.itemsize in (2, 4, 8)):
        return kernels.reduce_variant(dtype.kind, dtype.itemsize * 8, reduction)
    raise TypeError(f"reduction {reduction!r} is not supported for dtype {dtype}: reductions take bool, "
                    f"int8..int64, uint8..uint64, float16, float32, float64 and ml_dtypes' bfloat16, "
                    f"float8_e4m3fn and float8_e5m2 (only reduction='none' moves any dtype)")


def check(reduction, dtype, include_self=True, order="sequential") -> str:
    """Validates ``reduction`` (ValueError), ``include_self`` (TypeError: not a bool), ``order`` (ValueError)
    and, unless the reduction is "none", that ``dtype`` supports it (TypeError)."""
    reduction = check_reduction(reduction)
    check_include_self(include_self)
    check_order(order)
    if reduction != "none":
        kernel_for(dtype, reduction)
    return reduction


def _trailing_zeros(x: int) -> int:
    return (x & -x).bit_length() - 1


class ReducePlan(Plan):
    """A scatter reduction. ``scatter_map``: the scatter's index map as the plain scatter builds it
    (nd_map / elements_map: dense = updates, data = output, in elements), whose first ``rows`` dimensions
    enumerate the update rows and the others a row's slice; ``copy`` (input -> output, skipped in place) as
    in plan.Plan. Everything that does not depend on the buffers (kernels, parameter words, the number of
    sort passes) is worked out here, once."""

    output_from_input = True

    def __init__(self, reduction: str, dtype, index_dtype, scatter_map: IndexMap, rows: int,
                 copy: IndexMap | None = None, *, include_self: bool = True, order: str = "sequential"):
        assert reduction in LAYER2_REDUCTIONS[1:]
        dtype, index_dtype = np.dtype(dtype), np.dtype(index_dtype)
        self.reduction, self.include_self = reduction, include_self
        self.kernel = kernel_for(dtype, reduction)
        self.tree = order == "tree" and kernels.has_tree(self.kernel)   # other reductions: any order, same bits
        mode = (0 if include_self else MODE_EXCLUDE_SELF) | (MODE_MEAN if reduction == "mean" else 0)
        signed, index_bytes = index_dtype.kind == "i", index_dtype.itemsize
        self.signed = signed
        self.copy = CopyPlan(copy) if copy is not None else None
        full = scatter_map.folded()                       # element-wise arithmetic: no wider units
        self.full_map = full
        self.full_words: Any = full.params(signed) if full.fits_32_bits() else None
        elem = scatter_map.unit
        row_map = IndexMap(scatter_map.dims[:rows], scatter_map.tuple_dims, scatter_map.tuple_stride, elem).folded()
        slice_map = IndexMap(scatter_map.dims[rows:], (), 0, elem).folded()
        self.rows, self.slice_count = row_map.count, slice_map.count
        self.atomic = (kernels.atomic_variant(dtype.kind, reduction, index_bytes)
                       if dtype.kind in "iu" and dtype.itemsize == 4 and self.slice_count < ATOMIC_MAX_SLICE
                       and include_self else None)
        self.atomic_wide: Any = self.atomic and kernels.atomic_variant(dtype.kind, reduction, index_bytes, True)
        if self.full_words is None and self.atomic is None:
            raise DeviceError("this scatter reduction addresses 2^32 or more elements: only the order-free 32-bit "
                              "integer ones (add, min, max over rows of fewer than 8 elements) run at that size; "
                              "split it into smaller ones")
        self.level_words, self.part_words = [], 2 if dtype.itemsize == 8 else 1   # words per element
        if self.atomic is not None:
            return
        # keys: target offsets without the low bits that all of them have at zero
        strides = [d.data for d in row_map.dims if d.size > 1 and d.data] + \
                  [t for size, t in row_map.tuple_dims if size > 1 and t]
        shift = min(map(_trailing_zeros, strides), default=0)
        last = sum((d.size - 1) * d.data for d in row_map.dims) + sum((size - 1) * t for size, t in row_map.tuple_dims)
        self.key_bits = (last >> shift).bit_length()
        # rows of one element of at most 4 bytes: the sort carries the update values themselves, so the fold
        # reads them in order instead of gathering them
        self.values = self.slice_count == 1 and elem <= 4
        self.keys_kernel = kernels.keys_variant(index_bytes, elem if self.values else 0)
        self.keys_words = np.zeros(P_END + EXTRA_WORDS, dtype=np.uint32)
        self.keys_words[:P_END] = row_map.params(signed)
        self.keys_words[P_KEY_SHIFT] = shift
        self.fold_words = np.zeros(P_END + EXTRA_WORDS, dtype=np.uint32)
        self.fold_words[:P_END] = slice_map.params(False)
        self.fold_words[P_TOTAL] = -(-self.rows // FOLD_CHUNK) * self.slice_count   # (chunk, slice position)
        self.fold_words[[P_SLICE, P_FOLD_SHIFT, P_ROWS, P_CHUNK, P_MODE]] = (self.slice_count, shift, self.rows,
                                                                             FOLD_CHUNK, mode)
        # associative reductions (min/max, integer and bool add/mul): levels of partials above the rows, each
        # with PARTIAL_CHUNK elements per invocation, up to the level that has a single chunk
        # order="tree": the pairwise tree's passes (scatter_tree.comp), one iteration per (sorted row, position)
        self.tree_words = self.fold_words.copy()
        self.tree_words[P_TOTAL] = self.rows * self.slice_count
        self.tree_passes = []
        stride = 1
        while stride < self.rows:
            words = self.tree_words.copy()
            words[P_PASS] = stride
            self.tree_passes.append(words)
            stride *= 2
        associative = reduction in ("min", "max") or dtype.kind in "iub"
        if associative and (last >> shift) < NO_KEY:
            count = -(-self.rows // FOLD_CHUNK)
            while count > 1:
                groups = -(-count // PARTIAL_CHUNK)
                words = self.fold_words.copy()
                words[P_TOTAL] = groups * self.slice_count
                words[P_ROWS], words[P_CHUNK] = count, PARTIAL_CHUNK
                self.level_words.append(words)
                count = groups
        self._sorts: dict = {}

    def sort(self, geometry: kernels.Geometry) -> tuple[int, int, list]:
        """The radix sort's (tiles, blocks of counts, parameter words of each pass) in a variant set's
        geometry (kernels.Geometry: its workgroup size and digit bits)."""
        sort = self._sorts.get(geometry.suffix)
        if sort is None:
            tiles = -(-self.rows // geometry.radix_tile)
            blocks = -(-geometry.radix * tiles // geometry.radix_scan_block)
            pass_words = []
            for b in range(0, self.key_bits, geometry.radix_bits):
                words = np.zeros(R_BLOCKS + 1, dtype=np.uint32)
                words[[R_COUNT, R_SHIFT, R_MASK, R_TILES, R_BLOCKS]] = (
                    self.rows, b, (1 << min(geometry.radix_bits, self.key_bits - b)) - 1, tiles, blocks)
                pass_words.append(words)
            sort = self._sorts[geometry.suffix] = (tiles, blocks, pass_words)
        return sort

    @classmethod
    def nd(cls, reduction, dtype, index_dtype, out: Layout, idx: Layout, upd: Layout, copy=None, *,
           include_self: bool = True, order: str = "sequential") -> "ReducePlan":
        """SCATTER_ND: out (the data/output layout), idx, upd: meaningful layouts as nd_map takes them."""
        scatter_map = nd_map(out, idx, upd, 0, np.dtype(dtype).itemsize)
        return cls(reduction, dtype, index_dtype, scatter_map, len(idx.shape) - 1, copy, include_self=include_self,
                   order=order)

    @classmethod
    def elements(cls, reduction, dtype, index_dtype, out: Layout, idx: Layout, upd: Layout, axis: int,
                 copy=None, *, include_self: bool = True, order: str = "sequential") -> "ReducePlan":
        """SCATTER_ELEMENTS along ``axis``: every update is one row of one element."""
        scatter_map = elements_map(out, idx, upd, axis, np.dtype(dtype).itemsize)
        return cls(reduction, dtype, index_dtype, scatter_map, len(idx.shape), copy, include_self=include_self,
                   order=order)

    def piece_words(self, pieces: int) -> list:
        """The sequential fold's parameter words for each of ``pieces`` passes (one pass: unbounded runs)."""
        if pieces == 1:
            return [self.fold_words]
        out = []
        for k in range(pieces):
            words = self.fold_words.copy()
            words[P_PIECE], words[P_PASS] = CPU_PIECE, k
            out.append(words)
        return out

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """(the dispatches, the parameter buffers to upload first) for one execution. ``take(nbytes)``
        gives scratch buffers (Device._take); the caller gives them back once the dispatches have run.
        DeviceError, before any GPU work, if the scratch exceeds one block (Device.max_block). Operands held
        in several blocks take the ADDR variants, whose words are followed by the operands' block lists
        (``slots``: addressing.glsl's order)."""
        out, uploads = [], []
        addr = self.atomic is None and needs_wide(device, self.full_map, input, indices, output, updates)
        if addr and self.tree:
            raise DeviceError("order='tree' is not supported on operands held in several blocks; use "
                              "order='sequential' or split the scatter into smaller ones")

        def params(words, slots=None):
            if addr and slots is not None:
                assert words.size == P_ADDR
                words = np.concatenate([words, device._block_table(slots, 0).view(np.uint32)])
            buf, fresh = device._params(words)
            if fresh:
                uploads.append(buf)
            return buf

        if self.atomic is None:
            geometry = device.geometry
            tiles, scan_blocks, pass_words = self.sort(geometry)
            hist_bytes = 4 * (geometry.radix * tiles + scan_blocks)
            # a device that binds fewer storage buffers than the sort's kernels: their FEW variants (the rows
            # after the keys in one buffer), and no levels of partials (they bind MOST_STORAGE_BUFFERS)
            bindable = device.info.max_per_stage_storage_buffers
            few = bindable < kernels.SORT_BUFFERS
            partials = PARTIALS and self.level_words and bindable >= kernels.MOST_STORAGE_BUFFERS
            if few and addr:
                raise DeviceError(f"this scatter reduction has operands held in several blocks, whose kernels bind "
                                  f"{kernels.SORT_BUFFERS} storage buffers: over {device.info.name}'s "
                                  f"maxPerStageDescriptorStorageBuffers ({bindable}); split it into smaller ones")
            key_bytes = 4 * self.rows * (2 if few else 1)
            device._check_sizes(key_bytes, hist_bytes if pass_words else 0)
            tree_bytes = 4 * self.part_words * self.rows * self.slice_count if self.tree else 0
            scratch = max(key_bytes, hist_bytes if pass_words else 0, tree_bytes,   # bound whole: one block each
                          4 * self.slice_count * self.part_words * int(self.level_words[0][P_ROWS])
                          if partials else 0)
            if scratch > device._whole_max:
                raise DeviceError(f"this scatter reduction sorts {self.rows} update rows: its scratch buffers of "
                                  f"{scratch} bytes exceed one buffer of {device.info.name} ({device._whole_max} "
                                  f"bytes); split it into smaller ones")

        def kernel(name):
            return kernels.addr_variant(name) if addr else name

        operands = (None, output, updates, None)       # the fold kernels' slots
        if self.copy is not None and input is not output and self.copy.map.count:
            copy, copy_uploads = self.copy.dispatch(device, input, output)
            out.append(copy)
            uploads += copy_uploads
        if self.atomic is not None:
            if needs_wide(device, self.full_map, indices, output, updates):
                words = self.full_map.params(self.signed, wide=True)
                p, fresh = wide_params(device, words, indices, output, updates, None)
                uploads += [p] if fresh else []
                out.append(Dispatch(self.atomic_wide, (p, indices, output, updates), int(words[P_TOTAL]), wide=True))
            else:
                out.append(Dispatch(self.atomic, (params(self.full_words), indices, output, updates),
                                    int(self.full_words[P_TOTAL])))
            return out, uploads
        if few:                                   # the keys, then the rows, in one buffer
            keys, rows = take(key_bytes), None
            out.append(Dispatch(kernels.few_variant(self.keys_kernel), (params(self.keys_words), indices, keys)
                                + ((updates,) if self.values else ()), self.rows, barrier=not out))
        else:
            keys, rows = take(key_bytes), take(key_bytes)
            out.append(Dispatch(kernel(self.keys_kernel), (params(self.keys_words, (indices, None, updates, None)),
                                                           indices, keys, rows) + ((updates,) if self.values else ()),
                                self.rows, barrier=not out, wide=addr))   # independent of the copy: may overlap
        if pass_words:
            other_keys, other_rows = take(key_bytes), None if few else take(key_bytes)
            hist = take(hist_bytes)
            size = geometry.workgroup_size
            tile_groups, block_groups = tiles * size, scan_blocks * size
            for words in pass_words:
                p = params(words)
                out.append(Dispatch("radix_hist", (p, keys, hist), tile_groups))
                if scan_blocks > 1:
                    out.append(Dispatch("radix_reduce", (p, hist), block_groups))
                out += [Dispatch("radix_scan", (p, hist), block_groups),
                        Dispatch(kernels.few_variant("radix_scatter"), (p, keys, other_keys, hist), tile_groups)
                        if few else
                        Dispatch("radix_scatter", (p, keys, rows, other_keys, other_rows, hist), tile_groups)]
                keys, rows, other_keys, other_rows = other_keys, other_rows, keys, rows
        if self.tree:          # the tree's elements, its passes, then the runs' heads write
            init, step, final = kernels.tree_variants(self.kernel, self.values, few)
            tree = take(tree_bytes)
            total = self.rows * self.slice_count
            out.append(Dispatch(init, (params(self.tree_words), keys, tree, updates) + (() if few else (rows,)), total))
            out += [Dispatch(step, (params(words), keys, tree), total) for words in self.tree_passes]
            out.append(Dispatch(final, (params(self.tree_words), keys, output, tree), total))
            return out, uploads
        blocks = FOLD_BLOCKS if FOLD_BLOCKS is not None else device.info.type != "CPU"
        if not partials:
            fold = kernels.fold_variant(self.kernel, blocks, self.values)
            fold = kernels.few_variant(fold) if few else kernel(fold)
            pieces = -(-self.rows // CPU_PIECE) if device.info.type == "CPU" and not blocks else 1
            for words in self.piece_words(pieces):
                bound = (params(words, operands), keys, output, updates) + (() if few else (rows,))
                out.append(Dispatch(fold, bound, int(words[P_TOTAL]), wide=addr))
            return out, uploads
        # levels of partials: level 0 (the rows) writes set 0, level L >= 1 reads set (L - 1) % 2 and writes
        # set L % 2 (keys, elements, heads), each set sized for the largest level that writes it
        level0, up = kernels.partials_variants(self.kernel, self.values)
        part_bytes = 4 * self.slice_count * self.part_words
        sizes = [int(self.level_words[0][P_ROWS]),
                 int(self.level_words[1][P_ROWS]) if len(self.level_words) > 1 else 1]
        sets = [(take(4 * c), take(part_bytes * c), take(part_bytes * c)) for c in sizes]
        out.append(Dispatch(kernel(level0), (params(self.fold_words, operands), keys, output, updates, rows) + sets[0],
                            int(self.fold_words[P_TOTAL]), wide=addr))
        for level, words in enumerate(self.level_words, 1):
            k, v, h = sets[(level - 1) % 2]
            out.append(Dispatch(kernel(up), (params(words, operands), k, output, v, h) + sets[level % 2],
                                int(words[P_TOTAL]), wide=addr))
        return out, uploads
