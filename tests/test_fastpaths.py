"""Each deliberate fast path against the general path on the same inputs, bit for bit: the call template of
repeated Tensor calls (dmlgpu/api/call_templates.py), the single-dispatch scatter of at most a workgroup of rows
(plan.ScatterPlan's SMALL), and NumPy-in/out calls that keep their device buffers for the next call of their
signature (up to KEEP_BYTES). Scatters use duplicate indices (the last update wins), and every result is
also checked against NumPy's."""
import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import call_templates as calls
from dmlgpu.plans import ops
from dmlgpu import reference
from dmlgpu.plans.index_map import Layout, nd_map
from dmlgpu.plans.plan import ScatterPlan


def _bits(x) -> bytes:
    a = x.numpy() if isinstance(x, dmlgpu.Tensor) else np.asarray(x)
    return a.shape, a.dtype, a.tobytes()


def _floats(rng, shape):
    """float32 with a NaN payload and a negative zero, so that a value path would show (bits, not values)."""
    a = rng.standard_normal(shape).astype(np.float32)
    flat = a.reshape(-1)
    flat[0], flat[-1] = np.frombuffer(np.uint32(0x7FC0DEAD).tobytes(), np.float32)[0], -0.0
    return a


def _cases(rng):
    """(name, function, NumPy operands, kwargs, NumPy reference); scatter indices with duplicates."""
    data = _floats(rng, (48, 6))
    dup_rows = np.array([[5], [40], [5], [7], [40], [5]], np.int64)              # 5 and 40 written 3 and 2 times
    upd_rows = _floats(rng, (6, 6))
    elems = np.concatenate([np.full((48, 2), 3), rng.integers(0, 6, (48, 2))], axis=1).astype(np.int32)
    upd_elems = _floats(rng, (48, 4))
    ints = rng.integers(-99, 99, (48, 6)).astype(np.int32)
    return [
        ("gather", dmlgpu.gather, (data, rng.integers(-48, 48, (9,)).astype(np.int64)), dict(axis=0),
         lambda d, i: np.take(d, np.where(i < 0, i + 48, i), 0)),
        ("gather_elements", dmlgpu.gather_elements, (data, elems), dict(axis=1),
         lambda d, i: np.take_along_axis(d, i.astype(np.int64), 1)),
        ("gather_nd", dmlgpu.gather_nd, (data, rng.integers(0, 6, (7, 2)).astype(np.int64)), {},
         lambda d, i: d[tuple(i.T)]),
        ("scatter_nd", dmlgpu.scatter_nd, (data, dup_rows, upd_rows), {},
         lambda d, i, u: reference.scatter_nd(d, i, u)),
        ("scatter_elements", dmlgpu.scatter_elements, (data, elems, upd_elems), dict(axis=1),
         lambda d, i, u: reference.scatter_elements(d, i, u, 1)),
        ("scatter_nd add", dmlgpu.scatter_nd, (ints, dup_rows, ints[:6] * 3), dict(reduction="add"),
         lambda d, i, u: reference.scatter_nd(d, i, u, reduction="add")),
    ]


CASES = [c[0] for c in _cases(np.random.default_rng(0))]


@pytest.fixture(scope="module")
def other():
    """A second Device object of the default device: the general path's (its calls never touch the first's
    templates, which a planned call of the same signature on the same Device would trace again)."""
    dev = dmlgpu.Device(dmlgpu.default_device().info.index)
    yield dev
    dev.close()


@pytest.mark.parametrize("case", range(len(CASES)), ids=CASES)
def test_call_template_agrees_with_the_general_path(device, other, monkeypatch, case):
    """A Tensor call repeated (traced twice, then templated) gives the bits of the same call with device=
    given, which never takes a template, and NumPy's values."""
    hits = []
    hit = calls.Template.hit
    monkeypatch.setattr(calls.Template, "hit", lambda self, *args: hits.append(1) or hit(self, *args))
    name, fn, operands, kwargs, ref = _cases(np.random.default_rng(case))[case]
    tensors = [dmlgpu.tensor(x, device=device) for x in operands]
    for step in range(5):
        if step:                                  # new values in the same Tensors: the same signature
            operands = _cases(np.random.default_rng(100 + 10 * case + step))[case][2]
            for t, x in zip(tensors, operands):
                t.write(x)
        fast = fn(*tensors, **kwargs)
        general = fn(*[dmlgpu.tensor(x, device=other) for x in operands], device=other, **kwargs)
        assert _bits(fast) == _bits(general), (name, step)
        np.testing.assert_array_equal(fast.numpy(), ref(*operands))
    assert len(hits) >= 3, "the template was not taken"


def _run(dev, plan, **buffers):
    """A plan's dispatches on these buffers, run and waited for (as CompiledOperator.execute runs them)."""
    with dev.runtime.lock:
        dispatches, uploads = plan.dispatches(dev.runtime, take=dev.runtime.take_buffer, **buffers)
        dev.runtime._run(dispatches, uploads=uploads)
    return [d.kernel for d in dispatches]


@pytest.mark.parametrize("dtype, rows, width", [(np.float32, 200, 6), (np.int8, 256, 3), (np.float64, 17, 3)])
def test_small_scatter_agrees_with_the_general_plan(device, dtype, rows, width):
    """At most a workgroup of update rows scatter in one dispatch (SMALL); the same plan forced onto the
    claim-and-write passes gives the same bits."""
    rng = np.random.default_rng(rows)
    data = rng.integers(-100, 100, (64, width)).astype(dtype)
    idx = rng.integers(0, 8, (rows, 1)).astype(np.int32)        # 8 targets: many duplicates
    upd = rng.integers(-100, 100, (rows, width)).astype(dtype)
    layouts = Layout.packed(data.shape), Layout.packed(idx.shape), Layout.packed(upd.shape)
    copy = ops.input_copy(layouts[0], layouts[0], dtype)
    results = {}
    for small in (True, False):
        plan = ScatterPlan(nd_map(*layouts, 0, np.dtype(dtype).itemsize), np.int32, copy)   # not the cached one
        assert plan.small == rows
        if not small:
            plan.small = 0                                                 # forced onto the general passes
        out = device.buffer(nbytes=data.nbytes)
        kernels = _run(device, plan, input=device.buffer(data), indices=device.buffer(idx),
                       updates=device.buffer(upd), output=out)
        assert any("small" in k for k in kernels) == small, kernels
        results[small] = out.read()[:data.nbytes].view(dtype).reshape(data.shape)
    assert results[True].tobytes() == results[False].tobytes()
    np.testing.assert_array_equal(results[True], reference.scatter_nd(data, idx, upd))
    np.testing.assert_array_equal(dmlgpu.scatter_nd(data, idx, upd, device=device), results[True])


@pytest.mark.parametrize("case", range(len(CASES)), ids=CASES)
def test_kept_buffers_agree_with_the_general_path(device, case):
    """A NumPy-in/out call small enough to keep its device buffers, repeated with other values: each result
    has the bits of the same call on Tensors (whose buffers are never kept) and NumPy's values."""
    name, fn, operands, kwargs, ref = _cases(np.random.default_rng(case))[case]
    for step in range(3):
        if step:
            operands = _cases(np.random.default_rng(200 + 10 * case + step))[case][2]
        kept = fn(*operands, device=device, **kwargs)
        assert isinstance(kept, np.ndarray)
        general = fn(*[dmlgpu.tensor(x, device=device) for x in operands], device=device, **kwargs)
        assert _bits(kept) == _bits(general), (name, step)
        np.testing.assert_array_equal(kept, ref(*operands))
        assert any(sig[0] == fn.__name__ for sig in device.runtime._kept), "the call kept no buffers"
