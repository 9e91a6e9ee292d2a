"""Probe: embedding_bag on Tensors, where the time goes (issue 51's workload: 65,536 bags of 20 Zipf ids from a
[1M, 128] float32 table): GPU time (the call recorded once with timestamps, first to last), replay + synchronize,
call + synchronize (a call template's hit after the first), the queued call alone, and 2-D ids; each result
checked against NumPy (a float sum in each bag's order of ids). An A/B of two shader builds: run it once per build
with DMLGPU_SHADER_DIR naming the build's .spv folder and TAG naming the build (printed first on every line).

    PYTHONPATH=. python bench/probes/embedding_bag.py"""
import os, statistics, sys, time
import numpy as np
import dmlgpu

def med(fn, n=30):
    fn()
    s = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(); s.append(time.perf_counter() - t0)
    return statistics.median(s) * 1e6

dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
rows, bags, per, width = 1 << 20, 65536, 20, 128
def zipf(n):
    r = rng.zipf(1.1, n) - 1
    return (r.astype(np.uint64) * np.uint64(2654435761) % np.uint64(rows)).astype(np.int64)
th = rng.integers(-4, 5, (rows, width)).astype(np.float32)
table = dmlgpu.tensor(th, device=dev)
idh = zipf(bags * per)
ids = dmlgpu.tensor(idh, device=dev)
ids2 = dmlgpu.tensor(idh.reshape(bags, per), device=dev)
offs = dmlgpu.tensor(np.arange(bags, dtype=np.int64) * per, device=dev)
tag = os.environ.get("TAG", "cur")
ref = np.take(th, idh, axis=0).reshape(bags, per, width)
for mode in ("sum", "mean", "max"):
    got = dmlgpu.embedding_bag(table, ids, offs, mode=mode).numpy()
    if mode == "max":
        want = ref.max(axis=1)
    else:
        acc = ref[:, 0].copy()
        for j in range(1, per): acc = acc + ref[:, j]
        want = acc if mode == "sum" else (acc / np.float32(per)).astype(np.float32)
    ok = np.array_equal(got, want)
    f = lambda: dmlgpu.embedding_bag(table, ids, offs, mode=mode)
    with dev.record(timestamps=True) as rec:
        f()
    g = []
    for _ in range(20):
        rec.run(); dev.synchronize(); ts = rec.timestamps(); g.append(ts[-1] - ts[0])
    gpu = statistics.median(g) / 1e3
    replay = med(lambda: (rec.run(), dev.synchronize()))
    wall = med(lambda: (f(), dev.synchronize()))
    queued = med(lambda: f(), 10); dev.synchronize()
    wall2 = med(lambda: (dmlgpu.embedding_bag(table, ids2, mode=mode), dev.synchronize()))
    print(f"{tag} {mode}: ok={ok} GPU {gpu:.1f} us, replay+sync {replay:.1f}, call+sync {wall:.1f}, "
          f"queued {queued:.1f}, 2-D ids call+sync {wall2:.1f}", flush=True)
print(f"{tag} empty sync", round(med(lambda: dev.synchronize()), 1))
