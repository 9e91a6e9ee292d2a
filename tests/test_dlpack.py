"""DLPack both ways (issue 50; dmlgpu/api/dlpack.py, dmlgpu/runtime/export.py, kp patch 0026).

The host path (kDLCPU views of host-mapped Tensors, from_dlpack of CPU producers) runs on lavapipe; under
DMLGPU_DIRECT_MEMORY=0 the same tests check that no view is handed where the memory is not mapped. The CUDA path
(kDLCUDA exports through exportable memory, from_dlpack of CUDA tensors, docs/guide/interop.md's embedding example) runs where
PyTorch sees a CUDA device (``torch.cuda.is_available()``) and skips elsewhere."""
import ctypes
import gc
import os
import re
import pathlib
import weakref

import numpy as np
import pytest

import dmlgpu
from dmlgpu import DeviceError
from dmlgpu.api import dlpack_abi as dlpack      # (DLPack's codes, structures and capsules)
from dmlgpu.runtime import cuda, export

try:
    import ml_dtypes
except ModuleNotFoundError:          # (the tests of bfloat16 and float8 skip)
    ml_dtypes = None
needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="ml_dtypes is not installed")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]
ML = {"bfloat16": (4, 16), "float8_e4m3fn": (10, 8), "float8_e5m2": (12, 8)}


def mapped(t) -> bool:
    """Whether the Tensor's memory is host memory this process maps (a kDLCPU view can be made)."""
    return t.__dlpack_device__() == (dlpack.CPU, 0)


def on_host(t):
    """``t`` through NumPy: a view where its memory is host memory, else a host copy (dl_device kDLCPU allows it)."""
    return np.from_dlpack(t, device="cpu")


def fields(capsule):
    """(name, version or None, flags, device, ndim, (code, bits, lanes), shape, strides, data) of a capsule made by
    Tensor.__dlpack__, read with ctypes (not consumed)."""
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    n = name(capsule)
    struct = dlpack._DLManagedTensorVersioned if n == dlpack.NAME_VERSIONED else dlpack._DLManagedTensor
    m = struct.from_address(dlpack._pointer(capsule, n))
    t = m.dl_tensor
    version = (m.version.major, m.version.minor) if struct is dlpack._DLManagedTensorVersioned else None
    flags = m.flags if version else None
    dims = (lambda at: tuple((ctypes.c_int64 * t.ndim).from_address(at)) if t.ndim else ())
    return (n, version, flags, (t.device.device_type, t.device.device_id), t.ndim,
            (t.dtype.code, t.dtype.bits, t.dtype.lanes), dims(t.shape), dims(t.strides) if t.strides else None,
            t.data)


# ---- the producer, host memory ----
def test_np_from_dlpack_shares_memory_or_refuses(device):
    t = dmlgpu.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    if not mapped(t):          # no view for NumPy: a CUDA view (NVIDIA), or unmapped memory (DMLGPU_DIRECT_MEMORY=0)
        if t.__dlpack_device__()[0] == dlpack.CUDA:
            with pytest.raises((BufferError, RuntimeError)):
                np.from_dlpack(t)                  # NumPy refuses a kDLCUDA capsule
        else:
            assert t.__dlpack_device__() == (dlpack.VULKAN, device.info.index)
            with pytest.raises(BufferError, match="direct_memory is off"):
                np.from_dlpack(t)
        copied = np.from_dlpack(t, device="cpu", copy=True)
        assert np.array_equal(copied, np.arange(12, dtype=np.float32).reshape(3, 4))
        copied[0, 0] = 5
        assert t.item(0, 0) == 0
        return
    a = np.from_dlpack(t)
    assert a.ctypes.data == export.host_address(t.buffer)[0]          # the same address: no copy
    a[1, 2] = 99                                                       # a write through NumPy ...
    assert t.item(1, 2) == 99 and t.numpy()[1, 2] == 99                # ... is dmlgpu's
    dmlgpu.put_along_axis(t, np.array([[0], [0], [0]]), np.float32(-1), axis=1)   # queued on the device ...
    device.synchronize()
    assert list(a[:, 0]) == [-1, -1, -1]                               # ... and seen through NumPy
    assert not np.from_dlpack(t, copy=True).ctypes.data == a.ctypes.data


def test_host_time_of_an_export(device):
    """The issue's lavapipe target is 20 us; measured loosely here (a shared CI machine), bench/probes/dlpack.py
    measures it."""
    import time
    t = dmlgpu.zeros((256, 256), np.float32, device=device)
    if not mapped(t):
        pytest.skip("no kDLCPU view without direct memory")
    np.from_dlpack(t)
    start = time.perf_counter()
    for _ in range(100):
        np.from_dlpack(t)
    assert (time.perf_counter() - start) / 100 < 1e-3


@pytest.mark.parametrize("key", [np.s_[1:, ::2], np.s_[::-1], np.s_[2], np.s_[1, 1], np.s_[:, 3], np.s_[::2, ::-3],
                                 "T"], ids=str)
def test_views_at_their_offsets_and_strides(device, key):
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    t = dmlgpu.tensor(base, device=device)
    v = t.T if key == "T" else t[key]
    want = base.T if key == "T" else base[key]
    got = on_host(v)
    assert got.shape == want.shape and np.array_equal(got, want)
    cap = fields(v.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert cap[6] == want.shape
    if mapped(v):
        assert got.ctypes.data == export.host_address(t.buffer)[0] + v.offset
        assert cap[7] == v._element_strides()
        assert got.strides == tuple(s * 4 for s in v._element_strides())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_numpy_dtype(device, dtype):
    values = (np.arange(10) % 3 - 1).astype(dtype)
    t = dmlgpu.tensor(values, device=device)
    got = on_host(t)
    assert got.dtype == values.dtype and got.tobytes() == values.tobytes()
    dt = np.dtype(dtype)
    code = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}[dt.kind]
    assert fields(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))[5] == (code, dt.itemsize * 8, 1)


@needs_ml_dtypes
@pytest.mark.parametrize("name", ML, ids=str)
def test_bfloat16_and_float8(device, name):
    """NumPy's from_dlpack takes no bfloat16 or float8: the capsule's type fields are checked, and the bits read
    through dmlgpu's own view of them (interop.host_array)."""
    dtype = np.dtype(getattr(ml_dtypes, name))
    values = np.array([0.5, -1.0, 2.0, 0.0], dtype)
    t = dmlgpu.tensor(values, device=device)
    for max_version in ((1, 0), (1, 1), None):
        assert fields(t.__dlpack__(max_version=max_version, dl_device=(1, 0)))[5] == (*ML[name], 1)
    if mapped(t):
        with pytest.raises((BufferError, RuntimeError)):
            np.from_dlpack(t)                       # NumPy's refusal comes through (the capsule has no destructor)
        got = dmlgpu.api.interop.host_array(t)
        assert got.dtype == dtype and got.tobytes() == values.tobytes()


@pytest.mark.parametrize("dtype", ["U3", "S2", [("a", "i4"), ("b", "f4")], "M8[s]", "V4", ">i4"], ids=str)
def test_dtypes_dlpack_cannot_express(device, dtype):
    t = dmlgpu.tensor(np.zeros(4, dtype), device=device)
    with pytest.raises(BufferError, match=re.escape(str(np.dtype(dtype))) + ".*DLPack has no type code|"
                       "DLPack has no type code for dtype " + re.escape(str(np.dtype(dtype)))):
        t.__dlpack__(max_version=(1, 0))


def test_capsule_kinds_and_versions(device):
    t = dmlgpu.tensor(np.arange(6, dtype=np.float32), device=device)
    kind = dlpack.CPU if mapped(t) else None
    legacy = fields(t.__dlpack__(copy=None if kind else True, dl_device=None if kind else (1, 0)))
    assert legacy[0] == b"dltensor" and legacy[1] is None
    v10 = fields(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0)))
    assert v10[0] == b"dltensor_versioned" and v10[1] == (1, 0) and v10[3] == (1, 0)
    v11 = fields(t.__dlpack__(max_version=(1, 7), dl_device=(1, 0)))
    assert v11[1] == (1, 1)
    copied = fields(t.__dlpack__(max_version=(1, 1), copy=True))      # a copy on the Tensor's own device ...
    here = t.__dlpack_device__()
    assert copied[2] == dlpack.IS_COPIED and copied[3] == (here if here[0] == dlpack.CUDA else (1, 0))  # ... or host
    if kind:
        assert v10[2] == 0 and v10[8] == export.host_address(t.buffer)[0]
    with pytest.raises(BufferError, match="dl_device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(dlpack.CUDA, 99))
    with pytest.raises(TypeError, match="stream"):
        t.__dlpack__(stream="now")
    with pytest.raises(BufferError, match="kDLVulkan"):
        t.__dlpack__(max_version=(1, 0), dl_device=(dlpack.VULKAN, 0))
    if kind:
        assert fields(t[2:].view(np.uint8).__dlpack__(copy=False))[8] == export.host_address(t.buffer)[0] + 8
    elif here[0] == dlpack.VULKAN:
        with pytest.raises(BufferError, match="copy=True"):
            t.__dlpack__(copy=False)


def test_no_view_where_no_copy_is_allowed(device):
    """A Tensor held in several blocks is not one range of host memory: copy=False raises, a copy is handed."""
    with dmlgpu.Device(device.info.index, chunk_bytes=256) as dev:
        t = dmlgpu.tensor(np.arange(200, dtype=np.float32), device=dev)      # 800 bytes: 4 blocks
        assert t.buffer.chunked and t.__dlpack_device__()[0] == dlpack.VULKAN
        with pytest.raises(BufferError, match="blocks|direct_memory"):
            np.from_dlpack(t)
        with pytest.raises(BufferError):
            t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
        assert np.array_equal(np.from_dlpack(t, copy=True), np.arange(200, dtype=np.float32))


# ---- lifetimes ----
def test_tensor_deleted_while_numpy_holds_it(device):
    t = dmlgpu.tensor(np.arange(1000, dtype=np.int64), device=device)
    a = on_host(t)
    buf = weakref.ref(t.buffer)
    del t
    gc.collect()
    others = [dmlgpu.full(1000, 7, np.int64, device=device) for _ in range(4)]   # blocks of its size handed out
    device.synchronize()
    assert np.array_equal(a, np.arange(1000)) and len(others) == 4
    if buf() is not None:                       # a view: the capsule keeps the buffer until NumPy lets go
        del a
        gc.collect()
    assert buf() is None


def test_capsule_consumed_twice_raises(device):
    t = dmlgpu.tensor(np.arange(4, dtype=np.float32), device=device)
    if not mapped(t):
        pytest.skip("no kDLCPU view without direct memory")
    capsule = t.__dlpack__(max_version=(1, 0))

    class Once:
        def __dlpack__(self, **kwargs):
            return capsule

        def __dlpack_device__(self):
            return (1, 0)
    a = np.from_dlpack(Once())
    with pytest.raises((BufferError, ValueError, RuntimeError)):
        np.from_dlpack(Once())
    assert np.array_equal(a, np.arange(4, dtype=np.float32))


def test_unconsumed_capsule_lets_the_tensor_go(device):
    t = dmlgpu.tensor(np.arange(4, dtype=np.float32), device=device)
    buf = weakref.ref(t.buffer)
    capsule = t.__dlpack__(max_version=(1, 0), copy=None if mapped(t) else True)
    del t
    gc.collect()
    assert (buf() is not None) == mapped_capsule(capsule)
    del capsule
    gc.collect()
    assert buf() is None and not dlpack._unclaimed


def mapped_capsule(capsule) -> bool:
    return fields(capsule)[2] == 0


def test_queued_writes_are_finished_before_the_export(device):
    n = 1 << 16
    t = dmlgpu.zeros(n, np.float32, device=device)
    ids = dmlgpu.tensor(np.arange(n, dtype=np.int64).reshape(-1, 1), device=device)
    for k in range(1, 6):                      # queued (max_queued runs a batch), none waited for
        dmlgpu.scatter_nd(t, ids, dmlgpu.full(n, np.float32(k), device=device), out=t)
    assert (on_host(t) == 5).all()


# ---- the consumer ----
def test_from_dlpack_of_numpy_reads_in_place(device):
    a = np.arange(4096, dtype=np.float32)
    t = dmlgpu.from_dlpack(a, device=device)
    assert t.shape == a.shape and t.dtype == a.dtype and np.array_equal(t.numpy(), a)
    in_place = "externalMemoryHost" in device.features
    assert (export.host_address(t.buffer) is not None and export.host_address(t.buffer)[0] == a.ctypes.data) \
        == in_place
    if in_place:
        dmlgpu.put_along_axis(t, np.array([3]), np.float32(-5), axis=0)       # dmlgpu writes the array itself
        device.synchronize()
        assert a[3] == -5
        a[7] = 70                                                              # and reads what NumPy wrote
        assert t.item(7) == 70
        back = np.from_dlpack(t)                                               # round trip: the same memory
        assert back.ctypes.data == a.ctypes.data
        del t
        gc.collect()
        assert back[3] == -5
    c = dmlgpu.from_dlpack(a, device=device, copy=True)
    assert export.host_address(c.buffer) is None or export.host_address(c.buffer)[0] != a.ctypes.data
    a[0] = 123
    assert c.item(0) != 123


def test_from_dlpack_copies_what_it_cannot_import(device):
    odd = np.arange(3, dtype=np.int8)                      # 3 bytes: not a multiple of 4
    assert np.array_equal(dmlgpu.from_dlpack(odd, device=device).numpy(), odd)
    with pytest.raises(BufferError, match="multiple of 4|import host memory"):
        dmlgpu.from_dlpack(odd, device=device, copy=False)
    frozen = np.arange(64, dtype=np.float32)
    frozen.flags.writeable = False                         # read-only memory is copied, never shared
    t = dmlgpu.from_dlpack(frozen, device=device)
    assert export.host_address(t.buffer) is None or export.host_address(t.buffer)[0] != frozen.ctypes.data
    with pytest.raises(BufferError, match="read-only"):
        dmlgpu.from_dlpack(frozen, device=device, copy=False)
    strided = np.arange(64, dtype=np.float32).reshape(8, 8)[:, ::2]
    assert np.array_equal(dmlgpu.from_dlpack(strided, device=device).numpy(), strided)
    with pytest.raises(BufferError, match="C-contiguous|import host memory"):
        dmlgpu.from_dlpack(strided, device=device, copy=False)
    if ml_dtypes is not None:
        bf = np.array([1.5, -2.0, 0.25, 8.0], ml_dtypes.bfloat16)   # NumPy exports no bfloat16: its bits are read
        got = dmlgpu.from_dlpack(bf, device=device)
        assert got.dtype == bf.dtype and got.numpy().tobytes() == bf.tobytes()


def test_from_dlpack_of_tensors_and_bad_producers(device):
    t = dmlgpu.tensor(np.arange(4, dtype=np.int32), device=device)
    assert dmlgpu.from_dlpack(t) is t
    c = dmlgpu.from_dlpack(t, copy=True)
    assert c is not t and c.buffer is not t.buffer and np.array_equal(c.numpy(), t.numpy())
    with pytest.raises(TypeError, match="no DLPack producer"):
        dmlgpu.from_dlpack([1, 2, 3])

    class Elsewhere:
        def __init__(self, kind):
            self.kind = kind

        def __dlpack__(self, **kwargs):
            raise AssertionError("no capsule may be asked for")

        def __dlpack_device__(self):
            return (self.kind, 1)
    with pytest.raises(BufferError, match="kDLROCM 1"):
        dmlgpu.from_dlpack(Elsewhere(dlpack.ROCM), device=device)
    if export.cuda_state(device.runtime)[0] is None:
        with pytest.raises(BufferError, match="kDLCUDA 1"):
            dmlgpu.from_dlpack(Elsewhere(dlpack.CUDA), device=device)
    with pytest.raises(ValueError, match="copy"):
        dmlgpu.from_dlpack(np.zeros(4), copy="yes")


def test_from_dlpack_of_a_torch_cpu_tensor(device):
    torch = pytest.importorskip("torch")
    x = torch.arange(1024, dtype=torch.float32)
    t = dmlgpu.from_dlpack(x, device=device)
    assert np.array_equal(t.numpy(), x.numpy())
    if "externalMemoryHost" in device.features:
        assert export.host_address(t.buffer)[0] == x.data_ptr()
    if ml_dtypes is not None:
        b = torch.tensor([1.5, 2.5], dtype=torch.bfloat16)
        assert dmlgpu.from_dlpack(b, device=device).numpy().tobytes() == b.view(torch.int16).numpy().tobytes()


class _StandIn:
    """A producer that says its data is on CUDA device 0 but hands a capsule over host memory (made by dlpack's own
    capsule builder), for the consumer's logic where there is no GPU: runtime/export's CUDA calls are replaced by
    host copies (test_cuda_consumer_logic_with_a_stand_in)."""

    def __init__(self, array):
        self.array = array
        self.asked = []

    def __dlpack__(self, **kwargs):
        self.asked.append(kwargs)
        a = self.array
        code = dlpack.dl_dtype(a.dtype, "test")
        strides = tuple(s // a.itemsize for s in a.strides)
        return dlpack._capsule(a.ctypes.data, (dlpack.CUDA, 0), a.shape, strides, code, a, kwargs.get("max_version"))

    def __dlpack_device__(self):
        return (dlpack.CUDA, 0)


@pytest.mark.parametrize("key", ["all", "strided", "T", "reversed", "item", "empty", "bool", "bfloat16"])
def test_cuda_consumer_logic_with_a_stand_in(device, monkeypatch, key):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    a = {"all": base, "strided": base[1:, ::3], "T": base.T, "reversed": base[::-1, ::-2],
         "item": base[2:3, 3:4].reshape(()), "empty": base[:0], "bool": base > 20,
         "bfloat16": base.astype(ml_dtypes.bfloat16) if ml_dtypes else None}[key]
    if a is None:
        pytest.skip("ml_dtypes is not installed")
    copies = []

    def copy_from_cuda(buf, offset, src, nbytes):
        copies.append(nbytes)
        buf.write(np.frombuffer(ctypes.string_at(src, nbytes), np.uint8), offset)
    monkeypatch.setattr(export, "cuda_state", lambda dev: (0, ""))
    monkeypatch.setattr(export, "cuda_exportable", lambda buf: None)
    monkeypatch.setattr(export, "copy_from_cuda", copy_from_cuda)
    producer = _StandIn(a)
    t = dmlgpu.from_dlpack(producer, device=device)
    assert producer.asked == [{"stream": 1, "max_version": dlpack.VERSION}]
    assert t.shape == a.shape and t.dtype == a.dtype and t.numpy().tobytes() == np.ascontiguousarray(a).tobytes()
    assert len(copies) == (1 if a.size else 0)                 # one copy of the span the view covers
    gc.collect()
    assert not dlpack._live                                    # the producer's deleter ran
    with pytest.raises(BufferError, match="copy=False"):
        dmlgpu.from_dlpack(producer, device=device, copy=False)
    assert dmlgpu.tensor(producer, device=device).numpy().tobytes() == np.ascontiguousarray(a).tobytes()
    cast = dmlgpu.asarray(producer, dtype=np.float64, device=device)           # (dmlgpu.tensor, asarray: the same path)
    assert cast.dtype == np.float64 and np.array_equal(cast.numpy(), a.astype(np.float64))
    monkeypatch.setattr(export, "cuda_state", lambda dev: (None, "no CUDA driver here"))
    with pytest.raises(BufferError, match="kDLCUDA 0.*no CUDA driver here"):
        dmlgpu.from_dlpack(producer, device=device)


# ---- exportable memory (kp patch 0026) ----
def test_exportable_memory_gives_file_descriptors(device):
    if export.FEATURE not in device.features:          # (the device, or its profile, has none)
        with pytest.raises(DeviceError, match="exportable=True"):
            dmlgpu.Device(device.info.index, exportable=True)
        pytest.skip(f"{device.info.name} has no VK_KHR_external_memory_fd")
    with dmlgpu.Device(device.info.index, exportable=True) as dev:
        assert dev.exportable
        t = dmlgpu.tensor(np.arange(64, dtype=np.float32), device=dev)
        out = dmlgpu.take(t, dmlgpu.tensor(np.array([63, 1]), device=dev))
        assert out.numpy().tolist() == [63.0, 1.0]
        block = t.buffer.block_list[0]
        fd = block.tensor.memory_fd()
        try:
            assert os.fstat(fd).st_size >= 0 and block.tensor.allocation_size() >= block.size
        finally:
            os.close(fd)
        reason = export.cuda_exportable(t.buffer)
        assert (reason is None) == (export.cuda_state(dev.runtime)[0] is not None)
    with pytest.raises(DeviceError, match="exportable=True"):
        dmlgpu.Device(device.info.index, exportable=True, profile="no-export")
    with dmlgpu.Device(device.info.index, profile="no-export") as dev:
        assert not dev.exportable and export.FEATURE not in dev.features


# A stand-in for the CUDA driver (libcuda.so.1) where there is no GPU: its "device memory" is host memory, and an
# imported opaque fd (lavapipe's export: a memfd whose header, {u64 size, u64 data offset, ...}, Mesa's own importer
# reads) is mapped, so that its pointer aliases the Vulkan allocation. It runs the kDLCUDA path's runtime/cuda.py
# and runtime/export.py calls on lavapipe: fds exported once per block, imports of dedicated allocations, offsets,
# the ordering before an export, copies into exportable blocks, mappings released when blocks are destroyed.
FAKE_LIBCUDA = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
static unsigned char uuid[16];
int imports, frees;
int fake_set_uuid(const unsigned char* u) { memcpy(uuid, u, 16); return 0; }
int fake_counts(int* i, int* f) { *i = imports; *f = frees; return 0; }
int cuInit(unsigned f) { return 0; }
int cuDeviceGetCount(int* n) { *n = 1; return 0; }
int cuDeviceGet(int* d, int i) { *d = i; return 0; }
int cuDeviceGetUuid(unsigned char* out, int d) { memcpy(out, uuid, 16); return 0; }
int cuDevicePrimaryCtxRetain(void** ctx, int d) { *ctx = (void*)0x1234; return 0; }
int cuDevicePrimaryCtxRelease(int d) { return 0; }
int cuCtxPushCurrent_v2(void* c) { return c == (void*)0x1234 ? 0 : 201; }
int cuCtxPopCurrent_v2(void** c) { *c = (void*)0x1234; return 0; }
typedef struct { int type; union { int fd; void* w[2]; } h; unsigned long long size; unsigned flags;
                 unsigned r[16]; } HD;
typedef struct { unsigned long long offset, size; unsigned flags; unsigned r[16]; } BD;
typedef struct { int fd; unsigned long long size; } Ext;
int cuImportExternalMemory(Ext** out, const HD* d) {
    if (d->type != 1 || d->flags != 1) return 1;      /* an opaque fd, a dedicated allocation */
    Ext* e = malloc(sizeof *e); e->fd = d->h.fd; e->size = d->size; *out = e; imports++; return 0; }
int cuExternalMemoryGetMappedBuffer(unsigned long long* p, Ext* e, const BD* b) {
    struct stat st; fstat(e->fd, &st);
    if (b->offset + b->size > e->size) return 1;
    unsigned char* m = mmap(0, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, e->fd, 0);
    if (m == MAP_FAILED) return 2;
    *p = (unsigned long long)(m + ((uint64_t*)m)[1] + b->offset); return 0; }
int cuMemFree_v2(unsigned long long p) { frees++; return 0; }
int cuDestroyExternalMemory(Ext* e) { close(e->fd); free(e); return 0; }
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void* s) {
    memcpy((void*)dst, (void*)src, n); return 0; }
int cuStreamSynchronize(void* s) { return 0; }
int cuGetErrorName(int e, const char** s) { *s = "FAKE_ERROR"; return 0; }
"""


def _lavapipe_memfd(dev) -> bool:
    """Whether ``dev`` exports memory as lavapipe does (a memfd with Mesa's header), which the stand-in maps."""
    import mmap
    buf = dev.runtime._mgr.buffer(256, 0x1, True)
    fd = buf.memory_fd()
    try:
        size = os.fstat(fd).st_size
        with mmap.mmap(fd, size) as m:
            head = np.frombuffer(m[:16], np.uint64).copy()
        return bool(head[0] == size and 16 <= head[1] < size)
    except (OSError, ValueError):
        return False
    finally:
        os.close(fd)
        buf.destroy()


def test_the_cuda_path_on_a_stand_in_driver(device, tmp_path, monkeypatch):
    import shutil
    import subprocess
    from dmlgpu.runtime import clocks
    if export.FEATURE not in device.features or device.info.vendor_id == 0x10DE:
        pytest.skip("needs a device without CUDA that exports memory (lavapipe)")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler for the stand-in driver")
    (tmp_path / "fake.c").write_text(FAKE_LIBCUDA)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), str(tmp_path / "fake.c")],
                   check=True)
    lib = ctypes.CDLL(str(tmp_path / "libcuda.so.1"))
    with dmlgpu.Device(device.info.index, exportable=True, direct_memory=False, hold_clocks=False) as dev:
        if not _lavapipe_memfd(dev):
            pytest.skip("the driver's exported fds are not lavapipe's memfds")
        lib.fake_set_uuid(dev.physical_info.device_uuid)
        monkeypatch.setattr(clocks, "_cuda", lib)
        monkeypatch.setattr(cuda, "_contexts", {})          # (the stand-in's context is forgotten afterwards)
        assert export.cuda_state(dev.runtime) == (0, "")
        t = dmlgpu.tensor(np.arange(24, dtype=np.float32).reshape(4, 6), device=dev)
        assert t.__dlpack_device__() == (dlpack.CUDA, 0)
        f = fields(t.__dlpack__(max_version=(1, 0)))
        assert f[3] == (dlpack.CUDA, 0) and f[6:8] == ((4, 6), (6, 1))
        ptr = f[8]
        assert ctypes.string_at(ptr, 96) == t.numpy().tobytes()          # the pointer is the Tensor's memory
        ctypes.memmove(ptr + 4, np.array([77], np.float32).ctypes.data, 4)
        assert t.item(0, 1) == 77                                        # a "CUDA" write seen by dmlgpu
        dmlgpu.put_along_axis(t, np.zeros((4, 1), np.int64), np.float32(-3), axis=1)    # queued ...
        f = fields(t.__dlpack__(max_version=(1, 0)))                     # ... and finished before the export
        assert np.frombuffer(ctypes.string_at(f[8], 96), np.float32)[::6].tolist() == [-3] * 4
        v = t[1:, ::2]
        fv = fields(v.__dlpack__(max_version=(1, 0)))
        assert fv[8] == ptr + v.offset and fv[6:8] == ((3, 3), (6, 2))
        c = fields(t.__dlpack__(max_version=(1, 0), copy=True))
        assert c[8] != ptr and c[2] == dlpack.IS_COPIED and c[3] == (dlpack.CUDA, 0)
        base = np.arange(48, dtype=np.float32).reshape(6, 8)
        for a in (base, base[1:, ::3], base.T, base[::-1, ::-2]):        # "CUDA" producers: one copy each
            assert dmlgpu.from_dlpack(_StandIn(a), device=dev).numpy().tobytes() == np.ascontiguousarray(a).tobytes()
        imports, frees = ctypes.c_int(), ctypes.c_int()
        del t, v
        gc.collect()
        dev.empty_cache()                                                # destroyed blocks: mappings released
        lib.fake_counts(ctypes.byref(imports), ctypes.byref(frees))
        assert imports.value >= 2 and frees.value == imports.value and not dlpack._live    # (blocks mapped once)


def test_info_reports_dlpack(capsys):
    from dmlgpu.__main__ import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"DLPack: (kDLCPU zero-copy|kDLCUDA export|host copies only)", out)
    assert "from_dlpack: CPU producers" in out


# ---- the CUDA path: where PyTorch sees a CUDA device ----
def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    dev = dmlgpu.default_device()
    if dev.info.vendor_id != 0x10DE:
        pytest.skip(f"the default dmlgpu device ({dev.info.name}) is no NVIDIA GPU")
    ordinal, why = export.cuda_state(dev.runtime)
    assert ordinal is not None, why            # an NVIDIA GPU with CUDA: the kDLCUDA path must be there
    return torch, dev, ordinal


def test_torch_from_dlpack_shares_memory():
    torch, dev, ordinal = _torch_cuda()
    t = dmlgpu.tensor(np.arange(24, dtype=np.float32).reshape(4, 6), device=dev)
    assert t.__dlpack_device__() == (dlpack.CUDA, ordinal)
    x = torch.from_dlpack(t)
    assert x.device == torch.device("cuda", ordinal) and x.data_ptr() == export.cuda_pointer(t.buffer)[1]
    assert np.array_equal(x.cpu().numpy(), t.numpy())
    x.add_(1)                                   # PyTorch writes ...
    torch.cuda.synchronize()
    assert np.array_equal(t.numpy(), np.arange(24, dtype=np.float32).reshape(4, 6) + 1)    # ... dmlgpu reads
    dmlgpu.put_along_axis(t, np.zeros((4, 1), np.int64), np.float32(-7), axis=1)            # dmlgpu writes ...
    dev.synchronize()
    assert (x[:, 0].cpu() == -7).all()          # ... PyTorch reads
    v = t[1:, ::2]
    y = torch.from_dlpack(v)
    assert np.array_equal(y.cpu().numpy(), v.numpy()) and y.data_ptr() == x.data_ptr() + v.offset
    del t, v
    gc.collect()
    assert np.array_equal(x.cpu().numpy()[:, 0], [-7] * 4)     # the capsule kept the Tensor: memory still valid


def test_torch_sees_queued_writes_finished():
    torch, dev, _ = _torch_cuda()
    n = 1 << 20
    t = dmlgpu.zeros(n, np.float32, device=dev)
    ids = dmlgpu.tensor(np.arange(n, dtype=np.int64).reshape(-1, 1), device=dev)
    for k in range(1, 9):
        dmlgpu.scatter_nd(t, ids, dmlgpu.full(n, np.float32(k), device=dev), out=t)
    assert (torch.from_dlpack(t) == 8).all().item()


@pytest.mark.parametrize("name", ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64",
                                  "complex64", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_torch_dtypes_both_ways(name):
    torch, dev, _ = _torch_cuda()
    if name in ML and ml_dtypes is None:
        pytest.skip("ml_dtypes is not installed")
    dtype = np.dtype(getattr(ml_dtypes, name)) if name in ML else np.dtype(name)
    values = (np.arange(32) % 5).astype(np.float32).astype(dtype)
    t = dmlgpu.tensor(values, device=dev)
    x = torch.from_dlpack(t)
    assert x.dtype == getattr(torch, name)
    raw = x.view(torch.uint8) if name in ML else x      # (NumPy has no bfloat16 or float8: their bytes)
    assert raw.cpu().numpy().tobytes() == values.tobytes()
    source = torch.from_numpy(values.view(np.uint8).copy()).cuda().view(getattr(torch, name)) \
        if name in ML else torch.from_numpy(values.copy()).cuda()
    back = dmlgpu.from_dlpack(source)           # one device copy: the same bits
    assert back.dtype == dtype and back.numpy().tobytes() == values.tobytes()


def test_dmlgpu_from_torch_cuda_tensors_bit_for_bit():
    torch, dev, _ = _torch_cuda()
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(512, 96, device="cuda", generator=g)
    for src in (x, x[3:], x[:, ::3], x.t(), x[::2, 5:7], x[7, 9], x[:0]):
        t = dmlgpu.from_dlpack(src, device=dev)
        assert t.shape == tuple(src.shape) and t.numpy().tobytes() == src.cpu().numpy().tobytes()
    assert dmlgpu.tensor(x).numpy().tobytes() == x.cpu().numpy().tobytes()
    assert dmlgpu.asarray(x, dtype=np.float64).numpy().tobytes() == x.double().cpu().numpy().tobytes()
    with pytest.raises(BufferError, match="copy=False"):
        dmlgpu.from_dlpack(x, copy=False)


def test_cupy_and_jax_share_memory():
    _, dev, _ = _torch_cuda()
    t = dmlgpu.tensor(np.arange(10, dtype=np.float32), device=dev)
    ran = []
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        c = cupy.from_dlpack(t)
        assert c.data.ptr == export.cuda_pointer(t.buffer)[1] and cupy.asnumpy(c).tolist() == list(range(10))
        ran.append("cupy")
    try:
        import jax
        gpu = [d for d in jax.devices() if d.platform == "gpu"]
    except (ImportError, RuntimeError):
        gpu = []
    if gpu:
        j = jax.dlpack.from_dlpack(t)
        assert np.asarray(j).tolist() == list(range(10))
        ran.append("jax")
    if not ran:
        pytest.skip("neither CuPy nor JAX with a GPU is importable")


PAGE = "docs/guide/interop.md"      # its worked example (tests/test_docs.py leaves it to this file)


def _page_example() -> str:
    page = (ROOT / PAGE).read_text()
    section = page[page.index("### A worked example"):]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_page_embedding_example_gives_the_same_bits_twice():
    """docs/guide/interop.md's worked example: an embedding whose backward accumulates its gradient with dmlgpu's fixed-point
    add, in place, into a gradient buffer PyTorch uses as the weight's .grad; three steps, run twice."""
    torch, _, _ = _torch_cuda()
    code = _page_example()
    runs = []
    for _ in range(2):
        ns: dict = {}
        exec(compile(code, PAGE, "exec"), ns)
        runs.append((ns["weight"].detach().cpu().numpy().tobytes(), ns["grad_torch"].cpu().numpy().tobytes(),
                     ns["losses"]))
        ref = torch.zeros_like(ns["weight"], dtype=torch.float64)          # the last step's gradient, in float64
        ref.index_add_(0, ns["ids"], ns["last_upstream"].double())
        assert torch.allclose(ns["grad_torch"].double(), ref, rtol=1e-5, atol=1e-6)
    assert runs[0] == runs[1]
