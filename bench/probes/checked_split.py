"""Probe: where a synchronised call whose indices the device checks spends its time (issues 51 and 53): the call and
synchronize() timed apart (medians of 40), beside the same call without the check.

  bag    embedding_bag sum, issue 51's workload (65,536 bags of 20 Zipf ids from a [1M, 128] float32 table): with its
         template's device check of the ids (before the bag's launch, and after it: index_check.CHECK_AFTER), and
         with the template's check switched off (a measurement only: ``template.check = None``, then restored);
         the check of the ids queued alone (IndexCheck.on_device: its pass and its report pass) and a synchronize
         with nothing queued; then the call recorded with timestamps (its commands' GPU time).
  take   bench apps' embedding-f16 rows (8,192 ids from a [151936, 4096] float16 table): gather(mode="clamp"),
         gather(mode="raise") and table[ids] (NumPy's rule: the ids checked by the gather's kernel), and the
         templates' launches.

    source tools/device_env.sh && python3 bench/probes/checked_split.py            # both parts (GPU machine)
    python3 bench/probes/checked_split.py --small                                 # small sizes (lavapipe)"""
import argparse
import statistics
import time

import numpy as np

import dmlgpu
from dmlgpu.plans import index_check

ap = argparse.ArgumentParser()
ap.add_argument("--parts", default="bag,take")
ap.add_argument("--small", action="store_true", help="small sizes (a functional run on lavapipe)")
args = ap.parse_args()
dev = dmlgpu.default_device()
keep_after = index_check.CHECK_AFTER
rng = np.random.default_rng(0)


def split(f, n=40):
    """(call, synchronize, both) medians in microseconds."""
    c, s = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        t1 = time.perf_counter()
        dev.synchronize()
        t2 = time.perf_counter()
        c.append(t1 - t0)
        s.append(t2 - t1)
    return tuple(statistics.median(x) * 1e6 for x in (c, s, [a + b for a, b in zip(c, s)]))


if "bag" in args.parts:
    rows, bags, per, width = (1 << 12, 256, 20, 16) if args.small else (1 << 20, 65536, 20, 128)
    r = rng.zipf(1.1, bags * per) - 1
    table = dmlgpu.tensor(rng.integers(-4, 5, (rows, width)).astype(np.float32), device=dev)
    ids = dmlgpu.tensor((r.astype(np.uint64) * np.uint64(2654435761) % np.uint64(rows)).astype(np.int64), device=dev)
    offs = dmlgpu.tensor(np.arange(bags, dtype=np.int64) * per, device=dev)
    bag = lambda: dmlgpu.embedding_bag(table, ids, offs)
    for _ in range(5):
        bag()
        dev.synchronize()
    tpl = [t for k, t in table._rt.templates.items() if k[0] == "embedding_bag"][0]
    for _ in range(2):
        for after in (False, True):     # the device check before the bag's launch, or after it (CHECK_AFTER)
            index_check.CHECK_AFTER, tpl.slotted = after, {}
            for _ in range(3):
                bag()
            dev.synchronize()
            print("bag checked, check %-6s call %.1f  sync %.1f  both %.1f us"
                  % (("after" if after else "before",) + split(bag)))
        index_check.CHECK_AFTER, tpl.slotted = keep_after, {}
        keep, tpl.check = tpl.check, None
        try:
            print("bag unchecked  call %.1f  sync %.1f  both %.1f us" % split(bag))
            # the check alone, queued by itself (its pass and its report pass after it), and an empty synchronize:
            # the device's share and the host's report of a check of these ids, without the bag
            rt = table._rt
            print("check alone    call %.1f  sync %.1f  both %.1f us" % split(lambda: keep.on_device(rt, ids)))
            print("nothing        call %.1f  sync %.1f  both %.1f us" % split(lambda: None))
        finally:
            tpl.check = keep
    with dev.record(timestamps=True) as rec:
        bag()
    gpu = []
    for _ in range(20):
        rec.run()
        dev.synchronize()
        ts = rec.timestamps()
        gpu.append(ts[-1] - ts[0])
    print("bag recorded (a recording clamps Tensor ids: no check): GPU %.1f us, between timestamps %s"
          % (statistics.median(gpu) / 1e3, np.round(np.diff(ts) / 1e3, 1).tolist()))

if "take" in args.parts:
    shape, n = ((1519, 64), 819) if args.small else ((151936, 4096), 8192)
    table = dmlgpu.tensor(rng.integers(0, 1000, shape).astype(np.float16), device=dev)
    ids = dmlgpu.tensor(rng.integers(0, shape[0], n).astype(np.int64), device=dev)
    cases = {"clamp": lambda: dmlgpu.gather(table, ids), "raise": lambda: dmlgpu.gather(table, ids, mode="raise"),
             "t[ids]": lambda: table[ids]}
    for f in cases.values():
        for _ in range(5):
            f()
            dev.synchronize()
    for _ in range(2):
        for name, f in cases.items():
            print("take %-7s call %.1f  sync %.1f  both %.1f us" % ((name,) + split(f)))
    for key, t in table._rt.templates.items():
        t = getattr(t, "template", t)
        print("template", key[0], key[5:], "checked" if t.check is not None else "",
              [(s.kernel, s.count) for s in t.steps])
