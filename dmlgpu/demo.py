"""``python -m dmlgpu demo``: the pages' examples through layer 1, a duplicate-index scatter, and one
larger gather timed on the default device."""
from __future__ import annotations

import time

import numpy as np

from .layer1 import examples
from .api import functions
from . import reference
from .api.device import Device


def _show(name, arr) -> str:
    return f"    {name}: " + np.array2string(np.asarray(arr), separator=",", prefix="    " + " " * (len(name) + 2))


def main(device: Device | None = None) -> int:
    dev = device or Device()
    print(f"dmlgpu demo on {dev.info.name} ({dev.info.type}), feature level {dev.feature_level}\n")
    failures = 0
    for ex in examples.EXAMPLES:
        out = examples.run(ex, dev)
        ok = out.shape == ex.expected.shape and bool((out == ex.expected).all())
        failures += not ok
        print(f"{ex.operator} - {ex.title}: {'matches the page' if ok else 'MISMATCH'}")
        for name, arr in ex.arrays.items():
            print(_show(name, arr))
        print(_show("output", out) + "\n")

    data = np.arange(10, dtype=np.uint8)
    idx = np.zeros((100_000, 1), dtype=np.int64)
    idx[:, 0] = np.arange(100_000) % 10
    upd = (np.arange(100_000) % 251).astype(np.uint8)
    out = functions.scatter_nd(data, idx, upd, device=dev)
    ok = bool((out == reference.scatter_nd(data, idx, upd)).all())
    failures += not ok
    print(f"SCATTER_ND with duplicates: 100,000 uint8 updates onto 10 targets, the last update wins: "
          f"{'matches a sequential loop' if ok else 'MISMATCH'}")
    print(_show("output", out) + "\n")

    rows, width = 1 << 16, 256
    table = np.random.default_rng(0).standard_normal((rows, width), dtype=np.float32)
    ids = np.random.default_rng(1).integers(0, rows, size=rows, dtype=np.int64)
    functions.gather(table, ids[:16], device=dev)  # warm up
    start = time.perf_counter()
    out = functions.gather(table, ids, device=dev)
    seconds = time.perf_counter() - start
    ok = bool((out == table[ids]).all())
    failures += not ok
    moved = 2 * out.nbytes + ids.nbytes
    print(f"GATHER of {rows} rows of {width} float32 ({out.nbytes / 2**20:.0f} MiB out): {seconds * 1e3:.1f} ms "
          f"end to end (upload, dispatch, download), {moved / seconds / 1e9:.2f} GB/s; "
          f"{'correct' if ok else 'MISMATCH'}")
    print("\nall results correct" if not failures else f"\n{failures} MISMATCHES")
    return 1 if failures else 0
