"""Queued eager calls (calls on device Tensors return at once and are submitted in batches) and the
per-device cache of planned calls (a repeated call skips validation and planning)."""
import sys

import numpy as np
import pytest

import dmlgpu
from dmlgpu.api import execution, functions
from dmlgpu import reference
from strategies import run_in_threads


@pytest.fixture(scope="module", params=["direct", "staged"])
def dev(request, memory_device):
    """A device that moves bytes directly (unified memory) or through staging (as discrete GPUs do)."""
    d = memory_device(request.param == "direct")
    yield d
    d.close()


def _chain_reference(perm: np.ndarray, start: np.ndarray, n: int) -> np.ndarray:
    x = start
    for _ in range(n):
        x = perm[x]
    return x


def _chain_start(dev, seed: int):
    """(a permutation of 5000, 300 start values, both as Tensors of ``dev``), synchronized: a chain of
    dependent gathers x = perm[x] starts from here."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(5000).astype(np.int64)
    start = rng.integers(0, 5000, 300)
    p, x = dmlgpu.tensor(perm, device=dev), dmlgpu.tensor(start, device=dev)
    dev.synchronize()
    return perm, start, p, x


# ---- queueing ----

def test_dependent_calls_share_submissions(dev, monkeypatch):
    monkeypatch.setattr(dev.runtime, "eager_submit", False)       # batches collect max_queued calls (the default)
    perm, start, p, x = _chain_start(dev, 1)
    before = dev.runtime.submitter.submissions
    for _ in range(200):
        x = dmlgpu.gather(p, x)         # each output is freed by the next call: blocks are reused in the batch
    assert dev.runtime.submitter.submissions - before == 200 // dev.max_queued
    assert np.array_equal(x.numpy(), _chain_reference(perm, start, 200))
    assert dev.runtime.submitter.submissions - before == 200 // dev.max_queued + 1   # numpy() submitted the rest


def test_eager_submission_starts_the_first_call_and_batches_the_next(dev, monkeypatch):
    """With eager_submit (an opt-in) a call queued while no batch is in flight is submitted at once; the
    calls after it collect as before, and every result is right."""
    monkeypatch.setattr(dev.runtime, "eager_submit", True)
    perm, start, p, x = _chain_start(dev, 2)
    before = dev.runtime.submitter.submissions
    x = dmlgpu.gather(p, x)
    assert dev.runtime.submitter.submissions - before == 1 and dev.runtime.submitter.batch.inflight and not dev.runtime.submitter.batch.queued
    for _ in range(199):
        x = dmlgpu.gather(p, x)
    assert dev.runtime.submitter.submissions - before == 1 + 199 // dev.max_queued
    assert np.array_equal(x.numpy(), _chain_reference(perm, start, 200))
    assert dev.runtime.submitter.submissions - before == 2 + 199 // dev.max_queued
    y = dmlgpu.gather(p, x)                              # nothing in flight again: submitted at once
    assert dev.runtime.submitter.submissions - before == 3 + 199 // dev.max_queued
    assert np.array_equal(y.numpy(), perm[x.numpy()])


def test_max_queued_bounds_a_batch():
    d = dmlgpu.Device(max_queued=3)
    d.runtime.eager_submit = False
    t = dmlgpu.tensor(np.arange(10, dtype=np.int32), device=d)
    d.synchronize()
    before = d.runtime.submitter.submissions
    outs = [dmlgpu.gather(t, t) for _ in range(7)]
    assert d.runtime.submitter.submissions - before == 2
    d.synchronize()
    assert d.runtime.submitter.submissions - before == 3
    d.synchronize()                              # nothing queued: nothing submitted
    assert d.runtime.submitter.submissions - before == 3
    assert all(o.numpy().tolist() == list(range(10)) for o in outs)
    d.close()


def test_a_full_batch_runs_while_the_next_is_recorded(dev):
    """A batch submitted because it is full is left in flight; reading a result of it (or of the open batch)
    waits for the right one; results held across many batches are all right."""
    d = dmlgpu.Device(max_queued=4, direct_memory=dev.direct_memory)
    d.runtime.eager_submit = False
    rng = np.random.default_rng(5)
    perm = rng.permutation(300).astype(np.int32)
    p = dmlgpu.tensor(perm, device=d)
    x = dmlgpu.tensor(np.arange(300, dtype=np.int32), device=d)
    held = []
    for i in range(23):
        x = dmlgpu.gather(p, x)
        held.append(x)
        if i == 4:
            assert d.runtime.submitter.batch.inflight and d.runtime.submitter.batch.queued == 1      # the first four are in flight, the fifth is open
            assert np.array_equal(held[1].numpy(), perm[perm])   # waits for the batch in flight only
            assert d.runtime.submitter.batch.queued == 1 and not d.runtime.submitter.batch.inflight
    want = np.arange(300)
    for got in held:
        want = perm[want]
        assert np.array_equal(got.numpy(), want)
    d.close()


def test_no_queueing_runs_each_call_at_once():
    d = dmlgpu.Device(max_queued=0)
    t = dmlgpu.tensor(np.arange(10, dtype=np.int32), device=d)
    before = d.runtime.submitter.submissions
    dmlgpu.gather(t, t)
    assert d.runtime.submitter.submissions - before == 1 and d.runtime.submitter.batch.queued == 0
    d.close()
    with pytest.raises(ValueError, match="max_queued"):
        dmlgpu.Device(max_queued=-1)


def test_host_write_after_a_queued_read_waits_for_it(dev):
    """Tensor.write() to a buffer that a queued call reads: the call sees the old contents."""
    table = np.arange(60, dtype=np.float32).reshape(20, 3)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.array([4, 5], np.int32), device=dev)
    first = dmlgpu.gather(t, ids)
    ids.write(np.array([7, 8], np.int32))
    second = dmlgpu.gather(t, ids)
    t.write(np.zeros_like(table))
    assert np.array_equal(first.numpy(), table[[4, 5]])
    assert np.array_equal(second.numpy(), table[[7, 8]])


def test_host_reads_see_queued_results(dev):
    table = np.arange(24, dtype=np.int32).reshape(6, 4)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.array([5, 0], np.int64), device=dev)
    out = dmlgpu.gather(t, ids)
    assert np.array_equal(out.buffer.read()[:32].view(np.int32).reshape(2, 4), table[[5, 0]])
    out = dmlgpu.gather(t, ids, axis=0)
    assert np.array_equal(out.numpy(), table[[5, 0]])
    out = dmlgpu.gather(t, ids, axis=0)
    assert out[1].tolist() == table[0].tolist() and out[::-1].numpy().tolist() == table[[0, 5]].tolist()
    assert np.array_equal(dmlgpu.gather(table, [1]), table[[1]])   # a NumPy call after queued ones


def test_numpy_operands_of_queued_calls_are_taken_at_the_call(dev):
    """A NumPy operand of a call returning a Tensor is copied when the call is made: changing the array
    afterwards changes nothing; its scratch block is reused by the next call in the same batch."""
    table = np.arange(3000, dtype=np.float64).reshape(1000, 3)
    t = dmlgpu.tensor(table, device=dev)
    ids = np.zeros(50, np.int64)
    outs, wants = [], []
    for i in range(20):
        ids[:] = np.arange(50) * 7 + i
        outs.append(dmlgpu.gather(t, ids))
        wants.append(table[ids])
    big = np.arange(200_000, dtype=np.int64) % 1000          # 1.6 MB: uploaded outside the batch
    outs.append(dmlgpu.gather(t, big))
    wants.append(table[big])
    big[:] = 0
    for got, want in zip(outs, wants):
        assert np.array_equal(got.numpy(), want)


def test_queued_scatters_and_reductions(dev):
    """Scatters (their claim scratch) and reductions (their sort scratch, freed after each call and reused by
    the next one in the batch) queued back to back."""
    rng = np.random.default_rng(2)
    data = rng.standard_normal((300, 4)).astype(np.float32)
    x = dmlgpu.tensor(data, device=dev)
    want = data.copy()
    for i in range(12):
        idx = rng.integers(0, 300, (500, 1))
        upd = rng.standard_normal((500, 4)).astype(np.float32)
        red = ("none", "add", "max")[i % 3]
        x = dmlgpu.scatter_nd(x, dmlgpu.tensor(idx, device=dev), dmlgpu.tensor(upd, device=dev), reduction=red)
        want = reference.scatter_nd(want, idx, upd, reduction=red)
    assert np.array_equal(x.numpy(), want)


def test_layer1_and_recordings_see_queued_results(dev):
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.array([9, 2, 4], np.int32), device=dev)
    rows = dmlgpu.gather(t, ids)                     # queued
    with dev.record() as rec:                        # reads what the queued call writes
        again = dmlgpu.gather(rows, dmlgpu.tensor(np.array([2, 0], np.int32), device=dev))
        rec.download(again)
    assert np.array_equal(rec.host(again), table[[4, 9]])
    desc = dmlgpu.GatherDesc(dmlgpu.TensorDesc(dmlgpu.DataType.FLOAT32, [1, 1, 3, 4]),
                             dmlgpu.TensorDesc(dmlgpu.DataType.INT32, [1, 1, 1, 1]),
                             dmlgpu.TensorDesc(dmlgpu.DataType.FLOAT32, [1, 1, 1, 4]), axis=2,
                             index_dimensions=1)
    op = dev.compile(desc)
    rows = dmlgpu.gather(t, ids)                     # queued again
    out = dev.buffer(nbytes=16)
    op.execute(input=rows.buffer, indices=dev.buffer(np.array([1], np.int32)), output=out)
    assert np.array_equal(out.read().view(np.float32), table[2])


def test_threads_share_the_queue(dev):
    rng = np.random.default_rng(3)
    perm = rng.permutation(777).astype(np.int32)
    p = dmlgpu.tensor(perm, device=dev)
    errors = []

    def work(seed):
        start = np.random.default_rng(seed).integers(0, 777, 64).astype(np.int32)
        x = dmlgpu.tensor(start, device=dev)
        for _ in range(150):
            x = dmlgpu.gather(p, x)
        if not np.array_equal(x.numpy(), _chain_reference(perm, start, 150)):
            errors.append(seed)

    run_in_threads(work)
    assert errors == []


def test_bad_input_raises_at_the_call_and_queued_work_completes(dev):
    t = dmlgpu.tensor(np.arange(12, dtype=np.int32).reshape(4, 3), device=dev)
    ids = dmlgpu.tensor(np.array([3, 1], np.int32), device=dev)
    out = dmlgpu.gather(t, ids)
    with pytest.raises(IndexError):
        dmlgpu.gather(t, np.array([4]), mode="raise")
    with pytest.raises(ValueError):
        dmlgpu.gather_elements(t, ids)
    assert out.numpy().tolist() == [[9, 10, 11], [3, 4, 5]]


def test_empty_cache_with_queued_calls(dev):
    t = dmlgpu.tensor(np.arange(100, dtype=np.int16), device=dev)
    outs = []
    for i in range(5):
        outs.append(dmlgpu.gather(t, dmlgpu.tensor(np.array([i, 99 - i], np.int32), device=dev)))
        del_me = dmlgpu.gather(t, dmlgpu.tensor(np.array([i], np.int32), device=dev))
        del del_me                                   # a freed block the batch uses, destroyed below
    dev.empty_cache()
    assert [o.numpy().tolist() for o in outs] == [[i, 99 - i] for i in range(5)]


# ---- the cache of planned calls ----

def test_repeated_calls_skip_planning(dev, monkeypatch):
    """The second call of a signature runs none of the validation and planning code: building, folding and
    encoding index maps, making plans, and the argument checks and shape rules of layer 2 (what remains is
    moving the data)."""
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    t = dmlgpu.tensor(table, device=dev)
    ids = dmlgpu.tensor(np.array([[3, 1]], np.int64), device=dev)
    one = dmlgpu.tensor(np.ones(1, np.float32), device=dev)
    two = dmlgpu.tensor(np.ones((1, 2), np.float32), device=dev)
    calls = [lambda: dmlgpu.gather(t, ids, axis=0), lambda: dmlgpu.gather_nd(t, ids),
             lambda: dmlgpu.gather_elements(t, ids, axis=1), lambda: dmlgpu.scatter_nd(t, ids, one),
             lambda: dmlgpu.scatter_elements(t, ids, two, axis=1, reduction="add")]
    planning = {("plan.py", "__init__"), ("plan.py", "make_plan"), ("reduction.py", "__init__"),
                ("reduction.py", "nd"), ("reduction.py", "elements"), ("reduction.py", "check")}
    planning |= {("index_map.py", f) for f in ("packed", "take_map", "elements_map", "nd_map", "copy_map",
                                               "folded", "vectorized", "optimized", "params", "_magic",
                                               "take_shape", "nd_shape")}
    planning |= {("arguments.py", f) for f in ("_axis", "_check_nd", "_check_elements_shapes", "_index_check")}
    planning |= {("execution.py", "_self_copy"), ("driver.py", "build")}
    planning |= {("functions.py", f) for f in ("_gather_rule", "_gather_elements_rule", "_gather_nd_rule",
                                               "_scatter_nd_rule", "_scatter_elements_rule")}
    planning |= {("ops.py", f) for f in ("gather", "gather_elements", "gather_nd", "scatter_nd", "scatter_elements")}
    for call in calls:
        first = call().numpy()
        seen = []

        def profile(frame, event, arg):
            if event == "call":
                code = frame.f_code
                seen.append((code.co_filename.rsplit("/", 1)[-1], code.co_name))

        sys.setprofile(profile)
        try:
            second = call()
        finally:
            sys.setprofile(None)
        assert np.array_equal(second.numpy(), first)
        assert not planning & set(seen), seen


def test_signatures_never_share_a_plan(dev):
    """Calls that differ in any part of the signature (shape, dtype, axis, mode, reduction), interleaved,
    each get their own plan and the right result."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 100, (6, 5)).astype(np.int32)
    cases = [
        lambda: (dmlgpu.gather(a, [1, 2]), np.take(a, [1, 2], 0)),
        lambda: (dmlgpu.gather(a, [1, 2], axis=1), np.take(a, [1, 2], 1)),
        lambda: (dmlgpu.gather(a, [1, 2], axis=-1), np.take(a, [1, 2], -1)),
        lambda: (dmlgpu.gather(a, [1, 2, 3]), np.take(a, [1, 2, 3], 0)),
        lambda: (dmlgpu.gather(a, np.array([1, 2], np.uint32)), np.take(a, [1, 2], 0)),
        lambda: (dmlgpu.gather(a.astype(np.int64), [1, 2]), np.take(a.astype(np.int64), [1, 2], 0)),
        lambda: (dmlgpu.gather(a.T.copy(), [1, 2]), np.take(a.T, [1, 2], 0)),
        lambda: (dmlgpu.gather(a, [-1, 2], mode="raise"), np.take(a, [-1, 2], 0)),
        lambda: (dmlgpu.scatter_elements(a, np.zeros((1, 5), np.int64), np.ones((1, 5), np.int32)),
                 reference.scatter_elements(a, np.zeros((1, 5), np.int64), np.ones((1, 5), np.int32))),
        lambda: (dmlgpu.scatter_elements(a, np.zeros((1, 5), np.int64), np.ones((1, 5), np.int32), reduction="add"),
                 reference.scatter_elements(a, np.zeros((1, 5), np.int64), np.ones((1, 5), np.int32),
                                                   reduction="add")),
    ]
    for _ in range(2):
        for case in cases:
            got, want = case()
            assert got.dtype == want.dtype and np.array_equal(got, want)


def test_cached_signatures_still_check_values_and_arguments(dev):
    a = np.arange(10, dtype=np.int32)
    assert dmlgpu.gather(a, [3], mode="raise", device=dev).tolist() == [3]
    with pytest.raises(IndexError, match="index 10"):
        dmlgpu.gather(a, [10], mode="raise", device=dev)      # same signature, a bad value
    assert dmlgpu.gather(a, [2], axis=0, device=dev).tolist() == [2]
    with pytest.raises(TypeError):
        dmlgpu.gather(a, [2], axis=True, device=dev)          # equal to 1 as a key, but not an axis
    with pytest.raises(ValueError):
        dmlgpu.gather(a, [2], mode="wrap", device=dev)


def test_the_cache_is_bounded(dev, monkeypatch):
    monkeypatch.setattr(execution, "CALL_CACHE", 8)
    a = np.arange(100, dtype=np.int8)
    for n in range(1, 30):
        assert dmlgpu.gather(a, np.arange(n), device=dev).tolist() == list(range(n))
    assert len(dev.runtime._calls) <= 8


def test_small_numpy_calls_keep_their_buffers(dev, monkeypatch):
    """A small NumPy-in/out call keeps its device buffers for the next call of its signature (which then
    allocates nothing and submits the recorded command buffer again); new values go through them."""
    a = np.arange(200, dtype=np.float32).reshape(50, 4)
    dmlgpu.gather(a, [1, 2], device=dev)
    allocations = dev.memory_stats()["device_allocations"]
    replays = dict(dev.runtime.submitter.replays)
    for i in range(20):
        ids = np.array([i, 49 - i])
        assert np.array_equal(dmlgpu.gather(a * i, ids, device=dev), (a * i)[ids])
    assert dev.memory_stats()["device_allocations"] == allocations
    assert any(dev.runtime.submitter.replays.get(k) is v for k, v in replays.items())
    dev.empty_cache()
    f, i, sel = np.ones((6, 4), np.float32), np.ones((6, 4), np.int32), np.array([1])
    dmlgpu.gather(f, sel, device=dev), dmlgpu.gather(i, sel, device=dev)
    assert execution._planned(dev.runtime, "gather", (f, sel), (0, "clamp"), None).plan is \
        execution._planned(dev.runtime, "gather", (i, sel), (0, "clamp"), None).plan     # equal plans ...
    assert len(dev.runtime._kept) == 2                                                    # ... two signatures
    monkeypatch.setattr(execution, "KEEP_CALLS", 2)
    for n in range(3, 8):
        assert np.array_equal(dmlgpu.gather(a, np.arange(n), device=dev), a[:n])
    assert len(dev.runtime._kept) <= 2
    dev.empty_cache()
    assert not dev.runtime._kept


def test_small_tensors_are_uploaded_in_order_without_waiting(dev):
    """dmlgpu.tensor() of a small array queues its upload (or writes a block no batch uses): no submission
    of its own, the copy taken at once, its bytes after the work queued before it (a freed Tensor's block,
    reused while a queued call still reads it, keeps its old bytes for that call), zeros after odd sizes."""
    rng = np.random.default_rng(11)
    table = rng.integers(-1000, 1000, (64, 8)).astype(np.int32)
    t = dmlgpu.tensor(table, device=dev)
    dev.synchronize()
    submissions = dev.runtime.submitter.submissions
    results, wanted = [], []
    for step in range(40):
        ids = rng.integers(0, 64, 5).astype(np.int64)
        host = ids.copy()
        idx = dmlgpu.tensor(host, device=dev)
        host[:] = 0                                    # the Tensor holds the bytes of the call's time
        results.append(dmlgpu.gather(t, idx))
        wanted.append(table[ids])
        del idx                                        # its block serves the next step's indices
    assert dev.runtime.submitter.submissions - submissions <= 40 // dev.max_queued + 1
    for got, want in zip(results, wanted):
        np.testing.assert_array_equal(got.numpy(), want)
    odd = dmlgpu.tensor(np.array([1, 2, 3], np.uint8), device=dev)
    np.testing.assert_array_equal(odd.buffer.read(), [1, 2, 3, 0])
    np.testing.assert_array_equal(odd.numpy(), [1, 2, 3])
    with dev.record() as rec:                          # inside a recording: uploaded at once, as before
        inside = dmlgpu.tensor(np.array([7, 8], np.int64), device=dev)
        r = dmlgpu.gather(t, inside)
        rec.download(r)
    np.testing.assert_array_equal(rec.host(r), table[[7, 8]])
    np.testing.assert_array_equal(inside.numpy(), [7, 8])


def test_small_writes_are_queued_after_the_calls_before_them(dev):
    """Tensor.write of a small array while queued calls read the Tensor: they see its old bytes, later calls
    and reads the new ones, with no submission of its own; a write at an offset (a view) too."""
    rng = np.random.default_rng(12)
    table = dmlgpu.tensor(np.arange(64 * 4, dtype=np.float32).reshape(64, 4), device=dev)
    idx = dmlgpu.tensor(np.zeros(6, np.int64), device=dev)
    dev.synchronize()
    submissions = dev.runtime.submitter.submissions
    results, wanted = [], []
    for step in range(20):
        ids = rng.integers(0, 64, 6).astype(np.int64)
        idx.write(ids)
        results.append(dmlgpu.gather(table, idx))
        wanted.append(np.arange(64 * 4, dtype=np.float32).reshape(64, 4)[ids])
    idx[2:4] = np.array([63, 0], np.int64)          # a view's write: at its byte offset
    last = dmlgpu.gather(table, idx)
    assert dev.runtime.submitter.submissions - submissions <= 21 // dev.max_queued + 1
    for got, want in zip(results, wanted):
        np.testing.assert_array_equal(got.numpy(), want)
    ids[2:4] = [63, 0]
    np.testing.assert_array_equal(idx.numpy(), ids)
    np.testing.assert_array_equal(last.numpy()[:, 0], ids * 4)


def test_fills_queue_in_order(dev):
    """zeros(), full() and Device.buffer(nbytes=) fill on the device in order with the queued work, without a
    submission of their own (eager submission off); inside a recording they run at once, as before."""
    dev.synchronize()
    submissions, eager = dev.runtime.submitter.submissions, dev.runtime.eager_submit
    dev.runtime.eager_submit = False
    try:
        z = dmlgpu.zeros((5, 3), np.int32, device=dev)
        f = dmlgpu.full((4,), 7, np.int16, device=dev)
        b = dev.buffer(nbytes=12)
        g = dmlgpu.gather(f, dmlgpu.tensor(np.array([3, 0], np.int64), device=dev))
        out = dmlgpu.scatter_nd(z, dmlgpu.tensor(np.array([[1]], np.int64), device=dev),
                                dmlgpu.tensor(np.full((1, 3), 9, np.int32), device=dev))
        assert dev.runtime.submitter.submissions == submissions
    finally:
        dev.runtime.eager_submit = eager
    np.testing.assert_array_equal(out.numpy(), np.array([[0] * 3, [9] * 3, [0] * 3, [0] * 3, [0] * 3]))
    np.testing.assert_array_equal(g.numpy(), [7, 7])
    np.testing.assert_array_equal(b.read(), np.zeros(12, np.uint8))
    np.testing.assert_array_equal(z.numpy(), np.zeros((5, 3), np.int32))
    with dev.record() as rec:
        inside = dmlgpu.zeros((2,), np.float32, device=dev)
        rec.download(inside)
    np.testing.assert_array_equal(rec.host(inside), [0, 0])
