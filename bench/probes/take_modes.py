"""Probe (issue 41): NumPy's take modes on device Tensors, Tensor indices never read back.

    PYTHONPATH=. python bench/probes/take_modes.py [--n N] [--repeats R] [--no-peer]

A permutation of N float32 (default 64M) by an int64 permutation Tensor of N elements: dmlgpu.take with
mode="raise" (checked on the device), "wrap" and "clip", and dmlgpu.gather's default clamp, each timed as call +
synchronize() (first call of the process, then the median of R) in this process, which has no CUDA context
unless dmlgpu's clock hold made one; GPU time (Vulkan timestamps, median of R replays) beside it; and a small
gather (32 rows of 64 B) in clamp and raise modes, for the check's fixed cost (call + synchronize, the queued
call's host time alone: median of 2,000, a synchronize every 16; and 16 queued calls then synchronize, per call:
median of 100). PyTorch's
x[p] in a fresh process of its own (first call, median call + synchronize, median CUDA-event time), where CUDA
PyTorch is installed (not with --no-peer). Results are checked against NumPy on a sample of positions.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

PEER = r"""
import json, statistics, sys, time, torch
n, repeats = int(sys.argv[1]), int(sys.argv[2])
g = torch.Generator().manual_seed(0)
x = torch.randn(n, device="cuda")
p = torch.randperm(n, generator=g).cuda()
torch.cuda.synchronize()
t0 = time.perf_counter(); y = x[p]; torch.cuda.synchronize(); first = time.perf_counter() - t0
walls, gpus = [], []
for _ in range(repeats):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter(); a.record(); y = x[p]; b.record(); torch.cuda.synchronize()
    walls.append(time.perf_counter() - t0); gpus.append(a.elapsed_time(b) * 1e-3)
print("RESULT " + json.dumps({"first": first, "wall": statistics.median(walls), "gpu": statistics.median(gpus),
                              "torch": torch.__version__}))
"""


def raise_gpu(dev, fn, repeats: int) -> list:
    """GPU seconds (Vulkan timestamps, first to last) of a mode="raise" call's launches that hold its gather
    (IndexCheck.clearing's and the gather's; the report's one-invocation launch after them is not counted),
    caught from its planned path (the call templates dropped first), replayed ``repeats`` times."""
    from dmlgpu.bench.gpu_timing import time_dispatches
    from dmlgpu.runtime.launch import Launch
    caught, run = [], Launch.run

    def spy(self, dispatches, *a, **k):
        if any(d.kernel.startswith("gather") for d in dispatches):
            caught.append(list(dispatches))
        return run(self, dispatches, *a, **k)

    dev.templates.clear()
    Launch.run = spy
    try:
        fn()
        dev.synchronize()
    finally:
        Launch.run = run
    return [t * 1e-9 for t in time_dispatches(dev, caught[-1], repeats).samples_ns] if caught else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=64 << 20)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--no-peer", action="store_true", help="no PyTorch process")
    args = ap.parse_args()
    import dmlgpu
    dev = dmlgpu.default_device()
    rng = np.random.default_rng(0)
    xh = rng.standard_normal(args.n, dtype=np.float32)
    ph = rng.permutation(args.n).astype(np.int64)
    x, p = dmlgpu.tensor(xh, device=dev), dmlgpu.tensor(ph, device=dev)
    dev.synchronize()
    sample = rng.integers(0, args.n, 4096)
    small = dmlgpu.tensor(rng.standard_normal((1024, 16), dtype=np.float32), device=dev)
    small_ids = dmlgpu.tensor(rng.integers(0, 1024, 32).astype(np.int64), device=dev)
    calls = {"gather clamp": lambda: dmlgpu.gather(x, p),
             "take raise": lambda: dmlgpu.take(x, p),
             "take wrap": lambda: dmlgpu.take(x, p, mode="wrap"),
             "take clip": lambda: dmlgpu.take(x, p, mode="clip"),
             "small clamp": lambda: dmlgpu.gather(small, small_ids, axis=0),
             "small raise": lambda: dmlgpu.take(small, small_ids, axis=0)}
    print(f"{dev.info.name}; n = {args.n}; clock hold: {dev.clock_hold.state}", flush=True)
    rows = {}
    for name, fn in calls.items():
        t0 = time.perf_counter()
        y = fn()
        dev.synchronize()
        first = time.perf_counter() - t0
        ok = np.array_equal(y.numpy()[sample], xh[ph[sample]]) if not name.startswith("small") else \
            np.array_equal(y.numpy(), small.numpy()[small_ids.numpy()])
        walls = []
        for _ in range(args.repeats):
            del y
            t0 = time.perf_counter()
            y = fn()
            dev.synchronize()
            walls.append(time.perf_counter() - t0)
        gpus = []
        if "raise" not in name:
            with dev.record(timestamps=True) as rec:
                fn()
            for _ in range(args.repeats):
                rec.run()
                ts = rec.timestamps()
                gpus.append((ts[-1] - ts[0]) * 1e-9)
            del rec
        else:       # mode="raise" on Tensor indices cannot be recorded: its launches (the report word cleared,
            gpus = raise_gpu(dev, fn, args.repeats)     # the gather that checks) replayed, as gpu_timing does
        del y
        hosts = []                      # small calls: the queued call alone (a synchronize every 16 calls)
        for i in range(2000 if name.startswith("small") else 0):
            t0 = time.perf_counter()
            fn()
            hosts.append(time.perf_counter() - t0)
            if i % 16 == 15:
                dev.synchronize()
        dev.synchronize()
        batches = []                    # small calls: 16 queued calls then synchronize, per call
        for _ in range(100 if name.startswith("small") else 0):
            t0 = time.perf_counter()
            for _ in range(16):
                fn()
            dev.synchronize()
            batches.append((time.perf_counter() - t0) / 16)
        rows[name] = dict(first=first, wall=statistics.median(walls), gpu=statistics.median(gpus) if gpus else 0.0,
                          checked=ok, host=statistics.median(hosts) if hosts else 0.0,
                          batch=statistics.median(batches) if batches else 0.0)
    peer = None
    try:
        if args.no_peer:
            raise OSError("--no-peer")
        done = subprocess.run([sys.executable, "-c", PEER, str(args.n), str(args.repeats)], capture_output=True,
                              text=True, timeout=300)
        peer = next((json.loads(l[7:]) for l in done.stdout.splitlines() if l.startswith("RESULT ")), None)
        if peer is None:
            print("(no PyTorch result:", done.stderr.strip()[-300:], ")")
    except (OSError, subprocess.TimeoutExpired) as e:
        print("(no PyTorch result:", e, ")")
    clamp = rows["gather clamp"]["wall"]
    print(f"{'call':14s} {'first ms':>9s} {'call+sync ms':>12s} {'GPU ms':>8s} {'vs clamp':>8s} {'x[p] / it':>9s} checked"
          f"  queued host us, 16 calls + sync per call us")
    for name, r in rows.items():
        base = rows["small clamp"]["wall"] if name.startswith("small") else clamp
        vs_peer = f"{peer['wall'] / r['wall']:.2f}x" if peer and not name.startswith("small") else "-"
        print(f"{name:14s} {r['first'] * 1e3:9.3f} {r['wall'] * 1e3:12.3f} {r['gpu'] * 1e3:8.3f} "
              f"{r['wall'] / base:8.3f} {vs_peer:>9s} {str(r['checked']):7s}" +
              (f"  {r['host'] * 1e6:.1f}, {r['batch'] * 1e6:.1f}" if r["host"] else ""))
    if peer:
        print(f"{'torch x[p]':14s} {peer['first'] * 1e3:9.3f} {peer['wall'] * 1e3:12.3f} {peer['gpu'] * 1e3:8.3f}"
              f"   (PyTorch {peer['torch']}, its own process)")
    return 0 if all(r["checked"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
