"""The package's import graph has no circle: every import between dmlgpu's modules (at module level and inside
functions; annotations-only imports under ``if TYPE_CHECKING:`` excepted) points one way, so that each module
can be read and imported with what it depends on alone (functions -> plans -> runtime -> kp)."""
import ast
import pathlib
import subprocess
import sys
import textwrap

import dmlgpu

ROOT = pathlib.Path(dmlgpu.__file__).resolve().parent.parent


def _modules() -> dict:
    mods = {}
    for f in (ROOT / "dmlgpu").rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    return mods


def _imports(tree: ast.AST):
    """Import nodes, skipping ``if TYPE_CHECKING:`` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _imports(node)


def _graph() -> dict:
    mods, graph = _modules(), {}
    for name, f in mods.items():
        base = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in _imports(ast.parse(f.read_text())):
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


def test_no_import_circle():
    graph, done, stack, circles = _graph(), set(), [], []

    def visit(n):
        if n in stack:
            circles.append(" -> ".join(stack[stack.index(n):] + [n]))
            return
        if n in done:
            return
        stack.append(n)
        for d in sorted(graph[n]):
            visit(d)
        stack.pop()
        done.add(n)

    for n in sorted(graph):
        visit(n)
    assert not circles, circles


def test_the_runtime_knows_nothing_of_the_operators():
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith("dmlgpu.runtime"):
            outside = {d for d in deps if not d.startswith("dmlgpu.runtime")} - {
                "dmlgpu.errors", "dmlgpu.kernels.table", "dmlgpu.kernels.spirv", "dmlgpu.runtime.validation"}
            assert not outside, f"{name} imports {outside}"


def test_each_module_imports_alone():
    """Each module imports in a fresh interpreter state (every dmlgpu module forgotten first)."""
    names = sorted(m for m in _modules() if ".bench" not in m and m != "dmlgpu.__main__")
    code = textwrap.dedent(f"""
        import importlib, sys
        for name in {names!r}:
            for m in [m for m in sys.modules if m == "dmlgpu" or m.startswith("dmlgpu.")]:
                del sys.modules[m]
            importlib.import_module(name)
        """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def test_the_planning_module_knows_neither_layer():
    """ops.py (operator -> plan) is what both layers call: it imports neither of them, nor what is built on them
    (the layer-2 driver, the ONNX backend), so that either layer can import it."""
    graph = _graph()
    layers = {"dmlgpu.layer1.descriptors", "dmlgpu.layer1.rules", "dmlgpu.layer1.compiled", "dmlgpu.api.functions", "dmlgpu.api.driver",
              "dmlgpu.api.numpy_api", "dmlgpu.onnx", "dmlgpu.onnx.operations", "dmlgpu.onnx.graph", "dmlgpu.api.call_templates"}
    seen, todo = set(), ["dmlgpu.plans.ops"]
    while todo:                       # everything ops.py imports, directly or not
        for d in graph[todo.pop()] - seen:
            seen.add(d)
            todo.append(d)
    assert not seen & layers, seen & layers


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
    assert {"_run", "_allocator", "_batches", "_local", "_mgr"} <= private   # the check sees the runtime's names
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
