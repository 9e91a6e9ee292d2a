"""Recordings: operations captured into one Vulkan submission that can be run again (Device.record)."""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Union

from .buffer import Buffer, Dispatch
from .devices import kp
from .transfers import BEFORE_COPY, BEFORE_HOST_READ

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .device import Device


class Recording:
    """Operations recorded into one Vulkan submission (see Device.record). Layer-2 functions called in the
    block return dmlgpu.Tensors whose contents are valid once the block has ended (and after each run()).
    ``upload(*tensors)`` re-sends the tensors' host copies (Tensor.host) at that point of each run;
    ``download(*tensors)`` refreshes their host copies. mode="raise" cannot be recorded. On unified memory
    (Device.direct_memory) a tensor's host copy is its device buffer itself (unless the buffer is chunked):
    uploads and downloads then move nothing, and host writes take effect when run() submits.

    Parameters
    ----------
    device : dmlgpu.Device
    timestamps : bool
        See Device.record(), which makes them.

    Examples
    --------
    See Device.record().
    """

    def __init__(self, device: Device, timestamps: bool = False):
        self.device = device
        self._timestamps = timestamps
        self._steps: list[tuple[str, Any]] = []
        self._seq: Any = None
        self._zeroed = False

    def __enter__(self) -> "Recording":
        if self.device._recording() is not None:
            raise RuntimeError("this thread is already recording on this device")
        if self._seq is not None:
            raise RuntimeError("this recording is finished: run() submits it again")
        self.device._local.recording = self
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.device._local.recording = None
        if exc_type is not None:
            return
        dev = self.device
        for kind, what in self._steps:     # these buffers stay out of the allocator while it lives
            for buf in what.buffers if kind == "dispatch" else what:
                buf.pinned = True
        with dev._lock:
            ops = self._ops()
            # Kompute writes a timestamp before the first and after every recorded Vulkan command
            self._seq = dev._mgr.sequence(0, len(ops) + 1 if self._timestamps else 0)
            self._seq.record_ops(ops)           # (a recording of nothing submits an empty command buffer)
            dispatches = [what for kind, what in self._steps if kind == "dispatch"]
            self._zeroed = dev._uses_zeroed(dispatches)
        self.run()

    def upload(self, *tensors: Union["Tensor", Buffer]) -> None:
        """At this point of each run, sends the tensors' (or buffers') host copies (Tensor.host) to the
        device."""
        self._steps.append(("upload", tuple(_buffer_of(t) for t in tensors)))

    def download(self, *tensors: Union["Tensor", Buffer]) -> None:
        """At this point of each run, copies the tensors' (or buffers') device contents to their host copies
        (Tensor.host)."""
        self._steps.append(("download", tuple(_buffer_of(t) for t in tensors)))

    def run(self) -> None:
        """Submits the recorded operations again and waits for them (RuntimeError before the block ends)."""
        if self._seq is None:
            raise RuntimeError("the recording has not ended yet")
        with self.device._lock:
            self.device._open()._flush()     # queued calls first: the recording may read what they write
            self.device._submit(self._seq, self._zeroed)

    def timestamps(self) -> list[float]:
        """GPU times in ns of the last run: one before the first recorded Vulkan command and one after each.
        A dispatch is two commands, its barrier and itself, or one without a barrier of its own; an upload
        or download on a staging device is a barrier and a copy per buffer (a download also a barrier
        before the host reads); on unified memory an upload is none and a download one barrier. A
        recording with dispatches ends with one more barrier on unified memory."""
        if not self._timestamps or self._seq is None:
            raise RuntimeError("timestamps need a finished recording made with record(timestamps=True)")
        period = self.device.info.timestamp_period_ns
        return [t * period for t in self._seq.get_timestamps()]

    # ---- internal ----
    def _append(self, dispatches: list[Dispatch], uploads: list[Buffer], downloads: list[Buffer]) -> None:
        """Device._run inside the block: staged bytes go to the buffers' host copies now, to be uploaded at
        this point of every run."""
        for buf in uploads:
            if buf._pending is not None:
                buf.host[:buf._pending.size] = buf._pending
                buf._pending = None
        if uploads:
            self._steps.append(("upload", tuple(uploads)))
        self._steps.extend(("dispatch", d) for d in dispatches)
        if downloads:
            self._steps.append(("download", tuple(downloads)))

    def _ops(self) -> list[Any]:
        dev = self.device
        ops: list[Any] = []
        run: list[Dispatch] = []
        for kind, what in self._steps + [("end", ())]:
            if kind == "dispatch":
                run.append(what)
                continue
            if run:
                ops += dev._dispatch_ops(run)
                run = []
            mirrored = [b for b in what if b._mirrored]     # the others' host copy is their mapped memory
            mapped = [b for b in what if not b._mirrored]
            if kind == "upload" and mirrored:
                ops.append(kp.OpMemoryBarrier([t for b in mirrored for t in b._tensors], *BEFORE_COPY))
                ops += [kp.OpCopyRegion(_mirror(b), block.tensor, pos, at, n)
                        for b in mirrored for block, at, pos, n in b._pieces(0, b.nbytes)]
            elif kind == "download":
                if mapped:
                    ops.append(kp.OpMemoryBarrier([t for b in mapped for t in b._tensors], *BEFORE_HOST_READ))
                if mirrored:
                    ops.append(kp.OpMemoryBarrier([t for b in mirrored for t in b._tensors], *BEFORE_COPY))
                    ops += [kp.OpCopyRegion(block.tensor, _mirror(b), at, pos, n)
                            for b in mirrored for block, at, pos, n in b._pieces(0, b.nbytes)]
                    ops.append(kp.OpMemoryBarrier([_mirror(b) for b in mirrored], *BEFORE_HOST_READ))
        if dev.direct_memory:
            ops += dev._host_read_ops([what for kind, what in self._steps if kind == "dispatch"])
        return ops


def _mirror(buf: Buffer) -> Any:
    """The host-visible copy of a buffer on a staging device (made on first use of Buffer.host)."""
    buf.host
    return buf._mirror


def _buffer_of(t: object) -> Buffer:
    buf = getattr(t, "buffer", t)
    if not isinstance(buf, Buffer):
        raise TypeError(f"expected a dmlgpu.Tensor or Buffer, not {type(t).__name__}")
    return buf
