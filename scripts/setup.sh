#!/usr/bin/env bash
# Quick start, step 1 (as root on Debian 12): installs what is missing, builds what is out of date
# (kp with dmlgpu's patches, the SPIR-V shaders), installs dmlgpu into .venv, and runs the demo.
# Options: --no-demo (skip the demo). Running it again rebuilds nothing that is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mesa-vulkan-drivers vulkan-validationlayers vulkan-tools glslang-tools libvulkan-dev libfmt-dev
          pybind11-dev cmake make g++ python3-venv python3-dev)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
$py -c 'import numpy, pytest, hypothesis, setuptools, wheel' 2>/dev/null ||
  $py -m pip install -q "numpy<2" pytest hypothesis "setuptools>=64" wheel
$py tools/build_kp.py
cmake -S . -B build -DPython3_EXECUTABLE="$PWD/$py" >/dev/null
cmake --build build
$py -c 'import dmlgpu, sys; sys.exit(0 if dmlgpu.__file__.startswith(sys.argv[1]) else 1)' "$PWD/dmlgpu" 2>/dev/null ||
  $py -m pip install -q --no-deps --no-build-isolation -e .

[ "${1:-}" = "--no-demo" ] || $py -m dmlgpu demo
