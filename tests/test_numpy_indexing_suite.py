"""NumPy's own indexing tests (numpy/_core/tests/test_indexing.py, shipped with NumPy) run against Tensors.

Run here, through subclasses whose checks index a Tensor instead of the ndarray:

- ``TestMultiIndexingAutomated`` (test_boolean, test_multidim, test_1d): every key its combinations make (integer
  and boolean arrays of up to 3 dimensions, empty ones, ints, slices with negative steps, None, ``...``) read
  and assigned on a Tensor of a 4-d arange and of an empty 4-d array, against NumPy's own result: the same
  values and shape, or the same exception type. NumPy's view-or-copy and reference-count checks do not apply
  (advanced keys always give a new Tensor; basic keys always a view).
- ``TestBroadcastedAssignments`` (test_prepend_not_one, test_simple_broadcasting_errors): their ``assign`` writes
  a Tensor.

Not run, and why: the tests of those classes that index ndarrays directly instead of through the class's
hooks (test_prepending_ones, test_broadcast_error_reports_correct_shape, test_index_is_larger,
test_broadcast_subspace: their keys are covered by tests/test_indexing.py's fuzz), ``TestIndexing`` (object
arrays, subclasses, reference counts, memory order, the C API: ndarray internals), ``TestFieldIndexing`` (field
names: a Tensor has no fields), ``TestSubclasses``, ``TestFancyIndexingCast`` and
``TestFancyIndexingEquivalence`` (object and complex casts), ``TestFlatiterIndexing`` (no ``flat``),
``TestCApiAccess``."""
from __future__ import annotations

import numpy as np
import pytest

import dmlgpu

suite = pytest.importorskip("numpy._core.tests.test_indexing")


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:           # noqa: BLE001  (NumPy's exception type is the reference)
        return None, type(e)


def check_on_tensor(arr: np.ndarray, index) -> None:
    """``arr[index]`` and ``arr[index] = values`` on a Tensor against NumPy's own result."""
    want, error = _outcome(lambda: arr[index])
    t = dmlgpu.tensor(arr)
    if error is not None:
        with pytest.raises(error):
            t[index]
        with pytest.raises(error):
            t[index] = 0
        np.testing.assert_array_equal(t.numpy(), arr)
        return
    got = t[index]
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.shape == np.shape(want)
    values = want + 1000
    b = arr.copy()
    b[index] = values
    t[index] = values
    np.testing.assert_array_equal(t.numpy(), b)


class TestMultiIndexingOnTensors(suite.TestMultiIndexingAutomated):
    def _check_multi_index(self, arr, index):
        check_on_tensor(arr, index)

    def _check_single_index(self, arr, index):
        check_on_tensor(arr, index)


class TestBroadcastedAssignmentsOnTensors(suite.TestBroadcastedAssignments):
    def assign(self, a, ind, val):
        t = dmlgpu.tensor(a)
        t[ind] = val
        return t.numpy()

    test_prepending_ones = test_broadcast_error_reports_correct_shape = test_index_is_larger = None  # type: ignore
    test_broadcast_subspace = None  # type: ignore
