"""Probe (issue 40, lavapipe or any device): a queued call's host time (median of 3,000, a synchronize every 50) for a
small gather, gather_elements and in-place scatter_nd. Run: python bench/probes/hostpath.py (PYTHONPATH=. for the tree)."""
import time, statistics, numpy as np, dmlgpu, sys
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
tab = T(rng.standard_normal((1024, 16), dtype=np.float32)); ids = T(rng.integers(0, 1024, 32).astype(np.int64))
lg = T(rng.standard_normal((64, 500), dtype=np.float32)); lab = T(rng.integers(0, 500, (64, 1)).astype(np.int64))
cache = T(np.zeros((256, 64), np.float16)); kvi = T(rng.choice(256, (16, 1), replace=False).astype(np.int64)); kvr = T(rng.standard_normal((16, 64)).astype(np.float16))
C = {"gather": lambda: dmlgpu.gather(tab, ids), "gather_elements": lambda: dmlgpu.gather_elements(lg, lab, axis=1),
     "scatter_nd in place": lambda: dmlgpu.scatter_nd(cache, kvi, kvr, out=cache)}
pc = time.perf_counter_ns
out = []
for name, fn in C.items():
    for _ in range(20): fn()
    dev.synchronize()
    xs = []
    for i in range(3000):
        t0 = pc(); fn(); xs.append(pc() - t0)
        if i % 50 == 49: dev.synchronize()
    dev.synchronize()
    out.append(f"{name} {statistics.median(xs)/1e3:.2f}")
print(" | ".join(out))
