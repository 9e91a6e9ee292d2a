"""The named workloads. Each builds, for a target number of bytes moved, a Case: the operands (NumPy
arrays), the dmlgpu call, and the equivalent NumPy and PyTorch calls.

Bytes moved (``Case.moved``) count what an ideal kernel must read and write, indices included:

* gathers: every output element is read once from data and written once, every index is read once:
  2 * output bytes + indices bytes;
* scatters (which return a new tensor: a copy of data, updated): data is read and the output written
  once, updates and indices are read once: 2 * data bytes + updates bytes + indices bytes.

Indices are int64, or int32 in the workloads named "...-i32" (PyTorch calls that take only int64 indices,
such as ``torch.gather``, get an int64 copy there). Scatter indices are unique, so the result does not depend
on the order of duplicate writes and can be checked against the peer. Data is random bytes (tiled from a
prime-length block: cheap at 1 GiB, and rows differ), so float results are compared bit for bit.

The PyTorch peer times several calls that do the same job (``Case.torch``: index_select, indexing,
F.embedding, ...) and reports the fastest; scatters (``Case.scatter``) are also timed with
``torch.use_deterministic_algorithms(True)``, since dmlgpu's scatters are deterministic (calls that PyTorch
refuses in that mode are left out). Single-element gathers have a random-access ceiling
(``Case.ceiling_bytes``): every element costs a 32-byte sector read, its index and its output write, so
``moved / ceiling_bytes`` of the copy shader's bandwidth is the most a kernel can reach.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import dmlgpu

INDEX_DTYPE = np.dtype(np.int64)
SECTOR = 32           # bytes a random read fetches from memory (a GPU's L2 sector)
_BLOCK = np.random.default_rng(20240611).integers(0, 256, 1_000_003, dtype=np.uint8)


@dataclass
class Case:
    """One workload at one size. ``operands`` go to dmlgpu (as Tensors) and to the peer; ``aux`` only to the
    peer (index forms its API wants). The calls take a dict of the backend's tensors and return the result;
    ``torch`` holds PyTorch's ways of doing the same job, by name. ``scatter``: also timed with PyTorch's
    deterministic algorithms. ``ceiling_bytes``: single-element gathers, the bytes of the random-access
    ceiling (see the module docstring), else 0."""

    shape: str
    operands: dict
    moved: int                      # bytes that must move (see the module docstring)
    out_nbytes: int
    dmlgpu: Callable
    numpy: Callable
    torch: dict
    aux: dict = field(default_factory=dict)
    scatter: bool = False
    ceiling_bytes: int = 0

    def buffer_sizes(self) -> list[int]:
        """Bytes of every device buffer dmlgpu needs (operands and output)."""
        return [a.nbytes for a in self.operands.values()] + [self.out_nbytes]


@dataclass(frozen=True)
class Workload:
    """``build(target_bytes_moved, rng)`` returns a Case, or None when one unit of the workload moves more
    than twice the target (the size is too small for it)."""

    name: str
    group: str          # plot panel
    operator: str       # the DirectML operator it exercises
    description: str
    build: Callable[[int, np.random.Generator], "Case | None"]


def pattern(shape, dtype, offset: int = 0) -> np.ndarray:
    """A new C-contiguous array of ``shape`` holding random-looking bytes (bit patterns, NaNs included)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    return np.resize(np.roll(_BLOCK, -offset), nbytes).view(dtype).reshape(shape)


def _count(target: int, unit_bytes: int) -> int | None:
    """Units of ``unit_bytes`` moved that make up ``target`` bytes (at least 1; None if 1 is over 2x)."""
    n = target // unit_bytes
    if n:
        return n
    return None if unit_bytes > 2 * target else 1


def _unique(count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` <= ``dim`` distinct indices in [0, dim), scattered (an affine permutation), as int64."""
    a = 2654435761 % dim or 1
    while math.gcd(a, dim) != 1:
        a += 1
    return (a * np.arange(count, dtype=np.int64) + int(rng.integers(dim))) % dim


def _indices(values: np.ndarray, index_dtype) -> tuple[np.ndarray, dict]:
    """(the indices in ``index_dtype``, aux: an int64 copy "indices64" when that is narrower)."""
    values = values.astype(index_dtype)
    return values, ({"indices64": values.astype(np.int64)} if values.dtype != np.int64 else {})


def _i64(t: dict, name: str = "indices"):
    """The int64 form of an index operand (for PyTorch calls that take no other)."""
    return t.get(name + "64", t[name])


def _short(dtype) -> str:
    return {"float32": "f32", "float16": "f16", "int8": "i8", "int64": "i64"}.get(np.dtype(dtype).name,
                                                                                 np.dtype(dtype).name)


def _describe(**arrays) -> str:
    return ", ".join(f"{k} [{','.join(map(str, a.shape))}] {_short(a.dtype)}" for k, a in arrays.items())


# ---- builders ----

def _embedding(dtype, width: int, index_dtype=INDEX_DTYPE):
    """GATHER axis 0 of a [V, width] table by V random row numbers (V from the size)."""
    dtype, index_dtype = np.dtype(dtype), np.dtype(index_dtype)

    def build(target, rng):
        row = width * dtype.itemsize
        n = _count(target, 2 * row + index_dtype.itemsize)
        if n is None:
            return None
        data = pattern((n, width), dtype)
        idx, aux = _indices(rng.integers(0, n, n, dtype=np.int64), index_dtype)
        calls = {"index_select": lambda t: t["data"].index_select(0, t["indices"]),
                 "x[idx]": lambda t: t["data"][t["indices"]]}
        if dtype.kind == "f":
            calls["F.embedding"] = lambda t: _torch_f().embedding(t["indices"], t["data"])
        if width == 1:
            calls["take"] = lambda t: t["data"].take(_i64(t)).view(-1, 1)
        return Case(_describe(data=data, indices=idx), {"data": data, "indices": idx},
                    2 * n * row + idx.nbytes, n * row,
                    dmlgpu=lambda t: dmlgpu.gather(t["data"], t["indices"], axis=0),
                    numpy=lambda a: np.take(a["data"], a["indices"], axis=0),
                    torch=calls, aux=aux,
                    ceiling_bytes=n * (SECTOR + index_dtype.itemsize + row) if width == 1 else 0)
    return build


def _torch_f():
    import torch.nn.functional as F
    return F


def _gather_middle(target, rng):
    """GATHER axis 1 of [8, V, 32] float32 by V random indices."""
    outer, inner = 8, 32
    n = _count(target, 2 * outer * inner * 4 + INDEX_DTYPE.itemsize)
    if n is None:
        return None
    data, idx = pattern((outer, n, inner), np.float32), rng.integers(0, n, n, dtype=INDEX_DTYPE)
    return Case(_describe(data=data, indices=idx), {"data": data, "indices": idx},
                2 * data.nbytes + idx.nbytes, data.nbytes,
                dmlgpu=lambda t: dmlgpu.gather(t["data"], t["indices"], axis=1),
                numpy=lambda a: np.take(a["data"], a["indices"], axis=1),
                torch={"index_select": lambda t: t["data"].index_select(1, t["indices"]),
                       "x[:, idx]": lambda t: t["data"][:, t["indices"]]})


def _gather_elements(axis: int, index_dtype=INDEX_DTYPE):
    """GATHER_ELEMENTS of [R, 256] float32 along ``axis`` by random indices of the same shape."""
    cols, index_dtype = 256, np.dtype(index_dtype)

    def build(target, rng):
        rows = _count(target, cols * (2 * 4 + index_dtype.itemsize))
        if rows is None:
            return None
        data = pattern((rows, cols), np.float32)
        idx, aux = _indices(rng.integers(0, data.shape[axis], (rows, cols), dtype=np.int64), index_dtype)
        return Case(_describe(data=data, indices=idx), {"data": data, "indices": idx},
                    2 * data.nbytes + idx.nbytes, data.nbytes,
                    dmlgpu=lambda t: dmlgpu.gather_elements(t["data"], t["indices"], axis=axis),
                    numpy=lambda a: np.take_along_axis(a["data"], a["indices"], axis=axis),
                    torch={"gather": lambda t: t["data"].gather(axis, _i64(t)),
                           "take_along_dim": lambda t: t["data"].take_along_dim(_i64(t), axis)},
                    aux=aux, ceiling_bytes=rows * cols * (SECTOR + index_dtype.itemsize + 4) if axis == 0 else 0)
    return build


def _gather_nd_pairs(target, rng):
    """GATHER_ND of [X, Y, 64] float32 by N 2-tuples: N rows of 256 bytes (X = min(64, N), Y = N / X)."""
    width = 64
    n = _count(target, 2 * width * 4 + 2 * INDEX_DTYPE.itemsize)
    if n is None:
        return None
    first = min(64, n)
    second = -(-n // first)
    data = pattern((first, second, width), np.float32)
    idx = np.stack([rng.integers(0, first, n, dtype=INDEX_DTYPE), rng.integers(0, second, n, dtype=INDEX_DTYPE)],
                   axis=1)
    return Case(_describe(data=data, indices=idx), {"data": data, "indices": idx},
                2 * n * width * 4 + idx.nbytes, n * width * 4,
                dmlgpu=lambda t: dmlgpu.gather_nd(t["data"], t["indices"]),
                numpy=lambda a: a["data"][a["i0"], a["i1"]],
                torch={"x[i0, i1]": lambda t: t["data"][t["i0"], t["i1"]],
                       "index_select(i0 * Y + i1)": lambda t: t["data"].view(-1, width).index_select(
                           0, t["i0"] * second + t["i1"])},
                aux={"i0": idx[:, 0].copy(), "i1": idx[:, 1].copy()})


def _gather_nd_batch(target, rng):
    """GATHER_ND1 (batch_dims=1) of [8, X, 64] float32 by [8, X, 1] indices: X rows per batch."""
    batch, width = 8, 64
    n = _count(target, batch * (2 * width * 4 + INDEX_DTYPE.itemsize))
    if n is None:
        return None
    data = pattern((batch, n, width), np.float32)
    idx = rng.integers(0, n, (batch, n, 1), dtype=INDEX_DTYPE)
    return Case(_describe(data=data, indices=idx), {"data": data, "indices": idx},
                2 * data.nbytes + idx.nbytes, data.nbytes,
                dmlgpu=lambda t: dmlgpu.gather_nd(t["data"], t["indices"], batch_dims=1),
                numpy=lambda a: a["data"][a["batch"], a["rows"]],
                torch={"x[b, rows]": lambda t: t["data"][t["batch"], t["rows"]],
                       "gather(expanded rows)": lambda t: t["data"].gather(
                           1, t["rows"][..., None].expand(-1, -1, width))},
                aux={"batch": np.arange(batch, dtype=INDEX_DTYPE)[:, None], "rows": idx[..., 0].copy()})


def _scatter_nd_rows(target, rng, index_dtype=INDEX_DTYPE, unique: bool = False):
    """SCATTER_ND of V/2 rows (256 bytes: 64 float32) into a [V, 64] table at distinct random rows."""
    width, index_dtype = 64, np.dtype(index_dtype)
    row = width * 4
    pairs = _count(target, 2 * (2 * row) + row + index_dtype.itemsize)
    if pairs is None:
        return None
    rows = 2 * pairs
    data, upd = pattern((rows, width), np.float32), pattern((pairs, width), np.float32, offset=7)
    idx, aux = _indices(_unique(pairs, rows, rng)[:, None], index_dtype)
    aux = {"rows": idx[:, 0].copy(), "rows64": idx[:, 0].astype(np.int64)}
    calls = {"clone().index_put_": lambda t: t["data"].clone().index_put_((t["rows"],), t["updates"]),
             "clone().index_copy_": lambda t: t["data"].clone().index_copy_(0, _i64(t, "rows"), t["updates"]),
             "scatter(expanded rows)": lambda t: t["data"].scatter(
                 0, _i64(t, "rows")[:, None].expand(-1, width), t["updates"])}

    def numpy_call(a):
        out = a["data"].copy()
        out[a["rows"]] = a["updates"]
        return out

    return Case(_describe(data=data, indices=idx, updates=upd), {"data": data, "indices": idx, "updates": upd},
                2 * data.nbytes + upd.nbytes + idx.nbytes, data.nbytes,
                dmlgpu=lambda t: dmlgpu.scatter_nd(t["data"], t["indices"], t["updates"], unique_indices=unique),
                numpy=numpy_call, torch=calls, aux=aux, scatter=True)


def _scatter_elements(target, rng, index_dtype=INDEX_DTYPE, unique: bool = False):
    """SCATTER_ELEMENTS along axis 1 of [R, 256] float32: 64 updates per row at distinct random columns."""
    cols, per_row, index_dtype = 256, 64, np.dtype(index_dtype)
    rows = _count(target, 2 * cols * 4 + per_row * (4 + index_dtype.itemsize))
    if rows is None:
        return None
    data, upd = pattern((rows, cols), np.float32), pattern((rows, per_row), np.float32, offset=7)
    start = rng.integers(0, cols, (rows, 1), dtype=np.int64)
    step = 2 * rng.integers(0, cols // 2, (rows, 1), dtype=np.int64) + 1  # odd: distinct within a row
    idx, aux = _indices((start + step * np.arange(per_row, dtype=np.int64)) % cols, index_dtype)
    calls = {"scatter": lambda t: t["data"].scatter(1, _i64(t), t["updates"]),
             "clone().view(-1).index_copy_": lambda t: t["data"].clone().view(-1).index_copy_(
                 0, (_i64(t) + cols * t["row_ids"]).view(-1), t["updates"].view(-1)).view(rows, cols)}
    aux["row_ids"] = np.arange(rows, dtype=np.int64)[:, None]

    def numpy_call(a):
        out = a["data"].copy()
        np.put_along_axis(out, a["indices"], a["updates"], axis=1)
        return out

    return Case(_describe(data=data, indices=idx, updates=upd), {"data": data, "indices": idx, "updates": upd},
                2 * data.nbytes + upd.nbytes + idx.nbytes, data.nbytes,
                dmlgpu=lambda t: dmlgpu.scatter_elements(t["data"], t["indices"], t["updates"], axis=1,
                                                         unique_indices=unique),
                numpy=numpy_call, torch=calls, aux=aux, scatter=True)


# ---- the catalogue ----

EMBEDDING_WIDTHS = (1, 16, 128, 1024)
EMBEDDING_DTYPES = ("float32", "float16", "int8")


def _catalogue() -> list[Workload]:
    out = []
    for dt in EMBEDDING_DTYPES:
        for width in EMBEDDING_WIDTHS:
            out.append(Workload(f"embedding-{_short(dt)}-d{width}", f"embedding {dt}", "GATHER",
                                f"gather axis 0 of a [V, {width}] {dt} table by V random int64 rows",
                                _embedding(dt, width)))
        out.append(Workload(f"embedding-{_short(dt)}-d1-i32", f"embedding {dt}", "GATHER",
                            f"gather axis 0 of a [V, 1] {dt} table by V random int32 rows",
                            _embedding(dt, 1, np.int32)))
    out += [
        Workload("gather-middle", "gather middle axis", "GATHER", _gather_middle.__doc__.strip(), _gather_middle),
        Workload("gather_elements-last", "gather_elements", "GATHER_ELEMENTS",
                 "GATHER_ELEMENTS of [R, 256] float32 along the last axis by random indices", _gather_elements(1)),
        Workload("gather_elements-first", "gather_elements", "GATHER_ELEMENTS",
                 "GATHER_ELEMENTS of [R, 256] float32 along the first axis by random indices", _gather_elements(0)),
        Workload("gather_nd-pairs", "gather_nd", "GATHER_ND", _gather_nd_pairs.__doc__.strip(), _gather_nd_pairs),
        Workload("gather_nd-batch", "gather_nd", "GATHER_ND1", _gather_nd_batch.__doc__.strip(), _gather_nd_batch),
        Workload("scatter_nd-rows", "scatter", "SCATTER_ND", _scatter_nd_rows.__doc__.strip(), _scatter_nd_rows),
        Workload("scatter_elements", "scatter", "SCATTER_ELEMENTS", _scatter_elements.__doc__.strip(),
                 _scatter_elements),
        Workload("gather_elements-last-i32", "gather_elements", "GATHER_ELEMENTS",
                 "GATHER_ELEMENTS of [R, 256] float32 along the last axis by random int32 indices",
                 _gather_elements(1, np.int32)),
        Workload("gather_elements-first-i32", "gather_elements", "GATHER_ELEMENTS",
                 "GATHER_ELEMENTS of [R, 256] float32 along the first axis by random int32 indices",
                 _gather_elements(0, np.int32)),
        Workload("scatter_nd-rows-i32", "scatter", "SCATTER_ND", "scatter_nd-rows with int32 indices",
                 lambda target, rng: _scatter_nd_rows(target, rng, np.int32)),
        Workload("scatter_elements-i32", "scatter", "SCATTER_ELEMENTS", "scatter_elements with int32 indices",
                 lambda target, rng: _scatter_elements(target, rng, np.int32)),
        # the same distinct targets, promised (unique_indices=True: one write pass, no claims)
        Workload("scatter_nd-rows-unique", "scatter", "SCATTER_ND", "scatter_nd-rows with unique_indices=True",
                 lambda target, rng: _scatter_nd_rows(target, rng, unique=True)),
        Workload("scatter_elements-unique", "scatter", "SCATTER_ELEMENTS",
                 "scatter_elements with unique_indices=True",
                 lambda target, rng: _scatter_elements(target, rng, unique=True)),
    ]
    return out


WORKLOADS: list[Workload] = _catalogue()
QUICK_WORKLOADS = ("embedding-f32-d128", "embedding-f16-d1", "gather-middle", "gather_elements-last",
                   "gather_elements-first", "gather_nd-pairs", "gather_nd-batch", "scatter_nd-rows",
                   "scatter_elements")

DEFAULT_SIZES = tuple(4096 * 4**k for k in range(10))      # 4 KiB .. 1 GiB, bytes moved
QUICK_SIZES = (4096, 256 * 1024)


def select(patterns: list[str] | None, quick: bool = False, chose=None) -> list[Workload]:
    """Workloads that any of ``patterns`` names: a name (that one alone: "scatter_nd-rows" is not also
    "scatter_nd-rows-i32"), else a shell pattern ("scatter*") or a prefix that ends where a name has "-"
    ("embedding", "embedding-f16"); ``chose(pattern, names)`` is told what each pattern other than a name chose.
    None: all, or the quick subset. ValueError names a pattern that matches nothing."""
    if not patterns:
        return [w for w in WORKLOADS if not quick or w.name in QUICK_WORKLOADS]
    chosen = []
    for pat in patterns:
        hits = [w for w in WORKLOADS if w.name == pat] or \
            [w for w in WORKLOADS if fnmatch.fnmatchcase(w.name, pat) or w.name.startswith(pat + "-")]
        if not hits:
            raise ValueError(f"no workload matches {pat!r} (python -m dmlgpu bench --list shows them)")
        if chose is not None and hits[0].name != pat:
            chose(pat, [w.name for w in hits])
        chosen += [w for w in hits if w not in chosen]
    return [w for w in WORKLOADS if w in chosen]
