"""Scatter reductions: SCATTER_ND and SCATTER_ELEMENTS with a ``reduction``.

Contract (the arguments' names and checks: reduction_args.py). Layer 1 (the descriptors' Reduction member:
REDUCTIONS) has ONNX's semantics (ScatterND and ScatterElements, opset 18): "add", "mul", "min", "max"; the output starts as a copy of the data and each update is combined into its
target with the data's value taking part, duplicates included. Layer 2 (scatter_nd, scatter_elements:
LAYER2_REDUCTIONS) adds PyTorch's scatter_reduce options: ``include_self=False`` (a target with updates starts from
its first update instead of its own value; a target without keeps its value) and "mean" (float dtypes: the "add" sum,
then one division by the target's count of updates, + 1 for its own value with include_self). Order: the updates of
one target combine in the row-major order of the updates, after the output's value (include_self): the sequential left
fold of ``reference.scatter_nd`` / ``scatter_elements``. With ``order="tree"`` (layer 2) float add, mul and mean
combine a target's L updates u_0..u_{L-1} (row-major order) in a pairwise tree shaped by L alone: T(u_0) = u_0,
T(u_0..u_{L-1}) = combine(T(u_0..u_{H-1}), T(u_H..u_{L-1})) with H the largest power of two below L
(``reference.tree``), then combine(output's value, T) with include_self (T alone without); other reductions give the
same bits in any order and ignore it. With ``order="fixed-point"`` (layer 2) float add and mean of at most 4
bytes sum each target's terms as 64-bit fixed-point integers, rounded once (dmlgpu/plans/reduction_fixed.py has the
contract and its error bound; ``reference.fixed_sum``); float mul and float64 refuse it (ValueError), other
reductions ignore it. The result is the same bits on every device and every run. Arithmetic
(shaders/arith.glsl):

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
* NaN results (float16/32/64): a NaN operand comes back quieted; an invalid operation (inf - inf, 0 * inf)
  gives the x86 default NaN (negative, quiet);
* bool: "add" and "max" are logical or, "mul" and "min" logical and (NumPy's bool arithmetic);
* "mean": the sum divided by the count rounded once to nearest even in the dtype (an exact long division
  in integers: arith.glsl's mean_of; reference.mean_of); a NaN, infinite or zero sum and a count of 1 give
  the sum itself. Integer and bool data raise TypeError (no rounding rule would fit every use: reduce with
  "add" and divide). Complex and other dtypes raise TypeError for every reduction.

Plan (everything on the GPU; the host does O(1) work per call: it reads no index and sorts nothing). The
update *rows* (scatter_elements: every element; scatter_nd: each index tuple's slice) of n rows of m elements:

1. keys (shaders/reduce_keys.comp): each row's target offset (index_map.glsl: indices wrapped, then clamped,
   as every kernel does) without the low bits that every target offset has at zero, and its updates offset
   (rows of one element of at most 4 bytes: the update itself, which the sort then carries).
2. a stable LSD radix sort of the (key, row) pairs by key (dmlgpu/plans/radix_sort.py, shaders/radix*.comp), over
   only the bits the largest key has: each target's rows become a run in row-major order, whatever the
   scheduling. With operands in one block and SORT_BUFFERS bound, step 1 makes the first pass's histogram too.
3. fold (shaders/scatter_reduce.comp, chunks of FOLD_CHUNK sorted rows per invocation): each run is folded by
   exactly one invocation in order, from the output's value (or its first row without include_self),
   and written once (no value atomics; 1- and 2-byte outputs use units.glsl's race-free sub-word stores).
   Float add and mul (their order is part of the result) fold so; on GPUs those of at most 4 bytes fold long
   runs by blocks (FOLD_BLOCKS: the same bits; a block's loads first). CPU devices fold in passes of
   CPU_PIECE rows of a run (llvmpipe ends an invocation's loops after 65535 iterations in all).
   Associative reductions (min and max of every dtype, integer and bool add and mul) fold long runs by
   levels of partials instead (PARTIALS): level 0 folds the rows of each chunk, each level above folds
   PARTIAL_CHUNK elements of the one below, until one level has a single chunk; every row is combined once,
   in order, grouped into consecutive partials, which gives the sequential fold's bits because combine is
   associative there (integers modulo 2^bits; min/max return the first NaN of the sequence, else the
   least/greatest value of a total order). GPUs fold float32 and bfloat16 add, mul and mean of one-element rows
   onto many targets per bucket of keys after one pass instead, where reduction_buckets.py says (its steps 1-3;
   where the keys are every output offset, its fold takes the output's values from the data: no copy).
4. Order-free reductions: 32-bit integer add (wrapping), min and max with include_self, on rows of fewer
   than ATOMIC_MAX_SLICE elements, skip the grouping: shaders/scatter_atomic.comp combines each update into
   its target with one atomic (every order gives the same bits).
5. order="tree" (float add, mul, mean; shaders/scatter_tree.comp) replaces step 3: the sorted updates are copied
   into a scratch array (one element per sorted row and slice position), ceil(log2 n) passes of strides 1, 2, 4,
   ... combine, at each run position p that is a multiple of 2 stride, the element p + stride of its run into p
   (each run's head found by binary search in the sorted keys), and a last pass writes each run head's value
   into its target. Operands held in several blocks: DeviceError (not supported).
6. CPU devices (DeviceInfo.type "CPU": lavapipe) replace steps 2 and 3, for the default order, with a fold without
   a sort (dmlgpu/plans/reduction_cpu.py, shaders/scatter_fold_cpu.comp): a few invocations each own a range of keys and
   go through the keys of step 1 in row-major order, folding their own rows into the output (the same bits);
   include_self=False and "mean" count in zeroed scratch (Device.zeroed), left zero. Where it does not apply
   (operands in several blocks, fewer storage buffers, too many keys to count), the steps above run there too.
7. min and max of elements of at most 4 bytes (other than those of step 4), where the output's span is at most a
   few times the updates and the device has 64-bit atomics, replace steps 1-3 on every device: a 64-bit slot per
   output element that the updates combine into by atomicMin, ordered so that the least slot names the sequential
   fold's result (dmlgpu/plans/reduction_minmax.py, shaders/scatter_minmax.comp).

8. order="fixed-point" replaces steps 1-3 on every device: three passes of atomics over the updates into zeroed
   slots per output offset of the span (dmlgpu/plans/reduction_fixed.py, shaders/scatter_fixed.comp), four on devices
   without 64-bit integer atomics. Operands held in several blocks: DeviceError (not supported).

9. mode="drop" (layer 2): the reduction runs as above on a scratch output of one more slice along the first indexed
   dimension, into which the updates out of range fold (their keys and offsets those of index dim there: FLAG_SPARE),
   between a copy of the input into the scratch and a copy of the scratch but that slice into the output (Dropping).

Scratch comes from the device (Device.take_buffer) and goes back after the run: two key and two row arrays of n words
and the levels' partials (step 7: its slots); the sort's counts are zeroed scratch (Device.zeroed:
radix_sort.COUNTS). Operands held in several blocks take the key and fold kernels' ADDR variants (the atomics:
WIDE). Limits (DeviceError before any GPU work): n * m < 2^32 - 1 and offsets below 2^32 (past that, the
order-free reductions only), 4 n bytes within one block. The design notes, measurements and history:
bench/RESULTS.md, "Reduction design notes (moved from reduction.py)".
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..kernels import table as kernels
from . import radix_sort
from ..errors import DeviceError
from .index_map import P_ADDR, P_END, P_TOTAL, Dim, IndexMap, Layout, copy_map, elements_map, nd_map, packed_strides
from .addressing import needs_wide, wide_params
from .plan import CopyPlan, Plan
from .radix_sort import RadixSort
from .reduction_args import LAYER2_REDUCTIONS, kernel_for
from .reduction_buckets import Buckets
from .reduction_cpu import CpuFold
from .reduction_fixed import FixedPoint
from .reduction_minmax import MinMax
from ..runtime import Buffer, Device, Dispatch

# Parameter words after an index map's, named as in the shaders (tests/test_kernels.py checks them):
P_KEY_SHIFT = P_END                                              # reduce_keys.comp
P_SLICE, P_FOLD_SHIFT, P_ROWS, P_CHUNK, P_PIECE, P_PASS, P_MODE = range(P_END, P_END + 7)  # scatter_reduce.comp
MODE_EXCLUDE_SELF = 1  # P_MODE's bits: include_self=False ...
MODE_MEAN = 2          # ... and reduction "mean" (float add, then mean_of in arith.glsl)
CPU_PIECE = 60000     # CPU devices: rows of a run one pass of the sequential fold folds (llvmpipe's loop
                      # limit; at least FOLD_CHUNK: only the last run headed in a chunk can be longer)
FOLD_CHUNK = 16       # sorted rows per invocation of the fold
ATOMIC_MAX_SLICE = 8  # rows of fewer elements take the atomics where they can (see "Order-free reductions")
FOLD_BLOCKS = None    # fold float add/mul runs by blocks: None = on every device but CPUs (lavapipe), or a bool
PARTIAL_CHUNK = 16    # elements per invocation on the levels of partials (see "Associative reductions")
PARTIALS = True       # fold associative reductions by levels of partials (False: one invocation per run, for tests)
NO_KEY = 0xFFFFFFFF   # scatter_reduce.comp's "no element" key: keys stay below it
EXTRA_WORDS = P_ADDR - P_END   # the kernels' own words; ADDR variants' block lists follow them


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
                 copy: IndexMap | None = None, *, include_self: bool = True, order: str = "row-major",
                 index_mode: str = "clamp"):
        assert reduction in LAYER2_REDUCTIONS[1:] and index_mode in ("clamp", "drop-spare")
        spare = index_mode == "drop-spare"      # (Dropping's: updates out of range fold into a spare slice)
        dtype, index_dtype = np.dtype(dtype), np.dtype(index_dtype)
        self.reduction, self.include_self = reduction, include_self
        self.kernel = kernel_for(dtype, reduction)
        self.tree = order == "tree" and kernels.has_tree(self.kernel)   # other reductions: any order, same bits
        # "mean": the fold's own variant (MEAN), so that float add's carries none of the division
        self.fold_kernel = kernels.mean_variant(self.kernel) if reduction == "mean" else self.kernel
        mode = (0 if include_self else MODE_EXCLUDE_SELF) | (MODE_MEAN if reduction == "mean" else 0)
        signed, index_bytes = index_dtype.kind == "i", index_dtype.itemsize
        self.signed = signed
        self.copy = CopyPlan(copy) if copy is not None else None
        full = scatter_map.folded()                       # element-wise arithmetic: no wider units
        self.full_map = full
        self.index_mode = index_mode
        self.full_words: Any = full.params(signed, index_mode=index_mode) if full.fits_32_bits() else None
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
        self.cpu: CpuFold | None = None      # CPU devices' fold without a sort (step 6)
        self.buckets: Buckets | None = None  # GPUs: one sort pass and a fold per bucket (step 3)
        self.minmax: MinMax | None = None    # min/max by 64-bit atomics (step 7)
        self.fixed: FixedPoint | None = None  # order="fixed-point" (step 8)
        if self.atomic is not None:
            return
        # keys: target offsets without the low bits that all of them have at zero
        strides = [d.data for d in row_map.dims if d.size > 1 and d.data] + \
                  [t for size, t in row_map.tuple_dims if size > 1 and t]
        shift = min(map(_trailing_zeros, strides), default=0)
        last = sum((d.size - 1) * d.data for d in row_map.dims) + sum((size - 1) * t for size, t in row_map.tuple_dims)
        if spare:                                         # the spare slice: index dim of the first component
            last += row_map.tuple_dims[0][1]
        self.key_bits = (last >> shift).bit_length()
        span = last + sum((d.size - 1) * d.data for d in slice_map.dims) + 1     # the output offsets reached
        self.minmax = MinMax.of(self.kernel, index_bytes, self.full_words, full.count, span, mode)
        if order == "fixed-point":
            self.fixed = FixedPoint.of(self.kernel, index_bytes, self.full_words, full.count, span, include_self,
                                       reduction == "mean")
        # rows of one element of at most 4 bytes: the sort carries the update values themselves, so the fold
        # reads them in order instead of gathering them
        self.values = self.slice_count == 1 and elem <= 4
        self.keys_kernel = kernels.keys_variant(index_bytes, elem if self.values else 0)
        self.keys_hist_kernel = kernels.keys_variant(index_bytes, elem if self.values else 0, True)
        self.keys_words = np.zeros(P_END + EXTRA_WORDS, dtype=np.uint32)
        self.keys_words[:P_END] = row_map.params(signed, index_mode=index_mode)
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
        covers = bool(self.copy and self.copy.identity((last + 1) * elem))       # (the copy: every key's offset)
        ordered = self.tree or self.fixed is not None       # (orders with plans of their own)
        self.buckets = None if ordered else Buckets.of(self.fold_kernel, self.values, self.rows, last >> shift, shift,
                                                       mode, covers)
        self.cpu = None if ordered else CpuFold.of(self.kernel, self.values, reduction, include_self, self.rows,
                                                   self.slice_count, last >> shift, shift, self.fold_words)

    def sort(self, geometry: kernels.Geometry) -> RadixSort:
        """The radix sort of the rows' (key, row) pairs in a variant set's geometry (once per geometry)."""
        sort = self._sorts.get(geometry.suffix)
        if sort is None:
            sort = self._sorts[geometry.suffix] = RadixSort(self.rows, self.key_bits, geometry)
        return sort

    @classmethod
    def nd(cls, reduction, dtype, index_dtype, out: Layout, idx: Layout, upd: Layout, copy=None, *,
           include_self: bool = True, order: str = "row-major", index_mode: str = "clamp") -> "Plan":
        """SCATTER_ND: out (the data/output layout), idx, upd: meaningful layouts as nd_map takes them.
        ``index_mode`` "drop": a Dropping plan around the reduction."""
        if index_mode == "drop":
            return Dropping.of(lambda spare: cls.nd(reduction, dtype, index_dtype, spare, idx, upd, None,
                                                    include_self=include_self, order=order, index_mode="drop-spare"),
                               out, 0, copy, np.dtype(dtype).itemsize)
        scatter_map = nd_map(out, idx, upd, 0, np.dtype(dtype).itemsize)
        return cls(reduction, dtype, index_dtype, scatter_map, len(idx.shape) - 1, copy, include_self=include_self,
                   order=order, index_mode=index_mode)

    @classmethod
    def elements(cls, reduction, dtype, index_dtype, out: Layout, idx: Layout, upd: Layout, axis: int,
                 copy=None, *, include_self: bool = True, order: str = "row-major",
                 index_mode: str = "clamp") -> "Plan":
        """SCATTER_ELEMENTS along ``axis``: every update is one row of one element (``index_mode`` as nd's)."""
        if index_mode == "drop":
            return Dropping.of(lambda spare: cls.elements(reduction, dtype, index_dtype, spare, idx, upd, axis, None,
                                                          include_self=include_self, order=order,
                                                          index_mode="drop-spare"),
                               out, axis, copy, np.dtype(dtype).itemsize)
        scatter_map = elements_map(out, idx, upd, axis, np.dtype(dtype).itemsize)
        return cls(reduction, dtype, index_dtype, scatter_map, len(idx.shape), copy, include_self=include_self,
                   order=order, index_mode=index_mode)

    def piece_words(self, pieces: int) -> list:
        """The sequential fold's parameter words for each of ``pieces`` passes (one pass: unbounded runs)."""
        out = [self.fold_words.copy() for _ in range(pieces)] if pieces > 1 else [self.fold_words]
        for k, words in enumerate(out if pieces > 1 else ()):
            words[P_PIECE], words[P_PASS] = CPU_PIECE, k
        return out

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """(the dispatches, the parameter buffers to upload first) for one execution. ``take(nbytes)`` gives scratch
        buffers (Device.take_buffer); the caller gives them back once the dispatches have run. DeviceError, before any
        GPU work, if the scratch exceeds one block (Device.max_block). Operands held in several blocks take the
        ADDR variants, whose words are followed by the operands' block lists (``slots``: addressing.glsl's order)."""
        out, uploads = [], []
        addr = self.atomic is None and needs_wide(device, self.full_map, input, indices, output, updates)
        if addr and (self.tree or self.fixed):
            raise DeviceError(f"order={'tree' if self.tree else 'fixed-point'!r} is not supported on operands held "
                              f"in several blocks; use order='row-major' or split the scatter into smaller ones")

        def params(words, slots=None):
            if addr and slots is not None:
                assert words.size == P_ADDR
                words = np.concatenate([words, device.block_table(slots, 0).view(np.uint32)])
            buf, fresh = device.params(words)
            if fresh:
                uploads.append(buf)
            return buf

        copying = self.copy if self.copy is not None and input is not output and self.copy.map.count else None
        if self.fixed is not None:       # step 8: no sort
            fixed = self.fixed.dispatches(device, params, indices, output, updates)
            if copying is not None:
                copy, copy_uploads = copying.dispatch(device, input, output)
                out.append(copy)
                uploads += copy_uploads
            return out + fixed, uploads
        if self.atomic is None:
            sort = self.sort(device.geometry)
            hist_bytes = sort.hist_bytes if sort.pass_words else 0
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
            device.check_sizes(key_bytes, hist_bytes)
            tree_bytes = 4 * self.part_words * self.rows * self.slice_count if self.tree else 0
            scratch = max(key_bytes, hist_bytes, tree_bytes,   # bound whole: one block each
                          4 * self.slice_count * self.part_words * int(self.level_words[0][P_ROWS])
                          if partials else 0)
            if scratch > device.whole_max:
                raise DeviceError(f"this scatter reduction sorts {self.rows} update rows: its scratch buffers of "
                                  f"{scratch} bytes exceed one buffer of {device.info.name} ({device.whole_max} "
                                  f"bytes); split it into smaller ones")

        def kernel(name):
            return kernels.addr_variant(name) if addr else name

        operands = (None, output, updates, None)       # the fold kernels' slots
        cpu = self.cpu if self.cpu is not None and not addr and self.cpu.usable(device) else None   # CPUs: no sort
        buckets = self.buckets if self.buckets and not (cpu or few or addr) and self.buckets.usable(device) else None
        source = input if copying and buckets and buckets.covers else None     # (the bucket fold copies it)
        if copying is not None and source is None:
            copy, copy_uploads = copying.dispatch(device, input, output)
            out.append(copy)
            uploads += copy_uploads
        if self.minmax is not None and not addr and self.minmax.usable(device):     # min/max: no sort
            device.check_sizes(8 * self.minmax.span)
            return out + self.minmax.dispatches(params, take, indices, output, updates), uploads
        if self.atomic is not None:
            if needs_wide(device, self.full_map, indices, output, updates):
                words = self.full_map.params(self.signed, wide=True, index_mode=self.index_mode)
                p, fresh = wide_params(device, words, indices, output, updates, None)
                uploads += [p] if fresh else []
                out.append(Dispatch(self.atomic_wide, (p, indices, output, updates), int(words[P_TOTAL]), wide=True))
            else:
                out.append(Dispatch(self.atomic, (params(self.full_words), indices, output, updates),
                                    int(self.full_words[P_TOTAL])))
            return out, uploads
        grouping = buckets.sort(device.geometry) if buckets else sort               # the sort after the keys
        counted = not (cpu or few or addr) and bool(grouping.pass_words)           # its first histogram: here
        values = (updates,) if self.values else ()
        keys, rows = take(key_bytes), None if few else take(key_bytes)
        if few:                                   # the keys, then the rows, in one buffer
            out.append(Dispatch(kernels.few_variant(self.keys_kernel), (params(self.keys_words), indices, keys)
                                + values, self.rows, barrier=not out))
        elif counted:
            hist = device.zeroed(radix_sort.COUNTS, grouping.hist_bytes)
            out.append(Dispatch(self.keys_hist_kernel, (params(grouping.keyed_words(self.keys_words, P_KEY_SHIFT + 1)),
                                                        indices, keys, rows) + values + (hist,),
                                grouping.hist_invocations, barrier=not out))
        else:
            out.append(Dispatch(kernel(self.keys_kernel), (params(self.keys_words, (indices, None, updates, None)),
                                                           indices, keys, rows) + values,
                                self.rows, barrier=not out, wide=addr))   # independent of the copy: may overlap
        if cpu:
            assert rows is not None                 # (usable binds FOLD_BUFFERS >= SORT_BUFFERS: not few)
            return out + cpu.dispatches(device, params, keys, rows, output, updates), uploads
        if buckets:
            assert rows is not None
            return out + buckets.dispatches(device, params, keys, rows, take(key_bytes), take(key_bytes), output,
                                            take, counted, source), uploads
        if sort.pass_words:
            passes, keys, rows = sort.dispatches(device, params, keys, rows, take(key_bytes),
                                                 None if few else take(key_bytes), few, counted)
            out += passes
        if self.tree:          # the tree's elements, its passes, then the runs' heads write
            init, step, final = kernels.tree_variants(self.kernel, self.values, few)
            tree = take(tree_bytes)
            total = self.rows * self.slice_count
            out.append(Dispatch(init, (params(self.tree_words), keys, tree, updates) + (() if few else (rows,)), total))
            out += [Dispatch(step, (params(words), keys, tree), total) for words in self.tree_passes]
            out.append(Dispatch(final, (params(self.tree_words), keys, output, tree), total))
            return out, uploads
        blocks = device.info.gpu_choice(FOLD_BLOCKS)
        if not partials:
            fold = kernels.fold_variant(self.fold_kernel, blocks, self.values)
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


class Dropping(Plan):
    """A scatter reduction with mode="drop" (step 9 of the module's plan): ``reduce`` (a ReducePlan of index mode
    "drop-spare") runs on a scratch output of one more slice along the data's first indexed dimension (scatter_nd:
    dimension 0; scatter_elements: the axis), the spare slice, into which every update out of range folds
    (index_map.glsl's FLAG_SPARE); the input is copied into the scratch first and the scratch but its spare slice
    into the output last. No dropped update reaches an element of the output, so the output holds the bits of the
    reduction without them, for every reduction, order and path (at the cost of the two copies and the scratch)."""

    output_from_input = True

    def __init__(self, reduce: Plan, copy_in: CopyPlan, copy_out: CopyPlan, scratch_bytes: int):
        self.reduce, self.copy_in, self.copy_out, self.scratch_bytes = reduce, copy_in, copy_out, scratch_bytes

    @classmethod
    def of(cls, make, out: Layout, axis: int, copy: IndexMap | None, elem: int) -> "Dropping":
        """The plan of ``make(spare)`` (the reduction on the scratch's layout ``spare``: ``out``'s shape, packed
        strides of one more along ``axis``) between the copies; ``copy``: the input's copy into ``out`` (None:
        the input has ``out``'s layout)."""
        padded = tuple(out.shape[:axis]) + (out.shape[axis] + 1,) + tuple(out.shape[axis + 1:])
        spare = Layout(tuple(out.shape), packed_strides(padded))
        src = copy if copy is not None else copy_map(out, out, elem)
        copy_in = IndexMap(tuple(Dim(d.size, t, d.data, 0) for d, t in zip(src.dims, spare.strides)), (), 0, elem)
        return cls(make(spare), CopyPlan(copy_in), CopyPlan(copy_map(spare, out, elem)),
                   int(np.prod(padded, dtype=np.int64)) * elem)

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        scratch = take(self.scratch_bytes)
        first, uploads = self.copy_in.dispatch(device, input, scratch)
        steps, more = self.reduce.dispatches(device, input=scratch, indices=indices, output=scratch, updates=updates,
                                             take=take)
        last, most = self.copy_out.dispatch(device, scratch, output)
        return [first] + steps + [last], uploads + more + most
