"""Issue 49, items 1-3: a failed device check's data never travels, and its error reaches only what it concerns.

A call whose mode="raise" check of Tensor indices is made on the device returns before the check is reported.
Everything a later queued call writes from its data (results, ``out=`` and in-place targets, transitively:
copies, views, gathers of it, recordings' replays, ONNX values) fails with the check: every read raises the
original IndexError, every time, until the Tensor is overwritten whole by a call that reads nothing failed; a
call that reads a failed Tensor raises it before any GPU work. Tensors that nothing failed reached read right,
on any thread; synchronize() raises each unreported failure once (plans/index_check.py says what a caller
sees)."""
import gc
import re
import threading

import numpy as np
import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import dmlgpu

TABLE = np.arange(40, dtype=np.float32).reshape(10, 4)
BAD = r"^take: index 10 at indices position \(1,\) is out of range for a dimension of size 10"


def _reads(t):
    """Every way to read a Tensor's data on the host."""
    return [t.numpy, t.tolist, lambda: t.item(0), lambda: np.asarray(t), lambda: np.array(t)]


def assert_failed(t, pattern=BAD, times=2):
    """Every read of ``t`` raises the IndexError matching ``pattern``, every time."""
    for _ in range(times):
        for read in _reads(t):
            with pytest.raises(IndexError, match=pattern):
                read()


@pytest.fixture
def dev():
    dev = dmlgpu.default_device()
    try:
        dev.synchronize()
    except IndexError:
        pass
    yield dev
    try:
        dev.synchronize()
    except IndexError:
        pass


def _failed_rows(table=None):
    """The issue's failed call: rows 2 and 10 of a 10-row table (10 is out of range), queued."""
    table = dmlgpu.tensor(TABLE) if table is None else table
    return dmlgpu.take(table, dmlgpu.tensor(np.array([2, 10])), axis=0)


def test_the_issue_snippet_every_read_raises(dev):
    cache = dmlgpu.zeros((16, 4), np.float32)
    table = dmlgpu.tensor(TABLE)
    other = dmlgpu.tensor(np.arange(8, dtype=np.int32))
    rows = _failed_rows(table)
    dmlgpu.scatter_nd(cache, np.array([[0], [1]]), rows, out=cache)      # queued, returns
    np.testing.assert_array_equal(other.numpy(), np.arange(8))           # unreached: reads right
    assert_failed(cache)
    assert_failed(rows)
    for view in (cache[0], cache[5], cache.T, cache.reshape(-1), cache[2:4], cache.view(np.int32)):
        assert_failed(view, times=1)                                     # a view shares its base's state
    np.testing.assert_array_equal(table.numpy(), TABLE)                   # read, never written: right
    dev.synchronize()       # the reads raised the failure: synchronize() has nothing more to raise


def test_copies_gathers_and_targets_of_a_failed_result(dev):
    rows = _failed_rows()
    ids = dmlgpu.tensor(np.array([1, 0, 1]))
    out = dmlgpu.full((3, 4), 7.0, np.float32)
    inplace = dmlgpu.zeros((4, 4), np.float32)
    reached = [
        rows.copy(), dmlgpu.tensor(rows), rows[1:].copy(), rows.T.copy(),
        dmlgpu.take(rows, ids, axis=0),                                       # a gather of it (planned)
        dmlgpu.take(dmlgpu.take(rows, ids, axis=0), ids, axis=0),              # ... of a gather of it
        dmlgpu.take(out, ids, axis=0, mode="clip"),                            # (out not yet reached)
        dmlgpu.take(rows, ids, axis=0, out=out),                               # an out= target
        dmlgpu.scatter_nd(inplace, dmlgpu.tensor(np.array([[3], [0]])), rows, out=inplace),   # in place
        dmlgpu.scatter_nd(dmlgpu.zeros((4, 4), np.float32), np.array([[3]]), rows[:1]),     # new result
    ]
    put = dmlgpu.zeros((2, 4), np.float32)
    dmlgpu.put_along_axis(put, dmlgpu.tensor(np.zeros((2, 1), np.int64)), rows[:, :1], axis=1)
    reached.append(put)
    for _ in range(3):      # a repeated signature runs from its call template
        reached.append(dmlgpu.take(rows, ids, axis=0))
    clean = reached.pop(6)
    for t in reached:
        assert_failed(t, times=1)
    np.testing.assert_array_equal(clean.numpy(), np.full((3, 4), 7.0))
    dev.synchronize()


def test_a_call_reading_a_failed_tensor_raises_before_any_gpu_work(dev):
    rows = _failed_rows()
    with pytest.raises(IndexError, match=BAD):
        rows.numpy()
    target = dmlgpu.full((2, 4), 3.0, np.float32)
    ids = dmlgpu.tensor(np.array([0, 1]))
    for call in (lambda: dmlgpu.take(rows, ids, axis=0, out=target), lambda: rows.copy(),
                 lambda: target.write(rows),
                 lambda: dmlgpu.scatter_nd(target, np.array([[0]]), rows[:1], out=target),
                 lambda: dmlgpu.gather_nd(rows, dmlgpu.tensor(np.array([[1]])))):
        for _ in range(2):
            with pytest.raises(IndexError, match=BAD):     # the original error, naming the original call
                call()
    np.testing.assert_array_equal(target.numpy(), np.full((2, 4), 3.0))     # unchanged
    dev.synchronize()


def test_whole_overwrites_clear_and_partial_ones_do_not(dev):
    def failed():
        t = dmlgpu.zeros((2, 4), np.float32)
        dmlgpu.take(dmlgpu.tensor(TABLE), dmlgpu.tensor(np.array([2, 10])), axis=0, out=t)
        return t

    t = failed()
    t[0] = 1.0                        # part of it: still failed
    t[1:].write(np.ones((1, 4)))
    assert_failed(t, times=1)
    assert_failed(t[0], times=1)
    ones = np.ones((2, 4), np.float32)
    for overwrite in (lambda t: t.write(ones), lambda t: t.__setitem__(Ellipsis, 1.0),
                      lambda t: t.__setitem__(slice(None), ones), lambda t: t.T.write(ones.T),
                      lambda t: t.reshape(-1).write(np.ones(8)), lambda t: t.write(dmlgpu.tensor(ones)),
                      lambda t: dmlgpu.take(dmlgpu.tensor(np.ones((3, 4), np.float32)),
                                            dmlgpu.tensor(np.array([0, 2])), axis=0, out=t)):
        t = failed()
        overwrite(t)
        for read in _reads(t):
            np.testing.assert_array_equal(np.asarray(read()).reshape(-1)[:1], [1.0])
        np.testing.assert_array_equal(t.numpy(), ones)
    # an overwrite that reads a failed Tensor does not clear
    t = failed()
    with pytest.raises(IndexError, match=BAD):
        t.numpy()
    with pytest.raises(IndexError, match=BAD):
        t.write(_failed_rows_reported())
    assert_failed(t, times=1)
    # the failures that no read raised (overwritten before one): synchronize() lists them, once
    with pytest.raises(IndexError, match=r"^7 of this device's checks failed: take: index 10 "):
        dev.synchronize()
    dev.synchronize()


def _failed_rows_reported():
    rows = _failed_rows()
    with pytest.raises(IndexError):
        rows.numpy()
    return rows


def test_an_overwrite_queued_before_the_report_clears_and_an_unrelated_read_waits_for_nothing(dev):
    """A whole overwrite queued while the failed call's check is still awaiting its report: the Tensor holds
    the new data, and the report fails only what still holds the failed data."""
    cache = dmlgpu.zeros((4, 4), np.float32)
    kept = dmlgpu.zeros((4, 4), np.float32)
    rows = _failed_rows()
    dmlgpu.scatter_nd(cache, np.array([[0], [1]]), rows, out=cache)
    dmlgpu.scatter_nd(kept, np.array([[2], [3]]), rows, out=kept)
    cache.write(np.full((4, 4), 5, np.float32))       # whole: before the report
    np.testing.assert_array_equal(cache.numpy(), np.full((4, 4), 5))
    assert_failed(kept)
    dev.synchronize()


def test_synchronize_raises_every_unreported_failure_once(dev):
    table = dmlgpu.tensor(TABLE)
    first = dmlgpu.take(table, dmlgpu.tensor(np.array([0, 11])), axis=0)
    second = dmlgpu.take(table, dmlgpu.tensor(np.array([-12])), axis=0)
    good = dmlgpu.take(table, dmlgpu.tensor(np.array([3])), axis=0)
    np.testing.assert_array_equal(good.numpy(), TABLE[[3]])        # unrelated: reads right, raises nothing
    with pytest.raises(IndexError, match=r"^2 of this device's checks failed: take: index 11 .*; take: index -12"):
        dev.synchronize()
    dev.synchronize()                                               # once
    assert_failed(first, r"^take: index 11 at indices position \(1,\)", times=1)    # reads: every time
    assert_failed(second, r"^take: index -12 at indices position \(0,\)", times=1)
    third = _failed_rows()
    with pytest.raises(IndexError, match=BAD):
        third.numpy()               # raised by a read: synchronize() does not raise it again
    dev.synchronize()
    dmlgpu.take(table, dmlgpu.tensor(np.array([10])), axis=0)       # a dropped result: synchronize() tells
    with pytest.raises(IndexError, match=r"^take: index 10 at indices position \(0,\)"):
        dev.synchronize()


def test_a_freed_failed_buffer_carries_nothing_to_its_block_next_user(dev):
    for _ in range(3):
        rows = _failed_rows()
        with pytest.raises(IndexError):
            rows.numpy()
        del rows
        gc.collect()
        fresh = dmlgpu.empty((2, 4), np.float32)
        fresh.write(np.ones((2, 4)))
        np.testing.assert_array_equal(fresh.numpy(), np.ones((2, 4)))
        np.testing.assert_array_equal(_ok_rows().numpy(), TABLE[[2, 9]])


def _ok_rows():
    return dmlgpu.take(dmlgpu.tensor(TABLE), dmlgpu.tensor(np.array([2, 9])), axis=0)


def test_a_raised_failure_keeps_nothing_of_the_reader_alive(dev):
    """The failure a Tensor keeps is raised as a copy: no traceback of a reader's frame (holding its Tensors)
    stays with the failed Tensor."""
    import weakref
    rows = _failed_rows()

    def reader():
        local = dmlgpu.zeros((64, 64), np.float32)
        for _ in range(2):
            try:
                rows.numpy()
            except IndexError:
                pass
        return weakref.ref(local.buffer)

    held = reader()
    gc.collect()
    assert held() is None
    with pytest.raises(IndexError, match=BAD):
        rows.numpy()


def test_a_layer1_read_of_a_failed_buffer_raises(dev):
    rows = _failed_rows()
    for _ in range(2):
        with pytest.raises(IndexError, match=BAD):
            rows.buffer.read()
    dev.synchronize()


def test_a_recording_replayed_after_a_failure(dev):
    src = dmlgpu.tensor(TABLE)
    ids = dmlgpu.tensor(np.array([1, 9]))
    with dev.record() as rec:
        out = dmlgpu.take(src, ids, axis=0, mode="clip")
        copied = out.copy()
        rec.download(out)
    np.testing.assert_array_equal(rec.host(out), TABLE[[1, 9]])
    # src reached by a failed call (pending: its report comes at the replay)
    reversed_bad = np.arange(9, -1, -1) + (np.arange(10) == 3) * 30       # position 3: 36
    dmlgpu.take(dmlgpu.tensor(TABLE), dmlgpu.tensor(reversed_bad), axis=0, out=src)
    for _ in range(2):
        with pytest.raises(IndexError, match=r"^take: index 36 at indices position \(3,\)"):
            rec.run()
    np.testing.assert_array_equal(out.numpy(), TABLE[[1, 9]])        # the replay never ran: out is unreached
    np.testing.assert_array_equal(copied.numpy(), TABLE[[1, 9]])
    src.write(TABLE[::-1])                                            # overwritten whole: the replays run again
    rec.run()
    np.testing.assert_array_equal(rec.host(out), TABLE[::-1][[1, 9]])
    np.testing.assert_array_equal(copied.numpy(), TABLE[::-1][[1, 9]])
    # a recording that overwrites a failed Tensor whole before it reads it runs
    dst = dmlgpu.zeros((2, 4), np.float32)
    with dev.record() as rec2:
        dmlgpu.take(src, ids, axis=0, mode="clip", out=dst)
        again = dst.copy()
    dmlgpu.take(dmlgpu.tensor(TABLE), dmlgpu.tensor(np.array([0, 10])), axis=0, out=dst)
    with pytest.raises(IndexError):
        dst.numpy()
    rec2.run()
    np.testing.assert_array_equal(dst.numpy(), TABLE[::-1][[1, 9]])
    np.testing.assert_array_equal(again.numpy(), TABLE[::-1][[1, 9]])
    # a host write in a recording's block runs then, not on each run: a run does not clear what it wrote
    held = dmlgpu.zeros((2, 4), np.float32)
    with dev.record() as rec3:
        held.write(np.ones((2, 4)))
        dmlgpu.take(src, ids, axis=0, mode="clip")
    dmlgpu.take(dmlgpu.tensor(TABLE), dmlgpu.tensor(np.array([0, 10])), axis=0, out=held)
    rec3.run()
    assert_failed(held, r"^take: index 10 at indices position \(1,\)", times=1)
    dev.synchronize()


def _onnx_model():
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0, name="embed"),
             helper.make_node("ScatterND", ["cache", "pos", "rows"], ["out"], name="store")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("table", TensorProto.FLOAT, [10, 4]),
                                           helper.make_tensor_value_info("ids", TensorProto.INT64, [2]),
                                           helper.make_tensor_value_info("cache", TensorProto.FLOAT, [16, 4]),
                                           helper.make_tensor_value_info("pos", TensorProto.INT64, [2, 1])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [16, 4]),
                               helper.make_tensor_value_info("rows", TensorProto.FLOAT, [2, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("tensors", ["ids", "all"])
def test_onnx_gather_into_scatter_nd(dev, tensors):
    pytest.importorskip("onnx")
    import dmlgpu.onnx as backend
    rep = backend.prepare(_onnx_model())
    cache = np.zeros((16, 4), np.float32)
    pos = np.array([[0], [1]])
    message = r"^Gather node 'embed': index 10 at indices position \(1,\) is out of range"

    def feeds(ids):
        f = {"table": TABLE, "ids": dmlgpu.tensor(ids), "cache": cache, "pos": pos}
        return {k: dmlgpu.tensor(v) for k, v in f.items()} if tensors == "all" else f

    for _ in range(2):
        outputs = rep.run(feeds(np.array([2, 10])))
        for t in outputs:                   # the ScatterND's output and the Gather's: every read raises
            assert_failed(t, message, times=2)
    good = rep.run(feeds(np.array([2, 9])))
    want = cache.copy()
    want[:2] = TABLE[[2, 9]]
    np.testing.assert_array_equal(good["out"].numpy(), want)
    np.testing.assert_array_equal(good["rows"].numpy(), TABLE[[2, 9]])
    dev.synchronize()


def test_onnx_with_host_outputs_raises_at_run_every_time(dev):
    """A graph whose values stay on the device between its nodes (two device operators, NumPy inputs): a bad
    index that only the device sees (an index computed on the device: a Gather of the indices) raises at run()
    every time; NumPy outputs never hold the clamped data."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    import dmlgpu.onnx as backend
    nodes = [helper.make_node("Gather", ["idtable", "which"], ["ids"], axis=0, name="pick"),
             helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0, name="embed")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("idtable", TensorProto.INT64, [3]),
                                           helper.make_tensor_value_info("which", TensorProto.INT64, [2]),
                                           helper.make_tensor_value_info("table", TensorProto.FLOAT, [10, 4])],
                              [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [2, 4])])
    rep = backend.prepare(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    feeds = [np.array([1, 10, 3]), np.array([0, 1]), TABLE]
    for _ in range(3):
        with pytest.raises(IndexError, match=r"^Gather node 'embed': index 10 at indices position \(1,\)"):
            rep.run(feeds)
    np.testing.assert_array_equal(rep.run([np.array([1, 9, 3]), np.array([0, 1]), TABLE])[0], TABLE[[1, 9]])
    dev.synchronize()


def test_two_threads_one_bad_request_one_good(dev):
    """A server's requests on two threads share the device's queue: the bad one's reads raise its error every
    time, the good one's never raise and read right."""
    table = dmlgpu.tensor(TABLE)
    errors: list = []
    barrier = threading.Barrier(2)

    def bad():
        try:
            barrier.wait()
            for _ in range(30):
                reached = []
                try:        # (a call reading rows raises once the other thread's read made the report)
                    rows = dmlgpu.take(table, dmlgpu.tensor(np.array([2, 10])), axis=0)
                    reached.append(rows)
                    cache = dmlgpu.zeros((4, 4), np.float32)
                    dmlgpu.scatter_nd(cache, dmlgpu.tensor(np.array([[0], [3]])), rows, out=cache)
                    reached.append(cache)
                    reached.append(rows.copy())
                except IndexError as e:
                    if not re.match(BAD, str(e)):
                        errors.append(f"bad: {e}")
                for t in reached:
                    for _ in range(2):
                        try:
                            t.numpy()
                        except IndexError as e:
                            if not re.match(BAD, str(e)):
                                errors.append(f"bad: {e}")
                        else:
                            errors.append("bad: a read returned data")
        except BaseException as e:      # noqa: BLE001 (reported below)
            errors.append(f"bad: {e!r}")

    def good():
        try:
            barrier.wait()
            for i in range(30):
                ids = np.array([i % 10, 9 - i % 10])
                rows = dmlgpu.take(table, dmlgpu.tensor(ids), axis=0)
                cache = dmlgpu.zeros((4, 4), np.float32)
                dmlgpu.scatter_nd(cache, dmlgpu.tensor(np.array([[0], [3]])), rows, out=cache)
                want = np.zeros((4, 4), np.float32)
                want[[0, 3]] = TABLE[ids]
                if not (np.array_equal(cache.numpy(), want) and np.array_equal(rows.copy().numpy(), TABLE[ids])):
                    errors.append("good: wrong data")
        except BaseException as e:      # noqa: BLE001
            errors.append(f"good: {e!r}")

    threads = [threading.Thread(target=bad), threading.Thread(target=good)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    dev.synchronize()       # (the bad thread read each of its failures)


# ---- a stateful fuzz: bad Tensor indices mixed into queued chains; no read returns a failed call's data ----
N, C = 6, 3        # every tensor of the fuzz is (N, C) float32: any is a table, an out= target, a cache


class Poison(RuleBasedStateMachine):
    """Tensors with NumPy mirrors and, for each, the messages of the failed checks that reached it (empty:
    clean). Reads of a reached Tensor must raise one of its messages; reads of a clean one must equal its
    mirror. A call reading a reached Tensor may raise one of its messages (its failure already reported) and
    then changes nothing, or queue (then what it writes is reached)."""

    def __init__(self):
        super().__init__()
        self.dev = dmlgpu.default_device()
        self.items: list = []          # [Tensor, mirror, frozenset of messages]
        self.rng = np.random.default_rng(0)

    def _pick(self, i):
        return self.items[i % len(self.items)]

    def _ids(self, bad, n=N):
        ids = self.rng.integers(-N, N, n)
        if bad:
            ids[self.rng.integers(0, n)] = self.rng.choice([N, N + 3, -N - 1, -N - 5])
        return ids

    def _call(self, call, reads):
        """``call()`` (queued) reading the items ``reads``: (result or None, raised)."""
        poison = frozenset().union(*(r[2] for r in reads))
        try:
            return call(), False
        except IndexError as e:
            assert poison and str(e) in poison, f"unexpected {e}"
            return None, True

    @initialize(seed=st.integers(0, 2**32 - 1))
    def start(self, seed):
        self.rng = np.random.default_rng(seed)
        for _ in range(2):
            self.new()

    @rule()
    def new(self):
        mirror = self.rng.integers(-50, 50, (N, C)).astype(np.float32)
        self.items.append([dmlgpu.tensor(mirror, device=self.dev), mirror, frozenset()])

    @rule(i=st.integers(0, 99), bad=st.booleans(), out=st.one_of(st.none(), st.integers(0, 99)))
    def take(self, i, bad, out):
        src = self._pick(i)
        ids = self._ids(bad)
        target = None if out is None else self._pick(out)
        if target is not None and target[0] is src[0]:
            target = None
        msg = None
        if bad:
            with pytest.raises(IndexError) as e:
                dmlgpu.take(src[1], ids, axis=0)
            msg = str(e.value)
        result, raised = self._call(lambda: dmlgpu.take(src[0], dmlgpu.tensor(ids), axis=0,
                                                        out=None if target is None else target[0]), [src])
        if raised:
            return
        value = src[1][ids] if not bad else np.zeros((N, C), np.float32)    # (bad: never read)
        poison = src[2] | ({msg} if bad else set())
        if target is None:
            self.items.append([result, value, frozenset(poison)])
        else:                                       # out= covers it whole: its old state is gone
            target[1], target[2] = value, frozenset(poison)

    @rule(i=st.integers(0, 99), bad=st.booleans(), out=st.integers(0, 99), at=st.integers(0, N - 2))
    def take_into_part(self, i, bad, out, at):
        """A gather of two rows into rows ``at``, ``at + 1`` of another Tensor (an out= view at an offset)."""
        src, target = self._pick(i), self._pick(out)
        if target[0] is src[0]:
            return
        ids = self._ids(bad, 2)
        msg = None
        if bad:
            with pytest.raises(IndexError) as e:
                dmlgpu.take(src[1], ids, axis=0)
            msg = str(e.value)
        _, raised = self._call(lambda: dmlgpu.take(src[0], dmlgpu.tensor(ids), axis=0, out=target[0][at:at + 2]),
                               [src, target])
        if raised:
            return
        target[1] = target[1].copy()
        target[1][at:at + 2] = src[1][ids] if not bad else 0
        target[2] = target[2] | src[2] | ({msg} if bad else set())     # a part of it: its old failures stay

    @rule(i=st.integers(0, 99), j=st.integers(0, 99), bad=st.booleans(), rows=st.integers(1, N))
    def scatter_new(self, i, j, bad, rows):
        """scatter_nd of rows of one Tensor into a copy of another (a new result), its Tensor indices checked on
        the device."""
        data, upd = self._pick(i), self._pick(j)
        pos = self.rng.permutation(N)[:rows].reshape(-1, 1)
        if bad:
            pos[self.rng.integers(0, rows), 0] = self.rng.choice([N, -N - 2])
        msg = None
        if bad:
            with pytest.raises(IndexError) as e:
                dmlgpu.scatter_nd(data[1], pos, upd[1][:rows], mode="raise")
            msg = str(e.value)
        result, raised = self._call(lambda: dmlgpu.scatter_nd(data[0], dmlgpu.tensor(pos), upd[0][:rows],
                                                              mode="raise"), [data, upd])
        if raised:
            return
        value = data[1].copy()
        if not bad:
            value[pos[:, 0]] = upd[1][:rows]
        self.items.append([result, value, data[2] | upd[2] | ({msg} if bad else set())])

    @rule(i=st.integers(0, 99), j=st.integers(0, 99), rows=st.integers(1, N))
    def scatter_in_place(self, i, j, rows):
        cache, src = self._pick(i), self._pick(j)
        if cache[0] is src[0]:
            return
        pos = self.rng.permutation(N)[:rows].reshape(-1, 1)
        _, raised = self._call(lambda: dmlgpu.scatter_nd(cache[0], dmlgpu.tensor(pos), src[0][:rows], out=cache[0]),
                               [cache, src])
        if raised:
            return
        cache[1] = cache[1].copy()
        cache[1][pos[:, 0]] = src[1][:rows]
        cache[2] = cache[2] | src[2]                # a part of it: its old failures stay

    @rule(i=st.integers(0, 99), how=st.sampled_from(["copy", "tensor", "view", "strided"]))
    def copy(self, i, how):
        src = self._pick(i)
        make = {"copy": lambda t: t.copy(), "tensor": dmlgpu.tensor, "view": lambda t: t[1:].copy(),
                "strided": lambda t: t.T.copy().T}[how]
        result, raised = self._call(lambda: make(src[0]), [src])
        if not raised:
            value = src[1][1:] if how == "view" else src[1]
            if how == "view":
                return          # (another shape: read it once, then drop it)
            self.items.append([result, value.copy(), src[2]])

    @rule(i=st.integers(0, 99), whole=st.booleans())
    def overwrite(self, i, whole):
        item = self._pick(i)
        values = self.rng.integers(-50, 50, (N, C)).astype(np.float32)
        if whole:
            item[0][...] = values
            item[1], item[2] = values, frozenset()
        else:
            item[0][0] = values[0]
            item[1] = item[1].copy()
            item[1][0] = values[0]

    @rule(i=st.integers(0, 99), how=st.sampled_from(["numpy", "tolist", "item", "asarray", "view"]))
    def read(self, i, how):
        t, mirror, poison = self._pick(i)
        reader = {"numpy": t.numpy, "tolist": lambda: np.array(t.tolist(), np.float32),
                  "item": lambda: t.item(N * C - 1), "asarray": lambda: np.asarray(t),
                  "view": lambda: t[::-1].numpy()}[how]
        want = {"item": lambda m: m.reshape(-1)[-1], "view": lambda m: m[::-1]}.get(how, lambda m: m)
        if poison:
            with pytest.raises(IndexError) as e:
                reader()
            assert str(e.value) in poison
        else:
            np.testing.assert_array_equal(reader(), want(mirror))

    @rule()
    def synchronize(self):
        try:
            self.dev.synchronize()
        except IndexError:
            pass

    @invariant()
    def bounded(self):
        del self.items[:-8]

    def teardown(self):
        for t, mirror, poison in self.items:
            for _ in range(2):
                if poison:
                    with pytest.raises(IndexError) as e:
                        t.numpy()
                    assert str(e.value) in poison
                else:
                    np.testing.assert_array_equal(t.numpy(), mirror)
        self.synchronize()


Poison.TestCase.settings = settings(settings.get_profile("dmlgpu"), stateful_step_count=25)
TestPoisonFuzz = Poison.TestCase
