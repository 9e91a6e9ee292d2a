"""The layer-2 functions' signatures as a type checker sees them, written once per signature.

A call's result is ``out`` when one is given (its type), else a Tensor when an operand is a Tensor, else a
NumPy array: each signature is a Protocol whose overloaded ``__call__`` says so, and a function takes it
through the decorator of its signature (``along_axis``, ``batch_dims``, ``scatter_nd``,
``scatter_elements``), which mypy checks the function against and which returns the function itself (its
``__name__``, ``__doc__`` and ``inspect.signature`` stay the function's own). gather and gather_elements
share one signature. The keywords every function takes (``device``, ``mode``; a scatter's reduction
keywords) are written once too, as the TypedDicts ``Where``, ``Gathering`` and ``Scattering``.

A Tensor is an ArrayLike too (its typed ``__array__``, for NumPy's stubs), so the overloads that give a
Tensor come first (mypy takes the first that matches), and each parameter has one type, ``IndexLike`` or
``Tensor | ArrayInput``, in every overload that does not require a Tensor there: where an argument's type
holds Any (``np.array(...)`` is ``ndarray[..., dtype[Any]]``) and matches parameters of different types in
overloads of different results, mypy gives Any instead of the first match.

Nothing here runs a call: dmlgpu.api.functions holds the functions and dmlgpu.api.driver their common call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, TypeVar, Union, overload

import numpy as np
from numpy.typing import ArrayLike

from .device import Device
from .tensor import Tensor

if TYPE_CHECKING:
    from typing_extensions import Unpack
    from .fused_args import EdgeGroups      # typing's from Python 3.11; only mypy reads these annotations

Mode = Literal["clamp", "raise"]
GatherMode = Literal["clamp", "raise", "fill"]     # the layer-2 gathers' modes ("fill": with ``fill_value``)
ScatterMode = Literal["clamp", "raise", "drop"]    # the layer-2 scatters
Reduction = Literal["none", "add", "mul", "min", "max", "mean", "sum", "prod", "amax", "amin"]  # (PyTorch's aliases)
Order = Literal["row-major", "tree", "fixed-point"]
DeviceLike = Union[Device, int, None]     # a Device, a device index, or None: the default (device.as_device)
ArrayInput = ArrayLike                    # an ndarray, what NumPy can view (interop.host_array), lists, scalars
IndexLike = Union[Tensor, ArrayInput]

_O = TypeVar("_O", Tensor, np.ndarray)    # out=: the result is out


class Where(TypedDict, total=False):
    """The keyword of every layer-2 function on where it runs."""
    device: DeviceLike


class Gathering(Where, total=False):
    """A gather's keywords but ``out``: where it runs and how it treats indices."""
    mode: GatherMode
    fill_value: Any


class Scattering(Where, total=False):
    """A scatter's keywords but ``out``."""
    mode: ScatterMode
    reduction: Reduction
    include_self: bool
    order: Order
    unique_indices: bool


class AlongAxis(Protocol):
    """``f(data, indices, axis=0, *, device=None, mode="clamp", fill_value=None, out=None)``: gather,
    gather_elements."""
    @overload
    def __call__(self, data: Any, indices: Any, axis: int = 0, *, out: _O, **kw: Unpack[Gathering]) -> _O: ...
    @overload
    def __call__(self, data: Tensor, indices: IndexLike, axis: int = 0, *, out: None = None,
                 **kw: Unpack[Gathering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: Tensor, axis: int = 0, *, out: None = None,
                 **kw: Unpack[Gathering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: IndexLike, axis: int = 0, *, out: None = None,
                 **kw: Unpack[Gathering]) -> np.ndarray: ...


class BatchDims(Protocol):
    """``f(data, indices, batch_dims=0, *, device=None, mode="clamp", fill_value=None, out=None)``: gather_nd."""
    @overload
    def __call__(self, data: Any, indices: Any, batch_dims: int = 0, *, out: _O, **kw: Unpack[Gathering]) -> _O: ...
    @overload
    def __call__(self, data: Tensor, indices: IndexLike, batch_dims: int = 0, *, out: None = None,
                 **kw: Unpack[Gathering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: Tensor, batch_dims: int = 0, *, out: None = None,
                 **kw: Unpack[Gathering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: IndexLike, batch_dims: int = 0, *, out: None = None,
                 **kw: Unpack[Gathering]) -> np.ndarray: ...


class ScatterND(Protocol):
    """``f(data, indices, updates, *, device=None, mode="clamp", reduction="none", include_self=True,
    order="row-major", out=None, unique_indices=False)``: scatter_nd."""
    @overload
    def __call__(self, data: Any, indices: Any, updates: Any, *, out: _O, **kw: Unpack[Scattering]) -> _O: ...
    @overload
    def __call__(self, data: Tensor, indices: IndexLike, updates: Tensor | ArrayInput, *, out: None = None,
                 **kw: Unpack[Scattering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: Tensor, updates: Tensor | ArrayInput, *, out: None = None,
                 **kw: Unpack[Scattering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: IndexLike, updates: Tensor, *, out: None = None,
                 **kw: Unpack[Scattering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: IndexLike, updates: Tensor | ArrayInput, *, out: None = None,
                 **kw: Unpack[Scattering]) -> np.ndarray: ...


class ScatterElements(Protocol):
    """ScatterND's, with ``axis=0`` after ``updates``: scatter_elements."""
    @overload
    def __call__(self, data: Any, indices: Any, updates: Any, axis: int = 0, *, out: _O,
                 **kw: Unpack[Scattering]) -> _O: ...
    @overload
    def __call__(self, data: Tensor, indices: IndexLike, updates: Tensor | ArrayInput, axis: int = 0, *,
                 out: None = None, **kw: Unpack[Scattering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: Tensor, updates: Tensor | ArrayInput, axis: int = 0, *,
                 out: None = None, **kw: Unpack[Scattering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: IndexLike, updates: Tensor, axis: int = 0, *,
                 out: None = None, **kw: Unpack[Scattering]) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, indices: IndexLike, updates: Tensor | ArrayInput, axis: int = 0, *,
                 out: None = None, **kw: Unpack[Scattering]) -> np.ndarray: ...


SegmentReduction = Literal["add", "mul", "min", "max", "mean", "sum", "prod", "amax", "amin"]
BagMode = Literal["sum", "mean", "max"]


class SegmentReduce(Protocol):
    """``f(data, offsets, reduction="add", *, initial=None, out=None, device=None)``: segment_reduce."""
    @overload
    def __call__(self, data: Any, offsets: Any, reduction: SegmentReduction = "add", *, initial: Any = None,
                 out: _O, device: DeviceLike = None) -> _O: ...
    @overload
    def __call__(self, data: Tensor, offsets: IndexLike, reduction: SegmentReduction = "add", *, initial: Any = None,
                 out: None = None, device: DeviceLike = None) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, offsets: Tensor, reduction: SegmentReduction = "add", *,
                 initial: Any = None, out: None = None, device: DeviceLike = None) -> Tensor: ...
    @overload
    def __call__(self, data: ArrayInput, offsets: ArrayInput, reduction: SegmentReduction = "add", *,
                 initial: Any = None, out: None = None, device: DeviceLike = None) -> np.ndarray: ...


class Bagging(TypedDict, total=False):
    """embedding_bag's keywords but ``out`` and ``per_sample_weights``."""
    mode: BagMode
    padding_idx: int | None
    include_last_offset: bool
    order: Order | None
    device: DeviceLike


class EmbeddingBag(Protocol):
    """``f(table, ids, offsets=None, *, mode="sum", per_sample_weights=None, padding_idx=None,
    include_last_offset=False, order=None, out=None, device=None)``: embedding_bag."""
    @overload
    def __call__(self, table: Any, ids: Any, offsets: Any = None, *, per_sample_weights: Any = None, out: _O,
                 **kw: Unpack[Bagging]) -> _O: ...
    @overload
    def __call__(self, table: Tensor, ids: IndexLike, offsets: IndexLike | None = None, *,
                 per_sample_weights: Tensor | ArrayInput | None = None, out: None = None,
                 **kw: Unpack[Bagging]) -> Tensor: ...
    @overload
    def __call__(self, table: ArrayInput, ids: Tensor, offsets: IndexLike | None = None, *,
                 per_sample_weights: Tensor | ArrayInput | None = None, out: None = None,
                 **kw: Unpack[Bagging]) -> Tensor: ...
    @overload
    def __call__(self, table: ArrayInput, ids: ArrayInput, offsets: Tensor, *,
                 per_sample_weights: Tensor | ArrayInput | None = None, out: None = None,
                 **kw: Unpack[Bagging]) -> Tensor: ...
    @overload
    def __call__(self, table: ArrayInput, ids: ArrayInput, offsets: ArrayInput | None = None, *,
                 per_sample_weights: Tensor, out: None = None, **kw: Unpack[Bagging]) -> Tensor: ...
    @overload
    def __call__(self, table: ArrayInput, ids: ArrayInput, offsets: ArrayInput | None = None, *,
                 per_sample_weights: ArrayInput | None = None, out: None = None,
                 **kw: Unpack[Bagging]) -> np.ndarray: ...


class Passing(TypedDict, total=False):
    """gather_scatter's keywords but ``out`` and ``weights``."""
    dim_size: int | None
    include_self: bool
    order: Order | None
    device: DeviceLike


GatherScatterReduction = Literal["add", "mean", "min", "max", "mul", "sum", "prod", "amax", "amin"]


class GatherScatter(Protocol):
    """``f(x, src, dst=None, reduction="add", *, out=None, dim_size=None, include_self=True, order=None,
    weights=None, device=None)``: gather_scatter (``src`` an EdgeGroups: ``dst`` None)."""
    @overload
    def __call__(self, x: Any, src: Any, dst: Any, reduction: GatherScatterReduction = "add", *, out: _O,
                 weights: Any = None, **kw: Unpack[Passing]) -> _O: ...
    @overload
    def __call__(self, x: Any, src: EdgeGroups, dst: None = None, reduction: GatherScatterReduction = "add", *,
                 out: None = None, weights: Tensor | ArrayInput | None = None, **kw: Unpack[Passing]) -> Tensor: ...
    @overload
    def __call__(self, x: Tensor, src: IndexLike, dst: IndexLike, reduction: GatherScatterReduction = "add", *,
                 out: None = None, weights: Tensor | ArrayInput | None = None, **kw: Unpack[Passing]) -> Tensor: ...
    @overload
    def __call__(self, x: ArrayInput, src: Tensor, dst: IndexLike, reduction: GatherScatterReduction = "add", *,
                 out: None = None, weights: Tensor | ArrayInput | None = None, **kw: Unpack[Passing]) -> Tensor: ...
    @overload
    def __call__(self, x: ArrayInput, src: ArrayInput, dst: Tensor, reduction: GatherScatterReduction = "add", *,
                 out: None = None, weights: Tensor | ArrayInput | None = None, **kw: Unpack[Passing]) -> Tensor: ...
    @overload
    def __call__(self, x: ArrayInput, src: ArrayInput, dst: ArrayInput, reduction: GatherScatterReduction = "add",
                 *, out: None = None, weights: Tensor, **kw: Unpack[Passing]) -> Tensor: ...
    @overload
    def __call__(self, x: ArrayInput, src: ArrayInput, dst: ArrayInput, reduction: GatherScatterReduction = "add",
                 *, out: None = None, weights: ArrayInput | None = None, **kw: Unpack[Passing]) -> np.ndarray: ...


# The decorators: each returns the function it is given, typed by its signature's Protocol (mypy checks that
# the function accepts every overload's arguments).
def along_axis(fn: AlongAxis) -> AlongAxis:
    return fn


def batch_dims(fn: BatchDims) -> BatchDims:
    return fn


def scatter_nd(fn: ScatterND) -> ScatterND:
    return fn


def scatter_elements(fn: ScatterElements) -> ScatterElements:
    return fn


def segment_reduce(fn: SegmentReduce) -> SegmentReduce:
    return fn


def embedding_bag(fn: EmbeddingBag) -> EmbeddingBag:
    return fn


def gather_scatter(fn: GatherScatter) -> GatherScatter:
    return fn
