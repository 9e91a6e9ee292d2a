"""What the layer-2 functions and the constructors made from shared templates look like at run time: their
names, signatures, help() and docstrings (filled, with the doctests pytest runs) are each function's own;
the typing decorators (dmlgpu/api/signatures.py) return the function itself. (What a type checker sees of them:
tests/test_typing.py.)"""
import doctest
import inspect
import pydoc

import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import constructors, functions, signatures

KEYWORDS = ["device", "mode", "out"]
GATHER_KEYWORDS = ["device", "mode", "fill_value", "out"]
SCATTER_KEYWORDS = ["device", "mode", "reduction", "include_self", "order", "out", "unique_indices"]
LAYER_2 = {
    "gather": ["data", "indices", "axis", *GATHER_KEYWORDS],
    "gather_elements": ["data", "indices", "axis", *GATHER_KEYWORDS],
    "gather_nd": ["data", "indices", "batch_dims", *GATHER_KEYWORDS],
    "scatter_nd": ["data", "indices", "updates", *SCATTER_KEYWORDS],
    "scatter_elements": ["data", "indices", "updates", "axis", *SCATTER_KEYWORDS],
}


@pytest.mark.parametrize("name", LAYER_2)
def test_layer_2_functions_keep_their_names_signatures_and_help(name):
    fn = getattr(dmlgpu, name)
    assert inspect.isfunction(fn) and fn is getattr(functions, name)
    assert (fn.__name__, fn.__qualname__, fn.__module__) == (name, name, "dmlgpu.api.functions")
    sig = inspect.signature(fn)
    assert list(sig.parameters) == LAYER_2[name]
    assert sig.parameters["mode"].default == "clamp" and sig.parameters["out"].default is None
    assert all(sig.parameters[k].kind is inspect.Parameter.KEYWORD_ONLY for k in KEYWORDS)
    doc = fn.__doc__
    assert "%(" not in doc and doc.count("    Raises\n    ------\n    TypeError\n") == 1
    assert "    Returns\n    -------\n    np.ndarray or Tensor\n" in doc
    examples = doc.split("    Examples\n    --------\n    >>> import numpy as np, dmlgpu\n")[1]
    assert f">>> dmlgpu.{name}(" in examples or f"dmlgpu.{name}(" in examples
    modes = '"clamp", "raise", "drop"' if name.startswith("scatter") else '"clamp", "raise", "fill"'
    assert f"    mode : {{{modes}}}\n" in doc and "    out : Tensor or np.ndarray, optional\n" in doc
    assert ("    fill_value : scalar, optional\n" in doc) == name.startswith("gather")
    assert name.startswith("scatter") or sig.parameters["fill_value"].kind is inspect.Parameter.KEYWORD_ONLY
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    assert f"{name}(data: 'Any', indices: 'Any', " in text and inspect.getdoc(fn).splitlines()[0] in text


def test_the_scatters_document_their_reduction_and_in_place_keywords():
    for fn in (dmlgpu.scatter_nd, dmlgpu.scatter_elements):
        for part in ("    reduction : {", "    include_self : bool", "    order : {", "    unique_indices : bool",
                     "It may be ``data`` itself", "``data``'s shape and dtype; a Tensor when an operand"):
            assert fn.__doc__.count(part) == 1, (fn.__name__, part)
    for fn in (dmlgpu.gather_elements, dmlgpu.scatter_elements):
        assert "Integers of ``data``'s rank, no larger than ``data`` outside ``axis``." in fn.__doc__


def test_typing_decorators_return_the_function_itself():
    def f(*args, **kwargs):
        return args, kwargs
    for decorate in (signatures.along_axis, signatures.batch_dims, signatures.scatter_nd,
                     signatures.scatter_elements):
        assert decorate(f) is f


def test_the_decorated_functions_still_compute():
    table = np.arange(12, dtype=np.int32).reshape(4, 3)
    np.testing.assert_array_equal(dmlgpu.gather(table, [3, 0]), np.take(table, [3, 0], axis=0))
    idx = np.array([[2, 0, 1]])
    np.testing.assert_array_equal(dmlgpu.gather_elements(table, idx, axis=0),
                                  np.take_along_axis(table, idx, axis=0))
    np.testing.assert_array_equal(dmlgpu.gather_nd(table, [[1, 2]], batch_dims=0), table[[1], [2]])
    upd = np.full((1, 3), -1, np.int32)
    expected = table.copy()
    expected[2] = -1
    np.testing.assert_array_equal(dmlgpu.scatter_nd(table, [[2]], upd), expected)
    expected = table.copy()
    expected[0, 1] = 7
    np.testing.assert_array_equal(dmlgpu.scatter_elements(table, [[1]], np.array([[7]], np.int32), 1), expected)


@pytest.mark.parametrize("base", ["empty", "zeros", "ones"])
def test_like_constructors_are_their_bases_of_a(base):
    like = getattr(dmlgpu, f"{base}_like")
    assert inspect.isfunction(like) and like.__module__ == "dmlgpu.api.constructors"
    assert like.__name__ == like.__qualname__ == f"{base}_like"
    assert list(inspect.signature(like).parameters) == ["a", "dtype", "device"]
    doc = like.__doc__
    assert doc.startswith(f"{base}() of ``a``'s shape and dtype (default), on ``a``'s device if it is a Tensor")
    assert f"        As {base}()'s." in doc and "%(" not in doc and f">>> dmlgpu.{base}_like(" in doc
    names = {t.name for t in doctest.DocTestFinder().find(constructors) if t.examples}
    assert f"dmlgpu.api.constructors.{base}_like" in names          # pytest --doctest-modules runs it
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = like(a, dtype=np.float16)
    assert t.shape == a.shape and t.dtype == np.float16 and t.device is dmlgpu.default_device()
    if base != "empty":
        np.testing.assert_array_equal(t.numpy(), getattr(np, f"{base}_like")(a, dtype=np.float16))


def test_constructor_docstrings_are_filled():
    for name in ("tensor", "asarray", "empty", "zeros", "ones", "full", "full_like"):
        doc = getattr(dmlgpu, name).__doc__
        assert "%(" not in doc and doc.count("    Returns\n    -------\n    Tensor") == 1, name
        assert "    Examples\n    --------\n    >>> import numpy as np, dmlgpu\n" in doc, name
    assert "        Not initialised (as NumPy's empty)" in dmlgpu.empty.__doc__
    assert "    TypeError, ValueError, dmlgpu.DeviceError\n        As empty()'s." in dmlgpu.zeros.__doc__
    assert "    fill_value : scalar or array_like\n    dtype" in dmlgpu.full_like.__doc__
