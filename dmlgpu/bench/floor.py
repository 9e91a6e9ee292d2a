"""``python -m dmlgpu bench latency``: a device's completion floor and dmlgpu's small call against it, measured in
one process (medians, microseconds).

The floor:

* **empty submission**: an empty command buffer (a kp Sequence recorded once) submitted, its fence awaited
  (Kompute's eval_async, then eval_await: the runtime's own wait);
* **tiny dispatch, fence**: the same with the commands of ``take`` of one float32 (one workgroup: one dispatch
  and its barrier, encoded by the runtime);
* **tiny dispatch, completion word**: the same commands, then a barrier and a fill of 4 bytes of host-visible
  memory with the submission's number; the host spins on that word, then collects the fence (the round trip
  is the time until the word is seen);
* **best mechanism**: the faster of the two;
* **tiny dispatch, Recording.run()**: that take recorded with ``Device.record()`` and replayed: dmlgpu's own
  submit and wait, its host work included;
* its GPU time from Vulkan timestamps (the one before its barrier to the last; each command's span printed too;
  the timestamps' own cost included, as in every timestamped figure).

dmlgpu's small call (``bench.latency``'s gather: 32 int64 rows of a [1024, 16] float32 Tensor): the queued call's
host time (a call template's hit; every ``max_queued``-th call submits its batch), the call then
``synchronize()``, the GPU time of the call recorded once with timestamps, and ``np.take`` of the same rows in the
same process (the host-speed yardstick: issue 53's target is the queued call at most 3x it).

Example::

    python -m dmlgpu bench latency                    # the default device, 2,000 samples of each
    python -m dmlgpu bench latency --iters 500 --json floor.json

Exit status 1 if a result was wrong, 2 for a command-line error.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import dmlgpu

from ..runtime import encode
from ..runtime.buffer import MappedBuffer
from .clock import host_samples, median_us, timestamp_spans
from .latency import INDEX_COUNT, TABLE_SHAPE, inputs

ROWS = (
    ("empty_us", "empty submission, fence"),
    ("tiny_fence_us", "tiny dispatch, fence"),
    ("tiny_word_us", "tiny dispatch, completion word"),
    ("best_us", "best mechanism"),
    ("tiny_replay_us", "tiny dispatch, Recording.run() (dmlgpu's replay)"),
    ("tiny_gpu_us", "tiny dispatch, GPU time (timestamps)"),
    ("gather_queued_us", "small gather, queued call (template hit)"),
    ("gather_sync_us", "small gather, call + synchronize()"),
    ("gather_gpu_us", "small gather, GPU time (timestamps)"),
    ("np_take_us", "np.take of the same rows"),
)


def _gpu_spans(device: dmlgpu.Device, call, runs: int = 50) -> list[float]:
    """Microseconds between the adjacent timestamps of ``call()`` recorded once (clock.timestamp_spans), each
    the median over ``runs`` runs."""
    return [statistics.median(column) / 1e3 for column in zip(*timestamp_spans(device, call, runs))]


def _round_trips(device: dmlgpu.Device, dispatches: list, iters: int, word: bool) -> list[float]:
    """Seconds per submission of ``dispatches`` (encoded by the runtime, recorded once into a kp Sequence) until
    the host sees it done: its fence (``word`` False: eval_async, then eval_await), or a completion word after
    it (two sequences alternate, each filling the word with its own number; the host spins on the word, then
    collects the fence). The first 20 submissions are a warm-up."""
    rt = device.runtime
    box = MappedBuffer(rt.memory, 16) if word else None
    view = box.block_list[0].view.view(np.uint32) if box is not None else None
    sequences = []
    for number in (1, 2):
        ops = rt.encoder.encode(dispatches, [])
        if box is not None:
            ops += encode.transfer([box], encode.fill_ops(box, number, 0, 4), host_read=[box])
        seq = rt.memory.mgr.sequence()
        seq.record_ops(ops)
        sequences.append((seq, number))
    samples = []
    for i in range(iters + 20):
        seq, number = sequences[i % 2]
        if view is None:
            start = time.perf_counter()
            seq.eval_async()
            seq.eval_await()
            seen = time.perf_counter()
        else:
            view[0] = 0
            start = time.perf_counter()
            seq.eval_async()
            while view[0] != number:
                pass
            seen = time.perf_counter()
            seq.eval_await()
        if i >= 20:
            samples.append(seen - start)
    return samples


def measure(device: dmlgpu.Device, iters: int = 2000, budget_s: float = 5.0) -> tuple[dict, list[str]]:
    """The figures of ``ROWS`` (microseconds) and the mismatches found (empty when every result was right)."""
    mismatches: list[str] = []
    device.clock_hold.wait()
    one = dmlgpu.tensor(np.array([1.5], np.float32), device=device)
    zero = dmlgpu.tensor(np.zeros(1, np.int64), device=device)
    with device.record() as tiny:
        tiny_out = dmlgpu.take(one, zero, mode="clip")
    dispatches = tiny.dispatches()
    if tiny_out.numpy().tolist() != [1.5] or len(dispatches) != 1:
        mismatches.append("the tiny dispatch (take of one element: one dispatch)")
    result = {"empty_us": median_us(_round_trips(device, [], iters, word=False)),
              "tiny_fence_us": median_us(_round_trips(device, dispatches, iters, word=False)),
              "tiny_word_us": median_us(_round_trips(device, dispatches, iters, word=True)),
              "tiny_replay_us": median_us(host_samples(tiny.run, iters, budget_s, min_iters=20))}
    result["best_us"] = min(result["tiny_fence_us"], result["tiny_word_us"])
    spans = _gpu_spans(device, lambda: dmlgpu.take(one, zero, mode="clip"))
    result["tiny_gpu_us"], result["tiny_spans_us"] = sum(spans), spans

    rng = np.random.default_rng(0)
    table, idx, _ = inputs(rng)
    table_t, idx_t = dmlgpu.tensor(table, device=device), dmlgpu.tensor(idx[0], device=device)
    dmlgpu.gather(table_t, idx_t, axis=0)
    device.synchronize()
    result["gather_queued_us"] = median_us(host_samples(lambda: dmlgpu.gather(table_t, idx_t, axis=0), iters,
                                                        budget_s, min_iters=20))
    device.synchronize()
    state = {}

    def call_sync():
        state["out"] = dmlgpu.gather(table_t, idx_t, axis=0)
        device.synchronize()

    call_sync()
    result["gather_sync_us"] = median_us(host_samples(call_sync, iters, budget_s, min_iters=20))
    if not np.array_equal(state["out"].numpy(), table[idx[0]]):
        mismatches.append("the small gather")
    spans = _gpu_spans(device, lambda: dmlgpu.gather(table_t, idx_t, axis=0))
    result["gather_gpu_us"], result["gather_spans_us"] = sum(spans), spans
    rows = idx[0]
    np.take(table, rows, axis=0)
    result["np_take_us"] = median_us(host_samples(lambda: np.take(table, rows, axis=0), iters, budget_s,
                                                  min_iters=20))
    result["queued_over_np_take"] = result["gather_queued_us"] / result["np_take_us"]
    return result, mismatches


def render(result: dict, device_name: str) -> str:
    lines = [f"device: {device_name}", f"{'':48} {'us':>9}"]
    lines += [f"{label:48} {result[key]:9.2f}" for key, label in ROWS]
    lines.append(f"{'queued call / np.take':48} {result['queued_over_np_take']:8.2f}x")
    for key, what in (("tiny_spans_us", "tiny dispatch"), ("gather_spans_us", "small gather")):
        lines.append(f"{what}, between its timestamps (its commands: a barrier, the dispatch, ...): "
                     + ", ".join(f"{s:.2f}" for s in result[key]) + " us")
    lines.append(f"(the small gather: {INDEX_COUNT} int64 rows of a [{TABLE_SHAPE[0]}, {TABLE_SHAPE[1]}] float32 "
                 f"Tensor; medians)")
    return "\n".join(lines)


def main(argv=None) -> int:
    from .command import DEVICE_HELP, open_device, parser
    ap = parser("python -m dmlgpu bench latency", __doc__)
    ap.add_argument("--device", type=int, default=None, help=DEVICE_HELP)
    ap.add_argument("--iters", type=int, default=2000, help="samples of each figure (default 2000)")
    ap.add_argument("--budget", type=float, default=5.0,
                    help="seconds of samples per figure at most (default 5; at least 20 samples)")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.iters < 1:
        ap.error("--iters must be at least 1")
    dev = open_device(ap, args.device)
    result, mismatches = measure(dev, args.iters, args.budget)
    print(render(result, dev.info.name))
    if args.json:
        args.json.write_text(json.dumps({"device": dev.info.name, **result}, indent=1) + "\n")
    for m in mismatches:
        print(f"WRONG RESULT: {m}", file=sys.stderr)
    return 1 if mismatches else 0
