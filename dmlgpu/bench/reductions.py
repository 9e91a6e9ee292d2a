"""Cost of scatter reductions relative to plain scatter (reduction="none"), end to end from NumPy arrays.

Usage: python -m bench.reductions [--updates 1M] [--targets 64K] [--repeat 5] [--dtype float32]
Prints, per operation and reduction, the median wall time of a call (upload, host grouping, GPU, download),
the host-side grouping alone (resolve, stable sort, run table) and the ratio to reduction="none".
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dmlgpu
from dmlgpu import reduction as red
from dmlgpu.index_map import Layout


def count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
    return int(text.rstrip("KM")) * scale


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", default="1M")
    ap.add_argument("--targets", default="64K")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    n, m = count(args.updates), count(args.targets)
    dev = dmlgpu.default_device()
    rng = np.random.default_rng(0)
    dtype = np.dtype(args.dtype)
    data = rng.standard_normal(m).astype(dtype)
    idx = rng.integers(0, m, size=n)
    upd = rng.uniform(0.999, 1.001, size=n).astype(dtype) if dtype.kind == "f" else \
        rng.integers(0, 100, size=n).astype(dtype)
    print(f"{dev.info.name}: {n} {dtype} updates onto {m} targets, median of {args.repeat}")
    print(f"{'operation':18} {'reduction':9} {'end to end':>11} {'host grouping':>14} {'vs none':>8}")
    for op in ("scatter_elements", "scatter_nd"):
        ind = idx if op == "scatter_elements" else idx[:, None]
        fn = getattr(dmlgpu, op)
        base = None
        for reduction in ("none", "add", "mul", "min", "max"):
            t = median_time(lambda: fn(data, ind, upd, device=dev, reduction=reduction), args.repeat)
            base = base or t
            host = ""
            if reduction != "none":
                lay = Layout.packed
                plan = (red.ReducePlan.elements(reduction, data.dtype, ind.dtype, lay(data.shape), lay(ind.shape),
                                                lay(upd.shape), 0) if op == "scatter_elements" else
                        red.ReducePlan.nd(reduction, data.dtype, ind.dtype, lay(data.shape), lay(ind.shape),
                                          lay(upd.shape)))
                host = f"{median_time(lambda: plan.tables(ind), args.repeat) * 1e3:11.1f} ms"
            print(f"{op:18} {reduction:9} {t * 1e3:8.1f} ms {host:>14} {t / base:7.2f}x")


if __name__ == "__main__":
    main()
