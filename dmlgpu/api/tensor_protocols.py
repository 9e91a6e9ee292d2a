"""What the Tensor's protocols (its methods in dmlgpu/api/tensor.py: no question is answered wrongly) share with
the rest of layer 2: ``ARRAY_FUNCTIONS``, NumPy's functions that run dmlgpu's on Tensors (filled by
dmlgpu/api/numpy_api.py; the others raise TypeError, as CuPy's arrays do), ``host_hint``, the message naming what
to do where dmlgpu computes nothing (elementwise arithmetic, comparisons), and the one casting rule wherever values
enter a Tensor: ``assigned``, NumPy's ``a[...] = value`` (its casts' warnings point at the user's line:
``cast_warnings``)."""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any, Callable, Iterator

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
        with cast_warnings():
            out[...] = value
    except (OverflowError, ValueError, TypeError) as e:
        raise type(e)(f"{who}: {e}") from None
    return out


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep     # dmlgpu/


def warn_at_user(message: str, category: type[Warning]) -> None:
    """warnings.warn(message, category) attributed to the innermost line outside dmlgpu (the user's call)."""
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


@contextlib.contextmanager
def cast_warnings() -> Iterator[None]:
    """NumPy's casts inside the block warn as NumPy's error state says (np.errstate: "warn" for overflow and
    invalid values by default), the RuntimeWarning pointing at the user's line that called dmlgpu rather than
    at dmlgpu's. Other settings ("raise", "ignore", "call", ...) are NumPy's own."""
    err = np.geterr()
    relayed: dict[str, Any] = {k: "call" for k, v in err.items() if v == "warn"}
    if not relayed or "call" in err.values():       # (a callback of the user's own stays theirs)
        yield
        return

    def relay(kind: str, flag: int) -> None:
        warn_at_user(f"{kind} encountered in cast", RuntimeWarning)
    with np.errstate(call=relay, **relayed):
        yield
