"""The public API's docstrings have NumPy-style sections (Parameters, Returns, Raises, Examples) where they
apply; their examples run as doctests (pytest collects the package: pyproject's testpaths and addopts)."""
import enum
import inspect
import re

import pytest

import dmlgpu
import dmlgpu.onnx

PUBLIC = [getattr(dmlgpu, name) for name in dmlgpu.__all__] + \
    [getattr(dmlgpu.onnx, name) for name in ("prepare", "run_model", "run_node", "is_compatible", "supports_device",
                                              "DmlgpuBackend", "DmlgpuRep", "UnsupportedModelError")]
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


def test_readme_usage_runs_and_says_true():
    """README's "Using it" code blocks, run in order (the ONNX block on tests/models/embedding.onnx), with their
    results checked against NumPy."""
    import pathlib

    import numpy as np

    root = pathlib.Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    using = readme[readme.index("## Using it"):readme.index("### Command line")]
    code = "\n".join(re.findall(r"```python\n(.*?)```", using, re.S))
    code = code.replace('dmlgpu.gather(table, [1000], mode="raise")',
                        'raised = pytest.raises(IndexError, dmlgpu.gather, table, [1000], mode="raise")')
    code = code.replace('"model.onnx"', repr(str(root / "tests" / "models" / "embedding.onnx")))
    ns = {"pytest": pytest}
    exec(compile(code, "README.md", "exec"), ns)
    table = ns["table"]
    assert "gather: index 1000" in str(ns["raised"].value)
    assert np.array_equal(ns["pairs"], table[[0, 999], [1, 63]])
    assert np.array_equal(ns["updated"][5], np.ones(64, np.float32))
    assert ns["out"].shape == (2, 64) and np.array_equal(ns["rec"].host(ns["out"]), ns["t"].numpy()[[7, 9]])
    z = np.zeros((4, 64), np.float32)
    z[1:3] = 1
    z[::2, 1:3] = 7                       # README's __setitem__ through a strided view
    assert ns["col"].base is ns["z"] and np.array_equal(ns["z"].numpy(), z) and np.array_equal(ns["col"].numpy(), z[:, 5])
    assert ns["flags"] == [7, 7, 7, 7] and ns["moved"].dtype == np.float16 and np.array_equal(ns["moved"].numpy(), z)
    assert ns["hidden"].shape == (1, 16) and isinstance(ns["hidden"], np.ndarray)
    cache = ns["cache"].numpy()           # README's in-place KV-cache writes: rows 17 and 18 written, then added
    assert (cache[17:19] == 2).all() and not cache[:17].any() and not cache[19:].any()
    assert (ns["row"].numpy() == 2).all()
    assert ns["bufs"]["output"].read().view(np.float32).tolist() == [0, 1, 2, 3, 2, 3, 4, 5]
    from dmlgpu import reference          # README's one-pass reductions
    assert np.array_equal(ns["sums"], reference.segment_reduce(table, [0, 10, 10, 1000])) and not ns["sums"][1].any()
    assert np.array_equal(ns["bags"][1], table[7])     # the mean of [7, 7], id 0 skipped
    assert np.array_equal(ns["agg"], reference.gather_scatter(table, [0, 1, 2], [1, 1, 0], dim_size=2,
                                                              weights=np.float32([0.5, 0.5, 1])))
