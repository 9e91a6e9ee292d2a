#!/usr/bin/env bash
# Quick start, step 1 (as root on Debian 12): installs what is missing, builds what is out of date
# (kp with dmlgpu's patches, the SPIR-V shaders), installs dmlgpu into .venv, and runs the demo.
# Options: --no-demo (skip the demo). Running it again rebuilds and reinstalls nothing that is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(mesa-vulkan-drivers vulkan-validationlayers vulkan-tools libvulkan-dev libfmt-dev cmake make g++
          python3-venv python3-dev)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
py="$PWD/.venv/bin/python"

# Python packages: dmlgpu's dependencies, build requirements, test and docs extras (all from pyproject.toml), and
# what building kp needs: setuptools, wheel and pybind11 2.12 or later (older ones misread NumPy 2's dtypes).
reqs=$($py -c 'import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))
print("\n".join(p["project"]["dependencies"] + p["build-system"]["requires"] + p["project"]["optional-dependencies"]["test"]
                + p["project"]["optional-dependencies"]["docs"] + ["pybind11==2.13.6", "setuptools>=64", "wheel"]))')
if [ "$(cat .venv/.dmlgpu-requirements 2>/dev/null)" != "$reqs" ]; then
  mapfile -t req_list <<<"$reqs"
  $py -m pip install -q "${req_list[@]}"
  echo "$reqs" > .venv/.dmlgpu-requirements
fi

CMAKE_PREFIX_PATH="$($py -c 'import os, pybind11; print(os.path.dirname(pybind11.__file__))')${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" \
  $py tools/build_kp.py

# dmlgpu itself, through its build backend (pyproject.toml -> CMakeLists.txt: the shaders are compiled into
# dmlgpu/shaders/ of the tree, which the tests use, and installed with the package), whenever its sources
# changed since the last install, or the installed package cannot be imported from outside the tree.
sources() {
  find dmlgpu shaders -type f -not -path 'dmlgpu/shaders/*' -not -name '*.pyc' | LC_ALL=C sort | xargs sha256sum
  sha256sum CMakeLists.txt pyproject.toml README.md tools/compile_shader.py
  ls dmlgpu/shaders 2>/dev/null || true
}
if [ "$(cat .venv/.dmlgpu-installed 2>/dev/null)" != "$(sources | sha256sum)" ] ||
   ! (cd / && $py -c 'import dmlgpu' 2>/dev/null); then
  echo "setup: building and installing dmlgpu into .venv"
  # (the shaders compile in parallel, a process per core, whichever generator CMake uses)
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" $py -m pip install -q --no-build-isolation --no-deps .
  sources | sha256sum > .venv/.dmlgpu-installed
fi

[ "${1:-}" = "--no-demo" ] || (cd / && $py -m dmlgpu demo)
