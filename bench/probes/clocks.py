"""Probe: what keeps an NVIDIA GPU's clocks up for a Vulkan-only process. Phases, each after 3 s idle:
idle (nothing), heartbeat (a tiny submission every P ms from a thread), cuda (a CUDA primary context retained through
libcuda, no torch). Prints small-gather and large-gather call+sync medians of the first 10 calls after the idle."""
import sys, time, threading, statistics, subprocess, ctypes, os
import numpy as np, dmlgpu
smi = subprocess.Popen(["timeout", "150", "nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw",
                        "--format=csv,noheader", "-lms", "100"], stdout=open(os.environ.get("OUT", "/tmp") + "/smi.csv", "w"))
dev = dmlgpu.default_device()
rng = np.random.default_rng(0)
T = lambda a: dmlgpu.tensor(a, device=dev)
tab = T(rng.standard_normal((1024, 16), dtype=np.float32)); ids = T(rng.integers(0, 1024, 32).astype(np.int64))
big = T(rng.standard_normal((262144 // 8, 2048), dtype=np.float32)); bids = T(rng.integers(0, 262144 // 8, 32768).astype(np.int64))
for _ in range(5): dmlgpu.gather(tab, ids); dmlgpu.gather(big, bids)
dev.synchronize()
def burst(label):
    s, b = [], []
    for _ in range(10):
        t0 = time.perf_counter(); dmlgpu.gather(tab, ids); dev.synchronize(); s.append(time.perf_counter() - t0)
    for _ in range(10):
        t0 = time.perf_counter(); r = dmlgpu.gather(big, bids); dev.synchronize(); b.append(time.perf_counter() - t0); del r
    # sustained: 3 s of load, then again
    t_end = time.time() + 3
    while time.time() < t_end:
        r = dmlgpu.gather(big, bids); dev.synchronize(); del r
    s2, b2 = [], []
    for _ in range(10):
        t0 = time.perf_counter(); dmlgpu.gather(tab, ids); dev.synchronize(); s2.append(time.perf_counter() - t0)
    for _ in range(10):
        t0 = time.perf_counter(); r = dmlgpu.gather(big, bids); dev.synchronize(); b2.append(time.perf_counter() - t0); del r
    m = lambda x: statistics.median(x) * 1e6
    print(f"{label:28s} after idle: small {m(s):7.1f} us  256MiB-gather {m(b):8.1f} us | after 3 s load: small {m(s2):7.1f}  big {m(b2):8.1f}", flush=True)
    time.sleep(3)
time.sleep(3); burst("idle (vulkan only)")
for period_ms in (200, 50, 10):
    stop = threading.Event()
    def beat():
        while not stop.is_set():
            with dev._lock:
                dmlgpu.gather(tab, ids); dev.synchronize()
            time.sleep(period_ms / 1000)
    th = threading.Thread(target=beat, daemon=True); th.start(); time.sleep(3)
    burst(f"heartbeat {period_ms} ms"); stop.set(); th.join()
    time.sleep(3); burst("idle again")
cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0
d = ctypes.c_int(); assert cu.cuDeviceGet(ctypes.byref(d), 0) == 0
ctx = ctypes.c_void_p(); assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), d) == 0
time.sleep(3); burst("cuda primary ctx retained")
assert cu.cuCtxSetCurrent(ctx) == 0
time.sleep(3); burst("cuda ctx current")
cu.cuDevicePrimaryCtxRelease(d)
time.sleep(3); burst("cuda ctx released")
smi.terminate()
