#!/usr/bin/env bash
# Builds the documentation site (Sphinx, docs/conf.py) into build/docs/html, with warnings as errors: open
# build/docs/html/index.html. scripts/test.sh runs it beside the suite; run it alone after scripts/setup.sh
# (which installs the docs extra of pyproject.toml). The benchmarks page's plots come from a run of
# python -m dmlgpu bench --quick --repeats 20 made here, on the default device (about 10 s on lavapipe), or from a saved run:
# DMLGPU_DOCS_BENCH=dmlgpu-bench bash scripts/docs.sh (the folder a run's --out wrote).
# Extra arguments go to sphinx-build.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
.venv/bin/python -m sphinx -W --keep-going -q -b html "$@" docs build/docs/html
echo "docs: build/docs/html/index.html ($(( $(date +%s) - start )) s)"
