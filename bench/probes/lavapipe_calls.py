"""Probe (lavapipe, issue 40): 3,000 queued small calls then synchronize, per call, against NumPy on the same machine;
a synchronized in-place write of 16 rows into a 32 MiB Tensor; a small gather + synchronize; a queued call's host time."""
import time, numpy as np, dmlgpu, sys
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
table = rng.standard_normal((1024, 16), dtype=np.float32)   # 64 B rows
idx = rng.integers(0, 1024, 32).astype(np.int64)
tt = dmlgpu.tensor(table, device=dev); it = dmlgpu.tensor(idx, device=dev)
upd = rng.standard_normal((32, 16), dtype=np.float32); ut = dmlgpu.tensor(upd, device=dev)
rows = dmlgpu.tensor(idx.reshape(32, 1), device=dev)
def per_call(fn, n):
    fn(); dev.synchronize()
    t0 = time.perf_counter()
    for _ in range(n): fn()
    dev.synchronize()
    return (time.perf_counter() - t0) / n * 1e6
def np_time(fn, n=20000):
    fn(); t0 = time.perf_counter()
    for _ in range(n): fn()
    return (time.perf_counter() - t0) / n * 1e6
g = per_call(lambda: dmlgpu.gather(tt, it), N)
gn = np_time(lambda: np.take(table, idx, axis=0))
s = per_call(lambda: dmlgpu.scatter_nd(tt, rows, ut), N)
def np_sc():
    c = table.copy(); c[idx] = upd
sn = np_time(np_sc, 3000)
print(f"gather {g:.1f} us/call, numpy {gn:.2f} us -> {g/gn:.1f}x")
print(f"scatter_nd copy {s:.1f} us/call, numpy {sn:.2f} us -> {s/sn:.1f}x")
big = dmlgpu.zeros((32 << 20) // 64, np.float32, device=dev).reshape(-1, 16)
r16 = dmlgpu.tensor(rng.integers(0, big.shape[0], (16, 1)).astype(np.int64), device=dev)
u16 = dmlgpu.tensor(rng.standard_normal((16, 16), dtype=np.float32), device=dev)
def inplace():
    dmlgpu.scatter_nd(big, r16, u16, out=big); dev.synchronize()
for _ in range(20): inplace()
ts = []
for _ in range(200):
    t0 = time.perf_counter(); inplace(); ts.append(time.perf_counter() - t0)
print(f"in-place write 16 rows into 32 MiB + sync: median {np.median(ts)*1e6:.1f} us")
ts = []
for _ in range(300):
    t0 = time.perf_counter(); dmlgpu.gather(tt, it); dev.synchronize(); ts.append(time.perf_counter() - t0)
print(f"small gather + sync: median {np.median(ts)*1e6:.1f} us")
ts = []
for _ in range(300):
    t0 = time.perf_counter(); dmlgpu.gather(tt, it); ts.append(time.perf_counter() - t0)
dev.synchronize()
print(f"small gather queued (host): median {np.median(ts)*1e6:.1f} us")
