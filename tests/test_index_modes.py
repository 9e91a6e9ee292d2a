"""Index modes resolved on the device (issue 41): NumPy's take modes "wrap" and "clip" in the kernels' index
map (index_map.glsl's FLAG_WRAP, FLAG_CLIP), on every path (32-bit, ADDR, WIDE), against Python's own
arithmetic (NumPy's mode="wrap" loops forever on the most negative int64); and mode="raise" on Tensor indices
checked by the device (index_check.py): the same IndexError as the host check, raised at the next
synchronize or read, the failing call's result never read as valid, and the indices never read back."""
import contextlib

import numpy as np
import pytest

import dmlgpu
from dmlgpu.plans import plan
from dmlgpu.runtime.submit import Submitter

INDEX_DTYPES = (np.int32, np.int64, np.uint32, np.uint64)


def extreme_indices(dtype, n: int) -> np.ndarray:
    """In range, past the end, the type's extremes and, for signed types, negatives of every kind."""
    info = np.iinfo(dtype)
    vals = [0, 1, n - 1, n, n + 3, 2 * n + 1, info.max, info.max - 3, 2**31 - 1]
    if info.min < 0:
        vals += [-1, -n, -n - 1, -3 * n + 2, info.min, info.min + 1]
    if info.bits == 64:
        vals += [2**32 + 5, 2**40 + 7] + ([-(2**32) - 5, -(2**40) - 7] if info.min < 0 else [])
    return np.array(vals, dtype)


def resolved(values: np.ndarray, n: int, mode: str) -> np.ndarray:
    """NumPy's take modes in Python integers: "wrap" modulo n, "clip" into [0, n - 1]; uint64 values read as
    NumPy reads indices, as intp (int64: 2**64 - 1 is -1; issue 48)."""
    flat = [int(v) for v in (values.view(np.int64) if values.dtype == np.uint64 else values).reshape(-1)]
    out = [v % n if mode == "wrap" else min(max(v, 0), n - 1) for v in flat]
    return np.array(out, np.int64).reshape(values.shape)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_take_modes_on_tensor_and_numpy_indices(mode, dtype):
    rng = np.random.default_rng(7)
    table = rng.standard_normal((13, 3)).astype(np.float32)
    ids = extreme_indices(dtype, 13)
    want = table[resolved(ids, 13, mode)]
    got = dmlgpu.take(dmlgpu.tensor(table), dmlgpu.tensor(ids), axis=0, mode=mode).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(dmlgpu.take(table, ids, axis=0, mode=mode), want)
    # along another axis, 2-d indices, rows of one element (no VEC path) and of several
    ids2 = ids[: len(ids) // 2 * 2].reshape(2, -1)
    want2 = np.moveaxis(table[resolved(ids2, 13, mode)], (0, 1), (0, 1))
    np.testing.assert_array_equal(dmlgpu.take(dmlgpu.tensor(table.T.copy()), dmlgpu.tensor(ids2), axis=1,
                                              mode=mode).numpy(), np.moveaxis(want2, 2, 0))


@contextlib.contextmanager
def wide_gathers():
    """Every gather through GatherPlan.addressed's WIDE variants (64-bit index arithmetic)."""
    with pytest.MonkeyPatch.context() as mp:
        addressed = plan.GatherPlan.addressed
        mp.setattr(plan.GatherPlan, "addressed", lambda self, *args, wide=False: addressed(self, *args, wide=True))
        yield


@pytest.mark.parametrize("wide", [False, True], ids=["addr", "wide"])
@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_take_modes_on_tensors_in_several_blocks(mode, wide):
    """A table in blocks of 256 bytes: the ADDR variants, or (``wide``) the WIDE ones."""
    table = np.arange(300 * 2, dtype=np.float32).reshape(300, 2)
    with dmlgpu.Device(chunk_bytes=256) as dev, (wide_gathers() if wide else contextlib.nullcontext()):
        for dtype in INDEX_DTYPES:
            ids = extreme_indices(dtype, 300)
            got = dmlgpu.take(dmlgpu.tensor(table, device=dev), dmlgpu.tensor(ids, device=dev), axis=0, mode=mode)
            np.testing.assert_array_equal(got.numpy(), table[resolved(ids, 300, mode)], err_msg=str(dtype))


def test_take_modes_from_an_empty_axis():
    with pytest.raises(IndexError, match="take: cannot do a non-empty take from an empty axis"):
        dmlgpu.take(dmlgpu.zeros((0, 2)), dmlgpu.tensor(np.array([0])), axis=0, mode="wrap")
    assert dmlgpu.take(dmlgpu.zeros((0, 2)), dmlgpu.tensor(np.zeros(0, np.int64)), axis=0, mode="clip").shape == (0, 2)


@pytest.fixture
def reads(monkeypatch):
    """The buffers the runtime reads to the host, in order."""
    seen = []
    read = Submitter.read_bytes         # (every host read of a buffer's bytes but a synchronous run's downloads)

    def spy(self, buf, offset, nbytes):
        seen.append(buf)
        return read(self, buf, offset, nbytes)

    monkeypatch.setattr(Submitter, "read_bytes", spy)
    return seen


@pytest.fixture
def routes(monkeypatch):
    """How each mode="raise" call on Tensor indices was checked, in order: "device" (the check kernel's passes:
    IndexCheck.on_device, or a call template's hit queuing them with its launches) or "kernel" (the gather's kernel
    itself, then its report: IndexCheck.fetch, or a hit queuing that report with its launches). Gathers of up to
    index_check.ONE_GROUP indices would take the device's check instead (which their call templates make in one
    workgroup beside the gather: tests/test_calls.py): that bound is 0 here."""
    from dmlgpu.api.call_templates import Template
    from dmlgpu.plans import index_check
    from dmlgpu.plans.index_check import IndexCheck
    monkeypatch.setattr(index_check, "ONE_GROUP", 0)
    seen = []
    on_device, fetch, checked = IndexCheck.on_device, IndexCheck.fetch, Template.checked

    def spy_checked(self, *args):
        result = checked(self, *args)
        if result is not None and result is not False and not self.guard:
            seen.append("device" if self.at is None else "kernel")
        return result

    def spy_device(self, *args):
        seen.append("device")
        return on_device(self, *args)

    def spy_fetch(self, *args):
        seen.append("kernel")
        return fetch(self, *args)

    monkeypatch.setattr(IndexCheck, "on_device", spy_device)
    monkeypatch.setattr(IndexCheck, "fetch", spy_fetch)
    monkeypatch.setattr(Template, "checked", spy_checked)
    return seen


def host_message(call, *args, **kw) -> str:
    """The IndexError of the same call on NumPy operands (the host check's)."""
    with pytest.raises(IndexError) as e:
        call(*args, **kw)
    return str(e.value)


CASES = [   # (function, data, bad indices, keyword arguments)
    (dmlgpu.gather, np.arange(20, dtype=np.float32).reshape(10, 2), np.array([[3, 1], [12, -20]], np.int64),
     {"axis": 0, "mode": "raise"}),
    (dmlgpu.gather, np.arange(20, dtype=np.int16).reshape(2, 10), np.array([4, -11, 0], np.int32), {"axis": 1, "mode": "raise"}),
    (dmlgpu.gather, np.arange(20, dtype=np.int16).reshape(2, 10), np.array([4, 2**32 + 1, 0], np.uint64),
     {"axis": 1, "mode": "raise"}),
    (dmlgpu.gather_elements, np.arange(12, dtype=np.float64).reshape(3, 4), np.array([[0, 1, 2, 3], [4, 0, 0, 0]],
                                                                                      np.uint32),
     {"axis": 1, "mode": "raise"}),
    (dmlgpu.gather_nd, np.arange(24, dtype=np.uint8).reshape(2, 3, 4), np.array([[1, 2], [0, 3], [1, -4]], np.int64),
     {"mode": "raise"}),
    (dmlgpu.take, np.arange(10, dtype=np.float32), np.array([1, 2, 3, 10], np.int64), {}),
    (dmlgpu.take_along_axis, np.arange(12, dtype=np.float32).reshape(3, 4), np.array([[0], [-5], [1]], np.int64),
     {"axis": 1}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_raise_on_tensor_indices_is_checked_on_the_device(case, reads, routes):
    fn, data, ids, kw = CASES[case]
    dev = dmlgpu.default_device()
    dev.synchronize()
    message = host_message(fn, data, ids, **kw)
    t_data, t_ids = dmlgpu.tensor(data), dmlgpu.tensor(ids)
    reads.clear()
    result = fn(t_data, t_ids, **kw)                    # returns: the check is queued with the call
    assert isinstance(result, dmlgpu.Tensor)
    assert routes == ["kernel"]                         # a gather into a new Tensor checks in its own kernel
    with pytest.raises(IndexError) as e:
        dev.synchronize()
    assert str(e.value) == message
    assert t_ids.buffer not in reads                    # the indices were never read back
    with pytest.raises(IndexError) as again:            # the failed result is never read as valid
        result.numpy()
    assert str(again.value) == message
    dev.synchronize()                                   # reported once: the device goes on
    np.testing.assert_array_equal(t_data.numpy(), data)


def test_raise_reaches_only_what_the_failed_call_wrote_and_synchronize_once():
    """A read of a Tensor that the failed call did not reach never raises its error; synchronize(), the
    device-wide point, raises it once (the failed result was dropped: nothing else would)."""
    dev = dmlgpu.default_device()
    other = dmlgpu.tensor(np.arange(4, dtype=np.int32))
    dmlgpu.gather(dmlgpu.tensor(np.ones(3, np.float32)), dmlgpu.tensor(np.array([5], np.int64)), mode="raise")
    np.testing.assert_array_equal(other.numpy(), np.arange(4, dtype=np.int32))
    with pytest.raises(IndexError, match=r"gather: index 5 at indices position \(0,\)"):
        dev.synchronize()
    dev.synchronize()


def test_raise_on_good_tensor_indices_and_into_out(reads, routes):
    data = np.arange(40, dtype=np.float32).reshape(20, 2)
    ids = np.array([[19, -20], [0, 7]], np.int64)
    t_ids = dmlgpu.tensor(ids)
    out = dmlgpu.empty((2, 2, 2), np.float32)
    reads.clear()
    assert dmlgpu.gather(dmlgpu.tensor(data), t_ids, mode="raise", out=out) is out
    assert routes == ["device"]                         # (out holds no report word: the check kernel's passes)
    np.testing.assert_array_equal(out.numpy(), np.take(data, ids, axis=0))
    assert t_ids.buffer not in reads
    # a bad index into out: every read raises, until out is overwritten whole
    bad = dmlgpu.tensor(np.array([[19, -20], [0, 70]], np.int64))
    dmlgpu.gather(dmlgpu.tensor(data), bad, mode="raise", out=out)
    for _ in range(2):
        with pytest.raises(IndexError, match=r"index 70 at indices position \(1, 1\)"):
            out.numpy()
    dmlgpu.gather(dmlgpu.tensor(data), t_ids, mode="raise", out=out)
    np.testing.assert_array_equal(out.numpy(), np.take(data, ids, axis=0))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_the_first_bad_index_in_row_major_order_is_reported(dtype):
    n = 100_003                                     # whole steps of 8 indices, then a tail
    ids = np.zeros(n, dtype)
    ids[[n - 1, 70_001, 3_000, 2_999]] = [99 if dtype in (np.uint32, np.uint64) else -5000, 2**31 - 1, 12, 9]
    data = np.arange(10, dtype=np.float32)
    message = host_message(dmlgpu.take, data, ids)
    assert "position (3000,)" in message
    dmlgpu.take(dmlgpu.tensor(data), dmlgpu.tensor(ids))
    with pytest.raises(IndexError) as e:
        dmlgpu.default_device().synchronize()
    assert str(e.value) == message


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 9, 1023, 1025, 8 * 256 * 3 + 5, 300_001])
def test_the_device_check_finds_the_least_bad_position_at_any_size(dtype, n):
    """Sizes around the check's 16-byte words, steps and workgroups (whole words, a tail word, one partial
    word alone), bad indices scattered over several workgroups: the least position is reported, with its
    value, as the host check reports it."""
    rng = np.random.default_rng(n)
    ids = rng.integers(0, 10, n).astype(dtype)
    bad = rng.choice(n, size=min(n, 5), replace=False)
    ids[bad] = 10 + rng.integers(0, 5, bad.size).astype(dtype)
    data = np.arange(10, dtype=np.float32)
    message = host_message(dmlgpu.take, data, ids)
    assert f"position ({int(bad.min())},)" in message
    dmlgpu.take(dmlgpu.tensor(data), dmlgpu.tensor(ids))
    with pytest.raises(IndexError) as e:
        dmlgpu.default_device().synchronize()
    assert str(e.value) == message
    good = ids.copy()
    good[bad] = 9
    np.testing.assert_array_equal(dmlgpu.take(dmlgpu.tensor(data), dmlgpu.tensor(good)).numpy(), data[good])


def test_raise_on_indices_the_device_cannot_check_reads_them_back():
    """An index tensor held in several blocks: checked on the host before any GPU work; data unchanged. A scatter
    in place on indices the device checks is guarded by that check instead (IndexCheck.guard): nothing read
    back, nothing written, the target failed."""
    with dmlgpu.Device(chunk_bytes=256) as dev:
        ids = np.zeros(200, np.int64)
        ids[150] = 9
        with pytest.raises(IndexError, match=r"index 9 at indices position \(150,\)"):
            dmlgpu.take(dmlgpu.tensor(np.ones(9, np.float32), device=dev), dmlgpu.tensor(ids, device=dev))
        data = dmlgpu.tensor(np.arange(6, dtype=np.float32), device=dev)
        held = dmlgpu.tensor(np.r_[np.zeros(199, np.int64), 6].reshape(200, 1), device=dev)
        with pytest.raises(IndexError, match=r"index 6 at indices position \(199, 0\)"):
            dmlgpu.scatter_nd(data, held, dmlgpu.tensor(np.zeros(200, np.float32), device=dev), mode="raise",
                              out=data)
        np.testing.assert_array_equal(data.numpy(), np.arange(6, dtype=np.float32))
    data = dmlgpu.tensor(np.arange(6, dtype=np.float32))
    ids = dmlgpu.tensor(np.array([[1], [6]], np.int64))
    dmlgpu.scatter_nd(data, ids, dmlgpu.tensor(np.zeros(2, np.float32)), mode="raise", out=data)
    with pytest.raises(IndexError, match=r"index 6 at indices position \(1, 0\)"):
        data.numpy()                # (the target fails until it is overwritten whole)


def test_scatter_out_of_place_with_raise_on_tensor_indices(reads):
    data = np.arange(6, dtype=np.float32)
    ids = dmlgpu.tensor(np.array([[1], [-7]], np.int64))
    upd = dmlgpu.tensor(np.array([5, 6], np.float32))
    result = dmlgpu.scatter_nd(dmlgpu.tensor(data), ids, upd, mode="raise")
    with pytest.raises(IndexError, match=r"scatter_nd: index -7 at indices position \(1, 0\)"):
        result.numpy()
    assert ids.buffer not in reads
    good = dmlgpu.scatter_nd(dmlgpu.tensor(data), dmlgpu.tensor(np.array([[1], [-6]], np.int64)), upd, mode="raise")
    np.testing.assert_array_equal(good.numpy(), [6, 5, 2, 3, 4, 5])


def test_put_along_axis_into_an_array_checks_tensor_indices_on_the_device(reads):
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    before = a.copy()
    bad = dmlgpu.tensor(np.array([[1], [-5]], np.int64))
    with pytest.raises(IndexError, match=r"^put_along_axis: index -5 at indices position \(1, 0\)"):
        dmlgpu.put_along_axis(a, bad, 9.0, axis=1)
    np.testing.assert_array_equal(a, before)        # nothing of the caller's written
    assert bad.buffer not in reads
    good = dmlgpu.tensor(np.array([[1], [-4]], np.int64))
    dmlgpu.put_along_axis(a, good, dmlgpu.tensor(np.array([[7], [8]], np.float32)), axis=1)
    np.put_along_axis(before, np.array([[1], [-4]]), np.array([[7], [8]], np.float32), axis=1)
    np.testing.assert_array_equal(a, before)
    assert good.buffer not in reads


def test_more_checks_than_report_slots_and_two_failures():
    """Past CHECK_SLOTS pending checks the device makes the reports first; synchronize() lists both failed
    calls, and both results stay marked."""
    from dmlgpu.runtime.checks import CHECK_SLOTS
    dev = dmlgpu.default_device()
    data = dmlgpu.tensor(np.arange(10, dtype=np.float32))
    good = dmlgpu.tensor(np.array([1, 2], np.int64))
    results = [dmlgpu.take(data, good) for _ in range(CHECK_SLOTS + 20)]
    dev.synchronize()
    assert all(r.numpy().tolist() == [1.0, 2.0] for r in results[::37])
    first = dmlgpu.take(data, dmlgpu.tensor(np.array([0, 11], np.int64)))
    second = dmlgpu.take(data, dmlgpu.tensor(np.array([-12], np.int64)))
    with pytest.raises(IndexError, match=r"^2 of this device's checks failed: take: index 11 at indices position "
                                         r"\(1,\) .*; take: index -12 at indices position \(0,\)"):
        dev.synchronize()
    with pytest.raises(IndexError, match=r"take: index -12 at indices position \(0,\)"):
        second.numpy()
    with pytest.raises(IndexError, match=r"index 11"):
        first.numpy()
    dev.synchronize()


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_a_bad_index_in_the_last_partial_step(dtype):
    ids = np.zeros(21, dtype)
    ids[19] = 10
    dmlgpu.take(dmlgpu.tensor(np.ones(10, np.float32)), dmlgpu.tensor(ids))
    with pytest.raises(IndexError, match=r"take: index 10 at indices position \(19,\)"):
        dmlgpu.default_device().synchronize()


def test_raise_on_tensor_indices_through_a_call_template(reads):
    """A repeated call of one signature runs from its template (api/call_templates.py), whose gather checks its
    own indices and queues the report after it: a bad index still raises, the result stays marked, no index
    is read back."""
    from dmlgpu.api.call_templates import Template
    dev = dmlgpu.default_device()
    data = dmlgpu.tensor(np.arange(40, dtype=np.float32).reshape(20, 2))
    for _ in range(3):
        good = dmlgpu.take(data, dmlgpu.tensor(np.array([3, -20], np.int64)), axis=0)
    assert any(isinstance(t, Template) and t.check is not None and t.at is not None and t.prepared is not None
               for t in dev.runtime.templates.values())         # (prepared: the launches and the report made once)
    np.testing.assert_array_equal(good.numpy(), [[6, 7], [0, 1]])
    bad_ids = dmlgpu.tensor(np.array([3, 20], np.int64))
    reads.clear()
    bad = dmlgpu.take(data, bad_ids, axis=0)
    with pytest.raises(IndexError, match=r"^take: index 20 at indices position \(1,\)"):
        dev.synchronize()
    with pytest.raises(IndexError, match=r"index 20"):
        bad.numpy()
    assert bad_ids.buffer not in reads
    np.testing.assert_array_equal(dmlgpu.take(data, dmlgpu.tensor(np.array([19, 0], np.int64)), axis=0).numpy(),
                                  [[38, 39], [0, 1]])


def test_prepared_checks_in_one_batch_report_the_bad_call_alone():
    """Calls of one mode="raise" signature queued without a synchronize take their template's prepared launches
    and prepared checks, each in a report slot of its own: the one bad call raises at the synchronize, its
    result stays marked, every other result is valid."""
    dev = dmlgpu.default_device()
    dev.synchronize()
    table = np.arange(60, dtype=np.float32).reshape(20, 3)
    data = dmlgpu.tensor(table)
    for _ in range(3):
        dmlgpu.take(data, dmlgpu.tensor(np.array([1, 2], np.int64)), axis=0)
    dev.synchronize()
    ids = [np.array([i % 20, (7 * i) % 20], np.int64) for i in range(12)]
    ids[5] = np.array([3, 25], np.int64)
    results = [dmlgpu.take(data, dmlgpu.tensor(i), axis=0) for i in ids]
    with pytest.raises(IndexError, match=r"^take: index 25 at indices position \(1,\)"):
        dev.synchronize()
    with pytest.raises(IndexError, match=r"index 25"):
        results[5].numpy()
    for k, (i, r) in enumerate(zip(ids, results)):
        if k != 5:
            np.testing.assert_array_equal(r.numpy(), table[i])


GATHER_DTYPES = (np.uint8, np.float16, np.float32, np.float64, np.complex128)


@pytest.mark.parametrize("dtype", GATHER_DTYPES)
@pytest.mark.parametrize("shape, axis, count", [((37,), 0, 5), ((64, 4), 0, 8), ((5, 300), 1, 70_001),
                                                ((9, 3, 7), 1, 4), ((40, 128), 0, 9)])
def test_a_gather_checking_its_own_indices_gives_exactly_its_result(dtype, shape, axis, count, routes):
    """A gather that checks its indices in its kernel keeps a report word past its result's bytes (rounded up
    to 16): results of every unit size and of sizes on and off that boundary are NumPy's, through the planned
    path and the call template (four calls), and the result works as any Tensor (as data, as indices, sliced).
    A bad call between good ones raises alone. On GPUs the shapes reach the VEC, NARROW (70,001 1- and 2-byte
    units) and run (rows of 512 B or more of 16-byte units) variants."""
    rng = np.random.default_rng(count)
    table = (rng.standard_normal(shape) * 50).astype(dtype)
    n = shape[axis]
    t_table = dmlgpu.tensor(table)
    calls = [rng.integers(-n, n, count) for _ in range(4)]
    calls[2][count // 2] = n + 3
    results = [dmlgpu.take(t_table, dmlgpu.tensor(ids), axis=axis) for ids in calls]
    with pytest.raises(IndexError, match=rf"take: index {n + 3} at indices position \({count // 2},\)"):
        dmlgpu.default_device().synchronize()
    assert routes == ["kernel"] * 4
    for k, (ids, got) in enumerate(zip(calls, results)):
        if k == 2:
            with pytest.raises(IndexError):
                got.numpy()
            continue
        want = np.take(table, ids, axis=axis)
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(got[1:].numpy(), want[1:])
        np.testing.assert_array_equal(dmlgpu.take(got, dmlgpu.tensor(np.array([0, -1])), axis=0).numpy(),
                                      np.take(want, [0, -1], axis=0))
    positions = dmlgpu.take(dmlgpu.tensor(np.arange(n, dtype=np.int64)), dmlgpu.tensor(calls[0]))
    np.testing.assert_array_equal(dmlgpu.take(t_table, positions, axis=axis).numpy(),
                                  np.take(table, calls[0], axis=axis))


@pytest.mark.parametrize("max_queued", [0, None], ids=["unqueued", "queued"])
def test_raise_on_a_table_in_several_blocks_takes_the_check_kernel(max_queued, routes):
    """A gather through the large-tensor variants (a table in blocks of 256 bytes) cannot check in its kernel:
    the check kernel's passes check its indices; with queueing off, the gather that checks its own runs and
    reports at once."""
    table = np.arange(300 * 2, dtype=np.float32).reshape(300, 2)
    with dmlgpu.Device(chunk_bytes=256, max_queued=max_queued) as dev:
        t_table = dmlgpu.tensor(table, device=dev)
        bad = dmlgpu.tensor(np.array([5, 300, -301], np.int64), device=dev)
        result = dmlgpu.take(t_table, bad, axis=0)
        with pytest.raises(IndexError, match=r"take: index 300 at indices position \(1,\)"):
            dev.synchronize()
        with pytest.raises(IndexError):
            result.numpy()
        assert routes == ["device"]
        small = dmlgpu.tensor(np.arange(6, dtype=np.float32).reshape(3, 2), device=dev)
        with pytest.raises(IndexError, match=r"take: index -4 at indices position \(0,\)"):
            dmlgpu.take(small, dmlgpu.tensor(np.array([-4, 3], np.int64), device=dev), axis=0).numpy()
        assert routes == ["device", "kernel"]
        np.testing.assert_array_equal(dmlgpu.take(small, dmlgpu.tensor(np.array([-3, 2]), device=dev), axis=0).numpy(),
                                      [[0, 1], [4, 5]])


def test_a_dropped_checked_result_goes_back_before_the_report():
    """The device's check holds the results it would mark weakly (runtime Marked): queued mode="raise" calls whose
    results are dropped at once reuse one block, as clamp's do, and a bad call's result kept alive is still
    marked."""
    dev = dmlgpu.default_device()
    table = dmlgpu.tensor(np.arange(4096 * 64, dtype=np.float32).reshape(4096, 64))
    ids = dmlgpu.tensor(np.arange(256, dtype=np.int64))
    dev.synchronize()
    for _ in range(3):
        dmlgpu.take(table, ids, axis=0)             # (the template)
    dev.synchronize()
    before = dev.memory_stats()["allocated_bytes"]
    for _ in range(16):
        dmlgpu.take(table, ids, axis=0)
    assert dev.memory_stats()["allocated_bytes"] - before <= 2 * 256 * 64 * 4
    kept = dmlgpu.take(table, dmlgpu.tensor(np.array([5, 4096], np.int64)), axis=0)
    for _ in range(4):
        dmlgpu.take(table, ids, axis=0)
    with pytest.raises(IndexError, match=r"take: index 4096 at indices position \(1,\)"):
        dev.synchronize()
    with pytest.raises(IndexError, match=r"index 4096"):
        kept.numpy()


def test_raise_through_a_template_of_a_table_in_several_blocks():
    """A repeated raise call on a table in blocks of 256 bytes runs from a template of the large-tensor variants
    (their parameters list the blocks, made per set of block lists), the check kernel's passes queued after
    them: good calls give NumPy's rows, a bad one raises and stays marked."""
    from dmlgpu.api.call_templates import Template
    table = np.arange(300 * 2, dtype=np.float32).reshape(300, 2)
    with dmlgpu.Device(chunk_bytes=256) as dev:
        t_table = dmlgpu.tensor(table, device=dev)
        for k in range(4):
            ids = np.array([k, 299 - k, -5], np.int64)
            np.testing.assert_array_equal(dmlgpu.take(t_table, dmlgpu.tensor(ids, device=dev), axis=0).numpy(),
                                          table[ids])
        assert any(isinstance(x, Template) and x.recipes and x.check is not None and x.prepared is not None
                   for x in dev.runtime.templates.values())
        bad = dmlgpu.take(t_table, dmlgpu.tensor(np.array([1, 300, 2], np.int64), device=dev), axis=0)
        with pytest.raises(IndexError, match=r"take: index 300 at indices position \(1,\)"):
            dev.synchronize()
        with pytest.raises(IndexError, match="index 300"):
            bad.numpy()
