"""dmlgpu.onnx on exported models (tests/models/, written by tests/models/make_models.py: an embedding lookup, a
KV-cache update and a top-k gather in torch.onnx.export's node pattern), compared with onnx.reference; how
prepare() takes models and devices; run()'s checks of its inputs; Tensor inputs and outputs; the plumbing's
refusals of data."""
import pathlib
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import dmlgpu
import dmlgpu.onnx as backend
from dmlgpu.api import functions

MODELS = pathlib.Path(__file__).parent / "models"
sys.path.insert(0, str(MODELS))
import make_models  # noqa: E402


def _feeds(name: str, rng, batch: int = 2) -> dict:
    if name == "embedding.onnx":
        return {"input_ids": rng.integers(-make_models.VOCAB, make_models.VOCAB, size=(batch, 5))}
    if name == "kv_cache.onnx":
        shape = (make_models.SEQ, make_models.BATCH, make_models.HEADS, make_models.HEAD_DIM)
        return {"past_key": rng.standard_normal(shape).astype(np.float32),
                "new_key": rng.standard_normal((1, 8)).astype(np.float32),
                "position": np.array([rng.integers(-8, 8)], np.int32), "window": rng.integers(0, 8, 3)}
    return {"logits": rng.standard_normal((batch, 1, make_models.VOCAB)).astype(np.float32),
            "topk_indices": rng.integers(-make_models.VOCAB, make_models.VOCAB, size=(batch, 3))}


def test_the_committed_models_are_the_scripts():
    for name, make in make_models.MODELS.items():
        assert (MODELS / name).read_bytes() == make().SerializeToString(), name


@pytest.mark.parametrize("name", list(make_models.MODELS))
@pytest.mark.parametrize("batch", [1, 3])
def test_exported_models_match_onnx_reference(device, name, batch):
    path = MODELS / name
    rep = backend.prepare(path, dml_device=device)
    reference = ReferenceEvaluator(onnx.load(path))
    rng = np.random.default_rng(batch)
    for _ in range(3):
        feeds = _feeds(name, rng, batch)
        got = rep.run(feeds)
        expected = reference.run(None, feeds)
        assert len(got) == len(expected)
        for g, e, out in zip(got, expected, rep.output_names):
            assert isinstance(g, np.ndarray) and g.dtype == e.dtype and g.shape == e.shape, out
            assert np.array_equal(g, e), out
            assert np.array_equal(got[out], e)


def test_embedding_values(device):
    """The embedding model against NumPy directly: rows of the table, flattened per batch entry."""
    model = onnx.load(MODELS / "embedding.onnx")
    table = onnx.numpy_helper.to_array(model.graph.initializer[0])
    ids = np.array([[1, 2, 3], [4, -5, 49]])
    hidden, first = backend.prepare(model, dml_device=device).run([ids])
    assert np.array_equal(hidden, table[ids % 50].reshape(2, -1))
    assert np.array_equal(first, table[[1, 4]])


def test_prepare_takes_a_model_a_path_a_string_path_or_bytes(device):
    path = MODELS / "kv_cache.onnx"
    feeds = _feeds("kv_cache.onnx", np.random.default_rng(0))
    expected = ReferenceEvaluator(onnx.load(path)).run(None, feeds)
    for source in (onnx.load(path), path, str(path), path.read_bytes()):
        got = backend.prepare(source, dml_device=device).run(feeds)
        assert all(np.array_equal(g, e) for g, e in zip(got, expected))
        assert backend.is_compatible(source)
    with pytest.raises(TypeError, match=r"prepare\(\): model must be an onnx.ModelProto, a path or bytes, not int"):
        backend.prepare(3)


def test_initializers_go_to_the_device_once_and_constants_fold(device):
    rep = backend.prepare(MODELS / "embedding.onnx", dml_device=device)
    # the Identity of the tied weight is folded at prepare(); both names are the one uploaded Tensor
    assert isinstance(rep._constants["embed.weight"], dmlgpu.Tensor)
    assert rep._constants["unembed.weight"] is rep._constants["embed.weight"]
    assert "Identity" not in [n.node.op_type for n in rep._nodes]


def test_values_between_device_operators_stay_on_the_device(device, monkeypatch):
    """kv_cache.onnx: the Gather reads the ScatterND's result as a Tensor (no host round trip)."""
    seen = []
    gather = functions.gather

    def spy(data, *args, **kwargs):
        seen.append(type(data))
        return gather(data, *args, **kwargs)

    monkeypatch.setattr(functions, "gather", spy)
    feeds = _feeds("kv_cache.onnx", np.random.default_rng(5))
    got = backend.prepare(MODELS / "kv_cache.onnx", dml_device=device).run(feeds)
    assert seen == [dmlgpu.Tensor]
    expected = ReferenceEvaluator(onnx.load(MODELS / "kv_cache.onnx")).run(None, feeds)
    assert all(isinstance(g, np.ndarray) and np.array_equal(g, e) for g, e in zip(got, expected))


def test_tensor_inputs_give_tensor_outputs(device):
    feeds = _feeds("topk_gather.onnx", np.random.default_rng(1))
    expected = ReferenceEvaluator(onnx.load(MODELS / "topk_gather.onnx")).run(None, feeds)
    rep = backend.prepare(MODELS / "topk_gather.onnx", dml_device=device)
    got = rep.run({"logits": dmlgpu.tensor(feeds["logits"], device=device), "topk_indices": feeds["topk_indices"]})
    for g, e in zip(got, expected):
        assert isinstance(g, dmlgpu.Tensor) and g.shape == e.shape and g.dtype == e.dtype
        assert np.array_equal(g.numpy(), e)


def test_run_checks_its_inputs_by_name():
    rep = backend.prepare(MODELS / "kv_cache.onnx")
    feeds = _feeds("kv_cache.onnx", np.random.default_rng(2))
    with pytest.raises(ValueError, match=r"run\(\): the graph's inputs \['window'\] are missing"):
        rep.run({k: v for k, v in feeds.items() if k != "window"})
    with pytest.raises(ValueError, match=r"run\(\): \['windows'\] are no inputs of the graph"):
        rep.run(feeds | {"windows": feeds["window"]})
    with pytest.raises(TypeError, match="input 'past_key' has dtype float64; the graph declares float32"):
        rep.run(feeds | {"past_key": feeds["past_key"].astype(np.float64)})
    with pytest.raises(TypeError, match="input 'past_key' has dtype int64; the graph declares float32"):
        rep.run(feeds | {"past_key": feeds["past_key"].astype(np.int64)})
    with pytest.raises(ValueError, match=r"input 'window' has shape \(7,\); the graph declares \[3\]"):
        rep.run(feeds | {"window": np.zeros(7, np.int64)})
    with pytest.raises(ValueError, match=r"input 'window' has shape \(3, 1\); the graph declares rank 1"):
        rep.run(feeds | {"window": np.zeros((3, 1), np.int64)})
    topk = backend.prepare(MODELS / "topk_gather.onnx")
    with pytest.raises(ValueError, match="dimension 'batch' is 2 in input 'logits' and 3 in input 'topk_indices'"):
        topk.run({"logits": np.zeros((2, 1, 50), np.float32), "topk_indices": np.zeros((3, 2), np.int64)})


def test_dml_device_is_a_device_or_an_index_checked_at_prepare(device):
    rep = backend.prepare(MODELS / "kv_cache.onnx", dml_device=device.info.index)
    assert rep.device is device                      # the default device, by its index
    assert backend.prepare(MODELS / "kv_cache.onnx", dml_device=device).device is device
    count = len(dmlgpu.devices())
    with pytest.raises(dmlgpu.DeviceError, match=rf"prepare\(\): dml_device={count} is no device index: "
                                                 rf"dmlgpu.devices\(\) lists {count}"):
        backend.prepare(MODELS / "kv_cache.onnx", dml_device=count)
    with pytest.raises(TypeError, match=r"prepare\(\): dml_device must be a dmlgpu.Device or a device index, not str"):
        backend.prepare(MODELS / "kv_cache.onnx", dml_device="0")


def _graph_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_cast_and_concat_of_data_are_refused_at_prepare():
    cast = _graph_model([helper.make_node("Cast", ["x"], ["y"], name="half", to=TensorProto.FLOAT16)],
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [3])])
    with pytest.raises(backend.UnsupportedModelError, match="Cast node 'half' converts to FLOAT16: dmlgpu.onnx "
                                                            "casts only integer tensors"):
        backend.prepare(cast)
    widen = _graph_model([helper.make_node("Cast", ["x"], ["y"], name="widen", to=TensorProto.INT64)],
                         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                         [helper.make_tensor_value_info("y", TensorProto.INT64, [3])])
    with pytest.raises(backend.UnsupportedModelError, match="Cast node 'widen' reads 'x' of type FLOAT"):
        backend.prepare(widen)
    concat = _graph_model([helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=0)],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "ab"],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])])
    with pytest.raises(backend.UnsupportedModelError, match="Concat node 'cat' reads 'a' of type FLOAT"):
        backend.prepare(concat)


def test_cast_and_concat_of_index_tensors_run_on_the_host(device):
    model = _graph_model(
        [helper.make_node("Cast", ["i"], ["i64"], to=TensorProto.INT64),
         helper.make_node("Concat", ["i64", "more"], ["all"], axis=0),
         helper.make_node("Gather", ["table", "all"], ["rows"], axis=0)],
        [helper.make_tensor_value_info("i", TensorProto.INT16, [2]),
         helper.make_tensor_value_info("table", TensorProto.FLOAT, [5, 2])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [3, 2])],
        [onnx.numpy_helper.from_array(np.array([-1], np.int64), "more")])
    table = np.arange(10, dtype=np.float32).reshape(5, 2)
    rows = backend.prepare(model, dml_device=device).run({"i": np.array([0, 3], np.int16), "table": table})[0]
    assert np.array_equal(rows, table[[0, 3, 4]])
    # a Cast of a Tensor of indices: its values read on the host (issue 39: Tensors in wherever arrays go)
    untyped = _graph_model([helper.make_node("Cast", ["i"], ["j"], name="c", to=TensorProto.INT64)],
                           [helper.make_tensor_value_info("i", TensorProto.INT32, [2])],
                           [helper.make_tensor_value_info("j", TensorProto.INT64, [2])])
    j = backend.prepare(untyped, dml_device=device).run([dmlgpu.tensor(np.array([1, 2], np.int32), device=device)])[0]
    assert j.dtype == np.int64 and j.tolist() == [1, 2]


def test_plumbing_errors_name_the_node(device):
    model = _graph_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="bad_reshape")],
                         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
                          helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    rep = backend.prepare(model, dml_device=device)
    with pytest.raises(ValueError, match=r"Reshape node 'bad_reshape': cannot reshape \(6,\) \(6 elements\) to"):
        rep.run([np.zeros(6, np.float32), np.array([4, 2])])
    assert rep.run([np.arange(6, dtype=np.float32), np.array([3, -1])])[0].tolist() == [[0, 1], [2, 3], [4, 5]]
    gather_shape = _graph_model(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["n"], name="dim")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    rep = backend.prepare(gather_shape, dml_device=device)
    assert rep.run([np.zeros(6, np.float32), np.array(-1)])[0].tolist() == 6
    with pytest.raises(IndexError, match="index 1 at indices position"):
        rep.run([np.zeros(6, np.float32), np.array(1)])


def test_axes_are_read_on_the_host(device):
    model = _graph_model([helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="u")],
                         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                          helper.make_tensor_value_info("axes", TensorProto.INT64, [2])],
                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 1])])
    rep = backend.prepare(model, dml_device=device)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = rep.run([x, np.array([0, -1])])[0]
    assert y.shape == (1, 2, 3, 1) and np.array_equal(y.reshape(2, 3), x)
    t = rep.run([dmlgpu.tensor(x, device=device), np.array([3, 0])])[0]      # a view of the Tensor's buffer
    assert isinstance(t, dmlgpu.Tensor) and t.shape == (1, 2, 3, 1) and np.array_equal(t.numpy().reshape(2, 3), x)
    y = rep.run([x, dmlgpu.tensor(np.array([0, 3]), device=device)])[0]     # Tensor axes: read on the host
    assert y.shape == (1, 2, 3, 1)
    with pytest.raises(ValueError, match=r"Unsqueeze node 'u': axes \[0, 0\] repeat an axis"):
        rep.run([x, np.array([0, 0])])


def test_errors_of_device_operators_name_the_node(device):
    rep = backend.prepare(MODELS / "embedding.onnx", dml_device=device)
    with pytest.raises(IndexError, match=r"^Gather node '/embed/Gather': index 70 at indices position \(0, 1\) is out "
                                         r"of range for a dimension of size 50"):
        rep.run([np.array([[1, 70]])])
