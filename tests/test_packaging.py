"""The installed dmlgpu (what ``import dmlgpu`` finds outside the source tree: scripts/setup.sh installs it with
``pip install .``) is the tree's: the same modules, py.typed and the same compiled shaders. The rest of the
suite runs against the tree (``python -m pytest`` from the repository root puts it first on sys.path)."""
import os
import pathlib
import subprocess
import sys

import pytest

import dmlgpu

TREE = pathlib.Path(dmlgpu.__file__).parent
pytestmark = pytest.mark.skipif(os.environ.get("DMLGPU_TREE_ONLY") == "1",
                                reason="DMLGPU_TREE_ONLY=1: the tree is used without an install (tools/device_env.sh)")


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_installed_package_is_the_tree():
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import dmlgpu, importlib.metadata as m; print(dmlgpu.__file__); print(m.version('dmlgpu'))"
    r = subprocess.run([sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"dmlgpu is not installed in {sys.executable} (run scripts/setup.sh):\n{r.stderr}"
    path, version = r.stdout.split()
    installed = pathlib.Path(path).parent
    assert installed != TREE and version == dmlgpu.__version__
    tree, inst = _files(TREE), _files(installed)
    assert "py.typed" in inst and any(name.startswith("shaders/") and name.endswith(".spv") for name in inst)
    assert sorted(inst) == sorted(tree), "the installed package is out of date: run scripts/setup.sh"
    stale = [name for name in tree if tree[name] != inst[name]]
    assert not stale, f"installed files differ from the tree: {stale} (run scripts/setup.sh)"
