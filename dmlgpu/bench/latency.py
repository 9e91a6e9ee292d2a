"""Small-op latency: a small gather (a [1024, 16] float32 table by 32 int64 row numbers: 2 KiB out),
in microseconds of wall time.

* recorded round trip: a pre-recorded Recording (``rec.upload(idx)``, gather, ``rec.download(out)``);
  each iteration writes new indices into ``rec.host(idx)``, calls ``rec.run()`` and copies ``rec.host(out)``;
* function round trip: ``dmlgpu.gather(table, idx)`` on NumPy arrays (uploads both, downloads the result);
* eager call on Tensors: ``dmlgpu.gather(table_t, idx_t)`` on device-resident Tensors, steady state: the
  call alone (it is queued and returns; every max_queued-th call submits the batch), and the call followed by
  ``Device.synchronize()``;
* dependent chain: ``ops`` eager calls without record(), each gathering from a [1024] int64 permutation by
  the previous call's result (``x = dmlgpu.gather(perm_t, x)``), then ``Device.synchronize()``: wall time per
  call;
* amortized: ``ops`` gathers on device-resident Tensors recorded into one submission; the wall time of
  ``rec.run()`` divided by ``ops``, and the host time the recording took, per op (its first run included).
  (Until issue 19 a row gave the same from GPU timestamps: Kompute writes one after every command, and
  their own cost made that "GPU time" exceed the wall time: about 1 us per timestamp on an H200, 25 us on
  lavapipe. It is gone.)

The per-call breakdown (``breakdown``), for the small gather and for a small scatter_nd (32 rows of
[1024, 16] float32 replaced: ``dmlgpu.scatter_nd(data_t, rows_t, updates_t)``, out of place), on Tensors:
the queued call alone (steady state: it returns without waiting; every max_queued-th call submits), the
call then ``Device.synchronize()``, the pre-recorded submission floor (``rec.run()`` of a Recording of that
one call: submit and wait), and ``ops`` dependent calls without record() (each call's input is the previous
result), then one synchronize, per call. ``empty_recording_us``: ``rec.run()`` of a Recording of nothing
(submitting an empty command buffer and waiting for it).
"""
from __future__ import annotations

import statistics
import time

import numpy as np

import dmlgpu

from .clock import host_samples, median_us

TABLE_SHAPE = (1024, 16)
INDEX_COUNT = 32


def inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the table, two sets of indices: iterations alternate between them, the chain's permutation)."""
    table = rng.standard_normal(TABLE_SHAPE, dtype=np.float32)
    idx = rng.integers(0, TABLE_SHAPE[0], (2, INDEX_COUNT), dtype=np.int64)
    return table, idx, rng.permutation(TABLE_SHAPE[0]).astype(np.int64)


def chain_reference(perm: np.ndarray, start: np.ndarray, ops: int) -> np.ndarray:
    """The result of ``ops`` dependent gathers x = perm[x] from ``start``."""
    x = start
    for _ in range(ops):
        x = perm[x]
    return x


def chain_runs(fn, runs: int = 3) -> float:
    """The median wall time in seconds of ``runs`` calls of ``fn()`` (one warm-up call first)."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def describe() -> str:
    return (f"gather of {INDEX_COUNT} int64 rows from a [{TABLE_SHAPE[0]}, {TABLE_SHAPE[1]}] float32 table "
            f"({INDEX_COUNT * TABLE_SHAPE[1] * 4} bytes out)")


def describe_scatter() -> str:
    return (f"scatter_nd of {INDEX_COUNT} rows into a [{TABLE_SHAPE[0]}, {TABLE_SHAPE[1]}] float32 tensor "
            f"(out of place)")


def dmlgpu_small_gather(device: dmlgpu.Device, table: np.ndarray, idx: np.ndarray, perm: np.ndarray, iters: int,
                        budget_s: float, ops: int) -> tuple[dict, list[str]]:
    """(microseconds per measurement, the mismatches found: empty when every result was right)."""
    mismatches = []
    table_t, idx_t = dmlgpu.tensor(table, device=device), dmlgpu.tensor(idx[0], device=device)

    with device.record() as rec:
        rec.upload(idx_t)
        out = dmlgpu.gather(table_t, idx_t, axis=0)
        rec.download(out)
    state = {"i": 0, "result": None}
    idx_host, out_host = rec.host(idx_t), rec.host(out)

    def recorded():
        state["i"] += 1
        idx_host[...] = idx[state["i"] % 2]
        rec.run()
        state["result"] = out_host.copy()

    recorded()
    recorded_s = host_samples(recorded, iters, budget_s, min_iters=20)
    if not np.array_equal(state["result"], table[idx[state["i"] % 2]]):
        mismatches.append("small gather through a pre-recorded Recording")

    def function():
        state["i"] += 1
        state["result"] = dmlgpu.gather(table, idx[state["i"] % 2], axis=0, device=device)

    function()
    function_s = host_samples(function, iters, budget_s, min_iters=20)
    if not np.array_equal(state["result"], table[idx[state["i"] % 2]]):
        mismatches.append("small gather through the NumPy-in/NumPy-out function")

    idx_t.write(idx[0])
    eager_s = host_samples(lambda: dmlgpu.gather(table_t, idx_t, axis=0), iters, budget_s, min_iters=20)
    device.synchronize()

    def eager_sync():
        state["result"] = dmlgpu.gather(table_t, idx_t, axis=0)
        device.synchronize()

    eager_sync()
    eager_sync_s = host_samples(eager_sync, iters, budget_s, min_iters=20)
    if not np.array_equal(state["result"].numpy(), table[idx[0]]):
        mismatches.append("small gather as an eager call on Tensors")

    perm_t, start_t = dmlgpu.tensor(perm, device=device), dmlgpu.tensor(idx[1], device=device)

    def chain():
        x = start_t
        for _ in range(ops):
            x = dmlgpu.gather(perm_t, x)
        device.synchronize()
        state["result"] = x

    chain_s = chain_runs(chain)
    if not np.array_equal(state["result"].numpy(), chain_reference(perm, idx[1], ops)):
        mismatches.append(f"{ops} dependent eager gathers on Tensors")

    start = time.perf_counter()
    with device.record() as many:                  # ending the block runs it once (warm-up)
        outs = [dmlgpu.gather(table_t, idx_t, axis=0) for _ in range(ops)]
    record_s = time.perf_counter() - start
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        many.run()
        runs.append(time.perf_counter() - start)
    if not all(np.array_equal(o.numpy(), table[idx[0]]) for o in (outs[0], outs[-1])):
        mismatches.append(f"small gathers recorded {ops} to a submission")
    with device.record() as one:                   # the submission floor: one recorded gather, submit and wait
        out_one = dmlgpu.gather(table_t, idx_t, axis=0)
    one_s = host_samples(one.run, iters, budget_s, min_iters=20)
    if not np.array_equal(out_one.numpy(), table[idx[0]]):
        mismatches.append("small gather through a Recording of the call alone")
    with device.record() as empty:
        pass
    empty_s = host_samples(empty.run, iters, budget_s, min_iters=20)
    result = {"recorded_round_trip_us": median_us(recorded_s),
              "function_round_trip_us": median_us(function_s),
              "eager_call_us": median_us(eager_s), "eager_call_sync_us": median_us(eager_sync_s),
              "recorded_call_us": median_us(one_s), "empty_recording_us": median_us(empty_s),
              "chain_us": chain_s / ops * 1e6, "max_queued": device.max_queued,
              "amortized_us": statistics.median(runs) / ops * 1e6,
              "record_us_per_op": record_s / ops * 1e6,
              "ops": ops, "iterations": len(recorded_s)}
    return result, mismatches


def scatter_inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data [1024, 16] float32, 32 distinct row numbers as [32, 1] int64, updates [32, 16] float32)."""
    data = rng.standard_normal(TABLE_SHAPE, dtype=np.float32)
    rows = rng.choice(TABLE_SHAPE[0], INDEX_COUNT, replace=False).astype(np.int64)[:, None]
    return data, rows, rng.standard_normal((INDEX_COUNT, TABLE_SHAPE[1]), dtype=np.float32)


def scatter_reference(data: np.ndarray, rows: np.ndarray, updates: np.ndarray) -> np.ndarray:
    out = data.copy()
    out[rows[:, 0]] = updates
    return out


def dmlgpu_small_scatter(device: dmlgpu.Device, data: np.ndarray, rows: np.ndarray, updates: np.ndarray,
                         iters: int, budget_s: float, ops: int) -> tuple[dict, list[str]]:
    """The per-call breakdown of a small scatter_nd on Tensors (module docstring), in microseconds, and the
    mismatches found."""
    mismatches, expected = [], scatter_reference(data, rows, updates)
    data_t, rows_t, upd_t = (dmlgpu.tensor(a, device=device) for a in (data, rows, updates))

    def call():
        return dmlgpu.scatter_nd(data_t, rows_t, upd_t)

    call()
    queued_s = host_samples(call, iters, budget_s, min_iters=20)
    device.synchronize()
    state = {}

    def call_sync():
        state["result"] = call()
        device.synchronize()

    call_sync()
    sync_s = host_samples(call_sync, iters, budget_s, min_iters=20)
    if not np.array_equal(state["result"].numpy(), expected):
        mismatches.append("small scatter_nd as an eager call on Tensors")
    with device.record() as one:
        out_one = call()
    one_s = host_samples(one.run, iters, budget_s, min_iters=20)
    if not np.array_equal(out_one.numpy(), expected):
        mismatches.append("small scatter_nd through a Recording of the call alone")

    def chain():
        x = data_t
        for _ in range(ops):
            x = dmlgpu.scatter_nd(x, rows_t, upd_t)
        device.synchronize()
        state["result"] = x

    chain_s = chain_runs(chain)
    if not np.array_equal(state["result"].numpy(), expected):    # writing the same rows again changes nothing
        mismatches.append(f"{ops} dependent eager scatter_nds on Tensors")
    return {"eager_call_us": median_us(queued_s), "eager_call_sync_us": median_us(sync_s),
            "recorded_call_us": median_us(one_s), "chain_us": chain_s / ops * 1e6, "ops": ops}, mismatches
