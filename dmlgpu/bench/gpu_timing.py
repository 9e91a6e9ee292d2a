"""GPU time of dmlgpu operations from Vulkan timestamps.

An operation is a layer-2 call on device-resident Tensors. ``capture`` records one such call in a
Recording (whose run is the warm-up) and keeps the dispatches it recorded. ``time_dispatches`` times those
dispatches two ways:

* the stream time (``stream_ns``): the dispatches recorded ``repeats`` times into one Recording without
  timestamps and once into another; each run on the host (best of two, after the warm-up run), and
  (wall(repeats) - wall(1)) / (repeats - 1): what one more repetition adds to a submission, barriers
  included, submission and wait cancelled out. ``wall_ns_per_op``: wall(repeats) / repeats.
* the timestamps (``samples_ns``): the same repetitions recorded with ``timestamps=True``, run once; each
  repetition's time from the timestamp after the previous repetition to the timestamp after its last
  dispatch. Kompute writes a timestamp after every command (a barrier, a dispatch), and each costs GPU time
  of its own (about 1 us on an H200, 25 us on lavapipe), so these are above the stream time, the more so
  the smaller the operation and the more dispatches it has: on lavapipe a small scatter's timestamped
  "GPU time" exceeded its whole eager call. Compare timestamped figures with timestamped figures only.

Why replay rather than call the function ``repeats`` times in the recording: each layer-2 call in a
Recording allocates a new output (and a new parameter buffer and Kompute algorithm), so 100 calls of a
512 MiB gather would hold 50 GiB. Replaying the call's own dispatches on the same buffers times the same
kernels with constant memory. It uses the runtime's contract alone: ``Recording.dispatches``,
``Device.run`` (inside a recording it appends steps), ``Device.clear_algorithms`` (one Kompute algorithm per
distinct dispatch, released by ``release``), ``Dispatch.barrier`` (a dispatch recorded without a barrier
of its own is one timed step, not two), and ``GatherPlan`` + ``copy_map`` for the copy-shader reference (the
gather kernel with tuple size 0).
"""
from __future__ import annotations

import dataclasses
import statistics
import time

import numpy as np

import dmlgpu
from dmlgpu.plans.index_map import Layout, copy_map
from dmlgpu.plans.plan import GatherPlan


@dataclasses.dataclass
class GpuTime:
    """Per-operation GPU times of one timed Recording, in nanoseconds."""

    samples_ns: list
    dispatches_per_op: int
    wall_ns_per_op: float      # host wall time of one run of the repetitions without timestamps / repeats
    stream_ns: float           # (wall(repeats) - wall(1)) / (repeats - 1), without timestamps (module docstring)

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples_ns)

    def summary(self) -> dict:
        s = sorted(self.samples_ns)
        return {"median_ns": self.median_ns, "min_ns": s[0], "p90_ns": s[int(0.9 * (len(s) - 1))],
                "samples": len(s), "dispatches_per_op": self.dispatches_per_op,
                "wall_ns_per_op": self.wall_ns_per_op, "stream_ns": self.stream_ns}


def capture(device: dmlgpu.Device, call, *args):
    """Runs ``call(*args)`` (layer-2 calls on Tensors) once in a Recording; returns (its result, the
    dispatches it recorded)."""
    with device.record() as rec:
        result = call(*args)
    dispatches = rec.dispatches()
    return result, dispatches


def time_dispatches(device: dmlgpu.Device, dispatches: list, repeats: int) -> GpuTime:
    """The stream time of ``dispatches`` and the timestamped GPU time of each of ``repeats`` back-to-back
    repetitions in one submission (module docstring)."""
    if not dispatches:
        raise ValueError("nothing to time: the operation recorded no dispatch")
    with device.record() as plain:                 # ending a block runs it: the warm-up
        for _ in range(repeats):
            device.runtime.run(dispatches)
    with device.record() as single:
        device.runtime.run(dispatches)
    many, one = [], []
    for _ in range(2):
        for rec_, walls in ((plain, many), (single, one)):
            start = time.perf_counter()
            rec_.run()
            walls.append(time.perf_counter() - start)
    del plain, single
    stream_ns = (min(many) - min(one)) / (repeats - 1) * 1e9 if repeats > 1 else min(one) * 1e9
    with device.record(timestamps=True) as rec:   # ending the block runs it (kernels and buffers are warm)
        for _ in range(repeats):
            device.runtime.run(dispatches)
    ts = rec.timestamps()
    per_op = device.runtime.command_count(dispatches)   # timed steps: a barrier (if any), the dispatch (or copies)
    expected = 1 + per_op * repeats
    if len(ts) < expected:   # (on unified memory one more: the barrier before host reads, at the end)
        raise RuntimeError(f"expected at least {expected} timestamps, got {len(ts)}")
    samples = [ts[(i + 1) * per_op] - ts[i * per_op] for i in range(repeats)]
    del rec
    return GpuTime(samples, len(dispatches), min(many) / repeats * 1e9, stream_ns)


class CopyReference:
    """The copy shader's bandwidth: dmlgpu's gather kernel with tuple size 0 (a plain copy of n bytes,
    moving 2n bytes, one 16-byte unit per invocation), measured once per byte count and remembered. On CPU
    devices (lavapipe) row gathers move a whole row per invocation (the row loop), which costs less there
    than an invocation per unit: their "% copy" exceeds 100 % (2 to 9x at 4 MiB on lavapipe). On GPUs both
    move 16-byte units per invocation."""

    def __init__(self, device: dmlgpu.Device, repeats: int):
        self.device = device
        self.repeats = repeats
        self._cache: dict[int, GpuTime] = {}

    @staticmethod
    def copy_bytes(moved: int) -> int:
        """Bytes to copy so that the copy moves about ``moved`` bytes (a multiple of 16, at least 16)."""
        return max(16, moved // 2 // 16 * 16)

    def measure(self, moved: int) -> tuple[int, GpuTime]:
        """(bytes the copy moved, its GPU time) for a copy moving about ``moved`` bytes."""
        n = self.copy_bytes(moved)
        if n not in self._cache:
            dev = self.device
            expected = np.resize(np.arange(251, dtype=np.uint8), n)
            src, dst = dev.buffer(expected), dev.buffer(nbytes=n)
            plan = GatherPlan(copy_map(Layout.packed((n,)), Layout.packed((n,)), 1), np.uint32)
            dispatches, uploads = plan.dispatches(dev.runtime, input=src, indices=dev.runtime.dummy, output=dst)
            dev.runtime.run(dispatches, uploads=uploads)
            if not np.array_equal(dst.read()[:n], expected):
                raise RuntimeError(f"the copy shader's result is wrong ({n} bytes)")
            self._cache[n] = time_dispatches(dev, dispatches, self.repeats)
            release(dev)
        return 2 * n, self._cache[n]


def release(device: dmlgpu.Device) -> None:
    """Drops the Kompute algorithms cached for the timed dispatches (they keep their buffers alive)."""
    device.runtime.clear_algorithms()
