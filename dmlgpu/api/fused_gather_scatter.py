"""Layer 2: ``gather_scatter``, ``scatter_nd(base, dst[:, None], take(x, src, axis=0))`` in one pass (message
passing over edges), on the fused kernel of dmlgpu/api/fused.py (its operand rules and plan), edges grouped by
destination once (fused_args.EdgeGroups); orders "tree" and "fixed-point" of float add, mul and mean take the
unfused calls, as the contract says."""
from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import _device, named
from .constructors import tensor
from .device import Runtime
from ..errors import DeviceError
from .fused import _is_tensor_call, _run
from .fused_args import EdgeGroups, _aux, _check_ids, _checked_out, _index, _narrow, _operand
from ..plans import reduction_args as _reduction
from ..plans.segment import SegmentPlan, ordered_mode, ordered_runs, splits
from . import signatures
from .signatures import DeviceLike
from .tensor import Tensor

__all__ = ["gather_scatter"]
# ---- gather_scatter ----
_GS_REDUCTIONS = ("add", "mean", "min", "max", "mul", "sum", "prod", "amax", "amin")


@signatures.gather_scatter
def gather_scatter(x: Any, src: Any, dst: Any = None, reduction: str = "add", *, out: Any = None,
                   dim_size: int | None = None, include_self: bool = True, order: str | None = None,
                   weights: Any = None, device: DeviceLike = None) -> Any:
    """Message passing without the intermediate: ``scatter_nd(base, dst[:, None], take(x, src, axis=0),
    reduction=reduction, include_self=include_self, order=order)`` with the same bits, where ``base`` is ``out``
    (then updated in place) or zeros of ``(dim_size,) + x.shape[1:]`` (PyG's ``scatter(x[src], dst)``; PyTorch's
    ``index_select`` then ``index_add_``).

    ``weights`` (one per edge) multiply each gathered row first, rounded as NumPy rounds
    ``weights[:, None] * x[src]`` (GCN's normalised aggregation). The edges are grouped by ``dst`` on the host
    (a stable sort: each target's edges in edge order; Tensor ``src`` and ``dst`` are read back for it, a
    synchronization), or once for many calls by a dmlgpu.EdgeGroups passed as ``src`` (``dst`` None); then one
    kernel reads each edge's row of ``x`` once and writes each target row once, the rows combined in edge order,
    from the base value (include_self) or from the first edge's row (shaders/segment.comp: dmlgpu.segment_reduce's
    and dmlgpu.embedding_bag's kernel). order "row-major" (the default) is that order; other orders give the same
    bits for min, max and integer reductions; for float add, mul and mean the same kernel combines each target's
    rows in "tree"'s pairwise tree, or sums them as "fixed-point" does (reading them twice: their exponents, then
    their sum), with the bits of the scatter_nd above; only on CPU devices, where a target has more than 28,672
    edges, do those orders run as that take and scatter_nd (with their intermediate). DirectML has no such operator (no layer-1
    descriptor).

    Parameters
    ----------
    x : array_like or Tensor
        Node rows, at least one dimension; the dtypes of dmlgpu.scatter_nd's reductions.
    src, dst : array_like or Tensor
        1-D integers of one length (the edges): rows of ``x`` and of the output, in ``[-n, n)`` (negative: from
        the end). Or ``src`` an EdgeGroups and ``dst`` None (or the reduction: ``gather_scatter(x, groups, "max")``).
    reduction : str
        "add", "mean", "min", "max" or "mul" (or PyTorch's "sum", "prod", "amin", "amax").
    out : Tensor or np.ndarray, optional
        The base, updated in place and returned (x's dtype).
    dim_size : int, optional
        The output's rows where ``out`` is not given (default: ``max(dst) + 1``; an EdgeGroups': its own).
    include_self : bool
        The base value takes part (PyTorch's scatter_reduce ``include_self``); False: a row with edges starts from
        its first edge's row, a row without keeps its base value.
    order : str, optional
        As dmlgpu.scatter_nd's (None: "row-major").
    weights : array_like or Tensor, optional
        One per edge, x's dtype.
    device : Device or int, optional
        Where it runs (default: a Tensor operand's device, else the default device).

    Returns
    -------
    np.ndarray or Tensor
        Shape ``(dim_size,) + x.shape[1:]`` (or out's), x's dtype; ``out`` when given; a Tensor when an operand is
        one (an EdgeGroups too) or the call is recorded.

    Raises
    ------
    IndexError
        A src or dst index out of range.
    ValueError
        src and dst of other shapes, weights of the wrong shape, neither ``out`` nor a usable ``dim_size``, an
        unknown reduction or order.
    TypeError
        A dtype the reduction does not take, weights of another dtype, indices that are not integers.
    dmlgpu.DeviceError
        Operands of another device, or larger than the device can hold.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> x = np.array([[1, 10], [2, 20], [3, 30]], np.float32)
    >>> dmlgpu.gather_scatter(x, [0, 1, 2, 2], [1, 1, 0, 1], dim_size=3)
    array([[ 3., 30.],
           [ 6., 60.],
           [ 0.,  0.]], dtype=float32)
    >>> dmlgpu.gather_scatter(x, [0, 2], [1, 1], "max", dim_size=2, include_self=False)
    array([[ 0.,  0.],
           [ 3., 30.]], dtype=float32)
    """
    name = "gather_scatter"
    if isinstance(src, EdgeGroups) and isinstance(dst, str):    # gather_scatter(x, groups, "max"): the groups hold
        dst, reduction = None, dst                                # the targets, so the third argument is the reduction
    try:
        if not isinstance(reduction, str) or reduction not in _GS_REDUCTIONS:
            raise ValueError(f"reduction must be one of {', '.join(map(repr, _GS_REDUCTIONS))}, not {reduction!r}")
        reduction = _reduction.PYTORCH_NAMES.get(reduction, reduction)
        order = "row-major" if order is None else _reduction.check_order(order)
        include_self = _reduction.check_include_self(include_self)
        x = _operand(x, "x")
        if x.ndim == 0:
            raise ValueError("x must have at least one dimension")
        w = None if weights is None else _operand(weights, "weights")
        if out is not None and not isinstance(out, (Tensor, np.ndarray)):
            raise TypeError(f"out must be a dmlgpu.Tensor or a NumPy array, not {type(out).__name__}")
        if isinstance(src, EdgeGroups):
            if dst is not None:
                raise ValueError("dst must be None where src is an EdgeGroups (it holds the targets)")
            groups = src
            dev = _device(name, device, x, w, out)
            if dev is not groups._dev:
                raise DeviceError("the EdgeGroups live on another device than the call's")
            if out is not None and out.shape[0] != groups.dim_size:
                raise ValueError(f"out has {out.shape[0]} rows; the EdgeGroups target {groups.dim_size}")
            if dim_size is not None and dim_size != groups.dim_size:
                raise ValueError(f"dim_size {dim_size} differs from the EdgeGroups' ({groups.dim_size})")
        else:
            if dst is None:
                raise ValueError("dst is needed (or src an EdgeGroups)")
            s, d = _index(src, "src"), _index(dst, "dst")
            dev = _device(name, device, x, s, d, w, out)
            groups = EdgeGroups._of(s, d, dim_size, None if out is None else out.shape[0], dev)
        _reduction.check(reduction, x.dtype, include_self, order, name)
        if w is not None:
            if w.dtype != x.dtype:
                raise TypeError(f"weights has dtype {w.dtype}; it must be x's ({x.dtype})")
            if tuple(w.shape) != (groups.edges,):
                raise ValueError(f"weights has shape {tuple(w.shape)}; it must be ({groups.edges},): one per edge")
        n, dim = x.shape[0], groups.dim_size
        shape = (dim,) + tuple(x.shape[1:])
        as_tensor = _is_tensor_call(dev, x, src, dst, w, out) or src is groups
        _checked_out(name, out, shape, x.dtype, dev, as_tensor)
        ordered = ordered_mode(x.dtype, reduction, order)
        if ordered is not None and not ordered_runs(dev, groups.longest):
            _check_ids(groups.src, n, "src", "x", low=-n)
            return _unfused(x, groups.src, groups.dst, w, reduction, include_self, order, out, shape, dev, as_tensor)
        if src is groups:
            aux_t, ids_at, ids_w = groups._device_aux(n)
            parts: list = [aux_t]
        else:
            sources = groups._sources(n)
            parts, ids_at, ids_w = [groups.bounds, sources], -1, sources.dtype.itemsize // 4
        w_sorted = None if w is None else w[groups.perm] if isinstance(w, np.ndarray) else \
            _taken(w, groups._device_perm() if src is groups else groups.perm, dev)
        split = w is not None and splits(x.dtype, reduction, dev, ordered)     # the weights bound where they are
        if w_sorted is not None and not split:
            parts.append(w_sorted)
        aux, at = _aux(dev, parts)
        if ids_at < 0:
            ids_at = at[1]
        extra = (aux, w_sorted) if split else ()      # (SPLIT: the ids read from the same buffer, IDS)
        plan = SegmentPlan(x.dtype, reduction, segments=dim, cols=int(np.prod(x.shape[1:])), limit=groups.edges,
                           offsets=(0, groups.bounds.dtype.itemsize // 4), ids=(ids_at, ids_w), rows=n,
                           weights=None if w is None else 0 if split else at[-1],
                           base=("out" if out is not None else "zeros") if include_self else None,
                           keep=out is not None and not include_self, order=ordered)
        if isinstance(out, np.ndarray):
            np.copyto(out, _run(name, dev, plan, aux, x, shape, x.dtype, None, False, base=out, extra=extra))
            return out
        return _run(name, dev, plan, aux, x, shape, x.dtype, out, as_tensor,
                    base=out if isinstance(out, Tensor) else None, extra=extra)
    except (TypeError, ValueError, IndexError, DeviceError, OverflowError) as e:
        raise named(e, name) from None


def _taken(w: Tensor, perm: Any, dev: Runtime) -> Tensor:
    """The weights in the grouped edges' order, gathered on the device."""
    from .functions import gather            # (a sibling layer-2 function)
    return gather(w, perm if isinstance(perm, Tensor) else tensor(_narrow(perm), device=dev.user))


def _unfused(x, src, dst, w, reduction, include_self, order, out, shape, dev, as_tensor):
    """order "tree" / "fixed-point" of float add, mul, mean where the one-pass kernel cannot run them (a CPU
    device's long segments: segment.ordered_runs): take, (weights), scatter_nd, as the contract says."""
    from .functions import gather, scatter_nd
    rows = gather(x, src)
    if w is not None:
        wh = w.numpy() if isinstance(w, Tensor) else w
        host_rows = rows.numpy() if isinstance(rows, Tensor) else rows
        with np.errstate(all="ignore"):
            prod = (wh.reshape((-1,) + (1,) * (x.ndim - 1)) * host_rows).astype(x.dtype)
        rows = tensor(prod, device=dev.user) if isinstance(rows, Tensor) else prod
    dst = np.asarray(dst).reshape(-1, 1)
    if as_tensor and not isinstance(rows, Tensor):
        rows = tensor(rows, device=dev.user)
    if out is not None:
        return scatter_nd(out, dst, rows, reduction=reduction, include_self=include_self, order=order, out=out)
    base = tensor(np.zeros(shape, x.dtype), device=dev.user) if as_tensor else np.zeros(shape, x.dtype)
    return scatter_nd(base, dst, rows, reduction=reduction, include_self=include_self, order=order)
