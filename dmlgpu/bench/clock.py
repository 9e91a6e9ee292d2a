"""Timing: host-side with time.perf_counter, and PyTorch peers' GPU time with CUDA events."""
from __future__ import annotations

import statistics
import time


def host_samples(fn, max_iters: int, budget_s: float, min_iters: int = 5) -> list[float]:
    """Seconds per call of ``fn()``: ``max_iters`` calls, or fewer once ``budget_s`` seconds have passed
    (but at least ``min_iters``). The caller warms ``fn`` up first."""
    samples: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(samples) < max_iters and (len(samples) < min_iters or time.perf_counter() < deadline):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def median_us(samples_s: list[float]) -> float:
    """The median of samples in seconds, in microseconds."""
    return statistics.median(samples_s) * 1e6


def timestamp_spans(device, fn, runs: int) -> list[list[float]]:
    """``fn()`` (dmlgpu calls on ``device``) recorded once with ``record(timestamps=True)`` and run ``runs`` times:
    for each run, the nanoseconds between its adjacent timestamps (one before the first command, one after each:
    Recording.timestamps; their sum is the run's first-to-last GPU time)."""
    with device.record(timestamps=True) as rec:
        fn()
    spans = []
    for _ in range(runs):
        rec.run()
        ts = rec.timestamps()
        spans.append([b - a for a, b in zip(ts, ts[1:])])
    return spans


def torch_time(fn, repeats: int) -> float | None:
    """Median seconds of ``fn()`` on CUDA (events), or None without CUDA PyTorch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(times)
