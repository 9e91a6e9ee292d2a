"""Python's and NumPy's protocols on a dmlgpu.Tensor (module functions that Tensor takes as its methods): no
question is answered wrongly. Comparisons, ``in`` and NumPy's ufuncs raise TypeError naming what to do (dmlgpu
computes no elementwise arithmetic); NumPy's functions dispatch to dmlgpu's where it has them (ARRAY_FUNCTIONS,
filled by dmlgpu/api/numpy_api.py) and raise TypeError otherwise, as CuPy's arrays do; ``float()``, ``int()``,
``complex()`` and ``operator.index()`` of a one-element Tensor; ``copy.copy`` and ``copy.deepcopy`` copy on the
device; pickling stores the data (unpickling uploads it to the default device). And the one casting rule
wherever values enter a Tensor: ``assigned``, NumPy's ``a[...] = value``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .interop import host_array

if TYPE_CHECKING:
    from .tensor import Tensor

# NumPy function -> dmlgpu's function of the same signature, for Tensor arguments (__array_function__)
ARRAY_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim, np.size: lambda a, axis=None: (
        a.size if axis is None else a.shape[axis]),
}


def _host_hint(what: str) -> str:
    return (f"{what} is not computed on a dmlgpu.Tensor (dmlgpu computes gathers and scatters, no elementwise "
            f"arithmetic or comparisons): download it with t.numpy() and use NumPy on the host")


def compare(op: str) -> Callable[[Any, Any], Any]:
    """The rich comparison ``op`` ("==", "<", ...): TypeError, never an answer by identity."""
    def method(self: "Tensor", other: Any) -> Any:
        raise TypeError(f"Tensor {op} {type(other).__name__}: {_host_hint('a comparison')} "
                        f"(t.numpy() {op} ...), or `t is u` to ask whether two Tensors are one object")
    method.__name__ = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__",
                       ">=": "__ge__"}[op]
    return method


def __contains__(self: "Tensor", value: Any) -> bool:
    raise TypeError(f"`x in t` for a Tensor: {_host_hint('membership')} (x in t.numpy())")


def __array_ufunc__(self: "Tensor", ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    raise TypeError(f"numpy.{ufunc.__name__}: {_host_hint('a NumPy ufunc')}")


def __array_function__(self: "Tensor", func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    """NumPy's functions on Tensors: dmlgpu's where ARRAY_FUNCTIONS has them (results are Tensors), else
    TypeError naming t.numpy() (no silent download)."""
    impl = ARRAY_FUNCTIONS.get(func)
    if impl is None:
        name = getattr(func, "__name__", str(func))
        raise TypeError(f"numpy.{name} does not run on a dmlgpu.Tensor: dmlgpu has take, take_along_axis and "
                        f"put_along_axis (np.{name} of t.numpy() runs on a host copy)")
    return impl(*args, **kwargs)


def _one(self: "Tensor", who: str) -> Any:
    if self.size != 1:
        raise TypeError(f"{who}() of a Tensor of {self.size} elements: only a one-element Tensor converts to a "
                        f"Python scalar (use t.item(i) or t.numpy())")
    return self.item()


def __float__(self: "Tensor") -> float:
    return float(_one(self, "float"))


def __int__(self: "Tensor") -> int:
    return int(_one(self, "int"))


def __complex__(self: "Tensor") -> complex:
    return complex(_one(self, "complex"))


def __index__(self: "Tensor") -> int:
    if self.dtype.kind not in "iu":
        raise TypeError(f"operator.index() of a Tensor of dtype {self.dtype}: only integer Tensors of one element "
                        f"are indices")
    return int(_one(self, "operator.index"))


def __copy__(self: "Tensor") -> "Tensor":
    """copy.copy(t): t.copy() (a packed copy on the device), as copy.copy of an ndarray copies its data."""
    return self.copy()


def __deepcopy__(self: "Tensor", memo: dict) -> "Tensor":
    return self.copy()


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
