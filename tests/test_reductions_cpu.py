"""Scatter reductions folded without a sort on CPU devices (dmlgpu/plans/reduction_cpu.py,
shaders/scatter_fold_cpu.comp): every dtype and reduction, include_self=False and "mean", rows of one and of several
elements, runs across the fold's pieces of rows and its blocks of 32, key ranges that do not divide among the owners,
strided outputs, negative, clamped and duplicate indices; bit for bit the sequential NumPy reference, and the sorted
plan's bits. On other devices the fold never runs: those tests are skipped."""
import zlib

import ml_dtypes
import numpy as np
import pytest

import dmlgpu
from dmlgpu.plans import reduction_cpu, reduction_minmax
from dmlgpu import reference

from test_reductions import same, values
from test_reductions_gpu import sequential

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.int8,
                                np.uint16, np.int64, np.bool_, ml_dtypes.float8_e4m3fn)]
PIECE = reduction_cpu.CPU_FOLD_PIECE


@pytest.fixture
def cpu(device, monkeypatch):
    if device.info.type != "CPU":
        pytest.skip("the sort-free fold runs on CPU devices only")
    monkeypatch.setattr(reduction_minmax, "ENABLED", False)     # min/max fold here too (not by 64-bit atomics)
    return device


def kernels_of(device, fn, *args, **kwargs):
    """The kernels that a call on Tensors runs (recorded), and its result as NumPy."""
    tensors = [dmlgpu.tensor(a, device=device) for a in args]
    with device.record() as rec:
        out = fn(*tensors, **kwargs)
    return [what.kernel for kind, what in rec._steps if kind == "dispatch"], out.numpy()


def reductions_of(dtype):
    return ("add", "mul", "min", "max") + (("mean",) if dmlgpu.plans.reduction_args.is_float(dtype) else ())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_reduction_and_include_self(cpu, dtype):
    """Rows of one element (scatter_elements: the keys carry the values up to 4 bytes) and of 3 (scatter_nd:
    several slice positions per owner) onto 2^k +- 1 targets, duplicates, negative and clamped indices."""
    rng = np.random.default_rng(zlib.crc32(str(dtype).encode()))
    for reduction in reductions_of(dtype):
        for include_self in (True, False):
            for m in (1, 63, 65):
                data, upd = values(rng, (m,), dtype, reduction), values(rng, (700,), dtype, reduction)
                idx = rng.integers(-m - 3, m + 3, size=700)        # negative, and clamped past either end
                names, out = kernels_of(cpu, dmlgpu.scatter_elements, data, idx, upd, reduction=reduction,
                                        include_self=include_self)
                expected = reference.scatter_elements(data, idx, upd, reduction=reduction, include_self=include_self)
                assert same(out, expected, loose_nan=False), (reduction, include_self, m)
                assert any("_cpu" in k for k in names) or any("atomic" in k for k in names), names
                table, rows = values(rng, (m, 3), dtype, reduction), values(rng, (300, 3), dtype, reduction)
                nd_idx = rng.integers(-m, m, size=(300, 1))
                names, out = kernels_of(cpu, dmlgpu.scatter_nd, table, nd_idx, rows, reduction=reduction,
                                        include_self=include_self)
                expected = reference.scatter_nd(table, nd_idx, rows, reduction, include_self)
                assert same(out, expected, loose_nan=False), ("nd", reduction, include_self, m)
                assert any("_cpu" in k for k in names) or any("atomic" in k for k in names), names


@pytest.mark.parametrize("dtype, reduction, include_self", [
    (np.dtype(np.float32), "add", True), (np.dtype(np.float32), "mul", False), (np.dtype(np.float32), "mean", True),
    (np.dtype(np.float16), "add", False), (np.dtype(ml_dtypes.bfloat16), "mean", False),
    (np.dtype(np.float64), "max", True), (np.dtype(np.int32), "add", False), (np.dtype(np.uint8), "mul", True)],
    ids=str)
def test_runs_across_pieces(cpu, dtype, reduction, include_self):
    """More than two pieces of rows (each a dispatch of its own: llvmpipe's loops stop after 65535 iterations)
    onto 3 neighbouring targets (sub-word elements share words), a row count that leaves a partial block of 32,
    and a run of one target across both piece edges; the counts of include_self=False and "mean" go on
    across the pieces."""
    rng = np.random.default_rng(zlib.crc32(f"{dtype} {reduction} {include_self}".encode()))
    n, m = 2 * PIECE + 1000 + 13, 3
    idx = rng.integers(0, m, size=n)
    idx[PIECE - 500:PIECE + 500] = 1
    if reduction == "mul" and dmlgpu.plans.reduction_args.is_float(dtype):
        upd = rng.choice(np.array([1, -1, 2, 0.5], dtype=dtype), size=n)
    elif dmlgpu.plans.reduction_args.is_float(dtype):
        upd = rng.integers(-4, 5, size=n).astype(dtype)     # small integers: exact sums, whatever the order
    else:
        upd = values(rng, (n,), dtype, reduction)
    data = values(rng, (m,), dtype, reduction)
    names, out = kernels_of(cpu, dmlgpu.scatter_elements, data, idx, upd, reduction=reduction,
                            include_self=include_self)
    assert sum("_cpu" in k and "finish" not in k and "clear" not in k for k in names) == 3, names
    assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)


def test_float_order_across_pieces(cpu):
    """float32 add whose result depends on the order (large and small terms) over three pieces: the
    row-major left fold, bit for bit."""
    rng = np.random.default_rng(5)
    n, m = 2 * PIECE + 77, 2
    idx = rng.integers(0, m, size=n)
    upd = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, size=n)).astype(np.float32)
    data = np.array([1e7, -3.5], dtype=np.float32)
    out = dmlgpu.scatter_elements(data, idx, upd, device=cpu, reduction="add")
    assert same(out, sequential(data, idx, upd, "add"), loose_nan=False)


@pytest.mark.parametrize("threads", [1, 3, 5])
def test_owners_do_not_change_the_bits(cpu, monkeypatch, threads):
    """The number of owners (from the CPU count) changes only the work's split: key ranges that do not divide
    evenly, more owners than keys (m = 2), rows of 1 and of 5 elements."""
    monkeypatch.setattr(reduction_cpu, "CPU_THREADS", threads)
    rng = np.random.default_rng(threads)
    for m in (2, 1000 + threads):                     # a new shape per case: its plan is made here
        data = values(rng, (m,), np.dtype(np.float32), "add")
        idx = rng.integers(0, m, size=5000 + threads)
        upd = values(rng, (idx.size,), np.dtype(np.float32), "add")
        for reduction, include_self in (("add", True), ("mean", False), ("max", False)):
            out = dmlgpu.scatter_elements(data, idx, upd, device=cpu, reduction=reduction, include_self=include_self)
            assert same(out, sequential(data, idx, upd, reduction, include_self), loose_nan=False)
        table, rows = np.stack([data] * 5, axis=1), np.stack([upd * k for k in range(5)], axis=1)
        out = dmlgpu.scatter_nd(table, idx[:, None], rows, device=cpu, reduction="mul", include_self=False)
        assert same(out, reference.scatter_nd(table, idx[:, None], rows, "mul", False), loose_nan=False)


def test_strided_targets(cpu):
    """Targets along an inner and an outer axis (keys are offsets without their common low zero bits: gaps
    between the keys of real targets), duplicates included."""
    rng = np.random.default_rng(7)
    data = values(rng, (6, 40), np.dtype(np.float32), "add")
    for axis, shape in ((1, (6, 300)), (0, (90, 40))):
        idx = rng.integers(-data.shape[axis], data.shape[axis], size=shape)
        upd = values(rng, shape, np.dtype(np.float32), "add")
        for reduction in ("add", "mean", "min"):
            out = dmlgpu.scatter_elements(data, idx, upd, axis, device=cpu, reduction=reduction, include_self=False)
            expected = reference.scatter_elements(data, idx, upd, axis, reduction=reduction, include_self=False)
            assert same(out, expected, loose_nan=False), (axis, reduction)
    data = values(rng, (8, 8), np.dtype(np.int64), "add")
    idx = np.array([[3], [5], [3], [-1], [7], [3]])                  # rows of 8, duplicates, a negative index
    upd = values(rng, (6, 8), np.dtype(np.int64), "add")
    out = dmlgpu.scatter_nd(data, idx, upd, device=cpu, reduction="add", include_self=False)
    assert same(out, reference.scatter_nd(data, idx, upd, "add", False))


def test_same_bits_as_the_sorted_plan_and_counts_left_zero(cpu, monkeypatch):
    """The sorted plan (CPU_FOLD off) gives the same bits; after the fold's counted runs (include_self=False,
    "mean") its zeroed scratch is all zeros again."""
    rng = np.random.default_rng(11)
    m, n = 4099, 20000
    data = values(rng, (m,), np.dtype(np.float32), "add")
    idx = rng.integers(0, m, size=n)
    upd = values(rng, (n,), np.dtype(np.float32), "add")
    cases = [("add", True), ("mul", False), ("mean", True), ("mean", False), ("max", False)]
    fold = [dmlgpu.scatter_elements(data, idx, upd, device=cpu, reduction=r, include_self=s) for r, s in cases]
    assert not cpu.runtime.zeroed(reduction_cpu.COUNTS, 4).read().any()
    monkeypatch.setattr(reduction_cpu, "CPU_FOLD", False)
    cpu.runtime.templates.clear()
    for (reduction, include_self), out in zip(cases, fold):
        names, sorted_out = kernels_of(cpu, dmlgpu.scatter_elements, data, idx, upd, reduction=reduction,
                                       include_self=include_self)
        assert not any("_cpu" in k for k in names) and any("radix" in k for k in names), names
        assert same(out, sorted_out, loose_nan=False), (reduction, include_self)
