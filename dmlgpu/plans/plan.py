"""Plans: a validated operation ready to run (the Plan interface), and the plans of one index map: GatherPlan,
ScatterPlan (scatter reductions: reduction.ReducePlan); the large-tensor variants' parameters: addressing.py."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..kernels import table as kernels
from ..errors import DeviceError
from .index_map import FLAG_RAISE, P_END, P_FLAGS, P_STATUS, P_TOTAL, IndexMap
from .index_map import U32 as _U32     # 2^32 (index_map's)
from ..runtime import COPY, Buffer, Device, Dispatch
from .addressing import _chunked, _sizes, addr_words, listed_params, needs_wide, wide_params


class Plan:
    """A validated operation, ready to run: what layer1/descriptors.py and functions.py use of every plan.
    ``output_from_input``: the output starts as a copy of the input and may be bound to the input's own
    buffer (the scatters); False: the output is a new tensor that must not overlap the input (gathers)."""

    output_from_input: bool

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """(the dispatches, the buffers to upload first) for one execution on these buffers. ``take(nbytes)``:
        scratch buffers that the caller gives back once the dispatches have run."""
        raise NotImplementedError


class _MapPlan(Plan):
    """A plan of one index map: ``index_dtype`` is the indices' NumPy dtype (its width picks the kernel; its
    sign, wrapping). Maps that need 64 bits run only in the WIDE variants; the others in the 32-bit ones
    unless a buffer is held in several blocks."""

    def __init__(self, index_map: IndexMap, index_dtype, index_mode: str = "clamp", fill: bytes = b""):
        index_dtype = np.dtype(index_dtype)
        self.map = index_map.optimized()
        self.signed = index_dtype.kind == "i"
        self.index_mode = index_mode         # index_map.INDEX_MODE_FLAGS: how indices outside a dimension resolve
        self.fill = fill                     # index_mode "fill": the element's bytes that out-of-range tuples read
        self.index_bytes = index_dtype.itemsize
        self.narrow = self.map.fits_32_bits()
        self._wide_words: dict = {}         # params() arguments -> WIDE words, made on first use

    def wide_words(self, **kwargs) -> np.ndarray:
        key = tuple(sorted(kwargs.items()))
        if key not in self._wide_words:
            self._wide_words[key] = self.map.params(self.signed, wide=True, index_mode=self.index_mode,
                                                    fill=self.fill, **kwargs)
        return self._wide_words[key]


# On CPU devices (lavapipe) a VEC gather whose units each take their own index costs 9-20 ms per dispatch whatever
# its size (32 float32 elements: 9-22 ms, against 38 us one unit per iteration; 262,144: 29 against 85 ms): below
# this many units, one unit per iteration
CPU_VEC_UNITS = 1 << 15
# On CPU devices a scatter of at most a workgroup of rows in one dispatch (scatter_write.comp's SMALL) takes at most
# this many workgroups, since each compares every row with the rows after it, a CPU thread's work there (a grid of a
# workgroup per 256 units cost lavapipe 5-10x more: bench/RESULTS.md, eighth session); its invocations then loop
# over more units, at most CPU_LOOP iterations each in all (llvmpipe ends an invocation's loops after 65535)
CPU_SMALL_GROUPS = 8
CPU_LOOP = 60000
# On a GPU, a gather whose units each take their own index into a data dimension spanning at least this many
# bytes reads one random sector per unit: one unit per invocation (more loads in flight) beats the VEC
# variant there, for 1- and 2-byte units where they can be stored as such (NARROW). Below it (gather_elements
# along a short last axis) and on CPU devices the VEC variant wins.
SPREAD_UNITS = 1 << 16
NARROW = -1           # GatherPlan.kernels' key of the NARROW variant (the others: their VEC bytes, 0 for none)
# On a GPU, rows of at least this many 16-byte units, gathered whole, take the run variants, in one block or several
# (bench/RESULTS.md: 1.00-1.05x the grid-step unrolling they replace, 1.06-1.17x one unit per invocation in ADDR).
RUN_ROW_UNITS = 32
# The WIDE run variant only where an invocation's units share a row: against one unit per invocation, 1.17x with
# rows of 8 KiB, 0.79x with 512 B (a 64-bit decode per unit).
RUN_WIDE_ROW_UNITS = kernels.RUN_LANES * kernels.RUN_UNROLL
RUN = -2              # GatherPlan.kernels' key of the run variant
# CPU devices gather rows of WINDOW_ROW_BYTES or more from a data tensor in at most WINDOW_BLOCKS blocks (indices and
# output in one) by one WINDOW dispatch per block, bound to it: lavapipe reads storage buffers faster than device
# addresses (RESULTS: 0.38-0.76x the ADDR row loop's time from 8 KiB to 512 B rows, 1.23-2.2x at 256-64 B).
WINDOW_BLOCKS = 16
WINDOW_ROW_BYTES = 512
P_WINDOW = P_END      # gather.comp's WINDOW words: the data tensor's units that the bound block holds, [lo, hi)


class GatherPlan(_MapPlan):
    """dense (output) <- data (input) through ``index_map``. Tensors held in several blocks take the ADDR
    variants of the same kernels (the map fits 32 bits) or the WIDE ones (it does not): the same paths (VEC,
    whole rows on CPU devices, runs of rows on GPUs), the tensors reached through their blocks' device
    addresses; on CPU devices, whole rows from a data tensor in a few blocks take ``windows``. ``index_mode``
    "fill" (``fill``: the element's bytes) takes every path but the run variants and ``windows``."""

    output_from_input = False

    def __init__(self, index_map: IndexMap, index_dtype, index_mode: str = "clamp", fill: bytes = b""):
        super().__init__(index_map, index_dtype, index_mode, fill)
        self.vec = vec_bytes(self.map)
        mode = index_mode
        self.words: Any = self.map.params(self.signed, vec=self.vec, index_mode=mode, fill=fill) \
            if self.narrow else None
        # CPU devices (an invocation is a SIMD lane) gather whole rows per iteration where they can
        self.row_words: Any = self.map.params(self.signed, row_loop=True, index_mode=mode, fill=fill) \
            if self.narrow and self.map.row_loop_ok() else None
        self.empty = not self.map.count
        # the kernel of each VEC width the words may ask for (0: no VEC), named once
        self.tuple_k = len(self.map.tuple_dims) if self.vec and len(self.map.tuple_dims) == 1 else None
        self.kernels = {0: kernels.variant("gather", self.map.unit, self.index_bytes, 0, None),
                        self.vec: kernels.variant("gather", self.map.unit, self.index_bytes, self.vec, self.tuple_k)}
        # units that each read their own random place (SPREAD_UNITS): one per invocation on GPUs; 1- and
        # 2-byte ones only through NARROW, on devices with the feature it needs
        self.spread = self.vec > 0 and self.map.indexed_spread() >= SPREAD_UNITS
        self.unit_words: Any = None
        if self.spread:
            self.one_unit_words()
        self.narrow_feature = kernels.NARROW_FEATURES.get(self.map.unit) if self.spread else None
        if self.narrow_feature:
            self.kernels[NARROW] = kernels.variant("gather", self.map.unit, self.index_bytes, narrow=True)
        self.run = self.map.unit == 16 and bool(self.map.tuple_dims) and self.map.row_units() >= RUN_ROW_UNITS \
            and mode != "fill"        # (gather.comp's RUN_UNROLL has no fill)
        if self.run:
            self.kernels[RUN] = kernels.variant("gather", 16, self.index_bytes, run=True)

    def _rows(self, device: Device) -> bool:
        """Whole rows per iteration: on CPU devices, where the map allows."""
        return device.info.type == "CPU" and self.map.row_loop_ok()

    def _words(self, device: Device, addressed: bool = False) -> tuple[np.ndarray, int]:
        """(the parameter words for this device, the bytes per iteration of their VEC variant, 0, or the key
        of the NARROW variant, which has no ``addressed`` twin, where the device has its feature, or of the run
        variant, which has)."""
        if device.info.type == "CPU":
            if self.row_words is not None:
                return self.row_words, 0
            if self.vec and self.map.count < CPU_VEC_UNITS and self.map.indexed_spread():
                return self.one_unit_words(), 0
            return self.words, self.vec
        if self.spread and not self.narrow_feature:
            return self.unit_words, 0
        if self.spread and not addressed and self.narrow_feature in device.features:
            return self.unit_words, NARROW
        if self.run:
            return self.words, RUN
        return self.words, self.vec

    def one_unit_words(self) -> np.ndarray:
        """The words of one unit per iteration (GPUs' spread gathers, CPU devices' small ones), made once."""
        if self.unit_words is None:
            self.unit_words = self.map.params(self.signed, index_mode=self.index_mode, fill=self.fill)
        return self.unit_words

    def _words_wide(self, device: Device) -> tuple[np.ndarray, int]:
        """The WIDE variant's parameter words for this device, and their VEC width (as _words)."""
        if self._rows(device):
            return self.wide_words(row_loop=True), 0
        if self.run and self.map.row_units() >= RUN_WIDE_ROW_UNITS:
            return self.wide_words(), RUN
        return self.wide_words(vec=self.vec), self.vec

    def addressed(self, device: Device, indices: Buffer, input: Buffer, output: Buffer,
                  wide: bool = False) -> tuple[list, list]:
        """(dispatches, uploads) of the gather through the ADDR variant (``wide``: the WIDE one, which
        maps past 32 bits need) on any buffers, held in several blocks or not (the benchmarks force it on
        one-block tensors to measure what addressing costs)."""
        wide = wide or not self.narrow
        words, vec = self._words_wide(device) if wide else self._words(device, addressed=True)
        slots = (indices, input, output, None)
        words64 = words if wide else addr_words(words)
        made = listed_params(device, words64, *slots, size=kernels.RUN_UNIFORM_WORDS // 2) if vec == RUN else None
        if made is None:                # not the run variant, or its uniform buffer cannot hold the block lists:
            vec = 0 if vec == RUN else vec              # one unit per iteration (the same words)
            made = wide_params(device, words64, *slots)
        params, fresh = made
        mode = {"wide" if wide else "addr": True}
        kernel = kernels.variant("gather", self.map.unit, self.index_bytes, run=True, **mode) if vec == RUN else \
            kernels.variant("gather", self.map.unit, self.index_bytes, vec, self.tuple_k if vec else None, **mode)
        return ([Dispatch(kernel, (params, indices, input, output), _count(words, vec), wide=True)],
                [params] if fresh else [])

    def windows(self, device: Device, indices: Buffer, input: Buffer, output: Buffer) -> tuple[list, list]:
        """(dispatches, uploads) of the whole-row gather (CPU devices) from a data tensor held in several blocks:
        one WINDOW dispatch per block, bound to it, each copying the rows' units that the block holds."""
        per_block = device.chunk_bytes // self.map.unit
        kernel = kernels.variant("gather", self.map.unit, self.index_bytes, window=True)
        dispatches, uploads = [], []
        assert self.row_words.size == P_WINDOW     # (the window's words follow the row words)
        for i in range(input.block_count):
            window = np.array([i * per_block, (i + 1) * per_block, 0, 0], np.uint64).clip(max=0xFFFFFFFF)
            params, fresh = device.params(np.concatenate([self.row_words, window.astype(np.uint32)]))
            dispatches.append(Dispatch(kernel, (params, indices, input, output),
                                       int(self.row_words[P_TOTAL]) * kernels.WINDOW_LANES,
                                       barrier=not i, blocks=(None, None, i, None)))
            uploads += [params] if fresh else []
        return dispatches, uploads

    def checks_indices(self, device: Device, indices: Buffer, input: Buffer, output: Buffer) -> bool:
        """True where the gather's kernel itself can check its indices for mode="raise" (``dispatches``'
        ``raise_at``): it moves something, and through a variant that binds each tensor (not needs_wide)."""
        return not self.empty and not needs_wide(device, self.map, indices, input, output)

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None, raise_at: int | None = None) -> tuple[list, list]:
        """(dispatches, parameter buffers to upload) of the gather. ``raise_at`` (where checks_indices()): the
        kernel checks the indices too (FLAG_RAISE), accumulating the first bad one's position into that 32-bit
        word of ``output``'s buffer (past the result's bytes: plans/index_check.py's IndexCheck.fused_layout)."""
        if self.empty:
            return [], []
        if raise_at is None and needs_wide(device, self.map, indices, input, output):
            if self._rows(device) and self.row_words is not None and input.chunked and not indices.chunked and \
                    self.index_mode != "fill" and \
                    not output.chunked and input.block_count <= WINDOW_BLOCKS and \
                    self.map.row_units() * self.map.unit >= WINDOW_ROW_BYTES:
                return self.windows(device, indices, input, output)
            return self.addressed(device, indices, input, output)
        words, vec = self._words(device)
        if raise_at is not None:
            assert self.checks_indices(device, indices, input, output)
            words = words.copy()
            words[P_FLAGS] |= FLAG_RAISE
            words[P_STATUS] = raise_at
        params, fresh = device.params(words)
        return [Dispatch(self.kernels[vec], (params, indices, input, output), _count(words, vec))], \
            [params] if fresh else []


def _count(words: np.ndarray, vec: int) -> int:
    """The invocations of a gather of these words through the variant of key ``vec`` (the run variant's blocks
    of RUN_LANES invocations each move RUN_LANES x RUN_UNROLL units)."""
    count = int(words[P_TOTAL])
    if vec == RUN:
        return -(-count // (kernels.RUN_LANES * kernels.RUN_UNROLL)) * kernels.RUN_LANES
    return count


P_OWNER_SHIFT, P_ROW_UNITS = P_END, P_END + 1    # scatter_claim.comp's and scatter_write.comp's ROWS words
P_CLAIM_WORDS = P_END + 2                          # scatter_write.comp's COPY: the claim words
COPY_CLEARS: bool | None = None    # ScatterPlan's CLEARS: None on GPUs (lavapipe: 1.4x slower), True everywhere (tests)
# The scatters' claim words (Device.zeroed scratch under this key): one 32-bit word per unit of the output (a
# scatter of 1-byte elements needs 4 bytes of it per element), or per target row (ROWS); the write pass (or
# the ROWS clearing pass) leaves them all zeros again.
CLAIMS = "scatter claims"


class ScatterPlan(_MapPlan):
    """output = input (a strided copy through ``copy_map``, skipped when the output is bound to the input's
    buffer), then every update claims its target and the last claim writes. Where the updates are whole rows
    (an innermost dimension contiguous in updates and output, not indexed) whose targets either coincide or
    are disjoint (every other output stride a multiple of the row), each row claims its target row once (one
    claim word per row, ROWS variants), and a last pass clears the claims; at most kernels.WORKGROUP_SIZE such
    rows settle their claims in one workgroup that also writes them (SMALL: the copy, then one dispatch). More
    rows, into an output of the input's packed layout: the claims, then one pass over the output that copies
    the input or takes the claimed row's update (COPY: ``copy_words``) and, where a workgroup holds whole rows,
    clears the claims (CLEARS); updates promising distinct targets (``unique``) too, else one pass after the
    copy, no claims. Tensors in several blocks or maps past 32 bits: WIDE claim-and-write (claims per unit).
    ``index_mode`` "drop": in every one of these paths an update whose tuple is out of range claims and writes
    nothing (index_map.INDEX_MODE_FLAGS)."""

    output_from_input = True

    def __init__(self, index_map: IndexMap, index_dtype, copy_map: IndexMap, unique: bool = False,
                 index_mode: str = "clamp"):
        super().__init__(index_map, index_dtype, index_mode)
        self.unique = unique          # the updates promise distinct targets: one pass after the copy, no claims
        if self.map.count >= _U32 - 1:
            raise DeviceError(f"a scatter of {self.map.count} update units: its claims are 32-bit, so at most "
                              f"2^32 - 2 units; split it into smaller ones")
        mode = index_mode             # "drop": every pass skips an update whose tuple is out of range
        self.words: Any = self.map.params(self.signed, index_mode=mode) if self.narrow else None   # None: wide only
        self.copy = CopyPlan(copy_map)
        self.row_words: Any = None
        self.copy_words: Any = None   # the rows' one-pass copy and writes (scatter_write.comp's COPY), or None
        m = self.map
        row = m.row_units()
        if self.narrow and row > 1:
            strides = [d.data for d in m.dims[:-1] if d.size > 1] + [t for n, t in m.tuple_dims if n > 1]
            if all(s % row == 0 for s in strides):
                shift = min(((s & -s).bit_length() - 1 for s in strides if s), default=0)
                rows = IndexMap(m.dims[:-1], m.tuple_dims, m.tuple_stride, m.unit)
                last = sum((d.size - 1) * d.data for d in rows.dims) + sum((n - 1) * t for n, t in m.tuple_dims)
                self.claim_words = (last >> shift) + 1
                self.row_words = np.zeros(P_END + 2, dtype=np.uint32)
                self.row_words[:P_END] = rows.params(self.signed, index_mode=mode)
                self.row_words[[P_OWNER_SHIFT, P_ROW_UNITS]] = shift, row
                self.words = np.concatenate([self.words, np.array([shift, 0], dtype=np.uint32)])
                out_bytes = self.copy.map.count * self.copy.map.unit
                if self.copy.identity() and out_bytes % m.unit == 0:
                    self.copy_words = np.concatenate([self.words[:P_END], np.array(
                        [shift, row, self.claim_words], dtype=np.uint32)])
                    self.copy_words[P_TOTAL] = out_bytes // m.unit
        # at most a workgroup of rows: claims and writes in one workgroup (scatter_write.comp's SMALL): their
        # count (a device of the small geometry takes them so up to its workgroup size), else 0
        self.small = int(self.row_words[P_TOTAL]) if self.row_words is not None and \
            int(self.row_words[P_TOTAL]) <= kernels.WORKGROUP_SIZE else 0

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer, output: Buffer,
                   updates: Buffer | None = None, take=None) -> tuple[list, list]:
        """The claims, then the copy (independent of the claims: they may overlap), then the winners write
        (then, for rows, the claims are cleared). The claim scratch is the device's (``take`` is not used)."""
        m = self.map
        wide = m.count and (not self.narrow or _chunked(input, indices, output, updates))
        fused = self.copy_words is not None and input is not output   # the rows' one-pass copy fits (below)
        if self.unique and m.count and not wide and not fused:
            params, fresh = device.params(self.words)      # (the claims' words: UNIQUE reads the map's)
            return self.copy.then(device, input, output, [params] if fresh else [],
                                  Dispatch(kernels.unique_variant(m.unit, self.index_bytes),
                                           (params, indices, output, updates), m.count))
        if self.small and not wide and self.small <= device.geometry.workgroup_size:
            params, fresh = device.params(self.row_words)
            count = m.count             # a grid over the units (the kernel's loop covers them all)
            if device.info.type == "CPU":
                size = device.geometry.workgroup_size
                count = min(count, max(CPU_SMALL_GROUPS * size, -(-count // (CPU_LOOP - size))))
            return self.copy.then(device, input, output, [params] if fresh else [],
                                  Dispatch(kernels.small_scatter_variant(m.unit, self.index_bytes),
                                           (params, indices, output, updates), count))
        beside = _sizes(input, indices, output, updates)
        units = -(-output.nbytes // m.unit)
        if m.count and not wide and device.info.max_per_stage_storage_buffers < kernels.SCATTER_BUFFERS:
            claims = device.zeroed(CLAIMS, 4 * units, beside)
            if not claims.chunked:
                return self._few_buffers(device, input, indices, output, updates, claims, units)
        if m.count and not wide:
            claims = device.zeroed(CLAIMS, 4 * (self.claim_words if self.row_words is not None else units), beside)
            wide = claims.chunked                          # (claim scratch held in several blocks)
        if wide:
            claims = device.zeroed(CLAIMS, 4 * units, beside)
            needs_wide(device, m, indices, output, updates, claims)
            params, fresh = wide_params(device, self.wide_words(), indices, output, updates, claims)
            uploads = [params] if fresh else []
            scatter = [Dispatch(kernels.variant(kernel, m.unit, self.index_bytes, wide=True),
                                (params, indices, output, updates, claims), m.count, wide=True)
                       for kernel in ("scatter_claim", "scatter_write")]
            return self._with_copy(device, input, output, scatter, uploads)
        pairs = [device.params(self.words)] if m.count else []
        if self.row_words is not None:
            pairs.append(device.params(self.row_words))
        words, uploads = [b for b, _ in pairs], [b for b, fresh in pairs if fresh]
        if not m.count:
            scatter = []
        elif self.row_words is None:
            scatter = [Dispatch(kernels.variant(kernel, m.unit, self.index_bytes),
                                (words[0], indices, output, updates, claims), m.count)
                       for kernel in ("scatter_claim", "scatter_write")]
        else:
            rows = int(self.row_words[P_TOTAL])
            claim, write, clear = kernels.row_claim_variants(m.unit, self.index_bytes)
            row_claims, clearing = (Dispatch(k, (words[1], indices, output, updates, claims), rows)
                                    for k in (claim, clear))
            if fused:     # the copy and the writes in one pass (unique or not: fewer bytes), and the clearing
                copy, fresh = device.params(self.copy_words)
                clears = (device.geometry.workgroup_size % int(self.copy_words[P_ROW_UNITS]) == 0
                          and device.info.gpu_choice(COPY_CLEARS))
                copies = Dispatch(kernels.copy_rows_variant(m.unit, clears), (copy, input, output, updates, claims),
                                  int(self.copy_words[P_TOTAL]))
                return [row_claims, copies] + [clearing] * (not clears), uploads + [copy] * fresh
            scatter = [row_claims, Dispatch(write, (words[0], indices, output, updates, claims), m.count), clearing]
        return self._with_copy(device, input, output, scatter, uploads)

    def _few_buffers(self, device, input, indices, output, updates, claims, units) -> tuple[list, list]:
        """The claims and the writes for a device that binds fewer than kernels.SCATTER_BUFFERS storage
        buffers (scatter_claim.comp's and scatter_write.comp's FEW): each update claims its target unit, then
        each of the output's ``units`` that was claimed takes its winner's update (no index read)."""
        m = self.map
        write_words = self.words.copy()
        write_words[P_TOTAL] = units
        (claim, fresh), (write, write_fresh) = device.params(self.words), device.params(write_words)
        uploads = [claim] * fresh + [write] * (write_fresh and write is not claim)
        scatter = [Dispatch(kernels.variant("scatter_claim", m.unit, self.index_bytes, few=True),
                            (claim, indices, claims), m.count),
                   Dispatch(kernels.variant("scatter_write", m.unit, self.index_bytes, few=True),
                            (write, output, updates, claims), units)]
        return self._with_copy(device, input, output, scatter, uploads)

    def _with_copy(self, device, input, output, scatter, uploads) -> tuple[list, list]:
        """The first scatter pass, then the copy (independent of it: they may overlap), then the others."""
        out = scatter[:1]
        if input is not output and self.copy.map.count:
            copy, copy_uploads = self.copy.dispatch(device, input, output, barrier=not out)
            out.append(copy)
            uploads = uploads + copy_uploads
        return out + scatter[1:], uploads


@functools.lru_cache(maxsize=1024)
def make_plan(cls, *args) -> Plan:
    """``cls(*args)`` (GatherPlan, ScatterPlan or a plan factory such as lines_plan.scatter_elements_plan),
    made once for equal arguments (index maps and layouts are values): a repeated call skips folding,
    vectorizing and packing the parameter words."""
    return cls(*args)


def vec_bytes(m: IndexMap) -> int:
    """Bytes of the dense tensor per iteration of the VEC gather for an optimized map, or 0 (none fits)."""
    if not m.vec_ok():
        return 0
    return kernels.vec_sizes(m.unit)[0]


# CopyPlan: a packed copy (identity()) by the gather kernel (None: on GPUs, where it may overlap the pass before
# it) or by transfer commands (a COPY step: on CPU devices, where lavapipe's kernel copy costs many times more);
# a bool: that way on every device (tests)
KERNEL_COPIES: bool | None = None


class CopyPlan:
    """The strided copy input -> output of a copy map (the gather kernel with tuple size 0; VEC where it fits;
    its ADDR variant where a buffer is held in several blocks, WIDE where the map needs 64 bits; a packed copy
    by transfer commands where KERNEL_COPIES says so)."""

    def __init__(self, copy_map: IndexMap):
        self.map = copy_map.optimized()
        self.narrow = self.map.fits_32_bits()
        self.vec = vec_bytes(self.map)
        self.words: Any = self.map.params(False, vec=self.vec) if self.narrow else None   # None: wide only
        self.wide_words: Any = None

    def then(self, device: Device, input: Buffer, output: Buffer, uploads: list, launch: Dispatch) -> tuple[list, list]:
        """(the copy input -> output, unless output is input's own buffer or the copy moves nothing, then
        ``launch``, which works on what the copy wrote; ``uploads`` and the copy's parameter buffer if new)."""
        if input is output or not self.map.count:
            return [launch], uploads
        copy, more = self.dispatch(device, input, output)
        return [copy, launch], uploads + more

    def identity(self, nbytes: int | None = None) -> bool:
        """True when the copy moves unit u of the input to unit u of the output (one packed layout[, of ``nbytes``])."""
        return (len(self.map.dims) == 1 and self.map.dims[0][1:] == (1, 1, 0) and not self.map.tuple_dims
                and nbytes in (None, self.map.count * self.map.unit))

    def dispatch(self, device: Device, input: Buffer, output: Buffer, barrier: bool = True) -> tuple[Dispatch, list]:
        """(the copy's dispatch, [its parameter buffer] if it must be uploaded first, else [])."""
        unit, inputs = self.map.unit, (device.dummy, input, output)
        if self.identity() and not device.info.gpu_choice(KERNEL_COPIES):
            return Dispatch(COPY, (input, output), self.map.count * unit), []
        if needs_wide(device, self.map, input, output):
            if self.narrow:
                params, fresh = wide_params(device, addr_words(self.words), None, input, output, None)
                kernel, count = kernels.variant("gather", unit, 4, self.vec, addr=True), self.words[P_TOTAL]
            else:
                if self.wide_words is None:
                    self.wide_words = self.map.params(False, vec=self.vec, wide=True)
                params, fresh = wide_params(device, self.wide_words, None, input, output, None)
                kernel, count = kernels.variant("gather", unit, 4, self.vec, wide=True), self.wide_words[P_TOTAL]
            d = Dispatch(kernel, (params,) + inputs, int(count), barrier=barrier, wide=True)
        else:
            params, fresh = device.params(self.words)
            d = Dispatch(kernels.variant("gather", unit, 4, self.vec), (params,) + inputs,
                         int(self.words[P_TOTAL]), barrier=barrier)
        return d, [params] if fresh else []
