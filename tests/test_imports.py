"""The package's layers, as ``ls dmlgpu`` shows them, and its import graph: every import between dmlgpu's modules,
at module level, inside functions and under ``if TYPE_CHECKING:`` (an annotation's import is a dependency too).

- Each folder imports only what its ``__init__`` docstring says it may (``FOLDERS`` below is that rule as data; a
  test checks that the two agree): kernels <- runtime <- plans <- layer1 <- api <- onnx, with errors under all.
- No circle at all, counting the type-checking imports too (the runtime's Device is composed of parts that know
  nothing of it: issue 52).
- Each module imports alone; no module outside dmlgpu/runtime/ uses a private runtime name."""
import ast
import pathlib
import re
import subprocess
import sys
import textwrap

import dmlgpu

ROOT = pathlib.Path(dmlgpu.__file__).resolve().parent.parent

# folder -> the folders (and top-level modules) its modules may import; the same as its __init__'s "May import:"
FOLDERS = {
    "kernels": set(),
    "runtime": {"errors", "kernels"},
    "plans": {"errors", "kernels", "runtime"},
    "layer1": {"errors", "kernels", "runtime", "plans"},
    "api": {"errors", "kernels", "runtime", "plans", "layer1"},
    "onnx": {"errors", "kernels", "runtime", "plans", "api"},
}
# the top-level modules: what they may import (None: anything; bench/ is the harness over everything)
TOP = {"__init__": None, "__main__": None, "demo": None, "errors": set(), "reference": {"plans"}}

def _modules() -> dict:
    mods = {}
    for f in (ROOT / "dmlgpu").rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    return mods


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, (ast.Name, ast.Attribute)) and \
        ast.unparse(node.test).split(".")[-1] == "TYPE_CHECKING"


def _imports(tree: ast.AST, type_checking: bool):
    """Import nodes; with ``type_checking=False``, those under ``if TYPE_CHECKING:`` skipped."""
    for node in ast.iter_child_nodes(tree):
        if not type_checking and _is_type_checking(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(node, type_checking)


def _graph(type_checking: bool = True) -> dict:
    mods, graph = _modules(), {}
    for name, f in mods.items():
        base = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in _imports(ast.parse(f.read_text()), type_checking):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods)
                continue
            if node.level:
                parts = base.split(".")
                target = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
            if len(subs) == len(node.names):
                deps.update(subs)       # from package import submodule: the submodule alone
            elif target in mods:
                deps.add(target)
        graph[name] = deps - {name}
    return graph


def _unit(name: str) -> str:
    """The folder a module belongs to, or its own name for a top-level module (the package: "__init__")."""
    parts = name.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _circles(graph: dict) -> list[set]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_ls_shows_the_layers():
    """dmlgpu/ holds the layer folders and a few top-level modules: a new module goes into the folder of its layer."""
    top = {p.stem for p in (ROOT / "dmlgpu").glob("*.py")}
    folders = {p.name for p in (ROOT / "dmlgpu").iterdir() if (p / "__init__.py").is_file()}
    assert top == set(TOP), top ^ set(TOP)
    assert folders == set(FOLDERS) | {"bench"}, folders ^ (set(FOLDERS) | {"bench"})


def test_each_folder_says_what_it_may_import():
    """Each folder's __init__ docstring opens with one paragraph saying what it owns and ending "May import: ..."
    with FOLDERS' rule (the new folders' docstrings are that one paragraph)."""
    for folder, allowed in FOLDERS.items():
        doc = ast.get_docstring(ast.parse((ROOT / "dmlgpu" / folder / "__init__.py").read_text())) or ""
        first = doc.split("\n\n")[0]
        m = re.search(r"May import: ([^.(]*)", first)
        assert m, f"dmlgpu/{folder}/__init__.py: its first paragraph names no 'May import: ...'"
        said = set() if m.group(1).strip().startswith("nothing") else {w.strip() for w in m.group(1).split(",")}
        assert said == allowed, f"dmlgpu/{folder}: the docstring says {sorted(said)}, FOLDERS {sorted(allowed)}"
        if folder != "onnx":                # (dmlgpu.onnx is the backend itself: its user documentation follows)
            assert "\n\n" not in doc.strip(), f"dmlgpu/{folder}/__init__.py: more than one paragraph"


def test_each_folder_imports_only_what_it_may():
    """Counting imports inside functions and under TYPE_CHECKING: the layers point one way."""
    rules = {**FOLDERS, **TOP}
    bad = []
    for name, deps in _graph().items():
        unit = _unit(name)
        allowed = rules.get(unit)
        if allowed is None:
            continue
        bad += [f"{name} imports {d}" for d in sorted(deps) if _unit(d) != unit and _unit(d) not in allowed]
    assert not bad, "imports against the layers (tests/test_imports.py FOLDERS, the folders' docstrings):\n" + \
        "\n".join(bad)


def test_no_import_circle():
    """Without the type-checking imports there is no circle at all: each module imports what it depends on first."""
    circles = _circles(_graph(type_checking=False))
    assert not circles, [sorted(c) for c in circles]


def test_no_circle_counting_type_checking_imports():
    """Counting annotations' imports too, there is no circle at all (a module annotating with a type of a module
    that imports it, such as a runtime part with the Device that composes it, or the runtime with the Tensor,
    would make one): a part receives what it needs (the narrow part, or a Protocol of it), not its owner."""
    circles = _circles(_graph())
    assert not circles, [sorted(c) for c in circles]


def test_each_module_imports_alone():
    """Each module imports in a fresh interpreter state (every dmlgpu module forgotten first). Importing any of
    them runs the package's __init__ first, which imports most of them, in its own order: one fresh import of the
    package covers those; each module it does not import is then imported fresh on its own."""
    names = sorted(m for m in _modules() if ".bench" not in m and m != "dmlgpu.__main__")
    code = textwrap.dedent(f"""
        import importlib, sys
        def fresh(name):
            for m in [m for m in sys.modules if m == "dmlgpu" or m.startswith("dmlgpu.")]:
                del sys.modules[m]
            importlib.import_module(name)
        fresh("dmlgpu")
        by_package = {{m for m in sys.modules if m == "dmlgpu" or m.startswith("dmlgpu.")}}
        alone = [name for name in {names!r} if name not in by_package]
        for name in alone:
            fresh(name)
        print(len(by_package), len(alone))
        """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    by_package, alone = map(int, r.stdout.split())
    assert by_package > 1 and by_package + alone >= len(names)


def _private_names(files) -> set:
    """Single-underscore names that classes in ``files`` define: methods, attributes assigned on ``self`` (or any
    object) and class-level names."""
    names = set()
    for f in files:
        for cls in (n for n in ast.walk(ast.parse(f.read_text())) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names.add(node.target.id)
                elif isinstance(node, ast.Assign):
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_only_the_runtime_uses_its_private_names():
    """Modules outside dmlgpu/runtime/ reach the runtime through its public contract (Device.launch() and the
    public methods of Device, Buffer and Recording): no attribute they use is a private name that only the
    runtime's classes define, and they import no private name from it."""
    files = list((ROOT / "dmlgpu").rglob("*.py"))
    runtime = [f for f in files if "runtime" in f.relative_to(ROOT).parts]
    others = [f for f in files if f not in runtime]
    private = _private_names(runtime) - _private_names(others)
    assert {"_run", "_pipelines", "_max_groups", "_mgr", "_checked_read"} <= private   # the check sees them
    uses = []
    for f in others:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                uses.append(f"{f.relative_to(ROOT)}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and "runtime" in (node.module or ""):
                uses += [f"{f.relative_to(ROOT)}:{node.lineno} import {a.name}" for a in node.names
                         if a.name.startswith("_")]
    assert not uses, "private runtime names used outside dmlgpu/runtime/ (add to its public contract):\n" + \
        "\n".join(uses)
