"""Advanced indexing of Tensors (dmlgpu/api/indexing.py): t[key], t[key] = value, NumPy's ufunc.at and JAX's
Tensor.at, against NumPy bit for bit: a differential fuzz of random keys (every kind of index, out-of-range ones
included), dtypes of 1 to 16 bytes and records, index forms (lists, arrays, Tensors), and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import dmlgpu

from strategies import same_bytes

DTYPES = [np.uint8, np.int16, np.float16, np.float32, np.int64, np.complex128, np.dtype("S3"),
          np.dtype([("a", np.int32), ("b", np.uint8)])]
ARITH = [np.float32, np.float16, np.int8, np.int32, np.uint16, np.float64]


@pytest.fixture(scope="module")
def dev():
    return dmlgpu.default_device()


def sample(shape, dtype, rng):
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    return rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(shape)


def random_key(shape, rng, dev, allow_tensor=True):
    """A random NumPy index of ``shape``: ints, slices, None, ..., integer arrays (lists, arrays, Tensors) that
    broadcast, boolean arrays and scalars; sometimes out of range."""
    key = []
    axis = 0
    bshape = [(3,), (2, 1), (1,), (2, 3), ()][rng.integers(5)]
    used_ellipsis = False
    while axis < len(shape):
        n = shape[axis]
        r = rng.random()
        if r < 0.12 and not used_ellipsis:
            key.append(Ellipsis)
            used_ellipsis = True
            axis = len(shape) - rng.integers(0, len(shape) - axis + 1)
            continue
        if r < 0.2:
            key.append(None)
            continue
        if r < 0.3:
            key.append(int(rng.integers(-n - (rng.random() < 0.1), n + (rng.random() < 0.1))) if n else 0)
        elif r < 0.5:
            start, stop = sorted(rng.integers(-n - 1, n + 2, 2))
            key.append(slice(int(start), int(stop), int(rng.choice([1, 2, -1, 3]))))
        elif r < 0.62:
            key.append(rng.random(n) < 0.5 if rng.random() < 0.95 else rng.random(n + 1) < 0.5)
        elif r < 0.66:
            key.append(bool(rng.random() < 0.7))
            continue
        else:
            lo, hi = (-n, n) if rng.random() < 0.93 else (-n - 2, n + 2)
            a = rng.integers(lo, hi, bshape) if n or rng.random() < 0.5 else np.zeros(bshape, np.int64)
            form = rng.integers(3 if allow_tensor else 2)
            dtype = [np.int64, np.int32, np.uint8 if lo >= 0 else np.int16][rng.integers(3)]
            a = a.astype(dtype)
            key.append(a.tolist() if form == 0 and a.ndim else dmlgpu.tensor(a, device=dev) if form == 2 else a)
        axis += 1
    if rng.random() < 0.3 and key:
        key = key[:rng.integers(1, len(key) + 1)]
    return tuple(key) if len(key) != 1 or rng.random() < 0.5 else key[0]


def host_key(key):
    if isinstance(key, tuple):
        return tuple(host_key(k) for k in key)
    return key.numpy() if isinstance(key, dmlgpu.Tensor) else key


def outcome(fn):
    try:
        return fn()
    except (IndexError, ValueError) as e:
        return type(e)


def check(want, got):
    if isinstance(want, type):
        assert got is want
    else:
        assert not isinstance(got, type), got
        assert got.shape == want.shape and got.dtype == want.dtype
        same_bytes(got, want)


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_reads_writes_against_numpy(dev, seed):
    rng = np.random.default_rng(seed)
    for case in range(25):
        shape = tuple(int(n) for n in rng.integers(0 if rng.random() < 0.05 else 1, 5, rng.integers(1, 4)))
        dtype = DTYPES[rng.integers(len(DTYPES))]
        a = sample(shape, dtype, rng)
        key = random_key(shape, rng, dev)
        hkey = host_key(key)
        t = dmlgpu.tensor(a, device=dev)
        want = outcome(lambda: a[hkey])

        def read():
            got = t[key]
            return got.numpy()
        check(want, outcome(read))
        if isinstance(want, type):
            continue
        # writes: values of the indexed shape (duplicates: the last in row-major order wins), or broadcast
        vals = sample(want.shape, dtype, rng)
        if want.ndim and want.size and rng.random() < 0.3:
            vals = vals[(0,) * (want.ndim - 1)]              # broadcast along the leading dimensions
        ref = a.copy()
        ref[hkey] = vals
        t2 = dmlgpu.tensor(a, device=dev)
        value = dmlgpu.tensor(vals, device=dev) if rng.random() < 0.3 else vals
        t2[key] = value
        same_bytes(t2.numpy(), ref)


@pytest.mark.parametrize("seed", range(6))
def test_fuzz_ufunc_at_against_numpy(dev, seed):
    rng = np.random.default_rng(100 + seed)
    for case in range(12):
        shape = tuple(int(n) for n in rng.integers(1, 5, rng.integers(1, 4)))
        dtype = ARITH[rng.integers(len(ARITH))]
        a = (rng.standard_normal(shape) * 8).astype(dtype)
        key = random_key(shape, rng, dev)
        hkey = host_key(key)
        try:
            sub = a[hkey]
        except IndexError:
            t = dmlgpu.tensor(a, device=dev)
            with pytest.raises(IndexError):
                np.add.at(t, key, 1)
            same_bytes(t.numpy(), a)
            continue
        vals = (rng.standard_normal(sub.shape) * 8).astype(dtype)
        for ufunc in (np.add, np.multiply, np.maximum, np.minimum):
            ref = a.copy()
            with np.errstate(all="ignore"):
                ufunc.at(ref, hkey, vals)
            t = dmlgpu.tensor(a, device=dev)
            ufunc.at(t, key, vals)
            same_bytes(t.numpy(), ref)


def test_duplicates_last_wins_and_sums_in_row_major_order(dev):
    a = np.zeros((4, 3), np.float32)
    t = dmlgpu.tensor(a, device=dev)
    t[[1, 3, 1, 1]] = np.arange(12, dtype=np.float32).reshape(4, 3)
    same_bytes(t.numpy()[1], np.array([9, 10, 11], np.float32))
    big, tiny = np.float32(2**24), np.float32(1)
    g = np.zeros(2, np.float32)
    vals = np.array([big, tiny, tiny, -big], np.float32)        # order-sensitive: ((0 + 2^24) + 1) + 1 - 2^24
    np.add.at(g, [0, 0, 0, 0], vals)
    tg = dmlgpu.tensor(np.zeros(2, np.float32), device=dev)
    np.add.at(tg, [0, 0, 0, 0], vals)
    same_bytes(tg.numpy(), g)


def test_tensor_indices_checked_on_the_device(dev):
    a = np.arange(20, dtype=np.float32).reshape(5, 4)
    t = dmlgpu.tensor(a, device=dev)
    ids = dmlgpu.tensor(np.array([4, -5, 0]), device=dev)
    same_bytes(t[ids].numpy(), a[[4, -5, 0]])
    i0 = dmlgpu.tensor(np.array(3), device=dev)                       # a 0-d index Tensor: a gather
    same_bytes(t[i0].numpy(), a[3])
    same_bytes(t[:, i0].numpy(), a[:, 3])
    bad = t[dmlgpu.tensor(np.array([1, 5]), device=dev)]
    with pytest.raises(IndexError, match="Tensor\\[\\]"):
        bad.numpy()
    t[dmlgpu.tensor(np.array([0, 7]), device=dev)] = 1.0             # a write: guarded by the device's check
    for _ in range(2):                                                  # t fails: every read raises
        with pytest.raises(IndexError, match="^Tensor\\[\\]: index 7 at indices position \\(1,\\) "):
            t.numpy()
    t.write(a)                                                          # overwritten whole: clean again
    mask = dmlgpu.tensor(a[:, 0] > 7, device=dev)                     # a boolean Tensor: read back
    same_bytes(t[mask].numpy(), a[a[:, 0] > 7])
    t[mask] = -1.0
    b = a.copy()
    b[a[:, 0] > 7] = -1.0
    same_bytes(t.numpy(), b)


def test_writes_through_views_and_aliasing_values(dev):
    a = np.arange(48, dtype=np.int32).reshape(6, 8)
    t = dmlgpu.tensor(a, device=dev)
    v = t[1::2, ::-2]                                  # a strided view: writes reach the base
    v[[0, 2], [1, 1]] = np.array([-1, -2], np.int32)
    b = a.copy()
    b[1::2, ::-2][[0, 2], [1, 1]] = [-1, -2]
    same_bytes(t.numpy(), b)
    t[[0, 1]] = t[[1, 0]]                               # values from the same tensor
    b[[0, 1]] = b[[1, 0]]
    same_bytes(t.numpy(), b)
    t[[5, 4]] = t[4:6]                                  # a view of the target as the values
    b[[5, 4]] = b[4:6].copy()
    same_bytes(t.numpy(), b)


def test_bad_keys_raise_numpys_errors_and_change_nothing(dev):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = dmlgpu.tensor(a, device=dev)
    cases = [(np.array([1.0]), "arrays used as indices must be of integer"), ([1.0], "only integers, slices"),
             ((0, 0, [0]), "too many indices"), (np.array([True, False]), "boolean index did not match"),
             (([0, 1], [0, 1, 2]), "shape mismatch"), ([3], "index 3 is out of bounds for axis 0 with size 3"),
             ((slice(None), [-5]), "index -5 is out of bounds for axis 1 with size 4")]
    for key, message in cases:
        with pytest.raises(IndexError, match="^Tensor\\[\\]: " + message):
            t[key]
        with pytest.raises(IndexError, match="^Tensor\\[\\]: " + message):
            t[key] = 5.0
        same_bytes(t.numpy(), a)
    with pytest.raises(ValueError, match="Tensor\\[\\].*broadcast"):
        t[[0, 1]] = np.ones((3, 4), np.float32)
    other = dmlgpu.Device(direct_memory=False)
    try:
        with pytest.raises(dmlgpu.DeviceError, match="^Tensor\\[\\]: indices is a Tensor of device"):
            t[dmlgpu.tensor(np.array([0]), device=other)]
        with pytest.raises(dmlgpu.DeviceError, match="^Tensor\\[\\]: indices is a Tensor of device"):
            t[[0], dmlgpu.tensor(np.array([0]), device=other)] = 1.0
    finally:
        other.close()
    same_bytes(t.numpy(), a)
    with pytest.raises(TypeError, match="numpy.subtract.at does not run on a dmlgpu.Tensor"):
        np.subtract.at(t, [0], 1.0)
    with pytest.raises(TypeError, match="numpy.sqrt: .*t.numpy"):
        np.sqrt(t)


def test_jax_at(dev):
    a = np.arange(6, dtype=np.float32)
    x = dmlgpu.tensor(a, device=dev)
    same_bytes(x.at[[0, 0, 9, -1]].add(1.0).numpy(), np.array([2, 1, 2, 3, 4, 6], np.float32))   # 9: dropped
    same_bytes(x.at[[0, 0, 9]].add(1.0, mode="clip").numpy(), np.array([2, 1, 2, 3, 4, 6], np.float32))
    same_bytes(x.at[[1, 9, -9, -1]].get(mode="fill").numpy(), np.array([1, np.nan, np.nan, 5], np.float32))
    same_bytes(x.at[[1, 9]].get(mode="fill", fill_value=-1).numpy(), np.array([1, -1], np.float32))
    same_bytes(x.at[[1, 9, -9]].get().numpy(), np.array([1, 5, 0], np.float32))               # clamped
    same_bytes(x.at[[2, 2]].set(np.array([7, 8], np.float32)).numpy(), np.array([0, 1, 8, 3, 4, 5], np.float32))
    same_bytes(x.at[[1, 1]].multiply(3.0).numpy(), np.array([0, 9, 2, 3, 4, 5], np.float32))
    same_bytes(x.at[[1, 4]].min(2.0).numpy(), np.array([0, 1, 2, 3, 2, 5], np.float32))
    same_bytes(x.at[[1, 4]].max(2.0).numpy(), np.array([0, 2, 2, 3, 4, 5], np.float32))
    same_bytes(x.at[2:4].set(0.0).numpy(), np.array([0, 1, 0, 0, 4, 5], np.float32))
    m = dmlgpu.tensor(np.arange(12, dtype=np.int32).reshape(3, 4), device=dev)
    got = m.at[[0, 5], 1:3].set(np.array([[-1, -2], [-3, -4]], np.int32)).numpy()       # row 5: dropped
    want = np.arange(12, dtype=np.int32).reshape(3, 4)
    want[0, 1:3] = [-1, -2]
    same_bytes(got, want)
    same_bytes(m.at[[7]].get(mode="fill").numpy(), np.full((1, 4), np.iinfo(np.int32).min, np.int32))
    same_bytes(x.numpy(), a)                                                            # never changed
    with pytest.raises(ValueError, match="mode must be one of"):
        x.at[[0]].get(mode="drop")
    with pytest.raises(ValueError, match="mode must be one of"):
        x.at[[0]].set(1.0, mode="fill")


def test_jax_at_with_one_index_tensor_runs_on_the_device(dev):
    a = np.arange(12, dtype=np.float32).reshape(6, 2)
    x = dmlgpu.tensor(a, device=dev)
    hids = np.array([0, 9, -1, -7, 0])
    ids = dmlgpu.tensor(hids, device=dev)
    for mode in (None, "clip", "fill"):
        same_bytes(x.at[ids].get(mode=mode).numpy(), x.at[hids].get(mode=mode).numpy())
    same_bytes(x.at[ids].get(mode="fill", fill_value=-2).numpy(), x.at[hids].get(mode="fill", fill_value=-2).numpy())
    vals = np.arange(10, dtype=np.float32).reshape(5, 2)
    for name in ("set", "add", "multiply", "min", "max"):
        for mode in (None, "drop", "clip"):
            got = getattr(x.at[ids], name)(vals, mode=mode).numpy()
            same_bytes(got, getattr(x.at[hids], name)(vals, mode=mode).numpy())
    same_bytes(x.numpy(), a)


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint32, np.uint64])
def test_writes_on_tensor_indices_are_guarded_by_the_device_check(dev, index_dtype):
    """An in-place scatter on Tensor indices under NumPy's rule (t[ids] = v, ufunc.at, scatter_nd(out=t,
    mode="raise")) is queued behind the device's check: nothing is read back, and where an index is bad nothing is
    written and the target fails (every read raises the IndexError until it is overwritten whole:
    dmlgpu/plans/index_check.py); its bytes are unchanged."""
    a = np.arange(24, dtype=np.float32).reshape(6, 4)
    good = np.array([5, 0, 5, 2]).astype(index_dtype)
    bad = np.array([1, 6, 2, 3]).astype(index_dtype)
    vals = np.arange(16, dtype=np.float32).reshape(4, 4) + 100
    writes = [lambda t, i: t.__setitem__(i, vals),
              lambda t, i: np.add.at(t, i, vals),
              lambda t, i: np.maximum.at(t, i, vals),
              lambda t, i: dmlgpu.scatter_nd(t, i.reshape(4, 1), vals, out=t, mode="raise"),
              lambda t, i: dmlgpu.scatter_nd(t, i.reshape(4, 1), vals, reduction="mul", out=t, mode="raise")]
    refs = [lambda r, i: r.__setitem__(i, vals), lambda r, i: np.add.at(r, i, vals),
            lambda r, i: np.maximum.at(r, i, vals), lambda r, i: r.__setitem__(i, vals),
            lambda r, i: np.multiply.at(r, i, vals)]
    for write, ref in zip(writes, refs):
        t = dmlgpu.tensor(a, device=dev)
        write(t, dmlgpu.tensor(good, device=dev))
        want = a.copy()
        ref(want, good.astype(np.int64))
        same_bytes(t.numpy(), want)
        write(t, dmlgpu.tensor(bad, device=dev))
        for _ in range(2):
            with pytest.raises(IndexError, match="index 6 at indices position \\(1"):
                t.numpy()
        with pytest.raises(IndexError, match="index 6 at indices position \\(1"):
            write(t, dmlgpu.tensor(good, device=dev))           # a call reading it raises at the call
        t.write(want)                               # overwritten whole: clean again
        same_bytes(t.numpy(), want)
        write(t, dmlgpu.tensor(good, device=dev))   # the next call runs as usual
        ref(want, good.astype(np.int64))
        same_bytes(t.numpy(), want)
