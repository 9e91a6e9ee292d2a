"""Smoke test of the benchmark harness (dmlgpu/bench/): ``python -m dmlgpu bench --quick`` at one tiny size, in-process,
on the default device (lavapipe in CI), with the NumPy peer; a few seconds."""
import importlib.util
import json

import pytest

from dmlgpu.bench import cli, report
from dmlgpu.bench.units import fmt_bytes, parse_size, parse_sizes
from dmlgpu.bench.workloads import QUICK_WORKLOADS, WORKLOADS, select

CASE_FIELDS = {"workload", "group", "operator", "target_bytes", "shape", "dtype", "moved_bytes", "dmlgpu", "copy",
               "copy_fraction", "peer", "ratio", "verified", "mismatch"}
TIMING_FIELDS = {"median_ns", "min_ns", "samples"}


def test_quick_run_writes_verified_results(tmp_path, capsys):
    rc = cli.main(["--quick", "--sizes", "4K", "--peer", "numpy", "--out", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "all results verified against the peer" in out
    assert max(map(len, out.splitlines())) <= report.WIDTH, out         # the default table fits 100 columns

    results = json.loads((tmp_path / report.JSON_NAME).read_text())
    meta = results["meta"]
    assert {"date", "command", "device", "peer", "dmlgpu", "numpy", "repeats", "bytes_moved"} <= set(meta)
    assert meta["peer"]["name"] == "numpy" and meta["repeats"] == 100
    assert "--quick" in meta["command"]

    cases = results["cases"]
    assert {c["workload"] for c in cases} == set(QUICK_WORKLOADS)
    measured = [c for c in cases if "skipped" not in c]
    assert len(measured) == len(QUICK_WORKLOADS)          # 4 KiB is at least one unit of every quick workload
    for c in measured:
        assert CASE_FIELDS <= set(c), c.get("error")
        assert c["verified"] is True and c["mismatch"] is None
        assert TIMING_FIELDS <= set(c["dmlgpu"]) and c["dmlgpu"]["samples"] == 100
        assert c["dmlgpu"]["median_ns"] > 0 and c["dmlgpu"]["gbps"] > 0 and c["peer"]["gbps"] > 0
        assert c["ratio"] == pytest.approx(c["dmlgpu"]["gbps"] / c["peer"]["gbps"])
        assert c["copy_fraction"] == pytest.approx(c["dmlgpu"]["gbps"] / c["copy"]["gbps"])
        assert 0 < c["moved_bytes"] <= 2 * 4096

    lat = results["latency"]
    assert lat["mismatches"] == []
    for key in ("recorded_round_trip_us", "function_round_trip_us", "eager_call_us", "eager_call_sync_us",
                "recorded_call_us", "empty_recording_us", "chain_us", "amortized_us"):
        assert lat["dmlgpu"][key] > 0
    for key in ("round_trip_us", "eager_call_us", "eager_call_sync_us", "recorded_call_us", "chain_us"):
        assert lat["peer"][key] > 0
    for side in ("dmlgpu", "peer"):       # the per-call breakdown of a small scatter_nd
        for key in ("eager_call_us", "eager_call_sync_us", "recorded_call_us", "chain_us"):
            assert lat["scatter"][side][key] > 0
    for c in measured:                    # the stream time (no timestamps) and the eager call's excess over it
        assert c["dmlgpu"]["stream_ns"] == pytest.approx(c["eager"]["median_ns"] - c["eager"]["over_stream_ns"])

    md = (tmp_path / report.MARKDOWN_NAME).read_text()
    assert "| per call (host wall time, median) |" in md and "scatter_nd: numpy us" in md
    assert meta["device"]["name"] in md and "numpy" in md and "python -m dmlgpu bench --quick" in md
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / report.PLOT_NAME).stat().st_size > 0


def test_render_reads_a_saved_run(tmp_path, capsys):
    assert cli.main(["--quick", "--sizes", "4K", "--workloads", "embedding-f32-d128", "--no-latency",
                     "--peer", "numpy", "--repeats", "3", "--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["--render", str(tmp_path / report.JSON_NAME), "--markdown"]) == 0
    assert "| embedding-f32-d128 |" in capsys.readouterr().out
    for fmt, header in [("wide", "dmlgpu GPU us (timestamps)"), ("csv", "workload,moved,dmlgpu GPU us (timestamps),"),
                        ("table", "workload"), ("markdown", "| workload |")]:
        assert cli.main(["--render", str(tmp_path / report.JSON_NAME), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert header in out and "embedding-f32-d128" in out
        assert (max(map(len, out.splitlines())) <= report.WIDTH) == (fmt == "table"), (fmt, out)


def test_sizes_and_selection():
    assert parse_size("4K") == 4096 and parse_size("1GiB") == 2**30 and parse_size("1.5M") == 3 * 2**19
    assert parse_sizes("1M,4K,4096") == [4096, 2**20]
    assert fmt_bytes(4096) == "4 KiB" and fmt_bytes(3 * 2**29) == "1.5 GiB"
    with pytest.raises(ValueError):
        parse_size("12Q")
    int8 = [w.name for w in WORKLOADS if w.name.startswith("embedding-i8-")]
    assert [w.name for w in select(["embedding-i8"])] == int8 and len(int8) == 5
    assert [w.name for w in select(["embedding-i8-d1"])] == ["embedding-i8-d1"]      # a name: that one alone
    assert [w.name for w in select(["embedding-i8-d16"])] == ["embedding-i8-d16"]
    assert len(select(["scatter*"])) == 6      # rows and elements: int64, int32 indices, unique_indices
    with pytest.raises(ValueError):
        select(["nope"])


APPS_SMALL = ["--scale", "0.001", "--repeats", "2", "--budget", "0.05", "--peer", "numpy", "--quiet"]


def test_apps_smallest_scale_is_checked(tmp_path, capsys):
    from dmlgpu.bench import apps
    assert cli.main(["apps", *APPS_SMALL, "--out", str(tmp_path)]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "all results checked against the peer" in out
    results = json.loads((tmp_path / apps.JSON_NAME).read_text())
    rows = results["rows"]
    assert [r["workload"].split(" ")[0] for r in rows] == list(apps.BUILDERS)
    for r in rows:
        assert r["verified"] is True and r["mismatch"] is None, r
        assert r["dmlgpu"]["median_us"] > 0 and r["dmlgpu"]["first_us"] > 0 and r["peer"]["median_us"] > 0
        assert r["ratio"] == pytest.approx(r["peer"]["median_us"] / r["dmlgpu"]["median_us"])
        assert r["peer"]["call"] == "numpy"
    copying = not results["meta"]["inplace_scatter"]
    assert all(r["workload"].endswith("(copy)") == copying for r in rows
               if r["family"] in ("KV-cache write", "decode loop", "MoE combine"))
    assert results["geomean"] > 0
    md = (tmp_path / apps.MARKDOWN_NAME).read_text()
    assert "| embedding-bf16 |" in md and "geometric mean" in md
    assert cli.main(["apps", "--render", str(tmp_path / apps.JSON_NAME), "--markdown"]) == 0
    assert capsys.readouterr().out == md + "\n"      # print() adds one


def test_apps_reports_a_wrong_result(tmp_path, capsys, monkeypatch):
    """A gather that returns the wrong rows must fail the run, and only its rows."""
    import numpy as np

    import dmlgpu
    real = dmlgpu.gather

    def wrong(data, indices, *args, **kwargs):    # every index 0
        zeros = dmlgpu.tensor(np.zeros(indices.shape, np.int64), device=indices.device)
        return real(data, zeros, *args, **kwargs)

    monkeypatch.setattr(dmlgpu, "gather", wrong)
    from dmlgpu.bench import apps
    for process, says in (("same", "elements differ"), ("separate", "the bits differ")):
        rc = cli.main(["apps", *APPS_SMALL, "--workloads", "embedding-f16,topk-gather", "--process", process,
                       "--out", str(tmp_path)])
        out = capsys.readouterr().out
        assert rc == 1 and "MISMATCH" in out
        rows = {r["workload"]: r for r in json.loads((tmp_path / apps.JSON_NAME).read_text())["rows"]}
        assert rows["embedding-f16"]["verified"] is False and says in rows["embedding-f16"]["mismatch"]
        assert rows["topk-gather"]["verified"] is True      # gather_elements is not the broken function


def test_apps_inputs():
    import numpy as np

    from dmlgpu.bench import apps
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        x = apps.random_rows(rng, (1000, 8), dtype)
        assert x.dtype == dtype and np.isfinite(x).all()
    ids = apps.zipf_ids(rng, 10000, 1000)
    assert ids.min() >= 0 and ids.max() < 1000 and np.bincount(ids).max() > 500    # skewed (uniform: ~10)
    assert apps.compare_bits(np.ones(3, np.float16), np.ones(3, np.uint16)) is not None   # 1.0 != 1
    assert apps.compare_bits(np.zeros(3, np.float16), np.zeros(3, np.uint16)) is None
    assert apps.select(["gnn*"]) == ["gnn-gather", "gnn-scatter-add", "gnn-scatter-add-np.add.at"]


class _FakeTorch:
    """Just enough of PyTorch, on NumPy, to run the bench's PyTorch code paths where there is no CUDA: the
    calls' arguments, shapes and the results' bits (not CUDA's semantics or speed). Like PyTorch,
    F.embedding takes a 2-D table only."""

    def __init__(self):
        import types

        import numpy as np
        self.np = np
        fake = self

        class Dtype:
            def __init__(self, name, np_dtype):
                self.name, self.np = name, np.dtype(np_dtype)

            def __repr__(self):
                return f"fake.{self.name}"

        for name, d in (("float16", np.float16), ("float32", np.float32), ("int16", np.int16),
                        ("int64", np.int64), ("int32", np.int32), ("bfloat16", np.uint16)):
            setattr(self, name, Dtype(name, d))
        by_np = {np.dtype(d): getattr(self, n) for n, d in (("float16", np.float16), ("float32", np.float32),
                                                            ("int16", np.int16), ("int64", np.int64),
                                                            ("int32", np.int32))}

        def arr(x):
            return x.a if isinstance(x, T) else x

        def key(k):
            return tuple(arr(i) for i in k) if isinstance(k, tuple) else arr(k)

        class T:
            def __init__(self, a, dtype=None):
                self.a, self.dtype = a, dtype or by_np[a.dtype]
                self.device = "cuda:0"

            shape = property(lambda self: self.a.shape)

            def to(self, device):
                return T(self.a.copy(), self.dtype)

            def cpu(self):
                return self

            def numpy(self):
                return self.a

            def clone(self):
                return T(self.a.copy(), self.dtype)

            def view(self, *shape):
                if len(shape) == 1 and isinstance(shape[0], Dtype):
                    return T(self.a.view(shape[0].np), shape[0])
                v = self.a.view()
                v.shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape   # no copy
                return T(v, self.dtype)

            def expand(self, *sizes):
                return T(np.broadcast_to(self.a, [n if s == -1 else s for n, s in zip(self.a.shape, sizes)]),
                         self.dtype)

            def __getitem__(self, k):
                return T(self.a[key(k)], self.dtype)

            def __setitem__(self, k, v):
                self.a[key(k)] = arr(v)

            def __add__(self, other):
                return T(self.a + arr(other))

            def index_select(self, dim, idx):
                assert dim == 0 and idx.a.ndim == 1 and idx.a.dtype == np.int64
                return T(np.take(self.a, idx.a, axis=0), self.dtype)

            def index_copy_(self, dim, idx, src):
                assert dim == 0 and src.a.shape == idx.a.shape + self.a.shape[1:] and src.dtype is self.dtype
                self.a[idx.a] = src.a
                return self

            def index_copy(self, dim, idx, src):
                return self.clone().index_copy_(dim, idx, src)

            def index_add_(self, dim, idx, src):
                assert dim == 0 and src.a.shape == idx.a.shape + self.a.shape[1:] and src.dtype is self.dtype
                np.add.at(self.a, idx.a, src.a)
                return self

            def new_zeros(self, shape):
                return T(np.zeros(shape, self.a.dtype), self.dtype)

            def scatter_add_(self, dim, index, src):
                assert dim == 0 and index.a.shape == src.a.shape and index.a.ndim == 2
                np.add.at(self.a, (index.a, np.arange(index.a.shape[1])[None, :]), src.a)
                return self

            def gather(self, dim, index):
                assert index.a.dtype == np.int64
                return T(np.take_along_axis(self.a, index.a, axis=dim), self.dtype)

        self.Tensor = T
        self.__version__ = "0-fake"
        self.version = types.SimpleNamespace(cuda="fake")
        self.from_numpy = lambda a: T(a)
        self.full = lambda shape, value, dtype, device=None: T(np.full(shape, value, dtype.np), dtype)
        self.gather = lambda x, dim, index: x.gather(dim, index)
        self.take_along_dim = lambda x, index, dim: x.gather(dim, index)
        self.device = lambda kind, index=0: types.SimpleNamespace(type=kind, index=index)
        self._det = False
        self.use_deterministic_algorithms = lambda on: setattr(fake, "_det", bool(on))
        self.are_deterministic_algorithms_enabled = lambda: fake._det

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self, stream=None):
                import time
                self.t = time.perf_counter()

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                return (end.t - self.t) * 1e3

        class Ctx:
            def __init__(self, *args):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        class Stream(Ctx):
            def wait_stream(self, other):
                pass

        class Graph:
            def replay(self):
                pass

        self.cuda = types.SimpleNamespace(
            is_available=lambda: True, synchronize=lambda device=None: None, empty_cache=lambda: None,
            mem_get_info=lambda device=None: (64 << 30, 80 << 30), get_device_name=lambda device=None: "fake GPU",
            device_count=lambda: 1, set_device=lambda device: None, Event=Event, Stream=Stream,
            current_stream=lambda device=None: Stream(), stream=Ctx, graph=Ctx, CUDAGraph=Graph)

        def embedding(ids, table):
            assert table.a.ndim == 2, "'weight' must be 2-D"
            return T(np.take(table.a, ids.a, axis=0), table.dtype)
        def embedding_bag(ids, table, offsets, mode="sum"):
            bounds = list(offsets.a) + [ids.a.size]
            out = np.zeros((len(offsets.a), table.a.shape[1]), table.a.dtype)
            for b in range(len(offsets.a)):
                rows = table.a[ids.a[bounds[b]:bounds[b + 1]]]
                if mode == "max":
                    out[b] = rows.max(axis=0) if len(rows) else 0
                    continue
                for row in rows:
                    out[b] += row
                if mode == "mean" and bounds[b + 1] > bounds[b]:
                    out[b] /= out.dtype.type(bounds[b + 1] - bounds[b])
            return T(out, table.dtype)
        self.nn = types.SimpleNamespace(functional=types.SimpleNamespace(embedding=embedding,
                                                                         embedding_bag=embedding_bag))


@pytest.fixture
def fake_torch(monkeypatch):
    import sys
    fake = _FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setitem(sys.modules, "torch.nn", fake.nn)
    monkeypatch.setitem(sys.modules, "torch.nn.functional", fake.nn.functional)
    return fake


def test_apps_torch_path_on_a_fake(fake_torch):
    """The apps section's PyTorch calls (every workload's, deterministic mode included), run on a NumPy fake
    of torch: each call runs and its result matches dmlgpu's bit for bit."""
    import dmlgpu
    from dmlgpu.bench import apps
    side = apps.make_side("torch", None)
    assert isinstance(side, apps.TorchSide)
    results = apps.run(dmlgpu.default_device(), side, list(apps.BUILDERS),
                       apps.Settings(scale=0.001, repeats=2, budget_s=0.05))
    for r in results["rows"]:
        assert r["verified"] is True, r.get("error") or r.get("mismatch")
        calls = r["peer"]["calls"]
        assert all(isinstance(v, float) for v in calls.values()), calls      # every PyTorch call ran
        assert set(calls) == set(apps.BUILDERS[r["workload"].split(" ")[0]](0.001, __import__("numpy").random
                                                                             .default_rng(0), False).torch)
        assert r["peer"]["gpu_us"] is not None
    det = [r for r in results["rows"] if "peer_deterministic" in r]
    assert [r["workload"] for r in det] == ["gnn-scatter-add", "gnn-scatter-add-np.add.at", "message-passing",
                                              "message-passing-fixed-point"] and \
        det[0]["peer_deterministic"]["median_us"] > 0
    assert "torch 0-fake (CUDA fake, fake GPU)" in apps.render(results)


def test_latency_torch_path_on_a_fake(fake_torch):
    """The latency section's PyTorch path (small gather, small scatter, CUDA graph replay) on the fake."""
    import numpy as np

    import dmlgpu
    from dmlgpu.bench import peers, runner
    peer = peers.make_peer("torch")
    assert peer.kind == "torch"
    settings = runner.Settings(workloads=[], sizes=[], max_size=0, latency_iters=5, latency_budget_s=0.01,
                               latency_ops=10)
    lat = runner.run_latency(dmlgpu.default_device(), peer, settings, np.random.default_rng(0))
    assert lat["mismatches"] == []
    for key in ("eager_call_us", "eager_call_sync_us", "recorded_call_us", "chain_us"):
        assert lat["peer"][key] > 0 and lat["scatter"]["peer"][key] > 0


def test_apps_in_place_rows_when_scatter_nd_has_out(tmp_path, capsys, monkeypatch):
    """Where scatter_nd takes out= (issue 25), the KV-cache, decode and MoE-combine rows write in place; here a
    stand-in out= (the copy, then written into out) shows the rows take that path and are checked."""
    import dmlgpu
    from dmlgpu.bench import apps
    real = dmlgpu.scatter_nd
    used = []

    def scatter_nd(data, indices, updates, *, out=None, **kwargs):
        result = real(data, indices, updates, **kwargs)
        if out is None:
            return result
        used.append(out)
        out.write(result.numpy())
        return out

    monkeypatch.setattr(dmlgpu, "scatter_nd", scatter_nd)
    assert apps.has_out()
    rc = cli.main(["apps", *APPS_SMALL, "--workloads", "kv*,decode*,moe-combine", "--out", str(tmp_path)])
    assert rc == 0, capsys.readouterr().out
    rows = json.loads((tmp_path / apps.JSON_NAME).read_text())["rows"]
    assert [r["workload"] for r in rows] == ["kv-cache-write", "kv-cache-write-cache[pos]=rows", "decode-loop",
                                             "moe-combine"]
    assert all(r["verified"] for r in rows) and used


def test_apps_skip_what_the_device_cannot_hold(tmp_path, capsys, monkeypatch):
    from dmlgpu.bench import apps
    monkeypatch.setattr(apps, "MEMORY_HEADROOM", 1e-9)
    assert cli.main(["apps", *APPS_SMALL[:-1], "--workloads", "recommender", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "skipped: needs about" in captured.err and "skipped: needs about" in captured.out
    (row,) = json.loads((tmp_path / apps.JSON_NAME).read_text())["rows"]
    assert row["skipped"].startswith("needs about") and "verified" not in row


def test_reductions_has_fixed_point_and_its_accuracy(capsys):
    """bench reductions times order="fixed-point" beside the other orders (small sizes: lavapipe), and --accuracy
    measures each order's error against a float64 sum: fixed-point's, one rounding, below row-major's."""
    from dmlgpu.bench import reductions
    assert reductions.main(["--updates", "512", "--targets", "64", "--dtype", "float32", "--dist", "zipf",
                            "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "add (fixed-point)" in out and "mean (fixed-point)" in out
    assert reductions.main(["--accuracy", "--updates", "4K", "--targets", "64", "--dtype", "float32,bfloat16",
                            "--dist", "uniform,zipf"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith(("float32", "bfloat16"))]
    assert [r[:2] for r in rows] == [[d, s] for d in ("float32", "bfloat16") for s in ("uniform", "zipf")]
    for dtype, _, row_major, _, tree, _, fixed, fixed_mean in rows:
        assert float(fixed) < float(row_major) and float(fixed_mean) <= float(fixed)
        assert float(fixed) < (1e-5 if dtype == "float32" else 1e-1)


def test_latency_section_measures_the_floor_and_the_small_call(tmp_path, capsys, monkeypatch):
    """python -m dmlgpu bench latency: every figure in one process, the tiny dispatch's and the small gather's results
    checked (a wrong one is exit status 1), the JSON beside the table."""
    from dmlgpu.bench import floor
    assert cli.main(["latency", "--iters", "3", "--budget", "0", "--json", str(tmp_path / "f.json")]) == 0
    out = capsys.readouterr().out
    saved = json.loads((tmp_path / "f.json").read_text())
    for key, label in floor.ROWS:
        assert label in out and saved[key] > 0, key
    assert saved["best_us"] == min(saved["tiny_fence_us"], saved["tiny_word_us"])
    assert saved["queued_over_np_take"] == saved["gather_queued_us"] / saved["np_take_us"]
    monkeypatch.setattr(floor.np, "array_equal", lambda *a: False)   # the small gather's check fails
    status = cli.main(["latency", "--iters", "3", "--budget", "0"])
    monkeypatch.undo()
    assert status == 1
    assert "WRONG RESULT: the small gather" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["latency", "--iters", "0"])
    assert e.value.code == 2
