"""The parameters and errors that the layer-2 functions' docstrings share, written once: ``documented``
fills a docstring's ``%(name)s`` parts from ``PARTS``."""
from __future__ import annotations

from typing import Any, Callable, TypeVar


PARTS = {
    "device_mode": """\
    device : dmlgpu.Device, int or None
        Where it runs: a Device or a device index (``dmlgpu.devices()``); default: a Tensor operand's device,
        else ``dmlgpu.default_device()``.
    mode : {"clamp", "raise"}
        "clamp" (DirectML's): a negative index counts from the end once, then clamps into range; "raise":
        IndexError for an index outside [-n, n): NumPy indices before any GPU work; Tensor indices are
        checked on the device: the result, and what later calls write from it, are failed, and every read of
        them raises it (synchronize() raises it once where no read has: dmlgpu/plans/index_check.py).""",
    "raises": """\
    TypeError
        A dtype dmlgpu cannot move, non-integer indices, a non-integer axis.
    ValueError
        Shapes that do not fit together, an unknown mode (AxisError, also an IndexError, for an axis out of
        range).
    IndexError
        mode="raise" and an index out of range.
    dmlgpu.DeviceError
        A Tensor of another device, or tensors larger than the device can hold.""",
    "reduction": """\
    reduction : {"none", "add", "mul", "min", "max", "mean", "sum", "prod", "amax", "amin"}
        PyTorch's scatter_reduce names "sum", "prod", "amax" and "amin" are "add", "mul", "max" and "min".
        "none": the last update for a target (row-major order of the updates) wins. The others (ONNX
        opsets 16/18) combine every update into its target in that order, bit-reproducibly: integers wrap,
        floats round to nearest even, min/max propagate NaN, bool's add/max are or and mul/min are and.
        "mean" (float dtypes; PyTorch's scatter_reduce): the "add" sum divided once, rounded to nearest
        even in the dtype, by the target's count of updates (+ 1 for its own value with include_self); a NaN,
        infinite or zero sum stays as it is; integer and bool data raise TypeError.
        float32 uses the device's arithmetic, which may flush subnormals on some GPUs (float16, float64 and
        ml_dtypes' bfloat16, float8_e4m3fn and float8_e5m2, bit-exact as ml_dtypes computes them, never
        do); other dtypes raise TypeError (details: dmlgpu/plans/reduction.py).
    include_self : bool
        True (the default; ONNX's rule): a target's own value takes part in its reduction. False
        (PyTorch's scatter_reduce): a target with updates reduces its updates alone; a target without
        keeps its value. No effect with reduction="none"; TypeError for a non-bool.
    order : {"row-major", "tree", "fixed-point"}
        How a target's updates combine: "row-major" (the default) one by one in row-major order; "tree"
        (float add, mul and mean) in a fixed pairwise tree over them in row-major order, shaped by their
        count L alone: T(u) = u, T(u_0..u_{L-1}) = combine(T(u_0..u_{H-1}), T(u_H..u_{L-1})) with H the
        largest power of two below L, then combined into the target's value (include_self). Its rounding
        errors grow as log L instead of L. "fixed-point" (add and mean of float32, float16, bfloat16,
        float8): the same bits on every device and run for any order of the updates: each target's terms
        summed exactly as 64-bit integers scaled to their largest exponent (each term rounded to the
        fixed point's last bit: at most 2^(H - 63) of the largest term, H = bit_length(update elements
        + 1)), then rounded once; any NaN, or +inf with -inf, gives NaN (dmlgpu/plans/reduction_fixed.py);
        ValueError for float mul and float64. Other reductions: the same bits either way. ValueError for
        another value; DeviceError for operands held in several blocks.""",
}
_RANGE = """An index is out of range outside [-n, n) (signed types; negative ones count from the end) or [0, n)
        (unsigned types, all 64 bits of the value)."""
_MODE = 'mode : {"clamp", "raise"}'
PARTS["gather_modes"] = PARTS["device_mode"].replace(_MODE, 'mode : {"clamp", "raise", "fill"}') \
    + """ "fill" (JAX's): an output element whose index tuple has any index out of range is ``fill_value``;
        the others are what "clamp" gives (so padding ids at or past n mask their rows; -1 still counts from
        the end). """ + _RANGE + """
    fill_value : scalar, optional
        mode="fill"'s value (default 0), converted to ``data``'s dtype as NumPy's assignment converts it
        (``a[...] = fill_value``: OverflowError for a Python int out of its range, ValueError for NaN into an
        integer dtype); ValueError with another mode. Items of other sizes than 1, 2, 4, 8 or 16 bytes take
        one whose bytes repeat every unit they are moved in (such as 0)."""
PARTS["scatter_modes"] = PARTS["device_mode"].replace(_MODE, 'mode : {"clamp", "raise", "drop"}') \
    + """ "drop" (JAX's): an update whose index tuple has any index out of range is skipped (it writes
        nothing, and takes no part in a reduction or a mean's count); the result is that of the call without
        it. """ + _RANGE
PARTS["out"] = """\
    out : Tensor or np.ndarray, optional
        Receives the result and is returned: exactly the result's shape and dtype (ValueError otherwise,
        before any GPU work). A Tensor of the call's device is written there (queued); a NumPy array only
        where the call returns NumPy arrays. An ``out`` that shares memory with an operand gets the result
        through a new Tensor copied into it."""
PARTS["scatter_out"] = PARTS["out"] + """ It may be ``data`` itself: the call then updates ``data`` in
        place and runs only the scatter (no copy of ``data``); a reduction folds into the existing values in
        the same order, with the same bits, as the copying call.
    unique_indices : bool
        A promise that no two updates address the same element (JAX's name): the scatter may skip settling
        collisions between them. The result is defined only when the promise holds; it is not checked."""
_F = TypeVar("_F", bound=Callable[..., Any])


def documented(fn: _F) -> _F:
    """``fn`` with the shared parts of its docstring (``%(name)s``: PARTS) filled in."""
    fn.__doc__ = (fn.__doc__ or "") % PARTS
    return fn
