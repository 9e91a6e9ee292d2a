"""NumPy reference implementations (ONNX semantics, DirectML clamping) that tests and the demo check
against. They are written for clarity, not speed: scatters loop over the updates in row-major order, so
the last update of a duplicated target wins, as dmlgpu guarantees."""
from __future__ import annotations

import numpy as np

from .index_map import resolve


def gather(data, indices, axis=0):
    data, indices = np.asarray(data), np.asarray(indices)
    axis %= data.ndim
    return np.take(data, resolve(indices, data.shape[axis]), axis=axis)


def gather_elements(data, indices, axis=0):
    data, indices = np.asarray(data), np.asarray(indices)
    axis %= data.ndim
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


def gather_nd(data, indices, batch_dims=0):
    data, indices = np.asarray(data), np.asarray(indices)
    b, k = batch_dims, indices.shape[-1]
    out_shape = indices.shape[:-1] + data.shape[b + k:]
    flat_data = data.reshape((int(np.prod(data.shape[:b])),) + data.shape[b:])
    rows = [flat_data[(bi,) + t] for bi, t in _nd_targets(data.shape, indices, b)]
    if not rows:
        return np.empty(out_shape, dtype=data.dtype)
    return np.stack(rows).reshape(out_shape)


def scatter_nd(data, indices, updates, reduction="none"):
    """ONNX ScatterND: a sequential loop over the update rows in row-major order (the last one of a
    duplicated target wins, or, with a reduction, each one combines into it)."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    out = data.copy()
    k = indices.shape[-1]
    rows = updates.reshape((int(np.prod(indices.shape[:-1])),) + data.shape[k:])
    for (_, t), row in zip(_nd_targets(data.shape, indices, 0), rows):
        out[t] = combine(reduction, out[t], row)
    return out


def scatter_elements(data, indices, updates, axis=0, reduction="none"):
    """ONNX ScatterElements: a sequential loop over the updates in row-major order."""
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    axis %= data.ndim
    out = data.copy()
    resolved = resolve(indices, data.shape[axis])
    for pos in np.ndindex(*indices.shape):
        target = pos[:axis] + (int(resolved[pos]),) + pos[axis + 1:]
        out[target] = combine(reduction, out[target], updates[pos])
    return out


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
