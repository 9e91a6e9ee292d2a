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
    flat_data = data.reshape((-1,) + data.shape[b:])
    rows = [flat_data[(bi,) + t] for bi, t in _nd_targets(data.shape, indices, b)]
    if not rows:
        return np.empty(out_shape, dtype=data.dtype)
    return np.stack(rows).reshape(out_shape)


def scatter_nd(data, indices, updates):
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    out = data.copy()
    k = indices.shape[-1]
    rows = updates.reshape((-1,) + data.shape[k:])
    for (_, t), row in zip(_nd_targets(data.shape, indices, 0), rows):
        out[t] = row
    return out


def scatter_elements(data, indices, updates, axis=0):
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    axis %= data.ndim
    out = data.copy()
    resolved = resolve(indices, data.shape[axis])
    for pos in np.ndindex(*indices.shape):
        target = pos[:axis] + (int(resolved[pos]),) + pos[axis + 1:]
        out[target] = updates[pos]
    return out
