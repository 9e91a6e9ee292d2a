"""Probe: NumPy tables read in place (issue 41; runtime/host.py, kp patch 0023, execution.reads_in_place).

Parts (each prints its own lines; a part that fails prints the error and the others still run):
  a  NumPy in and out: 65,536 random rows of 256 B from a 256 MiB float32 table, dmlgpu.take against np.take:
     the first call of the process (cold: the import of the table's pages, the kernel's pipeline), then the
     steady state (median), with the result written into the returned array (imported) and downloaded.
  b  the crossover: the same gather read in place (forced), uploaded (a Device with profile "no-host-import")
     and np.take, by table size (65,536 rows of 256 B), then by rows gathered from the 256 MiB table.
  c  a host table larger than the GPU's memory (--host-gib, default 90): 1M random rows of 512 B gathered to a
     device Tensor by dmlgpu (in this process, with no CUDA context of PyTorch's) against PyTorch's
     table[ids].to("cuda") (a CPU gather and a copy), and its pinned-output variant, in a process of its own
     run after this one has freed its table (each builds its own: the machine holds one at a time).

Every result is checked bit for bit against NumPy (or against the table's pattern, part c).

  source tools/device_env.sh && python3 bench/probes/host_tables.py             # all parts, --host-gib 90
  python3 bench/probes/host_tables.py --quick                                    # small sizes (lavapipe)
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

ROW_BYTES_C = 512


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f} ms"


def _timed(fn, reps: int) -> tuple[float, float, object]:
    """(first call's time, median of the next ``reps``, the last result)."""
    t0 = time.perf_counter()
    res = fn()
    first = time.perf_counter() - t0
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times) if times else first, res


def _import_status(dev, array) -> str:
    """Whether ``array`` is read in place on ``dev`` (its import is cached by the call), else why not."""
    from dmlgpu.runtime import host
    if not host.available(dev):
        return "NO: the device cannot import host memory (no VK_EXT_external_memory_host, or kp without patch 0023)"
    if not host.importable(dev, array):
        return f"NO: the array is not importable (C-contiguous {array.flags.c_contiguous}, address % 16 = " \
               f"{array.ctypes.data % 16}, bytes % 4 = {array.nbytes % 4})"
    flat = array.reshape(-1).view(np.uint8)
    n = flat.size if flat.size <= dev.whole_max else dev.chunk_bytes      # (its first block is enough to ask)
    try:                                # the driver's answer, with its reason
        for t in dev._mgr.import_host_buffers(flat.ctypes.data, n, n):
            t.destroy()
    except RuntimeError as e:
        return f"NO: the driver refused the import: {e}"
    return f"yes (address % 4096 = {array.ctypes.data % 4096})"


def part_a(args) -> None:
    import dmlgpu
    from dmlgpu.api import execution
    from dmlgpu.runtime import host
    t_open = time.perf_counter()
    dev = dmlgpu.default_device()
    t_open = time.perf_counter() - t_open
    mib = 32 if args.quick else 256
    rows = (mib << 20) // 256
    rng = np.random.default_rng(0)
    table = _normal(rng, (rows, 64))
    ids = rng.integers(0, rows, 65536)
    print(f"[a] {dev.info.name}: host import {'available' if host.available(dev) else 'NOT available'} "
          f"(minImportedHostPointerAlignment {dev.info.min_imported_host_pointer_alignment}); device opened in "
          f"{_ms(t_open).strip()}; table {mib} MiB float32, 65,536 random rows of 256 B, NumPy in and out")
    want = np.take(table, ids, axis=0)
    first, _, got = _timed(lambda: dmlgpu.take(table, ids, axis=0), 0)
    assert got.tobytes() == want.tobytes(), "part a: cold result differs from np.take"
    print(f"[a] the table read in place: {_import_status(dev, table)}")
    up = dmlgpu.Device(profile="no-host-import")

    def downloaded():
        saved = execution.HOST_OUT_BYTES
        execution.HOST_OUT_BYTES = 1 << 62              # the result downloaded instead of written in place
        try:
            return dmlgpu.take(table, ids, axis=0)
        finally:
            execution.HOST_OUT_BYTES = saved
    cases = {"np.take": lambda: np.take(table, ids, axis=0),
             "in place, result written in place": lambda: dmlgpu.take(table, ids, axis=0),
             "in place, result downloaded": downloaded,
             "uploaded (before: no-host-import)": lambda: dmlgpu.take(table, ids, axis=0, device=up)}
    for fn in cases.values():                           # warm: each case's pipeline and imports
        assert fn().tobytes() == want.tobytes()
    times: dict = {k: [] for k in cases}
    for _ in range(args.reps):                          # interleaved rounds: a load that varies hits all alike
        for k, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    ref = times["np.take"]
    print(f"[a] dmlgpu.take cold (first call of the process) {_ms(first)}  -> {statistics.median(ref) / first:5.2f}x "
          f"np.take's steady time")
    for k, ts in times.items():
        ratio = statistics.median([r / t for r, t in zip(ref, ts)])
        print(f"[a] {k:36s} steady {_ms(statistics.median(ts))}  -> {ratio:5.2f}x np.take (median of "
              f"{args.reps} interleaved rounds' ratios)")
    up.close()


def part_b(args) -> None:
    import dmlgpu
    from dmlgpu.api import execution
    dev = dmlgpu.default_device()
    up = dmlgpu.Device(profile="no-host-import")
    rng = np.random.default_rng(1)
    reps = max(3, args.reps // 2)

    def forced():
        saved = execution.HOST_TABLE_BYTES, execution.HOST_READ_SHARE
        execution.HOST_TABLE_BYTES, execution.HOST_READ_SHARE = 0, float("inf")      # forced in place
        return saved

    def row(label, table, ids):
        want = np.take(table, ids, axis=0)

        def in_place():
            saved = forced()
            try:
                return dmlgpu.take(table, ids, axis=0, device=dev)
            finally:
                execution.HOST_TABLE_BYTES, execution.HOST_READ_SHARE = saved
        cases = {"in place": in_place, "upload": lambda: dmlgpu.take(table, ids, axis=0, device=up),
                 "rule": lambda: dmlgpu.take(table, ids, axis=0, device=dev),
                 "np.take": lambda: np.take(table, ids, axis=0)}
        for fn in cases.values():
            assert fn().tobytes() == want.tobytes()
        times: dict = {k: [] for k in cases}
        for _ in range(reps):                           # interleaved rounds
            for k, fn in cases.items():
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        t = {k: statistics.median(v) for k, v in times.items()}
        wins = sum(a < b for a, b in zip(times["in place"], times["upload"]))
        picks = "in place" if execution.reads_in_place(dev, _Gather, table.nbytes, want.nbytes) else "upload"
        print(f"[b] {label:34s} in place {_ms(t['in place'])}  upload {_ms(t['upload'])}  rule ({picks:8s}) "
              f"{_ms(t['rule'])}  np.take {_ms(t['np.take'])}  in place faster in {wins}/{reps} rounds")

    print(f"[b] {dev.info.name}: the rule reads in place from {execution.HOST_TABLE_BYTES} B tables whose result "
          f"takes at most {execution.HOST_READ_SHARE} of them")
    sizes = (1, 4, 16, 64) if args.quick else (1, 4, 16, 64, 256, 1024)
    for mib in sizes:
        n = (mib << 20) // 256
        table = _normal(rng, (n, 64))
        row(f"table {mib:5d} MiB, 65,536 rows", table, rng.integers(0, n, 65536))
        del table
    mib = 32 if args.quick else 256
    n = (mib << 20) // 256
    table = _normal(rng, (n, 64))
    for count in sorted({1024, 16384, 65536, 262144, n, 2 * n}):
        row(f"table {mib} MiB, {count:9,d} rows (x{count / n:.3f})", table, rng.integers(0, n, count))
    up.close()


class _Gather:                 # what execution.reads_in_place asks of a plan
    output_from_input = False


def _fill(table: np.ndarray, threads: int) -> None:
    """Row r of the uint32 table holds r in every word, written by ``threads`` threads (NumPy releases the GIL)."""
    step = 1 << 20

    def work(lo: int) -> None:
        hi = min(lo + step, table.shape[0])
        table[lo:hi] = np.arange(lo, hi, dtype=np.uint32)[:, None]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, range(0, table.shape[0], step)))


ALIGNED = False      # --aligned: tables start on a page (NumPy's own large arrays start 16 bytes into one)


def _empty(shape, dtype) -> np.ndarray:
    """np.empty, or with --aligned a view of a larger array that starts on a 4096-byte boundary."""
    if not ALIGNED:
        return np.empty(shape, dtype)
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + 4096, np.uint8)
    at = -raw.ctypes.data % 4096
    return raw[at:at + nbytes].view(dtype).reshape(shape)


def _normal(rng, shape) -> np.ndarray:
    table = _empty(shape, np.float32)
    table[...] = rng.standard_normal(shape, dtype=np.float32)
    return table


def _host_table(gib: float, threads: int) -> tuple[np.ndarray, float]:
    rows = int(gib * (1 << 30)) // ROW_BYTES_C
    t0 = time.perf_counter()
    table = _empty((rows, ROW_BYTES_C // 4), np.uint32)
    _fill(table, threads)
    return table, time.perf_counter() - t0


def part_c_dmlgpu(args) -> None:
    import dmlgpu
    dev = dmlgpu.default_device()
    table, t_fill = _host_table(args.host_gib, args.threads)
    rows = table.shape[0]
    print(f"[c] {dev.info.name}: host table {table.nbytes / (1 << 30):.1f} GiB ({rows:,} rows of {ROW_BYTES_C} B; "
          f"device memory {dev.memory_capacity / (1 << 30):.1f} GiB), built in {t_fill:.1f} s")
    rng = np.random.default_rng(2)
    count = args.c_rows
    ids_np = rng.integers(0, rows, count)
    print(f"[c] blocks of {dev.chunk_bytes >> 20} MiB, maxMemoryAllocationSize "
          f"{dev.info.max_memory_allocation_size:#x} (several imports where the table exceeds it)", flush=True)
    ids = dmlgpu.tensor(ids_np, device=dev)
    dev.synchronize()

    def gather():
        out = dmlgpu.gather(table, ids, axis=0)        # a device Tensor; the table read in place (mode clamp)
        dev.synchronize()
        return out
    try:
        first, steady, out = _timed(gather, args.reps)
    except Exception:
        print(f"[c] the table read in place: {_import_status(dev, table)}", flush=True)
        raise
    got = out.numpy()
    assert (got == ids_np.astype(np.uint32)[:, None]).all(), "part c: dmlgpu's rows are not the table's"
    gb = count * ROW_BYTES_C / 1e9
    print(f"[c] dmlgpu.gather(host table, ids Tensor) -> Tensor: cold {_ms(first)} (import of the pages included), "
          f"steady {_ms(steady)} = {gb / steady:6.2f} GB/s")
    print(f"RESULT dmlgpu {steady:.6f} {first:.6f}", flush=True)


def part_c_torch(args) -> None:
    import torch
    table_np, t_fill = _host_table(args.host_gib, args.threads)
    table = torch.from_numpy(table_np.view(np.int32))     # (torch's uint32 has few kernels; the rows' ids fit)
    rows = table.shape[0]
    rng = np.random.default_rng(2)
    ids_np = rng.integers(0, rows, args.c_rows)
    ids = torch.from_numpy(ids_np)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    print(f"[c] torch {torch.__version__} on {torch.cuda.get_device_name()}: host table built in {t_fill:.1f} s, "
          f"{torch.get_num_threads()} CPU threads")

    def plain():
        out = table[ids].to("cuda")
        torch.cuda.synchronize()
        return out
    pinned = torch.empty((args.c_rows, table.shape[1]), dtype=table.dtype).pin_memory()

    def best():
        torch.index_select(table, 0, ids, out=pinned)
        out = pinned.to("cuda", non_blocking=True)
        torch.cuda.synchronize()
        return out
    first, steady, out = _timed(plain, args.reps)
    assert (out.cpu().numpy() == ids_np[:, None]).all()
    gb = args.c_rows * ROW_BYTES_C / 1e9
    print(f"[c] torch table[ids].to('cuda'):                  cold {_ms(first)}, steady {_ms(steady)} = "
          f"{gb / steady:6.2f} GB/s")
    f2, s2, out = _timed(best, args.reps)
    assert (out.cpu().numpy() == ids_np[:, None]).all()
    print(f"[c] torch index_select into pinned + to(non_blocking): cold {_ms(f2)}, steady {_ms(s2)} = "
          f"{gb / s2:6.2f} GB/s")
    print(f"RESULT torch {steady:.6f} {s2:.6f}", flush=True)


def _child(part: str, args) -> dict:
    """Runs one part in a process of its own; returns its RESULT numbers (empty where it failed)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--part", part, "--host-gib", str(args.host_gib),
           "--c-rows", str(args.c_rows), "--reps", str(args.reps), "--threads", str(args.threads)] + \
        (["--aligned"] if args.aligned else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    found = {}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            _, who, *vals = line.split()
            found[who] = [float(v) for v in vals]
        else:
            print(line, flush=True)
    if r.returncode:
        print(f"[c] the {part} process failed (exit {r.returncode}):\n{r.stderr[-3000:]}", flush=True)
    return found


def part_c(args) -> None:
    found = {} if args.no_dmlgpu else _child("c-dmlgpu", args)
    if args.no_torch:
        return
    found.update(_child("c-torch", args))
    if "dmlgpu" in found and "torch" in found:
        d, (t_plain, t_best) = found["dmlgpu"][0], found["torch"]
        print(f"[c] steady: dmlgpu {t_plain / d:5.2f}x torch table[ids].to('cuda'), "
              f"{t_best / d:5.2f}x its pinned variant (target >= 2x the first)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="abc", help="which parts to run (default abc)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a 32 MiB table, --host-gib 0.25, 3 reps): a "
                                                         "smoke test on lavapipe")
    ap.add_argument("--host-gib", type=float, default=None, help="part c's host table in GiB (default 90; --quick: "
                                                                  "0.25); pick it above the GPU's memory")
    ap.add_argument("--c-rows", type=int, default=1 << 20, help="part c's rows gathered (default 1M; --quick 64K)")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions per case (default 10, --quick 3)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 4, help="threads filling part c's table")
    ap.add_argument("--no-torch", action="store_true", help="part c without PyTorch")
    ap.add_argument("--no-dmlgpu", action="store_true", help="part c's PyTorch side alone (for a second command)")
    ap.add_argument("--timeout", type=int, default=480, help="seconds for each part-c process (default 480)")
    ap.add_argument("--aligned", action="store_true", help="tables start on a 4096-byte page (default: where NumPy "
                                                           "puts them, 16 bytes into a page)")
    ap.add_argument("--part", help=argparse.SUPPRESS)
    args = ap.parse_args()
    global ALIGNED
    ALIGNED = args.aligned
    if args.host_gib is None:
        args.host_gib = 0.25 if args.quick else 90.0
    if args.reps is None:
        args.reps = 3 if args.quick else 10
    if args.quick and args.c_rows == 1 << 20:
        args.c_rows = 1 << 16
    if args.part == "c-dmlgpu":
        part_c_dmlgpu(args)
        return 0
    if args.part == "c-torch":
        part_c_torch(args)
        return 0
    failed = 0
    for name, fn in (("a", part_a), ("b", part_b), ("c", part_c)):
        if name not in args.parts:
            continue
        try:
            fn(args)
        except Exception:
            failed += 1
            print(f"[{name}] FAILED:\n{traceback.format_exc()}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
