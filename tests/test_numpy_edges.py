"""Issue 39, items 7 and 8: NumPy's behaviour at the edges of take, and one range rule for Tensor indices
(put_along_axis raises IndexError as take does, by the driver's one check)."""
import numpy as np
import pytest

import dmlgpu

from strategies import same_bytes


def _numpy(fn):
    try:
        return fn(), None
    except Exception as e:                          # noqa: BLE001 (NumPy's own exception type, matched below)
        return None, type(e)


EDGES = [
    lambda m: m.take(np.zeros((5, 0, 0), np.uint8), 3, axis=-1, mode="clip"),
    lambda m: m.take(np.zeros((5, 0, 0), np.uint8), 3, axis=-1, mode="wrap"),
    lambda m: m.take(np.zeros((5, 0, 0), np.uint8), 3, axis=-1),
    lambda m: m.take(np.zeros((5, 0), np.uint8), [3], axis=1, mode="clip"),
    lambda m: m.take(np.zeros((0, 4), np.int16), [], axis=1),
    lambda m: m.take(np.array(3.5), [0], axis=0),
    lambda m: m.take(np.array(3.5), [0]),
    lambda m: m.take(np.array(3.5), [1], axis=0),
    lambda m: m.take(np.array(3.5), [0], axis=1),
    lambda m: m.take(np.arange(3, dtype=np.float32), [1], out=np.zeros(1)),
    lambda m: m.take(np.arange(3, dtype=np.float64), [1], out=np.zeros(1, np.float32)),
    lambda m: m.take(np.arange(3, dtype=np.int32), [2], out=np.zeros(1, np.int64)),
    lambda m: m.take(np.arange(3, dtype=np.int64), [2], out=np.zeros(1, np.int32)),
    lambda m: m.take(np.arange(3.0), np.array([1, -1], np.int8)),
]


@pytest.mark.parametrize("case", range(len(EDGES)))
def test_take_edges_as_numpy(case):
    expected, error = _numpy(lambda: EDGES[case](np))
    if error is not None:
        with pytest.raises(error):
            EDGES[case](dmlgpu)
        return
    got = EDGES[case](dmlgpu)
    same_bytes(np.asarray(got), np.asarray(expected))


def test_narrow_and_foreign_index_tensors():
    t = dmlgpu.tensor(np.arange(10.0))
    for dtype in (np.int8, np.uint8, np.int16, np.uint16):
        idx = np.array([9, 0, 3], dtype)
        same_bytes(dmlgpu.take(t, dmlgpu.tensor(idx)).numpy(), np.take(np.arange(10.0), idx))
        same_bytes(dmlgpu.gather(t, dmlgpu.tensor(idx)).numpy(), np.take(np.arange(10.0), idx))
    with pytest.raises(TypeError, match="^take: indices Tensor has dtype >i8.*native byte order"):
        dmlgpu.take(t, dmlgpu.tensor(np.array([1], ">i8")))


def test_put_along_axis_tensor_indices_raise_as_take_does():
    """The issue's finding: put_along_axis(T, tensor([[100]]), 1.0, axis=1) wrote the last column."""
    a = np.zeros((2, 4), np.float32)
    t = dmlgpu.tensor(a)
    bad = dmlgpu.tensor(np.array([[100]]))
    dmlgpu.take(t, bad, axis=1)                     # Tensor indices: checked on the device; the result dropped,
    same_bytes(t.numpy(), a)                        # t is not reached: its reads never raise it;
    with pytest.raises(IndexError, match="^take: index 100"):
        t.device.synchronize()                      # the device-wide point does, once
    dmlgpu.put_along_axis(t, bad, 1.0, axis=1)      # in place: the check guards the scatter (nothing written), and
    for _ in range(2):                              # the target fails until it is overwritten whole
        with pytest.raises(IndexError, match="^put_along_axis: index 100 at indices position \\(0, 0\\) is out of"):
            t.numpy()
    t.write(a)
    dmlgpu.put_along_axis(t, dmlgpu.tensor(np.array([[-5], [0]])), dmlgpu.tensor(np.ones((2, 1), np.float32)), axis=1)
    with pytest.raises(IndexError, match="^put_along_axis: index -5"):
        t.numpy()
    t.write(a)
    dmlgpu.put_along_axis(t, dmlgpu.tensor(np.array([[-1], [0]])), 2.0, axis=1)
    np.put_along_axis(a, np.array([[-1], [0]]), 2.0, axis=1)
    same_bytes(t.numpy(), a)
