"""Items of any fixed size (records, "S3" strings, void of any size): an array or Tensor of such items as one
of units (the widest of 1, 2, 4, 8 or 16 bytes that divides the item), one more dimension of
``itemsize // unit`` units, moved bit-exact by the kernels and seen as the items again after. NumPy's names
(take, take_along_axis) and layer 2's operators (``on_units``: driver.call's operands for such data) move them so."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..plans import reduction_args as _reduction
from .arguments import _axis, _host_array, named
from ..kernels.table import UNITS
from .tensor import Tensor

AXIS_OPERATORS = {"gather": 0, "gather_elements": 0, "scatter_elements": 0}   # where args holds the axis
SPREAD_OPERATORS = ("gather_elements", "scatter_elements")    # their indices have data's rank: spread too
REDUCTIONS_AT = {"scatter_nd": 0, "scatter_elements": 1}       # where args holds reduction, include_self, order
OPERATORS = frozenset(AXIS_OPERATORS) | {"gather_nd", "scatter_nd"}   # the operators call() runs on units


def odd(dtype: np.dtype[Any]) -> bool:
    """True for items the kernels do not move as one unit (any size but 1, 2, 4, 8 or 16 bytes), of no
    Python objects."""
    return dtype.itemsize not in UNITS and dtype.itemsize > 0 and not dtype.hasobject


def unit_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The widest unit dividing the item size, as a void dtype."""
    return np.dtype(f"V{next(u for u in sorted(UNITS, reverse=True) if dtype.itemsize % u == 0)}")


def as_units(x: Any) -> Any:
    """``x`` (ndarray or Tensor, 0-d included) as units: shape ``x.shape + (k,)`` (a Tensor: a view of a
    packed copy, or of itself when packed)."""
    unit = unit_of(x.dtype)
    k = x.dtype.itemsize // unit.itemsize
    if isinstance(x, Tensor):        # (a packed view at an offset stays a view: in-place scatters reach it)
        return (x if x._strides is None else x.copy()).reshape(x.shape or (1,)).view(unit).reshape(x.shape + (k,))
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


def on_units(op: str, data: Any, indices: Any, updates: Any, args: tuple, out: Any, fill: bytes) \
        -> tuple[Any, Any, Any, tuple, Any, bytes, Callable[[Any], Any]]:
    """Operator ``op``'s operands of items of any size (odd) as units, for driver.call to run once: (data,
    indices, updates, args, out, fill) on units, with the indices spread along their dimension where they have
    data's rank, and ``finish(result)``, which sees the result as the items again, written into ``out`` (in place on
    a packed Tensor's own bytes: the units' run writes them). Operators of other names raise as before (the run
    refuses the item size); reductions raise TypeError (no arithmetic on such items). Errors are named ``op``."""
    dtype = data.dtype
    try:
        upd = None
        if updates is not None:
            upd = updates if isinstance(updates, Tensor) else _host_array(updates)
            if upd.dtype != dtype:
                raise TypeError(f"updates has dtype {upd.dtype}; it must be data's dtype ({dtype})")
        if op in REDUCTIONS_AT:
            at = REDUCTIONS_AT[op]
            _reduction.check(args[at], dtype, args[at + 1], args[at + 2])
        if op in AXIS_OPERATORS:
            args = (_axis(args[0], data.ndim),) + args[1:]
        unit = unit_of(dtype).itemsize
        if fill != fill[:unit] * (len(fill) // unit):
            raise ValueError(f"mode='fill' moves items of {dtype.itemsize} bytes as units of {unit}, which take one "
                             f"fill value: a fill_value whose bytes repeat every {unit} bytes (such as 0), not one "
                             f"of bytes {fill.hex()}")
        fill = fill[:unit]
    except (TypeError, ValueError, IndexError) as e:
        raise named(e, op) from None
    units = as_units(data)
    k = units.shape[-1]
    idx = spread(indices, k) if op in SPREAD_OPERATORS else indices
    upd_units = None if upd is None else as_units(upd)
    if out is data and isinstance(data, Tensor) and data._strides is None:      # in place: data's own bytes
        return units, idx, upd_units, args, units, fill, lambda result: out

    def finish(result: Any) -> Any:
        items = from_units(result, dtype)
        if out is None:
            return items
        if out.shape != items.shape or out.dtype != dtype:
            raise ValueError(f"{op}: out has shape {out.shape} and dtype {out.dtype}; the result has shape "
                             f"{items.shape} and dtype {dtype}")
        if isinstance(out, Tensor):
            out.write(items)
        else:
            np.copyto(out, items.numpy() if isinstance(items, Tensor) else items)
        return out
    return units, idx, upd_units, args, None, fill, finish
