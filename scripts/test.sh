#!/usr/bin/env bash
# Quick start, step 2: brings the build up to date (as scripts/setup.sh, without the demo), type-checks the
# package (mypy, configured in pyproject.toml) and runs the whole test suite, the docstrings' examples
# included (doctests), on the default Vulkan device (lavapipe without a GPU), with the Khronos validation
# layer (synchronization validation included) on: any message it reports fails the run
# (DMLGPU_VALIDATION=0 turns it off). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-demo
.venv/bin/python -m mypy
export DMLGPU_VALIDATION="${DMLGPU_VALIDATION:-1}"
exec .venv/bin/python -m pytest -q "$@"
