"""Probe (issue 37): where order="fixed-point" spends its GPU time, pass by pass, beside PyTorch's atomics.

    PYTHONPATH=. python bench/probes/fixed_stages.py [--cases gradient,uniform64k,uniform1m,histogram]
                                                     [--repeats R] [--no-peer] [--scale K]

Each case runs in place (``out=`` its data Tensor, as a gradient accumulation does): the gradient case is
scatter_nd of 262,144 rows of 64 float32 with Zipf(1.1) row ids into [1M, 64]; uniform64k is scatter_elements
of 1M float32 onto 65,536 targets, uniform1m 16M onto 1M; histogram is int32 add (row-major) of 16M onto 1M.
For each: call + synchronize (first call of the process, then the median of R), and each Vulkan command's
timestamped GPU time (median of R replays of the recorded call: barriers and kernels listed in order).
PyTorch's in-place ``index_add_`` and ``scatter_add_`` (atomics) in a process of its own, each's first call,
median wall (call + synchronize) and CUDA-event time, where CUDA PyTorch is installed.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = {   # name: (update rows, targets, width, dtype, distribution, order)
    "gradient": (262144, 1 << 20, 64, "float32", "zipf", "fixed-point"),
    "gradient-uniform": (262144, 1 << 20, 64, "float32", "uniform", "fixed-point"),
    "uniform64k": (1 << 20, 65536, 1, "float32", "uniform", "fixed-point"),
    "uniform1m": (16 << 20, 1 << 20, 1, "float32", "uniform", "fixed-point"),
    "histogram": (16 << 20, 1 << 20, 1, "int32", "uniform", "row-major"),
}

PEER = r"""
import json, statistics, sys, time, numpy as np, torch
n, m, w, dtype, dist, repeats = sys.argv[1:7]
n, m, w, repeats = int(n), int(m), int(w), int(repeats)
rng = np.random.default_rng(0)
idx = rng.integers(0, m, size=n) if dist == "uniform" else (rng.zipf(1.1, size=n) - 1) % m
shape = (n, w) if w > 1 else (n,)
dt = getattr(torch, dtype)
u = (torch.rand(shape, device="cuda") * 2 - 1).to(dt) if dt.is_floating_point else torch.randint(0, 100, shape, device="cuda", dtype=dt)
d = torch.zeros((m, w) if w > 1 else (m,), device="cuda", dtype=dt)
i = torch.from_numpy(idx).cuda()
ii = i.view(-1, 1).expand(-1, w) if w > 1 else i
torch.cuda.synchronize()
out = {"torch": torch.__version__}
for name, fn in (("index_add_", lambda: d.index_add_(0, i, u)), ("scatter_add_", lambda: d.scatter_add_(0, ii, u))):
    t0 = time.perf_counter(); fn(); torch.cuda.synchronize(); first = time.perf_counter() - t0
    walls, gpus = [], []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter(); a.record(); fn(); b.record(); torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0); gpus.append(a.elapsed_time(b) * 1e-3)
    out[name] = {"first": first, "wall": statistics.median(walls), "gpu": statistics.median(gpus)}
print("RESULT " + json.dumps(out))
"""


def per_command(dev, call, repeats: int) -> list:
    """(label, median ns) of each Vulkan command of the recorded call, over ``repeats`` replays."""
    with dev.record(timestamps=True) as rec:
        call()
    labels = []
    for d in rec.dispatches():
        if d.barrier:
            labels.append("barrier")
        labels.append(d.kernel if isinstance(d.kernel, str) else "copy")
    runs = []
    for _ in range(repeats):
        rec.run()
        ts = rec.timestamps()
        runs.append([b - a for a, b in zip(ts, ts[1:])])
    width = min(map(len, runs))
    meds = [statistics.median(r[k] for r in runs) for k in range(width)]
    labels += ["(end)"] * (width - len(labels))
    return list(zip(labels[:width], meds))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--scale", type=int, default=1, help="divide every case's updates and targets by this")
    ap.add_argument("--by-span", type=float, default=None,
                    help="reduction_fixed.BY_SPAN: the last pass over the output's span up to this many times the "
                         "update elements")
    args = ap.parse_args()
    import dmlgpu
    from dmlgpu.plans import reduction_fixed
    if args.by_span is not None:
        reduction_fixed.BY_SPAN = args.by_span
    dev = dmlgpu.default_device()
    print(f"{dev.info.name}; PyTorch index_add_ and scatter_add_ in place (atomics) in its own process")
    for name in args.cases.split(","):
        n, m, w, dtype, dist, order = CASES[name]
        n, m = n // args.scale, m // args.scale
        rng = np.random.default_rng(0)
        idx = rng.integers(0, m, size=n) if dist == "uniform" else (rng.zipf(1.1, size=n) - 1) % m
        shape = (n, w) if w > 1 else (n,)
        if dtype == "int32":
            upd = rng.integers(0, 100, size=shape).astype(np.int32)
        else:
            upd = rng.uniform(-1, 1, size=shape).astype(dtype)
        data = dmlgpu.zeros((m, w) if w > 1 else (m,), dtype=dtype, device=dev)
        t_idx = dmlgpu.tensor(idx[:, None] if w > 1 else idx, device=dev)
        t_upd = dmlgpu.tensor(upd, device=dev)
        fn = dmlgpu.scatter_nd if w > 1 else dmlgpu.scatter_elements
        call = lambda: fn(data, t_idx, t_upd, reduction="add", order=order, out=data)  # noqa: E731
        dev.synchronize()
        t0 = time.perf_counter(); call(); dev.synchronize(); first = time.perf_counter() - t0
        walls = []
        for _ in range(args.repeats):
            t0 = time.perf_counter(); call(); dev.synchronize(); walls.append(time.perf_counter() - t0)
        cmds = per_command(dev, call, args.repeats)
        # a check against a float64 sum: the Tensor holds 2 + 2 R sums (first call, R calls, the recording's
        # own run and R replays)
        calls = 2 + 2 * args.repeats
        got = data.numpy().astype(np.float64)
        want = np.zeros_like(got)
        np.add.at(want, idx, upd.astype(np.float64))
        want *= calls
        err = np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))
        print(f"\n{name}: {n} x {w} {dtype} {dist} onto {m}, order={order}: first {first * 1e3:.3f} ms, "
              f"median call + sync {statistics.median(walls) * 1e3:.3f} ms, GPU {sum(t for _, t in cmds) / 1e6:.3f} "
              f"ms (relative max error {err:.1e})")
        for label, t in cmds:
            print(f"    {label:40} {t / 1e3:9.1f} us")
        if not args.no_peer:
            out = subprocess.run([sys.executable, "-c", PEER, str(n), str(m), str(w), dtype, dist, str(args.repeats)],
                                 capture_output=True, text=True)
            line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                print("    torch: " + (out.stderr.strip().splitlines() or ["no result"])[-1])
            else:
                r = json.loads(line[7:])
                for peer in ("index_add_", "scatter_add_"):
                    print(f"    torch {r['torch']} {peer}: first {r[peer]['first'] * 1e3:.3f} ms, median call + "
                          f"sync {r[peer]['wall'] * 1e3:.3f} ms, GPU {r[peer]['gpu'] * 1e3:.3f} ms")
        del data, t_idx, t_upd
    return 0


if __name__ == "__main__":
    sys.exit(main())
