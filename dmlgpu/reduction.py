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
* min/max: a NaN propagates (like numpy.minimum/maximum; the accumulated value's NaN when both are),
  and -0 counts as less than +0 (IEEE 754-2019 minimum/maximum; NumPy's choice between equal zeros
  depends on the dtype);
* NaN results: a NaN operand comes back quieted; an invalid operation (inf - inf, 0 * inf) gives the
  x86 default NaN (negative, quiet);
* bool: "add" and "max" are logical or, "mul" and "min" logical and (NumPy's bool arithmetic).
  Complex and other dtypes raise TypeError.

Design: on the host, indices are resolved (negative ones wrapped, then clamped), each update row's target
(scatter_nd: the output slice an index tuple addresses; scatter_elements: one element) becomes an output
offset, and a stable sort groups the rows by target. The GPU gets, per run of equal targets, the target
offset and the [start, end) of its rows, and one kernel (shaders/scatter_reduce.comp) iterates over
(run, position within the slice): it reads the output once, combines the run's updates in order, and
writes once. No value atomics, no races between runs (1- and 2-byte outputs use the race-free sub-word
stores of units.glsl).

Layer 1 (ScatterNDDesc/ScatterElementsDesc with ``reduction``): execute() reads the indices buffer back
to the host for the grouping, so it costs one extra download and synchronisation.
"""
from __future__ import annotations

import numpy as np

from . import kernels
from .errors import DeviceError
from .index_map import PARAM_WORDS, IndexMap, Layout, copy_map, resolve
from .plan import copy_dispatch
from .runtime import Buffer, Device, Dispatch, as_bytes

REDUCTIONS = ("none", "add", "mul", "min", "max")

# Parameter words after the slice's index map (shaders/scatter_reduce.comp).
P_SLICE, P_TARGETS, P_STARTS, P_ROWS = PARAM_WORDS, PARAM_WORDS + 1, PARAM_WORDS + 2, PARAM_WORDS + 3
REDUCE_PARAM_WORDS = PARAM_WORDS + 8
_U32 = 2**32
_BOOL_OPS = {"add": "max", "max": "max", "mul": "min", "min": "min"}


def check_reduction(reduction) -> str:
    """``reduction`` if it is one of REDUCTIONS, else ValueError."""
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(map(repr, REDUCTIONS))}, not {reduction!r}")
    return reduction


def kernel_for(dtype, reduction: str) -> str:
    """The kernel variant of a reduction on elements of ``dtype``; TypeError for dtypes without arithmetic."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return kernels.reduce_variant("u", 8, _BOOL_OPS[reduction])
    if (dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8)) or (dtype.kind == "f" and dtype.itemsize in (2, 4, 8)):
        return kernels.reduce_variant(dtype.kind, dtype.itemsize * 8, reduction)
    raise TypeError(f"reduction {reduction!r} is not supported for dtype {dtype}: reductions take bool, "
                    f"int8..int64, uint8..uint64, float16, float32 and float64 (only reduction='none' moves "
                    f"any dtype)")


def check(reduction, dtype) -> str:
    """Validates ``reduction`` (ValueError) and, unless it is "none", that ``dtype`` supports it (TypeError)."""
    reduction = check_reduction(reduction)
    if reduction != "none":
        kernel_for(dtype, reduction)
    return reduction


def _offsets(shape, strides) -> np.ndarray:
    """Row-major flat list (int64) of the offsets sum(coordinate * stride) over ``shape``."""
    out = np.zeros((), dtype=np.int64)
    for n, s in zip(shape, strides):
        out = (out[..., None] + np.arange(n, dtype=np.int64) * int(s))
    return out.reshape(-1)


def _rows(shape, strides):
    """The offsets over ``shape`` as _offsets gives them, or an int c when they are arange(size) * c (a
    packed layout, or a scaled one), which spares building and gathering them."""
    dims = [(int(n), int(s)) for n, s in zip(shape, strides) if n != 1]
    step = c = dims[-1][1] if dims else 0
    for n, s in reversed(dims):
        if s != step:
            return _offsets(shape, strides)
        step *= n
    return c


def _staged(device: Device, arr: np.ndarray) -> Buffer:
    """A new buffer holding ``arr``'s bytes, uploaded by the next run that lists it."""
    src = as_bytes(arr)
    buf = Buffer(device, max(4, (src.size + 3) // 4 * 4))
    buf._stage(src)
    return buf


def read_indices(buf: Buffer, layout: Layout, dtype) -> np.ndarray:
    """The index values of a device buffer, as an array of ``layout``'s shape (a download)."""
    dtype = np.dtype(dtype)
    raw = buf.read()
    flat = raw[: raw.size // dtype.itemsize * dtype.itemsize].view(dtype)
    return flat[_offsets(layout.shape, layout.strides)].reshape(layout.shape)


class ReducePlan:
    """A scatter reduction: ``locate(index values)`` gives each update row's output offset and updates
    offset (an array, or an int c when the updates offsets are arange(rows) * c); ``slice_map`` maps a position within a row to its offsets in the output (data side) and in the
    updates (dense side); ``copy`` (input -> output, skipped in place) as in plan.Plan."""

    kind = "scatter_reduce"

    def __init__(self, reduction: str, dtype, index_dtype, index_layout: Layout, locate, slice_map: IndexMap,
                 copy: IndexMap | None = None, values=None):
        assert reduction in REDUCTIONS[1:]
        self.reduction = reduction
        self.kernel = kernel_for(dtype, reduction)
        self.index_dtype = np.dtype(index_dtype)
        self.index_layout = index_layout
        self._locate = locate
        self.slice = slice_map.folded()                   # element-wise arithmetic: no wider units
        self.slice_words = self.slice.params(False)       # DeviceError if it does not fit 32 bits
        self.copy = copy.optimized() if copy is not None else None
        self.copy_words = self.copy.params(False, word_loop=True) if self.copy is not None else None
        self.values = values    # the index values on the host (layer 2), or None: read from the buffer

    @classmethod
    def nd(cls, reduction, dtype, index_dtype, out: Layout, idx: Layout, upd: Layout, copy=None,
           values=None) -> "ReducePlan":
        """SCATTER_ND: out (the data/output layout), idx, upd: meaningful layouts as nd_map takes them."""
        q, k, elem = len(idx.shape), idx.shape[-1], np.dtype(dtype).itemsize
        slice_map = copy_map(Layout(out.shape[k:], out.strides[k:]), Layout(upd.shape[q - 1:], upd.strides[q - 1:]),
                             elem)
        dims = np.array(out.shape[:k], dtype=np.int64)
        tuple_strides = np.array(out.strides[:k], dtype=np.int64)

        def locate(values):
            resolved = resolve(np.asarray(values).reshape(-1, k), dims)
            targets = resolved[:, 0] * tuple_strides[0] if k == 1 else resolved @ tuple_strides
            return targets, _rows(idx.shape[:-1], upd.strides[:q - 1])
        return cls(reduction, dtype, index_dtype, idx, locate, slice_map, copy, values)

    @classmethod
    def elements(cls, reduction, dtype, index_dtype, out: Layout, idx: Layout, upd: Layout, axis: int,
                 copy=None, values=None) -> "ReducePlan":
        """SCATTER_ELEMENTS along ``axis``: every update is one element."""
        elem = np.dtype(dtype).itemsize
        others = tuple(0 if d == axis else s for d, s in enumerate(out.strides))

        def locate(values):
            targets = resolve(np.asarray(values), out.shape[axis]).reshape(-1) * out.strides[axis]
            if any(s and n > 1 for n, s in zip(idx.shape, others)):
                targets += _offsets(idx.shape, others)
            return targets, _rows(idx.shape, upd.strides)
        return cls(reduction, dtype, index_dtype, idx, locate, IndexMap((), (), 0, elem), copy, values)

    def tables(self, values) -> tuple[np.ndarray, np.ndarray]:
        """(parameter words, run table words) for these index values (shaped like the index layout)."""
        targets, rows = self._locate(values)      # rows: offsets, or an int c for arange(n) * c
        n = int(targets.size)
        last_row = (n - 1) * rows if isinstance(rows, int) else int(rows.max(initial=0))
        if n and (int(targets.max()) >= _U32 or last_row >= _U32 or n >= _U32 // 2):
            raise DeviceError("the scatter reduction addresses 2^32 or more units of a tensor; split it into "
                              "smaller ones")
        # A stable sort by target: sort (target, position) pairs packed in uint64 keys (unique keys, so any
        # sort algorithm gives the stable order; NumPy's default sort is far faster than its stable argsort).
        keys = targets.astype(np.uint64)
        keys <<= np.uint64(32)
        keys |= np.arange(n, dtype=np.uint64)
        keys.sort()
        if np.little_endian:
            halves = keys.view(np.uint32).reshape(-1, 2)
            order, sorted_targets = halves[:, 0], halves[:, 1]
        else:
            order = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            sorted_targets = (keys >> np.uint64(32)).astype(np.uint32)
        change = np.flatnonzero(sorted_targets[1:] != sorted_targets[:-1]) + 1
        runs, slice_count = int(change.size) + (1 if n else 0), self.slice.count
        total = runs * slice_count
        if total >= _U32 - 1:
            raise DeviceError("the scatter reduction needs 2^32 or more iterations; split it into smaller ones")
        table = np.empty(2 * runs + 1 + n, dtype=np.uint32)
        if n:
            table[0], table[1:runs] = sorted_targets[0], sorted_targets[change]
            table[runs], table[runs + 1:2 * runs] = 0, change
        table[2 * runs] = n
        if isinstance(rows, int):
            np.multiply(order, np.uint32(rows), out=table[2 * runs + 1:])
        else:
            table[2 * runs + 1:] = rows[order]
        p = np.zeros(REDUCE_PARAM_WORDS, dtype=np.uint32)
        p[:PARAM_WORDS] = self.slice_words
        p[1] = total
        p[P_SLICE], p[P_TARGETS], p[P_STARTS], p[P_ROWS] = slice_count, 0, runs, 2 * runs + 1
        return p, table

    def dispatches(self, device: Device, *, input: Buffer, indices: Buffer | None, output: Buffer,
                   updates: Buffer) -> tuple[list, list]:
        """(the dispatches, the buffers to upload first) for one execution. The grouping uses ``values``
        when the plan has them (layer 2), else reads the indices buffer back to the host (layer 1). The run
        table is new each time."""
        values = self.values if self.values is not None else read_indices(indices, self.index_layout,
                                                                            self.index_dtype)
        params, table = self.tables(values)
        pbuf, tbuf = _staged(device, params), _staged(device, table)
        out, uploads = [], [pbuf, tbuf]
        if self.copy is not None and input is not output and self.copy.count:
            cbuf, fresh = device._params(self.copy_words)
            uploads += [cbuf] if fresh else []
            out.append(copy_dispatch(device, self.copy.unit, self.copy_words, cbuf, input, output))
        if params[1]:
            out.append(Dispatch(self.kernel, (pbuf, tbuf, output, updates), int(params[1])))
        return out, uploads
