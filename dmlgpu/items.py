"""Items of any fixed size (records, "S3" strings, void of any size) for NumPy's names: an array or Tensor
of such items as one of units (the widest of 1, 2, 4, 8 or 16 bytes that divides the item), one more
dimension of ``itemsize // unit`` units, moved bit-exact by the kernels and seen as the items again after."""
from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import UNITS
from .tensor import Tensor


def odd(dtype: np.dtype[Any]) -> bool:
    """True for items the kernels do not move as one unit (any size but 1, 2, 4, 8 or 16 bytes), of no
    Python objects."""
    return dtype.itemsize not in UNITS and dtype.itemsize > 0 and not dtype.hasobject


def unit_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The widest unit dividing the item size, as a void dtype."""
    return np.dtype(f"V{next(u for u in sorted(UNITS, reverse=True) if dtype.itemsize % u == 0)}")


def as_units(x: Any) -> Any:
    """``x`` (ndarray or Tensor, at least 1-d) as units: shape ``x.shape + (k,)`` (a Tensor: a view of a
    packed copy, or of itself when packed)."""
    unit = unit_of(x.dtype)
    k = x.dtype.itemsize // unit.itemsize
    if isinstance(x, Tensor):
        return x._packed().view(unit).reshape(x.shape + (k,))
    return np.ascontiguousarray(x).reshape(-1).view(unit).reshape(x.shape + (k,))


def from_units(x: Any, dtype: np.dtype[Any]) -> Any:
    """Units of shape ``(..., k)`` (as_units) seen as items of ``dtype`` again, of shape ``x.shape[:-1]``."""
    if isinstance(x, Tensor):
        return x._packed().reshape(x.shape[:-1] + (x.shape[-1],)).view(dtype).reshape(x.shape[:-1])
    return np.ascontiguousarray(x).view(dtype).reshape(x.shape[:-1])


def spread(idx: Any, k: int) -> Any:
    """Indices repeated along one more dimension of ``k`` (the units of an item): NumPy's by broadcasting, a
    Tensor's as a view of stride 0."""
    if isinstance(idx, Tensor):
        return idx._view(idx.shape + (k,), idx.dtype, idx.offset, idx._element_strides() + (0,))
    return np.broadcast_to(np.asarray(idx)[..., None], np.shape(idx) + (k,))
