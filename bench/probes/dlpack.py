"""Probe: DLPack both ways (issue 50; dmlgpu/api/dlpack.py, dmlgpu/runtime/export.py, kp patch 0026).

Parts (each prints its rows; a part that cannot run, or fails, says why and the others still run):
  a  np.from_dlpack(t) of a kDLCPU Tensor (unified memory, lavapipe): the same address?, host time per export
     (median; the issue's lavapipe target: <= 20 us).
  b  torch.from_dlpack(t) of a 1 GiB Tensor (kDLCUDA): the same device address?, a write on each side seen by the
     other, host time of the first export (maps the block into CUDA) and of later ones (median; target <= 50 us).
  c  dmlgpu.from_dlpack(x) of a 1 GiB torch CUDA tensor (one device copy) against x.clone() +
     torch.cuda.synchronize() (median wall time; target <= 1.2x), bits checked.
  d  the embedding-gradient step of README's worked example: 262,144 Zipf ids, rows of 64 float32, a 1M-row table:
     dmlgpu's fixed-point accumulate inside the PyTorch step (from_dlpack of the ids and of the upstream
     gradient, scatter_nd(reduction="add", order="fixed-point", out=grad), synchronize) against PyTorch's atomic
     grad.index_add_ and its deterministic mode (torch.use_deterministic_algorithms(True)), each + synchronize
     (medians; targets: <= 3.5x index_add_, >= 5x faster than deterministic mode), and whether three runs give
     the same bits (and the bits' SHA-256, to compare across devices).

  source tools/device_env.sh && python3 bench/probes/dlpack.py            # every part (b-d need PyTorch + CUDA)
  python3 bench/probes/dlpack.py --parts a                                 # lavapipe
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
import traceback

import numpy as np

import dmlgpu
from dmlgpu.runtime import export


def median_time(fn, repeats: int, warmup: int = 2) -> float:
    """The median seconds of ``fn()`` over ``repeats`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(name: str, value: str, target: str = "") -> None:
    print(f"  {name:<58} {value:>18}  {target}")


def part_a(dev, args) -> None:
    t = dmlgpu.zeros((1 << 20,) if not args.quick else (4096,), np.float32, device=dev)
    if t.__dlpack_device__() != (1, 0):
        print(f"  (no kDLCPU view on {dev.info.name}: {export.describe(dev.info)})")
        return
    a = np.from_dlpack(t)
    same = a.ctypes.data == export.host_address(t.buffer)[0]
    a[5] = 3
    row("np.from_dlpack(t): the same address", str(same))
    row("a write through NumPy read by t.item()", str(t.item(5) == 3.0))
    us = median_time(lambda: np.from_dlpack(t), args.repeats * 10) * 1e6
    row("np.from_dlpack(t) host time", f"{us:.1f} us", "(target <= 20 us on lavapipe)")


def _torch():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("PyTorch sees no CUDA device")
    return torch


def part_b(dev, args) -> None:
    torch = _torch()
    n = (1 << 30) // 4 if not args.quick else 1 << 20
    t = dmlgpu.zeros(n, np.float32, device=dev)
    dev.synchronize()
    start = time.perf_counter()
    x = torch.from_dlpack(t)
    first = time.perf_counter() - start
    same = x.data_ptr() == export.cuda_pointer(t.buffer)[1]
    row(f"torch.from_dlpack(t) of {n * 4 >> 20} MiB: the same device address", str(same))
    x[7] = 11                                       # PyTorch writes, dmlgpu reads
    torch.cuda.synchronize()
    seen = t.item(7) == 11.0
    dmlgpu.put_along_axis(t, np.array([9]), np.float32(13), axis=0)      # dmlgpu writes, PyTorch reads
    dev.synchronize()
    row("writes seen across (torch -> dmlgpu, dmlgpu -> torch)", str(seen and x[9].item() == 13.0))
    row("host time, first export (maps the block into CUDA)", f"{first * 1e6:.1f} us")
    us = median_time(lambda: torch.from_dlpack(t), args.repeats * 10) * 1e6
    row("host time, later exports (median)", f"{us:.1f} us", "(target <= 50 us)")


def part_c(dev, args) -> None:
    torch = _torch()
    n = (1 << 30) // 4 if not args.quick else 1 << 20
    x = torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    torch.cuda.synchronize()

    def ours():
        t = dmlgpu.from_dlpack(x, device=dev)
        return t

    def clone():
        y = x.clone()
        torch.cuda.synchronize()
        return y
    t = ours()
    ok = bytes(t.numpy()[: 1 << 16]) == bytes(x[: 1 << 16].cpu().numpy()) and \
        hashlib.sha256(t.numpy()).digest() == hashlib.sha256(x.cpu().numpy()).digest()
    del t
    a = median_time(ours, args.repeats)
    b = median_time(clone, args.repeats)
    row(f"dmlgpu.from_dlpack(x), {n * 4 >> 20} MiB torch tensor (bits equal: {ok})", f"{a * 1e3:.3f} ms")
    row("x.clone() + torch.cuda.synchronize()", f"{b * 1e3:.3f} ms")
    row("ratio", f"{a / b:.2f}x", "(target <= 1.2x)")


def part_d(dev, args) -> None:
    torch = _torch()
    rows, dim, n = (1 << 20, 64, 262_144) if not args.quick else (1 << 14, 64, 4096)
    rng = np.random.default_rng(0)
    ids = torch.from_numpy((rng.zipf(1.2, n) - 1) % rows).cuda()
    upstream = torch.randn(n, dim, device="cuda", generator=torch.Generator(device="cuda").manual_seed(2))
    grad = dmlgpu.zeros((rows, dim), np.float32, device=dev)
    grad_torch = torch.from_dlpack(grad)
    plain = torch.zeros(rows, dim, device="cuda")

    def ours():
        torch.cuda.synchronize()
        dmlgpu.scatter_nd(grad, dmlgpu.from_dlpack(ids[:, None], device=dev), dmlgpu.from_dlpack(upstream, device=dev),
                          reduction="add", order="fixed-point", out=grad)
        dev.synchronize()

    def atomic():
        plain.index_add_(0, ids, upstream)
        torch.cuda.synchronize()

    digests = []
    for _ in range(3):
        grad_torch.zero_()
        ours()
        digests.append(hashlib.sha256(grad_torch.cpu().numpy()).hexdigest())
    ref = torch.zeros(rows, dim, device="cuda", dtype=torch.float64).index_add_(0, ids, upstream.double())
    err = (grad_torch.double() - ref).abs().max().item()
    a = median_time(ours, args.repeats)
    b = median_time(atomic, args.repeats)
    def deterministic():                   # index_add_ in deterministic mode (where it has none: index_put_'s)
        try:
            plain.index_add_(0, ids, upstream)
        except RuntimeError:
            plain.index_put_((ids,), upstream, accumulate=True)
        torch.cuda.synchronize()
    torch.use_deterministic_algorithms(True)
    try:
        c = median_time(deterministic, max(3, args.repeats // 4))
    finally:
        torch.use_deterministic_algorithms(False)
    row(f"dmlgpu fixed-point accumulate ({n} ids, {rows} x {dim} float32)", f"{a * 1e3:.3f} ms")
    row("torch index_add_ (atomic) + synchronize", f"{b * 1e3:.3f} ms")
    row("torch index_add_, use_deterministic_algorithms(True)", f"{c * 1e3:.3f} ms")
    row("dmlgpu / index_add_", f"{a / b:.2f}x", "(target <= 3.5x)")
    row("deterministic mode / dmlgpu", f"{c / a:.2f}x", "(target >= 5x)")
    row("three runs: the same bits", str(len(set(digests)) == 1))
    row("gradient's SHA-256 (compare across devices)", digests[0][:16])
    row("largest error against float64 index_add_", f"{err:.3g}")


PARTS = {"a": part_a, "b": part_b, "c": part_c, "d": part_d}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="abcd", help="which parts to run (default: abcd)")
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per median (default 20)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a check of the probe itself)")
    args = ap.parse_args(argv)
    dev = dmlgpu.default_device()
    print(f"device: {dev.info.name} (driver {dev.info.driver_version:#x}); {export.describe(dev.info)}")
    try:
        import torch
        print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, "
              f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA device'}")
    except ImportError:
        print("torch: not importable")
    for p in args.parts:
        print(f"part {p}: {PARTS[p].__doc__ or __doc__.split(f'  {p}  ')[1].split(chr(10))[0]}")
        try:
            PARTS[p](dev, args)
        except Exception as e:             # one part's failure does not stop the others
            print(f"  (part {p} did not run: {type(e).__name__}: {e})")
            if not isinstance(e, (ImportError, RuntimeError)):
                traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
