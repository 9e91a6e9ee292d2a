"""Probe (issue 49): the queued host time of small calls, for the cost of poison tracking (Device.taint).

    PYTHONPATH=. python bench/probes/poison.py

A take of 8 rows of 16 float32 by an int64 index Tensor with mode="clip" (no check: the fast path, one attribute
test) and mode="raise" (its own device check: its operands pass through taint()), and the raise take feeding an
in-place scatter_nd (its updates carry the take's pending check to the cache). Each: 16 calls timed, then
synchronize() (not timed), 2,000 calls; the 10th percentile of the per-call times (a machine shared with other
work spreads the median).
"""
import time

import numpy as np

import dmlgpu

dev = dmlgpu.default_device()
table = dmlgpu.tensor(np.arange(32 * 16, dtype=np.float32).reshape(32, 16))
ids = dmlgpu.tensor(np.arange(8, dtype=np.int64))
cache = dmlgpu.zeros((32, 16), np.float32)
rows = dmlgpu.tensor(np.arange(8, dtype=np.int64).reshape(8, 1))


def clip():
    dmlgpu.take(table, ids, axis=0, mode="clip")


def checked():
    dmlgpu.take(table, ids, axis=0)


def chain():
    dmlgpu.scatter_nd(cache, rows, dmlgpu.take(table, ids, axis=0), out=cache)


def timed(fn, n=2000, every=16):
    """The 10th percentile of a call's queued host time, in us, over n calls timed ``every`` at a time."""
    for _ in range(50):
        fn()
    dev.synchronize()
    per = []
    for _ in range(n // every):
        t0 = time.perf_counter()
        for _ in range(every):
            fn()
        per.append((time.perf_counter() - t0) / every)
        dev.synchronize()
    per.sort()
    return per[len(per) // 10] * 1e6


for name, fn in (("take clip", clip), ("take raise", checked), ("take raise into an in-place scatter_nd", chain)):
    print(f"{name}: {timed(fn):.2f} us", flush=True)
