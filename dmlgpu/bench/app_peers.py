"""The peers of ``python -m dmlgpu bench apps`` (dmlgpu/bench/apps.py): the same job on NumPy (the host), on
PyTorch (CUDA) in this process, or in a process of its own (``RemoteSide``: the peer's results come back as digests);
``make_side`` picks one."""
from __future__ import annotations

import hashlib
import statistics
from typing import NamedTuple

import numpy as np

from .app_workloads import App


GPU_EVENTS = 20            # CUDA-event samples of the peer's best call


class Digest(NamedTuple):
    """A result as the peer's process reports it to dmlgpu's (``--process separate``): its shape, item size
    and the SHA-256 of its bytes."""
    shape: tuple
    itemsize: int
    sha256: str

    @classmethod
    def of(cls, a: np.ndarray) -> "Digest":
        a = np.ascontiguousarray(a)
        return cls(tuple(a.shape), a.dtype.itemsize, hashlib.sha256(a.view(np.uint8).reshape(-1)).hexdigest())


# ---- the peers ----

class NumpySide:
    kind = "numpy"

    def info(self) -> dict:
        return {"name": "numpy", "version": np.__version__, "device": "host CPU"}

    def put(self, arr, as_dtype=None):
        return np.array(arr, copy=True)

    def fetch(self, x) -> np.ndarray:
        return np.asarray(x)

    def sync(self) -> None:
        pass

    def free_bytes(self):
        return None

    def release(self) -> None:
        pass

    def calls(self, app: App) -> dict:
        return {"numpy": app.numpy}

    def prepare(self, app: App, a: dict) -> dict:
        return a

    def gpu_us(self, fn, a) -> float | None:
        return None

    def deterministic(self, on: bool):
        raise RuntimeError("NumPy has no deterministic mode")


class TorchSide:
    """PyTorch on CUDA. Arrays go to the device as they are (uint16 as int16: PyTorch's uint16 is limited),
    then viewed as ``as_dtype`` (bfloat16) where the workload asks; results come back as bits."""
    kind = "torch"

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def info(self) -> dict:
        t = self.torch
        return {"name": "torch", "version": t.__version__, "cuda": t.version.cuda,
                "device": t.cuda.get_device_name(self.device), "cuda_index": self.device.index}

    def put(self, arr, as_dtype=None):
        a = np.ascontiguousarray(arr)
        if a.dtype == np.uint16:
            a = a.view(np.int16)
        x = self.torch.from_numpy(a).to(self.device)
        return x.view(getattr(self.torch, as_dtype)) if as_dtype else x

    def fetch(self, x) -> np.ndarray:
        """A host copy (of its own: later calls that write x in place must not change it), as bits."""
        t = self.torch
        if x.dtype in (t.bfloat16, t.int16):
            return np.array(x.view(t.int16).cpu().numpy().view(np.uint16))
        return np.array(x.cpu().numpy())

    def sync(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def free_bytes(self):
        return self.torch.cuda.mem_get_info(self.device)[0]

    def release(self) -> None:
        self.sync()
        self.torch.cuda.empty_cache()

    def calls(self, app: App) -> dict:
        return app.torch

    def prepare(self, app: App, a: dict) -> dict:
        return app.torch_prepare(a) if app.torch_prepare else a

    def gpu_us(self, fn, a) -> float | None:
        """Median microseconds between CUDA events recorded around ``fn(a)``."""
        cuda = self.torch.cuda
        times = []
        for _ in range(GPU_EVENTS):
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            start.record()
            fn(a)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)

    def deterministic(self, on: bool):
        self.torch.use_deterministic_algorithms(on)


class RemoteSide:
    """The peer run in a process of its own (``--process separate``): its figures and result digests, read
    from the JSON that ``--peer-side-only`` wrote, by workload."""

    def __init__(self, report: dict):
        self.report = report
        self.kind = report["info"]["name"]

    def info(self) -> dict:
        return {**self.report["info"], "process": "separate"}

    def free_bytes(self):
        return None

    def release(self) -> None:
        pass

    def peer(self, name: str, deterministic: bool = False) -> tuple[dict, dict]:
        """(the best call's figures, {call: Digest}) as run_peer gives them; RuntimeError where the peer's
        process failed or skipped the workload."""
        row = self.report["rows"][name]
        key = "peer_deterministic" if deterministic else "peer"
        if key + "_digests" not in row:
            raise RuntimeError(row.get(key, {}).get("error") or row.get("error") or row.get("skipped")
                               or f"the peer did not run {name}")
        digests = {call: Digest(tuple(d[0]), d[1], d[2]) for call, d in row[key + "_digests"].items()}
        return row[key], digests


def make_side(choice: str, cuda_index: int | None, vulkan_name: str = ""):
    """The peer (peers.make_peer picks it: PyTorch where CUDA is available, on the CUDA device named like the
    Vulkan one by default) as the apps section uses it."""
    from .peers import make_peer
    peer = make_peer(choice, cuda_index, vulkan_name)
    return TorchSide(peer.torch, peer.device) if peer.kind == "torch" else NumpySide()
