"""Probe: host time, call+sync and GPU time of the issue-40 table's calls, in this process (Vulkan only unless --cuda)."""
import sys, time, statistics, cProfile, pstats, io, os, subprocess
import numpy as np, dmlgpu
cuda = "--cuda" in sys.argv
if cuda:
    import torch; torch.zeros(1, device="cuda"); torch.cuda.synchronize()
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
f16 = np.float16
def T(a): return dmlgpu.tensor(a, device=dev)
cases = {}
tab = T(rng.standard_normal((1024, 16), dtype=np.float32))
ids32 = T(rng.integers(0, 1024, 32).astype(np.int64))
cases["gather 32 rows x 64B"] = lambda: dmlgpu.gather(tab, ids32)
logits = T(rng.standard_normal((64, 151936), dtype=np.float32))
lab = T(rng.integers(0, 151936, (64, 50)).astype(np.int64))
cases["gather_elements 64x50"] = lambda: dmlgpu.gather_elements(logits, lab, axis=1)
cache = T(np.zeros((32768, 4096), f16))
kvi = T(rng.choice(32768, (256, 1), replace=False).astype(np.int64)); kvr = T(rng.standard_normal((256, 4096)).astype(f16))
cases["kv write 256 rows/256MiB"] = lambda: dmlgpu.scatter_nd(cache, kvi, kvr, out=cache)
emb = T(rng.standard_normal((32000, 4096)).astype(f16)); eids = T(rng.integers(0, 32000, 8192).astype(np.int64))
cases["embedding 8192x8KiB"] = lambda: dmlgpu.gather(emb, eids)
blocks = T(rng.standard_normal((4096, 16384)).astype(f16)); bt = T(rng.integers(0, 4096, (32, 64)).astype(np.int32))
cases["paged kv [32,64]x32KiB"] = lambda: dmlgpu.gather(blocks, bt)
pc = T(rng.standard_normal((8, 16384, 64), dtype=np.float32)); pci = T(rng.integers(0, 16384, (8, 16384, 1)).astype(np.int64))
cases["gather_nd bd=1 8x16k"] = lambda: dmlgpu.gather_nd(pc, pci, batch_dims=1)
tok = T(rng.standard_normal((32768, 2048), dtype=np.float32)); perm = T(rng.permutation(32768).astype(np.int64))
cases["moe dispatch 32k x 8KiB"] = lambda: dmlgpu.gather(tok, perm)
dev.synchronize()

def med(xs): return statistics.median(xs) * 1e6
rows = []
for name, fn in cases.items():
    t0 = time.perf_counter(); r = fn(); dev.synchronize(); first = (time.perf_counter() - t0) * 1e6
    for _ in range(5): fn(); dev.synchronize()
    host, wall = [], []
    for _ in range(60):
        t0 = time.perf_counter(); r = fn(); t1 = time.perf_counter(); dev.synchronize(); t2 = time.perf_counter()
        host.append(t1 - t0); wall.append(t2 - t0)
        del r
    with dev.record(timestamps=True) as rec:
        r = fn()
    gpu = []
    for _ in range(20):
        rec.run(); ts = rec.timestamps(); gpu.append((ts[-1] - ts[0]) / 1e9 if len(ts) > 1 else 0)
    rows.append((name, first, med(host), med(wall), med(gpu)))
print(f"{'call':28s} {'first':>8s} {'host':>7s} {'call+sync':>9s} {'gpu':>7s} {'wall-gpu':>8s}   cuda={cuda}")
for name, first, h, w, g in rows:
    print(f"{name:28s} {first:8.1f} {h:7.1f} {w:9.1f} {g:7.1f} {w - g:8.1f}")
if "--profile" in sys.argv:
    for name in ("moe dispatch 32k x 8KiB", "gather 32 rows x 64B"):
        fn = cases[name]
        pr = cProfile.Profile(); pr.enable()
        for _ in range(200):
            r = fn(); dev.synchronize(); del r
        pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
        print("== profile", name, "(200 x call+sync)"); print(s.getvalue()[-3500:])
