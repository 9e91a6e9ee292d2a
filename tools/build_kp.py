"""Build Kompute's Python module ``kp`` 0.9.0 offline, with dmlgpu's patches, into the running interpreter.

The patches are a conventional series: ``tools/kp-patches/series`` lists unified diffs (``-p1``) in the
order they apply, and each diff's header says why it exists (two are backports of upstream Kompute
commits). They are applied strictly (no fuzz, no offsets), so a patch that no longer fits fails the build. The built module reports what it carries as ``kp.__dmlgpu_patches__`` (the series' names and a digest of their contents),
which dmlgpu checks; nothing keeps a patch level by hand.

Building kp 0.9.0 offline: its sdist's CMake clones its dependencies from GitHub; the
``KOMPUTE_OPT_USE_BUILT_IN_*=OFF`` switches make it use the system's Vulkan headers, fmt and pybind11
instead (Debian: libvulkan-dev, libfmt-dev, pybind11-dev). Its Release build still compiles in its
debug-layer code, which turns on VK_LAYER_KHRONOS_validation whenever that layer is installed and routes
every message to a debug log that is off: we build with ``KOMPUTE_OPT_DISABLE_VK_DEBUG_LAYERS=ON`` and
dmlgpu enables the layer itself when asked to (``DMLGPU_VALIDATION=1``, dmlgpu/runtime/validation.py).

Usage: ``python tools/build_kp.py [--sdist PATH] [--target DIR] [--force]``. It does nothing when a kp
with exactly this series is already importable.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile

KP_VERSION = "0.9.0"
PATCH_DIR = pathlib.Path(__file__).resolve().parent / "kp-patches"


def series() -> list[str]:
    """The patch names, in order (file names without .patch)."""
    lines = (PATCH_DIR / "series").read_text().split()
    return [name.removesuffix(".patch") for name in lines]


def reported() -> list[str]:
    """What a kp built from the series reports as ``kp.__dmlgpu_patches__``: the names, then
    "sha256:<digest of the patches' contents>", so that a patch edited under the same name is rebuilt."""
    digest = hashlib.sha256(b"".join((PATCH_DIR / f"{n}.patch").read_bytes() for n in series())).hexdigest()
    return series() + [f"sha256:{digest[:16]}"]


ENV = {
    "KOMPUTE_OPT_INSTALL": "OFF",
    "KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER": "OFF",
    "KOMPUTE_OPT_USE_BUILT_IN_FMT": "OFF",
    "KOMPUTE_OPT_USE_BUILT_IN_PYBIND11": "OFF",
    "KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK": "ON",
    "KOMPUTE_OPT_DISABLE_VK_DEBUG_LAYERS": "ON",
}


def installed_patches() -> list[str] | None:
    """The patch names the importable kp carries (None when kp is not importable)."""
    code = "import kp; print(' '.join(getattr(kp, '__dmlgpu_patches__', ())))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else None


def fetch_sdist(dest: pathlib.Path) -> pathlib.Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    "-d", str(dest), f"kp=={KP_VERSION}"], check=True)
    return next(dest.glob(f"kp-{KP_VERSION}.tar.gz"))


def apply_diff(src: pathlib.Path, diff: str, name: str) -> None:
    """Applies a ``git diff``-style unified diff (-p1) strictly: every hunk's context and removed lines must
    stand exactly at the line numbers the hunk names (no fuzz, no offsets); new files are created. (A small
    applier of our own: the GPU machine has neither git nor patch.)"""
    files = re.split(r"^diff --git .*$", diff, flags=re.M)[1:]
    if not files:
        raise SystemExit(f"build_kp: patch {name} changes no file (no 'diff --git' header)")
    for chunk in files:
        old_path = re.search(r"^--- (\S+)", chunk, re.M).group(1)
        new_path = re.search(r"^\+\+\+ (\S+)", chunk, re.M).group(1)
        target = src / new_path.split("/", 1)[1]
        lines = [""] if old_path == "/dev/null" else target.read_text().split("\n")
        out, pos = [], 0
        for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@.*\n((?:[ +\-\\].*\n?)*)", chunk, re.M):
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            body = [ln for ln in m.group(3).split("\n") if ln and not ln.startswith("\\")]
            expected = [ln[1:] for ln in body if ln[0] in " -"]
            if lines[start:start + len(expected)] != expected:
                raise SystemExit(f"build_kp: patch {name} does not apply to kp {KP_VERSION}: hunk at "
                                 f"{new_path}:{m.group(1)} does not match")
            out += lines[pos:start] + [ln[1:] for ln in body if ln[0] in " +"]
            pos = start + len(expected)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(out + lines[pos:]))


def apply_patches(src: pathlib.Path) -> None:
    """Applies the series strictly, then writes the list of names the module reports."""
    for name in series():
        apply_diff(src, (PATCH_DIR / f"{name}.patch").read_text(), name)
    listed = ", ".join(f'"{n}"' for n in reported())
    (src / "python/src/dmlgpu_patches.hpp").write_text(
        f"// Written by dmlgpu's tools/build_kp.py: the patches applied to this kp.\n"
        f"#define DMLGPU_KP_PATCHES {listed}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", help="kp-0.9.0.tar.gz to build (default: download it from PyPI)")
    ap.add_argument("--target", help="install into this folder instead of the interpreter's site-packages")
    ap.add_argument("--force", action="store_true", help="rebuild even if the patched kp is importable")
    args = ap.parse_args()
    if not args.force and not args.target and installed_patches() == reported():
        print(f"kp {KP_VERSION} with dmlgpu's {len(series())} patches is already installed")
        return 0
    with tempfile.TemporaryDirectory(prefix="dmlgpu-kp-") as tmp:
        tmp = pathlib.Path(tmp)
        sdist = pathlib.Path(args.sdist) if args.sdist else fetch_sdist(tmp)
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp / "src")
        src = next((tmp / "src").glob("kp-*"))
        apply_patches(src)
        env = dict(os.environ, **ENV)
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(src)]
        if args.target:
            cmd += ["--target", args.target, "--upgrade"]
        print(f"building kp {KP_VERSION} with dmlgpu's {len(series())} patches (about a minute)...", flush=True)
        subprocess.run(cmd, check=True, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
