"""Probe (issue 40, item 4): a queued gather's host time with its results freed at once against kept alive
(each call then binds a new result buffer: a new block and a new binding of the kernel), for outputs of 64 KiB
to 16 MiB. Run: python bench/probes/keep_alive.py"""
import time, statistics, numpy as np, dmlgpu
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
tab = T(rng.standard_normal((65536, 256), dtype=np.float32))   # 64 MiB, 1 KiB rows
pc = time.perf_counter_ns
for rows in (64, 4096, 65536 // 4):
    ids = T(rng.integers(0, 65536, rows).astype(np.int64))
    for _ in range(3): dmlgpu.gather(tab, ids)
    dev.synchronize()
    for keep in (False, True):
        held = []; xs = []
        for i in range(40):
            t0 = pc(); r = dmlgpu.gather(tab, ids); xs.append(pc() - t0)
            if keep: held.append(r)
            del r
            if i % 8 == 7: dev.synchronize()
        dev.synchronize()
        st = dev.memory_stats()
        print(f"out {rows * 1024 >> 10} KiB keep={keep}: host median {statistics.median(xs)/1e3:.1f} us, max {max(xs)/1e3:.0f}; device allocations {st['device_allocations']}")
        del held
        dev.empty_cache()
