"""Probe (issue 48): what a Tensor indexing spelling costs against the function call it stands for.

    PYTHONPATH=. python bench/probes/indexing_cost.py [--repeats R]

For each pair (the spelling, then the call it is: ``t[ids]`` / ``take(t, ids, axis=0)``, ``t[ids] = v`` /
``scatter_nd(t, ids[:, None], v, out=t, mode="raise")``, ``np.add.at(t, ids, v)`` / ``scatter_nd(...,
reduction="add", out=t, mode="raise")``, with ids as a NumPy array and as a Tensor; and ``t[r, c]`` /
``gather_nd``), on a [4096, 16] float32 table and 32 ids: the queued call's host time (median over R rounds
of 16 calls, a synchronize after each round, not timed) and call + synchronize (median of R), in this process;
``np.take`` of the same rows on the host beside them. Each spelling's result is checked against its call's
bit for bit. Prints one line per row and a JSON line (``RESULT``) with every figure in microseconds.
"""
import argparse
import json
import statistics
import time

import numpy as np

import dmlgpu


def queued(dev, fn, repeats):
    per = []
    for _ in range(repeats):
        dev.synchronize()
        t0 = time.perf_counter()
        for _ in range(16):
            fn()
        per.append((time.perf_counter() - t0) / 16)
    dev.synchronize()
    return statistics.median(per) * 1e6


def synced(dev, fn, repeats):
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        dev.synchronize()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=200, help="rounds per figure (default 200)")
    args = ap.parse_args()
    dev = dmlgpu.default_device()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4096, 16)).astype(np.float32)
    hids = rng.integers(0, 4096, 32)
    cols = rng.integers(0, 16, 32)
    t = dmlgpu.tensor(a, device=dev)
    tids = dmlgpu.tensor(hids, device=dev)
    tids2 = tids.reshape(32, 1)
    v = dmlgpu.tensor(rng.standard_normal((32, 16)).astype(np.float32), device=dev)
    pairs = [
        ("t[ids] (NumPy ids)", lambda: t[hids], lambda: dmlgpu.take(t, hids, axis=0)),
        ("t[ids] (Tensor ids)", lambda: t[tids], lambda: dmlgpu.take(t, tids, axis=0)),
        ("t[r, c] (NumPy ids)", lambda: t[hids, cols], lambda: dmlgpu.gather_nd(t, np.stack([hids, cols], 1),
                                                                                mode="raise")),
        ("t[ids] = v (NumPy ids)", lambda: t.__setitem__(hids, v),
         lambda: dmlgpu.scatter_nd(t, hids[:, None], v, out=t, mode="raise")),
        ("t[ids] = v (Tensor ids)", lambda: t.__setitem__(tids, v),
         lambda: dmlgpu.scatter_nd(t, tids2, v, out=t, mode="raise")),
        ("np.add.at(t, ids, v) (NumPy ids)", lambda: np.add.at(t, hids, v),
         lambda: dmlgpu.scatter_nd(t, hids[:, None], v, reduction="add", out=t, mode="raise")),
    ]
    host = min(timeit_np(a, hids) for _ in range(3))
    rows = {"np.take (host)": host}
    print(f"device: {dev.info.name}; np.take of the same rows on the host: {host:.2f} us")
    print(f"{'spelling / call':40s} {'queued us':>10s} {'call us':>10s} {'sync us':>10s} {'call sync':>10s}")
    for name, spelled, call in pairs:
        r0, r1 = spelled(), call()
        if r0 is not None:
            assert np.array_equal(r0.numpy().view(np.uint32), r1.numpy().view(np.uint32)), name
        q0, q1 = queued(dev, spelled, args.repeats), queued(dev, call, args.repeats)
        s0, s1 = synced(dev, spelled, args.repeats), synced(dev, call, args.repeats)
        rows[name] = {"queued": q0, "call_queued": q1, "synced": s0, "call_synced": s1}
        print(f"{name:40s} {q0:10.1f} {q1:10.1f} {s0:10.1f} {s1:10.1f}")
    print("RESULT " + json.dumps({"device": dev.info.name, "rows": rows}))


def timeit_np(a, ids):
    t0 = time.perf_counter()
    for _ in range(2000):
        np.take(a, ids, axis=0)
    return (time.perf_counter() - t0) / 2000 * 1e6


if __name__ == "__main__":
    main()
