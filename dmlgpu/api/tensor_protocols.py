"""What the Tensor's protocols (its methods in dmlgpu/api/tensor.py: no question is answered wrongly) share with
the rest of layer 2: ``ARRAY_FUNCTIONS``, NumPy's functions that run dmlgpu's on Tensors (filled by
dmlgpu/api/numpy_api.py; the others raise TypeError, as CuPy's arrays do), ``host_hint``, the message naming what
to do where dmlgpu computes nothing (elementwise arithmetic, comparisons), and the one casting rule wherever values
enter a Tensor: ``assigned``, NumPy's ``a[...] = value``."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .interop import host_array

# NumPy function -> dmlgpu's function of the same signature, for Tensor arguments (__array_function__)
ARRAY_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim, np.size: lambda a, axis=None: (
        a.size if axis is None else a.shape[axis]),
}


def host_hint(what: str) -> str:
    return (f"{what} is not computed on a dmlgpu.Tensor (dmlgpu computes gathers and scatters, no elementwise "
            f"arithmetic or comparisons): download it with t.numpy() and use NumPy on the host")


# dmlgpu/api/indexing.py (advanced indexing, ufunc.at, Tensor.at), set when it is imported: the Tensor's methods
# reach it here (it imports the Tensor and the layer-2 functions, which import the Tensor)
INDEXING: Any = None

PYTHON_VALUES = (list, tuple, int, float, complex, bool)     # values NumPy's assignment checks one by one


def assigned(value: Any, dtype: Any, shape: tuple[int, ...] | None, who: str) -> np.ndarray:
    """``value`` as NumPy's ``a[...] = value`` puts it into an array ``a`` of ``shape`` and ``dtype``: the one
    casting rule wherever values enter a Tensor (Python ints out of the dtype's range raise OverflowError, NaN
    into an integer dtype ValueError, as NumPy's; arrays cast as NumPy casts them in an assignment).
    ValueError naming ``who`` for a shape that does not broadcast. ``shape`` None: the value's own."""
    if not isinstance(value, PYTHON_VALUES + (np.ndarray, np.generic)):
        value = host_array(value)
    if shape is None:
        shape = np.shape(value)
    try:
        vshape: tuple[int, ...] | None = np.shape(value)
    except ValueError:                   # (a ragged list: the assignment says why)
        vshape = None
    if vshape is not None:
        trimmed = vshape[next((i for i, n in enumerate(vshape) if n != 1), len(vshape)):]   # (leading 1s go)
        if len(trimmed) > len(shape) or any(v != 1 and v != n for v, n in zip(trimmed[::-1], shape[::-1])):
            raise ValueError(f"{who}: an array of shape {vshape} does not broadcast to the tensor's shape {shape}")
    out = np.empty(shape, np.dtype(dtype))
    try:
        out[...] = value
    except (OverflowError, ValueError) as e:
        raise type(e)(f"{who}: {e}") from None
    return out
