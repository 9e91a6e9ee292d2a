"""Issue 39, item 9: the ONNX backend takes Tensors wherever it takes arrays, plumbing nodes (Cast, Reshape,
Unsqueeze) included, and errors name unnamed nodes by what they compute."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import dmlgpu
import dmlgpu.onnx as backend


def _model(nodes, inputs, outputs):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_tensor_inputs_through_cast_and_reshape():
    cast = helper.make_node("Cast", ["ids"], ["ids64"], to=TensorProto.INT64)
    shape = helper.make_node("Constant", [], ["shape"], value=helper.make_tensor("s", TensorProto.INT64, [1], [-1]))
    flat = helper.make_node("Reshape", ["ids64", "shape"], ["flat"])
    gather = helper.make_node("Gather", ["table", "flat"], ["rows"], axis=0)
    model = _model([cast, shape, flat, gather],
                   [helper.make_tensor_value_info("table", TensorProto.FLOAT, [5, 3]),
                    helper.make_tensor_value_info("ids", TensorProto.INT32, [2, 2])],
                   [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [4, 3])])
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    ids = np.array([[4, 0], [1, -1]], np.int32)
    rep = backend.prepare(model)
    expected = table[[4, 0, 1, -1]]
    np.testing.assert_array_equal(rep.run({"table": table, "ids": ids})["rows"], expected)
    big = dmlgpu.tensor(np.zeros((3, 5, 3), np.float32))
    big[1] = table
    out = rep.run({"table": big[1], "ids": dmlgpu.tensor(ids)})["rows"]     # Tensors in (a view too): Tensors out
    assert isinstance(out, dmlgpu.Tensor)
    np.testing.assert_array_equal(out.numpy(), expected)
    out = rep.run({"table": dmlgpu.tensor(table.T.copy()).T, "ids": dmlgpu.tensor(ids.T.copy()).T})["rows"]
    np.testing.assert_array_equal(out.numpy(), expected)


def test_unnamed_nodes_are_named_by_what_they_compute():
    gather = helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0)      # no name
    model = _model([gather], [helper.make_tensor_value_info("table", TensorProto.FLOAT, [5, 3]),
                              helper.make_tensor_value_info("ids", TensorProto.INT64, [1])],
                   [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [1, 3])])
    with pytest.raises(IndexError, match="^Gather node \\(unnamed, output 'rows'\\): index 9"):
        backend.prepare(model).run({"table": np.zeros((5, 3), np.float32), "ids": np.array([9])})
