"""NumPy reference implementations (ONNX semantics, DirectML clamping) that tests and the demo check
against. They are written for clarity, not speed: scatters loop over the updates in row-major order, so
the last update of a duplicated target wins, as dmlgpu guarantees."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .plans.index_map import out_of_range, resolve


def _filled(out, missed, fill_value):
    """mode="fill": ``out`` with the elements where ``missed`` (broadcast to it) is set assigned ``fill_value``
    (NumPy's assignment converts it)."""
    out = np.array(out, copy=True)
    out[np.broadcast_to(missed, out.shape)] = fill_value
    return out


def _in_range(indices, dims):
    """Indices with those out of range replaced by 0 (mode="fill": the gathers' indices that are read)."""
    return np.where(out_of_range(indices, dims), np.zeros((), indices.dtype), indices)


def gather(data, indices, axis=0, mode="clamp", fill_value=0):
    """ONNX Gather (numpy.take with DirectML's clamping); mode="fill": an out-of-range index reads
    ``fill_value`` (index_map.INDEX_MODE_FLAGS)."""
    data, indices = np.asarray(data), np.asarray(indices)
    axis %= data.ndim
    if mode == "fill":
        missed = out_of_range(indices, data.shape[axis])
        shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
        if data.shape[axis] == 0:
            return _filled(np.zeros(shape, data.dtype), True, fill_value)
        out = gather(data, _in_range(indices, data.shape[axis]), axis)
        return _filled(out, missed.reshape((1,) * axis + indices.shape + (1,) * (data.ndim - axis - 1)), fill_value)
    return np.take(data, resolve(indices, data.shape[axis]), axis=axis)


def gather_elements(data, indices, axis=0, mode="clamp", fill_value=0):
    """ONNX GatherElements; mode="fill" as gather's."""
    data, indices = np.asarray(data), np.asarray(indices)
    axis %= data.ndim
    if mode == "fill":
        missed = out_of_range(indices, data.shape[axis])
        if data.shape[axis] == 0:
            return _filled(np.zeros(indices.shape, data.dtype), True, fill_value)
        return _filled(gather_elements(data, _in_range(indices, data.shape[axis]), axis), missed, fill_value)
    window = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    return np.take_along_axis(data[window], resolve(indices, data.shape[axis]), axis=axis)


def _nd_targets(data_shape, indices, batch_dims):
    """(batch position, resolved tuple) for each index tuple, in row-major order."""
    k = indices.shape[-1]
    dims = np.array(data_shape[batch_dims:batch_dims + k], dtype=np.int64)
    tuples = resolve(indices.reshape(-1, k), dims)
    batches = int(np.prod(indices.shape[:batch_dims], dtype=np.int64))
    per_batch = tuples.shape[0] // max(batches, 1)
    return [(i // per_batch if per_batch else 0, tuple(t)) for i, t in enumerate(tuples)]


def _missed_tuples(data_shape, indices, first):
    """mode="fill" and "drop": per index tuple (the indices' last dimension indexing data's dimensions from
    ``first`` on), True where any of its indices is out of range."""
    dims = np.array(data_shape[first:first + indices.shape[-1]], dtype=np.int64)
    return out_of_range(indices, dims).any(axis=-1)


def gather_nd(data, indices, batch_dims=0, mode="clamp", fill_value=0):
    """ONNX GatherND; mode="fill": an index tuple with any index out of range reads ``fill_value``."""
    data, indices = np.asarray(data), np.asarray(indices)
    b, k = batch_dims, indices.shape[-1]
    out_shape = indices.shape[:-1] + data.shape[b + k:]
    if mode == "fill":
        missed = _missed_tuples(data.shape, indices, b)
        missed = missed.reshape(missed.shape + (1,) * (len(out_shape) - missed.ndim))
        if 0 in data.shape[b:b + k]:
            return _filled(np.zeros(out_shape, data.dtype), True, fill_value)
        dims = np.array(data.shape[b:b + k], dtype=np.int64)
        return _filled(gather_nd(data, _in_range(indices, dims), b), missed, fill_value)
    flat_data = data.reshape((int(np.prod(data.shape[:b])),) + data.shape[b:])
    rows = [flat_data[(bi,) + t] for bi, t in _nd_targets(data.shape, indices, b)]
    if not rows:
        return np.empty(out_shape, dtype=data.dtype)
    return np.stack(rows).reshape(out_shape)


def scatter_nd(data, indices, updates, reduction="none", include_self=True, order="row-major", mode="clamp"):
    """ONNX ScatterND: a sequential loop over the update rows in row-major order (the last one of a
    duplicated target wins, or, with a reduction, each one combines into it; see _Reducer for "mean",
    ``include_self`` and ``order``). mode="drop": an update row whose index tuple has any index out of range
    is skipped."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    out = data.copy()
    k = indices.shape[-1]
    rows = updates.reshape((int(np.prod(indices.shape[:-1])),) + data.shape[k:])
    dropped = _missed_tuples(data.shape, indices, 0).reshape(-1) if mode == "drop" else np.zeros(len(rows), bool)
    reducer = _Reducer(reduction, include_self, order)
    for (_, t), row, skip in zip(_nd_targets(data.shape, indices, 0), rows, dropped):
        if not skip:
            out[t] = reducer.step(t, out[t], row)
    return reducer.finish(out)


def scatter_elements(data, indices, updates, axis=0, reduction="none", include_self=True, order="row-major",
                     mode="clamp"):
    """ONNX ScatterElements: a sequential loop over the updates in row-major order (see _Reducer for "mean",
    ``include_self`` and ``order``). mode="drop": an update whose index is out of range is skipped."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    axis %= data.ndim
    out = data.copy()
    resolved = resolve(indices, data.shape[axis])
    dropped = out_of_range(indices, data.shape[axis]) if mode == "drop" else np.zeros(indices.shape, bool)
    reducer = _Reducer(reduction, include_self, order)
    for pos in np.ndindex(*indices.shape):
        if dropped[pos]:
            continue
        target = pos[:axis] + (int(resolved[pos]),) + pos[axis + 1:]
        out[target] = reducer.step(target, out[target], updates[pos])
    return reducer.finish(out)


class _Reducer:
    """One scatter's steps, target by target: ``include_self=False`` starts a target from its first update
    (not its own value); "mean" sums as "add" does, then divides each updated target's sum once by its count
    (its updates, + 1 with include_self): mean_of. ``order="tree"``: a target's updates combine in the
    pairwise tree of tree() instead of one by one, then into the target's own value (include_self).
    ``order="fixed-point"`` (float add of at most 4 bytes; other reductions ignore it): each target's terms
    (its own value with include_self, then its updates) summed by fixed_sum, element by element, with the
    fraction bits of the call's count of update elements."""

    def __init__(self, reduction, include_self, order="row-major"):
        self.op = "add" if reduction == "mean" else reduction
        self.mean, self.include_self, self.counts = reduction == "mean", bool(include_self), {}
        self.gathered: dict | None = {} if order in ("tree", "fixed-point") else None   # target -> its updates
        self.fixed, self.elements = order == "fixed-point", 0

    def step(self, target, acc, x):
        if self.op == "none":
            return x
        first = target not in self.counts
        self.counts[target] = self.counts.get(target, 0) + 1
        self.elements += np.size(x)
        if self.fixed and not (self.op == "add" and np.asarray(x).dtype.name in FIXED_FORMATS):
            self.gathered = None           # order="fixed-point" of a reduction it does not change
        if self.gathered is not None:
            self.gathered.setdefault(target, []).append(np.array(x, copy=True))
            return acc
        if first and not self.include_self:
            return np.array(x, copy=True)
        return combine(self.op, acc, x)

    def finish(self, out):
        for target, xs in (self.gathered or {}).items() if self.fixed else ():
            terms = ([out[target]] if self.include_self else []) + xs
            fraction = fixed_fraction_bits(out.dtype, self.elements)
            out[target] = np.reshape([fixed_sum([np.asarray(t)[pos] for t in terms], out.dtype, fraction)
                                      for pos in np.ndindex(np.shape(xs[0]))], np.shape(xs[0]))
        for target, xs in (self.gathered or {}).items() if not self.fixed else ():
            t = tree(self.op, xs)
            out[target] = combine(self.op, out[target], t) if self.include_self else t
        if self.mean:
            for target, n in self.counts.items():
                out[target] = mean_of(out[target], n + self.include_self)
        return out


def tree(reduction, xs):
    """The pairwise tree of order="tree" over the updates ``xs`` of one target (row-major order): one update is
    itself; L > 1 updates give combine(tree(xs[:H]), tree(xs[H:])), H the largest power of two below L."""
    if len(xs) == 1:
        return xs[0]
    h = 1 << ((len(xs) - 1).bit_length() - 1)
    return combine(reduction, tree(reduction, xs[:h]), tree(reduction, xs[h:]))


# order="fixed-point" (dmlgpu/plans/reduction_fixed.py has the contract): float types by name -> (fraction bits,
# exponent bits, finite only: no infinities, one NaN per sign)
FIXED_FORMATS = {"float16": (10, 5, False), "float32": (23, 8, False), "bfloat16": (7, 8, False),
                 "float8_e4m3fn": (3, 4, True), "float8_e5m2": (2, 5, False)}


def fixed_fraction_bits(dtype, elements):
    """F: the fraction bits below a target's largest exponent, for a call of ``elements`` update elements."""
    p = FIXED_FORMATS[np.dtype(dtype).name][0]
    return 63 - (p + 1) - (elements + 1).bit_length()


def fixed_sum(terms, dtype, fraction):
    """The fixed-point sum of ``terms`` (scalars of float ``dtype``, in any order) with ``fraction`` bits, as
    order="fixed-point" defines it: every finite term an integer multiple of 2^(E - bias - p - fraction), E the
    largest scale exponent max(exponent field, 1) of the finite terms (to nearest even), the integers summed
    exactly and the sum rounded once to ``dtype``; NaN or both infinities: the negative quiet NaN; an infinity:
    it; an exact zero: -0 if every term is -0."""
    dtype = np.dtype(dtype)
    p, eb, finite_only = FIXED_FORMATS[dtype.name]
    uint = np.dtype(f"u{dtype.itemsize}")
    bits = [int(np.asarray(t, dtype).view(uint)) for t in terms]
    with np.errstate(invalid="ignore"):
        values = np.array(bits, dtype=uint).view(dtype).astype(np.float64)
    sign_bit, emask, bias = 1 << (eb + p), (1 << eb) - 1, (1 << (eb - 1)) - 1
    nan = sign_bit | ((sign_bit - 1) if finite_only else (emask << p) | (1 << (p - 1)))

    def as_dtype(b):
        return np.asarray(b, uint).view(dtype)[()]

    if np.isnan(values).any() or (np.isposinf(values).any() and np.isneginf(values).any()):
        return as_dtype(nan)
    if np.isinf(values).any():
        return as_dtype(bits[int(np.flatnonzero(np.isinf(values))[0])])
    scales = [max((b >> p) & emask, 1) for b in bits]
    top = max(scales)
    total = 0
    for b, e in zip(bits, scales):
        sig = (b & ((1 << p) - 1)) | ((1 << p) if (b >> p) & emask else 0)
        magnitude = round(Fraction(sig) * Fraction(2) ** (e - top + fraction))     # half to even
        total += -magnitude if b & sign_bit else magnitude
    assert abs(total) < 1 << 63
    if total == 0:
        return as_dtype(sign_bit if all(b == sign_bit for b in bits) else 0)
    return round_to(Fraction(total) * Fraction(2) ** (top - bias - p - fraction), dtype)


def round_to(q, dtype):
    """The nonzero Fraction ``q`` rounded once to nearest even in a float dtype of FIXED_FORMATS: subnormals,
    overflow to infinity (a finite-only type: to its NaN)."""
    dtype = np.dtype(dtype)
    p, eb, finite_only = FIXED_FORMATS[dtype.name]
    emask, bias = (1 << eb) - 1, (1 << (eb - 1)) - 1
    a = abs(q)
    top = a.numerator.bit_length() - a.denominator.bit_length()       # floor(log2 a), give or take one
    top += 1 if Fraction(2) ** (top + 1) <= a else -1 if Fraction(2) ** top > a else 0
    e = max(top + bias, 1)                                             # its binade's exponent field (1: subnormal)
    m = round(a / Fraction(2) ** (e - bias - p))                       # half to even; may carry into the exponent
    bits = ((e - 1) << p) + m
    if finite_only and bits >= (emask << p) | ((1 << p) - 1):
        bits = (emask << p) | ((1 << p) - 1)                           # its NaN
    elif not finite_only and bits >= emask << p:
        bits = emask << p                                              # infinity
    bits |= (1 << (eb + p)) if q < 0 else 0
    return np.asarray(bits, f"u{dtype.itemsize}").view(dtype)[()]


def mean_of(s, n):
    """``s / n`` (an array of a float dtype, an int n >= 1) rounded once to nearest even in s's dtype, exactly
    (Fraction arithmetic); a NaN, infinite or zero element, and n == 1, give the element itself."""
    s = np.array(s, copy=True)
    flat = s.reshape(-1)
    uint = np.dtype(f"u{s.dtype.itemsize}")
    for i, v in enumerate(flat):
        with np.errstate(invalid="ignore"):
            if n == 1 or not np.isfinite(v) or v == 0:
                continue
        q = Fraction(float(v)) / n
        c = np.asarray(float(q), s.dtype).view(uint)    # near q; the nearest is it or a neighbour
        best = None
        for bits in (c - 1, c, c + 1):
            cand = np.asarray(bits, uint).view(s.dtype)
            if not np.isfinite(cand):
                continue
            key = (abs(Fraction(float(cand)) - q), int(bits) & 1)   # nearest, then even
            if best is None or key < best[0]:
                best = (key, cand)
        assert best is not None
        flat[i] = best[1]
    return s


# ---- Scatter reductions (ONNX ScatterND / ScatterElements with reduction, opsets 16/18) ----

REDUCTIONS = ("add", "mul", "min", "max")


def combine(reduction, acc, x):
    """One step of a scatter reduction, ``acc op x`` ("none": x), on arrays (or 0-d arrays) of one dtype, as dmlgpu
    defines it: integers wrap; floats round to nearest even (NumPy's own add and multiply; float16 through
    float32, as NumPy does; ml_dtypes' bfloat16 and float8 types: ml_dtypes' own arithmetic); min/max
    propagate NaN (acc's when both are NaN) and take -0 < +0; bool: add/max are or, mul/min are and."""
    acc, x = np.asarray(acc), np.asarray(x)
    if reduction == "none":
        return x
    assert acc.dtype == x.dtype and reduction in REDUCTIONS
    if acc.dtype.kind == "b":
        return acc | x if reduction in ("add", "max") else acc & x
    if reduction in ("add", "mul"):
        with np.errstate(all="ignore"):
            out = acc + x if reduction == "add" else acc * x
        return np.asarray(out, dtype=acc.dtype)
    if acc.dtype.kind in "iu":
        return np.minimum(acc, x) if reduction == "min" else np.maximum(acc, x)
    # floats: NaN first, then the order with -0 < +0
    a_neg, x_neg = np.signbit(acc), np.signbit(x)
    with np.errstate(invalid="ignore"):
        if reduction == "min":
            take_x = (x < acc) | ((x == acc) & x_neg & ~a_neg)
        else:
            take_x = (x > acc) | ((x == acc) & a_neg & ~x_neg)
        out = np.where(take_x, x, acc)
        out = np.where(np.isnan(x), x, out)
        return np.asarray(np.where(np.isnan(acc), acc, out), dtype=acc.dtype)


# ---- Gather and reduce in one pass (dmlgpu/api/fused.py) ----

def segment_reduce(data, offsets, reduction="add", initial=None):
    """dmlgpu.segment_reduce: each segment ``data[offsets[s]:offsets[s + 1]]`` reduced one row at a time by
    combine(), from its first row (or from ``initial``: ``initial op row`` first); "mean": the sum, then mean_of
    once by the row count; an empty segment: ``initial``, else the identity (0; 1 for mul; min / max: the dtype's
    largest / smallest value, +-inf for floats, +-448 for float8_e4m3fn, which has no infinity)."""
    data = np.asarray(data)
    offsets = np.asarray(offsets, np.int64)
    op = {"sum": "add", "prod": "mul", "amin": "min", "amax": "max"}.get(reduction, reduction)
    out = np.empty((len(offsets) - 1,) + data.shape[1:], data.dtype)
    for s in range(len(offsets) - 1):
        rows = data[offsets[s]:offsets[s + 1]]
        acc = None if initial is None else np.full(data.shape[1:], initial, data.dtype)
        for row in rows:
            acc = np.array(row, copy=True) if acc is None else combine("add" if op == "mean" else op, acc, row)
        if acc is None:
            acc = np.full(data.shape[1:], _identity(op, data.dtype), data.dtype)
        elif op == "mean":
            acc = mean_of(acc, len(rows))
        out[s] = acc
    return out


def _identity(op, dtype):
    if op in ("add", "mean"):
        return 0
    if op == "mul":
        return 1
    if dtype.kind == "b":
        return op == "min"
    if dtype.kind in "iu":
        return np.iinfo(dtype).max if op == "min" else np.iinfo(dtype).min
    if dtype.name == "float8_e4m3fn":          # no infinity: its largest finite values
        return 448.0 if op == "min" else -448.0
    return np.inf if op == "min" else -np.inf


def embedding_bag(table, ids, offsets=None, mode="sum", per_sample_weights=None, padding_idx=None,
                  include_last_offset=False, order="row-major"):
    """PyTorch's F.embedding_bag (table first): each bag's rows (ids equal to ``padding_idx`` skipped) combined one
    by one from its first row ("sum": NumPy's sequential add in the table's dtype; each row first multiplied by its
    weight, ``w * row``; "mean": the sum, then mean_of once; "max": combine's max); empty bags give zeros.
    ``order`` "tree" / "fixed-point" ("sum" and "mean" of float tables; fixed-point: FIXED_FORMATS' types): a
    bag's rows summed by tree() / by fixed_sum with the fraction bits of ``ids.size * table.shape[1]`` update
    elements, then mean_of."""
    table, ids = np.asarray(table), np.asarray(ids)
    weights = None if per_sample_weights is None else np.asarray(per_sample_weights)
    if ids.ndim == 2:
        bounds = np.arange(ids.shape[0] + 1) * ids.shape[1]
    else:
        offsets = np.asarray(offsets, np.int64)
        bounds = offsets if include_last_offset else np.concatenate([offsets, [ids.size]])
    flat = ids.reshape(-1)
    wflat = None if weights is None else weights.reshape(-1)
    pad = None if padding_idx is None else padding_idx % table.shape[0]
    op = {"sum": "add", "mean": "add", "max": "max"}[mode]
    out = np.zeros((len(bounds) - 1, table.shape[1]), table.dtype)
    floats = table.dtype.kind == "f" or table.dtype.name in FIXED_FORMATS
    if mode == "max" or not floats or order == "fixed-point" and table.dtype.name not in FIXED_FORMATS:
        order = "row-major"                  # (the same bits in every order)
    for b in range(len(bounds) - 1):
        acc, rows = None, []
        for r in range(bounds[b], bounds[b + 1]):
            if flat[r] == pad:
                continue
            row = table[flat[r]]
            if wflat is not None:
                row = combine("mul", np.asarray(wflat[r]), row)
            rows.append(np.array(row, copy=True))
            acc = rows[0] if acc is None else combine(op, acc, row)
        if not rows:
            continue
        if order == "tree":
            acc = tree(op, rows)
        elif order == "fixed-point":
            fraction = fixed_fraction_bits(table.dtype, flat.size * table.shape[1])
            acc = np.array([fixed_sum([r[c] for r in rows], table.dtype, fraction) for c in range(table.shape[1])],
                           table.dtype)
        out[b] = mean_of(acc, len(rows)) if mode == "mean" else acc
    return out


def gather_scatter(x, src, dst, reduction="add", out=None, dim_size=None, include_self=True, order="row-major",
                   weights=None):
    """dmlgpu.gather_scatter: ``scatter_nd(base, dst[:, None], weights[:, None] * x[src], ...)``, base ``out`` or
    zeros of ``(dim_size,) + x.shape[1:]``."""
    x, src, dst = np.asarray(x), np.asarray(src, np.int64), np.asarray(dst, np.int64)
    rows = x[src]
    if weights is not None:
        rows = np.stack([combine("mul", np.asarray(w), r) for w, r in zip(np.asarray(weights), rows)]) \
            if len(rows) else rows
    base = np.zeros((dim_size,) + x.shape[1:], x.dtype) if out is None else np.asarray(out)
    op = {"sum": "add", "prod": "mul", "amin": "min", "amax": "max"}.get(reduction, reduction)
    return scatter_nd(base, dst[:, None], rows, op, include_self, order)
