"""Runs the benchmark: every (workload, size) case on dmlgpu and on the peer, then the small-op latency.
Returns the results as one JSON-ready dict (the format is described in bench/report.py)."""
from __future__ import annotations

import datetime
import gc
import platform
import statistics
import subprocess
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import dmlgpu

from . import latency
from .clock import host_samples
from .gpu_timing import CopyReference, capture, release, time_dispatches
from .progress import Progress
from .units import fmt_bytes
from .workloads import Workload

MEMORY_HEADROOM = 0.8     # use at most this fraction of the free device memory (when the peer knows it)
EAGER_BUDGET_S = 2.0      # stop timing a case's eager calls after this long (at least 5)


@dataclass
class Settings:
    """What to run. Sizes are target bytes moved; ``max_size`` caps them."""

    workloads: list
    sizes: list
    max_size: int
    repeats: int = 100              # timed dispatches per Recording; CUDA-event iterations of the peer
    latency: bool = True
    latency_iters: int = 1000       # round trips timed (or fewer: latency_budget_s)
    latency_budget_s: float = 2.0
    latency_ops: int = 1000         # small ops recorded into one submission
    seed: int = 0
    command: str = ""


def default_max_size(info: dmlgpu.DeviceInfo, largest: int) -> int:
    """``largest``, or twice maxStorageBufferRange if that is smaller (256 MiB moved on lavapipe)."""
    return min(largest, 2 * info.max_storage_buffer_range)


def run(device: dmlgpu.Device, peer, settings: Settings, progress: Progress) -> dict:
    """Every case, then the latency; the results (bench/report.py describes them)."""
    rng = np.random.default_rng(settings.seed)
    copy_ref = CopyReference(device, settings.repeats)
    plan = [(w, s) for w in settings.workloads for s in settings.sizes if s <= settings.max_size]
    progress.start(len(plan))
    cases = []
    for w, size in plan:
        progress.step(f"{w.name} {fmt_bytes(size)}")
        cases.append(run_case(device, peer, copy_ref, w, size, settings.repeats, rng))
        gc.collect()
        peer.release()
        bad = cases[-1].get("error") or (cases[-1].get("verified") is False and cases[-1].get("mismatch"))
        if bad:
            progress.warn(f"{w.name} {fmt_bytes(size)}: {bad}")
    lat = None
    if settings.latency:
        progress.step("small-op latency")
        lat = run_latency(device, peer, settings, rng)
        if lat["mismatches"]:
            progress.warn("small-op latency: MISMATCH in " + "; ".join(lat["mismatches"]))
    progress.finish()
    return {"meta": meta(device, peer, settings), "cases": cases, "latency": lat}


def run_case(device, peer, copy_ref: CopyReference, w: Workload, target: int, repeats: int, rng) -> dict:
    """One case as a dict: its timings, or ``skipped`` (why), or ``error``."""
    row = {"workload": w.name, "group": w.group, "operator": w.operator, "target_bytes": target}
    case = w.build(target, rng)
    if case is None:
        return {**row, "skipped": "smaller than one unit of the workload"}
    row.update(shape=case.shape, moved_bytes=case.moved, dtype=str(next(iter(case.operands.values())).dtype))
    limit = device.info.max_storage_buffer_range
    largest = max(case.buffer_sizes())
    if largest > limit:
        return {**row, "skipped": f"a {fmt_bytes(largest)} buffer exceeds maxStorageBufferRange "
                                  f"({fmt_bytes(limit)})"}
    free = peer.free_bytes()
    need = 2 * sum(case.buffer_sizes()) + case.moved      # dmlgpu's and the peer's copies, the copy test
    if free is not None and need > MEMORY_HEADROOM * free:
        return {**row, "skipped": f"needs about {fmt_bytes(need)} of device memory; {fmt_bytes(free)} free"}
    try:
        tensors = {k: dmlgpu.tensor(v, device=device) for k, v in case.operands.items()}
        eager = eager_wall(device, case.dmlgpu, tensors, repeats)
        result, dispatches = capture(device, case.dmlgpu, tensors)
        got = result.numpy()
        gpu = time_dispatches(device, dispatches, repeats)
        del tensors, result, dispatches
        release(device)
        copy_moved, copy = copy_ref.measure(case.moved)
        peer_args = {k: peer.put(v) for k, v in {**case.operands, **case.aux}.items()}
        best, mismatch = time_peer(peer, peer.calls(case), peer_args, repeats, got)
        deterministic = None
        if case.scatter and peer.has_deterministic_mode:
            deterministic, det_mismatch = time_peer(peer, peer.calls(case), peer_args, repeats, got, True)
            mismatch = mismatch or det_mismatch
        del peer_args
    except Exception as exc:   # one failing case must not end the run: it is reported instead
        release(device)
        return {**row, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=-4)}
    dml_gbps = case.moved / gpu.median_ns
    copy_gbps = copy_moved / copy.median_ns
    out = {**row,
           "dmlgpu": {**gpu.summary(), "gbps": dml_gbps},
           "eager": {**eager, "over_stream_ns": eager["median_ns"] - gpu.stream_ns},
           "copy": {**copy.summary(), "moved_bytes": copy_moved, "gbps": copy_gbps},
           "copy_fraction": dml_gbps / copy_gbps,
           "peer": {**best, "name": peer.kind, "gbps": case.moved / best["median_ns"]},
           "ratio": best["median_ns"] / gpu.median_ns,
           "verified": mismatch is None, "mismatch": mismatch}
    if deterministic is not None:
        out["peer_deterministic"] = {**deterministic, "gbps": case.moved / deterministic["median_ns"]}
        out["ratio_deterministic"] = deterministic["median_ns"] / gpu.median_ns
    if case.ceiling_bytes:
        ceiling_gbps = copy_gbps * case.moved / case.ceiling_bytes
        out["ceiling"] = {"bytes": case.ceiling_bytes, "gbps": ceiling_gbps}
        out["ceiling_fraction"] = dml_gbps / ceiling_gbps
    return out


def time_peer(peer, calls: dict, args: dict, repeats: int, got: np.ndarray, deterministic: bool = False):
    """(the fastest of the peer's ``calls``: its summary, "call" (its name) and "calls" (every call's median ns,
    or why it did not run), the first mismatch of a call's result against ``got`` or None). RuntimeError
    when no call runs."""
    times, mismatch, best = {}, None, None
    for name, fn in calls.items():
        try:
            peer_time, result = peer.time(fn, args, repeats, deterministic=deterministic)
            result = peer.fetch(result)
        except Exception as exc:    # e.g. no deterministic implementation, or an index dtype it refuses
            times[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            continue
        times[name] = peer_time.median_ns
        bad = compare(got, result)
        if bad and mismatch is None:
            mismatch = f"{name}: {bad}"
        if best is None or peer_time.median_ns < best[1].median_ns:
            best = (name, peer_time)
        del result
        peer.release()
    if best is None:
        raise RuntimeError("no peer call ran: " + "; ".join(f"{k}: {v}" for k, v in times.items()))
    return {**best[1].summary(), "call": best[0], "calls": times}, mismatch


def eager_wall(device, call, tensors: dict, repeats: int) -> dict:
    """Wall time of the eager call a user makes on device Tensors until its result is ready (the call, which
    is queued, then Device.synchronize()): the first call of the case (its output allocated anew) and the
    median of ``repeats`` more (steady state), in ns."""
    def once():
        result = call(tensors)
        device.synchronize()
        return result

    device.synchronize()
    start = time.perf_counter()
    del_me = once()
    first = time.perf_counter() - start
    del del_me
    samples = host_samples(once, repeats, EAGER_BUDGET_S)
    return {"first_ns": first * 1e9, "median_ns": statistics.median(samples) * 1e9, "samples": len(samples)}


def compare(got: np.ndarray, expected: np.ndarray) -> str | None:
    """None if the arrays are equal bit for bit, else what differs."""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return f"got {got.shape} {got.dtype}, the peer {expected.shape} {expected.dtype}"
    as_uint = np.dtype(f"u{got.dtype.itemsize}")
    a = np.ascontiguousarray(got).view(as_uint)
    b = np.ascontiguousarray(expected).view(as_uint)
    diff = a != b
    if not diff.any():
        return None
    where = tuple(int(i) for i in np.argwhere(diff)[0])
    return (f"{int(diff.sum())} of {diff.size} elements differ; first at {where}: "
            f"dmlgpu {got[where]!r}, peer {expected[where]!r}")


def run_latency(device, peer, settings: Settings, rng) -> dict:
    table, idx, perm = latency.inputs(rng)
    dml, mismatches = latency.dmlgpu_small_gather(device, table, idx, perm, settings.latency_iters,
                                                  settings.latency_budget_s, settings.latency_ops)
    peer_result = peer.small_gather(table, idx[0], perm, settings.latency_iters, settings.latency_budget_s,
                                    settings.latency_ops)
    data, rows, updates = latency.scatter_inputs(rng)
    sc, sc_mismatches = latency.dmlgpu_small_scatter(device, data, rows, updates, settings.latency_iters,
                                                     settings.latency_budget_s, settings.latency_ops)
    peer_sc = peer.small_scatter(data, rows, updates, settings.latency_iters, settings.latency_budget_s,
                                 settings.latency_ops)
    return {"operation": latency.describe(), "dmlgpu": dml, "peer": {"name": peer.kind, **peer_result},
            "scatter": {"operation": latency.describe_scatter(), "dmlgpu": sc, "peer": {"name": peer.kind, **peer_sc}},
            "mismatches": mismatches + sc_mismatches}


def meta(device, peer, settings: Settings) -> dict:
    info = device.info
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": settings.command,
        "device": {"index": info.index, "name": info.name, "type": info.type,
                   "max_storage_buffer_range": info.max_storage_buffer_range,
                   "timestamp_period_ns": info.timestamp_period_ns},
        "peer": peer.info(),
        "dmlgpu": {"version": dmlgpu.__version__, "commit": _git_commit()},
        "numpy": np.__version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "repeats": settings.repeats,
        "index_dtype": "int64 (int32 in the workloads named ...-i32)",
        "bytes_moved": "read + written, indices included: gathers 2*output + indices; "
                       "scatters 2*data + updates + indices",
    }


def _git_commit() -> str | None:
    """The repository's commit (with "+dirty" when the tree has changes), or None outside git."""
    root = Path(__file__).resolve().parent.parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None
