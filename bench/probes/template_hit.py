"""Probe: a call template's hit, layer by layer, against the same hit written out by hand in one function (issue 53,
item 2: what a native hit path could remove). The small gather of `bench latency` (32 int64 rows of a [1024, 16]
float32 Tensor), queued (no synchronize inside a timed block; max_queued raised so that no batch is submitted
in one), each figure the best of 40 blocks of 300 calls, the blocks of every entry interleaved, as a multiple of
np.take of the same rows in the same process:

- dmlgpu.gather, driver.call, call_templates.templated, Template.run, Prepared.queue: each layer of the hit;
- "by hand": the key, the lookup, the result's block from the allocator's free list, the ops that Prepared kept
  for these blocks appended, the Tensor made, in one function (private attributes; the probe's own, not an API).

    DMLGPU_MAX_QUEUED=100000 PYTHONPATH=. python bench/probes/template_hit.py"""
import time

import numpy as np

import dmlgpu
from dmlgpu.api import call_templates as calls, driver
from dmlgpu.api.functions import FILL_MODES, _gather_rule
from dmlgpu.api.tensor import Tensor
from dmlgpu.runtime.buffer import Buffer

rng = np.random.default_rng(0)
table = rng.random((1024, 16), dtype=np.float32)
idx = rng.integers(0, 1024, 32).astype(np.int64)
t, i = dmlgpu.tensor(table), dmlgpu.tensor(idx)
for _ in range(10):
    dmlgpu.gather(t, i, axis=0)
rt = t._rt
rt.synchronize()
template = rt.templates[calls.signature("gather", t, i, None, (0, "clamp"))]
prepared = template.prepared
assert prepared is not None, "the small gather has no prepared template"


def by_hand(data, indices):
    tpl = rt.templates.get(("gather", data.shape, data.dtype, indices.shape, indices.dtype, 0, "clamp"))
    p = tpl.prepared
    b0, b1 = data.buffer, indices.buffer
    dev = tpl.device
    if b0.device is not dev or b0.chunked or data.offset or b1.device is not dev or b1.chunked or indices.offset \
            or dev.checks.tainted:
        return None
    q = p.submitter
    mem = q.memory
    with q.lock:
        if mem.closed or not q.settings.max_queued or q.local.recording is not None:
            return None
        alloc = mem.allocator
        if alloc._returned:
            alloc._drain()
        free = alloc._free.get(p.out_class)
        if not free:
            return None
        block = free.pop()
        buf = Buffer.__new__(Buffer)
        buf.memory, buf.device, buf.nbytes = mem, dev, p.out_nbytes
        buf.block_list, buf._block, buf._tensor = [block], block, block.tensor
        batch = q.batch
        made = p.sets.get((b0._block, b1._block, block))
        if made is None:
            return None
        batch.ops += made[0]
        n = batch.number
        for blk in made[1]:
            blk.batch = n
        batch.queued += 1
        if batch.queued >= q.settings.max_queued:
            batch.flush(wait=False)
    r = Tensor.__new__(Tensor)
    r.buffer, r.shape, r.dtype = buf, tpl.out_shape, data.dtype
    return r


assert by_hand(t, i) is not None, "the hand-written hit found no kept ops (the probe is out of date)"
entries = {
    "np.take": lambda: np.take(table, idx, axis=0),
    "dmlgpu.gather": lambda: dmlgpu.gather(t, i, axis=0),
    "call_templates.gathered": lambda: calls.gathered("gather", t, i, 0, "clamp"),
    "Template.hit": lambda: template.hit(t, i),
    "driver.call": lambda: driver.call("gather", _gather_rule, t, i, None, (0,), mode="clamp", modes=FILL_MODES),
    "call_templates.templated": lambda: calls.templated("gather", t, i, None, (0, "clamp"), None),
    "Template.run": lambda: template.run((t, i)),
    "Prepared.queue": lambda: prepared.queue([t.buffer, i.buffer, None, None]),
    "by hand": lambda: by_hand(t, i),
}
best = {k: float("inf") for k in entries}
for _ in range(40):
    for name, fn in entries.items():
        start = time.perf_counter_ns()
        for _ in range(300):
            fn()
        best[name] = min(best[name], (time.perf_counter_ns() - start) / 300 / 1e3)
    rt.synchronize()
for name, us in best.items():
    print(f"{name:26} {us:7.3f} us  {us / best['np.take']:5.2f}x np.take")
