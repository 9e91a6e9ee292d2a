"""Call templates (dmlgpu/api/call_templates.py): a repeated eager call on Tensors records its traced launches without
planning. The templated path must give what the planned path gives, on the same inputs, for every operator
and reduction, and must decline (falling back to the planned path) whenever its conditions do not hold."""
import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import call_templates as calls, driver, functions
from dmlgpu.kernels import table as kernels
from dmlgpu.plans import index_check, segment
from dmlgpu.plans.index_check import IndexCheck
from dmlgpu import reference


@pytest.fixture(scope="module", params=["direct", "staged"])
def dev(request, memory_device):
    d = memory_device(request.param == "direct")
    yield d
    d.close()


def _cases(rng):
    """(name, function, NumPy operands, kwargs, reference) for every operator, a reduction and a scatter
    whose updates are whole rows (the claim buffer and three launches)."""
    data = rng.standard_normal((64, 12)).astype(np.float32)
    rows = rng.integers(-64, 64, (9,)).astype(np.int64)
    elems = rng.integers(0, 12, (64, 5)).astype(np.int32)
    nd = rng.integers(0, 12, (7, 2)).astype(np.int64) % np.array([64, 12])
    nd_rows = rng.integers(0, 64, (10, 1)).astype(np.int64)
    upd_rows = rng.standard_normal((10, 12)).astype(np.float32)
    upd_elems = rng.standard_normal((64, 5)).astype(np.float32)
    ints = rng.integers(-50, 50, (64, 12)).astype(np.int32)
    upd_ints = rng.integers(-50, 50, (10, 12)).astype(np.int32)
    return [
        ("gather", dmlgpu.gather, (data, rows), dict(axis=0), lambda d, i: np.take(d, i, 0)),
        ("gather_elements", dmlgpu.gather_elements, (data, elems), dict(axis=1),
         lambda d, i: np.take_along_axis(d, i.astype(np.int64), 1)),
        ("gather_nd", dmlgpu.gather_nd, (data, nd), {}, lambda d, i: d[tuple(i.T)]),
        ("scatter_nd", dmlgpu.scatter_nd, (data, nd_rows, upd_rows), {},
         lambda d, i, u: reference.scatter_nd(d, i, u)),
        ("scatter_elements", dmlgpu.scatter_elements, (data, elems, upd_elems), dict(axis=1),
         lambda d, i, u: reference.scatter_elements(d, i, u, 1)),
        ("scatter_nd add", dmlgpu.scatter_nd, (ints, nd_rows, upd_ints), dict(reduction="add"),
         lambda d, i, u: reference.scatter_nd(d, i, u, reduction="add")),
        ("scatter_elements max", dmlgpu.scatter_elements, (data, elems, upd_elems), dict(axis=1, reduction="max"),
         lambda d, i, u: reference.scatter_elements(d, i, u, 1, reduction="max")),
    ]


@pytest.mark.parametrize("case", range(7))
def test_templated_calls_agree_with_planned_calls(dev, case):
    rng = np.random.default_rng(case)
    name, fn, operands, kwargs, ref = _cases(rng)[case]
    tensors = [dmlgpu.tensor(x, device=dev) for x in operands]
    results, expected = [], []
    for step in range(6):             # planned (traced), planned (traced: template made), then templated
        if step:                      # new values in the same Tensors each time
            fresh = _cases(np.random.default_rng(100 * case + step))[case][2]
            for t, x in zip(tensors, fresh):
                t.write(x)
            operands = fresh
        results.append(fn(*tensors, **kwargs))
        expected.append(ref(*operands))
    sig_ops = [t for t in tensors]
    template = dev.runtime.templates[(fn.__name__, *[x for t in sig_ops for x in (t.shape, t.dtype)],
                              *_args(fn.__name__, kwargs))]
    assert isinstance(template, calls.Template)
    for got, want in zip(results, expected):            # read after all were queued
        np.testing.assert_array_equal(got.numpy(), want)


def _args(op, kwargs):
    mode = kwargs.get("mode", "clamp")
    red = kwargs.get("reduction", "none")
    self_ = "include_self" if kwargs.get("include_self", True) else "exclude_self"
    order = kwargs.get("order", "row-major")
    return {"gather": (kwargs.get("axis", 0), mode), "gather_elements": (kwargs.get("axis", 0), mode),
            "gather_nd": (kwargs.get("batch_dims", 0), mode), "scatter_nd": (mode, red, self_, order),
            "scatter_elements": (kwargs.get("axis", 0), mode, red, self_, order)}[op]


def test_a_hit_plans_nothing(dev, monkeypatch):
    table = dmlgpu.tensor(np.arange(40, dtype=np.float32).reshape(10, 4), device=dev)
    idx = dmlgpu.tensor(np.array([3, 1, 9], np.int64), device=dev)
    for _ in range(2):
        dmlgpu.gather(table, idx)
    calls_made = []
    monkeypatch.setattr(driver, "_planned", lambda *a, **k: calls_made.append(a) or pytest.fail("planned"))
    out = dmlgpu.gather(table, idx)
    assert not calls_made
    np.testing.assert_array_equal(out.numpy(), np.arange(40, dtype=np.float32).reshape(10, 4)[[3, 1, 9]])


def test_templates_decline_where_their_conditions_fail(dev):
    data = np.arange(64, dtype=np.float32).reshape(16, 4)
    t = dmlgpu.tensor(data, device=dev)
    idx = dmlgpu.tensor(np.array([[2], [2], [5]], np.int64), device=dev)
    upd = dmlgpu.tensor(np.full((3, 4), -1, np.float32), device=dev)
    want = reference.scatter_nd(data, idx.numpy(), upd.numpy())
    for _ in range(3):
        out = dmlgpu.scatter_nd(t, idx, upd)
    np.testing.assert_array_equal(out.numpy(), want)
    # a recording: the template declines, the recorded run gives the same result
    with dev.record() as rec:
        r = dmlgpu.scatter_nd(t, idx, upd)
        rec.download(r)
    np.testing.assert_array_equal(rec.host(r), want)
    # a larger scatter replaces the claim buffer: the template declines, and the call is still right
    big = np.zeros((1 << 16, 4), np.float32)
    dmlgpu.scatter_nd(dmlgpu.tensor(big, device=dev), idx, upd).numpy()
    np.testing.assert_array_equal(dmlgpu.scatter_nd(t, idx, upd).numpy(), want)
    # operands of another device: the planned path's error, not a template's run
    other = dmlgpu.Device()
    try:
        with pytest.raises(dmlgpu.DeviceError):
            dmlgpu.scatter_nd(t, idx, dmlgpu.tensor(upd.numpy(), device=other))
    finally:
        other.close()
    # a bool axis is not the int axis 1 of a template
    g = dmlgpu.tensor(np.array([[0], [1]], np.int64), device=dev)
    for _ in range(3):
        dmlgpu.gather_elements(t, dmlgpu.tensor(np.zeros((16, 1), np.int64), device=dev), axis=1)
    with pytest.raises(TypeError):
        dmlgpu.gather_elements(t, g, axis=True)


def test_a_call_whose_operands_share_a_buffer_makes_no_template(dev):
    """A scatter whose updates are a view of its data binds one buffer in two slots: traced, the template would
    bind a later call's updates where its data goes (found by tests/test_poison.py's fuzz)."""
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-50, 50, (6, 3)).astype(np.float32) for _ in range(2))
    ta, tb = dmlgpu.tensor(a, device=dev), dmlgpu.tensor(b, device=dev)
    pos = dmlgpu.tensor(np.array([[2]]), device=dev)
    for _ in range(3):
        np.testing.assert_array_equal(dmlgpu.scatter_nd(ta, pos, ta[:1], mode="raise").numpy(),
                                      reference.scatter_nd(a, np.array([[2]]), a[:1]))
    np.testing.assert_array_equal(dmlgpu.scatter_nd(ta, pos, tb[:1], mode="raise").numpy(),
                                  reference.scatter_nd(a, np.array([[2]]), b[:1]))
    # in place, data's buffer is also the output, as the signature says: templated
    dev.runtime.templates.clear()
    for _ in range(3):
        dmlgpu.scatter_nd(ta, pos, tb[:1], out=ta)
    assert any(isinstance(t, calls.Template) and key[-1] == "in place" for key, t in dev.runtime.templates.items())
    np.testing.assert_array_equal(ta.numpy(), reference.scatter_nd(a, np.array([[2]]), b[:1]))


def test_no_queueing_takes_the_planned_path():
    d = dmlgpu.Device(max_queued=0)
    t = dmlgpu.tensor(np.arange(12, dtype=np.int32), device=d)
    i = dmlgpu.tensor(np.array([11, 0, 5], np.int64), device=d)
    for _ in range(4):
        np.testing.assert_array_equal(dmlgpu.gather(t, i).numpy(), [11, 0, 5])
    assert not d.runtime.templates            # nothing traced without queueing
    d.close()


def test_templates_are_bounded(dev, monkeypatch):
    monkeypatch.setattr(calls, "TEMPLATES", 4)
    t = dmlgpu.tensor(np.arange(100, dtype=np.int32), device=dev)
    for n in range(1, 12):
        i = dmlgpu.tensor(np.arange(n, dtype=np.int64), device=dev)
        for _ in range(2):
            out = dmlgpu.gather(t, i)
        np.testing.assert_array_equal(out.numpy(), np.arange(n))
        assert len(dev.runtime.templates) <= 4


def test_a_batch_like_the_last_is_submitted_again_and_sees_new_data(dev):
    """A loop of a call and a synchronize submits the same ops each time: the Sequence is submitted again as
    recorded (no re-recording), and every run reads the operands' current contents."""
    table = np.arange(80, dtype=np.int32).reshape(20, 4)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.zeros(3, np.int64), device=dev)
    out = None
    held = []
    for step in range(8):
        new = np.array([step, 19 - step, step % 5], np.int64)
        ids.write(new)
        del out                         # the result's block goes back and serves the next call
        out = dmlgpu.gather(t, ids)
        dev.synchronize()
        held.append(dev.runtime.submitter.batch.spare_held)    # the ops the Sequence just submitted holds
        np.testing.assert_array_equal(out.numpy(), table[new])
    assert any(a is b for a, b in zip(held[2:], held[4:])), "no batch was submitted again as recorded"


@pytest.mark.parametrize("case", range(5))
def test_templates_of_tensors_held_in_several_blocks(case):
    """Large-tensor launches (operands held in several blocks: WIDE variants, whose parameters list the
    blocks' addresses) are templated too: their parameters are made again for each call's buffers."""
    d = dmlgpu.Device(chunk_bytes=256)
    try:
        rng = np.random.default_rng(case)
        name, fn, operands, kwargs, ref = _cases(rng)[case]
        tensors = [dmlgpu.tensor(x, device=d) for x in operands]
        assert any(t.buffer.chunked for t in tensors)
        results, expected, keep = [], [], []
        for step in range(5):
            fresh = _cases(np.random.default_rng(100 * case + step))[case][2]
            for t, x in zip(tensors, fresh):
                t.write(x)
            keep.append(dmlgpu.tensor(np.zeros(64 * (step + 1), np.uint8), device=d))   # other blocks in use
            results.append(fn(*tensors, **kwargs))
            expected.append(ref(*fresh))
        template = d.runtime.templates[(fn.__name__, *[x for t in tensors for x in (t.shape, t.dtype)], *_args(fn.__name__, kwargs))]
        assert isinstance(template, calls.Template) and template.recipes
        for got, want in zip(results, expected):
            np.testing.assert_array_equal(got.numpy(), want)
    finally:
        d.close()


def test_a_hit_on_tensors_held_in_several_blocks_keeps_its_ops_and_parameters_per_block_lists():
    """A large-tensor template's hit queues through Prepared too: its parameter buffers (the blocks' addresses) are
    made once per set of block lists and kept with the ops; a table freed and made again from the same cached blocks
    (in another order) is a new set, with the right results."""
    d = dmlgpu.Device(chunk_bytes=256)
    try:
        rng = np.random.default_rng(11)
        data = rng.standard_normal((64, 12)).astype(np.float32)
        rows = rng.integers(0, 64, (9,)).astype(np.int64)
        t, i = dmlgpu.tensor(data, device=d), dmlgpu.tensor(rows, device=d)
        assert t.buffer.chunked
        for _ in range(3):
            np.testing.assert_array_equal(dmlgpu.gather(t, i).numpy(), data[rows])
        template = d.runtime.templates[("gather", t.shape, t.dtype, i.shape, i.dtype, *_args("gather", {}))]
        assert isinstance(template, calls.Template) and template.recipes and template.prepared is not None
        made = []
        real = template.params
        template.prepared.derive = lambda bufs: made.append(1) or real(bufs)
        for _ in range(4):                    # the result's blocks come back: one set, its parameters made once
            np.testing.assert_array_equal(dmlgpu.gather(t, i).numpy(), data[rows])
        assert len(made) <= 1
        lists = tuple(t.buffer.block_list)
        del t
        data = data[::-1].copy()
        t = dmlgpu.tensor(data, device=d)     # the same cached blocks, listed in another order
        assert set(map(id, t.buffer.block_list)) == set(map(id, lists)) and tuple(t.buffer.block_list) != lists
        before = len(made)
        for _ in range(2):
            np.testing.assert_array_equal(dmlgpu.gather(t, i).numpy(), data[rows])
        assert len(made) > before

        class Held:                           # a buffer's stand-in: only its blocks matter to the key
            def __init__(self, *blocks):
                self.block_list, self._block = list(blocks), blocks[0]
        a, b, c, x, y = (object() for _ in range(5))
        key = template.prepared.key           # the same first blocks, other lists: other keys
        assert key([Held(a, b), Held(c), Held(x), None, None]) != key([Held(a, y), Held(c), Held(x), None, None])
    finally:
        d.close()


@pytest.mark.parametrize("write", ["setitem", "add.at", "scatter_nd"])
def test_guarded_writes_in_place_are_templated(dev, write):
    """A scatter in place on Tensor indices under NumPy's rule (t[ids] = v, ufunc.at, scatter_nd(out=t,
    mode="raise")), guarded by the device's check of its indices (IndexCheck.guard), is templated too: later calls
    queue the guard, the traced launches on its copy of the indices and the report, planning nothing; good indices
    give NumPy's bytes, a bad one leaves the target failed (its reads raise until it is overwritten whole), and the
    calls after that run."""
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, (40, 6)).astype(np.float32)
    vals = rng.integers(-50, 50, (7, 6)).astype(np.float32)
    t, v = dmlgpu.tensor(a, device=dev), dmlgpu.tensor(vals, device=dev)
    want = a.copy()
    known = set(map(id, dev.runtime.templates.values()))

    def run(ids):
        i = dmlgpu.tensor(ids, device=dev)
        if write == "setitem":
            t[i] = v
        elif write == "add.at":
            np.add.at(t, i, v)
        else:
            dmlgpu.scatter_nd(t, i.reshape(7, 1), v, out=t, mode="raise")

    def ref(ids):
        if write == "add.at":
            np.add.at(want, ids, vals)
        else:
            want[ids] = vals
    for _ in range(3):
        ids = rng.choice(40, 7, replace=False).astype(np.int64)
        run(ids)
        ref(ids)
        np.testing.assert_array_equal(t.numpy(), want)
    guarded = [x for x in dev.runtime.templates.values() if isinstance(x, calls.Template) and x.guard and
               id(x) not in known]
    assert len(guarded) == 1 and guarded[0].prepared is not None
    planned = []
    real = driver._run
    try:
        driver._run = lambda *a, **k: planned.append(a) or real(*a, **k)
        for _ in range(3):
            ids = rng.choice(40, 7, replace=False).astype(np.int64)
            run(ids)
            ref(ids)
        np.testing.assert_array_equal(t.numpy(), want)
        assert planned == []
        run(np.array([1, 2, 40, 3, 4, 5, 6], np.int64))
        with pytest.raises(IndexError, match=r"index 40 at indices position \(2"):
            t.numpy()
    finally:
        driver._run = real
    t.write(want)                               # (overwritten whole: clean again)
    np.testing.assert_array_equal(t.numpy(), want)
    ids = rng.choice(40, 7, replace=False).astype(np.int64)
    run(ids)
    ref(ids)
    np.testing.assert_array_equal(t.numpy(), want)


def test_a_hit_queues_the_prepared_launches_and_gives_their_scratch_back(dev, monkeypatch):
    """A kept template queues its launches through runtime.Prepared: results as planned, scratch back in the
    allocator after every call, the result's block reused once the result is freed; with guard words
    (test mode) the results and scratch come from the general allocation and the guards stay intact."""
    from dmlgpu.runtime import Prepared
    rng = np.random.default_rng(7)
    data = rng.integers(-50, 50, (64, 12)).astype(np.int32)
    idx = rng.integers(0, 64, (40, 1)).astype(np.int64)
    upd = rng.integers(-50, 50, (40, 12)).astype(np.int32)
    t, i, u = (dmlgpu.tensor(x, device=dev) for x in (data, idx, upd))
    want = reference.scatter_nd(data, idx, upd, reduction="add")
    for _ in range(3):
        dmlgpu.scatter_nd(t, i, u, reduction="add").numpy()
    template = dev.runtime.templates[("scatter_nd", *[a for x in (t, i, u) for a in (x.shape, x.dtype)],
                              *_args("scatter_nd", dict(reduction="add")))]
    assert isinstance(template, calls.Template) and template.prepared is not None
    queued = []
    real = Prepared.queue
    monkeypatch.setattr(Prepared, "queue", lambda self, *a: queued.append(self) or real(self, *a))
    dev.synchronize()
    before = dev.memory_stats()["allocated_bytes"]
    for _ in range(5):
        r = dmlgpu.scatter_nd(t, i, u, reduction="add")
        np.testing.assert_array_equal(r.numpy(), want)
        del r
    assert queued == [template.prepared] * 5
    assert dev.memory_stats()["allocated_bytes"] == before    # no scratch kept, results given back
    dev.runtime.canary_words = 8
    try:
        r = dmlgpu.scatter_nd(t, i, u, reduction="add")
        assert r.buffer.canary_words == 8 and r.buffer.canary_intact()
        np.testing.assert_array_equal(r.numpy(), want)
    finally:
        dev.runtime.canary_words = 0


def test_a_hit_appends_the_ops_made_for_its_blocks_until_a_block_is_destroyed(dev):
    """Prepared keeps the kp ops of its launches per set of blocks: a loop whose result comes back to the same
    block appends the same ops (no new ones made); a destroyed block (empty_cache) drops every kept set, and the
    calls after it bind the new blocks (right results whatever block ids the allocator hands out again)."""
    rng = np.random.default_rng(3)
    data = rng.standard_normal((50, 8)).astype(np.float32)
    rows = np.array([4, 0, 49, 7, 7], np.int64)
    t, i = dmlgpu.tensor(data, device=dev), dmlgpu.tensor(rows, device=dev)
    for _ in range(3):
        dmlgpu.gather(t, i).numpy()
    template = dev.runtime.templates[("gather", t.shape, t.dtype, i.shape, i.dtype, *_args("gather", {}))]
    prepared = template.prepared
    assert prepared is not None
    dev.synchronize()
    r = dmlgpu.gather(t, i)
    np.testing.assert_array_equal(r.numpy(), data[rows])
    kept = dict(prepared.sets)
    assert kept
    del r
    for step in range(4):                      # the result's block comes back: the same ops, on fresh data
        data = data + 1
        t.write(data)
        r = dmlgpu.gather(t, i)
        np.testing.assert_array_equal(r.numpy(), data[rows])
        assert all(prepared.sets[k] is v for k, v in kept.items()) and len(prepared.sets) == len(kept)
        del r
    dev.empty_cache()                          # the cached result block is destroyed: the kept ops go
    for step in range(3):
        data = data * 2
        t.write(data)
        r = dmlgpu.gather(t, i)
        np.testing.assert_array_equal(r.numpy(), data[rows])
        assert not any(prepared.sets.get(k) is v for k, v in kept.items())
        del r


@pytest.mark.parametrize("one_group", [True, False])
@pytest.mark.parametrize("kind", ["gather", "embedding_bag", "setitem"])
def test_a_checked_hit_queues_its_check_with_its_launches_per_report_slot(dev, kind, one_group, monkeypatch):
    """A checked template (the gather's own check of its indices, the device's check of embedding_bag's ids, the
    guard of a write in place) queues its launches and the check's passes as one Prepared per report slot of the
    device's check buffers (Template.checked): the device's check and the guard in one workgroup's pass (up to
    index_check.ONE_GROUP indices), else the check's passes: calls queued without a synchronize between them take
    consecutive slots, none of them through IndexCheck.on_device, fetch or guard; each good call gives NumPy's
    bytes, and a bad one among them fails with its own first bad index while the others' results stand, its target
    unchanged."""
    if not one_group:
        monkeypatch.setattr(index_check, "ONE_GROUP", 0)
    rng = np.random.default_rng(11)
    n = 30 if one_group else 31         # (another signature: the module's device keeps the other case's templates)
    table = rng.integers(-50, 50, (n, 4)).astype(np.float32)
    vals = rng.integers(-50, 50, (5, 4)).astype(np.float32)
    t, v = dmlgpu.tensor(table, device=dev), dmlgpu.tensor(vals, device=dev)
    offsets = dmlgpu.tensor(np.array([0, 2], np.int64), device=dev)
    want = table.copy()
    known = set(map(id, dev.runtime.templates.values()))

    def call(ids):
        i = dmlgpu.tensor(ids, device=dev)
        if kind == "gather":
            return dmlgpu.gather(t, i, mode="raise")
        if kind == "embedding_bag":
            return dmlgpu.embedding_bag(t, i, offsets)
        t[i] = v
        return None

    def ref(ids):
        if kind == "gather":
            return table[ids]
        if kind == "embedding_bag":
            return np.stack([table[ids[:2]].sum(0), table[ids[2:]].sum(0)])
        want[ids] = vals
        return None

    def good():
        return rng.choice(n, 5, replace=False).astype(np.int64)

    for _ in range(2):                  # (traced twice: the template)
        ids = good()
        call(ids)
        ref(ids)
        dev.synchronize()
    checked = [x for x in dev.runtime.templates.values() if isinstance(x, calls.Template) and x.check is not None
               and id(x) not in known]
    if not checked and kind == "embedding_bag" and not segment.splits(t.dtype, "add", dev.runtime):
        pytest.skip("embedding_bag packs its ids after its offsets on this device (no SPLIT kernels): never templated")
    assert len(checked) == 1
    long_way = []
    for name in ("on_device", "fetch", "guard"):
        real = getattr(IndexCheck, name)
        monkeypatch.setattr(IndexCheck, name, lambda *a, _real=real, **k: long_way.append(a) or _real(*a, **k))
    for rounds in range(2):
        results = [(call(ids), ref(ids)) for ids in (good() for _ in range(4))]
        dev.synchronize()
        for got, expect in results:
            if got is not None:
                np.testing.assert_array_equal(got.numpy(), expect)
        np.testing.assert_array_equal(t.numpy(), want)
    assert long_way == [] and sorted(checked[0].slotted)[:4] == [0, 1, 2, 3]
    passes = [d for d in checked[0].slotted[0][1].steps if d.kernel == kernels.check_variant(8)]
    assert len(passes) == {"gather": 1 if one_group else 2, "embedding_bag": 1, "setitem": 1 if one_group else 3}[kind]
    failed = call(np.array([3, 1, n, 2, n + 1], np.int64))
    after_ids = good()
    after, expect_after = call(after_ids), ref(after_ids)
    assert long_way == []
    with pytest.raises(IndexError, match=rf"index {n} at indices position \(2"):
        dev.synchronize()
    if kind == "setitem":
        with pytest.raises(IndexError, match=f"index {n}"):
            t.numpy()               # (the target failed: its reads raise until it is overwritten whole)
        t.write(want)
    else:
        with pytest.raises(IndexError, match=f"index {n}"):
            failed.numpy()
        np.testing.assert_array_equal(after.numpy(), expect_after)
    np.testing.assert_array_equal(t.numpy(), want)


@pytest.fixture
def check_after(request, dev, monkeypatch):
    """index_check.CHECK_AFTER as the test's parameter, the templates' Prepareds made again before and after it."""
    def fresh():
        for x in dev.runtime.templates.values():
            if isinstance(x, calls.Template):
                x.slotted = {}
    monkeypatch.setattr(index_check, "CHECK_AFTER", request.param)
    fresh()
    yield request.param
    fresh()


@pytest.mark.parametrize("check_after", [False, True], indirect=True, ids=["check_before", "check_after"])
@pytest.mark.parametrize("one_group", [True, False])
@pytest.mark.parametrize("kind", ["embedding_bag", "setitem"])
def test_a_templates_check_reports_the_first_bad_index_of_thousands(dev, kind, one_group, check_after, monkeypatch):
    """A call template's own check (IndexCheck.around) reports the first bad index in row-major order wherever it
    lies among thousands (another lane or workgroup, a later step, later bad ones before it in other lanes), and
    the guarded write then changes nothing: index_check.comp's pass 4 (up to index_check.ONE_GROUP indices in one
    workgroup), else, beside embedding_bag's kernel, pass 0 whose last workgroup reports; the device's check of
    embedding_bag's ids before its kernel, or after it where index_check.CHECK_AFTER (beside it either way)."""
    rng = np.random.default_rng(12)
    rows, count = (700, 5000) if one_group else (701, 30_000)
    if not one_group:
        monkeypatch.setattr(index_check, "ONE_GROUP", 0)
    table = rng.integers(-9, 9, (rows, 2)).astype(np.float32)
    t = dmlgpu.tensor(table, device=dev)
    vals = dmlgpu.tensor(rng.integers(-9, 9, (count, 2)).astype(np.float32), device=dev)
    offsets = dmlgpu.tensor(np.arange(0, count, 50, dtype=np.int64), device=dev)

    def call(ids):
        i = dmlgpu.tensor(ids, device=dev)
        if kind == "embedding_bag":
            return dmlgpu.embedding_bag(t, i, offsets)
        t[i] = vals
        return None
    for _ in range(3):                  # (traced twice; then a hit)
        call(rng.integers(0, rows, count).astype(np.int64))
        dev.synchronize()
    t.write(table)
    made = [m for x in dev.runtime.templates.values() if isinstance(x, calls.Template) and x.check is not None
            for m in x.slotted.values()]
    if kind == "embedding_bag":         # (a device without the SPLIT kernels never templates it)
        assert made or not segment.splits(t.dtype, "add", dev.runtime)
    if kind == "embedding_bag" and made:
        steps = made[0][1].steps
        at = [k for k, d in enumerate(steps) if d.kernel.startswith("index_check")]
        assert at == ([len(steps) - 1] if check_after else [0]), [d.kernel for d in steps]
        assert not (steps[-1] if check_after else steps[1]).barrier     # (beside the kernel)
    for first, later in ((2900, (4000, 4999, 3100)), (0, (1, 257)), (4999, ()), (count - 1, ())):
        ids = rng.integers(-rows, rows, count).astype(np.int64)
        ids[first] = rows + 3
        for p in later:
            ids[p] = -rows - 1 - p
        got = call(ids)
        with pytest.raises(IndexError, match=rf"index {rows + 3} at indices position \({first},"):
            dev.synchronize()
        if kind == "setitem":
            with pytest.raises(IndexError):
                t.numpy()
            t.write(table)
        else:
            with pytest.raises(IndexError):
                got.numpy()
    np.testing.assert_array_equal(t.numpy(), table)
    if kind == "embedding_bag":         # a bad call between good ones queued together: each check reports its own
        ids = [rng.integers(0, rows, count).astype(np.int64) for _ in range(3)]
        ids[1][count // 3] = rows
        got = [call(i) for i in ids]
        with pytest.raises(IndexError, match=rf"index {rows} at indices position \({count // 3},"):
            dev.synchronize()
        for k in (0, 2):
            want = np.add.reduceat(table[ids[k]], np.arange(0, count, 50), axis=0)
            np.testing.assert_array_equal(got[k].numpy(), want)
        with pytest.raises(IndexError):
            got[1].numpy()
