"""Sphinx configuration: the documentation site (``bash scripts/docs.sh`` builds it into build/docs/html, with
warnings as errors).

The pages are Markdown (MyST); the API reference is generated from the docstrings (autodoc, their NumPy-style
sections read by napoleon), each object documented under its public name (``dmlgpu.take``, ``dmlgpu.Tensor``),
never under the module that happens to define it. The benchmarks page shows a run of ``python -m dmlgpu bench``:
the folder ``DMLGPU_DOCS_BENCH`` names (a saved run's --out: bench.json, bench.md, bench.png), else a
``--quick`` run made here when the build starts, on the default device."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))            # the tree's dmlgpu, as the tests use it
os.environ.setdefault("DMLGPU_TREE_ONLY", "1")

project = "dmlgpu"
author = "dmlgpu's authors"
copyright = "dmlgpu's authors"
release = version = "0.1.0"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]
myst_heading_anchors = 3                 # [text](page.md#a-heading) links, checked by the build
suppress_warnings = ["myst.header"]      # bench/RESULTS.md's sections start at any level

autodoc_member_order = "bysource"
autodoc_typehints = "none"               # the docstrings' Parameters give the types (and overloads would repeat them)
autodoc_preserve_defaults = True
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = "dmlgpu"
html_theme_options = {"description": "DirectML's gather/scatter operators on any Vulkan device",
                      "fixed_sidebar": True, "page_width": "1200px", "sidebar_width": "230px"}

# Docstring text that docutils misreads, fixed here until the docstring itself is (each entry: the object's
# public name, the text, its replacement); an entry whose text is no longer there does nothing.
GENERATED = Path(__file__).resolve().parent / "_generated" / "bench"


def _bench(app):
    """The benchmarks page's run: DMLGPU_DOCS_BENCH's folder copied, else python -m dmlgpu bench --quick."""
    if GENERATED.exists():
        shutil.rmtree(GENERATED)
    saved = os.environ.get("DMLGPU_DOCS_BENCH")
    if saved:
        shutil.copytree(saved, GENERATED)
        if not (GENERATED / "bench.png").exists():       # a run made without matplotlib: plot it now
            subprocess.run([sys.executable, "-m", "dmlgpu", "bench", "--render", str(GENERATED / "bench.json"),
                            "--out", str(GENERATED)], check=True, stdout=subprocess.DEVNULL)
        return
    env = dict(os.environ, DMLGPU_VALIDATION="0")       # a measurement: without the validation layer's cost
    subprocess.run([sys.executable, "-m", "dmlgpu", "bench", "--quick", "--repeats", "20", "--quiet", "--out", str(GENERATED.relative_to(ROOT))],
                   check=True, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    for name in ("bench.json", "bench.md", "bench.png"):
        if not (GENERATED / name).exists():
            raise RuntimeError(f"python -m dmlgpu bench --quick wrote no {name} (is matplotlib installed?)")


def setup(app):
    app.connect("builder-inited", _bench)
