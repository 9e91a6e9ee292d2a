"""Host-side timing with time.perf_counter."""
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
