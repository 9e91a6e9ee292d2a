"""gather_scatter's and embedding_bag's orders "tree" and "fixed-point" in one pass (shaders/segment.comp's ORDERS
variants, fixed_point.glsl): the bits of the scatter_nd each call stands for (and of dmlgpu/reference.py), with
specials, -0, a target of many edges (a deep tree, wide exponents), empty targets, include_self, out= (NumPy and
Tensor), weights, prepared EdgeGroups; no intermediate of the gathered rows; CPU devices' long segments."""
import zlib

import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu import reference as ref
from dmlgpu.plans import segment

F8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def _bits(a):
    a = np.asarray(a.numpy() if isinstance(a, dmlgpu.Tensor) else a)
    return a.view(f"u{a.dtype.itemsize}")


def assert_bits(got, want):
    got = got.numpy() if isinstance(got, dmlgpu.Tensor) else got
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(_bits(got), _bits(want)), (got, want)


def _values(rng, shape, dtype, specials=False):
    """Values of many magnitudes (so the orders' bits differ from row-major's), with -0 and, if asked, inf/NaN."""
    v = rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, shape))
    v[rng.random(shape) < 0.05] = -0.0
    if specials:
        v.reshape(-1)[rng.integers(0, v.size, 3)] = [np.inf, -np.inf, np.nan][:min(3, v.size)]
    return v.astype(np.float32).astype(dtype)


def _edges(rng, n, dim, edges):
    """Edges with one hub target (many edges: a deep tree) and some targets without any."""
    src = rng.integers(-n, n, edges)
    dst = rng.integers(0, max(dim - 2, 1), edges)
    dst[rng.random(edges) < 0.4] = 1                     # the hub
    return src, dst


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64] + F8)
@pytest.mark.parametrize("order", ["tree", "fixed-point"])
def test_gather_scatter_orders_are_the_scatters(dtype, order):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(f"{dtype.name}{order}".encode()))
    n, dim = 12, 9
    x = _values(rng, (n, 3), dtype, specials=dtype.itemsize > 1)
    src, dst = _edges(rng, n, dim, 400)
    w = _values(rng, (400,), dtype)
    if order == "fixed-point" and dtype == np.float64:
        with pytest.raises(ValueError, match="gather_scatter.*fixed-point"):      # (as scatter_nd)
            dmlgpu.gather_scatter(x, [0], [0], dim_size=1, order=order)
        return
    reductions = ("add", "mean", "mul") if dtype.itemsize > 1 and order == "tree" else ("add", "mean")
    for reduction in reductions:
        for include_self in (True, False):
            for weights in (None, w):
                rows = x[src % n] if weights is None else \
                    np.stack([ref.combine("mul", np.asarray(a), r) for a, r in zip(weights, x[src % n])])
                base = _values(rng, (dim, 3), dtype)
                want = dmlgpu.scatter_nd(base, dst[:, None], rows, reduction=reduction, include_self=include_self,
                                         order=order)
                assert_bits(want, ref.gather_scatter(x, src, dst, reduction, out=base, include_self=include_self,
                                                     order=order, weights=weights))
                got = base.copy()
                assert dmlgpu.gather_scatter(x, src, dst, reduction, out=got, include_self=include_self, order=order,
                                             weights=weights) is got
                assert_bits(got, want)
                zeros = dmlgpu.scatter_nd(np.zeros((dim, 3), dtype), dst[:, None], rows, reduction=reduction,
                                          include_self=include_self, order=order)
                assert_bits(dmlgpu.gather_scatter(x, src, dst, reduction, dim_size=dim, include_self=include_self,
                                                  order=order, weights=weights), zeros)


def test_gather_scatter_orders_differ_from_row_major():
    """The case above is one where the orders' bits are not row-major's (so the kernel's mode is what is tested)."""
    rng = np.random.default_rng(1)
    x = _values(rng, (12, 3), np.float32)
    src, dst = _edges(rng, 12, 9, 400)
    got = {o: dmlgpu.gather_scatter(x, src, dst, dim_size=9, order=o) for o in ("row-major", "tree", "fixed-point")}
    assert not np.array_equal(_bits(got["tree"]), _bits(got["row-major"]))
    assert not np.array_equal(_bits(got["fixed-point"]), _bits(got["row-major"]))
    assert not np.array_equal(_bits(got["fixed-point"]), _bits(got["tree"]))


@pytest.mark.parametrize("order", ["tree", "fixed-point"])
def test_gather_scatter_orders_on_tensors_and_groups(device, order):
    rng = np.random.default_rng(2)
    x = _values(rng, (30, 2, 2), np.float32)
    src, dst = _edges(rng, 30, 20, 300)
    w = _values(rng, (300,), np.float32)
    base = _values(rng, (20, 2, 2), np.float32)
    rows = np.stack([ref.combine("mul", np.asarray(a), r) for a, r in zip(w, x[src % 30])])
    want = dmlgpu.scatter_nd(base, dst[:, None], rows, reduction="add", order=order)
    out = dmlgpu.tensor(base)
    tx, tw = dmlgpu.tensor(x), dmlgpu.tensor(w)
    assert dmlgpu.gather_scatter(tx, dmlgpu.tensor(src), dmlgpu.tensor(dst), out=out, weights=tw, order=order) is out
    assert_bits(out, want)
    groups = dmlgpu.EdgeGroups(src, dst, 20)
    for _ in range(2):                                   # a prepared grouping, twice: the same bits
        got = dmlgpu.gather_scatter(tx, groups, "mean", order=order)
        assert_bits(got, dmlgpu.scatter_nd(np.zeros((20, 2, 2), np.float32), dst[:, None], x[src % 30],
                                           reduction="mean", order=order))


def test_gather_scatter_fixed_point_writes_no_intermediate():
    """The ordered kernels read the rows where they are: the call's peak device memory is its inputs' and result's,
    below the [edges, row] intermediate that take + scatter_nd would write."""
    rng = np.random.default_rng(3)
    n, dim, edges, cols = 256, 128, 8192, 64
    x = _values(rng, (n, cols), np.float32)
    src, dst = rng.integers(0, n, edges), rng.integers(0, dim, edges)
    intermediate = edges * cols * 4
    with dmlgpu.Device() as dev:
        tx = dmlgpu.tensor(x, device=dev)
        groups = dmlgpu.EdgeGroups(src, dst, dim, device=dev)
        got = dmlgpu.gather_scatter(tx, groups, order="fixed-point")
        dev.synchronize()
        peak = dev.memory_stats()["peak_allocated_bytes"]
        assert peak < intermediate, (peak, intermediate)
        assert_bits(got, dmlgpu.scatter_nd(np.zeros((dim, cols), np.float32), dst[:, None], x[src],
                                           reduction="add", order="fixed-point"))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("order", ["tree", "fixed-point"])
def test_embedding_bag_orders(dtype, order):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(f"{dtype.name}{order}bag".encode()))
    table = _values(rng, (40, 3), dtype, specials=True)
    if order == "fixed-point" and dtype == np.float64:
        with pytest.raises(ValueError, match="embedding_bag.*fixed-point"):      # (as scatter_nd)
            dmlgpu.embedding_bag(table, [[0]], order=order)
        assert_bits(dmlgpu.embedding_bag(table, [[0, 1]], mode="max", order=order),      # (order-free)
                    ref.embedding_bag(table, [[0, 1]], mode="max"))
        return
    ids = rng.integers(0, 40, 300)
    offsets = np.array([0, 0, 5, 200, 230, 299], np.int64)          # an empty bag, a long one, one of one id
    w = _values(rng, (300,), dtype)
    for mode in ("sum", "mean", "max"):
        for kw in ({}, {"padding_idx": int(ids[7])}, {"per_sample_weights": w} if mode == "sum" else {}):
            want = ref.embedding_bag(table, ids, offsets, mode, order=order, **kw)
            assert_bits(dmlgpu.embedding_bag(table, ids, offsets, mode=mode, order=order, **kw), want)
    fixed = ids[:288].reshape(12, 24)
    assert_bits(dmlgpu.embedding_bag(dmlgpu.tensor(table), dmlgpu.tensor(fixed), order=order),
                ref.embedding_bag(table, fixed, order=order))
    assert_bits(dmlgpu.embedding_bag(table, ids, dmlgpu.tensor(offsets), mode="mean", order=order),
                ref.embedding_bag(table, ids, offsets, "mean", order=order))


def test_embedding_bag_fixed_point_is_the_scatter():
    """Without padding, a bag's fixed-point sum is scatter_nd's of the bag's rows onto its index
    (include_self=False: the call's update elements are the ids' rows)."""
    rng = np.random.default_rng(4)
    table = _values(rng, (50, 4), np.float32)
    ids = rng.integers(0, 50, 500)
    offsets = np.sort(rng.integers(0, 501, 30))
    offsets[0] = 0
    bag = np.searchsorted(offsets, np.arange(500), side="right") - 1
    want = dmlgpu.scatter_nd(np.zeros((30, 4), np.float32), bag[:, None], table[ids], reduction="add",
                             include_self=False, order="fixed-point")
    assert_bits(dmlgpu.embedding_bag(table, ids, offsets, order="fixed-point"), want)


def test_orders_on_cpu_devices_long_segments(device):
    """CPU devices run an ordered segment of at most PIECE // 2 positions: a longer gather_scatter target runs as
    take + scatter_nd (the same bits); a longer bag is a DeviceError naming the function."""
    if device.info.type != "CPU":
        pytest.skip("a CPU device's limit")
    rng = np.random.default_rng(5)
    long = segment.PIECE // 2 + 1
    x = _values(rng, (8, 1), np.float32)
    src, dst = rng.integers(0, 8, long), np.zeros(long, np.int64)
    assert_bits(dmlgpu.gather_scatter(x, src, dst, dim_size=2, order="tree"),
                dmlgpu.scatter_nd(np.zeros((2, 1), np.float32), dst[:, None], x[src], reduction="add", order="tree"))
    with pytest.raises(dmlgpu.DeviceError, match=r"embedding_bag.*order 'fixed-point'.*at most"):
        dmlgpu.embedding_bag(x, src, [0], order="fixed-point")
    with pytest.raises(ValueError, match="embedding_bag.*order"):
        dmlgpu.embedding_bag(x, src[:4], [0], order="sideways")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_two_nans_meet_as_numpy_gives_them(dtype, reduction):
    """acc op x with both NaN (other signs, payloads): NumPy's bits (float16's loops give x's NaN, float32's and
    float64's acc's), in a scatter and in the ordered one-pass kernels (a tree meets NaNs of both signs)."""
    p, n = np.array(np.nan, dtype), -np.array(np.nan, dtype)
    q = np.array(np.nan, dtype).view(f"u{p.itemsize}") | 1       # a payload
    q = q.view(dtype)
    pairs = ((p, n), (n, p), (q, n), (n, q)) if dtype == np.float16 else ((p, n), (n, p))   # (NumPy's float32 and
    for acc, x in pairs:                                        # float64 loops give payloads' NaNs in either order)
        with np.errstate(all="ignore"):
            want = np.array([acc + x if reduction == "add" else acc * x])
        got = dmlgpu.scatter_nd(np.array([acc]), np.array([[0]]), np.array([x]), reduction=reduction)
        assert_bits(got, want)
    x = np.array([[p], [n], [p], [n]], dtype)                     # tree(x) = (p op n) op (p op n)
    assert_bits(dmlgpu.gather_scatter(x, [0, 1, 2, 3], [0, 0, 0, 0], reduction, dim_size=1, include_self=False,
                                      order="tree"),
                ref.gather_scatter(x, [0, 1, 2, 3], [0, 0, 0, 0], reduction, dim_size=1, include_self=False,
                                   order="tree"))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                   ml_dtypes.float8_e5m2, np.float64])
def test_mean_divides_as_the_reference(dtype):
    """mean_of(s, n) (arith.glsl: three 32-bit divisions below 2^16 updates, long division above) against
    reference.mean_of for counts around both paths' edges and values of every exponent, subnormals included:
    segments whose first row holds s and the rest -0."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(dtype.name.encode()))
    counts = [2, 3, 5, 7, 10, 31, 255, 1000, 4097, 65535, 65536, 65537] if dtype.itemsize == 4 else \
        [2, 3, 7, 31, 255, 4097, 65535, 65536]     # (lavapipe's software bfloat16 and float8 steps are slow)
    cols = 16
    finfo = ml_dtypes.finfo(dtype)
    s = rng.standard_normal((len(counts), cols)) * np.exp2(rng.integers(-30, 30, (len(counts), cols)))
    # small sums whose means are subnormal (float32's sums stay normal: the device's float32 add may flush)
    s[:6, 0] = float(finfo.smallest_normal if dtype == np.float32 else finfo.smallest_subnormal) * 3
    s[:, 1] = -float(finfo.max)
    s = np.clip(s, -float(finfo.max), float(finfo.max)).astype(dtype)
    data = np.full((sum(counts), cols), -0.0, dtype)          # (s + -0 is s, for s = -0 too)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    data[offsets[:-1]] = s
    want = np.stack([[ref.mean_of(np.asarray(v), n) for v in row] for row, n in zip(s, counts)]).astype(dtype)
    assert_bits(dmlgpu.segment_reduce(data, offsets, "mean"), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int32])
def test_rows_of_whole_16_byte_pieces(dtype):
    """Rows of a multiple of 16 bytes take one invocation per 16 bytes (segment.py's MODE_VEC): each column still
    combined one by one in position order; weights, padding, include_self, out=, and (CPU devices) pieces."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(dtype.name.encode() + b"vec"))
    cols = 2 * (16 // dtype.itemsize)
    floats = dtype.kind == "f" or dtype.name == "bfloat16"
    vals = (lambda shape: _values(rng, shape, dtype)) if floats else \
        (lambda shape: rng.integers(-100, 100, shape).astype(dtype))
    table = vals((50, cols))
    ids = rng.integers(0, 50, 400)
    offsets = np.array([0, 3, 3, 100, 399], np.int64)
    w = vals((400,))
    modes = ("sum", "mean", "max") if floats else ("sum", "max")
    for mode in modes:
        for kw in ({}, {"padding_idx": int(ids[2])}, {"per_sample_weights": w} if mode == "sum" else {}):
            assert_bits(dmlgpu.embedding_bag(table, ids, offsets, mode=mode, **kw),
                        ref.embedding_bag(table, ids, offsets, mode, **kw))
    src, dst = _edges(rng, 50, 30, 500)
    base = vals((30, cols))
    for reduction in ("add", "max") + (("mean",) if floats else ()):
        got = base.copy()
        dmlgpu.gather_scatter(table, src, dst, reduction, out=got)
        assert_bits(got, ref.gather_scatter(table, src, dst, reduction, out=base))
        assert_bits(dmlgpu.gather_scatter(dmlgpu.tensor(table), src, dst, reduction, dim_size=30,
                                          include_self=False),
                    ref.gather_scatter(table, src, dst, reduction, dim_size=30, include_self=False))
    long = segment.PIECE + 1000                          # CPU devices: two pieces, the running values carried
    data = vals((long, cols))
    offs = np.array([0, 10, long - 5, long], np.int64)
    for reduction in ("add", "max"):
        assert_bits(dmlgpu.segment_reduce(data, offs, reduction), ref.segment_reduce(data, offs, reduction))
