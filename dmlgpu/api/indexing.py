"""Advanced indexing of a dmlgpu.Tensor, with NumPy's rules (numpy.org, "Indexing on ndarrays"): ``t[key]``
(a gather), ``t[key] = value`` (a scatter in place, the last duplicate in row-major order winning), NumPy's
``ufunc.at`` for add, multiply, maximum and minimum (a scatter reduction in place, in row-major order: NumPy's
bits); JAX's functional form ``t.at[key]`` (``Tensor.at``) is dmlgpu/api/indexing_at.py, over this module's parse.

A key is parsed once (``parse``) into the *view* its basic part selects (ints, slices, None and ``...`` as
Tensor.__getitem__ views them, every array-indexed axis kept whole), the index arrays and the view axis each
indexes, their broadcast shape, and where NumPy puts the broadcast dimensions (in place of adjacent advanced
indices, else first). Booleans become their ``nonzero()`` arrays; a 0-d boolean, a new axis indexed by ``[0]``
or ``[]``; an integer, when arrays are present, an advanced index for placement (NumPy's rule) but folded into
the view's offset.

How it runs:

- one index array (``t[ids]``, ``t[:, cols]``, ``t[mask]`` of a 1-d mask): the gather of ``dmlgpu.take`` along
  its axis (NumPy indices checked on the host before any GPU work; a Tensor's by the device, as take's:
  dmlgpu/plans/index_check.py), so ``t[ids]`` is ``take(t, ids, axis=0)``'s call and bits; writes:
  ``scatter_nd`` into the view in place (a Tensor's indices checked on the device, the check guarding the scatter:
  IndexCheck.guard);
- several arrays, or one into a strided view: one gather (or scatter) of the view's elements straight from
  its buffer, through an index map built here: the arrays combined on the host into each selection's
  position in the buffer, the view's other dimensions addressed by its strides (no copy of the view);
- Tensor index arrays in such keys, and boolean Tensors, are read back first (one synchronisation: a
  boolean's nonzero() decides the result's shape; several arrays are combined on the host).
"""
from __future__ import annotations

import functools
import math
import operator
import sys
from typing import Any, NamedTuple

import numpy as np

from . import driver
from .arguments import GATHER_MODES, _device
from .functions import _gather_rule, _scatter_nd_rule
from .tensor import Tensor, _upload
from . import tensor_protocols
from .tensor_protocols import assigned
from ..errors import DeviceError
from ..plans import ops
from ..plans.index_map import Dim, IndexMap, Layout
from ..plans.plan import GatherPlan, ScatterPlan
from ..plans.reduction_args import kernel_for
from ..runtime import as_bytes

WHO = "Tensor[]"
_ONLY = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are "
         "valid indices")
# NumPy's ufuncs that ``ufunc.at`` runs on Tensors -> dmlgpu's reduction (in row-major order: NumPy's bits)
UFUNC_AT = {np.add: "add", np.multiply: "mul", np.maximum: "max", np.minimum: "min"}


class Key(NamedTuple):
    """A parsed advanced key: ``view`` (the basic part of the key applied to the Tensor, array-indexed axes
    whole), ``arrays`` (one per indexed view axis: NumPy int64 arrays, in range and non-negative, or an integer
    Tensor where it is the key's only array), ``axes`` (the view axis each indexes), ``bshape`` (their
    broadcast shape) and ``at`` (the position of the broadcast dimensions among the result's)."""

    view: Tensor
    arrays: list
    axes: list
    bshape: tuple
    at: int

    @property
    def shape(self) -> tuple:
        """The result's shape (a read's; a write's values broadcast to it)."""
        rest = [n for d, n in enumerate(self.view.shape) if d not in self.axes]
        return tuple(rest[:self.at]) + self.bshape + tuple(rest[self.at:])


def is_basic(key: Any) -> bool:
    """Whether ``key`` holds only ints, slices, None and ``...`` (Tensor.__getitem__'s views)."""
    for k in key if isinstance(key, tuple) else (key,):
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, (bool, np.bool_, np.ndarray, list, Tensor)) or not hasattr(k, "__index__"):
            return False
    return True


def _entry(k: Any, who: str) -> tuple[str, Any]:
    """One entry of a key, classified: ("none"|"ellipsis"|"slice"|"int"|"bool0"|"array"|"bool", value)."""
    if k is None:
        return "none", None
    if k is Ellipsis:
        return "ellipsis", None
    if isinstance(k, slice):
        return "slice", k
    if isinstance(k, (bool, np.bool_)):
        return "bool0", bool(k)
    if isinstance(k, Tensor):
        if k.dtype == np.bool_:
            return ("bool0", bool(k.item())) if k.ndim == 0 else ("bool", k)
        if k.dtype.kind not in "iu":
            raise IndexError(f"{who}: arrays used as indices must be of integer (or boolean) type, not a Tensor of "
                             f"{k.dtype}")
        return "array", k.view(np.int64) if k.dtype == np.uint64 else k     # (NumPy reads uint64 as intp)
    if isinstance(k, (np.ndarray, list, tuple)) or (hasattr(k, "__array__") and not hasattr(k, "__index__")):
        listed = not isinstance(k, np.ndarray)
        try:
            a = np.asarray(k)
        except ValueError:
            raise IndexError(f"{who}: {_ONLY} (a ragged sequence is none of them)") from None
        if a.dtype == np.bool_:
            return ("bool0", bool(a)) if a.ndim == 0 else ("bool", a)
        if a.dtype.kind not in "iu":
            if listed and a.size == 0:
                return "array", a.astype(np.intp)
            raise IndexError(f"{who}: {_ONLY}" if listed else
                             f"{who}: arrays used as indices must be of integer (or boolean) type, not {a.dtype}")
        if a.ndim == 0:
            return "int", int(a)
        return "array", a
    if hasattr(k, "__index__"):
        return "int", operator.index(k)
    raise IndexError(f"{who}: {_ONLY}, not {type(k).__name__}")


def _same_device(t: Tensor, entries: list, who: str) -> None:
    """DeviceError (as every operation's: arguments._device) for an index Tensor of another Device than ``t``'s."""
    for kind, v in entries:
        if isinstance(v, Tensor) and v._rt is not t._rt:
            try:
                _device(who, t._rt, None, v)
            except DeviceError as e:
                raise DeviceError(f"{who}: {e}") from None


def _int64(a: np.ndarray) -> np.ndarray:
    """Index values as NumPy reads them (intp): uint64 values of 2^63 and more are negative, as NumPy's cast."""
    if a.dtype == np.uint64:
        return a.view(np.int64)
    return a.astype(np.int64, copy=False)


def _in_range(a: np.ndarray, n: int, axis: int, who: str) -> np.ndarray:
    """Integer indices ``a`` into a dimension of size ``n`` (``axis``), as NumPy reads them: non-negative int64,
    or IndexError naming ``who`` for the first one outside [-n, n), with its value as given."""
    v = _int64(a)
    bad = (v < -n) | (v >= n)
    if bad.any():
        value = int(v.reshape(-1)[int(np.argmax(bad.reshape(-1)))])
        if a.dtype == np.uint64 and value < 0:
            value += 2**64
        raise IndexError(f"{who}: index {value} is out of bounds for axis {axis} with size {n}")
    return np.where(v < 0, v + n, v) if (v < 0).any() else v


def _consumed(entries: list) -> int:
    """The dimensions a classified key (_entry) indexes: ints, slices and integer arrays one each, a boolean
    array as many as it has."""
    return sum(1 if kind in ("int", "slice", "array") else (v.ndim if kind == "bool" else 0) for kind, v in entries)


def parse(t: Tensor, key: Any, who: str = WHO) -> Key:
    """The advanced ``key`` of ``t`` (module docstring); IndexError as NumPy's (too many indices, a boolean
    of the wrong shape, arrays that do not broadcast, a NumPy index out of range), naming ``who``."""
    entries = [_entry(k, who) for k in (key if isinstance(key, tuple) else (key,))]
    _same_device(t, entries, who)
    consumed = _consumed(entries)
    if sum(kind == "ellipsis" for kind, _ in entries) > 1:
        raise IndexError(f"{who}: an index can only have a single ellipsis ('...')")
    if consumed > t.ndim:
        raise IndexError(f"{who}: too many indices for tensor: tensor is {t.ndim}-dimensional, but {consumed} "
                         f"were indexed")
    origin = list(range(len(entries)))     # each entry's place in the key as given (NumPy's adjacency: an
    if any(kind == "ellipsis" for kind, _ in entries):               # ellipsis parts arrays even when empty)
        at = next(i for i, (kind, _) in enumerate(entries) if kind == "ellipsis")
        entries[at:at + 1] = [("slice", slice(None))] * (t.ndim - consumed)
        origin[at:at + 1] = [at] * (t.ndim - consumed)
    else:
        entries += [("slice", slice(None))] * (t.ndim - consumed)
        origin += [len(origin)] * (t.ndim - consumed)
    basic: list = []
    arrays: list = []          # (array, original axis, view axis)
    advanced: list[int] = []   # positions in entries of the advanced ones (ints included), for placement
    axis = vaxis = 0
    first_vaxis = None         # the view axis where the advanced group starts
    for pos, (kind, v) in enumerate(entries):
        if kind in ("int", "array", "bool", "bool0"):
            advanced.append(origin[pos])
            if first_vaxis is None:
                first_vaxis = vaxis
        if kind == "none":
            basic.append(None)
            vaxis += 1
        elif kind == "slice":
            basic.append(v)
            axis += 1
            vaxis += 1
        elif kind == "int":
            basic.append(v)
            axis += 1
        elif kind == "bool0":
            basic.append(None)
            arrays.append((np.zeros(1 if v else 0, np.int64), None, vaxis))
            vaxis += 1
        elif kind == "array":
            basic.append(slice(None))
            arrays.append((v, axis, vaxis))
            axis += 1
            vaxis += 1
        else:                       # a boolean array: its nonzero(), one array per dimension it spans
            mask = v.numpy() if isinstance(v, Tensor) else v
            for d, n in enumerate(mask.shape):
                if n != t.shape[axis + d]:
                    raise IndexError(f"{who}: boolean index did not match indexed tensor along axis {axis + d}; size "
                                     f"of axis is {t.shape[axis + d]} but size of corresponding boolean axis is {n}")
            for d, nz in enumerate(np.nonzero(mask)):
                basic.append(slice(None))
                arrays.append((nz.astype(np.int64), axis + d, vaxis))
                vaxis += 1
            axis += mask.ndim
    view = t[tuple(basic)]
    adjacent = not advanced or advanced == list(range(advanced[0], advanced[0] + len(advanced)))
    shapes = [a.shape for a, _, _ in arrays]
    try:
        bshape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(f"{who}: shape mismatch: indexing arrays could not be broadcast together with shapes "
                         f"{' '.join(str(s) for s in shapes)}") from None
    several = len(arrays) > 1
    out_arrays: list = []
    for a, ax, vax in arrays:
        n = view.shape[vax]
        if isinstance(a, Tensor):
            if not several:
                out_arrays.append(a)
                continue
            a = a.numpy()          # several arrays are combined on the host (module docstring)
        if math.prod(bshape):                      # (NumPy checks only the indices an element uses)
            out_arrays.append(_in_range(np.asarray(a), n, ax if ax is not None else vax, who))
        else:
            out_arrays.append(np.zeros(np.shape(a), np.int64))
    at = first_vaxis if adjacent and first_vaxis is not None else 0     # (the group's view axes are consecutive)
    return Key(view, out_arrays, [vax for _, _, vax in arrays], tuple(bshape), at)


# ---- reads ----

def getitem(t: Tensor, key: Any) -> Tensor:
    """``t[key]`` for an advanced ``key`` (module docstring): a new Tensor, queued."""
    if (key.__class__ is np.ndarray or key.__class__ is Tensor and key._rt is t._rt) and \
            key.dtype.kind in "iu" and key.ndim and t.ndim and t.size and key.dtype != np.uint64:   # take's call
        return driver.call("gather", _gather_rule, t, key, None, (0,), mode="raise", name=WHO, modes=GATHER_MODES,
                           takes_mode=False)
    return getitem_key(parse(t, key))


def getitem_key(k: Key) -> Tensor:
    """The elements a parsed key selects, as a new Tensor (queued)."""
    view = k.view
    if len(k.arrays) == 1 and (isinstance(k.arrays[0], Tensor) or view._strides is None):
        axis = k.axes[0]
        idx = k.arrays[0]
        mode = "raise" if isinstance(idx, Tensor) else "wrap"   # (NumPy indices: checked, non-negative)
        if 0 in view.shape[:axis] + view.shape[axis + 1:] + tuple(np.shape(idx)):
            out = _empty(view, view.shape[:axis] + tuple(np.shape(idx)) + view.shape[axis + 1:])
        else:
            out = driver.call("gather", _gather_rule, view, idx, None, (axis,), mode=mode, name=WHO,
                              modes=GATHER_MODES, takes_mode=False)
        if k.at != axis:        # (an int between arrays: NumPy puts the broadcast dimensions first)
            nb = len(k.bshape)
            order = list(range(axis, axis + nb)) + [d for d in range(out.ndim) if not axis <= d < axis + nb]
            out = out.transpose(order)
        return out
    return _gather_positions(k)


def _empty(t: Tensor, shape: tuple) -> Tensor:
    return Tensor._wrap(t._rt.take_buffer(0), shape, t.dtype)


class _Units(NamedTuple):
    """A view's elements as units of its buffer: ``unit`` bytes (1 to 16), ``per`` units an element, the view's
    first unit and its strides in units."""

    unit: int
    per: int
    first: int
    strides: tuple


def _units(view: Tensor) -> _Units:
    size = view.dtype.itemsize
    strides = view._element_strides()
    unit = next(u for u in (16, 8, 4, 2, 1) if size % u == 0 and view.offset % u == 0)
    scale = size // unit
    return _Units(unit, scale, view.offset // unit, tuple(s * scale for s in strides))


def _positions(k: Key, u: _Units) -> np.ndarray:
    """The unit in the view's buffer where each selection of the broadcast arrays starts (shape ``bshape``)."""
    pos = np.full(k.bshape, u.first, np.int64)
    for a, vax in zip(k.arrays, k.axes):
        pos = pos + np.asarray(a, np.int64) * u.strides[vax]
    return pos


def _element_positions(k: Key, u: _Units) -> np.ndarray:
    """The unit of the view's buffer of each unit of the result (shape: the key's, then ``per`` units), in the
    result's row-major order."""
    view = k.view
    pos = _positions(k, u)
    rest = [d for d in range(view.ndim) if d not in k.axes]
    nb = len(k.bshape)
    shape = k.shape + (u.per,)
    full = np.expand_dims(pos, tuple(range(k.at)) + tuple(range(k.at + nb, len(shape))))
    for i, d in enumerate(rest):
        j = i if i < k.at else i + nb
        full = full + (np.arange(view.shape[d], dtype=np.int64) * u.strides[d]).reshape(
            (1,) * j + (view.shape[d],) + (1,) * (len(shape) - j - 1))
    full = full + np.arange(u.per, dtype=np.int64)
    return np.broadcast_to(full, shape)


def _map(k: Key, u: _Units) -> IndexMap:
    """The index map of the key's elements (dense: the result, packed, in NumPy's order, with ``per`` units an
    element; data: the view's buffer as units, one index component: the position of each selection)."""
    rest = [d for d in range(k.view.ndim) if d not in k.axes]
    shape = k.shape + ((u.per,) if u.per > 1 else ())
    dense = Layout.packed(shape).strides
    index = Layout.packed(k.bshape).strides
    nb = len(k.bshape)
    dims = []
    for i, n in enumerate(shape):
        if k.at <= i < k.at + nb:
            dims.append(Dim(n, dense[i], 0, index[i - k.at]))
        elif i == len(k.shape):                      # the units of one element
            dims.append(Dim(n, 1, 1, 0))
        else:
            d = rest[i if i < k.at else i - nb]
            dims.append(Dim(n, dense[i], u.strides[d], 0))
    units = k.view.buffer.nbytes // u.unit
    return IndexMap(tuple(dims), ((units, 1),), 0, u.unit)


@functools.lru_cache(maxsize=256)
def _plan(kind: str, index_map: IndexMap, index_dtype: np.dtype, unit: int) -> Any:
    """The gather's or scatter's plan of an index map, made once per map (plans hold no device state)."""
    if kind == "gather":
        return GatherPlan(index_map, index_dtype)
    flat = Layout.packed((index_map.tuple_dims[0][0],))
    return ScatterPlan(index_map, index_dtype, ops.input_copy(flat, flat, np.dtype(f"V{unit}")))


def _index_array(pos: np.ndarray, units: int) -> np.ndarray:
    return np.ascontiguousarray(pos, np.int32 if units < 2**31 else np.int64)


def _gather_positions(k: Key) -> Tensor:
    """One gather of the key's elements straight from the view's buffer (no copy of the view)."""
    view = k.view
    if math.prod(k.shape) == 0:
        return _empty(view, k.shape)
    if any(s < 0 for s in view._element_strides()):      # (the index map's strides are unsigned)
        view = view.copy()
        k = k._replace(view=view)
    u = _units(view)
    index_map = _map(k, u)
    idx = _index_array(_positions(k, u), index_map.tuple_dims[0][0])
    dev = view._rt
    out_bytes = math.prod(k.shape) * view.dtype.itemsize
    dev.check_sizes(view.buffer.nbytes, idx.nbytes, out_bytes)
    plan = _plan("gather", index_map, idx.dtype, u.unit)
    with dev.launch() as launch:
        idx_buf, out_buf = launch.scratch(max(idx.nbytes, 4)), launch.output(out_bytes)
        idx_buf.stage(as_bytes(idx))
        dispatches, params = plan.dispatches(dev, input=view.buffer, indices=idx_buf, output=out_buf,
                                             take=launch.scratch)
        launch.run(dispatches, uploads=params + [idx_buf], queue=True)
    return Tensor._wrap(out_buf, k.shape, view.dtype)


# ---- writes: t[key] = value, ufunc.at ----

def _values(t: Tensor, value: Any, shape: tuple, who: str) -> Tensor:
    """``value`` broadcast to ``shape`` and cast to ``t``'s dtype (NumPy's assignment), as a Tensor on ``t``'s
    device that shares no memory with ``t``: a Tensor of the dtype on the device (a broadcast by strides), any
    other value through the host."""
    if isinstance(value, Tensor) and value._rt is t._rt and value.dtype == t.dtype:
        vshape = value.shape
        if vshape != shape:
            try:
                if np.broadcast_shapes(vshape, shape) != shape:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{who}: shape mismatch: value tensor of shape {vshape} could not be broadcast to "
                                 f"indexing result of shape {shape}") from None
            lead = len(shape) - len(vshape)
            strides = (0,) * lead + tuple(0 if n == 1 else s for n, s in zip(vshape, value._element_strides()))
            value = value._view(shape, value.dtype, value.offset, strides)
        if value.buffer is t.buffer or value._strides is not None:
            value = value.copy()            # (a packed copy: no overlap with the target)
        return value
    if isinstance(value, Tensor):
        value = value.numpy()
    try:
        arr = assigned(value, t.dtype, shape, who)
    except ValueError as e:
        raise ValueError(str(e).replace("the tensor's shape", "the indexing result's shape")) from None
    return _upload(arr, t._rt)


def setitem(t: Tensor, key: Any, value: Any, reduction: str = "none", who: str = WHO) -> None:
    """``t[key] = value`` (``reduction`` "none": the last duplicate in row-major order wins) or NumPy's
    ``ufunc.at(t, key, value)`` (a reduction, in row-major order), in place: one scatter into ``t``'s buffer."""
    if (key.__class__ is np.ndarray or key.__class__ is Tensor and key._rt is t._rt) and \
            key.dtype.kind in "iu" and key.ndim and t.ndim and t.size and t._strides is None and key.size and \
            key.dtype != np.uint64:   # t[ids] = v: scatter_nd(t, ids[..., None], v)'s call and checks
        shape = key.shape + t.shape[1:]
        driver.call("scatter_nd", _scatter_nd_rule, t, _column(key), _values(t, value, shape, who),
                    (reduction, True, "row-major", False), mode="raise", out=t,
                    key=("raise", reduction, "include_self", "row-major", who), name=who,
                    byte_order=reduction != "none", takes_mode=False, column=True)
        return
    k = parse(t, key, who)
    _scatter_key(t, k, _values(t, value, k.shape, who), reduction, who)


def _scatter_key(t: Tensor, k: Key, vals: Tensor, reduction: str, who: str = WHO) -> None:
    """``vals`` (a Tensor of the key's shape) scattered into the key's elements of ``t``, in place."""
    if math.prod(k.shape) == 0:
        return
    view = k.view
    if len(k.arrays) == 1 and k.axes[0] == 0 and k.at == 0 and view._strides is None:
        idx = k.arrays[0]
        mode = "raise" if isinstance(idx, Tensor) else "clamp"     # (NumPy indices: checked, non-negative)
        idx = _column(idx)
        driver.call("scatter_nd", _scatter_nd_rule, view, idx, vals, (reduction, True, "row-major", False),
                    mode=mode, out=view, key=(mode, reduction, "include_self", "row-major", who), name=who,
                    byte_order=reduction != "none", takes_mode=False, column=True)
        return
    if k.arrays and isinstance(k.arrays[0], Tensor):     # (the key's one array, a Tensor, into a strided view or another axis)
        k = k._replace(arrays=[_in_range(k.arrays[0].numpy(), view.shape[k.axes[0]], k.axes[0], who)])
    _scatter_positions(k, vals, reduction)


def _scatter_positions(k: Key, vals: Tensor, reduction: str) -> None:
    """One scatter of ``vals`` (packed, the key's shape) into the key's elements of the view's buffer, in place."""
    view = k.view
    dev = view._rt
    if reduction == "none" and all(s >= 0 for s in view._element_strides()):
        u = _units(view)
        index_map = _map(k, u)
        units = index_map.tuple_dims[0][0]
        idx = _index_array(_positions(k, u), units)
        plan: Any = _plan("scatter", index_map, idx.dtype, u.unit)
    else:          # one position per element of the result, in its order (reductions take whole elements)
        size = view.dtype.itemsize
        unit = size if reduction != "none" else _units(view).unit
        u = _Units(unit, size // unit, view.offset // unit, tuple(s * (size // unit) for s in view._element_strides()))
        full = _element_positions(k, u)
        units = view.buffer.nbytes // unit
        idx = _index_array(full.reshape(-1, 1), units)
        flat = Layout.packed((units,))
        dtype = view.dtype if reduction != "none" else np.dtype(f"V{unit}")
        plan = ops.scatter_nd(flat, Layout.packed(idx.shape), Layout.packed((idx.shape[0],)), dtype, idx.dtype,
                              reduction, ops.input_copy(flat, flat, dtype))
    dev.check_sizes(view.buffer.nbytes, idx.nbytes, vals.nbytes)
    with dev.launch() as launch:
        idx_buf = launch.scratch(max(idx.nbytes, 4))
        idx_buf.stage(as_bytes(idx))
        dispatches, params = plan.dispatches(dev, input=view.buffer, indices=idx_buf, output=view.buffer,
                                             updates=vals.buffer, take=launch.scratch)
        launch.run(dispatches, uploads=params + [idx_buf], queue=True)


def ufunc_at(ufunc: Any, t: Tensor, key: Any, value: Any = None) -> None:
    """NumPy's ``ufunc.at(t, key, value)`` on a Tensor for add, multiply, maximum and minimum: in place, the
    updates applied one by one in row-major order of the indexed result (NumPy's order, so its bits)."""
    who = f"numpy.{ufunc.__name__}.at"
    reduction = UFUNC_AT.get(ufunc)
    if reduction is None:
        raise TypeError(f"{who} does not run on a dmlgpu.Tensor: dmlgpu runs np.add.at, np.multiply.at, "
                        f"np.maximum.at and np.minimum.at (others: run it on t.numpy() and write the result back)")
    if value is None:
        raise TypeError(f"{who}: a binary ufunc needs a second operand (values)")
    try:
        kernel_for(t.dtype, reduction)          # (the reductions' dtype rule: TypeError saying which they take)
    except TypeError as e:
        raise TypeError(f"{who}: {e}") from None
    setitem(t, key, value, reduction, who)


def _column(idx: Any) -> Any:
    """Indices as scatter_nd's index tuples of one component (shape + (1,)): a packed Tensor's view made directly
    (Tensor.reshape's checks cost several microseconds per call), an array's reshape."""
    if idx.__class__ is Tensor and idx._strides is None:
        return idx._view(idx.shape + (1,), idx.dtype, idx.offset, None)
    return idx.reshape(idx.shape + (1,))


tensor_protocols.INDEXING = sys.modules[__name__]
