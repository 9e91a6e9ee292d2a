"""The documentation: the public API's docstrings have NumPy-style sections (Parameters, Returns, Raises,
Examples) where they apply, their examples run as doctests (pytest collects the package: pyproject's testpaths
and addopts); the README's and the site's pages (docs/, built by scripts/docs.sh) have their examples run here,
their results checked, and the API reference documents every public name."""
import enum
import inspect
import pathlib
import re

import numpy as np
import pytest

import dmlgpu
import dmlgpu.onnx

ONNX_NAMES = ("prepare", "run_model", "run_node", "is_compatible", "supports_device", "DmlgpuBackend", "DmlgpuRep",
              "UnsupportedModelError")
PUBLIC = [getattr(dmlgpu, name) for name in dmlgpu.__all__] + [getattr(dmlgpu.onnx, name) for name in ONNX_NAMES]
METHODS = [dmlgpu.Device.compile, dmlgpu.Device.buffer, dmlgpu.Device.record, dmlgpu.Device.synchronize,
           dmlgpu.Device.memory_stats, dmlgpu.Device.empty_cache, dmlgpu.Device.close, dmlgpu.Device.warmup,
           dmlgpu.Tensor.numpy, dmlgpu.Tensor.write, dmlgpu.Tensor.reshape, dmlgpu.Tensor.view, dmlgpu.Tensor.copy,
           dmlgpu.Tensor.astype, dmlgpu.Tensor.to, dmlgpu.Tensor.item, dmlgpu.Tensor.tolist, dmlgpu.Recording.host,
           dmlgpu.CompiledOperator.execute, dmlgpu.onnx.DmlgpuRep.run]


def _section(doc: str, name: str) -> bool:
    return re.search(rf"^\s*{name}\n\s*-{{{len(name)}}}$", doc, re.M) is not None


def _name(obj) -> str:
    return getattr(obj, "__qualname__", repr(obj))


@pytest.mark.parametrize("obj", PUBLIC + METHODS, ids=_name)
def test_public_docstrings_have_numpy_sections(obj):
    doc = inspect.getdoc(obj) or ""
    assert _section(doc, "Examples"), f"{_name(obj)}: no Examples section"
    examples = doc[re.search(r"^Examples\n-+$", doc, re.M).end():]
    assert ">>>" in examples or "See " in examples, f"{_name(obj)}: no example"
    if inspect.isclass(obj):
        if issubclass(obj, (BaseException, enum.Enum)):
            return
        init = obj.__init__
        params = [] if init is object.__init__ else list(inspect.signature(init).parameters)[1:]
    else:
        sig = inspect.signature(obj)
        params = [p for p in sig.parameters if p not in ("self", "cls")]
        if sig.return_annotation not in (None, "None", inspect.Signature.empty):
            assert _section(doc, "Returns"), f"{_name(obj)}: no Returns section"
    if params and not (obj is dmlgpu.onnx.DmlgpuRep):
        assert _section(doc, "Parameters"), f"{_name(obj)}: no Parameters section"


def test_layer_2_functions_name_their_raises():
    for fn in (dmlgpu.gather, dmlgpu.gather_elements, dmlgpu.gather_nd, dmlgpu.scatter_nd, dmlgpu.scatter_elements,
               dmlgpu.take, dmlgpu.take_along_axis, dmlgpu.put_along_axis, dmlgpu.tensor, dmlgpu.empty,
               dmlgpu.onnx.prepare):
        doc = inspect.getdoc(fn)
        assert _section(doc, "Raises") and "IndexError" in doc or fn in (dmlgpu.tensor, dmlgpu.empty,
                                                                         dmlgpu.onnx.prepare), fn.__name__
        assert _section(doc, "Raises"), fn.__name__


ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The pages whose Python blocks run here: the README and every Markdown page of the site (docs/porting.md is a
# doctest: tests/test_porting.py). A block is skipped only when the line before it says which test runs it.
PAGES = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md")
                               if p.name != "porting.md" and "_generated" not in p.parts)
SKIP = re.compile(r"<!-- not run by tests/test_docs.py: .*?(tests/test_\w+\.py) runs it.*?-->\n$")


def _blocks(page: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The page's Python blocks in order: those run here, and (test file, code) for those another test runs."""
    text = (ROOT / page).read_text()
    run, elsewhere = [], []
    for m in re.finditer(r"```python\n(.*?)```", text, re.S):
        before = text[:m.start()]
        skip = SKIP.search(before[before.rfind("\n", 0, len(before) - 1) + 1:])
        (elsewhere.append((skip.group(1), m.group(1))) if skip else run.append(m.group(1)))
    return run, elsewhere


def _check_readme(ns):
    table, t = ns["table"], ns["t"].numpy()
    assert np.array_equal(ns["rows"], np.take(table, [3, -1], axis=0))
    assert np.array_equal(ns["pairs"], table[[0, 999], [1, 63]])
    expected = table.copy()
    expected[[1, 3]] = 0
    np.add.at(expected, [3, 1, 3], 1.0)
    assert np.array_equal(t, expected)
    assert np.array_equal(ns["out"].numpy(), table[[3, 1, 3]])
    sums = ns["sums"].numpy()
    assert np.array_equal(sums[[0, 2, 4]], expected[[0, 2, 4]])
    assert np.allclose(sums[3], expected[3] + 2 * table[3]) and np.allclose(sums[1], expected[1] + table[1])
    assert np.array_equal(ns["filled"].numpy(), np.stack([expected[0], np.zeros(64, np.float32)]))


def _check_index(ns):
    assert np.array_equal(ns["rows"], np.take(ns["table"], [3, -1], axis=0))
    assert np.array_equal(ns["picked"].numpy(), ns["table"][[7, 7, 2]])
    assert ns["counts"].tolist() == [0, 2, 0, 1] and (ns["t"].numpy()[5] == 1).all()


def _check_semantics(ns):
    table = ns["table"]
    assert "gather: index 1000" in ns["message"]
    assert np.array_equal(ns["rows"], np.take(table, [3, -1, 7], axis=0))
    assert not table[:, 0].any() and np.array_equal(ns["picked"], table[:, :1])   # put_along_axis wrote column 0
    assert np.array_equal(ns["pairs"], table[[0, 999], [1, 63]])
    assert np.array_equal(ns["updated"][5], np.ones(64, np.float32))
    assert np.array_equal(ns["summed"][5], table[5] + 1 + 1)
    assert np.array_equal(ns["embedded"], np.stack([table[3], np.zeros(64, np.float32)]))


def _check_tensors(ns):
    assert ns["out"].shape == (2, 64) and np.array_equal(ns["rec"].host(ns["out"]), ns["t"].numpy()[[7, 9]])
    z = np.zeros((4, 64), np.float32)
    z[1:3] = 1
    z[::2, 1:3] = 7                       # __setitem__ through a strided view
    assert ns["col"].base is ns["z"] and np.array_equal(ns["z"].numpy(), z) and np.array_equal(ns["col"].numpy(), z[:, 5])
    assert ns["flags"] == [7, 7, 7, 7] and ns["moved"].dtype == np.float16 and np.array_equal(ns["moved"].numpy(), z)


def _check_in_place(ns):
    cache = ns["cache"].numpy()           # the KV-cache writes: rows 17 and 18 written, then added
    assert (cache[17:19] == 2).all() and not cache[:17].any() and not cache[19:].any()
    assert (ns["row"].numpy() == 2).all()


def _check_reductions(ns):
    from dmlgpu import reference
    table, updates = ns["table"], ns["updates"]
    expected = table.copy()
    np.add.at(expected, [5, 2, 5], updates)          # row-major order, NumPy's bits
    assert np.array_equal(ns["added"], expected)
    means = table.copy()
    means[5], means[2] = (updates[0] + updates[2]) / np.float32(2), updates[1]
    assert np.array_equal(ns["means"], means)
    assert np.allclose(ns["tree"], expected) and np.allclose(ns["fixed"], expected)
    assert np.array_equal(ns["sums"], reference.segment_reduce(table, [0, 10, 10, 1000])) and not ns["sums"][1].any()
    assert np.array_equal(ns["bags"][1], table[7])     # the mean of [7, 7], id 0 skipped
    assert np.array_equal(ns["agg"], reference.gather_scatter(table, [0, 1, 2], [1, 1, 0], dim_size=2,
                                                              weights=np.float32([0.5, 0.5, 1])))
    assert np.array_equal(ns["agg_fixed"], reference.gather_scatter(table, [0, 1, 2], [1, 1, 0], dim_size=2,
                                                                    order="fixed-point"))
    assert np.array_equal(ns["bag_sums"], reference.embedding_bag(table, [3, 0, 7, 7], [0, 1], order="fixed-point"))


def _check_index_modes(ns):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.array_equal(ns["clamped"].numpy(), table[[1, 3]]) and np.array_equal(ns["wrapped"].numpy(), table[[1, 3]])
    assert np.array_equal(ns["filled"].numpy(), [table[1], [-1, -1, -1]])
    dropped = table.copy()
    dropped[1] = 0
    assert np.array_equal(ns["dropped"].numpy(), dropped)
    assert ns["message"].startswith("take: index 7 at indices position (1,)")
    assert (ns["target"].numpy() == 1).all()


def _check_interop(ns):
    assert np.array_equal(ns["rows"], ns["table"][[5, 17]])
    assert np.array_equal(ns["view"], np.arange(6, dtype=np.float32))
    assert ns["back"].numpy().tolist() == [0, 1, 2, 3]


def _check_onnx(ns):
    assert ns["hidden"].shape == (1, 16) and isinstance(ns["hidden"], np.ndarray)


def _check_layer1(ns):
    assert ns["bufs"]["output"].read().view(np.float32).tolist() == [0, 1, 2, 3, 2, 3, 4, 5]


def _check_devices(ns):
    assert ns["picked"].numpy().tolist() == [7, 0] and ns["stats"]["allocated_bytes"] > 0


CHECKS = {"README.md": _check_readme, "docs/index.md": _check_index, "docs/guide/semantics.md": _check_semantics,
          "docs/guide/tensors.md": _check_tensors, "docs/guide/in-place.md": _check_in_place,
          "docs/guide/reductions.md": _check_reductions, "docs/guide/index-modes.md": _check_index_modes,
          "docs/guide/interop.md": _check_interop, "docs/guide/onnx.md": _check_onnx,
          "docs/guide/layer1.md": _check_layer1, "docs/guide/devices.md": _check_devices}


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)[0]])
def test_page_examples_run_and_say_true(page, monkeypatch):
    """Each page's Python blocks, run in order in one namespace from the repository's root (the ONNX page reads
    tests/models/embedding.onnx), their results checked against NumPy."""
    monkeypatch.chdir(ROOT)
    ns: dict = {}
    exec(compile("\n".join(_blocks(page)[0]), page, "exec"), ns)
    CHECKS[page](ns)


def test_every_page_with_examples_is_checked_and_skips_name_their_test():
    run = {p for p in PAGES if _blocks(p)[0]}
    assert run == set(CHECKS), "a page's examples run without checks (add it to CHECKS), or CHECKS names no page"
    assert {"README.md", "docs/guide/tensors.md", "docs/guide/semantics.md"} <= run
    for page in PAGES:
        for test_file, code in _blocks(page)[1]:
            assert page in (ROOT / test_file).read_text(), f"{page}: {test_file} does not run the skipped block"


def test_api_reference_documents_every_public_name():
    """docs/api/ documents each name of dmlgpu.__all__ and of the ONNX backend, by its public name."""
    text = "\n".join(p.read_text() for p in (DOCS / "api").glob("*.md"))
    documented = set(re.findall(r"^\.\. auto(?:function|class|exception):: (dmlgpu[\w.]*)$", text, re.M))
    public = {f"dmlgpu.{n}" for n in dmlgpu.__all__} | {f"dmlgpu.onnx.{n}" for n in ONNX_NAMES}
    assert public - documented == set()
    assert documented - public == set(), "the API reference documents names that are not public"


def test_environment_variables_are_all_in_the_devices_page():
    """Every DMLGPU_ variable the package, kp's patches or the test setup read has a row in the table of
    docs/guide/devices.md, and every row names a variable something reads."""
    sources = [*(ROOT / "dmlgpu").rglob("*.py"), *(ROOT / "tools" / "kp-patches").glob("*.patch"),
               *(ROOT / "tests").glob("*.py")]
    read = set()
    for f in sources:
        read |= set(re.findall(r"""(?:environ\.get\(|environ\[|getenv\()["'](DMLGPU_\w+)["']""", f.read_text()))
    page = (DOCS / "guide" / "devices.md").read_text()
    table = page[page.index("## Environment variables"):]
    rows = set(re.findall(r"`(DMLGPU_\w+)`", "\n".join(l for l in table.splitlines() if l.startswith("| `DMLGPU_"))))
    assert len(read) >= 12 and read - rows == set() and rows - read == set()


def test_readme_is_short_and_keeps_the_quick_start():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    quick = re.search(r"## Quick start\n.*?```sh\n(.*?)```", text, re.S).group(1)
    assert [line.split("#")[0].strip() for line in quick.splitlines()] == ["bash scripts/setup.sh", "bash scripts/test.sh"]
    assert "bash scripts/docs.sh" in text and "build/docs/html/index.html" in text
    for link in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", text):
        assert (ROOT / link).exists(), link
