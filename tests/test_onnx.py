"""dmlgpu.onnx: ONNX's own backend node tests for Gather, GatherElements, GatherND, ScatterND, ScatterElements,
Scatter and TensorScatter, and for the plumbing that runs on the host (Constant, Identity, Shape, Reshape,
Squeeze, Unsqueeze, Flatten) (onnx.backend.test.BackendTest, device CPU), a randomized differential test
against onnx.reference on random shapes, dtypes and attributes, and refusals. Exported models:
tests/test_onnx_models.py."""
import re
import warnings

import numpy as np
import onnx
import onnx.backend.test
import pytest
from hypothesis import given, strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import dmlgpu.onnx as backend

from strategies import random_data, same_bytes, seeds, shapes

NODE_TESTS = (r"^test_(gather|gather_elements|gathernd|scatter|scatter_elements|scatternd|tensorscatter|"
              r"reshape|squeeze|unsqueeze|flatten|shape|constant|identity)(_.+)?_cpu$")
NOT_RUN = r"^test_(constant_pad.*|constantofshape.*|identity_(sequence|opt))_cpu$"   # other operators

with warnings.catch_warnings():     # onnx 1.23 computes every node test's data on loading, noisily
    warnings.simplefilter("ignore")
    backend_test = onnx.backend.test.BackendTest(backend.DmlgpuBackend, __name__)
backend_test.include(NODE_TESTS)


def _included(cases: dict) -> dict:
    """The test case classes with only the included tests (BackendTest keeps the other 4000 as skipped ones;
    the _cuda twins of ours are left out with them: the backend runs on device CPU only)."""
    for case in cases.values():
        for name in [n for n in vars(case) if n.startswith("test_") and (not re.search(NODE_TESTS, n)
                                                                          or re.search(NOT_RUN, n))]:
            delattr(case, name)
    return {k: case for k, case in cases.items() if any(n.startswith("test_") for n in vars(case))}


NODE_CASES = _included(backend_test.test_cases)
globals().update(NODE_CASES)


def test_node_tests_cover_every_operator():
    """The include pattern found ONNX's node tests of all seven operators and of the plumbing (and no others)."""
    names = [name for case in NODE_CASES.values() for name in vars(case) if name.startswith("test_")]
    ops = {op for op in ("gather_", "gather_elements", "gathernd", "scatter_with", "scatter_without",
                         "scatter_elements", "scatternd", "tensorscatter", "reshape", "squeeze", "unsqueeze",
                         "flatten", "shape", "constant", "identity") if any(n.startswith("test_" + op) for n in names)}
    assert len(ops) == 15, ops
    assert len(names) >= 70 and all(n.endswith("_cpu") for n in names)


# ---------------------------------------------------------------- differential test against onnx.reference

ONNX_TYPES = {np.dtype(k): v for k, v in [
    (np.float32, TensorProto.FLOAT), (np.float16, TensorProto.FLOAT16), (np.float64, TensorProto.DOUBLE),
    (np.int8, TensorProto.INT8), (np.int16, TensorProto.INT16), (np.int32, TensorProto.INT32),
    (np.int64, TensorProto.INT64), (np.uint8, TensorProto.UINT8), (np.uint16, TensorProto.UINT16),
    (np.uint32, TensorProto.UINT32), (np.uint64, TensorProto.UINT64), (np.bool_, TensorProto.BOOL)]}
OPSET = {"Scatter": 10, "TensorScatter": 24}   # else 18 (ScatterND/ScatterElements min and max)


def _model(op: str, inputs: dict, attrs: dict, out_dtype, out_shape) -> onnx.ModelProto:
    names = list(inputs)
    node = helper.make_node(op, [n if inputs[n] is not None else "" for n in names], ["out"], **attrs)
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(n, ONNX_TYPES[a.dtype], a.shape) for n, a in inputs.items() if a is not None],
        [helper.make_tensor_value_info("out", ONNX_TYPES[np.dtype(out_dtype)], out_shape)])
    opset = OPSET.get(op, 18)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10 if opset >= 24 else 8)


def _values(rng, shape, dtype, reduction):
    """Random bytes (special floats included) to move; finite, moderate numbers to reduce (ONNX's reference
    combines with Python's min and max, which do not propagate NaN)."""
    if reduction == "none":
        return random_data(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 4).astype(dtype)
    return rng.integers(0, 7, size=shape).astype(dtype)


def _index_values(rng, shape, n, bad):
    vals = rng.integers(-n, n, size=shape) if n else np.zeros(shape, np.int64)
    if bad and vals.size:
        vals.reshape(-1)[rng.integers(vals.size)] = rng.choice([n, -n - 1, n + 5])
    return vals


@st.composite
def onnx_cases(draw):
    """(op, inputs in order, attributes, the output dtype) with random shapes, dtypes and attributes."""
    op = draw(st.sampled_from(["Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Scatter",
                               "TensorScatter"]), label="op")
    shape = draw(shapes(max_rank=4, max_elems=256, max_side=6), label="shape")
    rank = len(shape)
    reduction = "none"
    if op in ("ScatterND", "ScatterElements"):
        reduction = draw(st.sampled_from(["none", "add", "mul", "min", "max"]), label="reduction")
    dtypes = [d for d in ONNX_TYPES if reduction == "none" or d.kind != "b"]
    dtype = draw(st.sampled_from(dtypes), label="dtype")
    idx_dtype = draw(st.sampled_from([np.int32, np.int64]), label="idx_dtype")
    rng = np.random.default_rng(draw(seeds, label="seed"))
    bad = draw(st.integers(0, 9), label="bad") == 0
    data = _values(rng, shape, dtype, reduction)
    if op == "Gather":
        axis = draw(st.integers(-rank, rank - 1), label="axis")
        idx_shape = draw(shapes(min_rank=0, max_rank=2, max_elems=16, max_side=4), label="idx_shape")
        idx = _index_values(rng, idx_shape, shape[axis], bad)
        return op, {"data": data, "indices": idx.astype(idx_dtype)}, {"axis": axis}, dtype
    if op in ("GatherElements", "ScatterElements", "Scatter"):
        axis = draw(st.integers(-rank, rank - 1), label="axis")
        a = axis % rank
        if op == "GatherElements":
            # onnx.reference's GatherElements wants indices of data's shape outside the axis, misreads a negative
            # axis, and wraps out-of-range indices (numpy.choose) where ONNX says error: none of those here
            # (ONNX's node tests and tests/test_numpy_api.py check them)
            idx_shape = tuple(draw(st.integers(1, n + 2)) if d == a else n for d, n in enumerate(shape))
            idx = _index_values(rng, idx_shape, shape[a], False).astype(idx_dtype)
            return op, {"data": data, "indices": idx}, {"axis": a}, dtype
        idx_shape = tuple(draw(st.integers(1, n + 2)) if d == a else draw(st.integers(1, n))
                          for d, n in enumerate(shape))
        idx = _index_values(rng, idx_shape, shape[a], bad).astype(idx_dtype)
        attrs = {"axis": axis} | ({"reduction": reduction} if reduction != "none" else {})
        return op, {"data": data, "indices": idx, "updates": _values(rng, idx_shape, dtype, reduction)}, attrs, dtype
    if op in ("GatherND", "ScatterND"):
        b = draw(st.integers(0, rank - 1), label="batch_dims") if op == "GatherND" else 0
        k = draw(st.integers(1, rank - b), label="k")
        lead = draw(shapes(min_rank=0, max_rank=2, max_elems=12, max_side=4), label="lead")
        idx_shape = tuple(shape[:b]) + tuple(lead) + (k,)
        idx = _index_values(rng, idx_shape, 1, False)
        for j in range(k):
            idx[..., j] = _index_values(rng, idx_shape[:-1], shape[b + j], bad)
        idx = idx.astype(idx_dtype)
        if op == "GatherND":
            return op, {"data": data, "indices": idx}, {"batch_dims": b}, dtype
        upd = _values(rng, idx_shape[:-1] + tuple(shape[k:]), dtype, reduction)
        attrs = {"reduction": reduction} if reduction != "none" else {}
        return op, {"data": data, "indices": idx, "updates": upd}, attrs, dtype
    # TensorScatter: a (batch, ..., max_sequence_length, ...) cache, axis > 0
    if rank < 2:
        shape, rank = shape + (draw(st.integers(1, 5), label="seq"),), rank + 1
        data = _values(rng, shape, dtype, reduction)
    axis = draw(st.integers(1, rank - 1), label="axis")
    mode = draw(st.sampled_from(["linear", "circular"]), label="mode")
    seq = draw(st.integers(1, shape[axis]), label="seq_len")
    upd = random_data(rng, shape[:axis] + (seq,) + shape[axis + 1:], dtype)
    high = shape[axis] * 2 if mode == "circular" else shape[axis] - seq + 1 + bad
    starts = rng.integers(0, high, size=shape[0]).astype(np.int64)
    with_indices = draw(st.booleans(), label="write_indices")
    axis_attr = axis - rank if draw(st.booleans(), label="negative_axis") else axis
    return op, {"past_cache": data, "update": upd, "write_indices": starts if with_indices else None}, \
        {"axis": axis_attr, "mode": mode}, dtype


@given(onnx_cases())
def test_fuzz_matches_onnx_reference(device, case):
    op, inputs, attrs, dtype = case
    feeds = {n: a for n, a in inputs.items() if a is not None}
    ref_op = "ScatterElements" if op == "Scatter" else op    # onnx.reference has no Scatter, its alias
    try:   # the reference checks nothing of the model: its output's shape may be left for later
        expected = np.asarray(ReferenceEvaluator(_model(ref_op, inputs, attrs, dtype, [])).run(None, feeds)[0])
    except IndexError:
        with pytest.raises(IndexError):
            backend.prepare(_model(op, inputs, attrs, dtype, []), dml_device=device).run(feeds)
        return
    got = backend.prepare(_model(op, inputs, attrs, dtype, expected.shape), dml_device=device).run(feeds)
    same_bytes(got[0], expected)
    same_bytes(got["out"], expected)


# ---------------------------------------------------------------- graphs, refusals, devices

def test_a_graph_of_several_nodes_with_an_initializer(device):
    table = np.arange(20, dtype=np.float32).reshape(5, 4)
    rows = helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0)
    put = helper.make_node("ScatterElements", ["rows", "cols", "vals"], ["out"], axis=1, reduction="add")
    graph = helper.make_graph(
        [rows, put], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("vals", TensorProto.FLOAT, [2, 1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 4])],
        initializer=[onnx.numpy_helper.from_array(table, "table"),
                     onnx.numpy_helper.from_array(np.array([[3], [0]], np.int64), "cols")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert backend.is_compatible(model)
    rep = backend.prepare(model, dml_device=device)
    out = rep.run({"ids": np.array([4, -5]), "vals": np.array([[100], [1000]], np.float32)})
    assert out[0].tolist() == [[16, 17, 18, 119], [1000, 1, 2, 3]]
    assert rep.run([np.array([0, 0]), np.zeros((2, 1), np.float32)])["out"].tolist() == [[0, 1, 2, 3]] * 2


def test_the_module_shows_its_public_names_only():
    """dir(dmlgpu.onnx) (completion) and ``import *`` give ``__all__`` (and the submodules), not the module's own
    imports (np, Any, annotations, ...); every name in ``__all__`` exists."""
    assert all(hasattr(backend, n) for n in backend.__all__)
    public = {n for n in dir(backend) if not n.startswith("_")}
    assert public == set(backend.__all__) | {"graph", "operations"}
    assert not {"np", "Any", "annotations", "Sequence", "onnx"} & public
    scope: dict = {}
    exec("from dmlgpu.onnx import *", scope)
    assert set(scope) - {"__builtins__"} == set(backend.__all__)


def test_other_operators_are_refused_by_name():
    node = helper.make_node("Add", ["a", "b"], ["c"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "ab"],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert not backend.is_compatible(model)
    with pytest.raises(backend.UnsupportedModelError, match="Add"):
        backend.prepare(model)
    with pytest.raises(NotImplementedError, match="Add"):
        backend.run_node(node, [np.zeros(1, np.float32)] * 2)


def test_out_of_range_is_an_error_not_a_clamp(device):
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=0)
    with pytest.raises(IndexError, match="index 3 "):
        backend.run_node(node, [np.arange(3.0), np.array([0, 3])], dml_device=device)
    assert backend.run_node(node, [np.arange(3.0), np.array([-3, 2])], dml_device=device)[0].tolist() == [0, 2]


def test_devices():
    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")
    assert not backend.supports_device("Vulkan")
    with pytest.raises(ValueError, match="CPU"):
        backend.prepare(onnx.ModelProto(), "CUDA")
