"""What a user's eager calls cost end to end (``python -m dmlgpu bench roundtrip``):

* NumPy in, NumPy out: ``dmlgpu.gather(table, ids)`` on host arrays (upload table and ids, gather, download)
  against the peer's equivalent round trip: PyTorch ``torch.from_numpy(t).cuda()``, ``index_select``,
  ``.cpu()`` on pageable memory; NumPy's ``take`` where there is no CUDA. Wall time of the first call and the
  median of the next ones.
* The first operation in a new process: a fresh interpreter imports dmlgpu, opens the default device and
  runs one small gather, twice (the second finds the pipeline cache the first wrote); milliseconds of each
  step.
* Memory under mixed eager calls: ``calls`` gathers on device Tensors with outputs from 4 KiB to 64 MiB (the
  sizes cycle), recording the allocator's reserved bytes and the process's resident memory after the first
  hundred and at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

import numpy as np

import dmlgpu

from .clock import host_samples
from .command import DEVICE_HELP, open_device, parser

MIB = 1 << 20


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def gather_round_trip(device, table_bytes: int, out_bytes: int, row_bytes: int, repeats: int, seed: int = 0) -> dict:
    """NumPy-in/NumPy-out gather of ``out_bytes`` of rows (``row_bytes`` each) from a ``table_bytes`` table."""
    rng = np.random.default_rng(seed)
    width = row_bytes // 4
    rows = table_bytes // row_bytes
    table = rng.standard_normal((rows, width), dtype=np.float32)
    ids = rng.integers(0, rows, out_bytes // row_bytes, dtype=np.int64)
    expected = np.take(table, ids, axis=0)

    def dml():
        return dmlgpu.gather(table, ids, device=device)

    start = time.perf_counter()
    got = dml()
    first = time.perf_counter() - start
    ok = np.array_equal(got, expected)
    del got
    samples = host_samples(dml, repeats, 30.0, min_iters=3)
    row = {"table_bytes": table.nbytes, "out_bytes": expected.nbytes, "row_bytes": row_bytes, "verified": ok,
           "dmlgpu": {"first_ms": first * 1e3, "median_ms": statistics.median(samples) * 1e3}}
    torch = _torch()
    if torch is not None:
        def peer():
            t = torch.from_numpy(table).cuda()
            i = torch.from_numpy(ids).cuda()
            return t.index_select(0, i).cpu().numpy()
        start = time.perf_counter()
        res = peer()
        torch.cuda.synchronize()
        pfirst = time.perf_counter() - start
        row["peer_verified"] = bool(np.array_equal(res, expected))
        del res
        psamples = host_samples(peer, repeats, 30.0, min_iters=3)
        row["peer"] = {"name": "torch (from_numpy().cuda(), index_select, .cpu(); pageable)",
                       "first_ms": pfirst * 1e3, "median_ms": statistics.median(psamples) * 1e3}
    else:
        nsamples = host_samples(lambda: np.take(table, ids, axis=0), repeats, 30.0, min_iters=3)
        row["peer"] = {"name": "numpy.take", "median_ms": statistics.median(nsamples) * 1e3}
    row["ratio"] = row["peer"]["median_ms"] / row["dmlgpu"]["median_ms"]
    return row


_FIRST_CALL = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import numpy as np, dmlgpu
    t1 = time.perf_counter()
    dev = dmlgpu.default_device()
    t2 = time.perf_counter()
    out = dmlgpu.gather(np.arange(12, dtype=np.float32).reshape(4, 3), np.array([3, 1]))
    t3 = time.perf_counter()
    out = dmlgpu.gather(np.arange(12, dtype=np.float32).reshape(4, 3), np.array([2, 0]))
    t4 = time.perf_counter()
    assert out.tolist() == [[6, 7, 8], [0, 1, 2]]
    print({"import_ms": (t1 - t0) * 1e3, "open_ms": (t2 - t1) * 1e3, "first_gather_ms": (t3 - t2) * 1e3,
           "second_gather_ms": (t4 - t3) * 1e3, "pipelines": dev.memory_stats()["pipelines"]})
""")


def first_call(cache_dir: str) -> dict:
    """Two fresh processes sharing a pipeline cache directory: cold (empty) and warm."""
    env = dict(os.environ, DMLGPU_CACHE_DIR=cache_dir)
    out = {}
    for name in ("cold_cache", "warm_cache"):
        r = subprocess.run([sys.executable, "-c", _FIRST_CALL], capture_output=True, text=True, env=env, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        out[name] = eval(r.stdout.strip().splitlines()[-1])   # the dict printed above
    return out


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MIB


def mixed_calls(device, calls: int, largest: int = 64 * MIB) -> dict:
    """Device and host memory over ``calls`` eager gathers on Tensors with outputs of 4 KiB .. ``largest``,
    each mark after a synchronize (queued calls hold their buffers until their batch has run); ``seconds``: the
    calls and the synchronizes, so the GPU's work is in it (before issue 19 it timed the queued calls only)."""
    sizes = [4 << 10]
    while sizes[-1] * 4 <= largest:
        sizes.append(sizes[-1] * 4)
    table = dmlgpu.tensor(np.random.default_rng(0).standard_normal((4096, 256), dtype=np.float32), device=device)
    ids = {n: dmlgpu.tensor(np.random.default_rng(n).integers(0, 4096, n // 1024, dtype=np.int64), device=device)
           for n in sizes}
    marks = {}
    start = time.perf_counter()
    for i in range(calls):
        out = dmlgpu.gather(table, ids[sizes[i % len(sizes)]])
        del out
        if i + 1 in (100, calls):
            device.synchronize()
            marks[i + 1] = {"reserved_bytes": device.memory_stats()["reserved_bytes"], "rss_mib": _rss_mib()}
    return {"calls": calls, "sizes": sizes, "seconds": time.perf_counter() - start, "after": marks,
            "stats": device.memory_stats()}


def main(argv=None) -> int:
    ap = parser("python -m dmlgpu bench roundtrip", __doc__)
    ap.add_argument("--device", type=int, default=None, help=DEVICE_HELP)
    ap.add_argument("--cases", default=None,
                    help="comma-separated table:out:row sizes, each in MiB (a row of 1 KiB: 0.0009765625); "
                         "default: by device")
    ap.add_argument("--repeats", type=int, default=10, help="timed round trips per case (default 10)")
    ap.add_argument("--calls", type=int, default=10_000,
                    help="mixed eager calls for the memory check (default 10000; 1000 at most on CPU devices)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    dev = open_device(ap, args.device)
    gpu = dev.info.type == "discrete GPU"
    if args.cases:
        cases = [tuple(int(float(v) * MIB) for v in c.split(":")) for c in args.cases.split(",")]
    elif gpu:
        cases = [(1024 * MIB, 256 * MIB, 4096), (64 * MIB, 64 * MIB, 1024)]
    else:   # the demo's gather: 65,536 rows of 1 KiB from a 64 MiB table
        cases = [(64 * MIB, 64 * MIB, 1024), (16 * MIB, 4 * MIB, 256)]
    results = {"device": dev.info.name, "round_trips": [], "first_call": None, "memory": None}
    for table_bytes, out_bytes, row_bytes in cases:
        r = gather_round_trip(dev, table_bytes, out_bytes, row_bytes, args.repeats)
        results["round_trips"].append(r)
        print(f"gather {table_bytes / MIB:.0f} MiB table -> {out_bytes / MIB:.0f} MiB out, rows of {row_bytes} B: "
              f"dmlgpu first {r['dmlgpu']['first_ms']:.1f} ms, median {r['dmlgpu']['median_ms']:.1f} ms; "
              f"{r['peer']['name']} median {r['peer']['median_ms']:.1f} ms; peer/dmlgpu {r['ratio']:.2f}x"
              f"{'' if r['verified'] else '  MISMATCH'}", flush=True)
    import tempfile
    with tempfile.TemporaryDirectory() as cache:
        results["first_call"] = fc = first_call(cache)
    for name, v in fc.items():
        print(f"new process, {name}: import {v['import_ms']:.1f} ms, open device {v['open_ms']:.1f} ms, "
              f"first gather {v['first_gather_ms']:.2f} ms, second {v['second_gather_ms']:.2f} ms", flush=True)
    results["memory"] = m = mixed_calls(dev, args.calls if gpu else min(args.calls, 1000),
                                        64 * MIB if gpu else 16 * MIB)
    a, b = m["after"][100], m["after"][m["calls"]]
    print(f"{m['calls']} mixed eager gathers ({m['seconds']:.1f} s, the calls and a synchronize): reserved device "
          f"memory after 100 calls "
          f"{a['reserved_bytes'] / MIB:.1f} MiB, at the end {b['reserved_bytes'] / MIB:.1f} MiB; resident host "
          f"memory {a['rss_mib']:.0f} -> {b['rss_mib']:.0f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


