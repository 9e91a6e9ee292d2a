"""Probe (issue 40, item 2): the host cost of a new binding of a kernel. A queued one-row gather whose index
Tensor and result are new at every call and kept alive (every call binds a new buffer set) against the same
gather on one index Tensor with its results freed (the binding is cached); and the time spent in
Pipelines.algorithm on its misses alone (making the binding: kp's algorithm_like and its dispatch op). Medians in
us. A/B of the descriptor-set path: DMLGPU_DEVICE_PROFILE=no-push-descriptors. Run: python bench/probes/new_binding.py"""
import time, statistics, numpy as np, dmlgpu
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
tab = T(rng.standard_normal((4096, 64)).astype(np.float32))
pc = time.perf_counter_ns
pl = dev._pipelines
real, misses = pl.algorithm, []


def timed(kernel, groups, blocks):
    n = len(pl)
    t0 = pc()
    bound = real(kernel, groups, blocks)
    dt = pc() - t0
    if len(pl) > n:
        misses.append(dt)
    return bound


pl.algorithm = timed


def run(fresh: bool, calls: int = 600) -> float:
    xs, held = [], []
    ids = T(rng.integers(0, 4096, 1))
    for i in range(calls):
        if fresh:
            ids = T(rng.integers(0, 4096, 1))
        t0 = pc(); r = dmlgpu.gather(tab, ids); xs.append(pc() - t0)
        if fresh:
            held.append((ids, r))
        if i % 64 == 63:
            dev.synchronize()
    dev.synchronize()
    return statistics.median(xs) / 1e3


run(True, 100); run(False, 100)
misses.clear()
cached = run(False)
fresh = run(True)
print(f"gather, cached binding {cached:.2f} us; new index Tensor and result each call {fresh:.2f} us; "
      f"making a binding {statistics.median(misses) / 1e3:.2f} us ({len(misses)} made); "
      f"pushDescriptor {'pushDescriptor' in getattr(dev, 'features', ())}")
