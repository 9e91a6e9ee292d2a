"""Probe (issue 53, item 2): what a native hit path saves. hit.hpp does a plain call template's hit (the small gather
of `bench latency`: 32 int64 rows of a [1024, 16] float32 Tensor) in one C call over dmlgpu's Python objects: the key
and the lookup, the hit's conditions, the result's block from the allocator, the kept ops appended, the result Tensor
made. This script builds it (g++ and the interpreter's headers: scripts/setup.sh installs both) into a temporary
directory and times, queued (no synchronize inside a timed block), each figure the best of 40 blocks of 300 calls, the
entries interleaved, as a multiple of np.take of the same rows in the same process:

- dmlgpu.gather (Python's hit), and the same with Buffer.__del__ replaced by hit.hpp's C method;
- the native hit, and the same with the C __del__;
- the native hit stopped after each of its stages (0: the key and the lookup; 1: the template, the device, its checks,
  the operands' buffers; 2: the queue and its lock; 3: the memory, the settings, the kept ops' generation; 4: the
  allocator's block; 5: the kept ops of these blocks, the batch), then whole: what each stage costs, the rest
  being the commit (the allocator's counters, the Buffer, the ops appended, the
  blocks marked, the Tensor) and the result's deallocation.

Every entry that should hit is checked to have hit (the count of native hits per entry is printed).

    DMLGPU_MAX_QUEUED=100000 PYTHONPATH=. python bench/probes/native_hit/run.py"""
import os
import pathlib
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np

import dmlgpu
from dmlgpu.api.tensor import Tensor
from dmlgpu.runtime.buffer import Buffer

here = pathlib.Path(__file__).resolve().parent
build = pathlib.Path(tempfile.mkdtemp(prefix="native_hit_"))
target = build / ("native_hit" + sysconfig.get_config_var("EXT_SUFFIX"))
subprocess.run([os.environ.get("CXX", "g++"), "-O2", "-shared", "-fPIC", "-std=c++17",
                "-I" + sysconfig.get_paths()["include"], str(here / "module.cpp"), "-o", str(target)], check=True)
sys.path.insert(0, str(build))
import native_hit  # noqa: E402

native_hit.hit_types(Tensor, Buffer)
py_release, c_release = Buffer.__del__, native_hit.hit_release(Buffer)
rng = np.random.default_rng(0)
table = rng.random((1024, 16), dtype=np.float32)
idx = rng.integers(0, 1024, 32).astype(np.int64)
t, i = dmlgpu.tensor(table), dmlgpu.tensor(idx)
for _ in range(10):
    dmlgpu.gather(t, i, axis=0)
rt = t._rt
rt.synchronize()
hit = native_hit.hit_gathered
r = hit("gather", t, i, 0, "clamp")
assert r is not None and np.array_equal(r.numpy(), table[idx]), "the native hit did not hit, or differs"
del r


def staged(k):
    def run():
        native_hit.hit_stop(k)
        start = time.perf_counter_ns()
        for _ in range(300):
            hit("gather", t, i, 0, "clamp")
        return time.perf_counter_ns() - start
    return run


def timed(fn):
    def run():
        start = time.perf_counter_ns()
        for _ in range(300):
            fn()
        return time.perf_counter_ns() - start
    return run


entries = {                         # name -> (Buffer.__del__, timed block, hits expected)
    "np.take": (py_release, timed(lambda: np.take(table, idx, axis=0)), False),
    "dmlgpu.gather": (py_release, timed(lambda: dmlgpu.gather(t, i, axis=0)), False),
    "dmlgpu.gather, C __del__": (c_release, timed(lambda: dmlgpu.gather(t, i, axis=0)), False),
    "native hit": (py_release, staged(99), True),
    "native hit, C __del__": (c_release, staged(99), True),
    **{f"native, stages 0-{k}": (py_release, staged(k + 1), False) for k in range(6)},
}
best = {k: float("inf") for k in entries}
hits = {k: 0 for k in entries}
for _ in range(40):
    for name, (release, run, _) in entries.items():
        Buffer.__del__ = release
        before = native_hit.hit_count()
        best[name] = min(best[name], run() / 300 / 1e3)
        hits[name] += native_hit.hit_count() - before
        Buffer.__del__ = py_release
        native_hit.hit_stop(99)
    rt.synchronize()
for name, (_, _, expected) in entries.items():
    assert (hits[name] == 40 * 300) == expected, f"{name}: {hits[name]} native hits"
    us = best[name]
    print(f"{name:26} {us:7.3f} us  {us / best['np.take']:5.2f}x np.take")
