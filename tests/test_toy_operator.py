"""A new operator is its plan (a row of ops.PLANS), its function (a shape rule over driver.call) and its export,
plus a shader and a kernels/table.py row only when no kernel does what it needs (docs/adding-an-operator.md).

The toy operator, ``take_strided(data, indices, step)`` == ``numpy.take(data[::step], indices, axis=0)``, is
added here through exactly that path, inside the test: a gather through a strided view of data, reusing the
gather kernel (a strided copy with indices), checked against NumPy."""
import pathlib
import re

import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import driver
from dmlgpu.plans import ops
from dmlgpu.plans.index_map import Layout, take_map, take_shape
from dmlgpu.plans.plan import GatherPlan, Plan, make_plan

ROOT = pathlib.Path(__file__).resolve().parent.parent


# 1. its plan: a function of layouts, and its row of ops.PLANS
def take_strided_plan(data: Layout, indices: Layout, out: Layout, step: int, dtype, index_dtype) -> Plan:
    rows = Layout((-(-data.shape[0] // step),) + data.shape[1:], (data.strides[0] * step,) + data.strides[1:])
    return make_plan(GatherPlan, take_map(rows, indices, out, 0, np.dtype(dtype).itemsize), np.dtype(index_dtype))


# 2. its function: the operator's own checks and shapes, and one driver.call
def _take_strided_rule(data, idx, upd, step):
    if type(step) is not int or step < 1:
        raise ValueError(f"step must be a positive integer, not {step!r}")
    rows = -(-data.shape[0] // step)
    out = take_shape((rows,) + data.shape[1:], idx.shape, 0)
    plan_args = (Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(out), step, data.dtype, idx.dtype)
    return driver.Signature(out, rows, None if 0 in out else plan_args)


def take_strided(data, indices, step=1, *, device=None, mode="clamp"):
    return driver.call("take_strided", _take_strided_rule, data, indices, None, (step,), device=device, mode=mode)


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(ops.PLANS, "take_strided", take_strided_plan)      # the row
    monkeypatch.setattr(dmlgpu, "take_strided", take_strided, raising=False)   # 3. its export
    return dmlgpu


@pytest.mark.parametrize("shape, dtype, step, indices", [
    ((10, 3), np.float32, 3, [0, 3, -1, 1, 1]),
    ((7,), np.int8, 2, [[3, 0], [2, 2]]),
    ((9, 2, 5), np.int64, 4, [2, 0]),
    ((5, 16), np.float16, 1, [4, 0, 2]),
])
def test_toy_operator_matches_numpy(toy, device, shape, dtype, step, indices):
    data = (np.arange(np.prod(shape)) * 3 - 7).astype(dtype).reshape(shape)
    want = np.take(data[::step], np.asarray(indices), axis=0)
    got = toy.take_strided(data, indices, step)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(toy.take_strided(data, indices, step), want)        # planned once, from the cache
    on_device = toy.take_strided(dmlgpu.tensor(data, device=device), dmlgpu.tensor(np.asarray(indices, np.int32),
                                                                                   device=device), step)
    assert isinstance(on_device, dmlgpu.Tensor) and np.array_equal(on_device.numpy(), want)


def test_toy_operator_repeated_tensor_calls_take_the_template(toy, device):
    """The driver gives a new operator the call template (dmlgpu/api/call_templates.py) of the built-in ones."""
    data = dmlgpu.tensor(np.arange(40, dtype=np.int32).reshape(20, 2), device=device)
    idx = dmlgpu.tensor(np.array([1, 0, 6], np.int64), device=device)
    want = np.take(np.arange(40, dtype=np.int32).reshape(20, 2)[::3], [1, 0, 6], axis=0)
    for _ in range(4):
        assert np.array_equal(toy.take_strided(data, idx, 3).numpy(), want)
    assert ("take_strided", data.shape, data.dtype, idx.shape, idx.dtype, 3, "clamp") in device.runtime.templates


def test_toy_operator_modes_and_errors(toy):
    data = np.arange(12, dtype=np.uint16).reshape(6, 2)
    assert np.array_equal(toy.take_strided(data, [5, -4], 2), data[::2][[2, 0]])          # clamped, wrapped
    with pytest.raises(IndexError, match=r"^take_strided: index 5 at indices position \(0,\)"):
        toy.take_strided(data, [5], 2, mode="raise")
    with pytest.raises(ValueError, match="^take_strided: step must be a positive integer, not 0"):
        toy.take_strided(data, [0], 0)
    assert toy.take_strided(data, np.zeros((0,), np.int32), 2).shape == (0, 2)


def _page() -> str:
    text = (ROOT / "docs" / "adding-an-operator.md").read_text()
    return re.search(r"^# Adding an operator\n(.*?)(?=^#|\Z)", text, re.M | re.S).group(1)


def test_page_names_files_that_exist():
    paths = re.findall(r"`((?:dmlgpu|shaders|tests)/[\w/.]+)`", _page())
    assert len(paths) >= 5
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_page_names_at_most_four_files_besides_tests():
    """The files a new operator touches (the page's numbered list): a shader, its row, its function, its
    export."""
    steps = re.findall(r"^\d\. ", _page(), re.M)
    assert len(steps) == 4
