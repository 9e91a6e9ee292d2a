"""Issue 39, item 3: PyTorch's scatter_reduce names as aliases of layer 2's reductions ("sum", "prod", "amax",
"amin"), with the same bits as the ONNX names, on NumPy operands and Tensors; layer 1's descriptors keep
ONNX's names only."""
import numpy as np
import pytest

import dmlgpu
from dmlgpu.plans import reduction_args as reduction

from strategies import same_bytes


@pytest.mark.parametrize("torch_name, onnx_name", sorted(reduction.PYTORCH_NAMES.items()))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_pytorch_names_are_aliases(torch_name, onnx_name, dtype):
    rng = np.random.default_rng(4)
    data = rng.integers(-5, 5, (6, 3)).astype(dtype)
    idx = np.array([[0, 1, 2], [0, 1, 2], [5, 5, 0], [0, 4, 2]])
    upd = rng.integers(-5, 5, (4, 3)).astype(dtype)
    expected = dmlgpu.scatter_elements(data, idx, upd, axis=0, reduction=onnx_name)
    same_bytes(dmlgpu.scatter_elements(data, idx, upd, axis=0, reduction=torch_name), expected)
    same_bytes(dmlgpu.scatter_elements(data, idx, upd, axis=0, reduction=torch_name, include_self=False),
               dmlgpu.scatter_elements(data, idx, upd, axis=0, reduction=onnx_name, include_self=False))
    t = dmlgpu.tensor(data)
    dmlgpu.scatter_elements(t, dmlgpu.tensor(idx), dmlgpu.tensor(upd), axis=0, reduction=torch_name, out=t)
    same_bytes(t.numpy(), expected)
    rows = np.array([[1], [1], [3]])
    same_bytes(dmlgpu.scatter_nd(data, rows, upd[:3], reduction=torch_name),
               dmlgpu.scatter_nd(data, rows, upd[:3], reduction=onnx_name))


def test_unknown_names_list_both():
    with pytest.raises(ValueError, match="^scatter_nd: reduction must be one of .*'mean', 'sum', 'prod', 'amax', 'amin', not 'avg'"):
        dmlgpu.scatter_nd(np.zeros(3, np.float32), [[0]], np.ones(1, np.float32), reduction="avg")
    from dmlgpu.layer1 import rules as desc_rules
    with pytest.raises(dmlgpu.DescError, match="^Reduction must be one of 'none', 'add', 'mul', 'min', 'max', not 'sum'"):
        desc_rules.check_reduction("sum")                # layer 1: DirectML's (ONNX's) names only
