"""The worked examples of the DirectML pages (shared/spec, errata applied), as layer-1 descriptors with
their input arrays and expected outputs; the demo prints them and the tests check them exactly."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import descriptors as ops
from .dtypes import DataType
from .tensor_desc import TensorDesc

F32, U32 = DataType.FLOAT32, DataType.UINT32


@dataclass
class Example:
    operator: str
    title: str
    desc: ops._OperatorDesc   # a layer-1 operator descriptor
    arrays: dict          # execute() name -> array of that TensorDesc's sizes
    expected: np.ndarray  # the output, with OutputTensor's sizes


def _t(data_type, sizes):
    return TensorDesc(data_type, sizes)


def _a(values, sizes, dtype=np.float32):
    return np.array(values, dtype=dtype).reshape(sizes)


def _gather(title, axis, m, in_sizes, in_vals, idx_sizes, idx_vals, out_sizes, out_vals):
    desc = ops.GatherDesc(_t(F32, in_sizes), _t(U32, idx_sizes), _t(F32, out_sizes), axis, m)
    return Example("GATHER", title, desc,
                   {"input": _a(in_vals, in_sizes), "indices": _a(idx_vals, idx_sizes, np.uint32)},
                   _a(out_vals, out_sizes))


def _nd(cls, operator, title, params, in_sizes, in_vals, idx_sizes, idx_vals, out_sizes, out_vals):
    desc = cls(_t(F32, in_sizes), _t(U32, idx_sizes), _t(F32, out_sizes), *params)
    return Example(operator, title, desc,
                   {"input": _a(in_vals, in_sizes), "indices": _a(idx_vals, idx_sizes, np.uint32)},
                   _a(out_vals, out_sizes))


def _scatter(cls, operator, title, param, in_sizes, in_vals, idx_sizes, idx_vals, upd_sizes, upd_vals, out_vals):
    desc = cls(_t(F32, in_sizes), _t(U32, idx_sizes), _t(F32, upd_sizes), _t(F32, in_sizes), *param)
    return Example(operator, title, desc,
                   {"input": _a(in_vals, in_sizes), "indices": _a(idx_vals, idx_sizes, np.uint32),
                    "updates": _a(upd_vals, upd_sizes)},
                   _a(out_vals, in_sizes))


EXAMPLES = [
    _gather("Example 1. 1D remapping", 0, 1, [4], [11, 12, 13, 14], [5], [3, 1, 3, 0, 2], [5],
            [14, 12, 14, 11, 13]),
    _gather("Example 2. 2D output, 1D indices, Axis 0, concatenate rows", 0, 1, [3, 2], [1, 2, 3, 4, 5, 6],
            [1, 4], [0, 1, 1, 2], [4, 2], [1, 2, 3, 4, 3, 4, 5, 6]),
    _gather("Example 3. 2D, Axis 1, swap columns", 1, 2, [3, 2], [1, 2, 3, 4, 5, 6], [1, 2], [1, 0], [3, 2],
            [2, 1, 4, 3, 6, 5]),
    _gather("Example 4. nested indices, Axis 2", 2, 2, [1, 3, 3], range(1, 10), [1, 1, 2], [0, 2], [3, 1, 2],
            [1, 3, 4, 6, 7, 9]),
    _gather("Example 5. nested indices, Axis 1", 1, 2, [1, 3, 2], range(1, 7), [1, 2, 2], [0, 1, 1, 2],
            [2, 2, 2], [1, 2, 3, 4, 3, 4, 5, 6]),
    Example("GATHER_ELEMENTS", "Example. Axis 0",
            ops.GatherElementsDesc(_t(F32, [3, 3]), _t(U32, [2, 3]), _t(F32, [2, 3]), 0),
            {"input": _a(range(1, 10), [3, 3]), "indices": _a([1, 2, 0, 2, 0, 0], [2, 3], np.uint32)},
            _a([4, 8, 3, 7, 2, 3], [2, 3])),
    _nd(ops.GatherNDDesc, "GATHER_ND", "Example 1. 1D remapping", (2, 2), [2, 2], [0, 1, 2, 3], [2, 1], [1, 0],
        [2, 2], [2, 3, 0, 1]),
    _nd(ops.GatherNDDesc, "GATHER_ND", "Example 2. 2D remapping", (3, 2), [1, 2, 2, 2], range(8), [1, 1, 2, 2],
        [0, 1, 1, 0], [1, 1, 2, 2], [2, 3, 4, 5]),
    _nd(ops.GatherND1Desc, "GATHER_ND1", "Example 1. 1D remapping", (2, 2, 0), [2, 2], [0, 1, 2, 3], [2, 1],
        [1, 0], [2, 2], [2, 3, 0, 1]),
    _nd(ops.GatherND1Desc, "GATHER_ND1", "Example 2. 2D remapping with batch count", (3, 3, 1), [1, 3, 2, 2],
        range(12), [1, 3, 2, 2], [0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0], [1, 1, 3, 2], [0, 3, 7, 4, 9, 10]),
    _scatter(ops.ScatterNDDesc, "SCATTER_ND", "Example (tensors padded to 2 dimensions)", (1, 2), [1, 8],
             range(1, 9), [4, 1], [4, 3, 1, 7], [1, 4], [9, 10, 11, 12], [1, 11, 3, 10, 9, 6, 7, 12]),
    _scatter(ops.ScatterElementsDesc, "SCATTER_ELEMENTS", "Example 1. Axis 0, index 3 twice: the later update wins",
             (0,), [5], range(5), [4], [3, 1, 3, 0], [4], [5, 6, 7, 8], [8, 6, 2, 7, 4]),
    _scatter(ops.ScatterElementsDesc, "SCATTER_ELEMENTS", "Example 2. Axis 1", (1,), [2, 3], [0] * 6, [2, 2],
             [2, 0, 1, 2], [2, 2], [5, 6, 7, 8], [6, 0, 5, 0, 7, 8]),
]


def run(example: Example, device) -> np.ndarray:
    """Runs an example through layer 1 on ``device``; returns the output with OutputTensor's sizes."""
    op = device.compile(example.desc)
    bufs = {name: device.buffer(arr) for name, arr in example.arrays.items()}
    out_desc = example.desc.output
    bufs["output"] = device.buffer(nbytes=out_desc.total_size_in_bytes)
    op.execute(**bufs)
    count = int(np.prod(out_desc.sizes))
    return bufs["output"].read()[: count * 4].view(np.float32).reshape(out_desc.sizes)
