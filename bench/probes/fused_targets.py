"""Probe (issue 51): the one-pass gather-and-reduce functions against their targets.

    PYTHONPATH=. python bench/probes/fused_targets.py [--repeats R] [--scale S]

1. segment_reduce "add" over 16M float32 in 1M sorted segments (16 rows each, CSR offsets), 1-d data: GPU time
   (Vulkan timestamps of the call recorded once, median of R replays) and call + synchronize (median of R),
   against the same device's copy of the data (Tensor.copy() recorded the same way: read + write) — the
   target is >= 90 % of the copy bandwidth of reading the data once (bytes: the data read + the sums written).
2. gather_scatter "add" with prepared EdgeGroups (1M edges, 100k nodes, rows of 128 float32) and
   embedding_bag "sum" ([1M, 128] float32 table, 65,536 bags of 20 Zipf ids): call + synchronize, and the peak
   device memory the call adds (Device.memory_stats' peak_allocated_bytes over the result's bytes), against the
   intermediate the unfused take + scatter would write.
Each result is checked against dmlgpu's unfused composition (take, then scatter_nd / segment sums) bit for bit.
Prints one line per case and a JSON line (``RESULT``).
"""
import argparse
import json
import statistics
import time

import numpy as np

import dmlgpu


def gpu_us(dev, fn, repeats):
    with dev.record(timestamps=True) as rec:
        fn()
    samples = []
    for _ in range(repeats):
        rec.run()
        dev.synchronize()
        ts = rec.timestamps()
        samples.append(ts[-1] - ts[0])          # (nanoseconds)
    return statistics.median(samples) / 1e3


def wall_us(dev, fn, repeats):
    fn()
    dev.synchronize()
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        dev.synchronize()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls) * 1e6


def zipf(rng, n, rows, a=1.1):
    ranks = rng.zipf(a, n) - 1
    return (ranks.astype(np.uint64) * np.uint64(2654435761) % np.uint64(rows)).astype(np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30, help="samples per figure (default 30)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every count (default 1)")
    args = ap.parse_args()
    dev = dmlgpu.default_device()
    rng = np.random.default_rng(0)
    out = {"device": dev.info.name}

    n, segs = int(16_000_000 * args.scale), int(1_000_000 * args.scale)
    data = dmlgpu.tensor(rng.integers(-4, 5, n).astype(np.float32), device=dev)
    offsets = dmlgpu.tensor(np.linspace(0, n, segs + 1).astype(np.int64), device=dev)
    got = dmlgpu.segment_reduce(data, offsets).numpy()
    host = data.numpy()
    want = np.add.reduceat(host, offsets.numpy()[:-1]) if n else host
    assert np.array_equal(got, want), "segment_reduce"
    seg_gpu = gpu_us(dev, lambda: dmlgpu.segment_reduce(data, offsets), args.repeats)
    seg_wall = wall_us(dev, lambda: dmlgpu.segment_reduce(data, offsets), args.repeats)
    copy_gpu = gpu_us(dev, lambda: data.copy(), args.repeats)
    seg_bytes, copy_bytes = data.nbytes + segs * 4 + offsets.nbytes, 2 * data.nbytes
    out["segment_reduce"] = {"gpu_us": seg_gpu, "wall_us": seg_wall, "GBps": seg_bytes / seg_gpu / 1e3,
                             "copy_gpu_us": copy_gpu, "copy_GBps": copy_bytes / copy_gpu / 1e3}
    print(f"segment_reduce add, {n} float32 in {segs} segments: GPU {seg_gpu:.1f} us ({seg_bytes / seg_gpu / 1e3:.0f} "
          f"GB/s, data + sums + offsets), call+sync {seg_wall:.1f} us; copy of the data: GPU {copy_gpu:.1f} us "
          f"({copy_bytes / copy_gpu / 1e3:.0f} GB/s read + written): {seg_bytes / seg_gpu / (copy_bytes / copy_gpu):.0%}")

    nodes, edges, width = int(100_000 * args.scale), int((1 << 20) * args.scale), 128
    src, dst = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    xs = rng.integers(-4, 5, (nodes, width)).astype(np.float32)
    with dmlgpu.Device() as fresh:             # (a Device of its own: its allocator's peak is this call's)
        fx = dmlgpu.tensor(xs, device=fresh)
        fgroups = dmlgpu.EdgeGroups(src, dst, nodes, device=fresh)
        fresh.synchronize()
        base = fresh.memory_stats()["allocated_bytes"]
        fused = dmlgpu.gather_scatter(fx, fgroups).numpy()
        peak = fresh.memory_stats()["peak_allocated_bytes"] - base
    x = dmlgpu.tensor(xs, device=dev)
    groups = dmlgpu.EdgeGroups(src, dst, nodes, device=dev)
    unfused = dmlgpu.scatter_nd(dmlgpu.zeros((nodes, width), np.float32, device=dev),
                                dmlgpu.tensor(dst[:, None], device=dev),
                                dmlgpu.take(x, dmlgpu.tensor(src, device=dev), axis=0), reduction="add").numpy()
    assert np.array_equal(fused, unfused), "gather_scatter"
    mp_wall = wall_us(dev, lambda: dmlgpu.gather_scatter(x, groups), args.repeats)
    out["gather_scatter"] = {"wall_us": mp_wall, "peak_added_bytes": peak, "result_bytes": nodes * width * 4,
                             "intermediate_bytes": edges * width * 4}
    print(f"gather_scatter add (EdgeGroups), {edges} edges onto {nodes} nodes x {width} float32: call+sync "
          f"{mp_wall:.1f} us; peak device memory added {peak / 2**20:.1f} MiB (result {nodes * width * 4 / 2**20:.1f} "
          f"MiB; the unfused intermediate would be {edges * width * 4 / 2**20:.1f} MiB)")

    rows, bags, per = int((1 << 20) * args.scale), int(65536 * args.scale), 20
    table = dmlgpu.tensor(rng.integers(-4, 5, (rows, width)).astype(np.float32), device=dev)
    ids = dmlgpu.tensor(zipf(rng, bags * per, rows), device=dev)
    offs = dmlgpu.tensor(np.arange(bags, dtype=np.int64) * per, device=dev)
    eb = dmlgpu.embedding_bag(table, ids, offs).numpy()
    ref = dmlgpu.take(table, ids, axis=0).numpy().reshape(bags, per, width)
    acc = ref[:, 0].copy()
    for j in range(1, per):
        acc = acc + ref[:, j]
    assert np.array_equal(eb, acc), "embedding_bag"
    eb_wall = wall_us(dev, lambda: dmlgpu.embedding_bag(table, ids, offs), args.repeats)
    out["embedding_bag"] = {"wall_us": eb_wall}
    print(f"embedding_bag sum, [{rows}, {width}] float32, {bags} bags of {per} Zipf ids: call+sync {eb_wall:.1f} us")
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
