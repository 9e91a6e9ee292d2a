"""``python -m dmlgpu bench apps``: the jobs users run, timed as they wait for them (issue 19).

Each workload is one call (or one loop of calls) that a user makes through dmlgpu's public API on device
Tensors, with the sizes of a real model, next to the fastest PyTorch call for the same job on the same GPU
(NumPy on the host where there is no CUDA). For each:

* **dmlgpu us**: eager wall time of the call a user makes until its result is ready: the call, then
  ``Device.synchronize()``; the median of ``--repeats`` calls, or fewer once ``--budget`` seconds have
  passed (but at least 5), after two warm-up calls. **first us**: the workload's first call, call + synchronize (cold: the
  signature's planning and allocations, and the pipelines no earlier workload of the process built, from
  the on-disk pipeline cache where it has them).
* **peer us**: the same for each of the peer's calls for the job (PyTorch: the call, then
  ``torch.cuda.synchronize()``; NumPy: the call), the fastest of them (**peer call**); **peer/dmlgpu** > 1
  means dmlgpu is faster. The geometric mean of the ratios is over the rows that ran and were checked.
* **dmlgpu GPU us**: Vulkan timestamps, first to last, of the call recorded once with
  ``Device.record(timestamps=True)`` and run (Kompute writes a timestamp after every command: their own
  cost is included, so this is an upper bound of the GPU time); **peer GPU us**: CUDA events around the
  call (median), PyTorch only.
* **check**: the result (the returned tensor, or the tensor written in place) of a fresh call on fresh inputs,
  compared bit for bit with the peer's. Any mismatch or error makes the run exit with status 1.

Workloads (``--scale`` multiplies the counts: ids, rows, vocabulary, nodes, edges, steps; row widths stay):
embedding lookups, a paged KV-cache gather by a 2-D block table, the logits of one label per row (float16 and bfloat16: moved as uint16 by dmlgpu, torch.bfloat16 on PyTorch), an
in-place KV-cache write and a decode loop (``scatter_nd(cache, idx, rows, out=cache)`` when the installed
dmlgpu has ``out=``, else the copying ``scatter_nd``, and the row's name ends in ``(copy)``), MoE dispatch
and combine, GNN gather and scatter-add (PyTorch's atomic calls; its deterministic mode in a column of its
own), top-k gather_elements, point clouds (gather_nd, batch_dims=1) and a recommender table past 4 GiB with
Zipf-skewed ids (skipped, with the reason, where the device lacks the memory), embedding bags (sum and mean of
bags of 20 Zipf ids: F.embedding_bag) and message passing (gather_scatter against index_select + index_add_:
no [edges, row] intermediate on dmlgpu's side); three rows repeat a job as users
spell it (``table[ids]``, ``cache[pos] = rows``, ``np.add.at``) beside its function call's row. Sums are exact: the GNN
messages are small integers, so every order of summation gives the same bits.

Processes: by default (``--process separate``) the peer runs first in a process of its own, and dmlgpu then
in this one, which holds no CUDA context of PyTorch's: each side as its users run it (a CUDA context keeps an
NVIDIA GPU's clocks up for every API of the process; dmlgpu holds its own where it can: runtime/clocks.py).
The peer's results reach dmlgpu's process as SHA-256 digests of their bytes. ``--process same`` runs both in
one process, the peer's calls after dmlgpu's for each workload.

Usage: python -m dmlgpu bench apps [--scale 1] [--workloads embedding*,gnn*] [--repeats 50] [--budget 3]
                                   [--peer auto|torch|numpy] [--process separate|same] [--out DIR]
                                   [--markdown] [--list]
       python -m dmlgpu bench apps --render DIR/apps.json [--markdown]
The workloads: bench/app_workloads.py; the peers: bench/app_peers.py.
Writes apps.json and apps.md to --out (default dmlgpu-bench/). A full run at --scale 1 needs about 12 GiB of
device memory (the recommender's table, on both sides in turn) and as much host memory.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import dmlgpu

from ..runtime import default_device_index
from .clock import host_samples
from .units import fmt_bytes, fmt_number
from .app_peers import Digest, RemoteSide, TorchSide, make_side  # noqa: F401  (TorchSide: apps.TorchSide)
from .app_workloads import App, BUILDERS, has_out, random_rows, select, zipf_ids  # noqa: F401  (apps.*: tests)

JSON_NAME, MARKDOWN_NAME = "apps.json", "apps.md"
WARMUP = 2                 # calls after the first (checked) call, before timing
MEMORY_HEADROOM = 0.8      # a case may use this fraction of the device memory (and of the peer's free memory)


# ---- running ----

@dataclass
class Settings:
    scale: float = 1.0
    repeats: int = 50
    budget_s: float = 3.0
    seed: int = 0


def wall_samples(fn, sync, repeats: int, budget_s: float) -> list:
    """Seconds of ``fn(); sync()`` over up to ``repeats`` calls (at least 5, ``budget_s`` at most), after
    WARMUP calls."""
    for _ in range(WARMUP):
        fn()
        sync()

    def once():
        fn()
        sync()
    return host_samples(once, repeats, budget_s)


def compare_bits(got: np.ndarray, expected) -> str | None:
    """None if equal bit for bit (same shape and item size), else what differs; ``expected`` is an array or
    the Digest of one (the peer ran in a process of its own)."""
    if isinstance(expected, Digest):
        mine = Digest.of(got)
        return None if mine == expected else \
            f"the bits differ (SHA-256 across processes; dmlgpu {mine.shape}, peer {expected.shape})"
    got, expected = np.ascontiguousarray(got), np.ascontiguousarray(expected)
    if got.shape != expected.shape or got.dtype.itemsize != expected.dtype.itemsize:
        return f"got {got.shape} {got.dtype}, the peer {expected.shape} {expected.dtype}"
    u = np.dtype(f"u{got.dtype.itemsize}")
    diff = got.view(u) != expected.view(u)
    if not diff.any():
        return None
    where = tuple(int(i) for i in np.argwhere(diff)[0])
    return f"{int(diff.sum())} of {diff.size} elements differ; first at {where}: dmlgpu {got[where]!r}, " \
           f"peer {expected[where]!r}"


def run_dmlgpu(dev, app: App, s: Settings) -> tuple[dict, np.ndarray]:
    """The checked first call, the timed calls and the recorded GPU time, on fresh Tensors."""
    dev.synchronize()
    t = {k: dmlgpu.tensor(v, device=dev) for k, v in app.inputs.items()}
    if app.dml_prepare:
        t = app.dml_prepare(t)
    dev.synchronize()
    start = time.perf_counter()
    result = app.dml(t)
    dev.synchronize()
    first = time.perf_counter() - start
    got = result.numpy()
    del result
    samples = wall_samples(lambda: app.dml(t), dev.synchronize, s.repeats, s.budget_s)
    out = {"first_us": first * 1e6, "median_us": statistics.median(samples) * 1e6, "samples": len(samples)}
    try:
        if not app.recordable:
            raise RuntimeError("a Recording of the loop would hold every copy it makes")
        with dev.record(timestamps=True) as rec:
            app.dml(t)
        ts = rec.timestamps()
        out["gpu_us"] = (ts[-1] - ts[0]) / 1e3
        del rec
    except Exception as exc:       # e.g. a call that cannot be recorded
        out["gpu_us"] = None
        out["gpu_note"] = f"not recorded: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    del t
    gc.collect()
    dev.empty_cache()
    return out, got


def run_peer(side, app: App, s: Settings, deterministic: bool = False) -> tuple[dict, dict]:
    """(the best call's figures with every call's median, {call: result as NumPy} of fresh checked calls)."""
    results, calls, best = {}, {}, None
    if deterministic:
        side.deterministic(True)
    try:
        for name, fn in side.calls(app).items():
            try:
                a = {k: side.put(v, app.torch_dtypes.get(k) if side.kind == "torch" else None)
                     for k, v in app.inputs.items()}
                if side.kind == "torch":
                    a.update({k: side.put(v) for k, v in app.torch_aux.items()})
                a = side.prepare(app, a)
                side.sync()
                start = time.perf_counter()
                r = fn(a)
                side.sync()
                first = time.perf_counter() - start
                results[name] = side.fetch(r)
                del r
                samples = wall_samples(lambda: fn(a), side.sync, s.repeats, s.budget_s)
                med = statistics.median(samples) * 1e6
                calls[name] = med
                if best is None or med < best["median_us"]:
                    best = {"call": name, "median_us": med, "first_us": first * 1e6, "samples": len(samples),
                            "_fn": fn, "_args": a}
                else:
                    del a
            except Exception as exc:   # e.g. no deterministic implementation
                calls[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        if best is not None:
            best["gpu_us"] = side.gpu_us(best.pop("_fn"), best.pop("_args"))
    finally:
        if deterministic:
            side.deterministic(False)
        side.release()
    if best is None:
        raise RuntimeError("no peer call ran: " + "; ".join(f"{k}: {v}" for k, v in calls.items()))
    return {**best, "calls": calls}, results


def run_app(dev, side, name: str, s: Settings, rng, inplace: bool) -> dict:
    row = {"workload": name}
    try:
        app = BUILDERS[name](s.scale, rng, inplace)
    except MemoryError as exc:
        return {**row, "skipped": f"the host cannot hold the inputs ({exc})"}
    row.update(workload=app.name, family=app.family, sizes=app.sizes, steps=app.steps, note=app.note)
    need = int(app.device_bytes() * 1.25)
    capacity, free = dev.runtime.memory_capacity, side.free_bytes()
    if need > MEMORY_HEADROOM * capacity:
        return {**row, "skipped": f"needs about {fmt_bytes(need)} of device memory; the Vulkan device has "
                                  f"{fmt_bytes(capacity)}"}
    if free is not None and need > MEMORY_HEADROOM * free:
        return {**row, "skipped": f"needs about {fmt_bytes(need)} of device memory; the peer has "
                                  f"{fmt_bytes(free)} free"}
    try:
        if isinstance(side, RemoteSide) and "peer" not in side.report["rows"][name]:
            skipped = side.report["rows"][name].get("skipped")
            if skipped:
                return {**row, "skipped": skipped}
        dml, got = run_dmlgpu(dev, app, s)
        peer, results = side.peer(name) if isinstance(side, RemoteSide) else run_peer(side, app, s)
        mismatch = None
        for call, expected in results.items():
            bad = compare_bits(got, expected)
            if bad:
                mismatch = f"{call}: {bad}"
                break
        row.update(dmlgpu=dml, peer=peer, ratio=peer["median_us"] / dml["median_us"],
                   verified=mismatch is None, mismatch=mismatch)
        if app.deterministic and side.kind == "torch":
            try:
                det, det_results = side.peer(name, True) if isinstance(side, RemoteSide) else \
                    run_peer(side, app, s, deterministic=True)
                row["peer_deterministic"] = det
                for call, expected in det_results.items():
                    bad = compare_bits(got, expected)
                    if bad and row["mismatch"] is None:
                        row.update(verified=False, mismatch=f"{call} (deterministic): {bad}")
            except RuntimeError as exc:
                row["peer_deterministic"] = {"error": str(exc)}
    except Exception as exc:       # one failing workload must not end the run: it is reported
        row.update(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=-4))
    finally:
        gc.collect()
        side.release()
    return row


def run(dev, side, names: list[str], s: Settings, progress=None) -> dict:
    rng = np.random.default_rng(s.seed)
    inplace = has_out()
    rows = []
    for i, name in enumerate(names):
        if progress:
            print(f"[{i + 1}/{len(names)}] {name}", file=sys.stderr, flush=True)
        rows.append(run_app(dev, side, name, s, rng, inplace))
        r = rows[-1]
        if progress and (r.get("error") or r.get("mismatch")):
            print(f"  !! {r.get('error') or 'MISMATCH ' + r['mismatch']}", file=sys.stderr, flush=True)
        if progress and r.get("skipped"):
            print(f"  skipped: {r['skipped']}", file=sys.stderr, flush=True)
    ok = [r["ratio"] for r in rows if r.get("verified")]
    return {"meta": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "device": {"index": dev.info.index, "name": dev.info.name, "type": dev.info.type,
                                "memory": dev.runtime.memory_capacity},
                     "peer": side.info(), "dmlgpu": dmlgpu.__version__, "inplace_scatter": inplace,
                     "scale": s.scale, "repeats": s.repeats, "budget_s": s.budget_s, "numpy": np.__version__,
                     "python": platform.python_version(), "command": ""},
            "rows": rows,
            "geomean": math.exp(sum(map(math.log, ok)) / len(ok)) if ok else None}


def peer_report(side, names: list[str], s: "Settings") -> dict:
    """``--peer-side-only``: the peer's half of run() (the same workloads built from the same seed), with
    digests of its results in place of the results."""
    rng = np.random.default_rng(s.seed)
    inplace = has_out()
    rows: dict = {}
    for name in names:
        row = rows[name] = {}
        try:
            app = BUILDERS[name](s.scale, rng, inplace)
            need, free = int(app.device_bytes() * 1.25), side.free_bytes()
            if free is not None and need > MEMORY_HEADROOM * free:
                row["skipped"] = f"needs about {fmt_bytes(need)} of device memory; the peer has {fmt_bytes(free)} free"
                continue
            for det in (False, True) if app.deterministic and side.kind == "torch" else (False,):
                key = "peer_deterministic" if det else "peer"
                try:
                    peer, results = run_peer(side, app, s, deterministic=det)
                except RuntimeError as exc:
                    if not det:
                        raise
                    row[key] = {"error": str(exc)}
                    continue
                row[key] = peer
                row[key + "_digests"] = {call: list(Digest.of(r)) for call, r in results.items()}
                del results
        except MemoryError as exc:
            row["skipped"] = f"the host cannot hold the inputs ({exc})"
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            gc.collect()
            side.release()
    return {"info": side.info(), "rows": rows}


# ---- the report ----

HEADER = ["workload", "sizes", "dmlgpu us (call+sync)", "first us", "peer us (call+sync)", "peer call",
          "peer/dmlgpu", "dmlgpu GPU us", "peer GPU us", "det. peer us", "check"]


def failures(results: dict) -> list[str]:
    out = []
    for r in results["rows"]:
        if r.get("error"):
            out.append(f"{r['workload']}: ERROR {r['error']}")
        elif r.get("verified") is False:
            out.append(f"{r['workload']}: MISMATCH {r['mismatch']}")
    return out


def _cells(r: dict) -> list[str]:
    blank = [""] * (len(HEADER) - 3)
    if r.get("skipped"):
        return [r["workload"], r.get("sizes", ""), *blank, f"skipped: {r['skipped']}"]
    if r.get("error"):
        return [r["workload"], r.get("sizes", ""), *blank, f"ERROR: {r['error']}"]
    d, p, det = r["dmlgpu"], r["peer"], r.get("peer_deterministic") or {}
    per = f" ({fmt_number(d['median_us'] / r['steps'])}/step)" if r["steps"] > 1 else ""
    return [r["workload"], r["sizes"], fmt_number(d["median_us"]) + per, fmt_number(d["first_us"]),
            fmt_number(p["median_us"]), p["call"], fmt_number(r["ratio"], 2), fmt_number(d.get("gpu_us")),
            fmt_number(p.get("gpu_us")), fmt_number(det["median_us"]) if "median_us" in det else "",
            "ok" if r["verified"] else "MISMATCH"]


def _table(rows, markdown: bool) -> str:
    if markdown:
        def line(cells):
            return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
        return "\n".join([line(HEADER), line(["---"] * len(HEADER))] + [line(r) for r in rows])
    widths = [max(len(str(r[i])) for r in [HEADER] + rows) for i in range(len(HEADER))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [HEADER] + rows)


def render(results: dict, markdown: bool = False) -> str:
    m = results["meta"]
    p = m["peer"]
    peer = f"torch {p['version']} (CUDA {p['cuda']}, {p['device']})" if p["name"] == "torch" else \
        f"numpy {p['version']} (host)"
    head = (f"## apps: {m['device']['name']}, {m['date'][:10]}" if markdown else
            f"dmlgpu apps, {m['date']}: {m['device']['name']} ({m['device']['type']}); peer {peer}")
    lines = [head, "",
             f"command `{m['command']}`; scale {m['scale']}; dmlgpu {m['dmlgpu']}, scatter_nd(out=) "
             f"{'present: in-place rows' if m['inplace_scatter'] else 'absent: the (copy) rows copy the tensor'}; "
             f"peer {peer}, "
             + ("in a process of its own (dmlgpu's process holds no CUDA context of PyTorch's)"
                if p.get("process") == "separate" else "in dmlgpu's process")
             + (f"; dmlgpu's clock hold: {m['clock_hold']}." if m.get("clock_hold") else "."),
             "dmlgpu us: eager wall time of the call on device Tensors plus Device.synchronize(), median of up to "
             f"{m['repeats']} calls ({m['budget_s']} s at most) after {WARMUP} warm-up calls; first us: the first "
             "call (cold), call + synchronize; peer us: the fastest peer call (peer call) likewise "
             "(PyTorch: + torch.cuda.synchronize()); peer/dmlgpu > 1: dmlgpu faster; dmlgpu GPU us: Vulkan "
             "timestamps of the call recorded once (a timestamp after every command, their cost included); peer "
             "GPU us: CUDA events around the call; det. peer us: PyTorch under "
             "use_deterministic_algorithms(True); loops: the whole loop, per step in brackets; check: bit for "
             "bit against every peer call's result.", "",
             _table([_cells(r) for r in results["rows"]], markdown), ""]
    g = results["geomean"]
    lines.append(f"geometric mean of peer/dmlgpu over {sum(1 for r in results['rows'] if r.get('verified'))} "
                 f"checked rows: {fmt_number(g, 2) if g else '-'}")
    notes = [f"{r['workload']}: {r['note']}" for r in results["rows"] if r.get("note")]
    if notes:
        lines.append("notes: " + "; ".join(notes))
    bad = failures(results)
    lines += ["", (f"{len(bad)} FAILURES: " + "; ".join(bad)) if bad else "all results checked against the peer"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from .command import DEVICE_HELP, open_device, parser
    ap = parser("python -m dmlgpu bench apps", __doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the counts (default 1: real sizes; "
                                                             "0.01 on lavapipe)")
    ap.add_argument("--workloads", help="comma-separated names or shell patterns (see --list)")
    ap.add_argument("--repeats", type=int, default=50, help="timed calls per side (default 50)")
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of timed calls per call at most (default 3)")
    ap.add_argument("--peer", choices=("auto", "torch", "numpy"), default="auto",
                    help="auto (default): PyTorch when CUDA is available, else NumPy")
    ap.add_argument("--cuda-device", type=int, default=None,
                    help="PyTorch's CUDA device (default: the one named like the Vulkan device, else 0)")
    ap.add_argument("--device", type=int, default=None, help=DEVICE_HELP)
    ap.add_argument("--out", type=Path, default=Path("dmlgpu-bench"),
                    help="output folder for apps.json and apps.md (default: dmlgpu-bench)")
    ap.add_argument("--markdown", action="store_true", help="print the Markdown section")
    ap.add_argument("--list", action="store_true", help="list the workloads and exit")
    ap.add_argument("--render", type=Path, metavar="JSON", help="print a saved apps.json again; run nothing")
    ap.add_argument("--process", choices=("separate", "same"), default="separate",
                    help="separate (default): the peer runs in a process of its own, before dmlgpu's, which then "
                         "holds no CUDA context of PyTorch's (as each side's users run them); same: both in this one")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    ap.add_argument("--peer-side-only", type=Path, help=argparse.SUPPRESS)   # the separate peer's process
    ap.add_argument("--vulkan-name", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(BUILDERS))
        return 0
    if args.render:
        results = json.loads(args.render.read_text())
        print(render(results, markdown=args.markdown))
        return 1 if failures(results) else 0
    if args.scale <= 0 or args.repeats < 1:
        ap.error("--scale must be > 0 and --repeats >= 1")
    try:
        names = select(args.workloads.split(",") if args.workloads else None)
    except ValueError as exc:
        print(f"python -m dmlgpu bench apps: {exc}", file=sys.stderr)
        return 2
    settings = Settings(args.scale, args.repeats, args.budget)
    if args.peer_side_only:
        side = make_side(args.peer, args.cuda_device, args.vulkan_name)
        args.peer_side_only.write_text(json.dumps(peer_report(side, names, settings), default=str))
        return 0
    if args.device is not None and not 0 <= args.device < len(dmlgpu.devices()):
        open_device(ap, args.device)        # (the usage error that names the devices; no Device opens here)
    if args.process == "separate":
        index = args.device if args.device is not None else default_device_index()
        with tempfile.TemporaryDirectory(prefix="dmlgpu-peer-") as tmp:
            report = Path(tmp) / "peer.json"
            cmd = [sys.executable, "-m", "dmlgpu", "bench", "apps", "--peer-side-only", str(report),
                   "--vulkan-name", dmlgpu.devices()[index].name, "--scale", repr(args.scale), "--repeats",
                   str(args.repeats), "--budget", repr(args.budget), "--peer", args.peer,
                   "--workloads", ",".join(names)]
            if args.cuda_device is not None:
                cmd += ["--cuda-device", str(args.cuda_device)]
            if not args.quiet:
                print("the peer, in a process of its own ...", file=sys.stderr, flush=True)
            if subprocess.run(cmd).returncode != 0 or not report.exists():
                print("python -m dmlgpu bench apps: the peer's process failed", file=sys.stderr)
                return 1
            side = RemoteSide(json.loads(report.read_text()))
        dev = open_device(ap, args.device)
    else:
        dev = open_device(ap, args.device)
        side = make_side(args.peer, args.cuda_device, dev.info.name)
    results = run(dev, side, names, settings, progress=not args.quiet)
    results["meta"]["clock_hold"] = dev.clock_hold.wait()
    results["meta"]["command"] = " ".join(["python -m dmlgpu bench apps"] + list(sys.argv[1:] if argv is None
                                                                                 else argv))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / JSON_NAME).write_text(json.dumps(results, indent=1, default=str) + "\n")
    (args.out / MARKDOWN_NAME).write_text(render(results, markdown=True))
    print(render(results, markdown=args.markdown))
    bad = failures(results)
    if bad:
        print(f"!! {len(bad)} FAILURES (mismatches or errors): see above", file=sys.stderr)
    return 1 if bad else 0
