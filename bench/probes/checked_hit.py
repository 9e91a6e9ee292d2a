"""Probe: the queued host time of a call template's hit whose ids the device checks (embedding_bag on Tensors: its
template queues the device's check of the ids with the bag kernel), against np.take of 8 rows in the same process:
blocks of 200 queued calls, then synchronize (outside the timing), the best of 20 blocks.

    DMLGPU_MAX_QUEUED=100000 PYTHONPATH=. python bench/probes/checked_hit.py"""
import time

import numpy as np

import dmlgpu

rng = np.random.default_rng(0)
table = rng.standard_normal((1000, 16)).astype(np.float32)
ids = rng.integers(0, 1000, 64).astype(np.int64)
t, i = dmlgpu.tensor(table), dmlgpu.tensor(ids)
offsets = dmlgpu.tensor(np.arange(8, dtype=np.int64) * 8)
device = t.device
for _ in range(5):
    dmlgpu.embedding_bag(t, i, offsets)
device.synchronize()
best_bag = best_take = float("inf")
rows = ids[:8]
for _ in range(20):
    start = time.perf_counter_ns()
    for _ in range(200):
        dmlgpu.embedding_bag(t, i, offsets)
    best_bag = min(best_bag, (time.perf_counter_ns() - start) / 200 / 1e3)
    device.synchronize()
    start = time.perf_counter_ns()
    for _ in range(200):
        np.take(table, rows, axis=0)
    best_take = min(best_take, (time.perf_counter_ns() - start) / 200 / 1e3)
print(f"embedding_bag queued {best_bag:.2f} us, np.take {best_take:.2f} us, {best_bag / best_take:.2f}x np.take")
