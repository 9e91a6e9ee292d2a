"""Probe (issue 40): dmlgpu.tensor() of one int64 (host time), and a decode loop whose index Tensors are made at
every step (a one-row gather and an in-place one-row scatter_nd), per step. DMLGPU_DIRECT_MEMORY=0 stages as a
discrete GPU does. Run: python bench/probes/fresh_tensors.py"""
import time, statistics, numpy as np, dmlgpu
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
V, S = 4096, 1024
dtab = T(rng.standard_normal((V, 512)).astype(np.float16)); dcache = T(np.zeros((S, 4, 128), np.float16))
toks = rng.integers(0, V, 512)
def loop():
    for i in range(512):
        tok, pos = T(toks[i:i + 1]), T(np.array([[S - 512 + i]], np.int64))
        row = dmlgpu.gather(dtab, tok).reshape((1, 4, 128))
        dmlgpu.scatter_nd(dcache, pos, row, out=dcache)
    dev.synchronize()
loop(); loop()
pc = time.perf_counter_ns
def tens():
    xs = []
    for i in range(2000):
        t0 = pc(); t = T(toks[i % 512:i % 512 + 1]); xs.append(pc() - t0)
        if i % 64 == 63: dev.synchronize()
    return statistics.median(xs) / 1e3
print("dmlgpu.tensor(1 int64) host %.2f us" % tens())
t0 = time.perf_counter(); loop(); print("loop per step %.1f us" % ((time.perf_counter() - t0) / 512 * 1e6))
