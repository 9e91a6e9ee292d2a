"""Writes the exported models that tests/test_onnx_models.py runs: ``python tests/models/make_models.py``.

What they are: the graphs that ``torch.onnx.export`` (the TorchScript exporter, opset 17) writes for the three
PyTorch modules in the comments below, an embedding lookup, a KV-cache update and a top-k gather, with its
node pattern (the Constant, Identity, Shape, Gather-of-a-shape, Unsqueeze, Concat, Reshape, Squeeze, Flatten
and Cast nodes it puts around the gathers and scatters), its names ("/embed/Gather", "/Constant_output_0",
parameters by their module path) and its dynamic axes.

How they are made, honestly: with onnx.helper, node by node, not by torch.onnx.export itself. PyTorch is not
installed here (PyPI's Linux wheels of torch bring several GB of CUDA libraries), so the exporter could not be
run; the graphs follow what it emits for these modules. Where the exporter would add operators that dmlgpu.onnx
does not run (index_put_'s Expand of the values to the index shape, which is the identity for these shapes),
they are left out, and the comment says so. The weights are seeded: running the script again writes the same
bytes (tests/test_onnx_models.py checks that).
"""
from __future__ import annotations

import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17
VOCAB, WIDTH = 50, 8            # the embedding table
SEQ, BATCH, HEADS, HEAD_DIM = 8, 1, 2, 4    # the KV cache: [SEQ, BATCH, HEADS, HEAD_DIM], sequence first


def _model(nodes, name, inputs, outputs, initializers) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
                              producer_name="pytorch", producer_version="2.5.1")
    onnx.checker.check_model(model, full_check=True)
    return model


def _const(name: str, value) -> onnx.NodeProto:
    """The exporter's Constant node "/<name>" with output "/<name>_output_0"."""
    return helper.make_node("Constant", [], [f"/{name}_output_0"], name=f"/{name}",
                            value=numpy_helper.from_array(np.asarray(value), ""))


def embedding() -> onnx.ModelProto:
    """class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 8)
            self.unembed = nn.Linear(8, 50, bias=False)
            self.unembed.weight = self.embed.weight           # tied: the exporter writes an Identity
        def forward(self, input_ids):                          # [batch, seq] int64
            h = self.embed(input_ids)                          # Gather
            return h.reshape(h.shape[0], -1), self.unembed.weight[input_ids[:, 0]]

    torch.onnx.export(Embed(), ids, "embedding.onnx", input_names=["input_ids"],
                      output_names=["hidden", "first_rows"], dynamic_axes={"input_ids": {0: "batch", 1: "seq"}})
    (input_ids[:, 0] is written as the exporter writes it: Gather(input_ids, Constant 0, axis=1).)"""
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((VOCAB, WIDTH)).astype(np.float32)
    nodes = [
        helper.make_node("Identity", ["embed.weight"], ["unembed.weight"], name="/Identity"),
        helper.make_node("Gather", ["embed.weight", "input_ids"], ["/embed/Gather_output_0"], name="/embed/Gather"),
        helper.make_node("Shape", ["/embed/Gather_output_0"], ["/Shape_output_0"], name="/Shape"),
        _const("Constant", np.int64(0)),
        helper.make_node("Gather", ["/Shape_output_0", "/Constant_output_0"], ["/Gather_output_0"], name="/Gather",
                         axis=0),
        _const("Constant_1", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["/Gather_output_0", "/Constant_1_output_0"], ["/Unsqueeze_output_0"],
                         name="/Unsqueeze"),
        _const("Constant_2", np.array([-1], np.int64)),
        helper.make_node("Concat", ["/Unsqueeze_output_0", "/Constant_2_output_0"], ["/Concat_output_0"],
                         name="/Concat", axis=0),
        helper.make_node("Reshape", ["/embed/Gather_output_0", "/Concat_output_0"], ["hidden"], name="/Reshape",
                         allowzero=0),
        _const("Constant_3", np.int64(0)),
        helper.make_node("Gather", ["input_ids", "/Constant_3_output_0"], ["/Gather_1_output_0"], name="/Gather_1",
                         axis=1),
        helper.make_node("Gather", ["unembed.weight", "/Gather_1_output_0"], ["first_rows"], name="/Gather_2",
                         axis=0),
    ]
    return _model(nodes, "main_graph",
                  [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
                  [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "Reshapehidden_dim_1"]),
                   helper.make_tensor_value_info("first_rows", TensorProto.FLOAT, ["batch", WIDTH])],
                  [numpy_helper.from_array(weight, "embed.weight")])


def kv_cache() -> onnx.ModelProto:
    """class KVCache(nn.Module):                                # a sequence-first cache [seq, batch, heads, dim]
        def forward(self, past_key, new_key, position, window):  # f32 [8,1,2,4], f32 [1,8], int32 [1], int64 [3]
            pos = position.long()                                  # Cast to INT64
            k = new_key.view(1, 1, 2, 4)                           # Constant shape, Reshape
            past_key[pos] = k                                      # index_put_: Unsqueeze(pos, -1), ScatterND
            return past_key, past_key.index_select(0, window)      # Gather

    torch.onnx.export(KVCache(), (past, new, pos, window), "kv_cache.onnx",
                      input_names=["past_key", "new_key", "position", "window"],
                      output_names=["present_key", "recent_keys"])
    Left out: the Expand (of the values to the index's shape, with its Shape, Slice and Concat) that the exporter's
    index_put_ writes before the ScatterND; for these shapes it is the identity."""
    nodes = [
        helper.make_node("Cast", ["position"], ["/Cast_output_0"], name="/Cast", to=TensorProto.INT64),
        _const("Constant", np.array([1, BATCH, HEADS, HEAD_DIM], np.int64)),
        helper.make_node("Reshape", ["new_key", "/Constant_output_0"], ["/Reshape_output_0"], name="/Reshape",
                         allowzero=0),
        _const("Constant_1", np.array([-1], np.int64)),
        helper.make_node("Unsqueeze", ["/Cast_output_0", "/Constant_1_output_0"], ["/Unsqueeze_output_0"],
                         name="/Unsqueeze"),
        helper.make_node("ScatterND", ["past_key", "/Unsqueeze_output_0", "/Reshape_output_0"], ["present_key"],
                         name="/ScatterND"),
        helper.make_node("Gather", ["present_key", "window"], ["recent_keys"], name="/Gather", axis=0),
    ]
    return _model(nodes, "main_graph",
                  [helper.make_tensor_value_info("past_key", TensorProto.FLOAT, [SEQ, BATCH, HEADS, HEAD_DIM]),
                   helper.make_tensor_value_info("new_key", TensorProto.FLOAT, [1, BATCH * HEADS * HEAD_DIM]),
                   helper.make_tensor_value_info("position", TensorProto.INT32, [1]),
                   helper.make_tensor_value_info("window", TensorProto.INT64, [3])],
                  [helper.make_tensor_value_info("present_key", TensorProto.FLOAT, [SEQ, BATCH, HEADS, HEAD_DIM]),
                   helper.make_tensor_value_info("recent_keys", TensorProto.FLOAT, [3, BATCH, HEADS, HEAD_DIM])], [])


def topk_gather() -> onnx.ModelProto:
    """class TopKGather(nn.Module):                             # the indices come from a TopK run before it
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(50, 8)
        def forward(self, logits, topk_indices):               # f32 [batch, 1, 50], int64 [batch, k]
            scores = logits.squeeze(1).gather(1, topk_indices)  # Squeeze (axes as a Constant), GatherElements
            rows = self.table(topk_indices).flatten(1)          # Gather, Flatten
            return scores, rows

    torch.onnx.export(TopKGather(), (logits, idx), "topk_gather.onnx", input_names=["logits", "topk_indices"],
                      output_names=["scores", "rows"], dynamic_axes={"logits": {0: "batch"},
                      "topk_indices": {0: "batch", 1: "k"}})"""
    rng = np.random.default_rng(2)
    table = rng.standard_normal((VOCAB, WIDTH)).astype(np.float32)
    nodes = [
        _const("Constant", np.array([1], np.int64)),
        helper.make_node("Squeeze", ["logits", "/Constant_output_0"], ["/Squeeze_output_0"], name="/Squeeze"),
        helper.make_node("GatherElements", ["/Squeeze_output_0", "topk_indices"], ["scores"], name="/GatherElements",
                         axis=1),
        helper.make_node("Gather", ["table.weight", "topk_indices"], ["/table/Gather_output_0"], name="/table/Gather"),
        helper.make_node("Flatten", ["/table/Gather_output_0"], ["rows"], name="/Flatten", axis=1),
    ]
    return _model(nodes, "main_graph",
                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1, VOCAB]),
                   helper.make_tensor_value_info("topk_indices", TensorProto.INT64, ["batch", "k"])],
                  [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", "k"]),
                   helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["batch", "Flattenrows_dim_1"])],
                  [numpy_helper.from_array(table, "table.weight")])


MODELS = {"embedding.onnx": embedding, "kv_cache.onnx": kv_cache, "topk_gather.onnx": topk_gather}


if __name__ == "__main__":
    for name, make in MODELS.items():
        (HERE / name).write_bytes(make().SerializeToString())
        print(f"wrote {HERE / name}")
