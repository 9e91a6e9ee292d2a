"""Layer 2's generic operator driver: what every NumPy-style gather or scatter function does around its own
shape rule, written once, so that a new operator's function is a shape rule and one ``call()``.

``call(op, rule, data, indices, updates, args, device=, mode=)``:

1. the call template (dmlgpu/api/call_templates.py): a repeated call on Tensors alone, without ``device=``, records the
   launches traced for its signature (the fast path, before anything else);
2. the operands normalised once: items of any size as units (items.on_units), strided views packed (``_packed``),
   the result seen as the caller's again after the run (a normalised call tries its own template first);
3. the operands' checks (dtypes dmlgpu can move, index dtypes, the device, ``mode``), errors named ``op`` (or
   ``name``, the function the user called);
4. once per signature (the device's cache of planned calls): ``rule(data, indices, updates, *args)``, the
   operator's own checks, which returns a ``Signature``; the check of the index values (mode="raise") or
   of dimensions of size 0; the plan, ``ops.PLANS[op](*plan_args)``;
5. the run (``_run``, the one planned path): NumPy operands give a NumPy result, a Tensor operand (or a recording) a Tensor.

Adding an operator (docs/adding-an-operator.md): its plan, a row of ``ops.PLANS``; its function, a rule and a
call(); its export in dmlgpu/__init__.py; and, only if no kernel does what it needs, a shader and its row in
kernels/table.py.

Examples
--------
A gather of whole rows along axis 0, through the driver (gather's own row of ops.PLANS):

>>> import numpy as np
>>> from dmlgpu.api import driver
>>> from dmlgpu.plans.index_map import Layout, take_shape
>>> def rows(data, idx, upd):
...     out = take_shape(data.shape, idx.shape, 0)
...     layouts = Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out)
...     return driver.Signature(out, data.shape[0], (*layouts, 0, data.dtype, idx.dtype))
>>> driver.call("gather", rows, np.arange(6, dtype=np.int16).reshape(3, 2), [2, -1])
array([[4, 5],
       [4, 5]], dtype=int16)
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from . import call_templates as calls, items
from ..plans import ops
from .arguments import MODES, _index_check, _operands, _updates
from .call_templates import out_key
from .execution import _Call, _execute, _planned, check_out, native
from .tensor import Tensor


class Signature(NamedTuple):
    """What an operator's shape rule works out from a call's signature (shapes, dtypes, arguments).

    ``out_shape``: the result's shape (a scatter's: data's). ``dims``: the size each index addresses, an int
    for every index or one per position of an index tuple (the indices' last dimension); indices are checked
    (mode="raise") or clamped against it. ``plan_args``: the arguments of the operator's row of ops.PLANS, or
    None when the call moves nothing (a gather's empty result, a scatter's unchanged copy of data).
    """

    out_shape: tuple
    dims: Any
    plan_args: tuple | None


Rule = Callable[..., Signature]


def call(op: str, rule: Rule, data: Any, indices: Any, updates: Any = None, args: tuple = (), *,
         device: Any = None, mode: str = "clamp", out: Any = None, key: tuple | None = None,
         byte_order: bool = False, name: str | None = None, modes: tuple = MODES, fill: bytes = b"",
         takes_mode: bool = True, column: bool = False) -> Any:
    """Runs operator ``op`` (a name of ops.PLANS) on these operands (module docstring).

    Parameters
    ----------
    op : str
        The operator's name: its row of ops.PLANS, and the name its errors start with.
    rule : callable
        ``rule(data, indices, updates, *args)`` -> Signature: the operator's checks (TypeError, ValueError,
        IndexError; named ``op`` by the driver) and shapes. ``data`` and ``updates`` are NumPy arrays or
        Tensors, ``indices`` an index-dtype array or Tensor; ``updates`` is None for a gather.
    data, indices, updates : array_like or Tensor
        A gather's ``updates`` is None.
    args : tuple
        The operator's other arguments (axis, ...), passed to ``rule``.
    device, mode, out
        As the layer-2 functions take them (dmlgpu.gather, dmlgpu.scatter_nd): ``out`` a Tensor or NumPy
        array of the result's shape and dtype, which may be a scatter's ``data`` (in place).
    key : tuple or None
        The arguments' part of the call's signature (exact ints and strings; default ``(*args, mode)``): the
        planned call and the call template are kept under it (and ``out``'s kind: execution.out_key).
    name : str, optional
        The function the user called, where it is not ``op`` (NumPy's names): its errors start with it, the
        device's report of a bad Tensor index (mode="raise", index_check.py), made after the call returned, too.
    modes : tuple
        The modes the caller takes (arguments.MODES; NumPy's take: GATHER_MODES, which only gather plans resolve).
    fill : bytes
        mode="fill": the bytes of one element of ``data``'s dtype that an out-of-range index tuple reads
        (arguments._fill); part of the call's signature.
    takes_mode : bool
        False where the user's spelling has no ``mode`` (NumPy's indexing and ufunc.at, take_along_axis,
        put_along_axis): an error that asks for another mode names ``dmlgpu.<op>`` instead.
    column : bool
        ``indices`` are the user's as a column of 1-tuples (``ids[..., None]``: NumPy's ``t[ids] = v`` and
        ufunc.at): a bad index's position is given in the user's shape (index_check.IndexCheck's ``column``).
    byte_order : bool
        True for scatter reductions: their arithmetic needs native byte order, so NumPy operands of another
        byte order are converted there and back (execution.native); the other operators move bytes.

    Returns
    -------
    np.ndarray or Tensor
        ``out`` when given.

    Raises
    ------
    TypeError, ValueError, IndexError, dmlgpu.DeviceError
        As the layer-2 functions, with messages that start with ``name`` or else ``op``.
    """
    if key is None:
        key = (*args, mode) if name is None else (*args, mode, name)
    if fill:
        key += ("fill " + fill.hex(),)     # (a str: the signature's planned call and template hold its bits)
    if device is None and data.__class__ is Tensor and indices.__class__ is Tensor and data._strides is None and \
            indices._strides is None:
        res = calls.templated(op, data, indices, updates, key, out)     # a repeated call: its template
        if res is not None:
            return res
    # the operands normalised once: items of any size as units (items.py), strided views packed (_packed); the
    # result seen as the caller's again by ``finish``
    finish: Callable[[Any], Any] | None = None
    normalised = False
    if op in items.OPERATORS and isinstance(getattr(data, "dtype", None), np.dtype) and items.odd(data.dtype):
        data, indices, updates, args, out, fill, finish = items.on_units(op, data, indices, updates, args, out, fill)
        normalised = True
    if any(isinstance(x, Tensor) and x._strides is not None for x in (data, indices, updates, out)):
        data, indices, updates, out, unpack = _packed(data, indices, updates, out)
        normalised = True
        if finish is None:
            finish = unpack
        elif unpack is not None:
            finish = _then(unpack, finish)
    if normalised and device is None and data.__class__ is Tensor and indices.__class__ is Tensor:
        res = calls.templated(op, data, indices, updates, key, out)       # (normalised: a template of its own)
        if res is not None:
            return res if finish is None else finish(res)
    res = _run(op, rule, data, indices, updates, args, device, mode, out, key, byte_order, name, modes, fill,
               takes_mode, column)
    return res if finish is None else finish(res)


def _then(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda result: second(first(result))


def _run(op: str, rule: Rule, data: Any, indices: Any, updates: Any, args: tuple, device: Any, mode: str, out: Any,
         key: tuple, byte_order: bool, name: str | None, modes: tuple, fill: bytes, takes_mode: bool = True,
         column: bool = False) -> Any:
    """The planned path of call(), on normalised operands (packed, of items the kernels move): the operands'
    checks, the planned call of the signature (made once: ``rule``, the index check, the plan), its run."""
    who = name or op                # (what the errors name)
    data, idx, values, dev, mode = _operands(who, data, indices, device, mode, updates, modes,
                                             None if takes_mode else op)
    upd = None if updates is None else _updates(updates, data, who)
    arrays = (data, idx) if upd is None else (data, idx, upd)

    def build() -> _Call:
        sig = rule(data, idx, upd, *args)
        dims = np.asarray(sig.dims)
        count = upd.size if upd is not None else math.prod(sig.out_shape)
        check = _index_check(who, count, dims, mode, column)
        if sig.plan_args is None:
            return _Call(None, sig.out_shape, check, copy=upd is not None)
        resolve: dict = {"index_mode": mode} if mode in ("wrap", "clip", "fill", "drop") else {}   # resolved by plans
        if fill:
            resolve["fill"] = fill
        guarded = None          # mode="raise" in place on Tensor indices: the scatter behind the device's check
        if check is not None and upd is not None and out is not None and isinstance(idx, Tensor):
            guarded = ops.PLANS[op](*sig.plan_args, index_mode="drop")
        return _Call(ops.PLANS[op](*sig.plan_args, **resolve), sig.out_shape, check, guarded=guarded)

    if out is not None:
        check_out(who, out, data, arrays[1:], dev)
        key += out_key(out, data)
    planned = _planned(dev, op, arrays, key, build, name)
    if byte_order and not data.dtype.isnative:      # (scatter reductions: their arithmetic in native byte order)
        return native(dev, planned, data, idx, values, upd, out, op)
    return _execute(dev, planned, data, idx, values, upd, out=out, op=op)


def _packed(data: Any, indices: Any, updates: Any, out: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Strided Tensor views (Tensor.transpose(), t[:, 1], ...) as the kernels take them: packed copies (on the
    device), and where ``out`` is strided, the packed Tensor the call writes and ``finish(result)``, which writes it
    into ``out``'s elements on the device (in place on ``data``: data's packed copy is updated, then written back);
    ``finish`` None where ``out`` is not strided."""
    def packed(x: Any) -> Any:
        return x._packed() if isinstance(x, Tensor) and x._strides is not None else x

    pd, pi, pu = packed(data), packed(indices), packed(updates)
    if not isinstance(out, Tensor) or out._strides is None:
        return pd, pi, pu, out, None
    in_place = out is data or isinstance(data, Tensor) and (data.buffer, data.offset, data.shape, data._strides) == \
        (out.buffer, out.offset, out.shape, out._strides)
    into = pd if in_place else Tensor._wrap(out._rt.take_buffer(out.nbytes), out.shape, out.dtype)

    def finish(result: Any) -> Any:
        out._write_packed(into)
        return out
    return pd, pi, pu, into, finish
