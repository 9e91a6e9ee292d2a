"""JAX's functional form of indexing a dmlgpu.Tensor: ``t.at[key].get()`` and ``.set() / .add() / .multiply() /
.min() / .max()`` (``Tensor.at``: tensor_protocols.AtRef, whose methods run ``at_get`` and ``at_update`` here), with
JAX's out-of-range modes, over NumPy's indexing (dmlgpu/api/indexing.py: the key parsed once, the gather or scatter
that runs it); one index Tensor is resolved by the kernels' own modes ("fill", "drop", "clamp"), nothing read back."""
from __future__ import annotations

import math
import sys
from typing import Any, cast

import numpy as np

from .functions import gather, scatter_nd
from .indexing import (Key, _column, _consumed, _entry, _int64, _same_device, _scatter_key, _values, getitem_key,
                       is_basic, parse, setitem)
from .tensor import Tensor
from . import tensor_protocols

# ---- JAX's functional form: t.at[key].get() / .set() / .add() / .multiply() / .min() / .max() ----

GET_MODES = (None, "promise_in_bounds", "clip", "fill")
UPDATE_MODES = (None, "promise_in_bounds", "clip", "drop")


def _jax_key(t: Tensor, key: Any, mode: str, who: str) -> tuple[Key, np.ndarray | None]:
    """The key parsed with JAX's out-of-range rule instead of NumPy's IndexError: negative indices count from the
    end (NumPy's), then "clip" (and "promise_in_bounds") clamp into range; "fill" and "drop" keep the in-range
    selections, and the mask of those that are (over the broadcast shape; None where all are) comes back. Tensor
    indices are read back (one synchronisation)."""
    parts = key if isinstance(key, tuple) else (key,)
    entries = [_entry(k, who) for k in parts]
    _same_device(t, entries, who)
    spans = []                          # (entry position, the axis of t it indexes) of each integer array / int
    axis = 0
    consumed = _consumed(entries)
    for pos, (kind, v) in enumerate(entries):
        if kind == "ellipsis":
            axis += t.ndim - consumed
        elif kind in ("int", "array"):
            spans.append((pos, axis))
            axis += 1
        elif kind == "slice":
            axis += 1
        elif kind == "bool":
            axis += v.ndim
    if axis > t.ndim:
        raise IndexError(f"{who}: too many indices for tensor: tensor is {t.ndim}-dimensional, but {axis} were "
                         f"indexed")
    arrays = {pos: _int64(np.asarray(entries[pos][1].numpy() if isinstance(entries[pos][1], Tensor)
                                     else entries[pos][1])) for pos, _ in spans}
    dims = {pos: t.shape[ax] for pos, ax in spans}
    try:
        bshape = np.broadcast_shapes(*(a.shape for a in arrays.values())) if arrays else ()
    except ValueError:
        raise IndexError(f"{who}: shape mismatch: indexing arrays could not be broadcast together with shapes "
                         f"{' '.join(str(a.shape) for a in arrays.values())}") from None
    keep = None
    fixed = list(parts)
    for pos, a in arrays.items():
        n = dims[pos]
        a = np.where(a < 0, a + n, a)
        if mode in ("fill", "drop"):
            ok = np.broadcast_to((a >= 0) & (a < n), bshape)
            keep = ok if keep is None else keep & ok
        a = np.clip(a, 0, max(n - 1, 0))
        fixed[pos] = a if a.ndim else int(a)
    if keep is not None and keep.all():
        keep = None
    return parse(t, tuple(fixed), who), keep


def at_get(t: Tensor, key: Any, mode: str | None, fill_value: Any) -> Tensor:
    """``t.at[key].get(mode=, fill_value=)`` (tensor_protocols.AtRef's contract)."""
    who = "Tensor.at[].get"
    if mode not in GET_MODES:
        raise ValueError(f"{who}: mode must be one of {GET_MODES}, not {mode!r}")
    if _device_key(t, key):           # one index Tensor: the kernels resolve JAX's modes, nothing read back
        if mode == "fill":
            return gather(t, key, mode="fill", fill_value=_fill_default(t.dtype) if fill_value is None else fill_value)
        return gather(t, key, mode="clamp")        # (DirectML's clamp: JAX's negative indices, then clipping)
    if is_basic(key):
        return t[key].copy()
    k, keep = _jax_key(t, key, mode or "clip", who)
    out = getitem_key(k)
    if keep is not None:
        if fill_value is None:
            fill_value = _fill_default(t.dtype)
        sel: list = [slice(None)] * out.ndim
        for j, arr in enumerate(np.nonzero(~keep)):
            sel[k.at + j] = arr
        setitem(out, tuple(sel), fill_value, who=who)
    return out


def at_update(t: Tensor, key: Any, value: Any, reduction: str, name: str, mode: str | None) -> Tensor:
    """``t.at[key].set / add / multiply / min / max(value, mode=)`` (tensor_protocols.AtRef's contract)."""
    who = f"Tensor.at[].{name}"
    if mode not in UPDATE_MODES:
        raise ValueError(f"{who}: mode must be one of {UPDATE_MODES}, not {mode!r}")
    out = t.copy()
    if _device_key(t, key):           # one index Tensor: scatter_nd with JAX's modes, nothing read back
        vals = _values(out, value, key.shape + t.shape[1:], who)
        scatter_mode: Any = "clamp" if mode in ("clip", "promise_in_bounds") else "drop"
        scatter_nd(out, _column(key), vals, reduction=cast(Any, reduction), mode=scatter_mode, out=out)
        return out
    if is_basic(key):
        k = parse(out, key, who)
    else:
        k, keep = _jax_key(out, key, mode or "drop", who)
        if keep is not None:           # the kept selections only, their values picked alike
            vals = _values(out, value, k.shape, who)
            nb = len(k.bshape)
            order = list(range(k.at, k.at + nb)) + [d for d in range(len(k.shape)) if not k.at <= d < k.at + nb]
            kept = np.nonzero(keep.reshape(-1))[0]
            if not kept.size:
                return out
            moved = vals if order == sorted(order) else vals.transpose(order).copy()
            rows = moved.reshape((math.prod(k.bshape),) + tuple(vals.shape[d] for d in order[nb:]))
            arrays = [np.broadcast_to(a, k.bshape).reshape(-1)[kept] for a in k.arrays]
            _scatter_key(out, k._replace(arrays=arrays, bshape=(kept.size,), at=0), rows[kept], reduction, who)
            return out
    _scatter_key(out, k, _values(out, value, k.shape, who), reduction, who)
    return out


def _device_key(t: Tensor, key: Any) -> bool:
    """Whether a JAX-form ``key`` is one integer index Tensor of ``t``'s device, into a packed ``t`` (the kernels'
    "fill", "drop" and "clamp" modes then resolve JAX's out-of-range rules on the device)."""
    return key.__class__ is Tensor and key._rt is t._rt and key.dtype.kind in "iu" and key.ndim > 0 and \
        key.dtype != np.uint64 and t.ndim > 0 and t.size > 0 and t._strides is None


def _fill_default(dtype: np.dtype) -> Any:
    """JAX's default fill value of a "fill" get: NaN for floats, the smallest signed or largest unsigned integer,
    True for bool."""
    if dtype == np.bool_:
        return True
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return np.nan


tensor_protocols.AT = sys.modules[__name__]
