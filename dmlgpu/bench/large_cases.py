"""The pieces of ``python -m dmlgpu bench large``'s measurements (dmlgpu/bench/large.py: its sections): the tables'
bytes, the report, GPU timings (replays, a first run beside the steady state, PyTorch's by CUDA events), the
large-tensor variants forced, one case of the rows section (dmlgpu's or PyTorch's, in a fresh process), and the
sweep's dtypes and index maps."""
from __future__ import annotations

import json
import time

import numpy as np

import dmlgpu
from dmlgpu.bench.clock import torch_time
from dmlgpu.bench.gpu_timing import capture, release, time_dispatches

GiB, MiB = 1 << 30, 1 << 20
ROW = 8192


def random_bytes(nbytes: int, seed: int) -> np.ndarray:
    """``nbytes`` (a multiple of 8) random-looking bytes: 64 MiB of random bytes repeated, each repetition
    XORed with its own 64-bit word."""
    rng = np.random.default_rng(seed)
    tile = np.frombuffer(rng.bytes(min(nbytes, 64 * MiB)), np.uint64)
    out = np.empty(nbytes // 8, np.uint64)
    for k, pos in enumerate(range(0, out.size, tile.size)):
        n = min(tile.size, out.size - pos)
        np.bitwise_xor(tile[:n], np.uint64(k * 0x9E3779B97F4A7C15 % 2**64), out=out[pos:pos + n])
    return out.view(np.uint8)


class Report:
    def __init__(self, path: str | None):
        self.rows: list[dict] = []
        self.path = path

    def add(self, **row) -> None:
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")

    def table(self) -> None:
        """The rows: steady-state GPU ms and GB/s; a first run's GB/s where measured; PyTorch's where run; and
        where a case ran in a fresh process (rows_separate), the steady call + synchronize GB/s and the first
        call's wall ms of both sides."""
        keys = ("first_gbps", "torch_gbps", "torch_first_gbps", "wall_gbps", "torch_wall_gbps", "first_wall_ms",
                "torch_first_wall_ms")
        print(f"\n{'case':78} {'checked':8} {'GPU ms':>9} {'GB/s':>8} {'first GB/s':>10} {'torch GB/s':>10} "
              f"{'torch first':>11} {'wall GB/s':>9} {'torch wall':>10} {'1st ms':>7} {'torch 1st ms':>12}")
        for r in self.rows:
            cols = [f"{r[k]:.{1 if k.endswith('ms') else 0}f}" if r.get(k) else "-" for k in keys]
            print(f"{r['case']:78} {str(r.get('checked', '-')):8} {r['gpu_ms']:9.3f} {r['gbps']:8.0f} {cols[0]:>10} "
                  f"{cols[1]:>10} {cols[2]:>11} {cols[3]:>9} {cols[4]:>10} {cols[5]:>7} {cols[6]:>12}")


def gpu_time(dev, dispatches, repeats: int) -> float:
    """Median GPU seconds of one replay of ``dispatches``."""
    t = time_dispatches(dev, dispatches, repeats)
    release(dev)
    return t.median_ns * 1e-9


def torch_gather_rows(table_bytes: int, rows: int, repeats: int) -> float | None:
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    table = torch.empty((table_bytes // ROW, ROW // 2), dtype=torch.float16, device="cuda")
    table.view(torch.int16).random_()
    ids = torch.randint(0, table.shape[0], (rows,), device="cuda")
    s = torch_time(lambda: torch.index_select(table, 0, ids), repeats)
    del table, ids
    torch.cuda.empty_cache()
    return s


def forced_wide(dev, plan, table, ids, out, wide: bool = False):
    """The dispatches of a GatherPlan on these Tensors through its ADDR variant (``wide``: its 64-bit WIDE one),
    run once: the large-tensor path on a one-block table, which measures what addressing costs."""
    d, uploads = plan.addressed(dev.runtime, ids.buffer, table.buffer, out.buffer, wide=wide)
    dev.runtime.run(d, uploads=uploads)
    return d


def rows_case(gib: float, rows: int, repeats: int) -> dict:
    """One table of the rows section in this process, which must be fresh: a new default Device, the table
    uploaded, ``rows`` random rows of 8 KiB gathered. The first gather is run with timestamps (its GPU time) and
    timed from the call to its completion (its wall time: pipeline creation included); then the steady state:
    the median call + synchronize() of ``repeats`` gathers, and the median GPU time of ``repeats`` replays."""
    import statistics
    dev = dmlgpu.Device()
    nbytes = int(gib * GiB) // ROW * ROW
    host = random_bytes(nbytes, seed=int(gib * 10)).view(np.float16).reshape(-1, ROW // 2)
    table = dmlgpu.tensor(host, device=dev)
    ids_host = np.random.default_rng(1).integers(0, host.shape[0], size=rows).astype(np.int64)
    ids = dmlgpu.tensor(ids_host, device=dev)
    dev.synchronize()
    t0 = time.perf_counter()
    with dev.record(timestamps=True) as rec:      # ending the block runs it: the process's first gather
        out = dmlgpu.gather(table, ids)
    first_wall = time.perf_counter() - t0
    ts = rec.timestamps()
    first_gpu = (ts[-1] - ts[0]) * 1e-9
    del rec
    ok = out.numpy().view(np.uint16).tobytes() == host[ids_host].view(np.uint16).tobytes()
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dmlgpu.gather(table, ids, out=out)
        dev.synchronize()
        walls.append(time.perf_counter() - t0)
    _, dispatches = capture(dev, dmlgpu.gather, table, ids)
    gpu = gpu_time(dev, dispatches, repeats)
    moved = 2 * out.nbytes
    return dict(case=f"gather {rows} rows of 8 KiB from {gib:g} GiB ({len(table.buffer.block_list)} blocks, "
                     f"{'wide' if dispatches[0].wide else '32-bit'}), fresh process", checked=ok,
                gpu_ms=gpu * 1e3, gbps=moved / gpu / 1e9, first_gbps=moved / first_gpu / 1e9,
                first_wall_ms=first_wall * 1e3, wall_gbps=moved / statistics.median(walls) / 1e9,
                clock_hold=dev.clock_hold.state, table_bytes=nbytes)


def torch_rows_case(gib: float, rows: int, repeats: int) -> dict:
    """rows_case's gather through PyTorch's index_select on a CUDA table of the same shape (random bits), in
    this process, which must be fresh: the first call's GPU time (CUDA events) and wall time (call +
    synchronize), then the medians of ``repeats``."""
    import statistics
    import torch
    table = torch.empty((int(gib * GiB) // ROW, ROW // 2), dtype=torch.float16, device="cuda")
    table.view(torch.int16).random_()
    ids = torch.randint(0, table.shape[0], (rows,), device="cuda")
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    a.record()
    out = torch.index_select(table, 0, ids)
    b.record()
    torch.cuda.synchronize()
    first_wall = time.perf_counter() - t0
    first_gpu = a.elapsed_time(b) * 1e-3
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.index_select(table, 0, ids, out=out)
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
    steady = torch_time(lambda: torch.index_select(table, 0, ids, out=out), repeats)
    moved = 2 * out.numel() * out.element_size()
    return dict(torch_gbps=moved / steady / 1e9, torch_first_gbps=moved / first_gpu / 1e9,
                torch_first_wall_ms=first_wall * 1e3, torch_wall_gbps=moved / statistics.median(walls) / 1e9,
                torch=torch.__version__)


def first_and_steady(dev, dispatches, uploads, repeats: int) -> tuple[float, float]:
    """(GPU seconds of the dispatches' first run, the median of ``repeats`` replays after it). Their parameter
    buffers are uploaded first, in a submission of their own, so that the first run is the dispatches alone."""
    if uploads:
        dev.runtime.run([], uploads=uploads)
    with dev.record(timestamps=True) as rec:         # ending the block runs it: the first run
        dev.runtime.run(dispatches)
    ts = rec.timestamps()
    first = (ts[sum(2 if d.barrier else 1 for d in dispatches)] - ts[0]) * 1e-9
    del rec
    return first, gpu_time(dev, dispatches, repeats)


def warm_up(dev, seconds: float = 1.0) -> None:
    """Keeps the GPU busy copying 256 MiB for about ``seconds`` (not on CPU devices), so that a sweep's first
    case does not meet an idle GPU. On freshly started H200 machines the first case still measured cold after
    it (1,670-1,690 GB/s steady against 4,030; bench/RESULTS.md): the cause was not found."""
    from dmlgpu.plans.plan import CopyPlan
    from dmlgpu.plans.index_map import Layout, copy_map
    if dev.info.type == "CPU":
        return
    units = 256 * MiB // 16
    src, dst = dev.buffer(nbytes=256 * MiB), dev.buffer(nbytes=256 * MiB)
    dispatch, uploads = CopyPlan(copy_map(Layout.packed((units,)), Layout.packed((units,)), 16)).dispatch(dev.runtime, src, dst)
    if uploads:
        dev.runtime.run([], uploads=uploads)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        gpu_time(dev, [dispatch], 100)
    del src, dst, dispatch
    dev.empty_cache()


def torch_first_and_steady(table_shape, dtype: str, ids_host, repeats: int) -> tuple[float, float] | None:
    """PyTorch's index_select of ``ids_host`` from a new CUDA table of this shape and dtype (random bits): (the
    first call's seconds, the median of ``repeats`` after 3 more), from CUDA events; None without CUDA torch."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    table = torch.empty(table_shape, dtype=getattr(torch, dtype), device="cuda")
    table.view(torch.int16 if table.element_size() == 2 else torch.int32).random_()
    ids = torch.from_numpy(ids_host).cuda()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    torch.index_select(table, 0, ids)
    b.record()
    b.synchronize()
    first = a.elapsed_time(b) * 1e-3
    steady = torch_time(lambda: torch.index_select(table, 0, ids), repeats)
    del table, ids
    torch.cuda.empty_cache()
    return first, steady


def block_summary(buf) -> str:
    """A buffer's blocks: count, size, and the alignment of their device addresses (their lowest set bit)."""
    blocks = buf.block_list
    align = min((b.address & -b.address) for b in blocks) if all(b.address for b in blocks) else 0
    return f"{len(blocks)} x {blocks[0].size / MiB:g} MiB blocks, addresses aligned to {align / MiB:g} MiB"


def sweep_dtype(row: int) -> np.dtype:
    """The sweep table's dtype for rows of ``row`` bytes (a multiple of 16): float32 up to 512 B, else float16
    (16-byte units either way)."""
    return np.dtype("float32" if row <= 512 else "float16")


def dispatches_map(table, ids):
    from dmlgpu.plans.index_map import Layout, take_map, take_shape
    shape = take_shape(table.shape, ids.shape, 0)
    return take_map(Layout.packed(table.shape), Layout.packed(ids.shape), Layout.packed(shape), 0,
                    table.dtype.itemsize)
