"""A/B of the call path in a Vulkan-only process (no torch): DMLGPU_HOLD_CLOCKS and DMLGPU_EAGER_SUBMIT as set.
After 3 s idle: 10 call+sync of a small gather and of a 256 MiB gather (cold clocks); then after 3 s of load:
the same (steady); then 'call, 30 us of host work, sync' and the queued call's host time."""
import os, sys, time, statistics, subprocess
import numpy as np, dmlgpu
def smi_mem():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:
        return str(e)
mem0 = smi_mem()
t0 = time.perf_counter(); dev = dmlgpu.Device(); t_open = time.perf_counter() - t0
state = dev.clock_hold.wait(); t_hold = time.perf_counter() - t0
mem1 = smi_mem()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
tab = T(rng.standard_normal((1024, 16), dtype=np.float32)); ids = T(rng.integers(0, 1024, 32).astype(np.int64))
big = T(rng.standard_normal((32768, 2048), dtype=np.float32)); bids = T(rng.permutation(32768).astype(np.int64))
for _ in range(5): dmlgpu.gather(tab, ids); dmlgpu.gather(big, bids)
dev.synchronize()
m = lambda x: statistics.median(x) * 1e6
def timed(fn, n=10):
    out = []
    for _ in range(n):
        t = time.perf_counter(); r = fn(); dev.synchronize(); out.append(time.perf_counter() - t); del r
    return m(out)
def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end: pass
time.sleep(3)
cold_s, cold_b = timed(lambda: dmlgpu.gather(tab, ids)), timed(lambda: dmlgpu.gather(big, bids))
end = time.time() + 3
while time.time() < end:
    r = dmlgpu.gather(big, bids); dev.synchronize(); del r
st_s, st_b = timed(lambda: dmlgpu.gather(tab, ids), 200), timed(lambda: dmlgpu.gather(big, bids), 50)
work = timed(lambda: (dmlgpu.gather(big, bids), spin(150))[0], 50)
host = []
for _ in range(200):
    t = time.perf_counter(); r = dmlgpu.gather(tab, ids); host.append(time.perf_counter() - t); dev.synchronize(); del r
print(f"hold={os.environ.get('DMLGPU_HOLD_CLOCKS', '1')} eager={os.environ.get('DMLGPU_EAGER_SUBMIT', '0')}: "
      f"state '{state}' open {t_open*1e3:.0f} ms, hold ready {t_hold*1e3:.0f} ms, GPU memory used {mem0} -> {mem1} MiB | "
      f"after idle: small {cold_s:.1f} big {cold_b:.1f} | steady: small {st_s:.1f} big {st_b:.1f} | "
      f"big + 150 us host work + sync {work:.1f} | queued small call host {m(host):.1f} us", flush=True)
