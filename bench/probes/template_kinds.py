"""Probe: the queued host time of call templates' hits of each kind (issue 53), against np.take of 32 rows in the same
process: a small gather; a gather from a table held in 8 blocks (a second Device, with chunk_bytes=1 MiB: the
large-tensor launches, whose parameters list the blocks); on the default device, 256 rows of [32, 128] float16 written
into a [4096, 32, 128] cache: scatter_nd in place (out=), cache[pos] = rows on a Tensor's positions (NumPy's rule: the
device's check guards the write), np.add.at on the same. Best of 10 blocks of 20 queued calls, each block then
synchronized (outside the timing).

    DMLGPU_MAX_QUEUED=100000 PYTHONPATH=. python bench/probes/template_kinds.py"""
import time

import numpy as np

import dmlgpu

rng = np.random.default_rng(0)
dev, chunked = dmlgpu.default_device(), dmlgpu.Device(0, chunk_bytes=1 << 20)
host = rng.random((65536, 32), dtype=np.float32)                   # 8 MiB: 8 blocks
big, small = dmlgpu.tensor(host, device=chunked), dmlgpu.tensor(host[:4096], device=dev)
ids = rng.integers(0, 4096, 512).astype(np.int64)
ids_big, ids = dmlgpu.tensor(ids, device=chunked), dmlgpu.tensor(ids, device=dev)
cache = dmlgpu.tensor(rng.random((4096, 32, 128)).astype(np.float16), device=dev)
slots = rng.choice(4096, 256, replace=False).astype(np.int64)
pos, pos2 = dmlgpu.tensor(slots, device=dev), dmlgpu.tensor(slots[:, None], device=dev)
rows = dmlgpu.tensor(rng.random((256, 32, 128)).astype(np.float16), device=dev)
assert big.buffer.chunked and not small.buffer.chunked
take_rows = slots[:32] % 4096


def setitem():
    cache[pos] = rows


entries = {
    "np.take": lambda: np.take(host, take_rows, axis=0),
    "gather": lambda: dmlgpu.gather(small, ids),
    "gather, table in 8 blocks": lambda: dmlgpu.gather(big, ids_big),
    "scatter_nd(out=)": lambda: dmlgpu.scatter_nd(cache, pos2, rows, out=cache),
    "t[ids] = rows": setitem,
    "np.add.at": lambda: np.add.at(cache, pos, rows),
}
for fn in entries.values():
    for _ in range(5):
        fn()
dev.synchronize()
chunked.synchronize()
best = {name: float("inf") for name in entries}
for _ in range(10):
    for name, fn in entries.items():
        start = time.perf_counter_ns()
        for _ in range(20):
            fn()
        best[name] = min(best[name], (time.perf_counter_ns() - start) / 20 / 1e3)
        dev.synchronize()
        chunked.synchronize()
for name, us in best.items():
    print(f"{name:28} {us:8.2f} us  {us / best['np.take']:6.2f}x np.take")
