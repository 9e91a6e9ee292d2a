"""Layer-1 execution against dmlgpu.reference: strided (padded, broadcast, permuted) TensorDescs, every
DataType bit-exact, every index type with wrapping and clamping, DimensionCount 1 to 8, GATHER's scalar
index, GATHER_ND1 batches, scatters in place and not, duplicate scatter targets; and layer 1 == layer 2.

Buffers are built byte by byte from each TensorDesc's strides (``view``): inputs are random bytes with the
tensor's elements written through its strides; outputs start as random bytes, and whatever lies outside
the output tensor's elements (padding, the tail up to TotalTensorSizeInBytes) must come back untouched.
All data comparisons are on unsigned-integer views of the elements, so floats compare bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dmlgpu
from dmlgpu import (DataType, GatherDesc, GatherElementsDesc, GatherND1Desc, GatherNDDesc, ScatterElementsDesc,
                    ScatterNDDesc, TensorDesc, reference)

D = DataType
UINT = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
ALL_TYPES = list(DataType)
EIGHT = [D.FLOAT32, D.FLOAT16, D.INT32, D.INT16, D.INT8, D.UINT32, D.UINT16, D.UINT8]
INDEX_TYPES = [D.UINT32, D.INT32, D.UINT64, D.INT64]
SPECIALS = {  # bit patterns: NaNs with payloads (quiet and signalling, both signs), -0.0, infinities
    D.FLOAT16: [0x7E01, 0x7C01, 0xFD55, 0xFFFF, 0x8000, 0x7C00, 0xFC00],
    D.FLOAT32: [0x7FC00001, 0x7F800001, 0xFFC0BEEF, 0xFFFFFFFF, 0x80000000, 0x7F800000, 0xFF800000],
    D.FLOAT64: [0x7FF0000000000001, 0x7FF8DEAD0000BEEF, 0xFFF0000000000005, 0x8000000000000000,
                0x7FF0000000000000],
}
OPS = ("GATHER", "GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1", "SCATTER_ND", "SCATTER_ELEMENTS")
KINDS = ("packed", "padded", "broadcast", "permuted")
OUT_KINDS = ("packed", "padded", "permuted")   # an output never broadcasts


# ---- strided buffers ----

def view(raw: np.ndarray, desc: TensorDesc, dtype=None) -> np.ndarray:
    """The tensor ``desc`` describes, as a (writable) view into the bytes ``raw``; by default its elements
    as unsigned integers of the element size."""
    dtype = np.dtype(dtype) if dtype is not None else UINT[desc.data_type.size]
    assert dtype.itemsize == desc.data_type.size
    return np.ndarray(desc.sizes, dtype=dtype, buffer=raw,
                      strides=[s * dtype.itemsize for s in desc.element_strides])


def footprint(desc: TensorDesc) -> np.ndarray:
    """Mask of the bytes of a TotalTensorSizeInBytes buffer that belong to the tensor's elements."""
    item = desc.data_type.size
    coords = np.indices(desc.sizes).reshape(desc.dimension_count, -1)
    offsets = (np.asarray(desc.element_strides, dtype=np.int64) @ coords) * item
    mask = np.zeros(desc.total_size_in_bytes, dtype=bool)
    mask[(offsets[:, None] + np.arange(item)).reshape(-1)] = True
    return mask


def strides_for(rng, sizes, kind):
    """Strides, in elements, of a ``kind`` layout: packed (None), padded, broadcast (some stride 0),
    or permuted (dimensions laid out in a random order, with some padding)."""
    r = len(sizes)
    if kind == "packed":
        return None
    order = list(range(r))[::-1]                    # innermost first
    if kind == "permuted":
        rng.shuffle(order)
    step = int(rng.integers(1, 3)) if kind == "padded" else 1
    strides = [0] * r
    for d in order:
        strides[d] = step
        step = step * sizes[d] + (int(rng.integers(0, 3)) if kind in ("padded", "permuted") else 0)
    if kind == "broadcast":
        dims = [d for d in range(r) if sizes[d] > 1] or list(range(r))
        for d in rng.choice(dims, size=int(rng.integers(1, len(dims) + 1)), replace=False):
            strides[d] = 0
    return strides


def make_desc(rng, dt, sizes, kind):
    d = TensorDesc(dt, sizes, strides_for(rng, sizes, kind))
    extra = 4 * int(rng.integers(0, 3))            # sometimes a larger buffer than needed
    return TensorDesc(dt, d.sizes, d.strides, d.total_size_in_bytes + extra) if extra else d


def random_raw(rng, desc: TensorDesc) -> np.ndarray:
    """Random bytes for a data tensor, with NaN payloads, -0.0 and infinities planted in float tensors."""
    raw = rng.integers(0, 256, desc.total_size_in_bytes, dtype=np.uint8)
    if desc.data_type in SPECIALS:
        v = view(raw, desc)
        mask = rng.random(desc.sizes) < 0.35
        specials = np.array(SPECIALS[desc.data_type], dtype=v.dtype)
        v[mask] = specials[rng.integers(0, len(specials), int(mask.sum()))]
    return raw


def index_raw(rng, desc: TensorDesc, values: np.ndarray) -> np.ndarray:
    """Random bytes with ``values`` written through the indices tensor's strides."""
    raw = rng.integers(0, 256, desc.total_size_in_bytes, dtype=np.uint8)
    view(raw, desc, desc.data_type.numpy)[...] = values
    return raw


def draw_index(rng, dim: int, dtype: np.dtype) -> int:
    """An index for a dimension of size ``dim``: mostly in range, some negative (signed types), some far
    out of range (values that a 32-bit or sign-confused implementation would wrap)."""
    u = rng.random()
    signed = dtype.kind == "i"
    if u < 0.55:
        return int(rng.integers(0, dim))
    if u < 0.75 and signed:
        return -int(rng.integers(1, dim + 1))
    info = np.iinfo(dtype)
    cands = [dim, dim + 1, int(info.max), int(info.max) - 1]
    if signed:
        cands += [-dim - 1, int(info.min), int(info.min) + 1]
    else:
        cands += [2**(8 * dtype.itemsize - 1)]
    if dtype.itemsize == 8:
        cands += [2**31, 2**32, 2**32 + 1, 2**40, 2**40 + 1]
        if signed:
            cands += [-2**31 - 1, -2**32, -2**32 + 1, -2**32 + dim - 1, -2**40]
    return cands[int(rng.integers(len(cands)))]


def index_values(rng, shape, dims, dtype) -> np.ndarray:
    """Indices of ``shape``; ``dims`` (broadcast against shape) are the sizes they index."""
    dtype = np.dtype(dtype)
    dims = np.broadcast_to(np.asarray(dims, dtype=np.int64), shape)
    return np.array([draw_index(rng, int(n), dtype) for n in dims.reshape(-1)], dtype=dtype).reshape(shape)


def rand_shape(rng, n, budget=96, high=4):
    """n sizes in [1, high] whose product stays within ``budget``."""
    out, total = [], 1
    for _ in range(n):
        s = int(rng.integers(1, min(high, max(1, budget // total)) + 1))
        out.append(s)
        total *= s
    rng.shuffle(out)
    return out


def pad(shape, r):
    return [1] * (r - len(shape)) + list(shape)


def aligned(shape, r):
    """A meaningful shape right-aligned to r dimensions (leading 1s added or cropped)."""
    shape = list(shape)
    if len(shape) > r:
        assert all(s == 1 for s in shape[: len(shape) - r])
        return shape[len(shape) - r:]
    return pad(shape, r)


# ---- cases: a descriptor, its input bytes, and what the output must hold ----

@dataclass
class Case:
    desc: object
    raws: dict                       # execute() name -> bytes of that tensor's buffer (not the output)
    expected: np.ndarray             # the output's elements (unsigned view), OutputTensor's sizes
    out_raw: np.ndarray | None       # initial bytes of the output buffer; None: in place (output is input)
    layer2: Callable = field(repr=False, default=None)   # device -> the same result through layer 2

    def run(self, device) -> np.ndarray:
        op = device.compile(self.desc)
        bufs = {name: device.buffer(raw) for name, raw in self.raws.items()}
        bufs["output"] = bufs["input"] if self.out_raw is None else device.buffer(self.out_raw)
        op.execute(**bufs)
        return bufs["output"].read()

    def check(self, device) -> np.ndarray:
        got_raw = self.run(device)
        out = self.desc.output
        before = self.raws["input"] if self.out_raw is None else self.out_raw
        assert got_raw.size == before.size == out.total_size_in_bytes
        got = view(got_raw, out).copy()
        assert got.shape == self.expected.shape
        if got.tobytes() != self.expected.tobytes():
            bad = np.argwhere(got != self.expected)
            raise AssertionError(f"{len(bad)} of {got.size} output elements differ, first at {tuple(bad[0])}: "
                                 f"got {got[tuple(bad[0])]:#x}, expected {self.expected[tuple(bad[0])]:#x}\n"
                                 f"{self.desc}")
        outside = ~footprint(out)
        assert np.array_equal(got_raw[outside], before[outside]), "bytes outside the output tensor changed"
        return got


def _logical(raw, desc, dtype=None):
    return view(raw, desc, dtype).copy()


def gather_case(rng, r, dt, it, kinds, p=None, axis=None, m=None):
    p = int(rng.integers(1, r + 1)) if p is None else p               # original rank of the input
    in_m = rand_shape(rng, p)
    m = int(rng.integers(0, min(r, r - p + 1) + 1)) if m is None else m
    if axis is None:   # any axis whose output fits r dimensions: a leading 1 of the input is a valid axis too
        axis = int(rng.integers(max(0, m - 1), r)) if rng.random() < 0.25 else r - p + int(rng.integers(0, p))
    idx_m = rand_shape(rng, m, budget=12)
    in_sizes = pad(in_m, r)
    inp = make_desc(rng, dt, in_sizes, kinds["input"])
    idx = make_desc(rng, it, pad(idx_m, r), kinds["indices"])
    out_shape = in_sizes[:axis] + idx_m + in_sizes[axis + 1:]
    out = make_desc(rng, dt, aligned(out_shape, r), kinds["output"])
    in_raw = random_raw(rng, inp)
    idx_raw = index_raw(rng, idx, index_values(rng, idx.sizes, in_sizes[axis], it.numpy))
    data, ind = _logical(in_raw, inp), _logical(idx_raw, idx, it.numpy).reshape(idx_m)
    expected = reference.gather(data, ind, axis).reshape(out.sizes)
    l2 = lambda dev: dmlgpu.gather(data.view(dt.numpy), ind, axis, device=dev).reshape(out.sizes)  # noqa: E731
    return Case(GatherDesc(inp, idx, out, axis, m), {"input": in_raw, "indices": idx_raw}, expected,
                random_raw(rng, out), l2)


def gather_elements_case(rng, r, dt, it, kinds):
    p = int(rng.integers(1, r + 1))
    in_sizes = pad(rand_shape(rng, p), r)
    axis = int(rng.integers(0, r))                                     # a leading 1 is a valid axis too
    idx_sizes = list(in_sizes)
    idx_sizes[axis] = int(rng.integers(1, 5))
    inp = make_desc(rng, dt, in_sizes, kinds["input"])
    idx = make_desc(rng, it, idx_sizes, kinds["indices"])
    out = make_desc(rng, dt, idx_sizes, kinds["output"])
    in_raw = random_raw(rng, inp)
    idx_raw = index_raw(rng, idx, index_values(rng, idx_sizes, in_sizes[axis], it.numpy))
    data, ind = _logical(in_raw, inp), _logical(idx_raw, idx, it.numpy)
    expected = reference.gather_elements(data, ind, axis)
    l2 = lambda dev: dmlgpu.gather_elements(data.view(dt.numpy), ind, axis, device=dev)  # noqa: E731
    return Case(GatherElementsDesc(inp, idx, out, axis), {"input": in_raw, "indices": idx_raw}, expected,
                random_raw(rng, out), l2)


def _nd_shapes(rng, r, batch_ok):
    """(r_in, r_idx, b, k, in_m, idx_m) for an ND operator whose dense tensor fits r dimensions."""
    while True:
        r_in, r_idx = int(rng.integers(1, r + 1)), int(rng.integers(1, r + 1))
        b = int(rng.integers(0, min(r_in, r_idx))) if batch_ok else 0
        k = int(rng.integers(1, r_in - b + 1))
        if (r_idx - 1) + (r_in - b - k) <= r:
            break
    in_m = rand_shape(rng, r_in, budget=64)
    idx_m = in_m[:b] + rand_shape(rng, r_idx - b - 1, budget=12) + [k]
    return r_in, r_idx, b, k, in_m, idx_m


def gather_nd_case(rng, r, dt, it, kinds, nd1=True, shapes=None):
    r_in, r_idx, b, k, in_m, idx_m = shapes or _nd_shapes(rng, r, nd1)
    inp = make_desc(rng, dt, pad(in_m, r), kinds["input"])
    idx = make_desc(rng, it, pad(idx_m, r), kinds["indices"])
    out_shape = idx_m[:-1] + in_m[b + k:]
    out = make_desc(rng, dt, pad(out_shape, r), kinds["output"])
    in_raw = random_raw(rng, inp)
    idx_raw = index_raw(rng, idx, index_values(rng, idx.sizes, in_m[b:b + k], it.numpy))
    data, ind = _logical(in_raw, inp).reshape(in_m), _logical(idx_raw, idx, it.numpy).reshape(idx_m)
    expected = reference.gather_nd(data, ind, b).reshape(out.sizes)
    if nd1:
        desc = GatherND1Desc(inp, idx, out, r_in, r_idx, b)
    else:
        desc = GatherNDDesc(inp, idx, out, r_in, r_idx)
    l2 = lambda dev: dmlgpu.gather_nd(data.view(dt.numpy), ind, b, device=dev).reshape(out.sizes)  # noqa: E731
    return Case(desc, {"input": in_raw, "indices": idx_raw}, expected, random_raw(rng, out), l2)


def _scatter_out(rng, inp, kinds, in_place):
    if in_place:
        return inp, None
    out = make_desc(rng, inp.data_type, list(inp.sizes), kinds["output"])
    return out, random_raw(rng, out)


def scatter_nd_case(rng, r, dt, it, kinds, in_place=None):
    r_in, r_idx, _, k, in_m, idx_m = _nd_shapes(rng, r, False)
    if in_place is None:
        in_place = kinds["input"] != "broadcast" and bool(rng.integers(0, 2))
    inp = make_desc(rng, dt, pad(in_m, r), kinds["input"])
    idx = make_desc(rng, it, pad(idx_m, r), kinds["indices"])
    upd = make_desc(rng, dt, pad(idx_m[:-1] + in_m[k:], r), kinds["updates"])
    out, out_raw = _scatter_out(rng, inp, kinds, in_place)
    in_raw, upd_raw = random_raw(rng, inp), random_raw(rng, upd)
    idx_raw = index_raw(rng, idx, index_values(rng, idx.sizes, in_m[:k], it.numpy))
    data = _logical(in_raw, inp).reshape(in_m)
    ind = _logical(idx_raw, idx, it.numpy).reshape(idx_m)
    updates = _logical(upd_raw, upd).reshape(idx_m[:-1] + in_m[k:])
    expected = reference.scatter_nd(data, ind, updates).reshape(out.sizes)
    l2 = lambda dev: dmlgpu.scatter_nd(data.view(dt.numpy), ind, updates.view(dt.numpy),  # noqa: E731
                                       device=dev).reshape(out.sizes)
    return Case(ScatterNDDesc(inp, idx, upd, out, r_in, r_idx),
                {"input": in_raw, "indices": idx_raw, "updates": upd_raw}, expected, out_raw, l2)


def scatter_elements_case(rng, r, dt, it, kinds, in_place=None):
    p = int(rng.integers(1, r + 1))
    in_sizes = pad(rand_shape(rng, p), r)
    axis = int(rng.integers(0, r))
    idx_sizes = list(in_sizes)
    idx_sizes[axis] = int(rng.integers(1, 5))
    if in_place is None:
        in_place = kinds["input"] != "broadcast" and bool(rng.integers(0, 2))
    inp = make_desc(rng, dt, in_sizes, kinds["input"])
    idx = make_desc(rng, it, idx_sizes, kinds["indices"])
    upd = make_desc(rng, dt, idx_sizes, kinds["updates"])
    out, out_raw = _scatter_out(rng, inp, kinds, in_place)
    in_raw, upd_raw = random_raw(rng, inp), random_raw(rng, upd)
    idx_raw = index_raw(rng, idx, index_values(rng, idx_sizes, in_sizes[axis], it.numpy))
    data, ind, updates = _logical(in_raw, inp), _logical(idx_raw, idx, it.numpy), _logical(upd_raw, upd)
    expected = reference.scatter_elements(data, ind, updates, axis)
    l2 = lambda dev: dmlgpu.scatter_elements(data.view(dt.numpy), ind, updates.view(dt.numpy), axis,  # noqa: E731
                                             device=dev)
    return Case(ScatterElementsDesc(inp, idx, upd, out, axis),
                {"input": in_raw, "indices": idx_raw, "updates": upd_raw}, expected, out_raw, l2)


BUILDERS = {
    "GATHER": gather_case,
    "GATHER_ELEMENTS": gather_elements_case,
    "GATHER_ND": lambda rng, r, dt, it, kinds: gather_nd_case(rng, r, dt, it, kinds, nd1=False),
    "GATHER_ND1": gather_nd_case,
    "SCATTER_ND": scatter_nd_case,
    "SCATTER_ELEMENTS": scatter_elements_case,
}


def data_types(op):
    return ALL_TYPES if op == "GATHER" else EIGHT


def kinds_of(input="packed", indices="packed", updates="packed", output="packed"):
    return {"input": input, "indices": indices, "updates": updates, "output": output}


# ======================================================================================================
# The helpers themselves
# ======================================================================================================

def test_view_and_footprint_follow_strides():
    d = TensorDesc(D.UINT16, [2, 3], [1, 4])                         # permuted and padded: 10 elements
    raw = np.zeros(20, dtype=np.uint8)
    view(raw, d)[...] = [[1, 2, 3], [4, 5, 6]]
    assert raw.view(np.uint16).tolist() == [1, 4, 0, 0, 2, 5, 0, 0, 3, 6]
    assert footprint(d).tolist() == [True] * 4 + [False] * 4 + [True] * 4 + [False] * 4 + [True] * 4
    b = TensorDesc(D.INT8, [3, 2], [0, 1])
    assert footprint(b).tolist() == [True, True, False, False]


# ======================================================================================================
# Random cases over every layout, data type, index type and rank. Hypothesis draws a seed (and prints it
# on failure); the structure is drawn from it uniformly (hypothesis' own draws of small integers lean
# heavily towards the smallest values, which would leave the higher ranks nearly untested).
# ======================================================================================================

def random_structure(rng, op, max_rank=8):
    types = data_types(op)
    return dict(r=int(rng.integers(1, max_rank + 1)), dt=types[int(rng.integers(len(types)))],
                it=INDEX_TYPES[int(rng.integers(4))],
                kinds={"input": KINDS[int(rng.integers(4))], "indices": KINDS[int(rng.integers(4))],
                       "updates": KINDS[int(rng.integers(4))], "output": OUT_KINDS[int(rng.integers(3))]})


def _random_case_test(op):
    @settings(max_examples=30)
    @given(seed=st.integers(0, 2**64 - 1))
    def test(device, seed):
        rng = np.random.default_rng(seed)
        BUILDERS[op](rng, **random_structure(rng, op)).check(device)
    test.__name__ = f"test_random_layouts_{op.lower()}"
    return test


test_random_layouts_gather = _random_case_test("GATHER")
test_random_layouts_gather_elements = _random_case_test("GATHER_ELEMENTS")
test_random_layouts_gather_nd = _random_case_test("GATHER_ND")
test_random_layouts_gather_nd1 = _random_case_test("GATHER_ND1")
test_random_layouts_scatter_nd = _random_case_test("SCATTER_ND")
test_random_layouts_scatter_elements = _random_case_test("SCATTER_ELEMENTS")


# ======================================================================================================
# Strided layouts, one at a time, on each tensor
# ======================================================================================================

ONE_STRIDED = [(op, tensor, kind) for op in OPS for tensor in ("input", "indices", "updates", "output")
               for kind in KINDS
               if not (tensor == "output" and kind == "broadcast")              # an output never broadcasts
               and not (tensor == "updates" and not op.startswith("SCATTER"))]  # only scatters have updates


@pytest.mark.parametrize("op,tensor,kind", ONE_STRIDED)
def test_one_strided_tensor(device, op, tensor, kind):
    rng = np.random.default_rng([OPS.index(op), KINDS.index(kind), len(tensor)])
    kinds = kinds_of(**{tensor: kind})
    for dt in (D.UINT8, D.FLOAT16, D.FLOAT32):
        BUILDERS[op](rng, 4, dt, D.INT32, kinds).check(device)


def test_gather_from_transposed_input_by_hand(device):
    # input {3,2} stored transposed (strides {1,3}): logical [[0,1],[2,3],[4,5]] from memory [0,2,4,1,3,5]
    inp = TensorDesc(D.INT32, [3, 2], [1, 3])
    idx = TensorDesc(D.UINT32, [1, 4], [0, 2], 32)                  # padded indices, 8 dwords
    out = TensorDesc(D.INT32, [4, 2], [3, 1])                        # padded output rows
    op = device.compile(GatherDesc(inp, idx, out, 0, 1))
    in_buf = device.buffer(np.array([0, 2, 4, 1, 3, 5], dtype=np.int32))
    idx_buf = device.buffer(np.array([2, 99, 0, 99, 1, 99, 2, 99], dtype=np.uint32))
    assert out.total_size_in_bytes == 44                             # last element 3*3 + 1 = 10
    out_buf = device.buffer(np.full(11, -7, dtype=np.int32))
    op.execute(input=in_buf, indices=idx_buf, output=out_buf)
    got = out_buf.read().view(np.int32)
    assert got.tolist() == [4, 5, -7, 0, 1, -7, 2, 3, -7, 4, 5]


def test_gather_broadcast_input_by_hand(device):
    # input {3,4} with strides {0,1}: three copies of the row [10,11,12,13] (16 bytes of storage)
    inp = TensorDesc(D.UINT16, [1, 1, 3, 4], [0, 0, 0, 1])
    idx = TensorDesc(D.UINT32, [1, 1, 1, 3])
    out = TensorDesc(D.UINT16, [1, 1, 3, 3])
    op = device.compile(GatherDesc(inp, idx, out, 3, 1))
    bufs = dict(input=device.buffer(np.array([10, 11, 12, 13], dtype=np.uint16)),
                indices=device.buffer(np.array([3, 0, 7], dtype=np.uint32)),
                output=device.buffer(nbytes=out.total_size_in_bytes))
    op.execute(**bufs)
    assert bufs["output"].read()[:18].view(np.uint16).tolist() == [13, 10, 13] * 3


# ======================================================================================================
# Every DataType, bit-exact (NaN payloads, signalling NaNs, -0.0, infinities planted)
# ======================================================================================================

@pytest.mark.parametrize("op,dt", [(op, dt) for op in OPS for dt in data_types(op)],
                         ids=lambda v: v if isinstance(v, str) else v.name)
def test_every_data_type_bit_exact(device, op, dt):
    rng = np.random.default_rng([OPS.index(op), ALL_TYPES.index(dt)])
    for kinds in (kinds_of(), kinds_of("padded", "packed", "padded", "padded")):
        case = BUILDERS[op](rng, 4, dt, D.UINT32, kinds)
        case.check(device)


def test_special_float_values_survive_a_gather(device):
    for dt, np_dt in ((D.FLOAT16, np.float16), (D.FLOAT32, np.float32), (D.FLOAT64, np.float64)):
        bits = np.array(SPECIALS[dt], dtype=UINT[dt.size])
        n = len(bits)
        inp, idx, out = TensorDesc(dt, [n]), TensorDesc(D.UINT32, [n]), TensorDesc(dt, [n])
        op = device.compile(GatherDesc(inp, idx, out, 0, 1))
        bufs = dict(input=device.buffer(bits), indices=device.buffer(np.arange(n)[::-1].astype(np.uint32)),
                    output=device.buffer(nbytes=out.total_size_in_bytes))
        op.execute(**bufs)
        got = bufs["output"].read()[: n * dt.size].view(UINT[dt.size])
        assert got.tolist() == bits[::-1].tolist()
        assert np.signbit(got[::-1].view(np_dt)).tolist() == np.signbit(bits.view(np_dt)).tolist()


# ======================================================================================================
# Index types: negative indices wrap, out-of-range ones clamp (never wrap modulo 2^32)
# ======================================================================================================

# (index value, resolved index into a dimension of 4) for each index type
INDEX_TABLE = {
    D.UINT32: [(0, 0), (3, 3), (4, 3), (5, 3), (2**31, 3), (2**32 - 2, 3), (2**32 - 1, 3)],
    D.INT32: [(0, 0), (3, 3), (4, 3), (-1, 3), (-4, 0), (-5, 0), (2**31 - 1, 3), (-2**31, 0), (-2**31 + 1, 0)],
    D.UINT64: [(0, 0), (3, 3), (4, 3), (2**32, 3), (2**32 + 1, 3), (2**40, 3), (2**63, 3), (2**64 - 2, 3),
               (2**64 - 1, 3)],
    D.INT64: [(0, 0), (3, 3), (4, 3), (-1, 3), (-4, 0), (-5, 0), (2**32, 3), (2**32 + 1, 3), (2**40, 3),
              (2**40 + 2, 3), (2**63 - 1, 3), (-2**32, 0), (-2**32 + 2, 0), (-2**32 + 3, 0), (-2**40, 0),
              (-2**63, 0), (2**31, 3), (-2**31 - 1, 0)],
}


@pytest.mark.parametrize("it", INDEX_TYPES, ids=lambda t: t.name)
def test_index_wrap_and_clamp_by_hand(device, it):
    values, resolved = zip(*INDEX_TABLE[it])
    n = len(values)
    data = np.array([10, 20, 30, 40], dtype=np.float32)
    op = device.compile(GatherDesc(TensorDesc(D.FLOAT32, [4]), TensorDesc(it, [n]), TensorDesc(D.FLOAT32, [n]), 0, 1))
    bufs = dict(input=device.buffer(data), indices=device.buffer(np.array(values, dtype=it.numpy)),
                output=device.buffer(nbytes=4 * n))
    op.execute(**bufs)
    got = bufs["output"].read().view(np.float32)
    assert got.tolist() == [float(data[i]) for i in resolved]
    assert reference.gather(data, np.array(values, dtype=it.numpy)).tolist() == got.tolist()


def test_int64_2_pow_40_clamps_to_the_last_element(device):
    op = device.compile(GatherElementsDesc(TensorDesc(D.INT32, [1, 5]), TensorDesc(D.INT64, [1, 2]),
                                           TensorDesc(D.INT32, [1, 2]), 1))
    bufs = dict(input=device.buffer(np.arange(100, 105, dtype=np.int32)),
                indices=device.buffer(np.array([2**40, 2**40 + 1], dtype=np.int64)),   # low words 0 and 1
                output=device.buffer(nbytes=8))
    op.execute(**bufs)
    assert bufs["output"].read().view(np.int32).tolist() == [104, 104]


@pytest.mark.parametrize("it", INDEX_TYPES, ids=lambda t: t.name)
def test_nd_tuple_components_clamp_separately(device, it):
    # input {3,4}; tuples (row, col) each resolved against its own dimension
    signed = it.is_signed_integer
    tuples = [(1, 2), (5, 0), (0, 9), (2**31 - 1, 2**31 - 1)]
    if signed:
        tuples += [(-1, -1), (-3, -4), (-4, -5)]
    if it.size == 8:
        tuples += [(2**40, 2**32 + 1)] + ([(-2**40, -2**32 + 1)] if signed else [(2**64 - 2, 2**63)])
    resolved = [(1, 2), (2, 0), (0, 3), (2, 3)] + ([(2, 3), (0, 0), (0, 0)] if signed else [])
    if it.size == 8:
        resolved += [(2, 3)] + ([(0, 0)] if signed else [(2, 3)])
    n = len(tuples)
    data = np.arange(12, dtype=np.int16).reshape(3, 4)
    desc = GatherND1Desc(TensorDesc(D.INT16, [3, 4]), TensorDesc(it, [n, 2]), TensorDesc(D.INT16, [1, n]), 2, 2, 0)
    op = device.compile(desc)
    bufs = dict(input=device.buffer(data), indices=device.buffer(np.array(tuples, dtype=it.numpy)),
                output=device.buffer(nbytes=2 * n))
    op.execute(**bufs)
    assert bufs["output"].read()[: 2 * n].view(np.int16).tolist() == [int(data[t]) for t in resolved]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("it", INDEX_TYPES, ids=lambda t: t.name)
def test_every_index_type_random(device, op, it):
    rng = np.random.default_rng([OPS.index(op), INDEX_TYPES.index(it), 7])
    for r in (1, 3, 5):
        BUILDERS[op](rng, r, D.INT16, it, kinds_of("padded", "padded", "padded", "padded")).check(device)


# ======================================================================================================
# DimensionCount 1 to 8, right-aligned (leading 1s)
# ======================================================================================================

@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("r", range(1, 9))
def test_dimension_counts_with_leading_ones(device, op, r):
    rng = np.random.default_rng([OPS.index(op), r])
    for kinds in (kinds_of(), kinds_of("permuted", "padded", "broadcast", "padded")):
        BUILDERS[op](rng, r, D.FLOAT32, D.INT64, kinds).check(device)


@pytest.mark.parametrize("r", range(1, 9))
def test_gather_all_dimensions_meaningful(device, r):
    rng = np.random.default_rng(r)
    for axis in range(r):
        gather_case(rng, r, D.UINT8, D.INT32, kinds_of(), p=r, axis=axis, m=1).check(device)


@pytest.mark.parametrize("r", range(2, 9))
def test_same_data_at_every_dimension_count(device, r):
    """{3,2} and {1,...,1,3,2} describe the same data: the outputs' bytes agree."""
    data = np.arange(6, dtype=np.float32)
    idx = np.array([2, 0, 1, 1], dtype=np.uint32)
    results = []
    for rank in (2, r):
        desc = GatherDesc(TensorDesc(D.FLOAT32, pad([3, 2], rank)), TensorDesc(D.UINT32, pad([4], rank)),
                          TensorDesc(D.FLOAT32, pad([4, 2], rank)), rank - 2, 1)
        bufs = dict(input=device.buffer(data), indices=device.buffer(idx), output=device.buffer(nbytes=32))
        device.compile(desc).execute(**bufs)
        results.append(bufs["output"].read().tobytes())
    assert results[0] == results[1]
    assert np.frombuffer(results[0], np.float32).tolist() == [4, 5, 0, 1, 2, 3, 2, 3]


# ======================================================================================================
# GATHER: IndexDimensions 0 (one scalar index)
# ======================================================================================================

@pytest.mark.parametrize("it", INDEX_TYPES, ids=lambda t: t.name)
def test_gather_scalar_index(device, it):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    for axis, index, expected in ((2, 1, [4, 5, 6, 7]), (3, 2, [2, 6, 10]), (2, 7, [8, 9, 10, 11])):
        out_m = [4] if axis == 2 else [3]
        desc = GatherDesc(TensorDesc(D.FLOAT32, [1, 1, 3, 4]), TensorDesc(it, [1, 1, 1, 1]),
                          TensorDesc(D.FLOAT32, pad(out_m, 4)), axis, 0)
        bufs = dict(input=device.buffer(data), indices=device.buffer(np.array([index], dtype=it.numpy)),
                    output=device.buffer(nbytes=16))
        device.compile(desc).execute(**bufs)
        assert bufs["output"].read().view(np.float32)[: out_m[0]].tolist() == expected
    if it.is_signed_integer:   # -1: the last row
        bufs["indices"] = device.buffer(np.array([-1], dtype=it.numpy))
        device.compile(desc).execute(**bufs)
        assert bufs["output"].read().view(np.float32)[:4].tolist() == [8, 9, 10, 11]


def test_gather_scalar_index_random(device):
    rng = np.random.default_rng(0)
    for r in range(1, 9):
        for it in INDEX_TYPES:
            gather_case(rng, r, D.INT8, it, kinds_of("padded", "padded", "packed", "padded"), m=0).check(device)


# ======================================================================================================
# GATHER_ND1: batch dimensions
# ======================================================================================================

def test_gather_nd1_two_batch_dimensions_by_hand(device):
    # input {2,3,4}: batches {2,3}; one 1-tuple per batch element picks along the last dimension
    data = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    idx = np.array([[[3], [0], [1]], [[2], [-1], [9]]], dtype=np.int64)
    desc = GatherND1Desc(TensorDesc(D.INT32, [1, 2, 3, 4]), TensorDesc(D.INT64, [1, 2, 3, 1]),
                         TensorDesc(D.INT32, [1, 1, 2, 3]), 3, 3, 2)
    bufs = dict(input=device.buffer(data), indices=device.buffer(idx), output=device.buffer(nbytes=24))
    device.compile(desc).execute(**bufs)
    assert bufs["output"].read().view(np.int32).tolist() == [3, 4, 9, 14, 19, 23]


@pytest.mark.parametrize("b", [1, 2, 3])
def test_gather_nd1_batches_random(device, b):
    rng = np.random.default_rng(b)
    for r in range(b + 1, 9, 2):
        for k in range(1, 3):
            r_in = b + k + int(rng.integers(0, 2))
            if r_in > r:
                continue
            in_m = rand_shape(rng, r_in, budget=48)
            idx_m = in_m[:b] + rand_shape(rng, int(rng.integers(0, r - b)), budget=6) + [k]
            if len(idx_m) > r or (len(idx_m) - 1) + (r_in - b - k) > r:
                continue
            shapes = (r_in, len(idx_m), b, k, in_m, idx_m)
            kinds = kinds_of(*[KINDS[int(i)] for i in rng.integers(0, 4, 3)], output="padded")
            gather_nd_case(rng, r, D.UINT16, D.INT32, kinds, shapes=shapes).check(device)


# ======================================================================================================
# Scatters in place and not; duplicate targets: the last update in row-major order wins
# ======================================================================================================

@pytest.mark.parametrize("op", ["SCATTER_ND", "SCATTER_ELEMENTS"])
@pytest.mark.parametrize("in_place", [True, False], ids=["in_place", "copy"])
@pytest.mark.parametrize("kind", ["packed", "padded", "permuted"])
def test_scatter_in_place_and_not(device, op, in_place, kind):
    rng = np.random.default_rng([OPS.index(op), int(in_place), KINDS.index(kind)])
    builder = scatter_nd_case if op == "SCATTER_ND" else scatter_elements_case
    for dt in (D.INT8, D.FLOAT16, D.UINT32):
        case = builder(rng, 4, dt, D.INT32, kinds_of(kind, "padded", "padded", "padded"), in_place=in_place)
        assert (case.out_raw is None) == in_place
        case.check(device)


def test_in_place_scatter_with_another_output_layout_is_refused(device):
    inp, out = TensorDesc(D.INT32, [2, 3]), TensorDesc(D.INT32, [2, 3], [4, 1])
    desc = ScatterElementsDesc(inp, TensorDesc(D.UINT32, [1, 3]), TensorDesc(D.INT32, [1, 3]), out, 0)
    buf = device.buffer(np.array([0, 1, 2, 3, 4, 5, -9, -9], np.int32))
    with pytest.raises(ValueError, match="same sizes and strides"):
        device.compile(desc).execute(input=buf, indices=device.buffer(np.zeros(3, np.uint32)),
                                     updates=device.buffer(np.full(3, 7, np.int32)), output=buf)
    assert buf.read().view(np.int32).tolist() == [0, 1, 2, 3, 4, 5, -9, -9]


def test_scatter_not_in_place_leaves_the_input_alone(device):
    desc = ScatterElementsDesc(TensorDesc(D.INT32, [4]), TensorDesc(D.UINT32, [2]), TensorDesc(D.INT32, [2]),
                               TensorDesc(D.INT32, [4]), 0)
    inp = device.buffer(np.arange(4, dtype=np.int32))
    bufs = dict(input=inp, indices=device.buffer(np.array([3, 1], np.uint32)),
                updates=device.buffer(np.array([-1, -2], np.int32)), output=device.buffer(nbytes=16))
    device.compile(desc).execute(**bufs)
    assert bufs["output"].read().view(np.int32).tolist() == [0, -2, 2, -1]
    assert inp.read().view(np.int32).tolist() == [0, 1, 2, 3]


def test_scatter_elements_duplicates_last_wins_by_hand(device):
    # axis 1: row 0 targets column 2 four times, row 1 targets columns 0,0,1,0
    desc = ScatterElementsDesc(TensorDesc(D.INT16, [2, 3]), TensorDesc(D.INT64, [2, 4]), TensorDesc(D.INT16, [2, 4]),
                               TensorDesc(D.INT16, [2, 3]), 1)
    bufs = dict(input=device.buffer(np.zeros(6, np.int16)),
                indices=device.buffer(np.array([[2, -1, 2, 5], [0, -3, 1, 0]], np.int64)),
                updates=device.buffer(np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int16)))
    bufs["output"] = bufs["input"]
    device.compile(desc).execute(**bufs)
    assert bufs["output"].read()[:12].view(np.int16).tolist() == [0, 0, 4, 8, 7, 0]


def test_scatter_nd_duplicates_last_wins_by_hand(device):
    # 2-tuples into {3,2}; (1,0) is written three times, (2,1) twice (once through -1, -1)
    tuples = np.array([[[1, 0], [2, 1]], [[1, 0], [-1, -1]], [[1, 0], [0, 0]]], dtype=np.int32)
    desc = ScatterNDDesc(TensorDesc(D.FLOAT32, [1, 3, 2]), TensorDesc(D.INT32, [3, 2, 2]),
                         TensorDesc(D.FLOAT32, [1, 3, 2]), TensorDesc(D.FLOAT32, [1, 3, 2]), 2, 3)
    bufs = dict(input=device.buffer(np.full(6, -1, np.float32)), indices=device.buffer(tuples),
                updates=device.buffer(np.arange(1, 7, dtype=np.float32)), output=device.buffer(nbytes=24))
    device.compile(desc).execute(**bufs)
    assert bufs["output"].read().view(np.float32).tolist() == [6, -1, 5, -1, -1, 4]


def test_scatter_duplicates_through_broadcast_indices(device):
    # indices {4} with stride 0: all four updates target element 2; the last (40) wins
    desc = ScatterElementsDesc(TensorDesc(D.UINT8, [5]), TensorDesc(D.UINT32, [4], [0]), TensorDesc(D.UINT8, [4]),
                               TensorDesc(D.UINT8, [5]), 0)
    bufs = dict(input=device.buffer(np.arange(5, dtype=np.uint8)), indices=device.buffer(np.array([2], np.uint32)),
                updates=device.buffer(np.array([10, 20, 30, 40], np.uint8)), output=device.buffer(nbytes=8))
    device.compile(desc).execute(**bufs)
    assert bufs["output"].read()[:5].tolist() == [0, 1, 40, 3, 4]


@pytest.mark.parametrize("dt", [D.UINT8, D.FLOAT16, D.INT32], ids=lambda t: t.name)
def test_scatter_many_duplicates_random(device, dt):
    rng = np.random.default_rng(dt.size)
    n = 3000
    data_m = [4, 3]
    # SCATTER_ND, 1-tuples into 4 rows: ~750 updates per row
    idx = rng.integers(-4, 4, (n, 1)).astype(np.int32)
    upd = rng.integers(0, 2**(8 * dt.size), (n, 3), dtype=np.uint64).astype(UINT[dt.size])
    data = np.zeros(data_m, dtype=UINT[dt.size])
    desc = ScatterNDDesc(TensorDesc(dt, data_m), TensorDesc(D.INT32, [n, 1]), TensorDesc(dt, [n, 3]),
                         TensorDesc(dt, data_m), 2, 2)
    bufs = dict(input=device.buffer(data), indices=device.buffer(idx), updates=device.buffer(upd),
                output=device.buffer(nbytes=desc.output.total_size_in_bytes))
    device.compile(desc).execute(**bufs)
    got = bufs["output"].read()[: 12 * dt.size].view(UINT[dt.size]).reshape(data_m)
    assert got.tobytes() == reference.scatter_nd(data, idx, upd).tobytes()
    last = {int(i) % 4: upd[j] for j, i in enumerate(idx[:, 0])}
    assert all(got[row].tolist() == last[row].tolist() for row in last)


# ======================================================================================================
# Layer 1 and layer 2 agree
# ======================================================================================================

@pytest.mark.parametrize("op", OPS)
@settings(max_examples=8)
@given(seed=st.integers(0, 2**64 - 1))
def test_layer1_and_layer2_agree(device, op, seed):
    rng = np.random.default_rng(seed)
    structure = random_structure(rng, op, max_rank=6)
    case = BUILDERS[op](rng, **structure)
    layer1 = case.check(device)
    layer2 = case.layer2(device)
    assert layer2.dtype == structure["dt"].numpy
    assert layer2.shape == layer1.shape
    assert layer2.tobytes() == layer1.tobytes()
