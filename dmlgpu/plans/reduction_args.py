"""The arguments of the scatter reductions and their rules, shared by both layers: the reductions' names
(layer 1's REDUCTIONS, layer 2's with "mean" and PyTorch's aliases), their orders, the dtypes each takes and
the kernel variant that computes it (``kernel_for``), and the checks (``check`` and its parts) that raise, before
any planning, TypeError or ValueError naming what to pass. The plans themselves: reduction.py."""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels

REDUCTIONS = ("none", "add", "mul", "min", "max")   # layer 1: the descriptors' Reduction member (layer1/descriptors.py)
LAYER2_REDUCTIONS = REDUCTIONS + ("mean",)          # scatter_nd / scatter_elements' reduction=
PYTORCH_NAMES = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}   # layer 2's aliases (scatter_reduce's)
ORDERS = ("row-major", "tree", "fixed-point")      # their order=
FLOAT_KINDS = "f"     # with NARROW_FLOATS: the dtypes "mean" takes
_BOOL_OPS = {"add": "max", "max": "max", "mul": "min", "min": "min"}
# ml_dtypes' float types by dtype name (recognised without importing ml_dtypes) -> kernels.NARROW_FLOATS kind
NARROW_FLOATS = {"bfloat16": ("bf", 2), "float8_e4m3fn": ("f8e4m3fn", 1), "float8_e5m2": ("f8e5m2", 1)}


def check_reduction(reduction, allowed: tuple = LAYER2_REDUCTIONS + tuple(PYTORCH_NAMES)) -> str:
    """``reduction`` if one of ``allowed`` (layer 2's, PYTORCH_NAMES aliased; layer 1's REDUCTIONS), else ValueError."""
    if not isinstance(reduction, str) or reduction not in allowed:
        raise ValueError(f"reduction must be one of {', '.join(map(repr, allowed))}, not {reduction!r}")
    return PYTORCH_NAMES.get(reduction, reduction)


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
    """``include_self`` as the planned-call signature takes it ("include_self" or "exclude_self" for a bool; anything
    else as it is, which keeps the call out of the caches, so that its checks raise)."""
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


def check(reduction, dtype, include_self=True, order="row-major", name: str = "scatter") -> str:
    """Validates ``reduction`` (ValueError), ``include_self`` (TypeError: not a bool), ``order`` (ValueError)
    and, unless the reduction is "none", that ``dtype`` supports it (TypeError); order="fixed-point" on a float
    reduction that rounds other than add and mean of at most 4 bytes: ValueError naming the function ``name``."""
    reduction = check_reduction(reduction)
    check_include_self(include_self)
    check_order(order)
    if reduction != "none":
        kernel_for(dtype, reduction)
        if order == "fixed-point" and is_float(dtype) and (reduction == "mul" or (
                reduction in ("add", "mean") and np.dtype(dtype).itemsize == 8)):
            raise ValueError(f"{name}: order='fixed-point' takes reduction 'add' and 'mean' on float32, float16, "
                             f"bfloat16 and float8 (and the reductions whose result does not depend on the order), "
                             f"not reduction {reduction!r} on {np.dtype(dtype)}; use order='row-major' or 'tree'")
    return reduction
