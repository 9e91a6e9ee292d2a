"""Layer 2: gather and reduce in one pass, without the intermediate of the gathered rows (issue 51):
``segment_reduce`` (sorted CSR segments), ``embedding_bag`` (PyTorch's F.embedding_bag) and ``gather_scatter``
(``scatter_nd(base, dst[:, None], take(x, src, axis=0))`` fused: dmlgpu/api/fused_gather_scatter.py). One kernel, shaders/segment.comp; its plan and
contract: dmlgpu/plans/segment.py. DirectML has no such operator (no layer-1 descriptor) and ONNX none either.

Operands are NumPy arrays (what NumPy can view: interop.host_array) or Tensors; the result is a new NumPy array,
or a Tensor (queued) when an operand is a Tensor or the call is recorded, or ``out``. Host index arrays (offsets,
ids, src, dst) are checked before any GPU work (errors name the function); Tensor offsets and ids are used as
they are, on the device: offsets are clamped into [0, positions] and a segment whose end is below its start is
empty (no error: the caller promises them valid); embedding_bag checks a Tensor's ids on the device (an
IndexError at the next synchronize or read, index_check.py), and its kernel clamps them meanwhile. Nothing of the caller's changes but ``out``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import _device, named
from .constructors import empty
from .device import Runtime
from ..errors import DeviceError
from .fused_args import (EdgeGroups, _U32, _aux, _check_ids, _check_offsets, _checked_out, _identity, _index,
                         _narrow, _operand)
from ..plans import reduction_args as _reduction
from ..plans.index_check import IndexCheck
from ..plans.segment import PIECE, SegmentPlan, ordered_mode, ordered_runs, splits
from ..runtime import as_bytes
from . import call_templates as calls, signatures
from .signatures import DeviceLike
from .tensor import Tensor
from .tensor_protocols import assigned

__all__ = ["EdgeGroups", "embedding_bag", "segment_reduce"]


def _run(name: str, dev: Runtime, plan: SegmentPlan, aux: Any, data: Any, shape: tuple, dtype: np.dtype,
         out: Any, as_tensor: bool, base: Any = None, extra: tuple = (), sig: tuple | None = None,
         slots: tuple = (), check: IndexCheck | None = None) -> Any:
    """Runs ``plan`` into a new result of ``shape`` or ``out`` (``base``: the values the output starts from where
    the plan reads them: a NumPy array, or ``out`` itself; ``extra``: the ids and the weights of a SPLIT plan).
    ``sig``: the call's template signature (_templated), under which a queued run whose every operand is one of
    the Tensors ``slots`` (data, indices, updates-or-None: a call template's slots) is traced
    (dmlgpu/api/call_templates.py), with ``check``, the device check of the indices queued with it."""
    nbytes = int(np.prod(shape)) * dtype.itemsize
    dev.check_sizes(max(4, data.nbytes), max(4, aux.nbytes), nbytes, *{id(x): x.nbytes for x in extra}.values())
    if int(np.prod(data.shape)) >= _U32 or int(np.prod(shape)) >= _U32:
        raise DeviceError(f"{name}: tensors of 2^32 or more elements are not supported; split the call")
    if isinstance(out, np.ndarray):
        np.copyto(out, _run(name, dev, plan, aux, data, shape, dtype, None, False, base, extra))
        return out
    if plan.invocations == 0:
        if out is not None:
            return out
        return empty(shape, dtype, device=dev.user) if as_tensor else np.empty(shape, dtype)
    direct = isinstance(out, Tensor) and out.offset == 0 and out._strides is None and \
        not any(isinstance(x, Tensor) and x.buffer is out.buffer for x in (aux, data) + extra)
    if not direct and isinstance(base, Tensor):    # out, which an operand shares, or a view: into its copy
        base = base.copy()
    with dev.launch() as launch:
        uploads = []

        def operand(x):
            if isinstance(x, Tensor):
                return x.buffer
            buf = launch.scratch(max(4, x.nbytes))
            if x.nbytes:
                buf.stage(as_bytes(np.ascontiguousarray(x)))
                uploads.append(buf)
            return buf

        aux_buf, data_buf = operand(aux), operand(data)
        bound: dict = {id(aux): aux_buf, id(data): data_buf}
        extra_bufs = [bound[id(x)] if id(x) in bound else bound.setdefault(id(x), operand(x)) for x in extra]
        if direct:
            out_buf = out.buffer
        elif isinstance(base, Tensor):         # (then written back into out)
            out_buf = base.buffer
        elif base is not None:                 # host values the output starts from
            out_buf = launch.output(nbytes) if as_tensor else launch.scratch(nbytes)
            out_buf.stage(as_bytes(np.ascontiguousarray(base)))
            uploads.append(out_buf)
        else:
            out_buf = launch.output(nbytes) if as_tensor else launch.scratch(nbytes)
        dispatches, params = plan.dispatches(dev, aux_buf, data_buf, out_buf, *extra_bufs)
        if not as_tensor:
            got = launch.run(dispatches, uploads=params + uploads, downloads=[out_buf])[0]
            return got[:nbytes].view(dtype).reshape(shape)
        launch.run(dispatches, uploads=params + uploads, queue=True)
        if sig is not None and not uploads and base is None and (out is None or direct) and dev.max_queued and \
                launch.recording is None:
            per_call = [None if x is None else x.buffer for x in slots]
            if all(any(b is p for p in per_call) for b in [aux_buf, data_buf, *extra_bufs]):
                calls.trace(dev, sig, dispatches, per_call[:2] + [out_buf] + per_call[2:], launch.taken, shape,
                            check)
    if direct:
        return out
    result = base if isinstance(base, Tensor) else Tensor._wrap(out_buf, shape, dtype)
    if out is not None:
        out.write(result)
        return out
    return result


def _is_tensor_call(dev: Runtime, *operands: Any) -> bool:
    return dev.active_recording() is not None or any(isinstance(x, Tensor) for x in operands)


def _scalar(value: Any, dtype: np.dtype, what: str) -> np.ndarray:
    if np.ndim(value) != 0:
        raise ValueError(f"{what} must be a scalar, not an array of shape {np.shape(value)}")
    return assigned(value, dtype, (), what)


# ---- segment_reduce ----
_SEGMENT_REDUCTIONS = ("add", "mul", "min", "max", "mean", "sum", "prod", "amax", "amin")


@signatures.segment_reduce
def segment_reduce(data: Any, offsets: Any, reduction: str = "add", *, initial: Any = None, out: Any = None,
                   device: DeviceLike = None) -> Any:
    """Reduces sorted segments of rows in one pass: ``out[s] = reduce(data[offsets[s]:offsets[s + 1]])`` along
    axis 0 (CSR bounds: torch_scatter.segment_csr's ``indptr``; ``jax.ops.segment_sum`` with sorted ids).

    Each segment is reduced in row order, one row at a time, with the scatter reductions' arithmetic
    (dmlgpu.scatter_nd's ``reduction``: integers wrap, floats round to nearest even in their dtype, NaN propagates
    through min and max, -0 < +0): without ``initial`` the first step is the segment's first row itself (no
    identity is added: ``[-0.0]`` sums to -0.0), then ``acc = acc op row`` for each further row; with ``initial``
    the first step is ``initial op row``. A float sum so has the bits of adding its rows one by one
    (dmlgpu.reference.segment_reduce). "mean" (float dtypes) divides the segment's sum once by its row count,
    rounded once to nearest even. An empty segment gives ``initial``, else the reduction's identity: 0 for add and
    mean, 1 for mul, and for min / max the dtype's largest / smallest value (+-inf for floats; bool True /
    False). (torch_scatter.segment_csr gives 0 for empty segments of min and max: pass ``initial=0`` where that is
    wanted and every value is of one sign, or mask empty segments.) One pass over the data, no sort, no atomics:
    one GPU invocation per segment and column walks the segment's rows (shaders/segment.comp). DirectML has no
    such operator (no layer-1 descriptor).

    Parameters
    ----------
    data : array_like or Tensor
        At least one dimension; bool, integer or float dtype (float16, float32, float64, ml_dtypes' bfloat16 and
        float8 types), native byte order.
    offsets : array_like or Tensor
        1-D integers, segments + 1 of them: non-negative, non-decreasing, at most ``len(data)`` (checked for host
        arrays; a Tensor's are clamped into ``[0, len(data)]`` on the device, and a segment whose end is below
        its start is empty). Rows outside ``[offsets[0], offsets[-1])`` take
        no part.
    reduction : str
        "add", "mul", "min", "max" or "mean" (or PyTorch's "sum", "prod", "amin", "amax").
    initial : scalar, optional
        The value each segment's reduction starts from, cast to ``data``'s dtype (not with "mean").
    out : Tensor or np.ndarray, optional
        Receives the result (shape ``(segments,) + data.shape[1:]``, data's dtype); returned.
    device : Device or int, optional
        Where it runs (default: a Tensor operand's device, else the default device).

    Returns
    -------
    np.ndarray or Tensor
        Shape ``(len(offsets) - 1,) + data.shape[1:]``, data's dtype; a Tensor when an operand is one or the call
        is recorded.

    Raises
    ------
    ValueError
        Bad offsets (empty, negative, decreasing, past the end), an unknown reduction, ``initial`` with "mean",
        or ``out`` of another shape or dtype.
    TypeError
        A dtype the reduction does not take (integer "mean"), offsets that are not integers.
    dmlgpu.DeviceError
        Operands of another device, or larger than the device can hold.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> data = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)
    >>> dmlgpu.segment_reduce(data, [0, 1, 1, 4])
    array([[ 1.,  2.],
           [ 0.,  0.],
           [15., 18.]], dtype=float32)
    >>> dmlgpu.segment_reduce(data, [0, 3, 4], "max")
    array([[5., 6.],
           [7., 8.]], dtype=float32)
    >>> dmlgpu.segment_reduce(np.arange(5, dtype=np.int32), [0, 2, 2, 5], "min", initial=3)
    array([0, 3, 2], dtype=int32)
    """
    templated = device is None and initial is None and data.__class__ is Tensor and offsets.__class__ is Tensor \
        and data._strides is None and offsets._strides is None
    if templated:                  # a repeated call on Tensors: its template (call_templates.py)
        res = calls.templated("segment_reduce", data, offsets, None, (reduction,), out)
        if res is not None:
            return res
    name = "segment_reduce"
    try:
        if not isinstance(reduction, str) or reduction not in _SEGMENT_REDUCTIONS:
            raise ValueError(f"reduction must be one of {', '.join(map(repr, _SEGMENT_REDUCTIONS))}, "
                             f"not {reduction!r}")
        reduction_arg, reduction = reduction, _reduction.PYTORCH_NAMES.get(reduction, reduction)
        data = _operand(data, "data")
        if data.ndim == 0:
            raise ValueError("data must have at least one dimension")
        offs = _index(offsets, "offsets")
        dev = _device(name, device, data, offs, out)
        _reduction.kernel_for(data.dtype, reduction)
        if isinstance(offs, np.ndarray):
            _check_offsets(offs, data.shape[0], "offsets", "data")
            offs = _narrow(offs)
        elif offs.shape[0] == 0:
            raise ValueError("offsets must hold at least one bound")
        if initial is not None and reduction == "mean":
            raise ValueError("initial is not taken with reduction 'mean' (an empty segment's mean is 0)")
        init = None if initial is None else _scalar(initial, data.dtype, "initial")
        shape = (offs.shape[0] - 1,) + tuple(data.shape[1:])
        as_tensor = _is_tensor_call(dev, data, offs, out)
        _checked_out(name, out, shape, data.dtype, dev, as_tensor)
        cols = int(np.prod(data.shape[1:]))
        empty_value = init if init is not None else _identity(reduction, data.dtype)
        plan = SegmentPlan(data.dtype, reduction, segments=shape[0], cols=cols, limit=data.shape[0],
                           offsets=(0, offs.dtype.itemsize // 4), initial=init, empty=empty_value)
        aux, _ = _aux(dev, [offs])
        sig = calls.signature(name, data, offs, None, (reduction_arg,), out) if templated else None
        return _run(name, dev, plan, aux, data, shape, data.dtype, out, as_tensor, sig=sig, slots=(data, offs, None))
    except (TypeError, ValueError, IndexError, DeviceError, OverflowError) as e:
        raise named(e, name) from None


# ---- embedding_bag ----
_BAG_MODES = {"sum": "add", "mean": "mean", "max": "max"}


@signatures.embedding_bag
def embedding_bag(table: Any, ids: Any, offsets: Any = None, *, mode: str = "sum", per_sample_weights: Any = None,
                  padding_idx: int | None = None, include_last_offset: bool = False, order: str | None = None,
                  out: Any = None, device: DeviceLike = None) -> Any:
    """Sums, averages or takes the maximum of bags of table rows in one pass: PyTorch's
    ``F.embedding_bag(ids, table, offsets, mode=..., per_sample_weights=..., padding_idx=...,
    include_last_offset=...)`` with the table first (as dmlgpu's other functions take their data first).

    Bag b holds ``ids[b]`` (2-D ``ids``: bags of one size, no ``offsets``) or ``ids[offsets[b]:offsets[b + 1]]``
    (1-D ``ids``; without ``include_last_offset`` the last bag ends at ``len(ids)``). Its rows are combined in the
    bag's order of ids, one at a time, with the scatter reductions' arithmetic (dmlgpu.scatter_nd), from its first
    row: "sum" has the bits of NumPy adding the gathered rows one by one in the table's dtype
    (dmlgpu.reference.embedding_bag); "mean" divides that sum once by the bag's count, rounded once to nearest even;
    "max" propagates NaN. ``per_sample_weights`` ("sum" only) multiply each row first, rounded as NumPy rounds
    ``w * table[id]``. Ids equal to ``padding_idx`` are skipped and not counted in "mean". An empty bag (or one of
    padding only) gives zeros, in every mode. One kernel reads each id's row once and writes each bag once
    (shaders/segment.comp: one GPU invocation per bag and column). DirectML has no such operator (no layer-1
    descriptor).

    ``order`` ("sum" and "mean" of float tables) sums each bag as dmlgpu.scatter_nd's reduction orders sum a
    target's updates: "tree" in reference.tree's pairwise tree of the bag's rows; "fixed-point" as 64-bit
    fixed-point integers at the bag's largest exponent (the same bits in any order, on any device), its fraction
    bits set by the call's ids' count times the row's elements (padding entries included); the rows are read twice
    then. On CPU devices a bag may then hold at most 28,672 ids (DeviceError).

    Parameters
    ----------
    table : array_like or Tensor
        2-D, rows of embeddings: float16, float32, float64 or ml_dtypes' bfloat16 (any mode), integers ("sum",
        "max").
    ids : array_like or Tensor
        Integers in ``[0, len(table))``: 2-D (one bag per row) or 1-D with ``offsets``. Host arrays are checked
        before any GPU work; a Tensor's are checked on the device (its negative ids count from the end, as in
        dmlgpu's gathers; one outside ``[-len(table), len(table))`` raises IndexError at the device's next
        synchronize or read, as mode="raise" does for dmlgpu.gather; inside a recording it is only clamped).
    offsets : array_like or Tensor, optional
        1-D integers: where each bag starts, from 0, non-decreasing, at most ``len(ids)`` (checked for host arrays).
    mode : str
        "sum", "mean" or "max".
    per_sample_weights : array_like or Tensor, optional
        ``ids``' shape, the table's dtype; "sum" only.
    padding_idx : int, optional
        An id in ``[-len(table), len(table))`` (negative: from the end) whose entries are skipped.
    include_last_offset : bool
        ``offsets`` has one more entry, the end of the last bag (CSR).
    order : str, optional
        None or "row-major" (the bag's order of ids, one by one), "tree" or "fixed-point" (dmlgpu.scatter_nd's
        orders; "max" and integer tables: the same bits in every order).
    out : Tensor or np.ndarray, optional
        Receives the result (shape ``(bags, table.shape[1])``, the table's dtype); returned.
    device : Device or int, optional
        Where it runs (default: a Tensor operand's device, else the default device).

    Returns
    -------
    np.ndarray or Tensor
        Shape ``(bags, table.shape[1])``, the table's dtype; a Tensor when an operand is one or the call is recorded.

    Raises
    ------
    IndexError
        A host id outside the table.
    ValueError
        Bad offsets (empty, not starting at 0, decreasing, past the end), ``offsets`` with 2-D ids or none with
        1-D ids, per_sample_weights of another shape or with a mode other than "sum", a padding_idx outside the
        table, an unknown mode, ``out`` of another shape or dtype.
    TypeError
        A table dtype the mode does not take (integer "mean"), per_sample_weights of another dtype, ids that
        are not integers.
    dmlgpu.DeviceError
        Operands of another device, or larger than the device can hold.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> table = np.arange(12, dtype=np.float32).reshape(6, 2)
    >>> dmlgpu.embedding_bag(table, [1, 2, 4, 5, 0], [0, 2, 2])
    array([[ 6.,  8.],
           [ 0.,  0.],
           [18., 21.]], dtype=float32)
    >>> dmlgpu.embedding_bag(table, [[1, 3], [0, 0]], mode="max")
    array([[6., 7.],
           [0., 1.]], dtype=float32)
    >>> dmlgpu.embedding_bag(table, [1, 2, 3], [0], mode="mean", padding_idx=2)     # rows 1 and 3
    array([[4., 5.]], dtype=float32)
    >>> dmlgpu.embedding_bag(table, [1, 2], [0], per_sample_weights=np.array([2, 0.5], np.float32))
    array([[6. , 8.5]], dtype=float32)
    """
    args = _bag_args(mode, padding_idx, include_last_offset, order) if device is None and \
        per_sample_weights is None and table.__class__ is Tensor and ids.__class__ is Tensor and \
        table._strides is None and ids._strides is None else None
    if args is not None:           # a repeated call on Tensors: its template (call_templates.py)
        res = calls.templated("embedding_bag", table, ids, offsets, args, out)
        if res is not None:
            return res
    name = "embedding_bag"
    try:
        if not isinstance(mode, str) or mode not in _BAG_MODES:
            raise ValueError(f"mode must be 'sum', 'mean' or 'max', not {mode!r}")
        reduction = _BAG_MODES[mode]
        order = None if order is None else _reduction.check_order(order)
        table = _operand(table, "table")
        if table.ndim != 2:
            raise ValueError(f"table must have 2 dimensions (rows of embeddings), not shape {table.shape}")
        if table.dtype.kind == "b" or not (table.dtype.kind in "iu" or _reduction.is_float(table.dtype)):
            raise TypeError(f"table has dtype {table.dtype}; it takes float16, float32, float64, bfloat16 and "
                            f"integers")
        if reduction == "mean" and not _reduction.is_float(table.dtype):
            raise TypeError(f"mode 'mean' takes float tables, not dtype {table.dtype} (use 'sum' and divide)")
        idx = _index(ids, "ids", (1, 2))
        offs = None if offsets is None else _index(offsets, "offsets")
        weights = None if per_sample_weights is None else _operand(per_sample_weights, "per_sample_weights")
        dev = _device(name, device, table, idx, offs, weights, out)
        rows, dim = table.shape
        if idx.ndim == 2:
            if offs is not None:
                raise ValueError("offsets must be None with 2-D ids (each row of ids is a bag)")
            bags, fixed = idx.shape[0], idx.shape[1]
        else:
            if offs is None:
                raise ValueError("1-D ids need offsets (where each bag starts)")
            if not isinstance(include_last_offset, (bool, np.bool_)):
                raise TypeError(f"include_last_offset must be True or False, not {include_last_offset!r}")
            bags, fixed = offs.shape[0] - bool(include_last_offset), 0
            if bags < 0:
                raise ValueError("offsets must hold at least one bound with include_last_offset=True")
        pad = None
        if padding_idx is not None:
            if not isinstance(padding_idx, (int, np.integer)) or isinstance(padding_idx, bool) or \
                    not -rows <= padding_idx < rows:
                raise ValueError(f"padding_idx must be an integer in [-{rows}, {rows}), not {padding_idx!r}")
            pad = int(padding_idx) % rows
        if weights is not None:
            if mode != "sum":
                raise ValueError(f"per_sample_weights are taken with mode 'sum' only, not {mode!r}")
            if weights.dtype != table.dtype:
                raise TypeError(f"per_sample_weights has dtype {weights.dtype}; it must be the table's ({table.dtype})")
            if tuple(weights.shape) != tuple(idx.shape):
                raise ValueError(f"per_sample_weights has shape {tuple(weights.shape)}; it must be ids' shape "
                                 f"{tuple(idx.shape)}")
        positions = int(np.prod(idx.shape))
        if positions and rows == 0:
            raise IndexError("ids index a table of 0 rows")
        if isinstance(idx, np.ndarray):
            _check_ids(idx, rows, "ids", "the table")
        if isinstance(offs, np.ndarray):
            _check_offsets(offs, positions, "offsets", "ids", first_zero=True)
        shape = (bags, dim)
        as_tensor = _is_tensor_call(dev, table, idx, offs, weights, out)
        _checked_out(name, out, shape, table.dtype, dev, as_tensor)
        if order is not None:
            _reduction.check(reduction, table.dtype, True, order, name)
        ordered = ordered_mode(table.dtype, reduction, order)
        if ordered is not None:
            longest = fixed if offs is None else positions if isinstance(offs, Tensor) else \
                int(np.diff(np.concatenate([offs[:bags + 1], [positions]])).max(initial=0))
            if not ordered_runs(dev, longest):
                raise DeviceError(f"order {order!r} on a CPU device takes bags of at most {PIECE // 2} ids; a bag "
                                  f"here may hold {longest} (use order 'row-major', or a GPU)")
        # CPU devices run pieces of positions, which never skip ids: padding entries are dropped first
        open_end = offs is not None and not include_last_offset    # the last bag ends at len(ids)
        # the call's template signature: the operands as given (packed views are copies: then never traced)
        sig = None if args is None or weights is not None or not isinstance(offs, (Tensor, type(None))) else \
            calls.signature("embedding_bag", table, idx, offs, args, out)
        if pad is not None and dev.info.type == "CPU" and positions > PIECE and ordered is None:
            idx, offs, weights, fixed = _unpadded(dev, idx, offs, weights, bags, include_last_offset, pad)
            pad, open_end, positions, sig = None, False, idx.shape[0], None
        if isinstance(offs, np.ndarray):
            offs = _narrow(offs)
        idx_flat = _narrow(idx.reshape(-1)) if isinstance(idx, np.ndarray) else idx.reshape(-1)
        w_flat = None if weights is None else weights.reshape(-1)
        split = splits(table.dtype, reduction, dev, ordered)
        packed = [p for p in (offs, None if split else idx_flat, None if split else w_flat) if p is not None]
        aux, at = _aux(dev, packed) if packed else (idx_flat, [])
        words = iter(at)
        offsets_at = None if offs is None else (next(words), offs.dtype.itemsize // 4)
        ids_at = 0 if split else next(words)
        w_at = None if w_flat is None else 0 if split else next(words)
        plan = SegmentPlan(table.dtype, reduction, segments=bags, cols=dim, limit=positions, offsets=offsets_at,
                           fixed=fixed, ids=(ids_at, idx_flat.dtype.itemsize // 4), rows=rows, weights=w_at,
                           pad=pad, open_end=open_end, order=ordered)
        extra = (idx_flat, w_flat if w_flat is not None else idx_flat) if split else ()
        check, results = _check_tensor_ids(name, dev, idx, rows) if isinstance(idx, Tensor) and positions else \
            (None, None)
        if check is None and positions and isinstance(idx, Tensor):
            sig = None          # (ids checked on the host: a template would skip that)
        result = _run(name, dev, plan, aux, table, shape, table.dtype, out, as_tensor, extra=extra, sig=sig,
                      slots=(table, idx, offs), check=check)
        if results is not None and result is not out:
            results.append(result.buffer)         # never handed out as valid if the check fails
        return result
    except (TypeError, ValueError, IndexError, DeviceError, OverflowError) as e:
        raise named(e, name) from None


_ID_CHECKS: dict = {}     # (function, rows) -> its IndexCheck (which keeps its launches per index count)


def _check_tensor_ids(name: str, dev: Runtime, ids: Tensor, rows: int) -> tuple[IndexCheck | None, Any]:
    """Queues the device's check of a Tensor's ids against ``rows`` (index_check.py: an IndexError at the device's
    next synchronize or read for an id outside [-rows, rows)); returns (the check, or None where it was made
    otherwise; where to list the result's buffer). Inside a recording (whose replays the report would not reach)
    the ids are only clamped; where the device cannot check them they are read back and checked now."""
    if dev.active_recording() is not None:
        return None, None
    check = _ID_CHECKS.get((name, rows))
    if check is None:
        check = _ID_CHECKS[(name, rows)] = IndexCheck(name, np.int64(rows))
    results = check.on_device(dev, ids)
    if results is None:
        _check_ids(ids.numpy().astype(np.int64), rows, "ids", "the table", low=-rows)
        return None, None
    return check, results


def _bag_args(mode: Any, padding_idx: Any, include_last_offset: Any, order: Any) -> tuple | None:
    """embedding_bag's arguments other than its operands as a call template's key (exact ints and strs), or None
    where one is of another type (the call then takes the planned path, which checks it)."""
    if include_last_offset.__class__ is not bool or padding_idx is not None and padding_idx.__class__ is not int \
            or order is not None and order.__class__ is not str:
        return None
    return (mode, "no pad" if padding_idx is None else padding_idx, "last" if include_last_offset else "open",
            "none" if order is None else order)


def _unpadded(dev: Runtime, idx: Any, offs: Any, weights: Any, bags: int, include_last_offset: bool, pad: int):
    """The bags without their ``pad`` entries (host work; Tensor operands are read back), as 1-D ids, CSR-style
    offsets of bags + 1 bounds (then include_last_offset's form is no longer needed: the caller passes the end
    too), weights; and fixed 0."""
    ids = idx.numpy() if isinstance(idx, Tensor) else idx
    if ids.ndim == 2:
        bounds = np.arange(bags + 1, dtype=np.int64) * ids.shape[1]
    else:
        o = offs.numpy() if isinstance(offs, Tensor) else offs
        bounds = np.concatenate([o[:bags], [ids.size]]) if not include_last_offset else o[:bags + 1]
        bounds = np.minimum(np.maximum.accumulate(np.clip(bounds, 0, ids.size)), ids.size)
    flat = ids.reshape(-1)
    keep = flat != pad
    kept = np.concatenate([[0], np.cumsum(keep)]).astype(np.int64)
    w = None if weights is None else (weights.numpy() if isinstance(weights, Tensor) else weights).reshape(-1)[keep]
    return flat[keep], kept[bounds], w, 0
