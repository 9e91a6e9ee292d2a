"""``python -m dmlgpu bench``: dmlgpu's gather/scatter benchmark against PyTorch (CUDA) or NumPy.

Examples::

    python -m dmlgpu bench                          # every workload, 4 KiB .. 1 GiB moved (256 MiB on lavapipe)
    python -m dmlgpu bench --quick                  # a small subset, two small sizes (a smoke test)
    python -m dmlgpu bench --sizes 16K,1M,16M       # a medium run for lavapipe (~4 min; 256 MiB cases take long)
    python -m dmlgpu bench --workloads embedding-f32 --sizes 1M,64M --device 1 --out /tmp/bench
    python -m dmlgpu bench --render dmlgpu-bench/bench.json --format wide  # re-render a saved run
    python -m dmlgpu bench apps --scale 0.01        # the jobs users run (issue 19), small for lavapipe
    python -m dmlgpu bench latency                  # the completion floor and a small call against it

Writes bench.json, bench.md (a section to paste into bench/RESULTS.md) and bench.png to ``--out``;
prints the table to stdout (``--format``: table, within 100 columns; wide, every column; markdown; csv) and
progress to stderr. Exit status 1 if any result was wrong or failed, 2 for a command-line error.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from . import report
from .command import DEVICE_HELP, open_device, parser
from .plot import plot
from .progress import Progress
from .units import fmt_bytes, parse_size, parse_sizes
from .workloads import DEFAULT_SIZES, QUICK_SIZES, WORKLOADS, select

DEFAULT_OUT = Path("dmlgpu-bench")     # in the current directory


def parse_args(argv=None) -> argparse.Namespace:
    p = parser("python -m dmlgpu bench", __doc__)
    p.add_argument("--device", type=int, default=None, help=DEVICE_HELP)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    p.add_argument("--quick", action="store_true", help="a small subset of workloads and sizes")
    p.add_argument("--workloads", help="comma-separated names (a name is that workload alone), shell patterns "
                                       "(scatter*) or prefixes up to a '-' (embedding-f16), which say what they "
                                       "chose; see --list")
    p.add_argument("--sizes", help="comma-separated bytes moved, e.g. 4K,1M,256M (binary units)")
    p.add_argument("--max-size", help="skip sizes above this (default: 2x maxStorageBufferRange: 256 MiB on lavapipe)")
    p.add_argument("--repeats", type=int, default=100,
                   help="timed dispatches per Recording and peer iterations (default 100)")
    p.add_argument("--peer", choices=("auto", "torch", "numpy"), default="auto",
                   help="auto: PyTorch when CUDA is available, else NumPy")
    p.add_argument("--cuda-device", type=int, default=None,
                   help="PyTorch's CUDA device (default: the one named like the Vulkan device, else 0)")
    p.add_argument("--no-latency", action="store_true", help="skip the small-op latency measurements")
    p.add_argument("--format", choices=report.FORMATS, default="table",
                   help="table (default): the main columns, within 100; wide: every column; markdown: the section "
                        "bench.md holds; csv: the cases, every column")
    p.add_argument("--markdown", action="store_const", dest="format", const="markdown",
                   help="the same as --format markdown")
    p.add_argument("--render", type=Path, metavar="JSON", help="re-render a saved bench.json; run nothing")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    args.parser = p
    return args


# python -m dmlgpu bench SECTION ...: the section's module (dmlgpu.bench.<module>.main runs it)
SECTIONS = {"apps": "apps", "latency": "floor", "roundtrip": "roundtrip", "reductions": "reductions", "large": "large"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in SECTIONS:
        import importlib
        status: int = importlib.import_module(f"{__package__}.{SECTIONS[argv[0]]}").main(argv[1:])
        return status
    args = parse_args(argv)
    if args.list:
        for w in WORKLOADS:
            print(f"{w.name:24} {w.operator:17} {w.description}")
        return 0
    if args.render:
        results = report.read_json(args.render)
        return _emit(results, args.render.parent if args.out == DEFAULT_OUT else args.out, args.format,
                     write_json=False)

    from .peers import make_peer
    from .runner import Settings, default_max_size, run

    try:
        workloads = select(args.workloads.split(",") if args.workloads else None, quick=args.quick,
                           chose=lambda pat, names: print(f"--workloads {pat}: no workload has this name; it chose "
                                                          f"{', '.join(names)}", file=sys.stderr))
        sizes = parse_sizes(args.sizes) if args.sizes else list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    except ValueError as exc:
        print(f"python -m dmlgpu bench: {exc}", file=sys.stderr)
        return 2
    device = open_device(args.parser, args.device)
    max_size = parse_size(args.max_size) if args.max_size else default_max_size(device.info, max(sizes))
    dropped = [s for s in sizes if s > max_size]
    if dropped:
        print(f"skipping sizes above {fmt_bytes(max_size)}: {', '.join(map(fmt_bytes, dropped))}", file=sys.stderr)
    peer = make_peer(args.peer, args.cuda_device, device.info.name)
    quick = args.quick
    settings = Settings(workloads=workloads, sizes=sizes, max_size=max_size, repeats=args.repeats,
                        latency=not args.no_latency, latency_iters=200 if quick else 1000,
                        latency_budget_s=0.5 if quick else 2.0, latency_ops=100 if quick else 1000,
                        command=" ".join(["python -m dmlgpu bench"] + [shlex.quote(a) for a in
                                                                 argv]))
    print(f"dmlgpu on {device.info.name} ({device.info.type}); peer: {peer.kind}; "
          f"{len(workloads)} workloads x {len([s for s in sizes if s <= max_size])} sizes", file=sys.stderr)
    results = run(device, peer, settings, Progress(enabled=not args.quiet))
    return _emit(results, args.out, args.format)


def _emit(results: dict, out: Path, fmt: str, write_json: bool = True) -> int:
    """Prints the report, writes the files; 1 if anything failed."""
    out.mkdir(parents=True, exist_ok=True)
    if write_json:
        report.write_json(results, out / report.JSON_NAME)
    md = report.markdown(results)
    (out / report.MARKDOWN_NAME).write_text(md)
    print(md if fmt == "markdown" else report.render(results, fmt))
    note = plot(results, out / report.PLOT_NAME)
    written = [report.JSON_NAME] * write_json + [report.MARKDOWN_NAME] + [report.PLOT_NAME] * (note is None)
    print(f"wrote {', '.join(str(out / n) for n in written)}" + (f"; {note}" if note else ""), file=sys.stderr)
    bad = report.failures(results)
    if bad:
        print(f"!! {len(bad)} FAILURES (mismatches or errors): see above", file=sys.stderr)
    return 1 if bad else 0
