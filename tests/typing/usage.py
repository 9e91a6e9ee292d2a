"""What a type checker sees of dmlgpu's API (tests/test_typing.py runs mypy on this file; it is not run)."""
import numpy as np

import dmlgpu
import dmlgpu.onnx

table = np.zeros((4, 3), np.float32)
t = dmlgpu.tensor(table)
ids = np.array([0, 3])

reveal_type(dmlgpu.gather(table, ids))                            # R: numpy.ndarray
reveal_type(dmlgpu.gather(t, ids))                                # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.gather(table, dmlgpu.tensor(ids)))             # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.gather_elements(table, np.zeros((4, 1), int), axis=1))   # R: numpy.ndarray
reveal_type(dmlgpu.gather_nd(t, [[0, 1]]))                        # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_nd(table, [[1]], table[:1], reduction="add"))    # R: numpy.ndarray
reveal_type(dmlgpu.scatter_nd(table, [[1]], dmlgpu.tensor(table[:1])))      # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_elements(t, [[0]], [[1.0]], 1))        # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take_along_axis(table, np.zeros((4, 1), int), axis=1))   # R: numpy.ndarray
reveal_type(dmlgpu.take(t, [1]))                                  # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take(table, [1], out=np.empty(1, np.float32)))            # R: numpy.ndarray
reveal_type(dmlgpu.segment_reduce(table, [0, 4]))                 # R: numpy.ndarray
reveal_type(dmlgpu.segment_reduce(t, [0, 4], "max"))              # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.embedding_bag(table, ids, [0], mode="mean"))   # R: numpy.ndarray
reveal_type(dmlgpu.embedding_bag(table, dmlgpu.tensor(ids), [0])) # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.gather_scatter(table, ids, ids, dim_size=4))   # R: numpy.ndarray
reveal_type(dmlgpu.gather_scatter(t, ids, ids, "max", out=t))     # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.gather_scatter(table, dmlgpu.EdgeGroups(ids, ids), reduction="mean"))   # R: dmlgpu.api.tensor.Tensor
reveal_type(t[ids])                                               # R: dmlgpu.api.tensor.Tensor
reveal_type(t.at[ids].get(mode="fill"))                           # R: dmlgpu.api.tensor.Tensor
reveal_type(t.at[ids].add(1.0))                                   # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take(table, ids))                              # R: numpy.ndarray
reveal_type(dmlgpu.take(table, ids, axis=1, mode="clip"))         # R: numpy.ndarray
reveal_type(dmlgpu.take(table, 1))                                # R: Any
reveal_type(dmlgpu.take(table, dmlgpu.tensor(ids)))               # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take(t.T, ids))                                # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take_along_axis(t, np.zeros((4, 1), int), axis=1))       # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take_along_axis(table, dmlgpu.tensor(ids), axis=None))   # R: dmlgpu.api.tensor.Tensor


def numpy_in_numpy_out(a: np.ndarray) -> np.ndarray:              # (mypy --strict: no Any returned)
    return dmlgpu.take(a, np.array([0]))


def either(a: np.ndarray | dmlgpu.Tensor) -> None:
    # mypy matches a union whole before it splits it, and a Tensor is an ArrayLike: the NumPy overload is
    # taken (a Tensor comes back at run time); isinstance() narrows it (docs/guide/semantics.md)
    reveal_type(dmlgpu.take(a, ids))                              # R: numpy.ndarray
    if isinstance(a, dmlgpu.Tensor):
        reveal_type(dmlgpu.take(a, ids))                          # R: dmlgpu.api.tensor.Tensor


# Arguments whose types hold Any (ids: ndarray[..., dtype[Any]]) next to a Tensor: still a Tensor
upd = np.array([[1.0, 2.0, 3.0]])
reveal_type(dmlgpu.scatter_nd(t, ids[:1, None], upd))             # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_elements(table, ids[None, :1], dmlgpu.tensor(upd[:, :1]), 1))  # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_elements(upd, ids[None, :1], upd[:, :1], 1))     # R: numpy.ndarray
reveal_type(dmlgpu.gather_nd(upd, dmlgpu.tensor(ids[:, None])))   # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.take_along_axis(t, ids[None, :], axis=1))      # R: dmlgpu.api.tensor.Tensor

# A Tensor is an ArrayLike for NumPy's stubs (np.take runs dmlgpu.take on it: a Tensor at run time)
reveal_type(np.take(t, [1]))                                      # R: numpy.ndarray
reveal_type(np.asarray(t))                                        # R: numpy.ndarray
reveal_type(t.numpy())                                            # R: numpy.ndarray
reveal_type(t.device)                                             # R: dmlgpu.api.device.Device
reveal_type(dmlgpu.default_device().record())                     # R: dmlgpu.runtime.recording.Recording
reveal_type(dmlgpu.onnx.prepare(b""))                             # R: dmlgpu.onnx.DmlgpuRep

dmlgpu.gather(table, ids, mode="wrap")                            # E: No overload variant
reveal_type(dmlgpu.gather(t, ids, mode="fill", fill_value=-1.0))  # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_elements(table, [[0]], [[1.0]], 1, mode="drop", reduction="add"))   # R: numpy.ndarray
dmlgpu.gather_nd(table, [[0]], mode="drop")                       # E: No overload variant
dmlgpu.scatter_nd(table, [[1]], table[:1], mode="fill")           # E: No overload variant
dmlgpu.scatter_nd(table, [[1]], table[:1], mode="drop", fill_value=0)        # E: No overload variant
dmlgpu.scatter_nd(table, [[1]], table[:1], reduction="avg")       # E: No overload variant
dmlgpu.gather(table, ids, device="gpu")                           # E: No overload variant
dmlgpu.take(table, ids, mode="clamp")                             # E: No overload variant
dmlgpu.segment_reduce(table, [0, 4], "median")                    # E: No overload variant
dmlgpu.embedding_bag(table, ids, [0], mode="min")                 # E: No overload variant
dmlgpu.gather(table, ids, device=0)

dev = dmlgpu.Device(0, feature_level="4.1", max_queued=8)
dmlgpu.put_along_axis(table, np.zeros((4, 1), np.int64), 1.0, axis=1)
reveal_type(dmlgpu.empty((2, 3), np.float16, device=dev))        # R: dmlgpu.api.tensor.Tensor
reveal_type(dev.memory_stats())                                   # R: dict[str, int]
reveal_type(dmlgpu.devices()[0].name)                             # R: str
desc = dmlgpu.GatherDesc(dmlgpu.TensorDesc(dmlgpu.DataType.FLOAT32, (1, 1, 3, 2)),
                         dmlgpu.TensorDesc(dmlgpu.DataType.UINT32, (1, 1, 1, 2)),
                         dmlgpu.TensorDesc(dmlgpu.DataType.FLOAT32, (1, 1, 2, 2)), axis=2, index_dimensions=1)
dev.compile(desc).execute(input=dev.buffer(table), indices=dev.buffer(nbytes=8), output=dev.buffer(nbytes=16))
with dev.record() as rec:
    rec.upload(t)
reveal_type(dmlgpu.onnx.prepare("model.onnx", dml_device=dev).run([ids]))   # R: tuple[Any, ...]
reveal_type(dmlgpu.zeros(3, device=dev))                          # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.full((2, 2), 7, np.uint16)[1:])                # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.asarray(t, dtype=np.float16).reshape(-1))      # R: dmlgpu.api.tensor.Tensor
reveal_type(t.tolist())                                           # R: Any
with dev.record() as rec2:
    rec2.download(t)
reveal_type(rec2.host(t))                                         # R: numpy.ndarray

# out=X gives X's type, whatever the operands (every signature: dmlgpu/api/signatures.py)
view = dmlgpu.empty((2, 3), np.float32)
reveal_type(dmlgpu.gather(table, ids, out=np.empty((2, 3), np.float32)))             # R: numpy.ndarray
reveal_type(dmlgpu.gather_elements(t, np.zeros((4, 3), int), 0, out=t))               # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.gather_nd(table, [[0], [1]], batch_dims=0, out=view))              # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.gather_nd(table, [[0], [1]], 0, mode="raise"))                     # R: numpy.ndarray
reveal_type(dmlgpu.gather_nd(table, dmlgpu.tensor(np.array([[0]]))))                  # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_nd(t, [[1]], table[:1], reduction="max", include_self=False, out=t))  # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_nd(t, [[1]], table[:1], order="tree", out=t, unique_indices=True))   # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_nd(t, [[1]], table[:1], reduction="add", order="fixed-point", out=t))  # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.scatter_nd(table, [[1]], table[:1], out=table))                    # R: numpy.ndarray
reveal_type(dmlgpu.scatter_elements(table, [[0]], [[1.0]], axis=1, out=table))       # R: numpy.ndarray
reveal_type(dmlgpu.scatter_elements(table, [[0]], [[1.0]], 1, reduction="mean"))      # R: numpy.ndarray
reveal_type(dmlgpu.scatter_elements(table, dmlgpu.tensor(ids), [[1.0]], 1))           # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.zeros_like(table, device=dev))                                     # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.empty_like(t, np.float16))                                         # R: dmlgpu.api.tensor.Tensor
dmlgpu.gather_nd(table, [[0]], axis=0)                                                # E: No overload variant
dmlgpu.gather_elements(table, ids, batch_dims=0)                                      # E: No overload variant
dmlgpu.scatter_nd(table, [[1]], table[:1], axis=0)                                    # E: No overload variant
dmlgpu.scatter_elements(table, [[0]], [[1.0]], order="random")                        # E: No overload variant
dmlgpu.scatter_nd(table, [[1]], table[:1], out=3)                                     # E: No overload variant
dmlgpu.ones_like(table, dtype=np.int8, devise=0)                                      # E: Unexpected keyword argument
reveal_type(dmlgpu.from_dlpack(table))                                                # R: dmlgpu.api.tensor.Tensor
reveal_type(dmlgpu.from_dlpack(t, device=dev, copy=True))                             # R: dmlgpu.api.tensor.Tensor
reveal_type(t.__dlpack_device__())                                                    # R: tuple[int, int]
dmlgpu.from_dlpack([1.0, 2.0])                                                        # E: Argument 1 to "from_dlpack" has incompatible type
