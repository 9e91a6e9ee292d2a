"""Probe: when does the host see a batch's end? Fence (kp eval_await's poll) against a completion word that the
batch's last command writes into host-visible memory (vkCmdFillBuffer after a global barrier), polled by Python.
Small gather (one dispatch) and an empty batch, median of 2000 submissions each; a real dmlgpu Device's kp objects."""
import time, statistics, numpy as np, dmlgpu, sys
from dmlgpu.runtime.discovery import HOST_VISIBLE, HOST_COHERENT, kp
from dmlgpu.runtime.transfers import BEFORE_COPY
dev = dmlgpu.Device(); dev.clock_hold.wait()
rng = np.random.default_rng(0)
tab = dmlgpu.tensor(rng.standard_normal((1024, 16), dtype=np.float32), device=dev)
ids = dmlgpu.tensor(rng.integers(0, 1024, 32).astype(np.int64), device=dev)
with dev.record() as rec:
    out = dmlgpu.gather(tab, ids)
disp = rec.dispatches()
mgr = dev.runtime.memory.mgr
word = mgr.buffer(256, HOST_VISIBLE | HOST_COHERENT); view = word.host_view().view(np.uint32)
fill_barrier = kp.OpMemoryBarrier([], *BEFORE_COPY)
def seq_for(dispatches, n, with_word):
    s = mgr.sequence()
    ops = []
    dev.runtime.encoder.encode(dispatches, ops)
    if with_word:
        ops = ops + [fill_barrier, kp.OpFill(word, 0, 4, n)]
    s.record_ops(ops)
    return s
for label, dispatches in (("empty", []), ("small gather", disp)):
    fence_t, word_t, word_then_fence = [], [], []
    s_f = seq_for(dispatches, 0, False)
    for i in range(2000):
        t = time.perf_counter(); s_f.eval_async(); s_f.eval_await(); fence_t.append(time.perf_counter() - t)
    seqs = [seq_for(dispatches, k, True) for k in (1, 2)]
    for i in range(2000):
        k = i % 2
        s = seqs[k]
        view[0] = 0
        t = time.perf_counter(); s.eval_async()
        while view[0] != k + 1:
            pass
        t1 = time.perf_counter(); s.eval_await(); t2 = time.perf_counter()
        word_t.append(t1 - t); word_then_fence.append(t2 - t)
    m = lambda x: statistics.median(x) * 1e6
    print(f"{label:13s} fence (submit + eval_await): {m(fence_t):6.1f} us | word seen: {m(word_t):6.1f} us, "
          f"fence after the word: {m(word_then_fence):6.1f} us", flush=True)
