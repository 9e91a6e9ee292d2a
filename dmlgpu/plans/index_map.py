"""The host half of the index machinery (the GPU half is shaders/index_map.glsl).

Every operator is one *index map*: a row-major iteration over the shape of the **dense** tensor (gather:
the output; scatter: the updates), where each iteration reads or writes one element of the dense tensor
and one element of the **data** tensor (gather: the input; scatter: the output). The data element's
offset is the sum of directly mapped coordinates times their strides, plus, for each component k of an
index tuple, the index read from the indices tensor (wrapped if negative, clamped) times the stride of
the data dimension it indexes (or, in modes "fill" and "drop", no offset where an index is out of range:
INDEX_MODE_FLAGS).

This module builds those maps from tensor layouts (the same builders serve layer 1 and layer 2), folds
dimensions that are contiguous in every tensor, picks the widest access unit (1 to 16 bytes) that
moves contiguous rows whole, encodes the map as the kernel's parameter words, and checks and resolves
index values on the host (``mode="raise"`` and the NumPy references).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..errors import DeviceError
from ..kernels.table import UNITS

MAX_RANK = 8          # iteration dimensions and tuple components a kernel takes (after folding)
# The parameter words (uint32 offsets; shaders/index_map.glsl names the same ones, and tests/test_kernels.py
# checks that they agree): see the GLSL for what each holds.
P_RANK, P_TOTAL, P_K, P_FLAGS, P_TSTRIDE, P_UNITS, P_STATUS = range(7)
P_SHAPE, P_DENSE, P_DATA, P_INDEX, P_TDIM, P_TDATA, P_MAGIC, P_SHIFT = range(8, 8 + 8 * MAX_RANK, MAX_RANK)
P_FILL = P_SHIFT + MAX_RANK   # [4] mode="fill": the unit an out-of-range tuple reads, as 32-bit words
P_END = P_FILL + 4            # kernels with parameters of their own put them from here on
P_BLOCKS = P_END              # WIDE variants: where the tensors' block lists start (addressing.wide_params)
P_ADDR = P_END + 8            # ADDR variants (scatter reductions): the same lists as 32-bit pairs, from here
PARAM_WORDS = P_END           # size of the index map's parameter block
FLAG_SIGNED, FLAG_ROWS, FLAG_WRAP, FLAG_CLIP, FLAG_RAISE = 1, 4, 8, 16, 32   # bits of P[P_FLAGS]
FLAG_FILL, FLAG_DROP = 64, 128
FLAG_SPARE = 256      # with FLAG_DROP (index mode "drop-spare": the scatter reductions): an out-of-range tuple's data
                      # offset is that of index dim in its first component, 0 in the others (a spare slice)
# How the kernels treat an index (index_map.glsl's resolve_index and data_offset): "clamp" (DirectML's: negative
# indices count from the end once, then clamp; mode="raise" too, once its check has passed), NumPy's "wrap" and
# "clip", and JAX's "fill" (gathers) and "drop" (scatters). An index is *out of range* when it lies outside
# [-dim, dim) for a signed index type (negative ones count from the end, as in "clamp" and "raise") or outside
# [0, dim) for an unsigned one (all 64 bits of its value count); a dimension of size 0 has every index out of
# range. "fill": an element whose index tuple has any component out of range reads the fill value (the unit of
# words P_FILL: IndexMap.params' ``fill``); every other element the bits "clamp" gives. "drop": an update whose
# tuple has any component out of range is skipped entirely (it claims nothing and writes nothing); the others
# write as without it.
INDEX_MODE_FLAGS = {"clamp": 0, "raise": 0, "wrap": FLAG_WRAP, "clip": FLAG_CLIP, "fill": FLAG_FILL,
                    "drop": FLAG_DROP, "drop-spare": FLAG_DROP | FLAG_SPARE}
ROW_LOOP_MAX = 4096   # units of the longest row a row-loop iteration moves (IndexMap.row_loop_ok) ...
ROW_LOOP_ROWS = 64    # ... and the fewest rows worth it
U32 = 2**32          # values of a 32-bit word: the 32-bit kernels' counts and offsets stay below U32 - 1


def packed_strides(sizes) -> tuple[int, ...]:
    """Row-major strides, in elements, of a packed tensor of these sizes."""
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class Layout(NamedTuple):
    """A tensor's shape and strides, both in elements."""

    shape: tuple
    strides: tuple

    @classmethod
    def packed(cls, shape) -> "Layout":
        """The layout of a packed (row-major) tensor of this shape."""
        shape = tuple(int(s) for s in shape)
        return cls(shape, packed_strides(shape))

    def disjoint(self) -> bool:
        """True when no two elements share an offset (the strides of the dimensions, smallest first, each
        pass the extent of those below it)."""
        dims = sorted((abs(t), n) for n, t in zip(self.shape, self.strides) if n > 1)
        extent = 1
        for stride, n in dims:
            if stride < extent:
                return False
            extent = stride * (n - 1) + extent
        return True

    def aligned(self, rank: int) -> "Layout":
        """Right-aligned to ``rank`` dimensions: leading 1s cropped, or padded with size-1 dimensions."""
        extra = len(self.shape) - rank
        if extra > 0:
            assert all(s == 1 for s in self.shape[:extra]), "only leading 1s can be cropped"
            return Layout(self.shape[extra:], self.strides[extra:])
        return Layout((1,) * -extra + self.shape, (0,) * -extra + self.strides)


class Dim(NamedTuple):
    """One iteration dimension: its size and its strides in the dense, data and indices tensors."""

    size: int
    dense: int
    data: int
    index: int  # type: ignore[assignment]   # (a field named as tuple's method index())


@dataclass(frozen=True)
class IndexMap:
    """dims: the iteration space (outermost first); tuple_dims: (size, data stride) of the data dimension
    each index-tuple component addresses; tuple_stride: indices-tensor distance between components;
    unit: bytes per access (the element size until ``vectorized``)."""

    dims: tuple
    tuple_dims: tuple
    tuple_stride: int
    unit: int

    @property
    def count(self) -> int:
        """Number of iterations (units of the dense tensor)."""
        return math.prod(d.size for d in self.dims)

    def folded(self) -> "IndexMap":
        """Size-1 dimensions dropped; neighbours contiguous in all three tensors merged."""
        dims: list[Dim] = []
        for d in self.dims:
            if d.size == 1:
                continue
            if dims:
                outer = dims[-1]
                if all(o == i * d.size for o, i in zip(outer[1:], d[1:])):
                    dims[-1] = Dim(outer.size * d.size, d.dense, d.data, d.index)
                    continue
            dims.append(d)
        return replace(self, dims=tuple(dims))

    def row_units(self) -> int:
        """The size of the innermost iteration dimension where it is a row: contiguous in the dense and data
        tensors and not indexed (its units side by side, sharing their index tuple); else 0."""
        inner = self.dims[-1] if self.dims else None
        return inner.size if inner is not None and (inner.dense, inner.data, inner.index) == (1, 1, 0) else 0

    def vectorized(self) -> "IndexMap":
        """Moves a contiguous innermost row in the widest unit that divides the row and every stride."""
        if not self.row_units():
            return self
        inner = self.dims[-1]
        elem = self.unit
        strides = [s for d in self.dims[:-1] for s in (d.dense, d.data)] + [t for _, t in self.tuple_dims]
        for unit in reversed(UNITS):       # the widest first
            if unit <= elem:
                return self
            if unit % elem == 0 and (inner.size * elem) % unit == 0 and all(s * elem % unit == 0 for s in strides):
                scale = unit // elem
                dims = tuple(Dim(d.size, d.dense // scale, d.data // scale, d.index) for d in self.dims[:-1])
                dims += (Dim(inner.size // scale, 1, 1, 0),)
                tuple_dims = tuple((n, t // scale) for n, t in self.tuple_dims)
                return replace(self, dims=dims, tuple_dims=tuple_dims, unit=unit)
        return self

    def optimized(self) -> "IndexMap":
        return self.folded().vectorized().folded()

    def dense_packed(self) -> bool:
        """True when iteration i addresses unit i of the dense tensor (its strides are the packed ones)."""
        return tuple(d.dense for d in self.dims) == Layout.packed([d.size for d in self.dims]).strides

    def row_loop_ok(self) -> bool:
        """True when the innermost iteration dimension is a row (of 2 to ROW_LOOP_MAX units of 4 bytes or
        more) contiguous in the dense and data tensors and not indexed, and there are at least ROW_LOOP_ROWS
        rows: the gather kernel can then move a whole row per iteration (``params(row_loop=True)``)."""
        row = self.row_units() if self.unit >= 4 else 0
        return 2 <= row <= ROW_LOOP_MAX and self.count // row >= ROW_LOOP_ROWS

    def indexed_spread(self) -> int:
        """Bytes of the data tensor that the units of one innermost row can reach through their own indices:
        0 when the innermost dimension is not indexed (its units share their index tuple), else the extent
        of the largest tuple component's dimension (size x data stride x unit), as for a map of no dimension
        left (one unit, through its own index tuple)."""
        if not self.tuple_dims or (self.dims and self.dims[-1].index == 0):
            return 0
        return max(n * abs(t) for n, t in self.tuple_dims) * self.unit

    def vec_ok(self) -> bool:
        """True when a gather can write several units of the dense tensor per iteration (gather.comp's VEC
        variants): units narrower than 16 bytes, into a packed dense tensor."""
        return self.unit < 16 and self.dense_packed()

    def fits_32_bits(self) -> bool:
        """True when the iteration count and every offset (dense, data and index tensors, in units) are under
        2^32 - 1: the 32-bit kernels can run the map; else only the WIDE variants (params(wide=True)).
        Worked out once per map (plans ask on every dispatch)."""
        fits = self.__dict__.get("_fits_32_bits")
        if fits is None:
            last = [sum((d.size - 1) * getattr(d, t) for d in self.dims) for t in ("dense", "data", "index")]
            last[1] += sum((n - 1) * t for n, t in self.tuple_dims)
            last[2] += (len(self.tuple_dims) - 1) * self.tuple_stride if self.tuple_dims else 0
            fits = max([self.count] + last) < U32 - 1
            object.__setattr__(self, "_fits_32_bits", fits)      # not a field: equality and hash ignore it
        return fits

    def params(self, signed_indices: bool, vec: int = 0, row_loop: bool = False, wide: bool = False,
               index_mode: str = "clamp", fill: bytes = b"") -> np.ndarray:
        """The kernel's parameter words (uint32[PARAM_WORDS]; with ``wide``, the WIDE variants' uint64 words,
        the same layout); DeviceError if the map needs 64 bits (fits_32_bits()) and ``wide`` is not given.
        ``vec`` (needs vec_ok(); not with ``wide``): a gather iterates over groups of ``vec`` bytes of its
        dense tensor. ``row_loop`` (needs row_loop_ok()): a gather iterates over the rows of the innermost
        dimension, moving each whole (FLAG_ROWS: fewer index decodes, for CPU devices, where an invocation is
        a SIMD lane). ``index_mode``: how indices outside the dimension resolve (INDEX_MODE_FLAGS). ``fill``
        (index_mode "fill"): the bytes of one element that an out-of-range tuple reads, repeated over the unit
        into words P_FILL. Word P_TOTAL is the kernel's loop count in every case."""
        if len(self.dims) > MAX_RANK or len(self.tuple_dims) > MAX_RANK:
            raise DeviceError(f"the operation needs {len(self.dims)} iteration dimensions and "
                              f"{len(self.tuple_dims)} index components after folding; kernels take at most {MAX_RANK}")
        count = self.count
        if not wide and not self.fits_32_bits():
            raise DeviceError("the operation addresses 2^32 or more units of a tensor: it needs the large-tensor "
                              "kernels (params(wide=True))")
        p = np.zeros(PARAM_WORDS, dtype=np.uint64 if wide else np.uint32)
        p[P_RANK] = sum(d.size > 1 for d in self.dims)
        p[P_TOTAL] = p[P_UNITS] = count
        p[P_K], p[P_TSTRIDE] = len(self.tuple_dims), self.tuple_stride
        p[P_FLAGS] = (FLAG_SIGNED if signed_indices else 0) | INDEX_MODE_FLAGS[index_mode]
        if vec:
            assert self.vec_ok()
            p[P_TOTAL] = -(-count * self.unit // vec)
        if row_loop:
            assert self.row_loop_ok()
            p[P_TOTAL] = count // self.dims[-1].size
            p[P_FLAGS] |= FLAG_ROWS
        for i, d in enumerate(d for d in self.dims if d.size > 1):   # size-1 dimensions add nothing
            p[P_SHAPE + i], p[P_DENSE + i], p[P_DATA + i], p[P_INDEX + i] = d
            if d.size < U32:     # WIDE kernels divide by sizes of 2^32 and more in 64 bits (magic 0)
                p[P_MAGIC + i], p[P_SHIFT + i] = magic(d.size)
        for k, (n, t) in enumerate(self.tuple_dims):
            p[P_TDIM + k], p[P_TDATA + k] = n, t
        if fill:
            p[P_FILL:P_FILL + 4] = fill_words(fill, self.unit)
        return p


def fill_words(fill: bytes, unit: int) -> np.ndarray:
    """Words P_FILL of a fill element's bytes: the unit of ``unit`` bytes that holds it repeated (a vectorized
    map's unit holds several elements), zero-padded to 16 bytes, as four little-endian 32-bit words."""
    assert unit % len(fill) == 0 and unit <= 16
    return np.frombuffer((fill * (unit // len(fill))).ljust(16, b"\0"), dtype="<u4").astype(np.uint32)


def magic(n: int) -> tuple[int, int]:
    """(m, l) such that i // n == (t + ((i - t) >> 1)) >> (l - 1) with t = (m * i) >> 32, for every
    32-bit i and 2 <= n < 2^32 (Granlund-Montgomery; index_map.glsl's divide())."""
    assert 2 <= n < U32, "folded iteration sizes are at least 2"
    l = (n - 1).bit_length()
    return (U32 * ((1 << l) - n)) // n + 1, l


# ---- The three shapes of index maps. Each takes layouts of meaningful (unpadded) dimensions. ----

def take_shape(data_shape, indices_shape, axis: int) -> tuple:
    """GATHER (numpy.take): data[:axis] + indices + data[axis+1:]."""
    return tuple(data_shape[:axis]) + tuple(indices_shape) + tuple(data_shape[axis + 1:])


def take_map(data: Layout, indices: Layout, dense: Layout, axis: int, elem: int) -> IndexMap:
    q = len(indices.shape)
    dims = [Dim(data.shape[d], dense.strides[d], data.strides[d], 0) for d in range(axis)]
    dims += [Dim(n, dense.strides[axis + j], 0, indices.strides[j]) for j, n in enumerate(indices.shape)]
    dims += [Dim(data.shape[d], dense.strides[d - 1 + q], data.strides[d], 0)
             for d in range(axis + 1, len(data.shape))]
    return IndexMap(tuple(dims), ((data.shape[axis], data.strides[axis]),), 0, elem)


def elements_map(data: Layout, indices: Layout, dense: Layout, axis: int, elem: int) -> IndexMap:
    """GATHER_ELEMENTS / SCATTER_ELEMENTS: the dense shape is the indices' shape."""
    dims = tuple(Dim(n, dense.strides[d], 0 if d == axis else data.strides[d], indices.strides[d])
                 for d, n in enumerate(indices.shape))
    return IndexMap(dims, ((data.shape[axis], data.strides[axis]),), 0, elem)


def elements_lines(data: Layout, indices: Layout, dense: Layout, axis: int, elem: int) -> tuple[IndexMap, tuple]:
    """SCATTER_ELEMENTS as lines along ``axis`` (lines_plan.ScatterLinesPlan): (the map over the lines, every
    dimension but the axis with tuple size 0, folded; (updates per line, their dense and indices strides
    along the axis, the data's size and stride along the axis))."""
    dims = tuple(Dim(n, dense.strides[d], data.strides[d], indices.strides[d])
                 for d, n in enumerate(indices.shape) if d != axis)
    axis_info = (indices.shape[axis], dense.strides[axis], indices.strides[axis], data.shape[axis],
                 data.strides[axis])
    return IndexMap(dims, (), 0, elem).folded(), axis_info


def nd_shape(data_shape, indices_shape, batch_dims: int) -> tuple:
    """GATHER_ND / SCATTER_ND: indices[:-1] + data[batch_dims + tuple size:]."""
    k = indices_shape[-1]
    return tuple(indices_shape[:-1]) + tuple(data_shape[batch_dims + k:])


def nd_map(data: Layout, indices: Layout, dense: Layout, batch_dims: int, elem: int) -> IndexMap:
    q, b, k = len(indices.shape), batch_dims, indices.shape[-1]
    dims = [Dim(indices.shape[d], dense.strides[d], data.strides[d], indices.strides[d]) for d in range(b)]
    dims += [Dim(indices.shape[d], dense.strides[d], 0, indices.strides[d]) for d in range(b, q - 1)]
    dims += [Dim(data.shape[d], dense.strides[q - 1 + d - b - k], data.strides[d], 0)
             for d in range(b + k, len(data.shape))]
    tuple_dims = tuple((data.shape[b + j], data.strides[b + j]) for j in range(k))
    return IndexMap(tuple(dims), tuple_dims, indices.strides[-1], elem)


def copy_map(src: Layout, dst: Layout, elem: int) -> IndexMap:
    """A strided copy src -> dst of one shape (tuple size 0): dst is the dense side."""
    dims = tuple(Dim(n, t, s, 0) for n, s, t in zip(src.shape, src.strides, dst.strides))
    return IndexMap(dims, (), 0, elem)


# ---- Index values on the host ----

INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.uint32), np.dtype(np.int64), np.dtype(np.uint64))


def as_index_array(indices, what: str = "indices") -> np.ndarray:
    """indices as an int32/uint32/int64/uint64 array in native byte order: narrower integer dtypes widen
    to 32 bits, values unchanged."""
    arr = np.asarray(indices)
    if arr.dtype in INDEX_DTYPES:
        return arr
    if arr.dtype.kind in "iu":
        return arr.astype(np.dtype(f"{arr.dtype.kind}{max(4, arr.dtype.itemsize)}"))
    raise TypeError(f"{what} must have an integer dtype (int32, uint32, int64, uint64, or a narrower integer "
                    f"type), not {arr.dtype}")


def out_of_range(values: np.ndarray, dims) -> np.ndarray:
    """Boolean mask of indices outside [-dim, dim) (negative ones count from the end); ``dims`` broadcasts
    against ``values``."""
    dims = np.asarray(dims, dtype=np.int64)
    if values.dtype.kind == "u":
        return values.astype(np.uint64) >= dims.astype(np.uint64)
    v = values.astype(np.int64)
    return (v < -dims) | (v >= dims)


def resolve(values: np.ndarray, dims) -> np.ndarray:
    """Indices as DirectML resolves them: negative ones count from the end, then clamp into [0, dim)."""
    dims = np.asarray(dims, dtype=np.int64)
    if values.dtype.kind == "u":
        v = np.minimum(values.astype(np.uint64), (dims - 1).astype(np.uint64)).astype(np.int64)
        return v
    v = values.astype(np.int64)
    v = np.where((v < 0) & (v >= -dims), v + dims, v)
    return np.clip(v, 0, dims - 1)


def check_in_range(values: np.ndarray, dims, describe) -> None:
    """IndexError for the first (row-major) index outside [-dim, dim). ``describe(position, value)``
    returns the message; position is the index's coordinates in ``values``."""
    bad = out_of_range(values, dims)
    if bad.any():
        flat = int(np.argmax(bad.reshape(-1)))
        pos = tuple(int(c) for c in np.unravel_index(flat, values.shape))
        raise IndexError(describe(pos, int(values.reshape(-1)[flat])))
