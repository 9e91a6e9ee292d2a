"""Robustness: Vulkan validation, memory safety (guard words), device limits, bad input, missing devices,
threads, and memory that stays flat over many calls."""
import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dmlgpu
from dmlgpu import reference, runtime
from dmlgpu.runtime import validation
from dmlgpu.layer1.tensor_desc import TensorDesc
from strategies import run_in_threads

DT = dmlgpu.DataType


def _python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=300)


# ---- Vulkan validation ----

_SCATTERS = """
    import numpy as np, dmlgpu
    from dmlgpu.runtime import validation; from dmlgpu import runtime
    {patch}
    d = np.zeros(64, np.uint8)
    out = dmlgpu.scatter_nd(d, (np.arange(400) % 64).reshape(-1, 1), (np.arange(400) % 256).astype(np.uint8))
    out = dmlgpu.scatter_elements(np.zeros((4, 9), np.float32), np.ones((4, 5), np.int64),
                                  np.ones((4, 5), np.float32), axis=1)
    g = dmlgpu.gather(np.arange(10, dtype=np.int16), [1, -2, 30])
    print("MESSAGES", len(validation.messages()))
    print("\\n".join(validation.messages()))
"""


@pytest.mark.skipif(not validation.available(), reason="vulkan-validationlayers not installed")
def test_validation_layer_reports_nothing_for_scatters_and_gathers():
    r = _python(_SCATTERS.format(patch=""), DMLGPU_VALIDATION="1")
    assert r.returncode == 0, r.stderr
    assert "MESSAGES 0" in r.stdout, r.stdout


@pytest.mark.skipif(not validation.available(), reason="vulkan-validationlayers not installed")
def test_validation_layer_catches_the_scatter_hazard_without_dmlgpus_barrier():
    """The claim and write passes of a scatter depend on each other: with the compute-to-compute barrier
    replaced by Kompute's transfer-to-compute one, synchronization validation reports the hazard."""
    patch = "runtime.encode.BEFORE_DISPATCH = (0x1000, 0x20, 0x1000, 0x800)"
    r = _python(_SCATTERS.format(patch=patch), DMLGPU_VALIDATION="1")
    assert r.returncode == 0, r.stderr
    assert "MESSAGES 0" not in r.stdout and "SYNC-HAZARD" in r.stdout, r.stdout


@pytest.mark.skipif(not validation.available(), reason="vulkan-validationlayers not installed")
def test_validation_messages_outlive_the_next_device():
    """Every Device opens a Vulkan instance of its own, and the layer truncates the log file an instance opens:
    each instance logs to a file of its own, so the first device's messages are still reported."""
    patch = "runtime.encode.BEFORE_DISPATCH = (0x1000, 0x20, 0x1000, 0x800)"
    code = _SCATTERS.format(patch=patch).replace('print("MESSAGES"', 'dmlgpu.Device(); dmlgpu.Device()\n    print("MESSAGES"')
    r = _python(code, DMLGPU_VALIDATION="1")
    assert r.returncode == 0, r.stderr
    assert "SYNC-HAZARD" in r.stdout, r.stdout


# ---- memory safety: guard words after every buffer ----

EXTREMES = {
    DT.INT64: [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 2**31, 2**32, -2**31 - 1, 2**40, -1],
    DT.UINT64: [np.iinfo(np.uint64).max, 2**31, 2**32, 2**63, 2**40, 0],
    DT.INT32: [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 7],
    DT.UINT32: [np.iinfo(np.uint32).max, 2**31, 2**31 - 1, 3],
}


@pytest.fixture
def guarded_device():
    dev = dmlgpu.Device()
    dev.runtime.canary_words = 64
    yield dev
    dev.close()


def _run_layer1(dev, desc, arrays):
    bufs = {k: dev.buffer(v) for k, v in arrays.items()}
    out_desc = desc.output
    bufs["output"] = dev.buffer(nbytes=out_desc.total_size_in_bytes)
    dev.compile(desc).execute(**bufs)
    assert all(b.canary_intact() for b in bufs.values()), "a kernel wrote past the end of a buffer"
    n = int(np.prod(out_desc.sizes))
    return bufs["output"].read()[: n * out_desc.data_type.size].view(out_desc.data_type.numpy).reshape(out_desc.sizes)


@pytest.mark.parametrize("index_type", list(EXTREMES), ids=lambda t: t.name)
@pytest.mark.parametrize("data_type", [DT.UINT8, DT.INT16, DT.FLOAT32, DT.FLOAT64], ids=lambda t: t.name)
def test_guard_words_untouched_for_extreme_indices(guarded_device, index_type, data_type):
    dev = guarded_device
    values = np.array(EXTREMES[index_type], dtype=index_type.numpy)
    n = len(values)
    rng = np.random.default_rng(n)
    data = rng.integers(0, 255, size=(3, 5), dtype=np.uint8).astype(data_type.numpy)
    t = lambda dt, sizes: TensorDesc(dt, sizes)
    # GATHER along axis 1
    idx = values.reshape(1, n)
    out = _run_layer1(dev, dmlgpu.GatherDesc(t(data_type, [3, 5]), t(index_type, [1, n]),
                                             t(data_type, [3, n]), 1, 1), {"input": data, "indices": idx})
    assert out.tobytes() == reference.gather(data, values, axis=1).tobytes()
    if data_type.size == 8:       # the other operators take no 8-byte data in layer 1: see the layer-2 test
        return
    # GATHER_ELEMENTS along axis 0
    idx = np.resize(values, (3, 5)).astype(index_type.numpy)
    out = _run_layer1(dev, dmlgpu.GatherElementsDesc(t(data_type, [3, 5]), t(index_type, [3, 5]),
                                                     t(data_type, [3, 5]), 0), {"input": data, "indices": idx})
    assert out.tobytes() == reference.gather_elements(data, idx, axis=0).tobytes()
    # GATHER_ND with 2-tuples
    idx = np.resize(values, (n, 2)).astype(index_type.numpy)
    out = _run_layer1(dev, dmlgpu.GatherNDDesc(t(data_type, [3, 5]), t(index_type, [n, 2]),
                                               t(data_type, [1, n]), 2, 2), {"input": data, "indices": idx})
    assert out.reshape(-1).tobytes() == reference.gather_nd(data, idx).tobytes()
    # SCATTER_ND of rows and SCATTER_ELEMENTS
    idx = values.reshape(n, 1)
    upd = rng.integers(0, 255, size=(n, 5), dtype=np.uint8).astype(data_type.numpy)
    out = _run_layer1(dev, dmlgpu.ScatterNDDesc(t(data_type, [3, 5]), t(index_type, [n, 1]), t(data_type, [n, 5]),
                                                t(data_type, [3, 5]), 2, 2),
                      {"input": data, "indices": idx, "updates": upd})
    assert out.tobytes() == reference.scatter_nd(data, idx, upd).tobytes()
    idx = np.resize(values, (3, 5)).astype(index_type.numpy)
    upd = rng.integers(0, 255, size=(3, 5), dtype=np.uint8).astype(data_type.numpy)
    out = _run_layer1(dev, dmlgpu.ScatterElementsDesc(t(data_type, [3, 5]), t(index_type, [3, 5]),
                                                      t(data_type, [3, 5]), t(data_type, [3, 5]), 1),
                      {"input": data, "indices": idx, "updates": upd})
    assert out.tobytes() == reference.scatter_elements(data, idx, upd, axis=1).tobytes()


def test_guard_words_untouched_through_layer2_tensors_with_8_byte_data(guarded_device):
    dev = guarded_device
    values = np.array(EXTREMES[DT.INT64], dtype=np.int64)
    data = np.random.default_rng(0).standard_normal((4, 6))
    t_data, t_idx = dmlgpu.tensor(data, device=dev), dmlgpu.tensor(values, device=dev)
    idx2 = np.resize(values, (4, 6))
    t_idx2 = dmlgpu.tensor(idx2, device=dev)
    upd = dmlgpu.tensor(np.ones((4, 6)), device=dev)
    results = [
        (dmlgpu.gather(t_data, t_idx, axis=1), reference.gather(data, values, axis=1)),
        (dmlgpu.gather_elements(t_data, t_idx2, axis=1), reference.gather_elements(data, idx2, axis=1)),
        (dmlgpu.gather_nd(t_data, dmlgpu.tensor(idx2.reshape(-1, 2), device=dev)),
         reference.gather_nd(data, idx2.reshape(-1, 2))),
        (dmlgpu.scatter_elements(t_data, t_idx2, upd, axis=0),
         reference.scatter_elements(data, idx2, np.ones((4, 6)), axis=0)),
    ]
    for got, want in results:
        assert got.numpy().tobytes() == want.tobytes()
        assert got.buffer.canary_intact()
    assert all(t.buffer.canary_intact() for t in (t_data, t_idx, t_idx2, upd))


# ---- limits ----

def test_tensor_larger_than_the_device_memory_is_refused_before_any_gpu_work(device, monkeypatch):
    limit = device.runtime.memory_capacity
    rows = limit // 4096 + 1                       # rows of 4 KiB: one more than the device holds
    calls = []
    monkeypatch.setattr(device.runtime, "_run", lambda *a, **k: calls.append(a))
    with pytest.raises(dmlgpu.DeviceError, match=rf"\+ {rows * 4096} = \d+ bytes exceed this device's memory \({limit} bytes"):
        dmlgpu.gather(np.zeros((2, 1024), np.float32), np.zeros(rows, np.int32), device=device)
    assert calls == []


def test_buffer_larger_than_the_device_memory_is_refused(device):
    n = device.runtime.memory_capacity + 4
    with pytest.raises(dmlgpu.DeviceError, match=rf"a tensor of {n} bytes exceeds this device's memory"):
        device.buffer(nbytes=n)


def test_large_gather_near_the_limit_is_correct(device):
    """The largest case of the suite: a 64 MiB float32 table gathered into a 64 MiB output."""
    rows = (64 << 20) // (256 * 4)
    table = np.arange(rows * 256, dtype=np.float32).reshape(rows, 256)
    ids = np.random.default_rng(0).integers(-rows, rows, size=rows)
    assert np.array_equal(dmlgpu.gather(table, ids, device=device), table[ids])


# ---- bad input ----

def test_caller_arrays_are_untouched_even_read_only_and_non_contiguous(device):
    data = np.arange(60, dtype=np.float32).reshape(6, 10)[:, ::2]      # non-contiguous view
    data.flags.writeable = False
    idx = np.array([[5], [0], [5]])
    idx.flags.writeable = False
    before = (data.copy(), idx.copy())
    out = dmlgpu.scatter_nd(data, idx, np.ones((3, 5), np.float32), device=device)
    assert np.array_equal(out, reference.scatter_nd(data, idx, np.ones((3, 5), np.float32)))
    assert np.array_equal(data, before[0]) and np.array_equal(idx, before[1])


@pytest.mark.parametrize("call, error, fragment", [
    (lambda: dmlgpu.gather(np.zeros(3), np.array([0.5])), TypeError, "integer dtype"),
    (lambda: dmlgpu.gather(np.array([object()] * 3), [0]), TypeError, "Python objects"),
    (lambda: dmlgpu.gather(np.zeros(3), [0], axis=1), Exception, "axis 1 is out of bounds"),
    (lambda: dmlgpu.gather(np.zeros(3), [0], mode="wrap"), ValueError, "mode must be one of"),
    (lambda: dmlgpu.gather_elements(np.zeros((2, 2)), np.zeros(2, np.int32)), ValueError, "rank of data"),
    (lambda: dmlgpu.gather_nd(np.zeros((2, 2)), np.zeros((1, 3), np.int32)), ValueError, "tuple size"),
    (lambda: dmlgpu.scatter_nd(np.zeros(4), [[1]], np.zeros(1, np.float32)), TypeError, "dtype"),
    (lambda: dmlgpu.scatter_elements(np.zeros(4), [1], np.zeros(2)), ValueError, "shape \\(1,\\) .*ONNX's rule"),
    (lambda: dmlgpu.gather(np.zeros(0), [0]), IndexError, "size 0"),
    (lambda: dmlgpu.gather(np.zeros(3), [0], device="gpu"), TypeError, "dmlgpu.Device"),
])
def test_bad_input_gets_a_named_exception(call, error, fragment):
    with pytest.raises(error, match=fragment):
        call()


def test_closed_device_and_tensors_of_another_device():
    a, b = dmlgpu.Device(), dmlgpu.Device()
    t = dmlgpu.tensor(np.arange(4, dtype=np.int32), device=a)
    with pytest.raises(dmlgpu.DeviceError, match="another device|of device"):
        dmlgpu.gather(t, [0], device=b)
    b.close()
    with pytest.raises(dmlgpu.DeviceError, match="closed"):
        dmlgpu.gather(np.arange(3), [0], device=b)
    assert dmlgpu.gather(t, [3]).numpy().tolist() == [3]
    a.close()


def test_without_a_vulkan_driver_import_works_and_opening_says_what_to_install():
    r = _python("""
        import dmlgpu
        try:
            dmlgpu.devices()
        except dmlgpu.DeviceError as e:
            print("ERROR", e)
    """, VK_ICD_FILENAMES="/nonexistent/icd.json", VK_DRIVER_FILES="/nonexistent/icd.json")
    assert r.returncode == 0, r.stderr
    assert "ERROR" in r.stdout and "mesa-vulkan-drivers" in r.stdout, r.stdout


# ---- threads and memory ----

def test_threads_sharing_one_device_get_correct_results(device):
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(25):
            data = rng.integers(0, 2**16, size=(50, 7), dtype=np.uint16)
            idx = rng.integers(-50, 50, size=30)
            if not np.array_equal(dmlgpu.gather(data, idx, device=device), data[idx]):
                errors.append(("gather", seed))
            upd = rng.integers(0, 2**16, size=(30, 7), dtype=np.uint16)
            got = dmlgpu.scatter_nd(data, idx.reshape(-1, 1), upd, device=device)
            if not np.array_equal(got, reference.scatter_nd(data, idx.reshape(-1, 1), upd)):
                errors.append(("scatter", seed))

    run_in_threads(work)
    assert errors == []


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_ten_thousand_calls_leave_memory_flat(device):
    data = np.arange(256, dtype=np.float32).reshape(64, 4)
    idx = np.array([3, 1, 2], np.int64)
    upd = np.ones((3, 4), np.float32)
    for _ in range(500):                      # warm up caches and allocator pools
        dmlgpu.gather(data, idx, device=device)
        dmlgpu.scatter_nd(data, idx.reshape(-1, 1), upd, device=device)
    before = _rss_mib()
    for _ in range(5000):
        dmlgpu.gather(data, idx, device=device)
        dmlgpu.scatter_nd(data, idx.reshape(-1, 1), upd, device=device)
    grown = _rss_mib() - before
    assert grown < 8, f"resident memory grew by {grown:.1f} MiB over 10,000 calls"


def test_scatter_whose_claim_scratch_exceeds_the_device_memory_is_refused_before_any_gpu_work(monkeypatch):
    """A scatter keeps one 32-bit claim per output unit: 1-byte elements need 4 bytes of scratch each."""
    with dmlgpu.Device(memory_limit=4 << 20) as dev:
        n = (1 << 20) + 64                                      # uint8 elements scattered one by one
        data = np.zeros(n, np.uint8)
        calls = []
        monkeypatch.setattr(dev.runtime, "_run", lambda *a, **k: calls.append(a))
        with pytest.raises(dmlgpu.DeviceError, match=rf"\+ {4 * n} = \d+ bytes exceed this device's memory"):
            dmlgpu.scatter_elements(data, np.array([1, 3]), np.array([7, 9], np.uint8), device=dev)
        assert calls == []


def test_eager_tensor_operations_reuse_buffers_and_algorithms(device):
    table = dmlgpu.tensor(np.arange(4096, dtype=np.float32).reshape(256, 16), device=device)
    idx = dmlgpu.tensor(np.array([3, 1, 2], np.int32), device=device)
    for _ in range(5):
        out = dmlgpu.gather(table, idx)
    before = device.memory_stats()
    results = [dmlgpu.gather(table, idx).numpy() for _ in range(50)]
    after = device.memory_stats()
    assert after["algorithms"] == before["algorithms"], "repeated eager operations created new algorithms"
    assert after["pipelines"] == before["pipelines"], "repeated eager operations built new pipelines"
    assert after["device_allocations"] == before["device_allocations"], "repeated operations allocated memory"
    assert all(np.array_equal(r, np.arange(4096, dtype=np.float32).reshape(256, 16)[[3, 1, 2]]) for r in results)
    kept = dmlgpu.gather(table, idx)          # a live Tensor keeps its buffer: a new result gets another
    other = dmlgpu.gather(table, dmlgpu.tensor(np.array([0, 0, 0], np.int32), device=device))
    assert kept.buffer is not other.buffer and kept.numpy()[0, 0] == 48 and other.numpy()[0, 0] == 0
