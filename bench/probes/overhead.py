"""Probe (issue 40): where a synchronized call's time goes, per case, in a Vulkan-only process.

For each case: the queued call's host time; call + synchronize; synchronize's parts (recording the batch,
vkQueueSubmit, the wait), timed inside Batch.flush; the same commands recorded once and replayed
(Recording.run: no Python planning, the submission floor for these commands); an empty recording's run; and
the GPU time (Vulkan timestamps). ``--profile NAME``: a cProfile of 300 call + synchronize of that case.
Run: python3 bench/probes/overhead.py [--cases a,b] [--profile small]"""
import statistics, sys, time, cProfile, pstats, io
import numpy as np, dmlgpu
from dmlgpu.runtime import batch as batch_mod

parts = {"record": [], "submit": [], "wait": []}
_flush = batch_mod.Batch.flush
def flush(self, wait=True):
    # the same steps as Batch.flush, timed: record + submit, then the wait
    if self.queued and wait and not self.inflight:
        ops = self.ops
        t0 = time.perf_counter()
        _flush(self, wait=False)
        t1 = time.perf_counter()
        self.await_inflight()
        t2 = time.perf_counter()
        parts["submit"].append(t1 - t0); parts["wait"].append(t2 - t1)
        return
    _flush(self, wait)
batch_mod.Batch.flush = flush

dev = dmlgpu.Device()
getattr(dev, "clock_hold", None) and dev.clock_hold.wait()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
C = {}
tab = T(rng.standard_normal((1024, 16), dtype=np.float32)); ids = T(rng.integers(0, 1024, 32).astype(np.int64))
C["small"] = lambda: dmlgpu.gather(tab, ids)
lg = T(rng.standard_normal((8192, 32000), dtype=np.float32)); lab = T(rng.integers(0, 32000, (8192, 1)).astype(np.int64))
C["label"] = lambda: dmlgpu.gather_elements(lg, lab, axis=1)
tk = T(rng.standard_normal((64, 151936), dtype=np.float32))
tki = T(np.stack([rng.choice(151936, 50, replace=False) for _ in range(64)]).astype(np.int64))
C["topk"] = lambda: dmlgpu.gather_elements(tk, tki, axis=1)
emb = T(rng.standard_normal((151936, 4096)).astype(np.float16)); eids = T(rng.integers(0, 151936, 8192).astype(np.int64))
C["embedding"] = lambda: dmlgpu.gather(emb, eids)
pc = T(rng.standard_normal((8, 65536, 64), dtype=np.float32)); pci = T(rng.integers(0, 65536, (8, 16384, 1)).astype(np.int64))
C["pointcloud"] = lambda: dmlgpu.gather_nd(pc, pci, batch_dims=1)
cache = T(np.zeros((32768, 4096), np.float16))
kvi = T(rng.choice(32768, (256, 1), replace=False).astype(np.int64)); kvr = T(rng.standard_normal((256, 4096)).astype(np.float16))
C["kvwrite"] = lambda: dmlgpu.scatter_nd(cache, kvi, kvr, out=cache)
tok = T(rng.standard_normal((32768, 2048), dtype=np.float32)); perm = T(rng.permutation(32768).astype(np.int64))
C["moe"] = lambda: dmlgpu.gather(tok, perm)
if "--cases" in sys.argv:
    keep = sys.argv[sys.argv.index("--cases") + 1].split(",")
    C = {k: v for k, v in C.items() if k in keep}
dev.synchronize()
med = lambda xs: statistics.median(xs) * 1e6 if xs else float("nan")

with dev.record() as empty:
    pass
print(f"{'case':11s} {'host':>6s} {'call+sync':>9s} {'submit':>7s} {'wait':>7s} {'replay':>7s} {'gpu':>7s} "
      f"{'wall-gpu':>8s} {'replay-gpu':>10s}")
for name, fn in C.items():
    for _ in range(30): fn(); dev.synchronize()
    host, wall = [], []
    for k in parts: parts[k].clear()
    for _ in range(300):
        t0 = time.perf_counter(); r = fn(); t1 = time.perf_counter(); dev.synchronize(); t2 = time.perf_counter()
        host.append(t1 - t0); wall.append(t2 - t0); del r
    with dev.record(timestamps=True) as rec:
        r = fn()
    gpu = []
    for _ in range(50):
        rec.run(); ts = rec.timestamps(); gpu.append((ts[-1] - ts[0]) / 1e9)
    with dev.record() as rec2:
        r2 = fn()
    rep = []
    for _ in range(200):
        t0 = time.perf_counter(); rec2.run(); rep.append(time.perf_counter() - t0)
    e = []
    for _ in range(200):
        t0 = time.perf_counter(); empty.run(); e.append(time.perf_counter() - t0)
    print(f"{name:11s} {med(host):6.1f} {med(wall):9.1f} {med(parts['submit']):7.1f} {med(parts['wait']):7.1f} "
          f"{med(rep):7.1f} {med(gpu):7.1f} {med(wall) - med(gpu):8.1f} {med(rep) - med(gpu):10.1f}   "
          f"(empty recording run {med(e):.1f})", flush=True)
    del rec, rec2, r, r2
# a decode loop: per step a one-row gather and a one-row in-place write, index Tensors made beforehand (as bench
# apps' decode-loop) or each step (fresh), 512 steps, one synchronize at the end: per step
V, S = 151936, 4096
dtab = T(rng.standard_normal((V, 4096)).astype(np.float16)); dcache = T(np.zeros((S, 32, 128), np.float16))
toks = rng.integers(0, V, 512)
made = [(T(toks[i:i + 1]), T(np.array([[S - 512 + i]], np.int64))) for i in range(512)]
def loop(fresh):
    for i in range(512):
        if fresh:
            tok, pos = T(toks[i:i + 1]), T(np.array([[S - 512 + i]], np.int64))
        else:
            tok, pos = made[i]
        row = dmlgpu.gather(dtab, tok).reshape((1, 32, 128))
        dmlgpu.scatter_nd(dcache, pos, row, out=dcache)
    dev.synchronize()
for fresh in (False, True):
    loop(fresh); loop(fresh)
    xs = []
    for _ in range(5):
        t0 = time.perf_counter(); loop(fresh); xs.append((time.perf_counter() - t0) / 512)
    print(f"decode loop, index Tensors {'made each step' if fresh else 'made beforehand'}: {med(xs):.1f} us a step")
if "--profile" in sys.argv:
    for name in sys.argv[sys.argv.index("--profile") + 1].split(","):
        fn = C[name]
        pr = cProfile.Profile(); pr.enable()
        for _ in range(300):
            r = fn(); dev.synchronize(); del r
        pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(16)
        print("== profile", name, "(300 x call+sync)"); print(s.getvalue()[:3500])
