"""Probe (issue 40): PyTorch's side of bench/probes/overhead.py's cases, in a process of its own: the queued
call's host time, call + torch.cuda.synchronize(), and GPU time (CUDA events), medians.
Run: python3 bench/probes/overhead_torch.py"""
import statistics, time
import numpy as np, torch
d = "cuda"
rng = np.random.default_rng(0)
T = lambda a: torch.from_numpy(a).to(d)
C = {}
tab = T(rng.standard_normal((1024, 16), dtype=np.float32)); ids = T(rng.integers(0, 1024, 32).astype(np.int64))
C["small"] = lambda: tab.index_select(0, ids)
lg = T(rng.standard_normal((8192, 32000), dtype=np.float32)); lab = T(rng.integers(0, 32000, (8192, 1)).astype(np.int64))
C["label"] = lambda: torch.gather(lg, 1, lab)
tk = T(rng.standard_normal((64, 151936), dtype=np.float32))
tki = T(np.stack([rng.choice(151936, 50, replace=False) for _ in range(64)]).astype(np.int64))
C["topk"] = lambda: torch.gather(tk, 1, tki)
emb = T(rng.standard_normal((151936, 4096)).astype(np.float16)); eids = T(rng.integers(0, 151936, 8192).astype(np.int64))
C["embedding"] = lambda: torch.nn.functional.embedding(eids, emb)
pc = T(rng.standard_normal((8, 65536, 64), dtype=np.float32)); pci = T(rng.integers(0, 65536, (8, 16384, 1)).astype(np.int64))
C["pointcloud"] = lambda: pc.gather(1, pci.expand(-1, -1, 64))
cache = T(np.zeros((32768, 4096), np.float16))
kvi = T(rng.choice(32768, 256, replace=False).astype(np.int64)); kvr = T(rng.standard_normal((256, 4096)).astype(np.float16))
C["kvwrite"] = lambda: cache.index_copy_(0, kvi, kvr)
tok = T(rng.standard_normal((32768, 2048), dtype=np.float32)); perm = T(rng.permutation(32768).astype(np.int64))
C["moe"] = lambda: tok[perm]
torch.cuda.synchronize()
med = lambda xs: statistics.median(xs) * 1e6
print(f"{'case':11s} {'host':>6s} {'call+sync':>9s} {'gpu':>7s} {'wall-gpu':>8s}   torch {torch.__version__}")
for name, fn in C.items():
    for _ in range(30): fn(); torch.cuda.synchronize()
    host, wall = [], []
    for _ in range(300):
        t0 = time.perf_counter(); r = fn(); t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        host.append(t1 - t0); wall.append(t2 - t0); del r
    gpu = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); r = fn(); b.record(); b.synchronize(); gpu.append(a.elapsed_time(b) / 1e3)
    print(f"{name:11s} {med(host):6.1f} {med(wall):9.1f} {med(gpu):7.1f} {med(wall) - med(gpu):8.1f}", flush=True)
# the decode loop of bench/probes/overhead.py: a one-row gather and a one-row in-place write per step
V, S = 151936, 4096
dtab = T(rng.standard_normal((V, 4096)).astype(np.float16)); dcache = T(np.zeros((S, 32, 128), np.float16))
toks = rng.integers(0, V, 512)
made = [(T(toks[i:i + 1]), T(np.array([S - 512 + i], np.int64))) for i in range(512)]
def loop(fresh):
    for i in range(512):
        if fresh:
            tok, pos = T(toks[i:i + 1]), T(np.array([S - 512 + i], np.int64))
        else:
            tok, pos = made[i]
        dcache.index_copy_(0, pos, dtab.index_select(0, tok).view(1, 32, 128))
    torch.cuda.synchronize()
for fresh in (False, True):
    loop(fresh); loop(fresh)
    xs = []
    for _ in range(5):
        t0 = time.perf_counter(); loop(fresh); xs.append((time.perf_counter() - t0) / 512)
    print(f"decode loop, index Tensors {'made each step' if fresh else 'made beforehand'}: {med(xs):.1f} us a step")
