"""Probe (issue 41, lavapipe's NumPy-in/out gather): what a row gather by transfer commands would cost on a CPU
device, one region copy per row (kp.OpCopyRegion, vkCmdCopyBuffer of one region each), against dmlgpu.take of the
same rows on device Tensors and NumPy's take.

    PYTHONPATH=. python bench/probes/region_copies.py [--rows 16384] [--row-bytes 256] [--table-mib 64]

Prints the per-row time of each (the region copies' first run records them; the median of the next runs is the
steady state). Checks the copied rows against NumPy.
"""
import argparse
import statistics
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--row-bytes", type=int, default=256)
    ap.add_argument("--table-mib", type=int, default=64)
    args = ap.parse_args()
    import dmlgpu
    from dmlgpu.runtime.discovery import kp
    words = args.row_bytes // 4
    rng = np.random.default_rng(0)
    table = rng.standard_normal(((args.table_mib << 20) // args.row_bytes, words), dtype=np.float32)
    ids = rng.integers(0, table.shape[0], args.rows)
    mgr = kp.Manager()
    src, dst = mgr.tensor(table.reshape(-1)), mgr.tensor(np.zeros(args.rows * words, np.float32))
    mgr.sequence().record(kp.OpTensorSyncDevice([src])).eval()
    ops = [kp.OpCopyRegion(src, dst, int(r) * args.row_bytes, i * args.row_bytes, args.row_bytes)
           for i, r in enumerate(ids)]
    seq = mgr.sequence()
    for op in ops:
        seq.record(op)
    runs = []
    for _ in range(6):
        t0 = time.perf_counter()
        seq.eval()
        runs.append(time.perf_counter() - t0)
    mgr.sequence().record(kp.OpTensorSyncLocal([dst])).eval()
    out = np.asarray(dst.data()).reshape(args.rows, words)
    ok = np.array_equal(out, table[ids])
    dev = dmlgpu.default_device()
    t_table, t_ids = dmlgpu.tensor(table, device=dev), dmlgpu.tensor(ids, device=dev)
    takes, nps = [], []
    for _ in range(6):
        t0 = time.perf_counter()
        dmlgpu.take(t_table, t_ids, axis=0)
        dev.synchronize()
        takes.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        np.take(table, ids, axis=0)
        nps.append(time.perf_counter() - t0)
    per = lambda ts: statistics.median(ts[1:]) / args.rows * 1e9    # noqa: E731
    print(f"{args.rows} rows of {args.row_bytes} B from a {args.table_mib} MiB table, ns per row (median of 5 runs):")
    print(f"  region copies (one vkCmdCopyBuffer each): first run {runs[0] / args.rows * 1e9:.0f}, then {per(runs):.0f}"
          f"  (checked: {ok})")
    print(f"  dmlgpu.take on device Tensors + synchronize: {per(takes):.0f}")
    print(f"  np.take: {per(nps):.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
