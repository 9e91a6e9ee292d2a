"""Hypothesis strategies and helpers shared by the layer-2 property tests (test_gathers.py, test_scatters.py).

Hypothesis draws the structure of a case (shapes, axis, dtypes, which kinds of index values occur, a seed);
the bulk contents (data bytes, index values) come from a NumPy generator seeded by the drawn seed, which
keeps each example fast while every example stays reproducible from hypothesis' derandomized draws.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import strategies as st

DATA_DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.float16, np.int32,
                                     np.uint32, np.float32, np.int64, np.uint64, np.float64, np.complex64,
                                     np.complex128)]
INDEX_DTYPES = [np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64,
                                      np.int8, np.int16, np.uint8, np.uint16)]

MAX_DATA = 4096       # elements of a data tensor
MAX_DENSE = 1 << 15   # elements of a gather output / of updates

# Kinds of index values; "extreme" draws from EXTREMES (stored with wraparound in the index dtype).
INDEX_KINDS = ("in", "neg", "high", "low", "extreme")
EXTREMES = (2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**40, 2**63 - 1, -2**63, 2**64 - 1,
            -2**31, -2**31 - 1, -2**32, -2**40)

# Bit patterns worth planting in float data: signed zeros, infinities, quiet and signalling NaNs with payloads.
SPECIAL_BITS = {
    2: (0x8000, 0x0000, 0x7C00, 0xFC00, 0x7E01, 0xFE3F, 0x7C01, 0x7D55),
    4: (0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFFC12345, 0x7F800001, 0x7FA00000, 0x00000001),
    8: (0x8000000000000000, 0x7FF0000000000000, 0x7FF8000000000001, 0xFFF8DEADBEEF0000,
        0x7FF0000000000001, 0x7FF4000000000000, 0x0000000000000001),
}


# ---- array contents ----

def random_data(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """An array of ``shape`` built from random bytes (bool: 0/1), with special float bit patterns planted."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(shape)
    if dtype.kind in "fc" and n:
        comp = dtype.itemsize // (2 if dtype.kind == "c" else 1)
        bits = arr.reshape(-1).view(np.dtype(f"u{comp}"))
        specials = np.array(SPECIAL_BITS[comp], dtype=np.dtype(f"u{comp}"))
        where = rng.random(bits.size) < 0.25
        bits[where] = rng.choice(specials, size=int(where.sum()))
    return arr


def store(values, dtype) -> np.ndarray:
    """Python ints (any size) stored in an integer ``dtype`` with two's-complement wraparound."""
    dtype = np.dtype(dtype)
    bits = 8 * dtype.itemsize
    flat = [int(v) % (1 << bits) for v in np.asarray(values, dtype=object).reshape(-1)]
    return np.array(flat, dtype=np.dtype(f"u{dtype.itemsize}")).view(dtype).reshape(np.shape(values))


def random_indices(rng: np.random.Generator, shape, dims, dtype, kinds) -> np.ndarray:
    """Index values of ``shape`` for data dimensions ``dims`` (broadcasting against ``shape``), of the
    given ``kinds`` (INDEX_KINDS), stored in ``dtype`` with wraparound."""
    shape = tuple(shape)
    dims = np.broadcast_to(np.asarray(dims, dtype=object), shape)
    kinds = list(kinds)
    choice = rng.integers(0, len(kinds), size=shape)
    out = np.empty(shape, dtype=object)
    for pos in np.ndindex(*shape):
        dim, kind = int(dims[pos]), kinds[choice[pos]]
        if kind == "in":
            v = int(rng.integers(0, dim))
        elif kind == "neg":
            v = -int(rng.integers(1, dim + 1))
        elif kind == "high":
            v = dim + int(rng.integers(0, 4))
        elif kind == "low":
            v = -dim - 1 - int(rng.integers(0, 4))
        else:
            v = EXTREMES[int(rng.integers(0, len(EXTREMES)))]
        out[pos] = v
    return store(out, dtype)


# ---- independent index semantics (Python ints, for checking dmlgpu and its references) ----

def py_resolve(v: int, dim: int, signed: bool) -> int:
    """DirectML: a negative value of a signed type counts from the end once, then clamp into [0, dim)."""
    if signed and -dim <= v < 0:
        v += dim
    return min(max(v, 0), dim - 1)


def first_bad(indices: np.ndarray, dims):
    """(position, value) of the first index outside [-dim, dim) in row-major order, or None."""
    dims = np.broadcast_to(np.asarray(dims, dtype=object), indices.shape)
    for pos in np.ndindex(*indices.shape):
        v, dim = int(indices[pos]), int(dims[pos])
        if not -dim <= v < dim:
            return pos, v
    return None


def assert_index_error(excinfo, pos, value):
    """The IndexError message names the offending value and its position."""
    msg = str(excinfo.value)
    nums = r"[\s,]*".join(str(p) for p in pos)
    assert re.search(rf"(?<![\d-]){re.escape(str(value))}(?!\d)", msg), f"value {value} not in {msg!r}"
    assert re.search(rf"[(\[]\s*{nums}\s*,?\s*[)\]]", msg), f"position {pos} not in {msg!r}"


def snapshot(*arrays):
    return [(a.shape, a.dtype, a.tobytes()) for a in arrays]


def same_bytes(result: np.ndarray, expected: np.ndarray) -> None:
    assert isinstance(result, np.ndarray)
    assert result.dtype == expected.dtype, (result.dtype, expected.dtype)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    if result.tobytes() != expected.tobytes():
        bad = np.flatnonzero(result.reshape(-1).view(np.uint8) != expected.reshape(-1).view(np.uint8))
        raise AssertionError(f"{bad.size} bytes differ, first at byte {bad[0]}: "
                             f"got {result.reshape(-1)[bad[0] // result.itemsize]!r}, "
                             f"expected {expected.reshape(-1)[bad[0] // result.itemsize]!r}")


# ---- strategies ----

seeds = st.integers(0, 2**32 - 1)
data_dtypes = st.sampled_from(DATA_DTYPES)
index_dtypes = st.sampled_from(INDEX_DTYPES)
modes = st.sampled_from(["clamp", "raise"])


@st.composite
def index_kinds(draw, allow_bad=True):
    """A non-empty subset of INDEX_KINDS ("in" alone most often, so in-range cases are common)."""
    if not allow_bad:
        return draw(st.sampled_from([("in",), ("in", "neg"), ("neg",)]))
    return tuple(draw(st.lists(st.sampled_from(INDEX_KINDS), min_size=1, max_size=5, unique=True)))


@st.composite
def shapes(draw, min_rank=1, max_rank=8, max_elems=MAX_DATA, min_side=1, max_side=None):
    rank = draw(st.integers(min_rank, max_rank))
    cap = max(2, round(max_elems ** (1 / max(rank, 1))))
    if max_side is not None:
        cap = min(cap, max_side)
    sides = [draw(st.integers(min_side, cap)) for _ in range(rank)]
    while int(np.prod(sides, dtype=np.int64)) > max_elems:
        i = int(np.argmax(sides))
        sides[i] = max(1, sides[i] // 2)
    return tuple(sides)


@st.composite
def empty_shapes(draw, min_rank=1, max_rank=4):
    """Shapes with at least one zero-size dimension."""
    shape = list(draw(shapes(min_rank=min_rank, max_rank=max_rank, max_elems=256, max_side=5)))
    zeros = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape)))
    for z in zeros:
        shape[z] = 0
    return tuple(shape)


def budget_shape(shape, budget):
    """``shape`` halved along its largest side until it has at most ``budget`` elements."""
    sides = list(shape)
    while sides and int(np.prod(sides, dtype=np.int64)) > max(budget, 1):
        i = int(np.argmax(sides))
        sides[i] = max(1, sides[i] // 2)
    return tuple(sides)


@st.composite
def layouts(draw):
    """How an input reaches dmlgpu: as is, Fortran-ordered, or a non-contiguous (strided) view."""
    return draw(st.sampled_from(["c", "c", "f", "strided"]))


def lay_out(arr: np.ndarray, how: str) -> np.ndarray:
    """``arr``'s values in another memory layout (same shape, dtype and values)."""
    if arr.ndim == 0:
        return arr
    if how == "f":
        return np.asfortranarray(arr)
    if how == "strided" and arr.size:
        big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
        view = big[..., ::2]
        view[...] = arr
        return view
    return arr


@st.composite
def elements_case(draw, budget=4096):
    """(data, indices, axis, mode, rng) for the elements operations: indices of data's rank, no larger
    outside the axis, at most ``budget`` of them, both in drawn layouts."""
    shape = draw(shapes(), label="shape")
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1), label="axis")
    a = axis % rank
    idx_shape = [draw(st.integers(1, n + 3)) if d == a else draw(st.integers(1, n)) for d, n in enumerate(shape)]
    idx_shape = budget_shape(idx_shape, budget)
    dtype, idx_dtype = draw(data_dtypes, label="dtype"), draw(index_dtypes, label="idx_dtype")
    kinds, mode = draw(index_kinds(), label="kinds"), draw(modes, label="mode")
    rng = np.random.default_rng(draw(seeds, label="seed"))
    x = lay_out(random_data(rng, shape, dtype), draw(layouts(), label="x_layout"))
    idx = lay_out(random_indices(rng, idx_shape, shape[axis], idx_dtype, kinds), draw(layouts(), label="i_layout"))
    return x, idx, axis, mode, rng


@st.composite
def empty_elements_case(draw):
    """(data, indices, axis, mode, rng) for the elements operations, with a zero-size dimension in data
    or indices."""
    shape = draw(shapes(max_rank=4, max_elems=64, min_side=0, max_side=4), label="shape")
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1), label="axis")
    a = axis % rank
    idx_shape = [draw(st.integers(0, n + 2)) if d == a else draw(st.integers(0, n)) for d, n in enumerate(shape)]
    if 0 not in idx_shape and 0 not in shape:
        idx_shape[draw(st.integers(0, rank - 1))] = 0
    dtype, idx_dtype = draw(data_dtypes, label="dtype"), draw(index_dtypes, label="idx_dtype")
    mode = draw(modes, label="mode")
    rng = np.random.default_rng(draw(seeds, label="seed"))
    x = random_data(rng, shape, dtype)
    idx = random_indices(rng, idx_shape, max(shape[a], 1), idx_dtype, ["in"])
    return x, idx, axis, mode, rng


def call_and_check(fn, args, kwargs, mode, idx, dims, expected_fn, callers):
    """Runs ``fn``; in mode "raise" with a bad index expects IndexError naming the first bad one, else the
    result must equal ``expected_fn()`` bit for bit. The caller's arrays must be unchanged either way."""
    before = snapshot(*callers)
    bad = first_bad(idx, dims) if mode == "raise" else None
    if bad is not None:
        with pytest.raises(IndexError) as excinfo:
            fn(*args, **kwargs)
        assert_index_error(excinfo, *bad)
        out = None
    else:
        out = fn(*args, **kwargs)
        expected = expected_fn()
        same_bytes(out, expected)
        _queued_twice(fn, args, kwargs, expected)
    assert snapshot(*callers) == before, "the caller's arrays were modified"
    return out


def _queued_twice(fn, args, kwargs, expected) -> None:
    """The same call twice on device Tensors (queued eager calls): the first call's operands are freed before
    the second is made, so the second's uploads and result may reuse their blocks inside the same batch; both
    results are read afterwards. Then once more with ``out=``: a scatter in place into its data Tensor, a
    gather into a Tensor of the result's shape. (Scatter reductions need native byte order on Tensors: those
    are skipped.)"""
    dev = kwargs.get("device")
    if dev is None or any(isinstance(a, np.ndarray) and not a.dtype.isnative for a in args):
        return
    import dmlgpu
    from dmlgpu.plans.index_map import as_index_array

    def on_device():    # indices (the second operand) of a narrow dtype widen, as layer 2 does for arrays
        return tuple(dmlgpu.tensor(as_index_array(a) if i == 1 else a, device=dev) if isinstance(a, np.ndarray)
                     else a for i, a in enumerate(args))

    first = fn(*on_device(), **kwargs)
    second = fn(*on_device(), **kwargs)
    same_bytes(first.numpy(), expected)
    same_bytes(second.numpy(), expected)
    # and into out=: a scatter in place (out is data), a gather into a Tensor of the result's shape
    operands = on_device()
    out = operands[0] if fn.__name__.startswith("scatter") else dmlgpu.empty(expected.shape, expected.dtype,
                                                                              device=dev)
    assert fn(*operands, **kwargs, out=out) is out
    same_bytes(out.numpy(), expected)


def run_in_threads(work, count: int = 4) -> None:
    """Runs ``work(seed)`` for seeds 0..count-1, each on its own thread, and waits for all of them."""
    import threading
    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
