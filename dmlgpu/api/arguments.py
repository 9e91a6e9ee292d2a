"""The argument checks that every layer-2 function and NumPy name starts with: operands (``_operands``: data,
indices and their values for host checks, the device, the mode), axes, shapes, index checks, and the errors'
naming (``named``: a message that starts with the function the user called)."""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from ..errors import DeviceError
from ..plans.index_check import IndexCheck
from ..plans.index_map import INDEX_DTYPES, as_index_array
from .device import Runtime, as_runtime
from .interop import host_array
from .tensor import Tensor
from .tensor_protocols import PYTHON_VALUES, assigned

MODES = ("clamp", "raise")
GATHER_MODES = MODES + ("wrap", "clip")   # what gather plans resolve (numpy.take's too): index_map.INDEX_MODE_FLAGS
FILL_MODES = MODES + ("fill",)           # the layer-2 gathers' (JAX's "fill": index_map.INDEX_MODE_FLAGS)
DROP_MODES = MODES + ("drop",)           # the layer-2 scatters' (JAX's "drop")
ITEM_SIZES = kernels.UNITS     # the kernels' access units: the item sizes layer 2 moves
_INDEX_DTYPES = frozenset(INDEX_DTYPES)


OPERANDS = ("data", "indices", "updates")     # how errors name _device's operands, in their order


def _device(op: str, device, *operands) -> Runtime:
    """``device`` (a Device or a device index: device.as_device), else the device of the first Tensor operand,
    else the default device; DeviceError for a Tensor operand of another Device, naming it (``operands``:
    data, indices, updates, as OPERANDS names them)."""
    tensors = [(what, o) for what, o in zip(OPERANDS, operands) if isinstance(o, Tensor)]
    if device is None and tensors:
        device = tensors[0][1]._rt.check_open()
    else:
        device = as_runtime(device, op)
    for what, t in tensors:
        if t._rt is not device:
            raise DeviceError(f"{what} is a Tensor of device {t.device.info.index} ({t.device.info.name}), passed to "
                              f"an operation on {other_device(t._rt, device)}; move it with "
                              f"dmlgpu.tensor({what}, device=...)")
    return device


def other_device(of: Runtime, device: Runtime) -> str:
    """How errors name ``device``, where a Tensor of ``of`` met an operation on it: its index and name, and
    where both are Device objects of one GPU, that and their addresses (they share no memory)."""
    if of.info.index == device.info.index:
        return (f"another dmlgpu.Device object of the same device {device.info.index} ({device.info.name}; "
                f"Tensor's Device at {id(of.user):#x}, the operation's at {id(device.user):#x}): Device objects do not share "
                f"memory")
    return f"device {device.info.index} ({device.info.name})"


_host_array = host_array


def _data(arr, what: str, any_size: bool = False):
    """A NumPy array (or a Tensor, as it is) whose items dmlgpu can move (``any_size``: of any fixed size,
    which NumPy's names move as rows of units: dmlgpu/api/items.py)."""
    a = arr if isinstance(arr, Tensor) else _host_array(arr)
    if a.dtype.hasobject:
        raise TypeError(f"{what} has dtype {a.dtype}, which holds Python objects; "
                        "use a numeric, boolean or other fixed-size dtype")
    if a.dtype.itemsize not in ITEM_SIZES and not (any_size and a.dtype.itemsize):
        raise TypeError(f"{what} has dtype {a.dtype} of {a.dtype.itemsize} bytes; "
                        f"dmlgpu moves items of {', '.join(map(str, ITEM_SIZES))} bytes")
    return a


def _index_array(indices) -> np.ndarray:
    """Host indices as an index-dtype array (index_map.as_index_array); an empty list or tuple, which NumPy
    makes float64, is an empty int64 array, as numpy.take takes it. IndexError for a Python int beyond int64's
    range (NumPy holds it as an object)."""
    arr = _host_array(indices)
    if arr.dtype.hasobject:
        for pos in np.ndindex(arr.shape):
            v = arr[pos]
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
                raise IndexError(f"index {v} at indices position {pos} is out of int64's range [-2**63, 2**63)")
    if arr.size == 0 and arr.dtype.kind == "f" and isinstance(indices, (list, tuple)):
        arr = arr.astype(np.int64)
    return as_index_array(arr)


def _indices(indices, mode: str, modes: tuple = MODES, instead: str | None = None):
    """(indices for the GPU: an index-dtype array or Tensor, their values for host checks or None); ``modes``:
    those the caller takes (what a recording's error suggests); ``instead``: where the caller's spelling takes no
    mode, the dmlgpu function that does, which the error suggests."""
    if isinstance(indices, Tensor):
        if indices.dtype.kind in "iu" and indices.dtype.isnative and indices.dtype.itemsize < 4:
            indices = indices.astype(f"{indices.dtype.kind}4")     # int8/16 as NumPy's: widened (as arrays are)
        if indices.dtype not in _INDEX_DTYPES:
            order = "" if indices.dtype.isnative else (" in native byte order (this one is "
                                                       f"{'big' if indices.dtype.byteorder == '>' else 'little'}-endian:"
                                                       f" convert it with t.astype(t.dtype.newbyteorder('=')))")
            raise TypeError(f"indices Tensor has dtype {indices.dtype}; it must be int32, uint32, int64 or "
                            f"uint64{order}")
        if mode == "raise" and indices._rt.active_recording() is not None:
            clamp = 'mode="clamp" (an index out of range reads or writes the nearest element)'
            can = (f"dmlgpu.{instead} with {clamp}" if instead else
                   'mode="wrap" or mode="clip" (numpy.take\'s other modes), or gather(..., mode="clamp")'
                   if "wrap" in modes else clamp)
            raise RuntimeError(f"mode='raise' cannot be recorded with Tensor indices: its check reports at the "
                               f"device's next synchronize or read, which a recording's replays do not reach; "
                               f"record {can}, or pass the indices as a NumPy array (checked when recorded)")
        return indices, None            # mode="raise": checked on the device (index_check)
    arr = _index_array(indices)
    return arr, arr


def _operands(op: str, data, indices, device, mode, updates=None, modes: tuple = MODES, instead: str | None = None):
    """The checks every function starts with: (data, indices for the GPU, index values for host checks or
    None (a Tensor's: checked on the device), the device, the mode, one of ``modes``). Their errors name
    ``op`` (the function the user called); ``instead``: as _indices takes it."""
    try:
        mode = _mode(mode, modes)
        data = _data(data, "data")
        if data.ndim == 0:
            raise ValueError("data must have at least one dimension")
        dev = _device(op, device, data, indices, updates)
        idx, values = _indices(indices, mode, modes, instead)
    except (TypeError, ValueError, IndexError, RuntimeError) as e:
        raise named(e, op) from None
    return data, idx, values, dev, mode


def named(e: Exception, op: str, inner: str | tuple[str, ...] = ()) -> Exception:
    """``e`` with a message that starts with ``op``, the function the user called: ``"op: ..."`` (an error
    raised by ``inner``, a function ``op`` called (or one of several), has its ``"inner: "`` replaced). Raise
    it ``from None``; it keeps ``e``'s type and traceback. A device check's failure (plans/index_check.py: it
    names the call that failed, which a later call reading its data re-raises) is ``e`` itself."""
    msg = str(e)
    if msg.startswith(op + ": ") or getattr(e, "device_check", False):
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


def _mode(mode: str, modes: tuple = MODES) -> str:
    if mode not in modes:
        raise ValueError(f"mode must be one of {modes}, not {mode!r}")
    return mode


def _fill(op: str, mode, fill_value, data) -> bytes:
    """mode="fill"'s ``fill_value`` (None: 0) as the bytes of one element of ``data``'s dtype, converted by the
    one casting rule (tensor_protocols.assigned: NumPy's assignment); b"" for another mode, where a
    ``fill_value`` is a ValueError. Errors name ``op``; raised before any GPU work."""
    if mode != "fill":
        if fill_value is not None:
            raise ValueError(f"{op}: fill_value is used only with mode='fill', not with mode={mode!r}")
        return b""
    try:
        dtype = (data if isinstance(data, (Tensor, np.ndarray)) else _host_array(data)).dtype
        if dtype.hasobject or not dtype.itemsize:
            raise TypeError(f"data has dtype {dtype}, which holds no fixed-size items to fill with")
        if dtype.names is not None and isinstance(fill_value, tuple):
            fill_value = np.array(fill_value, dtype)       # (a record's fields, as NumPy assigns a tuple)
        value = assigned(0 if fill_value is None else fill_value, dtype, (), op)
    except (TypeError, ValueError, OverflowError) as e:
        raise named(e, op) from None
    return value.tobytes()


def _axis(axis, ndim: int, what: str = "data") -> int:
    """``axis`` in [0, ndim): TypeError for a non-integer, AxisError (an IndexError and ValueError) out of
    range."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an integer, not {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise _AxisError(f"axis {axis} is out of bounds for {what} of rank {ndim}")
    return int(axis) % ndim


def _index_check(op: str, count: int, dims, mode: str, column: bool = False) -> IndexCheck | None:
    """The check of a call's index values: mode="raise": an IndexCheck (IndexError for the first index outside
    [-dim, dim), on the host or on the device); else None. The other modes: IndexError now when ``count`` (> 0)
    elements would be read or written through a dimension of size 0, which has no element to resolve to (``dims``
    and ``column``: index_check.IndexCheck's)."""
    dims = np.asarray(dims)
    if mode == "raise":
        return IndexCheck(op, dims, column)
    if mode in ("fill", "drop"):       # (every index of a dimension of size 0 is out of range: filled, dropped)
        return None
    if count and (dims == 0).any():
        raise IndexError(f"{op}: indices address a dimension of size 0, which has no element to clamp to"
                         if mode == "clamp" else f"{op}: cannot do a non-empty take from an empty axis")
    return None


def _check_elements_shapes(op: str, data, idx, axis: int, updates=None):
    if idx.ndim != data.ndim:
        raise ValueError(f"{op}: indices must have the rank of data ({data.ndim}), not {idx.ndim}")
    for d, (a, b) in enumerate(zip(idx.shape, data.shape)):
        if d != axis and a > b:
            raise ValueError(f"{op}: indices.shape[{d}] ({a}) must not exceed data.shape[{d}] ({b}) "
                             f"outside the axis")
    if updates is not None and updates.shape != idx.shape:
        raise ValueError(f"{op}: updates must have shape {idx.shape} (indices.shape), not {updates.shape} "
                         f"(ONNX's rule: no broadcasting; dmlgpu.put_along_axis or t[key] = v broadcast)")


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


def _updates(updates, data, op: str):
    """A scatter's updates: a Tensor or array of data's dtype; Python scalars and lists are cast to it by
    NumPy's rule (tensor_protocols.assigned: OverflowError for a Python int out of its range)."""
    if isinstance(updates, PYTHON_VALUES):
        return assigned(updates, data.dtype, None, op)
    upd = updates if isinstance(updates, Tensor) else _host_array(updates)
    if upd.dtype != data.dtype:
        raise TypeError(f"{op}: updates has dtype {upd.dtype}; it must be data's dtype ({data.dtype})")
    return upd

