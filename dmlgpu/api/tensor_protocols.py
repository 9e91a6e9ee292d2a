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
from typing import Any, Callable, Generic, Iterator, TypeVar

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
# dmlgpu/api/indexing_at.py (Tensor.at: JAX's functional form), set when it is imported (it imports indexing.py)
AT: Any = None
# dmlgpu/api/dlpack.py (Tensor.__dlpack__, __dlpack_device__), set when it is imported (it imports the Tensor)
DLPACK: Any = None

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


_T = TypeVar("_T")


class AtRef(Generic[_T]):
    """``t.at[key]``: JAX's functional updates of a Tensor (jax.Array.at): each method returns a new Tensor and
    leaves ``t`` unchanged. ``mode``: None (JAX's default: a get clamps out-of-range indices, an update drops
    them), "promise_in_bounds" (clamped here), "clip", "fill" (get: out-of-range selections read ``fill_value``,
    by default NaN for floats, the smallest value for signed integers, the largest for unsigned, True for bool)
    or "drop" (updates: out-of-range updates are skipped). Negative indices count from the end first, as JAX's.
    ``indices_are_sorted`` and ``unique_indices`` are hints (accepted; results do not depend on them). Duplicate
    targets: ``set`` keeps the last in row-major order (JAX leaves it unspecified), the reductions apply every
    update in row-major order (NumPy's ``ufunc.at`` bits). Keys and values as ``t[key] = value`` takes them
    (dmlgpu/api/indexing.py). A key that is one index Tensor runs on the device (the gathers' mode="fill" and the
    scatters' mode="drop", nothing read back); Tensor indices in other keys are read back."""

    def __init__(self, t: _T, key: Any):
        self.t, self.key = t, key

    def get(self, *, mode: str | None = None, fill_value: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> _T:
        """``t[key]`` with JAX's out-of-range ``mode``."""
        out: _T = AT.at_get(self.t, self.key, mode, fill_value)
        return out

    def _update(self, values: Any, reduction: str, name: str, mode: str | None) -> _T:
        out: _T = AT.at_update(self.t, self.key, values, reduction, name, mode)
        return out

    def set(self, values: Any, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> _T:
        """A copy of ``t`` with ``t[key] = values`` (duplicates: the last in row-major order wins)."""
        return self._update(values, "none", "set", mode)

    def add(self, values: Any, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> _T:
        """A copy of ``t`` with ``np.add.at(t, key, values)`` applied."""
        return self._update(values, "add", "add", mode)

    def multiply(self, values: Any, *, mode: str | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False) -> _T:
        """A copy of ``t`` with ``np.multiply.at(t, key, values)`` applied."""
        return self._update(values, "mul", "multiply", mode)

    def min(self, values: Any, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> _T:
        """A copy of ``t`` with ``np.minimum.at(t, key, values)`` applied."""
        return self._update(values, "min", "min", mode)

    def max(self, values: Any, *, mode: str | None = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> _T:
        """A copy of ``t`` with ``np.maximum.at(t, key, values)`` applied."""
        return self._update(values, "max", "max", mode)


class At(Generic[_T]):
    """``Tensor.at``: ``t.at[key]`` is an AtRef."""

    def __init__(self, t: _T):
        self.t = t

    def __getitem__(self, key: Any) -> AtRef[_T]:
        return AtRef(self.t, key)
