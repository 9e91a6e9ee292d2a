"""The Tensor's protocols (``TensorProtocols``, which dmlgpu.Tensor inherits: no question is answered wrongly) and
what they share with the rest of layer 2: ``ARRAY_FUNCTIONS``, NumPy's functions that run dmlgpu's on Tensors (filled by
dmlgpu/api/numpy_api.py; the others raise TypeError, as CuPy's arrays do), ``host_hint``, the message naming what
to do where dmlgpu computes nothing (elementwise arithmetic, comparisons), and the one casting rule wherever values
enter a Tensor: ``assigned``, NumPy's ``a[...] = value`` (its casts' warnings point at the user's line:
``cast_warnings``)."""
from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, NoReturn, TypeVar

import numpy as np

from .interop import host_array

if TYPE_CHECKING:
    from typing_extensions import Self

    from .device import Device, Runtime

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


class TensorFields:
    """The Tensor's own attributes that the classes it inherits (TensorProtocols, tensor_views.TensorViews) use,
    declared once for the type checker."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    offset: int
    _strides: tuple[int, ...] | None

    if TYPE_CHECKING:
        @property
        def ndim(self) -> int: ...

        @property
        def size(self) -> int: ...


class TensorProtocols(TensorFields):
    """dmlgpu.Tensor's protocols, as its own methods (``Tensor`` inherits them): rich comparisons (TypeError, never
    an answer by identity; hashed by identity), ``in``, NumPy's ufuncs (``ufunc.at``) and functions
    (``ARRAY_FUNCTIONS``), Python scalars, copies, and its representation; the other Tensor attributes that they
    use are declared here."""

    if TYPE_CHECKING:
        @property
        def strides(self) -> tuple[int, ...]: ...

        @property
        def device(self) -> Device: ...

        @property
        def _rt(self) -> Runtime: ...

        def item(self, *args: Any) -> Any: ...

        def copy(self) -> Self: ...

        def numpy(self) -> np.ndarray: ...

    def _compare(self, other: Any, op: str) -> NoReturn:
        """A rich comparison: TypeError, never an answer by identity."""
        raise TypeError(f"Tensor {op} {type(other).__name__}: {host_hint('a comparison')} "
                        f"(t.numpy() {op} ...), or `t is u` to ask whether two Tensors are one object")

    def __eq__(self, other: Any) -> Any:
        self._compare(other, "==")

    def __ne__(self, other: Any) -> Any:
        self._compare(other, "!=")

    def __lt__(self, other: Any) -> Any:
        self._compare(other, "<")

    def __le__(self, other: Any) -> Any:
        self._compare(other, "<=")

    def __gt__(self, other: Any) -> Any:
        self._compare(other, ">")

    def __ge__(self, other: Any) -> Any:
        self._compare(other, ">=")

    __hash__ = object.__hash__             # (by identity, as before: Tensors stay dictionary keys)

    def __contains__(self, value: Any) -> bool:
        raise TypeError(f"`x in t` for a Tensor: {host_hint('membership')} (x in t.numpy())")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ``ufunc.at(t, key, values)`` for np.add, np.multiply, np.maximum and np.minimum: in place on
        the device, each update applied in row-major order (NumPy's order, so NumPy's bits; key and values as
        ``t[key] = values`` takes them). Every other ufunc call raises TypeError (dmlgpu computes no elementwise
        arithmetic).

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> grad = dmlgpu.zeros(3, np.float32)
        >>> np.add.at(grad, [0, 2, 0], np.float32(1.5)); grad.numpy()
        array([3. , 0. , 1.5], dtype=float32)
        """
        if method == "at" and inputs and inputs[0] is self and not kwargs:
            INDEXING.ufunc_at(ufunc, *inputs)
            return None
        if method == "at":
            raise TypeError(f"numpy.{ufunc.__name__}.at: the target must be the Tensor itself (a Tensor's values go "
                            f"into a NumPy target through t.numpy())")
        raise TypeError(f"numpy.{ufunc.__name__}: {host_hint('a NumPy ufunc')} (ufunc.at runs for "
                        f"np.add, np.multiply, np.maximum and np.minimum)")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy's functions on Tensors: dmlgpu's where ARRAY_FUNCTIONS has them (results are Tensors), else
        TypeError naming t.numpy() (no silent download)."""
        impl = ARRAY_FUNCTIONS.get(func)
        if impl is None:
            name = getattr(func, "__name__", str(func))
            raise TypeError(f"numpy.{name} does not run on a dmlgpu.Tensor: dmlgpu has take, take_along_axis and "
                            f"put_along_axis (np.{name} of t.numpy() runs on a host copy)")
        return impl(*args, **kwargs)

    def _one(self, who: str) -> Any:
        if self.size != 1:
            raise TypeError(f"{who}() of a Tensor of {self.size} elements: only a one-element Tensor converts to a "
                            f"Python scalar (use t.item(i) or t.numpy())")
        return self.item()

    def __float__(self) -> float:
        return float(self._one("float"))

    def __int__(self) -> int:
        return int(self._one("int"))

    def __complex__(self) -> complex:
        return complex(self._one("complex"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"operator.index() of a Tensor of dtype {self.dtype}: only integer Tensors of one element "
                            f"are indices")
        return int(self._one("operator.index"))

    def __copy__(self) -> Self:
        """copy.copy(t): t.copy() (a packed copy on the device), as copy.copy of an ndarray copies its data."""
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self.copy()

    # ---- representation ----
    def __repr__(self) -> str:
        where = f" at byte offset {self.offset}" if self.offset else ""
        if self._strides is not None:
            where += f" with strides {self.strides}"
        return (f"<dmlgpu.Tensor {self.shape} {self.dtype} on device {self.device.info.index} "
                f"({self.device.info.name}){where}>")

    def __str__(self) -> str:
        """repr() and, outside a recording, the values as ``str(ndarray)`` shows them under NumPy's print options
        (np.get_printoptions(), np.printoptions): a Tensor of up to ``threshold`` elements (default 1000) is
        downloaded whole; a larger one is summarised with "...", as NumPy summarises it, and only the items shown
        (``edgeitems``, default 3, at each end of each axis, and one more per long axis) are gathered on the
        device and downloaded.

        >>> import numpy as np, dmlgpu
        >>> print(dmlgpu.tensor(np.arange(2000, dtype=np.int32)))     # doctest: +ELLIPSIS
        <dmlgpu.Tensor (2000,) int32 on device 0 (...)>
        [   0    1    2 ... 1997 1998 1999]
        """
        if self._rt.active_recording() is not None:
            return repr(self)
        options = np.get_printoptions()
        if self.size <= options["threshold"] or self.ndim == 0:
            return f"{self!r}\n{self.numpy()}"
        edge = options["edgeitems"]
        # per long axis: its first and last ``edge`` items and one between (2 * edge + 1, so that NumPy summarises
        # that axis as it would the whole, showing the same items, formatted alike), taken on the device (np.take:
        # dmlgpu's, through __array_function__), the longest axis first
        shown: Any = self
        for axis in sorted(range(self.ndim), key=lambda k: -self.shape[k]):
            n = self.shape[axis]
            if n > 2 * edge + 1:
                shown = np.take(shown, np.r_[0:edge, edge, n - edge:n], axis=axis)
        return f"{self!r}\n{np.array2string(shown.numpy(), threshold=0)}"
