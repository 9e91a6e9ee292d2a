"""Scatter reductions on device Tensors: wall time per call (steady state: the call, which is queued, then
Device.synchronize(), so the figure waits for the GPU), GPU time (the call recorded once and rerun; the
first to last Vulkan timestamp: Kompute writes one after every command, and their own cost, about 1-2 us each
on an H200, is included) and stream time (its dispatches recorded back to back without timestamps: what one
more call adds to a submission; bench/gpu_timing.py) of each reduction next to the plain scatter
(reduction="none") of the same shapes ("vs none": GPU time ratio), and, where PyTorch with CUDA is present,
torch's scatter_reduce / index_add_ / scatter_add_ / index_reduce_ on the same data (wall: the call, then
torch.cuda.synchronize(); GPU: CUDA events around the call), with and without
torch.use_deterministic_algorithms(True); for add, NumPy's np.add.at on the host. Compare GPU with GPU (stream
with torch's GPU: neither has a timestamp per kernel) and wall with wall.

Until issue 19 the wall column timed the call alone: since eager calls on Tensors are queued, it stopped
waiting for the GPU (a call with 30 ms of GPU time showed 0.2 ms).

"mean" runs on float dtypes only; "add (no self)" is include_self=False; "add (tree)" is order="tree" (float
dtypes; its torch peers are add's); "add (fixed-point)" and "mean (fixed-point)" are order="fixed-point" (float
dtypes of at most 4 bytes; their torch peers are add's and mean's, index_add_'s atomics included). A progress
line per row goes to stderr.

--accuracy: no timings; instead, for each float dtype and distribution, the error of add with each order against
the float64 sum of the same terms (the target's value, then its updates, converted exactly to float64 and summed
by np.add.at: exact to about 2^-52 of the terms), relative to the target's largest term: its maximum and mean over
the updated targets, on normal values of random signs and scales 2^-4 .. 2^4.
"""
from __future__ import annotations

import argparse
import statistics
import textwrap
import time

import numpy as np

import dmlgpu
from dmlgpu.plans import reduction_buckets, reduction_cpu
from dmlgpu.bench.clock import timestamp_spans, torch_time
from dmlgpu.bench.command import DEVICE_HELP, listed, open_device, parser as command_parser
from dmlgpu.bench.gpu_timing import capture, time_dispatches
from dmlgpu.bench.progress import Progress

REDUCTIONS = ("none", "add", "mul", "min", "max", "mean", "add (no self)", "add (tree)", "add (fixed-point)",
              "mean (fixed-point)")
TORCH_REDUCE = {"add": "sum", "mul": "prod", "min": "amin", "max": "amax", "mean": "mean", "add (no self)": "sum"}
ORDERS = ("row-major", "tree", "fixed-point")
DISTRIBUTIONS = ("uniform", "zipf", "one")
WIDTH = 100          # columns: a row's torch peers go on lines of their own past it


def parse_dtype(name: str) -> np.dtype:
    """A NumPy dtype by name, or one of ml_dtypes' (imported only then); ValueError for neither."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        if not isinstance(getattr(ml_dtypes, name, None), type):
            raise ValueError("neither NumPy nor ml_dtypes has a dtype of this name") from None
        return np.dtype(getattr(ml_dtypes, name))


def count(text: str) -> int:
    """A count with an optional suffix K (1024) or M (1024**2); ArgumentTypeError (a usage error) for others."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
    try:
        return int(text.rstrip("KM")) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no count (e.g. 512, 64K, 1M)") from None


def runs(reduction: str, dtype: np.dtype) -> bool:
    """Whether the row of ``reduction`` runs on ``dtype`` (orders other than row-major: float dtypes;
    fixed-point: of at most 4 bytes)."""
    order = next((o for o in ORDERS if o in reduction), "row-major")
    return (order == "row-major" or dmlgpu.plans.reduction_args.is_float(dtype)) and not (
        order == "fixed-point" and dtype.itemsize > 4)


def median_time(fn, repeat: int, sync=lambda: None) -> float:
    """Median seconds per call of fn() over ``repeat`` calls after one warm-up call."""
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def gpu_time(dev, fn, repeat: int) -> float:
    """Median seconds of GPU work per call of fn(): one call recorded with timestamps, run ``repeat`` times
    (host work and scratch allocation excluded)."""
    return statistics.median(sum(s) for s in timestamp_spans(dev, fn, repeat)) * 1e-9


def targets(rng, dist: str, n: int, m: int) -> np.ndarray:
    if dist == "uniform":
        return rng.integers(0, m, size=n)
    if dist == "zipf":
        return (rng.zipf(1.1, size=n) - 1) % m
    if dist == "one":
        return np.zeros(n, dtype=np.int64)
    raise ValueError(f"unknown distribution {dist!r}")


def values(rng, dtype: np.dtype, shape) -> np.ndarray:
    if dmlgpu.plans.reduction_args.is_float(dtype):    # factors near 1: long products stay finite
        return rng.uniform(0.999, 1.001, size=shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(0, 100, size=shape).astype(dtype)


def stream_time(dev, fn, repeat: int) -> float:
    """Seconds of GPU work per call of fn() without timestamps (gpu_timing's stream time: its dispatches recorded
    back to back, at least 10 times)."""
    result, dispatches = capture(dev, fn)
    del result
    return time_dispatches(dev, dispatches, max(repeat, 10)).stream_ns * 1e-9


def torch_peer():
    """(torch, device) when PyTorch with CUDA is importable, else None."""
    try:
        import torch
    except ImportError:
        return None
    return (torch, torch.device("cuda")) if torch.cuda.is_available() else None


def torch_times(peer, reduction, data, idx, upd, width, repeat) -> dict:
    """(wall ms, GPU ms) per call of torch's reductions on CUDA tensors, atomics (default) and deterministic mode."""
    torch, cuda = peer
    d, i, u = (torch.from_numpy(np.ascontiguousarray(x)).to(cuda) for x in (data, idx, upd))
    sync = torch.cuda.synchronize
    out = {}
    for mode in ("default", "deterministic"):
        torch.use_deterministic_algorithms(mode == "deterministic")
        try:
            if reduction == "none":
                fns = {"scatter": lambda: d.scatter(0, i.view(-1, 1).expand(-1, width) if width > 1 else i, u)}
            else:
                ii = i.view(-1, 1).expand(-1, width) if width > 1 else i
                fns = {"scatter_reduce": lambda: d.scatter_reduce(0, ii, u, TORCH_REDUCE[reduction],
                                                                   include_self=reduction != "add (no self)")}
                if reduction == "add":
                    fns["index_add_"] = lambda: d.clone().index_add_(0, i, u)
                    fns["scatter_add_"] = lambda: d.clone().scatter_add_(0, ii, u)   # (PyTorch's fastest on
                                                                                      # some rows: RESULTS.md)
                elif reduction != "add (no self)":
                    fns["index_reduce_"] = lambda: d.clone().index_reduce_(0, i, u, TORCH_REDUCE[reduction])
            for name, fn in fns.items():
                try:
                    out[f"{name} {mode}"] = (median_time(fn, repeat, sync) * 1e3, (torch_time(fn, repeat) or 0) * 1e3)
                except RuntimeError as exc:      # e.g. no deterministic implementation
                    out[f"{name} {mode}"] = f"unsupported ({str(exc).splitlines()[0][:60]})"
        finally:
            torch.use_deterministic_algorithms(False)
    return out


def parser() -> argparse.ArgumentParser:
    ap = command_parser("python -m dmlgpu bench reductions", __doc__)
    ap.add_argument("--updates", type=count, default="1M", help="update rows (suffix K or M; default 1M)")
    ap.add_argument("--targets", type=count, default="64K", help="targets: rows of the table (default 64K)")
    ap.add_argument("--width", type=int, default=1,
                    help="elements per row; W > 1 scatters rows: scatter_nd of the update rows of W elements onto a "
                         "[targets, W] table (default 1: scatter_elements)")
    ap.add_argument("--dtype", type=listed(None, parse_dtype), default="float32,int32",
                    help="comma-separated dtypes: NumPy's names and ml_dtypes' (bfloat16, float8_e4m3fn, float8_e5m2: "
                         "no torch peer for those); default float32,int32")
    ap.add_argument("--dist", type=listed(DISTRIBUTIONS), default=",".join(DISTRIBUTIONS),
                    help="comma-separated distributions of the targets: uniform; zipf (Zipf-like, exponent 1.1: a few "
                         "targets take most updates); one (every update onto target 0); default: all three")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per row (default 5)")
    ap.add_argument("--repeat", type=int, dest="repeats", default=argparse.SUPPRESS,
                    help=argparse.SUPPRESS)      # (its name until issue 49; the other commands' is --repeats)
    ap.add_argument("--reductions", type=listed(REDUCTIONS), default=",".join(REDUCTIONS),
                    help="comma-separated rows to time, of: " + ", ".join(REDUCTIONS) + " (default: all)")
    ap.add_argument("--device", type=int, default=None, help=DEVICE_HELP)
    ap.add_argument("--sorted", action="store_true",
                    help="CPU devices: the sorted plan (reduction_cpu.CPU_FOLD off), the one they ran before their "
                         "fold without a sort (the same bits), not the sort-free fold")
    ap.add_argument("--no-buckets", action="store_true",
                    help="GPUs: float add, mul and mean by the sorted plan (reduction.py's step 3), not the fold per "
                         "bucket of keys (reduction_buckets.py)")
    ap.add_argument("--accuracy", action="store_true",
                    help="add's error against a float64 sum for each order, instead of timings (see below)")
    ap.add_argument("--no-peer", action="store_true",
                    help="dmlgpu's rows alone: no torch, no np.add.at (an A/B of two dmlgpu builds: "
                         "bench/probes/spec_ab.py)")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    return ap


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    if args.sorted:                 # (for the rest of the process)
        reduction_cpu.CPU_FOLD = False
    if args.no_buckets:
        reduction_buckets.ENABLED = False
    n, m, w = args.updates, args.targets, args.width
    dev = open_device(ap, args.device)
    if args.accuracy:
        return accuracy(dev, n, m, args.dtype, args.dist)
    rows = sorted(args.reductions, key=lambda r: r != "none")     # the plain scatter first: "vs none" needs it
    peer = None if args.no_peer else torch_peer()
    rng = np.random.default_rng(0)
    print(textwrap.fill(f"{dev.info.name}: {n} update rows of {w} onto {m} targets, device Tensors, median wall time "
                        f"of {args.repeats} calls" + ("" if peer else " (no peer: --no-peer)" if args.no_peer else
                                                      " (no torch with CUDA: no peer)") +
                        (", the sorted plan on CPU devices" if args.sorted else "") +
                        (", float add, mul and mean by the sorted plan on GPUs" if args.no_buckets else ""), WIDTH))
    print(textwrap.fill("wall: call + synchronize, median; GPU: Vulkan timestamps of the recorded call, first to "
                        "last (one after every command, their cost included); stream: its dispatches back to back, no "
                        "timestamps; vs none: GPU time over the plain scatter's (- where it did not run); torch: wall "
                        "(call + torch.cuda.synchronize(), median), then GPU (CUDA events)", WIDTH))
    print(f"{'dtype':8} {'dist':8} {'reduction':18} {'wall':>10} {'GPU':>10} {'stream':>10} {'vs none':>8}  "
          f"torch (wall, GPU)", flush=True)
    progress = Progress(enabled=not args.quiet, each=True)
    progress.start(sum(runs(r, d) for d in args.dtype for _ in args.dist for r in rows))
    for dtype in args.dtype:
        for dist in args.dist:
            shape = (m, w) if w > 1 else (m,)
            data = values(rng, dtype, shape)
            idx = targets(rng, dist, n, m)
            upd = values(rng, dtype, (n, w) if w > 1 else (n,))
            t_data, t_upd = dmlgpu.tensor(data, device=dev), dmlgpu.tensor(upd, device=dev)
            t_idx = dmlgpu.tensor(idx[:, None] if w > 1 else idx, device=dev)
            fn = dmlgpu.scatter_nd if w > 1 else dmlgpu.scatter_elements
            base = None             # the plain scatter's GPU time, where it ran
            for reduction in rows:
                red, include_self = reduction.split()[0], "no self" not in reduction
                order = next((o for o in ORDERS if o in reduction), "row-major")
                if not runs(reduction, dtype):
                    continue
                progress.step(f"{dtype} {dist} {reduction}")
                call = lambda: fn(t_data, t_idx, t_upd, reduction=red, include_self=include_self,  # noqa: E731
                                  order=order)
                try:
                    t = median_time(call, args.repeats, dev.synchronize)     # the call, then wait for it
                except TypeError:           # no arithmetic for this dtype
                    continue
                g, s = gpu_time(dev, call, args.repeats), stream_time(dev, call, args.repeats)
                if reduction == "none":
                    base = g
                peers = (torch_times(peer, red if order == "fixed-point" else reduction, data, idx, upd, w,
                                     args.repeats)
                         if peer and dtype.isbuiltin == 1 and order != "tree" else {})
                if reduction == "add" and not args.no_peer:      # the host's sequential reference point (np.add.at)
                    peers["np.add.at (host)"] = median_time(lambda: np.add.at(data.copy(), idx, upd), args.repeats) * 1e3
                shown = [f"{k}: {v:.3f} ms" if isinstance(v, float) else
                         f"{k}: {v[0]:.3f} ms, {v[1]:.3f}" if isinstance(v, tuple) else f"{k}: {v}"
                         for k, v in peers.items()]
                vs = f"{g / base:7.2f}x" if base else f"{'-':>8}"
                line = f"{str(dtype):8} {dist:8} {reduction:18} {t * 1e3:7.3f} ms {g * 1e3:7.3f} ms {s * 1e3:7.3f} ms {vs}"
                if len(line) + 2 + len("  ".join(shown)) <= WIDTH:
                    print(line + ("  " + "  ".join(shown) if shown else ""), flush=True)
                else:               # (torch's several calls: one a line, under the row)
                    print("\n".join([line] + [" " * 20 + p for p in shown]), flush=True)
    progress.finish()
    return 0


def accuracy(dev, n: int, m: int, dtypes, dists) -> int:
    """Prints add's error for each order against the float64 sum (see the module's docstring, --accuracy)."""
    rng = np.random.default_rng(0)
    print(f"{dev.info.name}: {n} updates onto {m} targets (scatter_elements, add, include_self); error of each "
          f"order against the float64 sum, relative to the target's largest term: max, mean over updated targets")
    print(f"{'dtype':9} {'dist':8} " + "  ".join(f"{o + ' max':>16} {o + ' mean':>16}" for o in ORDERS))
    for dtype in dtypes:
        for dist in dists:
            idx = targets(rng, dist, n, m)
            scale = 2.0 ** rng.integers(-4, 5, size=n + m)
            terms = (rng.standard_normal(n + m) * scale).astype(dtype)
            data, upd = terms[:m], terms[m:]
            exact = data.astype(np.float64)
            np.add.at(exact, idx, upd.astype(np.float64))
            largest = np.abs(data.astype(np.float64))
            np.maximum.at(largest, idx, np.abs(upd.astype(np.float64)))
            hit = np.zeros(m, bool)
            hit[idx] = True
            cells = []
            for order in ORDERS:
                out = dmlgpu.scatter_elements(data, idx, upd, reduction="add", order=order, device=dev)
                err = (np.abs(out.astype(np.float64) - exact) / largest)[hit]
                cells.append(f"{err.max():16.3e} {err.mean():16.3e}")
            print(f"{str(dtype):9} {dist:8} " + "  ".join(cells), flush=True)
    return 0
