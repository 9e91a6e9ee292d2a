"""The peer that dmlgpu is compared with, on the same data in the same process: PyTorch on CUDA when
``torch.cuda.is_available()``, else NumPy on the host.

Both offer: ``put`` (a NumPy array to the peer's tensor), ``fetch`` (back to NumPy), ``calls`` (the peer's
ways of doing a Case's job, by name: PyTorch has several, NumPy one), ``time`` (median time of a call over
warmed iterations: CUDA events for PyTorch, perf_counter for NumPy; ``deterministic``: PyTorch with
``torch.use_deterministic_algorithms(True)``, which NumPy does not have), the small-op latency measurements, ``info`` (name and versions, for the report) and ``free_bytes`` (device memory free,
when known).
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from . import latency
from .clock import host_samples, median_us

NUMPY_BUDGET_S = 1.0   # NumPy peer: stop timing a case after this long (at least 5 iterations)


class PeerTime:
    """Per-call times in nanoseconds and how they were taken."""

    def __init__(self, samples_ns: list, method: str):
        self.samples_ns = samples_ns
        self.method = method

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples_ns)

    def summary(self) -> dict:
        return {"median_ns": self.median_ns, "min_ns": min(self.samples_ns), "samples": len(self.samples_ns),
                "method": self.method}


class NumpyPeer:
    kind = "numpy"
    has_deterministic_mode = False

    def calls(self, case) -> dict:
        return {"numpy": case.numpy}

    def info(self) -> dict:
        return {"name": "numpy", "version": np.__version__, "device": "host CPU"}

    def put(self, array: np.ndarray) -> np.ndarray:
        return array

    def fetch(self, x) -> np.ndarray:
        return np.asarray(x)

    def free_bytes(self) -> int | None:
        return None

    def release(self) -> None:
        pass

    def time(self, fn, args: dict, repeats: int, deterministic: bool = False) -> tuple[PeerTime, np.ndarray]:
        """(median over up to ``repeats`` calls or NUMPY_BUDGET_S seconds, the result of a call)."""
        assert not deterministic
        result = fn(args)                                   # warm-up, and the result to check
        samples = host_samples(lambda: fn(args), repeats, NUMPY_BUDGET_S)
        return PeerTime([s * 1e9 for s in samples], "perf_counter"), result

    def small_gather(self, table: np.ndarray, indices: np.ndarray, perm: np.ndarray, iters: int, budget_s: float,
                     ops: int) -> dict:
        """A small gather with NumPy (there is no device: a plain np.take), in microseconds; the chain: ``ops``
        dependent np.takes from ``perm``."""
        np.take(table, indices, axis=0)
        samples = host_samples(lambda: np.take(table, indices, axis=0), iters, budget_s)

        def chain():
            x = indices
            for _ in range(ops):
                x = np.take(perm, x)
        us = median_us(samples)
        return {"round_trip_us": us, "amortized_us": us, "eager_call_us": us, "eager_call_sync_us": us,
                "recorded_call_us": us, "chain_us": latency.chain_runs(chain) / ops * 1e6,
                "how": "np.take(table, indices, axis=0)"}

    def small_scatter(self, data: np.ndarray, rows: np.ndarray, updates: np.ndarray, iters: int, budget_s: float,
                      ops: int) -> dict:
        """A small out-of-place scatter of rows with NumPy (a copy, then an assignment), in microseconds; every
        figure of the breakdown is the same call; the chain: ``ops`` of them, each on the previous result."""
        r = rows[:, 0]

        def call(x=data):
            out = x.copy()
            out[r] = updates
            return out

        call()
        us = median_us(host_samples(call, iters, budget_s))

        def chain():
            x = data
            for _ in range(ops):
                x = call(x)
        return {"eager_call_us": us, "eager_call_sync_us": us, "recorded_call_us": us,
                "chain_us": latency.chain_runs(chain) / ops * 1e6, "how": "out = data.copy(); out[rows] = updates"}


class TorchPeer:
    kind = "torch"
    has_deterministic_mode = True

    def calls(self, case) -> dict:
        return case.torch

    def __init__(self, index: int = 0):
        import torch
        self.torch = torch
        self.device = torch.device("cuda", index)
        torch.cuda.set_device(self.device)

    def info(self) -> dict:
        t = self.torch
        return {"name": "torch", "version": t.__version__, "cuda": t.version.cuda,
                "device": t.cuda.get_device_name(self.device), "cuda_index": self.device.index}

    def put(self, array: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def fetch(self, x) -> np.ndarray:
        return x.cpu().numpy()

    def free_bytes(self) -> int | None:
        return self.torch.cuda.mem_get_info(self.device)[0]

    def release(self) -> None:
        self.torch.cuda.synchronize(self.device)
        self.torch.cuda.empty_cache()

    def time(self, fn, args: dict, repeats: int, deterministic: bool = False, warmup: int = 5):
        """(median of ``repeats`` calls timed with CUDA events after ``warmup`` calls, the result of a call).
        ``deterministic``: under ``torch.use_deterministic_algorithms(True)`` (a call that has no
        deterministic implementation raises RuntimeError)."""
        t = self.torch
        before = t.are_deterministic_algorithms_enabled()
        t.use_deterministic_algorithms(deterministic)
        try:
            return self._time(fn, args, repeats, warmup)
        finally:
            t.use_deterministic_algorithms(before)

    def _time(self, fn, args: dict, repeats: int, warmup: int):
        cuda = self.torch.cuda
        for _ in range(warmup):
            result = fn(args)
        cuda.synchronize(self.device)
        events = [(cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in events:
            start.record()
            fn(args)
            end.record()
        cuda.synchronize(self.device)
        return PeerTime([s.elapsed_time(e) * 1e6 for s, e in events], "cuda events"), result

    def small_gather(self, table: np.ndarray, indices: np.ndarray, perm: np.ndarray, iters: int, budget_s: float,
                     ops: int) -> dict:
        """A small gather with PyTorch, in microseconds: the round trip (table and indices .to('cuda'),
        index_select, result .cpu()); an eager index_select on CUDA tensors, alone and followed by a
        synchronize; ``ops`` dependent index_selects from ``perm`` then a synchronize, per call; and the
        amortized cost of ``ops`` device-resident index_selects, then one synchronize."""
        t, dev = self.torch, self.device
        table_d, idx_d, perm_d = self.put(table), self.put(indices), self.put(perm)

        def once():
            return t.from_numpy(table).to(dev).index_select(0, t.from_numpy(indices).to(dev)).cpu()

        once()
        samples = host_samples(once, iters, budget_s)
        eager = host_samples(lambda: table_d.index_select(0, idx_d), iters, budget_s)
        t.cuda.synchronize(dev)
        eager_sync_s, chain_s = self.synced_and_chained(lambda: table_d.index_select(0, idx_d),
                                                        lambda x: perm_d.index_select(0, x), idx_d,
                                                        iters, budget_s, ops)
        totals = []
        for _ in range(3):
            t.cuda.synchronize(dev)
            start = time.perf_counter()
            for _ in range(ops):
                table_d.index_select(0, idx_d)
            t.cuda.synchronize(dev)
            totals.append((time.perf_counter() - start) / ops)
        graph_us = self.graph_replay_us(lambda: table_d.index_select(0, idx_d), iters, budget_s)
        return {"round_trip_us": median_us(samples), "amortized_us": median_us(totals),
                "eager_call_us": median_us(eager), "eager_call_sync_us": median_us(eager_sync_s),
                "recorded_call_us": graph_us, "chain_us": chain_s * 1e6,
                "how": f"table.to('cuda').index_select(0, indices.to('cuda')).cpu(); eager and chained: "
                       f"index_select on CUDA tensors; amortized: {ops} index_selects, then synchronize; "
                       f"recorded: a CUDA graph of the index_select, replay() then synchronize"}

    def small_scatter(self, data: np.ndarray, rows: np.ndarray, updates: np.ndarray, iters: int, budget_s: float,
                      ops: int) -> dict:
        """The per-call breakdown of a small out-of-place scatter of rows with PyTorch on CUDA tensors
        (``data.index_copy(0, rows, updates)``), in microseconds: the call alone (queued), the call then a
        synchronize, a CUDA graph of the call replayed then a synchronize, and ``ops`` dependent calls (each on
        the previous result) then one synchronize, per call."""
        t, dev = self.torch, self.device
        d, r, u = self.put(data), self.put(np.ascontiguousarray(rows[:, 0])), self.put(updates)

        def call():
            return d.index_copy(0, r, u)

        call()
        t.cuda.synchronize(dev)
        queued = host_samples(call, iters, budget_s)
        t.cuda.synchronize(dev)
        synced, chain_s = self.synced_and_chained(call, lambda x: x.index_copy(0, r, u), d, iters, budget_s, ops)
        return {"eager_call_us": median_us(queued), "eager_call_sync_us": median_us(synced),
                "recorded_call_us": self.graph_replay_us(call, iters, budget_s), "chain_us": chain_s * 1e6,
                "how": "data.index_copy(0, rows, updates) on CUDA tensors; recorded: a CUDA graph of it, replay() "
                       "then synchronize"}

    def synced_and_chained(self, call, step, start, iters: int, budget_s: float, ops: int) -> tuple[list, float]:
        """The host samples (seconds) of ``call()`` then a synchronize, after one such warm-up, and the seconds
        per call of ``ops`` dependent calls (``x = step(x)`` from ``start``) then one synchronize (the median of
        latency.chain_runs)."""
        t, dev = self.torch, self.device

        def synced():
            call()
            t.cuda.synchronize(dev)

        synced()
        samples = host_samples(synced, iters, budget_s)

        def chain():
            x = start
            for _ in range(ops):
                x = step(x)
            t.cuda.synchronize(dev)

        return samples, latency.chain_runs(chain) / ops

    def graph_replay_us(self, fn, iters: int, budget_s: float) -> float | None:
        """Median microseconds of replaying a CUDA graph of ``fn()`` and synchronizing (PyTorch's submission
        floor: a pre-recorded launch and the wait for it), after the documented warm-up on a side stream;
        None (and a warning) if the call cannot be captured."""
        try:
            return self._graph_replay_us(fn, iters, budget_s)
        except Exception as exc:     # a capture error must not cost the rest of the latency section
            import warnings
            warnings.warn(f"no CUDA graph replay figure: {type(exc).__name__}: {exc}")
            self.torch.cuda.synchronize(self.device)
            return None

    def _graph_replay_us(self, fn, iters: int, budget_s: float) -> float:
        t, dev = self.torch, self.device
        side = t.cuda.Stream(dev)
        side.wait_stream(t.cuda.current_stream(dev))
        with t.cuda.stream(side):
            for _ in range(3):
                fn()
        t.cuda.current_stream(dev).wait_stream(side)
        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            static_out = fn()          # noqa: F841 (the graph's output lives as long as the graph is replayed)

        def replay():
            graph.replay()
            t.cuda.synchronize(dev)

        replay()
        us = median_us(host_samples(replay, iters, budget_s))
        del graph, static_out
        return us


def make_peer(choice: str = "auto", cuda_index: int | None = None, vulkan_name: str = ""):
    """The peer: "torch" (needs CUDA), "numpy", or "auto" (torch if CUDA is available). ``cuda_index``
    default: the CUDA device named like the Vulkan device, else 0."""
    if choice not in ("auto", "torch", "numpy"):
        raise ValueError(f"peer must be auto, torch or numpy, not {choice!r}")
    if choice == "numpy":
        return NumpyPeer()
    try:
        import torch
        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        if choice == "torch":
            raise RuntimeError("--peer torch needs PyTorch with CUDA (torch.cuda.is_available() is False)")
        return NumpyPeer()
    if cuda_index is None:
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        cuda_index = names.index(vulkan_name) if vulkan_name in names else 0
    return TorchPeer(cuda_index)
