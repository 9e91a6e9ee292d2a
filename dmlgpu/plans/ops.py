"""The planning of every operator, written once: from tensor layouts to the Plan that runs it.

Layer 1 (layer1/descriptors.py: DirectML descriptors) and layer 2 (functions.py: NumPy-style calls) each check their
own rules, then both ask this module for the plan. Each function takes the *meaningful* layouts of the
operands (``index_map.Layout``: shape and strides in elements, right-aligned to the operator's dimensions),
the operator's own arguments (axis, batch_dims, reduction), the element dtype (its item size is the element
size; a reduction also needs its kind), the indices' dtype and, for scatters, the copy of the input into the
output (``input_copy()``). It returns a ``plan.Plan`` whose ``dispatches()`` run it on any buffers of those
layouts. Plans are values of their arguments: equal arguments give the one plan (``plan.make_plan``), so a
repeated call skips folding, vectorizing and packing parameter words (scatter reductions: a new ReducePlan,
which caches its own sort per geometry).

``PLANS`` is the table of operators by name: a new operator is one function here (or beside its layer-2
function) and one row (docs/adding-an-operator.md).

Examples
--------
>>> import numpy as np
>>> from dmlgpu.plans import ops
>>> from dmlgpu.plans.index_map import Layout
>>> data, idx = Layout.packed((3, 2)), Layout.packed((2,))
>>> p = ops.gather(data, idx, Layout.packed((2, 2)), 0, np.float32, np.int32)
>>> type(p).__name__, p.output_from_input
('GatherPlan', False)
>>> p is ops.gather(data, idx, Layout.packed((2, 2)), 0, np.float32, np.int32)
True
"""
from __future__ import annotations

from typing import Callable, TypeVar

import numpy as np
from numpy.typing import DTypeLike

from .index_map import IndexMap, Layout, copy_map, elements_map, nd_map, take_map
from .scatter_lines import scatter_elements_plan
from .plan import GatherPlan, Plan, ScatterPlan, make_plan
from .reduction import ReducePlan


def _elem(dtype: DTypeLike) -> int:
    return np.dtype(dtype).itemsize


def input_copy(src: Layout, dst: Layout, dtype: DTypeLike) -> IndexMap:
    """A scatter's copy of its input (``src``) into its output (``dst``), through both layouts' strides."""
    return copy_map(src, dst, _elem(dtype))


def gather(data: Layout, indices: Layout, out: Layout, axis: int, dtype: DTypeLike, index_dtype: DTypeLike,
           index_mode: str = "clamp", fill: bytes = b"") -> Plan:
    """GATHER (numpy.take): ``out`` of shape index_map.take_shape(data, indices, axis); ``index_mode``: how
    indices outside the axis resolve (index_map.INDEX_MODE_FLAGS: NumPy's "wrap" and "clip", "fill" too, which
    reads ``fill``, the bytes of one element of ``dtype``, there)."""
    return make_plan(GatherPlan, take_map(data, indices, out, axis, _elem(dtype)), np.dtype(index_dtype), index_mode,
                     fill)


def gather_elements(data: Layout, indices: Layout, out: Layout, axis: int, dtype: DTypeLike,
                    index_dtype: DTypeLike, index_mode: str = "clamp", fill: bytes = b"") -> Plan:
    """GATHER_ELEMENTS (numpy.take_along_axis): ``out`` of the indices' shape (``index_mode``, ``fill``: as
    gather's)."""
    return make_plan(GatherPlan, elements_map(data, indices, out, axis, _elem(dtype)), np.dtype(index_dtype),
                     index_mode, fill)


def gather_nd(data: Layout, indices: Layout, out: Layout, batch_dims: int, dtype: DTypeLike,
              index_dtype: DTypeLike, index_mode: str = "clamp", fill: bytes = b"") -> Plan:
    """GATHER_ND / GATHER_ND1: ``out`` of shape index_map.nd_shape(data, indices, batch_dims) (``index_mode``,
    ``fill``: as gather's)."""
    return make_plan(GatherPlan, nd_map(data, indices, out, batch_dims, _elem(dtype)), np.dtype(index_dtype),
                     index_mode, fill)


def scatter_nd(out: Layout, indices: Layout, updates: Layout, dtype: DTypeLike, index_dtype: DTypeLike,
               reduction: str, copy: IndexMap, unique: bool = False, include_self: bool = True,
               order: str = "row-major", index_mode: str = "clamp") -> Plan:
    """SCATTER_ND into ``out`` (the input's and output's meaningful layout) with ``reduction`` ("none": the
    last update wins; else reduction.ReducePlan, with ``include_self`` and ``order``), after ``copy``
    (input_copy(); skipped in place). ``unique``: the updates promise distinct targets (reduction "none": one
    pass, no claims, plan.ScatterPlan's). ``index_mode``: "clamp", or "drop" (index_map.INDEX_MODE_FLAGS; with a
    reduction: reduction.Dropping)."""
    if reduction != "none":
        return ReducePlan.nd(reduction, np.dtype(dtype), np.dtype(index_dtype), out, indices, updates, copy,
                             include_self=include_self, order=order, index_mode=index_mode)
    return make_plan(ScatterPlan, nd_map(out, indices, updates, 0, _elem(dtype)), np.dtype(index_dtype), copy,
                     unique, index_mode)


def scatter_elements(out: Layout, indices: Layout, updates: Layout, axis: int, dtype: DTypeLike,
                     index_dtype: DTypeLike, reduction: str, copy: IndexMap, unique: bool = False,
                     include_self: bool = True, order: str = "row-major", index_mode: str = "clamp") -> Plan:
    """SCATTER_ELEMENTS along ``axis`` into ``out``, as scatter_nd (lines_plan.scatter_elements_plan picks the
    one-pass lines plan where it fits)."""
    if reduction != "none":
        return ReducePlan.elements(reduction, np.dtype(dtype), np.dtype(index_dtype), out, indices, updates, axis,
                                   copy, include_self=include_self, order=order, index_mode=index_mode)
    return make_plan(scatter_elements_plan, out, indices, updates, axis, _elem(dtype), np.dtype(index_dtype), copy,
                     unique, index_mode)


# The operators by name (layer 2's names; layer 1's DirectML operators map onto them: GATHER_ND1 is gather_nd)
PLANS: dict[str, Callable[..., Plan]] = {
    "gather": gather,
    "gather_elements": gather_elements,
    "gather_nd": gather_nd,
    "scatter_nd": scatter_nd,
    "scatter_elements": scatter_elements,
}
_P = TypeVar("_P", bound=Callable[..., Plan])


def register(name: str) -> Callable[[_P], _P]:
    """A decorator that makes a plan function the row ``name`` of PLANS (a new operator's plan, written beside
    its layer-2 function: docs/adding-an-operator.md); ValueError if the name has a row already.

    Examples
    --------
    >>> from dmlgpu.plans import ops
    >>> @ops.register("gather_again")
    ... def gather_again(*args):
    ...     return ops.gather(*args)
    >>> ops.PLANS.pop("gather_again") is gather_again
    True
    """
    def add(plan: _P) -> _P:
        if name in PLANS:
            raise ValueError(f"ops.register: {name!r} has a row of ops.PLANS already")
        PLANS[name] = plan
        return plan
    return add
