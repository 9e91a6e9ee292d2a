"""The results as a text table (stdout: ``text``, fitting WIDTH columns, or ``text(wide=True)``, every column), CSV
(``csv_text``: the cases, every column), Markdown (for bench/RESULTS.md) and JSON.

JSON format (``bench.json``):
* ``meta``: date (UTC), command, device (index, name, type, max_storage_buffer_range in bytes,
  timestamp_period_ns), peer (name, version; torch: cuda, device), dmlgpu (version, commit), numpy,
  python, host, repeats, index_dtype, bytes_moved (the definition);
* ``cases``: one per (workload, size): workload, group, operator, target_bytes; then either ``skipped``
  (why), or ``error`` and ``traceback`` (strings), or: shape, dtype, moved_bytes; ``dmlgpu`` (median_ns,
  min_ns, p90_ns, samples, dispatches_per_op, wall_ns_per_op: a host-timed cross-check, gbps: GB/s =
  1e9 bytes/s); ``copy`` (the copy shader on as many bytes: the same fields, moved_bytes); copy_fraction
  (dmlgpu GB/s / copy GB/s); ``peer`` (the fastest of the peer's calls for the job: name, call (which
  won), calls (every call's median_ns, or why it did not run), median_ns, min_ns, samples, method, gbps);
  ratio (dmlgpu GB/s / peer GB/s); scatters on PyTorch: ``peer_deterministic`` (the same, under
  ``torch.use_deterministic_algorithms(True)``) and ratio_deterministic; single-element gathers:
  ``ceiling`` (bytes, gbps: the random-access ceiling, workloads.py) and ceiling_fraction; ``eager`` (first_ns, median_ns, samples: wall time of the eager call on device Tensors and a synchronize,
  the case's first call and steady state; over_stream_ns: median minus dmlgpu's stream_ns, the host-timed
  time per repetition without timestamps; before issue 19 over_gpu_ns, minus the timestamped median, which
  the timestamps' own cost could make negative); ``dmlgpu`` also has stream_ns; verified (bool);
  mismatch (str or null);
* ``latency`` (or null): operation, ``dmlgpu`` (recorded_round_trip_us, function_round_trip_us,
  eager_call_us, eager_call_sync_us, recorded_call_us, empty_recording_us, chain_us, max_queued,
  amortized_us, record_us_per_op, ops, iterations), ``peer`` (name, round_trip_us, eager_call_us,
  eager_call_sync_us, recorded_call_us, chain_us, amortized_us, how), ``scatter`` (operation, ``dmlgpu``:
  eager_call_us, eager_call_sync_us, recorded_call_us, chain_us, ops; ``peer``: the same and name, how),
  mismatches (list of str). Descriptions: bench/latency.py.
"""
from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

from .units import fmt_bytes, fmt_number

JSON_NAME, MARKDOWN_NAME, PLOT_NAME = "bench.json", "bench.md", "bench.png"
COLUMNS = ("workload", "moved", "dmlgpu GPU us (timestamps)", "dmlgpu stream us", "dmlgpu GB/s", "% copy",
           "% ceiling", "peer GB/s", "peer call", "dmlgpu/peer", "det. peer GB/s", "dmlgpu/det. peer",
           "eager us (call+sync)", "eager - stream us", "first eager us", "check")
ALIGN = "lrrrrrrrlrrrrrrl"
WIDTH = 100             # columns of the default text report
SHORT = ("workload", "moved", "GPU us", "GB/s", "% copy", "peer GB/s", "vs peer", "eager us", "check")   # text()'s
SHORT_ALIGN = "lrrrrrrrl"
FORMATS = ("table", "wide", "markdown", "csv")     # python -m dmlgpu bench --format


def failures(results: dict) -> list[str]:
    """Every mismatch and error, as lines (empty when all results were verified correct)."""
    out = []
    for c in results["cases"]:
        where = f"{c['workload']} {fmt_bytes(c['target_bytes'])}"
        if c.get("error"):
            out.append(f"{where}: ERROR {c['error']}")
        elif c.get("verified") is False:
            out.append(f"{where}: MISMATCH {c['mismatch']}")
    lat = results.get("latency")
    if lat:
        out += [f"latency: MISMATCH in {m}" for m in lat["mismatches"]]
    return out


def _case_cells(c: dict) -> list[str]:
    name, size = c["workload"], fmt_bytes(c.get("moved_bytes") or c["target_bytes"])
    blank = [""] * (len(COLUMNS) - 3)
    if c.get("skipped"):
        return [name, size, *blank, f"skipped: {c['skipped']}"]
    if c.get("error"):
        return [name, size, *blank, f"ERROR: {c['error']}"]
    d, e = c["dmlgpu"], c.get("eager")
    over = e.get("over_stream_ns") if e else None     # bench.json before issue 19: over_gpu_ns (timestamps)
    eager = [fmt_number(e["median_ns"] / 1e3), fmt_number(over / 1e3) if over is not None else "",
             fmt_number(e["first_ns"] / 1e3)] if e else ["", "", ""]
    ceiling = f"{100 * c['ceiling_fraction']:.0f}%" if "ceiling_fraction" in c else ""
    det = c.get("peer_deterministic")
    det_cells = [fmt_number(det["gbps"]), fmt_number(c["ratio_deterministic"], 2)] if det else ["", ""]
    stream = fmt_number(d["stream_ns"] / 1e3) if "stream_ns" in d else ""      # bench.json from issue 19 on
    return [name, size, fmt_number(d["median_ns"] / 1e3), stream, fmt_number(d["gbps"]),
            f"{100 * c['copy_fraction']:.0f}%",
            ceiling, fmt_number(c["peer"]["gbps"]), c["peer"].get("call", c["peer"]["name"]), fmt_number(c["ratio"], 2),
            *det_cells, *eager, "ok" if c["verified"] else "MISMATCH"]


def _short_cells(c: dict) -> list[str]:
    """text()'s cells of a case (SHORT): a skipped case's reason and an error are said below the table."""
    name, size = c["workload"], fmt_bytes(c.get("moved_bytes") or c["target_bytes"])
    if c.get("skipped") or c.get("error"):
        return [name, size] + [""] * (len(SHORT) - 3) + ["skipped" if c.get("skipped") else "ERROR"]
    d, e = c["dmlgpu"], c.get("eager")
    return [name, size, fmt_number(d["median_ns"] / 1e3), fmt_number(d["gbps"]), f"{100 * c['copy_fraction']:.0f}%",
            fmt_number(c["peer"]["gbps"]), fmt_number(c["ratio"], 2), fmt_number(e["median_ns"] / 1e3) if e else "",
            "ok" if c["verified"] else "MISMATCH"]


def _latency_rows(lat: dict) -> tuple[list, list]:
    """(rows, header) of the latency table."""
    d, p = lat["dmlgpu"], lat["peer"]
    peer = p["name"]
    return [
        ["round trip, pre-recorded Recording (upload idx, run, download)", fmt_number(d["recorded_round_trip_us"]),
         fmt_number(p["round_trip_us"])],
        ["round trip, NumPy-in/NumPy-out function call", fmt_number(d["function_round_trip_us"]),
         fmt_number(p["round_trip_us"])],
        [f"eager call on Tensors (queued, up to {d['max_queued']} per submission)", fmt_number(d["eager_call_us"]),
         fmt_number(p["eager_call_us"])],
        ["eager call on Tensors, then synchronize", fmt_number(d["eager_call_sync_us"]),
         fmt_number(p["eager_call_sync_us"])],
        [f"{d['ops']} dependent eager calls on Tensors, then synchronize (per call)", fmt_number(d["chain_us"]),
         fmt_number(p["chain_us"])],
        [f"amortized per op: {d['ops']} ops recorded in one submission, rec.run() wall / {d['ops']} (peer: "
         f"{d['ops']} calls, then synchronize)", fmt_number(d["amortized_us"]), fmt_number(p["amortized_us"])],
        [f"recording {d['ops']} ops (host time per op, first run included)", fmt_number(d["record_us_per_op"]), ""],
    ], ["small-op latency (host wall time): " + lat["operation"], "dmlgpu us", f"{peer} us"]


def _breakdown_rows(lat: dict, short: bool = False) -> tuple[list, list] | None:
    """(rows, header) of the per-call breakdown: the small gather and the small scatter_nd, or None (an older
    bench.json); ``short``: shorter headers (text()'s)."""
    sc = lat.get("scatter")
    d, p = lat["dmlgpu"], lat["peer"]
    if sc is None or "recorded_call_us" not in d:
        return None
    sd, sp = sc["dmlgpu"], sc["peer"]
    torch = p["name"] == "torch"

    def row(label, key):
        return [label, fmt_number(d[key]), fmt_number(p.get(key)), fmt_number(sd[key]), fmt_number(sp.get(key))]
    return [
        row(f"queued call on Tensors, steady state: the call alone, no wait (1 in {d['max_queued']} submits)",
            "eager_call_us"),
        row("call, then synchronize (Device.synchronize / torch.cuda.synchronize)", "eager_call_sync_us"),
        row("submission floor: rec.run() of a Recording of the call (submit, wait)"
            + (" / CUDA graph replay(), then synchronize" if torch else ""), "recorded_call_us"),
        ["submission floor: rec.run() of an empty Recording", fmt_number(d["empty_recording_us"]), "", "", ""],
        row(f"{d['ops']} dependent calls without record(), then synchronize: per call", "chain_us"),
    ], (["per call (host wall time, median, us)", "gather dmlgpu", f"gather {p['name']}", "scatter_nd dmlgpu",
         f"scatter_nd {p['name']}"] if short else
        ["per call (host wall time, median)", "gather: dmlgpu us", f"gather: {p['name']} us",
         "scatter_nd: dmlgpu us", f"scatter_nd: {p['name']} us"])


def _text_table(header, rows, align: str, width: int | None = None) -> str:
    """Columns padded to their widest cell; ``align`` has "l" or "r" per column. ``width``: where the lines would
    be longer, the first column's cells wrap onto lines of their own (the other cells on the first)."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        widths[0] = max(16, width - sum(widths[1:]) - 2 * (len(widths) - 1))

    def line(r):
        first = textwrap.wrap(str(r[0]), widths[0], subsequent_indent="  ", break_long_words=False,
                              break_on_hyphens=False) or [""]
        cells = [first[0], *r[1:]]
        out = "  ".join(str(v).rjust(w) if a == "r" else str(v).ljust(w)
                        for v, w, a in zip(cells, widths, align)).rstrip()
        return "\n".join([out] + first[1:])
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _wrapped(text: str, width: int | None, indent: str = "") -> str:
    return textwrap.fill(text, width, subsequent_indent=indent) if width else text


def text(results: dict, wide: bool = False) -> str:
    """The plain-text report: a header, the cases, the latency table, and any failures; within WIDTH columns
    (the cases' main columns: SHORT), or, ``wide``, every column (COLUMNS) on lines as long as they come."""
    m = results["meta"]
    peer = m["peer"]
    width = None if wide else WIDTH
    lines = [_wrapped(f"dmlgpu benchmark, {m['date']}: device {m['device']['index']} {m['device']['name']} "
                      f"({m['device']['type']}); peer {_peer_text(peer)}; {m['repeats']} timed repetitions", width)]
    if wide:
        lines += ["GB/s = bytes moved (read + written, indices included) / median time; % copy: of the copy "
                  "shader's GB/s on as many bytes (on CPU devices row gathers move a row per invocation, the copy 16 "
                  "bytes: above 100 % there); % ceiling: of the random-access ceiling (single-element gathers); "
                  "peer: the fastest of its calls for the job (peer call); det. peer: PyTorch with deterministic "
                  "algorithms (scatters; dmlgpu's are deterministic); eager: wall time of the call on device Tensors "
                  "until its result is ready (the queued call, then synchronize; steady-state median, and the case's "
                  "first call); dmlgpu GPU us: Vulkan timestamps per repetition of 100 recorded back to back (a "
                  "timestamp after every command: their own cost included); dmlgpu stream us: what one more "
                  "repetition adds to a submission without timestamps (host-timed; GB/s and ratios use the "
                  "timestamps); eager - stream: the eager wall minus the stream time", ""]
        lines.append(_text_table(list(COLUMNS), [_case_cells(c) for c in results["cases"]], ALIGN))
    else:
        lines += [_wrapped(f"GPU us: dmlgpu's Vulkan timestamps per repetition (median of {m['repeats']} recorded "
                           f"back to back); GB/s: bytes moved (read + written, indices included) / GPU time; % copy: "
                           f"of the copy shader's GB/s on as many bytes; vs peer: dmlgpu's GB/s over the peer's "
                           f"fastest call's; eager us: the call on device Tensors, then synchronize (steady-state "
                           f"median). Every column (stream time, ceilings, PyTorch's deterministic mode, the peer's "
                           f"call): --format wide, bench.md, bench.json.", width), ""]
        lines.append(_text_table(list(SHORT), [_short_cells(c) for c in results["cases"]], SHORT_ALIGN, width))
        skipped = sorted({c["skipped"] for c in results["cases"] if c.get("skipped")})
        if skipped:
            lines.append(_wrapped("skipped: " + "; ".join(skipped), width, "  "))
    if results.get("latency"):
        rows, header = _latency_rows(results["latency"])
        lines += ["", _text_table(header, rows, "lrr", width)]
        b = _breakdown_rows(results["latency"], short=not wide)
        if b:
            lines += ["", _text_table(b[1], b[0], "lrrrr", width),
                      _wrapped("(" + results["latency"]["scatter"]["operation"] + "; peer: "
                               + results["latency"]["scatter"]["peer"]["how"] + ")", width)]
    bad = failures(results)
    lines += [""] + ([f"{len(bad)} FAILURES:"] + [_wrapped(f"  {b}", width, "    ") for b in bad] if bad else
                     ["all results verified against the peer"])
    return "\n".join(lines)


def csv_text(results: dict) -> str:
    """The cases as CSV: a header (COLUMNS), then a row per case, as the wide table shows them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(_case_cells(c) for c in results["cases"])
    return out.getvalue()


def render(results: dict, fmt: str) -> str:
    """The report in one of FORMATS."""
    return {"table": text, "wide": lambda r: text(r, wide=True), "markdown": markdown, "csv": csv_text}[fmt](results)


def _peer_text(peer: dict) -> str:
    if peer["name"] == "torch":
        return f"torch {peer['version']} (CUDA {peer['cuda']}, {peer['device']})"
    return f"numpy {peer['version']} ({peer['device']})"


def _md_table(header, rows) -> str:
    def row(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([row(header), row(["---"] * len(header))] + [row(r) for r in rows])


def markdown(results: dict) -> str:
    """A Markdown section for bench/RESULTS.md: the run's facts, the cases, the latency."""
    m = results["meta"]
    d = m["device"]
    facts = [
        ["date (UTC)", m["date"]],
        ["device", f"{d['index']}: {d['name']} ({d['type']}), "
                   f"maxStorageBufferRange {fmt_bytes(d['max_storage_buffer_range'])}"],
        ["command", f"`{m['command']}`"],
        ["peer", _peer_text(m["peer"])],
        ["dmlgpu", f"{m['dmlgpu']['version']} (commit {m['dmlgpu']['commit'] or 'unknown'})"],
        ["numpy / python", f"{m['numpy']} / {m['python']}"],
        ["timing", f"dmlgpu GPU us: median of {m['repeats']} repetitions recorded in one submission, Vulkan "
                   f"timestamps (one after every command, their cost included); eager: the call on Tensors + "
                   f"synchronize, host wall; eager - stream: minus the host-timed stream time per repetition "
                   f"(without timestamps: bench/gpu_timing.py); "
                   f"peer: median of {m['repeats']} warmed iterations "
                   + ("(CUDA events around each call: at small sizes they include PyTorch's launch overhead, "
                      "while dmlgpu's dispatches are pre-recorded); the fastest of several PyTorch calls for the "
                      "job (peer call); det. peer: the same with torch.use_deterministic_algorithms(True) "
                      "(scatters: dmlgpu's are deterministic)" if m["peer"]["name"] == "torch"
                      else "(perf_counter, at most ~1 s per case)")],
        ["bytes moved", m["bytes_moved"] + f"; indices {m['index_dtype']}"],
    ]
    ran = [c for c in results["cases"] if not c.get("skipped")]
    skipped = [c for c in results["cases"] if c.get("skipped")]
    parts = [f"## {d['name']}, {m['date'][:10]}", "", _md_table(["", ""], facts), "",
             _md_table(list(COLUMNS), [_case_cells(c) for c in ran])]
    if skipped:
        parts += ["", f"Skipped: {len(skipped)} cases (" + "; ".join(sorted({c['skipped'] for c in skipped})) + ")."]
    if results.get("latency"):
        rows, header = _latency_rows(results["latency"])
        parts += ["", _md_table(header, rows)]
        b = _breakdown_rows(results["latency"])
        if b:
            parts += ["", _md_table(b[1], b[0]), "", "Scatter: " + results["latency"]["scatter"]["operation"]
                      + "; peer: " + results["latency"]["scatter"]["peer"]["how"] + "."]
    bad = failures(results)
    parts += ["", (f"**{len(bad)} failures:** " + "; ".join(bad)) if bad else "All results verified against the peer."]
    return "\n".join(parts) + "\n"


def write_json(results: dict, path: Path) -> None:
    path.write_text(json.dumps(results, indent=1) + "\n")


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())
