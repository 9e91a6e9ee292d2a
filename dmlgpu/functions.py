"""Layer 2: NumPy-style gather and scatter functions with ONNX semantics.

Each takes NumPy arrays (any dtype whose item size is 1, 2, 4, 8 or 16 bytes: values move bit-exact), what
NumPy can view without a copy (PyTorch CPU tensors and other DLPack producers, ``__array__``, the buffer
protocol: see dmlgpu.interop.host_array) or dmlgpu.Tensors, ``device=`` (a Device or a device index; default:
the device of a Tensor operand, else dmlgpu.default_device()) and ``mode=``: "clamp" (DirectML's behaviour:
negative indices count from the end, then out-of-range ones are clamped) or "raise" (IndexError naming the
first offending index, before any GPU work). Errors name the function called. Inputs are never
modified. Results are new NumPy arrays, or new Tensors when an operand is a Tensor or the call is made
inside a Device.record() block.

Calls that return Tensors are queued on their device and return at once (Device.synchronize() and host reads
wait: see dmlgpu.runtime.device); NumPy results are complete when the call returns.

Repeated calls: each call's validation and planning depend only on its *signature* (the function, the
operands' shapes and dtypes, axis or batch_dims, mode, reduction). Every Device keeps the last
``CALL_CACHE`` planned calls by signature, so a repeated call checks only what depends on the values
(mode="raise" reads the indices) before it moves data.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Literal, NamedTuple, TypeVar, Union, overload

import numpy as np
from numpy.typing import ArrayLike

from . import calls as _calls, reduction as _reduction
from .errors import DeviceError
from .index_map import (INDEX_DTYPES, IndexMap, Layout, as_index_array, check_in_range, copy_map, elements_map, nd_map,
                        nd_shape, take_map, take_shape)
from .plan import GatherPlan, Plan, ScatterPlan, make_plan, scatter_elements_plan
from .device import Device, as_device, default_device
from .interop import host_array
from .runtime import as_bytes
from .tensor import Tensor, empty, tensor

Mode = Literal["clamp", "raise"]
Reduction = Literal["none", "add", "mul", "min", "max", "mean"]
Order = Literal["sequential", "tree"]
DeviceLike = Union[Device, int, None]     # a Device, a device index, or None: the default (device.as_device)
ArrayInput = ArrayLike                    # an ndarray, what NumPy can view (interop.host_array), lists, scalars
IndexLike = Union[Tensor, ArrayInput]

MODES = ("clamp", "raise")
ITEM_SIZES = (1, 2, 4, 8, 16)
CALL_CACHE = 512      # planned calls kept per device
_INDEX_DTYPES = frozenset(INDEX_DTYPES)
KEEP_BYTES = 1 << 20  # NumPy-in/out calls moving up to this many bytes keep their device buffers ...
KEEP_CALLS = 32       # ... for the last this many such signatures per device

# The parameters and errors that the five functions' docstrings share, written once (_documented puts them in).
_DOC_PARTS = {
    "device_mode": """\
    device : dmlgpu.Device, int or None
        Where it runs: a Device or a device index (``dmlgpu.devices()``); default: a Tensor operand's device,
        else ``dmlgpu.default_device()``.
    mode : {"clamp", "raise"}
        "clamp" (DirectML's): a negative index counts from the end once, then clamps into range; "raise":
        IndexError for an index outside [-n, n), before any GPU work.""",
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
    reduction : {"none", "add", "mul", "min", "max", "mean"}
        "none": the last update for a target (row-major order of the updates) wins. The others (ONNX
        opsets 16/18) combine every update into its target in that order, bit-reproducibly: integers wrap,
        floats round to nearest even, min/max propagate NaN, bool's add/max are or and mul/min are and.
        "mean" (float dtypes; PyTorch's scatter_reduce): the "add" sum divided once, rounded to nearest
        even in the dtype, by the target's count of updates (+ 1 for its own value with include_self); a NaN,
        infinite or zero sum stays as it is; integer and bool data raise TypeError.
        float32 uses the device's arithmetic, which may flush subnormals on some GPUs (float16, float64 and
        ml_dtypes' bfloat16, float8_e4m3fn and float8_e5m2, bit-exact as ml_dtypes computes them, never
        do); other dtypes raise TypeError (details: dmlgpu/reduction.py).
    include_self : bool
        True (the default; ONNX's rule): a target's own value takes part in its reduction. False
        (PyTorch's scatter_reduce): a target with updates reduces its updates alone; a target without
        keeps its value. No effect with reduction="none"; TypeError for a non-bool.
    order : {"sequential", "tree"}
        How a target's updates combine: "sequential" (the default) one by one in row-major order; "tree"
        (float add, mul and mean) in a fixed pairwise tree over them in row-major order, shaped by their
        count L alone: T(u) = u, T(u_0..u_{L-1}) = combine(T(u_0..u_{H-1}), T(u_H..u_{L-1})) with H the
        largest power of two below L, then combined into the target's value (include_self). Its rounding
        errors grow as log L instead of L. Other reductions: the same bits either way. ValueError for
        another value; DeviceError for operands held in several blocks.""",
}
_F = TypeVar("_F", bound=Callable[..., Any])


def _documented(fn: _F) -> _F:
    """``fn`` with the shared parts of its docstring (``%(name)s``: _DOC_PARTS) filled in."""
    fn.__doc__ = (fn.__doc__ or "") % _DOC_PARTS
    return fn


class _Call(NamedTuple):
    """A planned call: ``plan`` (Plan or ReducePlan; None when the call moves nothing), the result's shape,
    ``check(values)`` (mode="raise": IndexError for a bad index value) or None, ``copy`` (True: a scatter
    that updates nothing returns a copy of data; else the empty result of ``out_shape``), and ``keep``: the
    call's signature when its operands and result take at most KEEP_BYTES (a NumPy-in/out call then keeps
    its device buffers for the next call of that signature, which submits the same recorded command buffer
    again: Device._run's replays), else None; ``sig``: the call's signature (None: it has none), under which
    runs on Tensors are traced into a call template (dmlgpu/calls.py)."""

    plan: Any           # Plan or ReducePlan
    out_shape: tuple
    check: Callable | None = None
    copy: bool = False
    keep: tuple | None = None
    sig: tuple | None = None


def _planned(dev: Device, op: str, arrays: tuple, args: tuple, build: Callable[[], _Call]) -> _Call:
    """The planned call of ``op`` on ``arrays`` (NumPy arrays or Tensors, already checked by _operands) with
    ``args`` (axis or batch_dims, mode, reduction): from ``dev``'s cache by signature, else ``build()`` (all
    the checks that depend on the signature; they raise for bad input) and the check that every buffer fits
    the device, then cached. Arguments other than exact ints and strings (a bool or NumPy integer axis, a
    reduction that is no string) are part of no signature: such calls take the full checks each time."""
    if not all(type(a) is int or type(a) is str for a in args):
        return _built(op, lambda: _sized(dev, arrays, build(), None))
    sig = (op, *[(a.shape, a.dtype) for a in arrays], *args)
    calls = dev._calls
    call = calls.pop(sig, None)
    if call is None:
        call = _built(op, lambda: _sized(dev, arrays, build(), sig))
        while len(calls) >= CALL_CACHE:
            del calls[next(iter(calls))]
    calls[sig] = call                    # most recently used last
    return call


def _built(op: str, build: Callable[[], _Call]) -> _Call:
    """``build()`` (a call's checks and planning), its errors naming ``op``."""
    try:
        return build()
    except (TypeError, ValueError, IndexError, RuntimeError) as e:
        raise named(e, op) from None


def _sized(dev: Device, arrays: tuple, call: _Call, sig: tuple | None) -> _Call:
    """``call``, once every buffer it needs fits ``dev`` (DeviceError before any GPU work otherwise), with
    ``keep`` set (to its signature ``sig``) for small calls."""
    if call.plan is None:
        return call
    sizes = [a.nbytes for a in arrays] + [math.prod(call.out_shape) * arrays[0].dtype.itemsize]
    dev._check_sizes(*sizes)
    return call._replace(keep=sig if sig is not None and sum(sizes) <= KEEP_BYTES else None, sig=sig)


def _execute(dev: Device, call: _Call, data, idx, values, updates=None, native: bool = True):
    """Runs a planned call: its index check, then the plan (or the result of a call that moves nothing)."""
    if call.check is not None:
        call.check(values)
    if call.plan is None:
        return _copy_result(data, dev) if call.copy else _empty_result(data, call.out_shape, dev)
    if native:
        return _run(dev, call, data, idx, updates)
    return _run_native(dev, call, data, idx, updates)


def _device(op: str, device, *operands) -> Device:
    """``device`` (a Device or a device index: device.as_device), else the device of the first Tensor operand,
    else the default device; DeviceError for a Tensor operand of another Device."""
    tensors = [o for o in operands if isinstance(o, Tensor)]
    if device is None and tensors:
        device = tensors[0].device._open()
    else:
        device = as_device(device, op)
    for t in tensors:
        if t.device is not device:
            if t.device.info.index == device.info.index:       # two Device objects of one GPU
                where = (f"another dmlgpu.Device object of the same device {device.info.index} ({device.info.name}; "
                         f"Tensor's Device at {id(t.device):#x}, the operation's at {id(device):#x}): Device "
                         f"objects do not share memory")
            else:
                where = f"device {device.info.index} ({device.info.name})"
            raise DeviceError(f"a Tensor of device {t.device.info.index} ({t.device.info.name}) was passed to an "
                              f"operation on {where}; move it with dmlgpu.tensor(t, device=...)")
    return device


_host_array = host_array


def _data(arr, what: str):
    """A NumPy array (or a Tensor, as it is) whose items dmlgpu can move."""
    a = arr if isinstance(arr, Tensor) else _host_array(arr)
    if a.dtype.hasobject:
        raise TypeError(f"{what} has dtype {a.dtype}, which holds Python objects; "
                        "use a numeric, boolean or other fixed-size dtype")
    if a.dtype.itemsize not in ITEM_SIZES:
        raise TypeError(f"{what} has dtype {a.dtype} of {a.dtype.itemsize} bytes; "
                        f"dmlgpu moves items of {', '.join(map(str, ITEM_SIZES))} bytes")
    return a


def _index_array(indices) -> np.ndarray:
    """Host indices as an index-dtype array (index_map.as_index_array); an empty list or tuple, which NumPy
    makes float64, is an empty int64 array, as numpy.take takes it."""
    arr = _host_array(indices)
    if arr.size == 0 and arr.dtype.kind == "f" and isinstance(indices, (list, tuple)):
        arr = arr.astype(np.int64)
    return as_index_array(arr)


def _indices(indices, mode: str):
    """(indices for the GPU: an index-dtype array or Tensor, their values for host checks or None)."""
    if isinstance(indices, Tensor):
        if indices.dtype not in _INDEX_DTYPES:
            raise TypeError(f"indices Tensor has dtype {indices.dtype}; it must be int32, uint32, int64 or uint64")
        if mode == "raise" and indices.device._recording() is not None:
            raise RuntimeError("mode='raise' cannot be recorded: its check reads the indices on the host "
                               "before any GPU work")
        return indices, (indices.numpy() if mode == "raise" else None)
    arr = _index_array(indices)
    return arr, arr


def _operands(op: str, data, indices, device, mode, updates=None):
    """The checks every function starts with: (data, indices for the GPU, index values for host checks or
    None, the device, the mode). Their errors name ``op``."""
    try:
        mode = _mode(mode)
        data = _data(data, "data")
        if data.ndim == 0:
            raise ValueError("data must have at least one dimension")
        dev = _device(op, device, data, indices, updates)
        idx, values = _indices(indices, mode)
    except (TypeError, ValueError, IndexError, RuntimeError) as e:
        raise named(e, op) from None
    return data, idx, values, dev, mode


def named(e: Exception, op: str, inner: str | tuple[str, ...] = ()) -> Exception:
    """``e`` with a message that starts with ``op``, the function the user called: ``"op: ..."`` (an error
    raised by ``inner``, a function ``op`` called (or one of several), has its ``"inner: "`` replaced). Raise
    it ``from None``; it keeps ``e``'s type and traceback."""
    msg = str(e)
    if msg.startswith(op + ": "):
        return e
    for name in (inner,) if isinstance(inner, str) else inner:
        if msg.startswith(name + ": "):
            msg = msg[len(name) + 2:]
            break
    try:
        new = type(e)(f"{op}: {msg}")
    except Exception:          # an exception type of other arguments: as it is
        return e
    return new.with_traceback(e.__traceback__)


_AxisError = getattr(np, "exceptions", np).AxisError     # NumPy 2: np.exceptions; NumPy 1.x: np


def _mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    return mode


def _axis(axis, ndim: int, what: str = "data") -> int:
    """``axis`` in [0, ndim): TypeError for a non-integer, AxisError (an IndexError and ValueError) out of
    range."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an integer, not {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise _AxisError(f"axis {axis} is out of bounds for {what} of rank {ndim}")
    return int(axis) % ndim


def _empty_result(data, shape, device):
    """The result of an operation that moves nothing: an empty array/Tensor of ``shape``."""
    if isinstance(data, Tensor) or device is not None and device._recording() is not None:
        return empty(shape, data.dtype, device=device if device is not None else data.device)
    return np.empty(shape, dtype=data.dtype)


def _copy_result(data, device):
    """A scatter that updates nothing: a copy of data."""
    if isinstance(data, Tensor):
        return tensor(data.numpy(), device=data.device)
    return np.array(data, copy=True)


def _run(dev: Device, call: _Call, data, indices, updates=None):
    """Runs the call's plan in one submission. NumPy operands are uploaded; the result is a new NumPy array,
    or a Tensor (queued: Device._run) when an operand is a Tensor or the call is being recorded."""
    plan, out_shape = call.plan, call.out_shape
    recording = dev._recording() is not None
    nbytes = math.prod(out_shape) * data.dtype.itemsize      # the sizes are checked by _planned
    if not recording and type(data) is Tensor and type(indices) is Tensor and \
            (updates is None or type(updates) is Tensor):
        return _run_tensors(dev, call, data, indices, updates, nbytes)
    as_tensor = recording or isinstance(data, Tensor) or isinstance(indices, Tensor) or isinstance(updates, Tensor)
    with dev._lock:
        taken, uploads = [], []
        keep = call.keep if not as_tensor else None
        kept = iter(dev._kept.pop(keep, ()) if keep is not None else ())

        def scratch(n):             # operands' copies, the result, a reduction's sort: given back (or kept)
            buf = next(kept, None) or dev._take(n)
            taken.append(buf)
            return buf

        def operand(x):
            if isinstance(x, Tensor):
                return x.buffer
            buf = scratch(x.nbytes)
            buf._stage(as_bytes(x))
            uploads.append(buf)
            return buf

        in_buf = operand(data)
        idx_buf = operand(indices)
        if not plan.output_from_input or isinstance(data, Tensor):  # a new output (a scatter copies data into it)
            out_buf = scratch(nbytes)        # not zero-filled: the kernels write all of it
        else:                            # the uploaded copy of data is the output: update it in place
            out_buf = in_buf
        upd_buf = operand(updates) if updates is not None else None
        dispatches, params = plan.dispatches(dev, input=in_buf, indices=idx_buf, output=out_buf, updates=upd_buf,
                                             take=scratch)
        if as_tensor:
            dev._run(dispatches, uploads=params + uploads, queue=True)
            if not recording:    # the operands' scratch is free now; the output's when the Tensor goes
                dev._give(*(b for b in taken if b is not out_buf))
            return Tensor._wrap(out_buf, out_shape, data.dtype)
        done = False
        try:
            out = dev._run(dispatches, uploads=params + uploads, downloads=[out_buf])[0]
            done = True
            return out[:nbytes].view(data.dtype).reshape(out_shape)
        finally:
            if done and keep is not None:
                _keep(dev, keep, taken)
            else:
                dev._give(*taken)


def _run_tensors(dev: Device, call: _Call, data: Tensor, indices: Tensor, updates: Tensor | None,
                 nbytes: int) -> Tensor:
    """_run when every operand is a Tensor, outside recordings (the common eager call): queued, into a new
    Tensor; a reduction's scratch goes back once queued (later queued work may reuse it: Device._run). The
    run is traced into the signature's call template (dmlgpu/calls.py) when it has one to trace."""
    with dev._lock:
        out_buf = dev._take(nbytes)       # not zero-filled: the kernels write all of it
        taken = []

        def scratch(n):
            taken.append(dev._take(n))
            return taken[-1]

        buffers = [data.buffer, indices.buffer, out_buf, None if updates is None else updates.buffer]
        dispatches, params = call.plan.dispatches(dev, input=buffers[0], indices=buffers[1], output=out_buf,
                                                  updates=buffers[3], take=scratch)
        dev._queue(dispatches, params)
        if call.sig is not None and call.check is None and dev.max_queued:
            _calls.trace(dev, call.sig, dispatches, buffers, taken, call.out_shape)
        if taken:
            dev._give(*taken)
        return Tensor._wrap(out_buf, call.out_shape, data.dtype)


def _keep(dev: Device, sig: tuple, buffers: list) -> None:
    """Keeps a NumPy-in/out call's buffers for the next call of its signature (the last KEEP_CALLS)."""
    while len(dev._kept) >= KEEP_CALLS:
        dev._give(*dev._kept.pop(next(iter(dev._kept))))
    dev._kept[sig] = buffers


def _index_check(op: str, count: int, dims, mode: str, dim_of) -> Callable | None:
    """The check of a call's index values: mode="raise": a function that raises IndexError for the first
    index outside [-dim, dim); mode="clamp": None. Either mode: IndexError now when ``count`` (> 0)
    elements would be read or written through a dimension of size 0, which has no element to clamp to."""
    dims = np.asarray(dims)
    if mode == "raise":
        return lambda values: check_in_range(values, dims, lambda pos, value: (
            f"{op}: index {value} at indices position {pos} is out of range for a dimension of size "
            f"{dim_of(pos)} (valid: [-size, size))"))
    if count and (dims == 0).any():
        raise IndexError(f"{op}: indices address a dimension of size 0, which has no element to clamp to")
    return None


@overload
def gather(data: Tensor, indices: IndexLike, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp") -> Tensor: ...
@overload
def gather(data: ArrayInput, indices: Tensor, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp") -> Tensor: ...
@overload
def gather(data: ArrayInput, indices: ArrayInput, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp") -> np.ndarray: ...
@_documented
def gather(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
           mode: Mode = "clamp") -> Any:
    """Elements of ``data`` at ``indices`` along ``axis``: ONNX Gather, ``numpy.take(data, indices, axis)``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items (moved bit-exact).
    indices : array_like or Tensor
        Integers (int32, uint32, int64, uint64; narrower ones are widened), of any shape.
    axis : int
        The dimension of ``data`` they index; negative counts from the end.
%(device_mode)s

    Returns
    -------
    np.ndarray or Tensor
        Shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``: a NumPy array, or a Tensor
        (queued on the device) when ``data`` or ``indices`` is a Tensor or the call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> table = np.arange(6, dtype=np.int32).reshape(3, 2)
    >>> dmlgpu.gather(table, [2, -1, 0])
    array([[4, 5],
           [4, 5],
           [0, 1]], dtype=int32)
    >>> dmlgpu.gather(table, [5])                    # clamped to the last row
    array([[4, 5]], dtype=int32)
    >>> dmlgpu.gather(table, [5], mode="raise")
    Traceback (most recent call last):
    IndexError: gather: index 5 at indices position (0,) is out of range for a dimension of size 3 (valid: [-size, size))
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(axis) is int:
        out = _calls.templated("gather", (data, indices), (axis, mode))
        if out is not None:
            return out
    data, idx, values, dev, mode = _operands("gather", data, indices, device, mode)

    def build() -> _Call:
        a = _axis(axis, data.ndim)
        dim = data.shape[a]
        out_shape = take_shape(data.shape, idx.shape, a)
        check = _index_check("gather", math.prod(out_shape), dim, mode, lambda pos: dim)
        if 0 in out_shape:
            return _Call(None, out_shape, check)
        index_map = take_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out_shape), a,
                             data.dtype.itemsize)
        return _Call(make_plan(GatherPlan, index_map, idx.dtype), out_shape, check)

    return _execute(dev, _planned(dev, "gather", (data, idx), (axis, mode), build), data, idx, values)


def _check_elements_shapes(op: str, data, idx, axis: int, updates=None):
    if idx.ndim != data.ndim:
        raise ValueError(f"{op}: indices must have the rank of data ({data.ndim}), not {idx.ndim}")
    for d, (a, b) in enumerate(zip(idx.shape, data.shape)):
        if d != axis and a > b:
            raise ValueError(f"{op}: indices.shape[{d}] ({a}) must not exceed data.shape[{d}] ({b}) "
                             f"outside the axis")
    if updates is not None and updates.shape != idx.shape:
        raise ValueError(f"{op}: updates.shape {updates.shape} must equal indices.shape {idx.shape}")


@overload
def gather_elements(data: Tensor, indices: IndexLike, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp") -> Tensor: ...
@overload
def gather_elements(data: ArrayInput, indices: Tensor, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp") -> Tensor: ...
@overload
def gather_elements(data: ArrayInput, indices: ArrayInput, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp") -> np.ndarray: ...
@_documented
def gather_elements(data: Any, indices: Any, axis: int = 0, *, device: DeviceLike = None,
                    mode: Mode = "clamp") -> Any:
    """One element of ``data`` per index, along ``axis``: ONNX GatherElements, ``numpy.take_along_axis``
    without broadcasting. ``out[i][j] = data[indices[i][j]][j]`` for axis 0, and so on.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items.
    indices : array_like or Tensor
        Integers of ``data``'s rank, no larger than ``data`` outside ``axis``.
    axis : int
        The dimension of ``data`` they index.
%(device_mode)s

    Returns
    -------
    np.ndarray or Tensor
        Of ``indices``' shape: a NumPy array, or a Tensor when an operand is a Tensor or the call is
        recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> scores = np.array([[10, 11, 12], [20, 21, 22]], np.int64)
    >>> dmlgpu.gather_elements(scores, np.array([[2, 0], [1, 1]]), axis=1)
    array([[12, 10],
           [21, 21]])
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(axis) is int:
        out = _calls.templated("gather_elements", (data, indices), (axis, mode))
        if out is not None:
            return out
    data, idx, values, dev, mode = _operands("gather_elements", data, indices, device, mode)

    def build() -> _Call:
        a = _axis(axis, data.ndim)
        _check_elements_shapes("gather_elements", data, idx, a)
        dim = data.shape[a]
        check = _index_check("gather_elements", idx.size, dim, mode, lambda pos: dim)
        if idx.size == 0:
            return _Call(None, idx.shape, check)
        index_map = elements_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(idx.shape),
                                 a, data.dtype.itemsize)
        return _Call(make_plan(GatherPlan, index_map, idx.dtype), idx.shape, check)

    return _execute(dev, _planned(dev, "gather_elements", (data, idx), (axis, mode), build), data, idx, values)


def _check_nd(op: str, data, idx, batch_dims: int):
    if not isinstance(batch_dims, (int, np.integer)) or isinstance(batch_dims, bool) or batch_dims < 0:
        raise ValueError(f"{op}: batch_dims must be a non-negative integer, not {batch_dims!r}")
    if data.ndim < 1 or idx.ndim < 1:
        raise ValueError(f"{op}: data and indices must have at least one dimension")
    if batch_dims >= min(data.ndim, idx.ndim):
        raise ValueError(f"{op}: batch_dims ({batch_dims}) must be less than the ranks of data ({data.ndim}) "
                         f"and indices ({idx.ndim})")
    k = idx.shape[-1]
    if not 1 <= k <= data.ndim - batch_dims:
        raise ValueError(f"{op}: indices.shape[-1] ({k}), the index tuple size, must be in "
                         f"[1, data rank - batch_dims ({data.ndim - batch_dims})]")
    if idx.shape[:batch_dims] != data.shape[:batch_dims]:
        raise ValueError(f"{op}: the batch dimensions of indices {idx.shape[:batch_dims]} and data "
                         f"{data.shape[:batch_dims]} must be equal")
    return np.array(data.shape[batch_dims:batch_dims + k], dtype=np.int64)


@overload
def gather_nd(data: Tensor, indices: IndexLike, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp") -> Tensor: ...
@overload
def gather_nd(data: ArrayInput, indices: Tensor, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp") -> Tensor: ...
@overload
def gather_nd(data: ArrayInput, indices: ArrayInput, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp") -> np.ndarray: ...
@_documented
def gather_nd(data: Any, indices: Any, batch_dims: int = 0, *, device: DeviceLike = None,
              mode: Mode = "clamp") -> Any:
    """Slices of ``data`` at index tuples: ONNX GatherND. ``out[b.., i..] = data[b.., *indices[b.., i.., :]]``.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension more than ``batch_dims``.
    indices : array_like or Tensor
        Integers whose last dimension (k, from 1 to ``data.ndim - batch_dims``) holds each index tuple; its
        first ``batch_dims`` dimensions equal ``data``'s.
    batch_dims : int
        Leading dimensions that ``data`` and ``indices`` share, gathered batch by batch.
%(device_mode)s

    Returns
    -------
    np.ndarray or Tensor
        Shape ``indices.shape[:-1] + data.shape[batch_dims + k:]``; a Tensor when an operand is one or the
        call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> grid = np.arange(9, dtype=np.int16).reshape(3, 3)
    >>> dmlgpu.gather_nd(grid, [[0, 1], [2, 2]])
    array([1, 8], dtype=int16)
    >>> dmlgpu.gather_nd(grid, [[2]])               # k=1: whole rows
    array([[6, 7, 8]], dtype=int16)
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(batch_dims) is int:
        out = _calls.templated("gather_nd", (data, indices), (batch_dims, mode))
        if out is not None:
            return out
    data, idx, values, dev, mode = _operands("gather_nd", data, indices, device, mode)

    def build() -> _Call:
        dims = _check_nd("gather_nd", data, idx, batch_dims)
        out_shape = nd_shape(data.shape, idx.shape, batch_dims)
        check = _index_check("gather_nd", math.prod(out_shape), dims, mode, lambda pos: dims[pos[-1]])
        if 0 in out_shape:
            return _Call(None, out_shape, check)
        index_map = nd_map(Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out_shape),
                           batch_dims, data.dtype.itemsize)
        return _Call(make_plan(GatherPlan, index_map, idx.dtype), out_shape, check)

    return _execute(dev, _planned(dev, "gather_nd", (data, idx), (batch_dims, mode), build), data, idx, values)


def _updates(updates, data, op: str):
    upd = updates if isinstance(updates, Tensor) else _host_array(updates)
    if upd.dtype != data.dtype:
        raise TypeError(f"{op}: updates has dtype {upd.dtype}; it must be data's dtype ({data.dtype})")
    return upd


@overload
def scatter_nd(data: Tensor, indices: IndexLike, updates: Tensor | ArrayInput, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", include_self: bool = True,
               order: Order = "sequential") -> Tensor: ...
@overload
def scatter_nd(data: ArrayInput, indices: Tensor, updates: Tensor | ArrayInput, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", include_self: bool = True,
               order: Order = "sequential") -> Tensor: ...
@overload
def scatter_nd(data: ArrayInput, indices: ArrayInput, updates: Tensor, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", include_self: bool = True,
               order: Order = "sequential") -> Tensor: ...
@overload
def scatter_nd(data: ArrayInput, indices: ArrayInput, updates: ArrayInput, *, device: DeviceLike = None,
               mode: Mode = "clamp", reduction: Reduction = "none", include_self: bool = True,
               order: Order = "sequential") -> np.ndarray: ...
@_documented
def scatter_nd(data: Any, indices: Any, updates: Any, *,
               device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none",
               include_self: bool = True, order: Order = "sequential") -> Any:
    """A copy of ``data`` with slices replaced at index tuples: ONNX ScatterND,
    ``out[*indices[i.., :]] = updates[i..]``. ``data`` itself is never modified.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items.
    indices : array_like or Tensor
        Integers whose last dimension (k, 1 to ``data.ndim``) holds each target's index tuple.
    updates : array_like or Tensor
        ``data``'s dtype, shape ``indices.shape[:-1] + data.shape[k:]``.
%(device_mode)s
%(reduction)s

    Returns
    -------
    np.ndarray or Tensor
        ``data``'s shape and dtype; a Tensor when an operand is one or the call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [3], [1]], np.array([5, 6, 7], np.int32))
    array([0, 7, 0, 6], dtype=int32)
    >>> dmlgpu.scatter_nd(np.zeros(4, np.int32), [[1], [3], [1]], np.array([5, 6, 7], np.int32), reduction="add")
    array([ 0, 12,  0,  6], dtype=int32)
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(updates) is Tensor:
        out = _calls.templated("scatter_nd", (data, indices, updates),
                               (mode, reduction, _reduction.self_key(include_self), order))
        if out is not None:
            return out
    data, idx, values, dev, mode = _operands("scatter_nd", data, indices, device, mode, updates)
    upd = _updates(updates, data, "scatter_nd")

    def build() -> _Call:
        red = _reduction.check(reduction, data.dtype, include_self, order)
        dims = _check_nd("scatter_nd", data, idx, 0)
        upd_shape = nd_shape(data.shape, idx.shape, 0)
        if upd.shape != upd_shape:
            raise ValueError(f"scatter_nd: updates.shape {upd.shape} must be {upd_shape} "
                             f"(indices.shape[:-1] + data.shape[indices.shape[-1]:])")
        check = _index_check("scatter_nd", upd.size, dims, mode, lambda pos: dims[pos[-1]])
        if data.size == 0 or upd.size == 0:
            return _Call(None, data.shape, check, copy=True)
        layouts = Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(upd_shape)
        if red != "none":
            plan: Plan = _reduction.ReducePlan.nd(red, data.dtype, idx.dtype, *layouts, _self_copy(data),
                                                  include_self=bool(include_self), order=order)
        else:
            plan = make_plan(ScatterPlan, nd_map(*layouts, 0, data.dtype.itemsize), idx.dtype, _self_copy(data))
        return _Call(plan, data.shape, check)

    call = _planned(dev, "scatter_nd", (data, idx, upd), (mode, reduction, _reduction.self_key(include_self), order),
                    build)
    return _execute(dev, call, data, idx, values, upd, native=reduction == "none")


@overload
def scatter_elements(data: Tensor, indices: IndexLike, updates: Tensor | ArrayInput, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none",
                     include_self: bool = True, order: Order = "sequential") -> Tensor: ...
@overload
def scatter_elements(data: ArrayInput, indices: Tensor, updates: Tensor | ArrayInput, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none",
                     include_self: bool = True, order: Order = "sequential") -> Tensor: ...
@overload
def scatter_elements(data: ArrayInput, indices: ArrayInput, updates: Tensor, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp", reduction: Reduction = "none",
                     include_self: bool = True, order: Order = "sequential") -> Tensor: ...
@overload
def scatter_elements(data: ArrayInput, indices: ArrayInput, updates: ArrayInput, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp",
                     reduction: Reduction = "none", include_self: bool = True,
                     order: Order = "sequential") -> np.ndarray: ...
@_documented
def scatter_elements(data: Any, indices: Any, updates: Any, axis: int = 0, *,
                     device: DeviceLike = None, mode: Mode = "clamp",
                     reduction: Reduction = "none", include_self: bool = True,
                     order: Order = "sequential") -> Any:
    """A copy of ``data`` with one element replaced per index, along ``axis``: ONNX ScatterElements,
    ``out[.., indices[i, j, ..], ..] = updates[i, j, ..]`` (the index in position ``axis``). ``data``
    itself is never modified.

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; any dtype of 1, 2, 4, 8 or 16-byte items.
    indices : array_like or Tensor
        Integers of ``data``'s rank, no larger than ``data`` outside ``axis``.
    updates : array_like or Tensor
        ``data``'s dtype, ``indices``' shape.
    axis : int
        The dimension of ``data`` they index.
%(device_mode)s
%(reduction)s

    Returns
    -------
    np.ndarray or Tensor
        ``data``'s shape and dtype; a Tensor when an operand is one or the call is recorded.

    Raises
    ------
%(raises)s

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> cache = np.zeros((2, 4), np.float32)
    >>> dmlgpu.scatter_elements(cache, [[3], [0]], np.array([[1.5], [2.5]], np.float32), axis=1)
    array([[0. , 0. , 0. , 1.5],
           [2.5, 0. , 0. , 0. ]], dtype=float32)
    >>> ones, upd = np.ones(3, np.float32), np.array([2, 4, 8], np.float32)
    >>> dmlgpu.scatter_elements(ones, [0, 0, 2], upd, reduction="mean")      # (1 + 2 + 4) / 3, (1 + 8) / 2
    array([2.3333333, 1.       , 4.5      ], dtype=float32)
    >>> dmlgpu.scatter_elements(ones, [0, 0, 2], upd, reduction="max", include_self=False)
    array([4., 1., 8.], dtype=float32)
    """
    if device is None and type(data) is Tensor and type(indices) is Tensor and type(updates) is Tensor and \
            type(axis) is int:
        out = _calls.templated("scatter_elements", (data, indices, updates),
                               (axis, mode, reduction, _reduction.self_key(include_self), order))
        if out is not None:
            return out
    data, idx, values, dev, mode = _operands("scatter_elements", data, indices, device, mode, updates)
    upd = _updates(updates, data, "scatter_elements")

    def build() -> _Call:
        red = _reduction.check(reduction, data.dtype, include_self, order)
        a = _axis(axis, data.ndim)
        _check_elements_shapes("scatter_elements", data, idx, a, upd)
        dim = data.shape[a]
        check = _index_check("scatter_elements", idx.size, dim, mode, lambda pos: dim)
        if data.size == 0 or idx.size == 0:
            return _Call(None, data.shape, check, copy=True)
        layouts = Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(idx.shape)
        if red != "none":
            plan: Plan = _reduction.ReducePlan.elements(red, data.dtype, idx.dtype, *layouts, a, _self_copy(data),
                                                        include_self=bool(include_self), order=order)
        else:
            plan = make_plan(scatter_elements_plan, *layouts, a, data.dtype.itemsize, idx.dtype, _self_copy(data))
        return _Call(plan, data.shape, check)

    call = _planned(dev, "scatter_elements", (data, idx, upd),
                    (axis, mode, reduction, _reduction.self_key(include_self), order), build)
    return _execute(dev, call, data, idx, values, upd, native=reduction == "none")


def _self_copy(data) -> IndexMap:
    """The copy of data into a scatter's output of the same packed layout."""
    return copy_map(Layout.packed(data.shape), Layout.packed(data.shape), data.dtype.itemsize)


def _run_native(dev: Device, call: _Call, data, idx, upd):
    """_run for a scatter reduction, whose arithmetic needs native byte order: NumPy operands of another
    byte order are converted there and back."""
    if data.dtype.isnative:
        return _run(dev, call, data, idx, upd)
    if any(isinstance(x, Tensor) for x in (data, idx, upd)) or dev._recording() is not None:
        raise TypeError(f"a scatter reduction needs a native byte order, not dtype {data.dtype}")
    native = data.dtype.newbyteorder("=")
    return _run(dev, call, data.astype(native), idx, upd.astype(native)).astype(data.dtype)
