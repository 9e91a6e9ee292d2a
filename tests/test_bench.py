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


def test_sizes_and_selection():
    assert parse_size("4K") == 4096 and parse_size("1GiB") == 2**30 and parse_size("1.5M") == 3 * 2**19
    assert parse_sizes("1M,4K,4096") == [4096, 2**20]
    assert fmt_bytes(4096) == "4 KiB" and fmt_bytes(3 * 2**29) == "1.5 GiB"
    with pytest.raises(ValueError):
        parse_size("12Q")
    int8 = [w.name for w in WORKLOADS if w.name.startswith("embedding-i8-")]
    assert [w.name for w in select(["embedding-i8"])] == int8 and len(int8) == 5
    assert [w.name for w in select(["embedding-i8-d1"])] == ["embedding-i8-d1", "embedding-i8-d1-i32"]
    assert [w.name for w in select(["embedding-i8-d16"])] == ["embedding-i8-d16"]
    assert len(select(["scatter*"])) == 4
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


def test_apps_reports_a_wrong_result(tmp_path, capsys, monkeypatch):
    """A gather that returns the wrong rows must fail the run, and only its rows."""
    import numpy as np

    import dmlgpu
    real = dmlgpu.gather

    def wrong(data, indices, *args, **kwargs):    # every index 0
        zeros = dmlgpu.tensor(np.zeros(indices.shape, np.int64), device=indices.device)
        return real(data, zeros, *args, **kwargs)

    monkeypatch.setattr(dmlgpu, "gather", wrong)
    rc = cli.main(["apps", *APPS_SMALL, "--workloads", "embedding-f16,topk-gather", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1 and "MISMATCH" in out
    from dmlgpu.bench import apps
    rows = {r["workload"]: r for r in json.loads((tmp_path / apps.JSON_NAME).read_text())["rows"]}
    assert rows["embedding-f16"]["verified"] is False and "elements differ" in rows["embedding-f16"]["mismatch"]
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
    assert apps.select(["gnn*"]) == ["gnn-gather", "gnn-scatter-add"]
