"""``python -m dmlgpu bench large``: tensors past one storage-buffer binding, past 4 GiB and past 2^32 elements
(issue 13), each result checked bit for bit against NumPy on the host, with GPU times from Vulkan timestamps
(gpu_timing: the call's dispatches replayed ``--repeats`` times in one submission, median) and, where CUDA
PyTorch is there, the same gather through ``torch.index_select`` timed with CUDA events.

Sections (``--sections``, comma-separated):
* ``rows``: a gather of ``--rows`` random rows of 8 KiB (float16) from a table of ``--table-gib`` GiB and from
  one of ``--small-gib`` GiB. ``--process separate`` (the default): each table in a fresh process of its own with
  the default Device, as a dmlgpu user runs it (no CUDA context), its first gather (GPU time and call-to-completion
  wall time) beside its steady state (GPU time, and call + synchronize), and PyTorch's index_select of the same
  shapes in another fresh process, measured alike. ``--process same``: both tables in this process, the small
  one also through the ADDR and WIDE variants forced (the mechanism's own cost on the same data), PyTorch in
  this process. Bandwidth = bytes read + written (2 x the output) / time.
* ``scatter``: scatter_nd of ``--rows`` / 4 rows of 8 KiB (float32, random rows, repeats included) into a
  tensor of ``--scatter-gib`` GiB (out of place: the copy of the input is timed too).
* ``elements``: gather_elements on a uint8 tensor of ``--elements-gib`` GiB (1-D) with 2^22 int64 indices,
  most of them past 2^32.
* ``sweep`` (issue 23: where a gather from a large table loses): the same random gather, ``--sweep-out-gib`` GiB
  of output, from tables of each of ``--sweep-gib`` GiB (prefixes of one random table; sizes that the device
  cannot hold beside the output are skipped), for rows of each of ``--sweep-rows`` bytes (multiples of 16: float32
  up to 512 B, float16 above, e.g. 8192 and 512): the kernel the table takes (32-bit in one block,
  else ADDR) and the others forced (ADDR and WIDE), rows drawn from the table's first ``--sweep-span-gib`` GiB
  only (TLB reach: the same table, a smaller footprint), and a plain copy of the whole table through the same
  blocks (the copy shader; skipped where a second table does not fit). Each is timed on its first run (the
  first kernel to read the table after its upload) and in steady state (median of ``--repeats`` replays), and
  PyTorch's ``index_select`` (first call, then steady) beside it on a CUDA table of the same shape with the same
  ids. The tables' block sizes and the alignment of their blocks' device addresses are printed.
  ``--chunk-mib`` sets the block size (Device(chunk_bytes=)); ``--sweep-chunks-mib`` repeats the sweep in the
  same process for each block size listed (a new Device each; 0: the default blocks). GPUs are kept busy
  copying for a second first (``warm_up``).
* ``small``: the 32-bit kernels on tensors under one binding, 64 MiB and 1 GiB moved (gather of rows of 1 KiB,
  gather of single float32 elements, scatter_nd of rows of 1 KiB): run it with an older tree on PYTHONPATH
  to compare (``python3 path/to/large.py --sections small``: it uses only what every tree has).

Table contents: random bytes, 64 MiB of them repeated with a different XOR per repetition (fast to make; no
two rows alike). Writes a JSON line per measurement to ``--out`` if given, and a table at the end.
The measurements' pieces (inputs, the report, timings, one rows case): dmlgpu/bench/large_cases.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import dmlgpu
from dmlgpu.bench.clock import torch_time
from dmlgpu.bench.gpu_timing import capture, release

from dmlgpu.bench.large_cases import (GiB, MiB, ROW, Report, block_summary, dispatches_map, first_and_steady,
                                      forced_wide, gpu_time, random_bytes, rows_case, sweep_dtype,
                                      torch_first_and_steady, torch_gather_rows, torch_rows_case, warm_up)


def rows_section(dev, args, report: Report) -> None:
    if args.process == "separate":
        return rows_separate(args, report)
    rng = np.random.default_rng(1)
    for gib, label in ((args.table_gib, "large"), (args.small_gib, "small")):
        nbytes = int(gib * GiB) // ROW * ROW
        host = random_bytes(nbytes, seed=int(gib * 10)).view(np.float16).reshape(-1, ROW // 2)
        t0 = time.perf_counter()
        table = dmlgpu.tensor(host, device=dev)
        upload_s = time.perf_counter() - t0
        ids_host = rng.integers(0, host.shape[0], size=args.rows).astype(np.int64)
        ids = dmlgpu.tensor(ids_host, device=dev)
        out, dispatches = capture(dev, dmlgpu.gather, table, ids)
        t0 = time.perf_counter()
        got = out.numpy()
        download_s = time.perf_counter() - t0
        ok = got.view(np.uint16).tobytes() == host[ids_host].view(np.uint16).tobytes()
        moved = 2 * out.nbytes
        s = gpu_time(dev, dispatches, args.repeats)
        peer = torch_gather_rows(nbytes, args.rows, args.repeats)
        report.add(case=f"gather {args.rows} rows of 8 KiB from {gib:g} GiB ({len(table.buffer.block_list)} blocks, "
                        f"{'wide' if dispatches[0].wide else '32-bit'})", checked=ok, gpu_ms=s * 1e3,
                   gbps=moved / s / 1e9, torch_gbps=moved / peer / 1e9 if peer else None, table_bytes=nbytes,
                   upload_gbps=nbytes / upload_s / 1e9, download_gbps=out.nbytes / download_s / 1e9)
        if label == "small" and not dispatches[0].wide:
            from dmlgpu.plans.plan import GatherPlan
            plan = GatherPlan(dispatches_map(table, ids), ids_host.dtype)
            out2 = dmlgpu.empty(out.shape, out.dtype, device=dev)
            for wide_ in (False, True):
                forced = forced_wide(dev, plan, table, ids, out2, wide=wide_)
                ok2 = out2.numpy().view(np.uint16).tobytes() == got.view(np.uint16).tobytes()
                s2 = gpu_time(dev, forced, args.repeats)
                report.add(case=f"gather {args.rows} rows of 8 KiB from {gib:g} GiB (1 block, "
                                f"{'WIDE' if wide_ else 'ADDR'} forced)", checked=ok2, gpu_ms=s2 * 1e3,
                           gbps=moved / s2 / 1e9)
            del out2, forced
        del table, ids, out, host, got, dispatches
        dev.empty_cache()


def rows_separate(args, report: Report) -> None:
    """The rows section as users meet it: each table in a fresh process of its own (a Vulkan-only dmlgpu
    process with the default Device, as a dmlgpu user runs it: ``rows_case``), and PyTorch's index_select of the
    same shapes in another fresh process (``torch_rows_case``). The first call of each process is reported
    beside the steady state."""
    import importlib.util
    peer = importlib.util.find_spec("torch") is not None
    for gib in (args.table_gib, args.small_gib):
        row = _child(["dmlgpu", gib], args)
        if peer:
            theirs = _child(["torch", gib], args)
            if theirs:
                row.update(theirs)
        report.add(**row)


def _child(what: list, args) -> dict:
    """The result line of ``python -m dmlgpu.bench.large --child <side> <gib>`` run in a new process."""
    import subprocess
    cmd = [sys.executable, "-m", "dmlgpu.bench.large", "--child", *map(str, what), "--rows", str(args.rows),
           "--repeats", str(args.repeats)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    if what[0] == "torch":
        print(f"(PyTorch's process gave no result: {done.stderr.strip()[-300:]})", flush=True)
        return {}
    raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")


def sweep_section(dev, args, report: Report) -> None:
    """The large-table sweep (module docstring): per block size, per table size, per row size."""
    from dmlgpu.plans.plan import CopyPlan, GatherPlan
    from dmlgpu.plans.index_map import Layout, copy_map
    sizes = [float(g) for g in args.sweep_gib.split(",") if g]
    rows_bytes = [int(r) for r in args.sweep_rows.split(",") if r]
    out_bytes = int(args.sweep_out_gib * GiB)
    chunks = [int(c) for c in args.sweep_chunks_mib.split(",")] if args.sweep_chunks_mib else [None]
    print("memory heaps", dev.info.memory_heaps, "types", dev.info.memory_types, flush=True)
    t0 = time.perf_counter()
    host = random_bytes(int(max(sizes) * GiB) // max(rows_bytes) * max(rows_bytes), seed=23)
    print(f"host table of {host.nbytes / GiB:g} GiB made in {time.perf_counter() - t0:.1f} s", flush=True)
    rng = np.random.default_rng(23)
    warm_up(dev)
    for chunk in chunks:
        d = dev if chunk is None else dmlgpu.Device(max_queued=0, **({"chunk_bytes": chunk * MiB} if chunk else {}))
        tag = f"blocks of {d.chunk_bytes / MiB:g} MiB"
        for gib in sizes:
            nbytes = int(gib * GiB) // max(rows_bytes) * max(rows_bytes)
            if nbytes + out_bytes + (1 << 28) > d.runtime.memory_capacity:
                print(f"skipped: a {gib:g} GiB table and {args.sweep_out_gib:g} GiB of output do not fit "
                      f"{d.runtime.memory_capacity / GiB:.1f} GiB", flush=True)
                continue
            for row in rows_bytes:
                dtype = sweep_dtype(row)
                view = host[:nbytes].view(dtype).reshape(-1, row // dtype.itemsize)
                count = out_bytes // row
                t1 = time.perf_counter()
                table = dmlgpu.tensor(view, device=d)
                upload_s = time.perf_counter() - t1
                where = f"{gib:g} GiB ({block_summary(table.buffer)})"
                print(f"{tag}: table {where}, uploaded at {nbytes / upload_s / 1e9:.1f} GB/s", flush=True)
                span_rows = min(view.shape[0], int(args.sweep_span_gib * GiB) // row)
                cases = [("random", rng.integers(0, view.shape[0], size=count))]
                if span_rows < view.shape[0]:
                    cases.append((f"from its first {args.sweep_span_gib:g} GiB", rng.integers(0, span_rows, size=count)))
                for name, ids_host in cases:
                    ids = dmlgpu.tensor(ids_host, device=d)
                    out = dmlgpu.empty((count, view.shape[1]), dtype, device=d)
                    plan = GatherPlan(dispatches_map(table, ids), ids_host.dtype)
                    want = view[ids_host].tobytes()
                    runs = [("as chosen", plan.dispatches(d.runtime, input=table.buffer, indices=ids.buffer,
                                                          output=out.buffer))]
                    if name == "random":
                        runs += [(f"{'WIDE' if w else 'ADDR'} forced",
                                  plan.addressed(d.runtime, ids.buffer, table.buffer, out.buffer, wide=w))
                                 for w in (False, True) if w or not table.buffer.chunked]
                    for how, (dispatches, uploads) in runs:
                        first, steady = first_and_steady(d, dispatches, uploads, args.repeats)
                        ok = out.numpy().tobytes() == want
                        kernel = dispatches[0].kernel
                        moved = 2 * count * row
                        peer = torch_first_and_steady(view.shape, dtype.name, ids_host, args.repeats) \
                            if how == "as chosen" and args.sweep_torch else None
                        report.add(case=f"sweep {tag}: {count} rows of {row} B, {name}, from {gib:g} GiB, {how} "
                                        f"({kernel})", checked=ok, gpu_ms=steady * 1e3, gbps=moved / steady / 1e9,
                                   first_gbps=moved / first / 1e9, table=where,
                                   torch_gbps=moved / peer[1] / 1e9 if peer else None,
                                   torch_first_gbps=moved / peer[0] / 1e9 if peer else None)
                    del ids, out, plan
                    d.empty_cache()
                if row == rows_bytes[0]:
                    if 2 * nbytes + (1 << 28) <= d.runtime.memory_capacity:
                        dst = d.buffer(nbytes=nbytes)
                        units = nbytes // 16
                        cp = CopyPlan(copy_map(Layout.packed((units,)), Layout.packed((units,)), 16))
                        dispatch, uploads = cp.dispatch(d.runtime, table.buffer, dst)
                        first, steady = first_and_steady(d, [dispatch], uploads, args.repeats)
                        ok = all(d.runtime.read_range(dst, at, n).tobytes() == view.reshape(-1).view(np.uint8)[at:at + n].tobytes()
                                 for at, n in ((0, 64 * MiB), (nbytes // 2 - 32 * MiB, 64 * MiB),
                                               (nbytes - 64 * MiB, 64 * MiB)) if at >= 0 and at + n <= nbytes)
                        report.add(case=f"sweep {tag}: copy the whole {gib:g} GiB table ({dispatch.kernel})",
                                   checked=ok, gpu_ms=steady * 1e3, gbps=2 * nbytes / steady / 1e9,
                                   first_gbps=2 * nbytes / first / 1e9, table=where)
                        del dst, dispatch
                    else:
                        print(f"skipped: the copy of a {gib:g} GiB table (two do not fit)", flush=True)
                del table
                d.empty_cache()
                release(d)
        if d is not dev:
            d.close()
    del host


def spread_section(dev, args, report: Report) -> None:
    """Where the large gather's time goes: one table of ``--table-gib`` GiB with the rows drawn from one block
    only, from all (random and sorted); and single tables just under and just over one block."""
    rng = np.random.default_rng(3)
    for gib in [args.table_gib] + [float(g) for g in args.spread_gib.split(",") if g]:
        nbytes = int(gib * GiB) // ROW * ROW
        host = random_bytes(nbytes, seed=11).view(np.float16).reshape(-1, ROW // 2)
        table = dmlgpu.tensor(host, device=dev)
        n, per_block = host.shape[0], dev.chunk_bytes // ROW
        cases = {"random": rng.integers(0, n, size=args.rows)}
        if gib == args.table_gib and n >= 10 * per_block:
            cases["sorted"] = np.sort(cases["random"])
            cases["block 0 only"] = rng.integers(0, per_block, size=args.rows)
            cases["block 5 only"] = rng.integers(5 * per_block, 6 * per_block, size=args.rows)
            cases["first 2 GiB of blocks 0-9, 1/10 each"] = (rng.integers(0, per_block // 10, size=args.rows)
                                                            + per_block * rng.integers(0, 10, size=args.rows))
        for name, ids_host in cases.items():
            ids = dmlgpu.tensor(ids_host.astype(np.int64), device=dev)
            out, dispatches = capture(dev, dmlgpu.gather, table, ids)
            ok = out.numpy().view(np.uint16).tobytes() == host[ids_host].view(np.uint16).tobytes()
            s = gpu_time(dev, dispatches, args.repeats)
            report.add(case=f"spread: {gib:g} GiB ({len(table.buffer.block_list)} blocks, "
                            f"{'wide' if dispatches[0].wide else '32-bit'}), rows {name}", checked=ok,
                       gpu_ms=s * 1e3, gbps=2 * out.nbytes / s / 1e9)
            del ids, out, dispatches
        del table, host
        dev.empty_cache()


def alloc_section(dev, args, report: Report) -> None:
    """Does the device memory that other allocations hold change a plain copy's speed? The copy shader (the
    gather kernel with tuple size 0) over 1 GiB: alone, then with ``--table-gib`` GiB held by another buffer
    (its buffers made before it, and new ones made after it), and PyTorch's copy beside it."""
    from dmlgpu.bench.gpu_timing import CopyReference
    print("memory heaps", dev.info.memory_heaps, "types", dev.info.memory_types, flush=True)

    def copy(label):
        moved, t = CopyReference(dev, args.repeats).measure(2 * GiB)
        report.add(case=f"alloc: copy 1 GiB, {label}", checked=True, gpu_ms=t.median_ns * 1e-6,
                   gbps=moved / t.median_ns)

    copy("nothing else held")
    src, dst = dev.buffer(random_bytes(GiB, 1)), dev.buffer(nbytes=GiB)
    from dmlgpu.bench.gpu_timing import time_dispatches
    from dmlgpu.plans.index_map import Layout, copy_map
    from dmlgpu.plans.plan import GatherPlan
    plan = GatherPlan(copy_map(Layout.packed((GiB // 16,)), Layout.packed((GiB // 16,)), 16), np.uint32)
    d, up = plan.dispatches(dev.runtime, input=src, indices=dev.runtime.dummy, output=dst)
    dev.runtime.run(d, uploads=up)
    t = gpu_time(dev, d, args.repeats)
    report.add(case="alloc: copy 1 GiB (buffers made first), nothing else", checked=True, gpu_ms=t * 1e3,
               gbps=2 * GiB / t / 1e9)
    other = dev.buffer(nbytes=int(args.table_gib * GiB))
    t = gpu_time(dev, d, args.repeats)
    report.add(case=f"alloc: the same copy with {args.table_gib:g} GiB held after them", checked=True,
               gpu_ms=t * 1e3, gbps=2 * GiB / t / 1e9)
    copy(f"new buffers, {args.table_gib:g} GiB held")
    s = None
    try:
        import torch
        a = torch.empty(GiB, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        s = torch_time(lambda: b.copy_(a), args.repeats)
    except Exception as exc:
        print("no torch copy:", exc)
    if s:
        report.add(case=f"alloc: torch copy 1 GiB, {args.table_gib:g} GiB of Vulkan memory held", checked=True,
                   gpu_ms=s * 1e3, gbps=2 * GiB / s / 1e9)
    del other, d, src, dst
    dev.empty_cache()


def scatter_section(dev, args, report: Report) -> None:
    rng = np.random.default_rng(2)
    nbytes = int(args.scatter_gib * GiB) // ROW * ROW
    host = random_bytes(nbytes, seed=3).view(np.float32).reshape(-1, ROW // 4)
    n = args.rows // 4
    rows = rng.integers(0, host.shape[0], size=(n, 1))
    upd = random_bytes(n * ROW, seed=4).view(np.float32).reshape(n, ROW // 4)
    data = dmlgpu.tensor(host, device=dev)
    out, dispatches = capture(dev, dmlgpu.scatter_nd, data, dmlgpu.tensor(rows, device=dev),
                              dmlgpu.tensor(upd, device=dev))
    got = out.numpy()
    last = n - 1 - np.unique(rows[::-1, 0], return_index=True)[1]
    host[rows[last, 0]] = upd[last]                                   # the reference, in place
    ok = got.view(np.uint32).tobytes() == host.view(np.uint32).tobytes()
    s = gpu_time(dev, dispatches, args.repeats)
    moved = 2 * nbytes + 2 * upd.nbytes                               # the copy, then the updates
    report.add(case=f"scatter_nd {n} rows of 8 KiB into {args.scatter_gib:g} GiB ({len(data.buffer.block_list)} "
                    f"blocks, {'wide' if dispatches[0].wide else '32-bit'})", checked=ok, gpu_ms=s * 1e3,
               gbps=moved / s / 1e9)
    del data, out, host, got, dispatches
    dev.empty_cache()


def elements_section(dev, args, report: Report) -> None:
    rng = np.random.default_rng(5)
    n = int(args.elements_gib * GiB)
    host = random_bytes(n, seed=6)
    idx = rng.integers(min(2**32, n // 2), n, size=1 << 22)
    idx[: 1 << 20] = rng.integers(0, n, size=1 << 20)                   # a quarter anywhere
    if n > 2**32:
        idx[:4] = [0, 2**32 - 1, 2**32, n - 1]
    data = dmlgpu.tensor(host, device=dev)
    ids = dmlgpu.tensor(idx, device=dev)
    out, dispatches = capture(dev, dmlgpu.gather_elements, data, ids)
    ok = np.array_equal(out.numpy(), host[idx])
    s = gpu_time(dev, dispatches, args.repeats)
    report.add(case=f"gather_elements uint8[{n}] ({len(data.buffer.block_list)} blocks), 2^22 int64 indices "
                    f"({int((idx >= 2**32).sum())} past 2^32)", checked=ok, gpu_ms=s * 1e3,
               gbps=(out.nbytes + idx.nbytes + out.nbytes) / s / 1e9)
    del data, ids, out, host, dispatches
    dev.empty_cache()


def small_section(dev, args, report: Report) -> None:
    """Tensors under one binding (the 32-bit kernels), 64 MiB and 1 GiB moved."""
    rng = np.random.default_rng(7)
    table_host = random_bytes(1 * GiB, seed=8).view(np.float32).reshape(-1, 256)        # rows of 1 KiB
    table = dmlgpu.tensor(table_host, device=dev)
    flat = dmlgpu.tensor(table_host.reshape(-1), device=dev)
    for moved in (64 * MiB, 1 * GiB):
        rows = rng.integers(0, table_host.shape[0], size=moved // 2 // 1024)
        out, dispatches = capture(dev, dmlgpu.gather, table, dmlgpu.tensor(rows, device=dev))
        ok = out.numpy().view(np.uint32).tobytes() == table_host[rows].view(np.uint32).tobytes()
        s = gpu_time(dev, dispatches, args.repeats)
        report.add(case=f"small: gather rows of 1 KiB, {moved // MiB} MiB moved", checked=ok, gpu_ms=s * 1e3,
                   gbps=moved / s / 1e9)
        pos = rng.integers(0, table_host.size, size=moved // 2 // 4).astype(np.int32)
        out, dispatches = capture(dev, dmlgpu.gather, flat, dmlgpu.tensor(pos, device=dev))
        ok = out.numpy().view(np.uint32).tobytes() == table_host.reshape(-1)[pos].view(np.uint32).tobytes()
        s = gpu_time(dev, dispatches, args.repeats)
        report.add(case=f"small: gather float32 elements, {moved // MiB} MiB moved", checked=ok, gpu_ms=s * 1e3,
                   gbps=(moved + pos.nbytes) / s / 1e9)
        upd_rows = moved // 2 // 1024
        upd = random_bytes(upd_rows * 1024, seed=9).view(np.float32).reshape(-1, 256)
        at = rng.integers(0, table_host.shape[0], size=(upd_rows, 1))
        target = dmlgpu.tensor(table_host, device=dev)
        out, dispatches = capture(dev, dmlgpu.scatter_nd, target, dmlgpu.tensor(at, device=dev),
                                  dmlgpu.tensor(upd, device=dev))
        s = gpu_time(dev, dispatches, args.repeats)
        report.add(case=f"small: scatter_nd rows of 1 KiB into 1 GiB, {moved // MiB} MiB of updates",
                   checked="-", gpu_ms=s * 1e3, gbps=(2 * GiB + 2 * upd.nbytes) / s / 1e9)
        del out, target, dispatches
    del table, flat
    dev.empty_cache()


SECTIONS = {"alloc": alloc_section, "spread": spread_section, "rows": rows_section, "scatter": scatter_section,
            "elements": elements_section, "small": small_section, "sweep": sweep_section}


def main(argv=None) -> int:
    try:
        from dmlgpu.bench.command import parser
        ap = parser("python -m dmlgpu bench large", __doc__)
    except ImportError:             # (an older tree on PYTHONPATH: see "small" above)
        ap = argparse.ArgumentParser(prog="python -m dmlgpu bench large", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", default="rows,scatter,elements,small",
                    help=f"comma-separated, of: {', '.join(SECTIONS)} (see below; default rows,scatter,elements,small)")
    ap.add_argument("--table-gib", type=float, default=20, help="rows: the large table (GiB; default 20)")
    ap.add_argument("--small-gib", type=float, default=2, help="rows: the small table (GiB; default 2)")
    ap.add_argument("--rows", type=int, default=262_144, help="rows: rows gathered (scatter: a quarter of them)")
    ap.add_argument("--scatter-gib", type=float, default=6, help="scatter: the tensor scattered into (GiB)")
    ap.add_argument("--elements-gib", type=float, default=5, help="elements: the uint8 tensor (GiB)")
    ap.add_argument("--spread-gib", default="3.99,4.01,8", help="spread: tensor sizes (GiB, comma-separated)")
    ap.add_argument("--repeats", type=int, default=10, help="replays timed per measurement (median; default 10)")
    ap.add_argument("--sweep-gib", default="2,4,8,16,20", help="sweep: table sizes (GiB)")
    ap.add_argument("--sweep-rows", default="8192,512", help="sweep: row sizes (bytes: 8192 and/or 512)")
    ap.add_argument("--sweep-out-gib", type=float, default=2, help="sweep: bytes gathered per case (GiB)")
    ap.add_argument("--sweep-span-gib", type=float, default=2,
                    help="sweep: the footprint of the second set of rows (the table's first GiB)")
    ap.add_argument("--sweep-chunks-mib", default="",
                    help="sweep: block sizes (MiB) to repeat it for, a new Device each (0: the default)")
    ap.add_argument("--sweep-torch", type=int, default=1, help="sweep: 0 skips PyTorch")
    ap.add_argument("--chunk-mib", type=int, default=None, help="Device(chunk_bytes=) in MiB (default: the largest)")
    ap.add_argument("--process", choices=("separate", "same"), default="separate",
                    help="rows: each table, and PyTorch's side, in a fresh process of its own (separate: its first "
                         "call beside its steady state), or all in this process (same)")
    ap.add_argument("--child", nargs=2, metavar=("SIDE", "GIB"), default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help="also write a JSON line per measurement to this file")
    args = ap.parse_args(argv)
    unknown = [n for n in args.sections.split(",") if n not in SECTIONS]
    if unknown:
        ap.error(f"--sections: unknown {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
    if args.child:                  # one case of rows_separate, in this fresh process
        side, gib = args.child[0], float(args.child[1])
        row = (rows_case if side == "dmlgpu" else torch_rows_case)(gib, args.rows, args.repeats)
        print("RESULT " + json.dumps(row), flush=True)
        return 0
    sections = args.sections.split(",")
    if sections == ["rows"] and args.process == "separate":    # no Device here: the children are fresh
        report = Report(args.out)
        rows_section(None, args, report)
        report.table()
        return 0 if all(r.get("checked") in (True, "-") for r in report.rows) else 1
    extra = {"chunk_bytes": args.chunk_mib * MiB} if args.chunk_mib else {}
    dev = dmlgpu.Device(max_queued=0, **extra) if "max_queued" in dmlgpu.Device.__init__.__code__.co_varnames \
        else dmlgpu.Device()
    info = dev.info
    print(f"{info.name}: maxStorageBufferRange {info.max_storage_buffer_range}, memory {info.device_memory}, "
          f"block {getattr(dev, 'max_block', '?')}, chunk {getattr(dev, 'chunk_bytes', '?')}, "
          f"maxMemoryAllocationSize {getattr(info, 'max_memory_allocation_size', '?')}, "
          f"maxBufferSize {getattr(info, 'max_buffer_size', '?')}, features {sorted(getattr(dev, 'features', ()))}",
          flush=True)
    report = Report(args.out)
    for name in sections:
        SECTIONS[name](dev, args, report)
    report.table()
    return 0 if all(r.get("checked") in (True, "-") for r in report.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
