"""Recordings: operations captured into one Vulkan submission that can be run again (Device.record)."""
from __future__ import annotations

from types import TracebackType
from typing import Any, Protocol, Union

import numpy as np

from . import encode
from .buffer import Buffer
from .checks import Checks
from .encode import Dispatch
from .submit import Submitter


class BufferRange(Protocol):
    """What a recording moves besides a whole Buffer: a byte range of one (a dmlgpu.Tensor: the runtime knows no
    Tensor class, only these attributes of it)."""
    @property
    def buffer(self) -> Buffer: ...
    @property
    def offset(self) -> int: ...
    @property
    def nbytes(self) -> int: ...


class Recording:
    """Operations recorded into one Vulkan submission (see Device.record). Layer-2 functions called in the
    block return dmlgpu.Tensors whose contents are valid once the block has ended (and after each run()).
    mode="raise" cannot be recorded.

    Host data goes in and out through the recording's own host copies (``host(t)``): ``upload(t)`` records
    that each run copies ``host(t)`` to the device at that point, ``download(t)`` that each run copies the
    device data into ``host(t)`` there. A host copy is a host-visible buffer of its own on every memory type
    (never the device memory itself, also on unified memory), so it changes only when you write it or a run
    downloads into it, and the device data only by the runs' uploads (and by ``Tensor.write()``): write
    ``host(t)`` before run() for the tensors you upload, read it after run() for those you download.
    ``host(t)`` of a tensor that is only downloaded is read-only.

    Parameters
    ----------
    queue : Submitter
        The device's queue (runtime/submit.py); ``checks``: its checks (runtime/checks.py).
    timestamps : bool
        See Device.record(), which makes them.

    Examples
    --------
    See Device.record().
    """

    def __init__(self, queue: Submitter, checks: Checks, timestamps: bool = False):
        self._queue, self._checks = queue, checks
        self._timestamps = timestamps
        self._steps: list[tuple[str, Any]] = []
        self._seq: Any = None
        self._zeroed = False
        self._uploaded: set[int] = set()      # id()s of the buffers that upload() or a recorded call sends
        self._downloaded: set[int] = set()
        self._held: list[Buffer] = []         # those buffers (the ids stay theirs while the recording lives)
        # the recorded calls' (buffers read, buffer written or None, written whole): Device.taint
        self._flows: list[tuple[tuple[Buffer | None, ...], Buffer | None, bool]] = []

    def __enter__(self) -> "Recording":
        queue = self._queue
        if queue.recording() is not None:
            raise RuntimeError("this thread is already recording on this device")
        if self._seq is not None:
            raise RuntimeError("this recording is finished: run() submits it again")
        with queue.lock:
            queue.local.recording = self
            self._checks.opened(self)     # calls note their reads for the runs (Device.taint)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        queue = self._queue
        with queue.lock:
            queue.local.recording = None
            self._checks.closed_recording()
        if exc_type is not None:
            return
        for buf in self._buffers():        # these buffers stay out of the allocator while it lives
            buf.pinned = True
        with queue.lock:
            ops = self._ops()
            # Kompute writes a timestamp before the first and after every recorded Vulkan command
            self._seq = queue.mgr.sequence(0, len(ops) + 1 if self._timestamps else 0)
            self._seq.record_ops(ops)           # (a recording of nothing submits an empty command buffer)
            self._zeroed = queue.scratch.uses_zeroed(self.dispatches())
        self.run()

    def upload(self, *tensors: Union[BufferRange, Buffer]) -> None:
        """At this point of each run, sends the tensors' (or buffers') host copies (``host(t)``) to the
        device: a Tensor's bytes only (a view's range of its buffer), a Buffer's all."""
        self._steps.append(("upload", tuple(self._range_of(t, self._uploaded) for t in tensors)))

    def download(self, *tensors: Union[BufferRange, Buffer]) -> None:
        """At this point of each run, copies the tensors' (or buffers') device contents to their host copies
        (``host(t)``)."""
        self._steps.append(("download", tuple(self._range_of(t, self._downloaded) for t in tensors)))

    def host(self, t: Union[BufferRange, Buffer]) -> np.ndarray:
        """The recording's host copy of a Tensor (an array of its shape and dtype) or Buffer (uint8[nbytes]):
        what ``upload(t)`` sends and ``download(t)`` fills on each run. Writable when ``t`` is uploaded,
        read-only when it is only downloaded.

        Parameters
        ----------
        t : dmlgpu.Tensor or dmlgpu.Buffer
            Passed to this recording's upload() or download().

        Returns
        -------
        np.ndarray
            A view of the host copy (no copy is made): keep it and write or read it around each run().

        Raises
        ------
        ValueError
            ``t`` is neither uploaded nor downloaded by this recording.
        dmlgpu.DeviceError
            A host copy that large cannot be allocated at once (use Tensor.numpy() and write()).

        Examples
        --------
        See Device.record().
        """
        buf, offset, nbytes = _range(t)
        if id(buf) not in self._uploaded and id(buf) not in self._downloaded:
            raise ValueError("Recording.host: this tensor is neither uploaded nor downloaded by the recording: "
                             "call rec.upload(t) or rec.download(t) in its block")
        arr = buf._mirror_array()[offset:offset + nbytes]
        dtype = getattr(t, "dtype", None)
        if dtype is not None:
            arr = arr.view(dtype).reshape(t.shape)     # type: ignore[union-attr]
        if id(buf) not in self._uploaded:
            arr.flags.writeable = False
        return arr

    def dispatches(self) -> list[Any]:
        """The dispatches recorded so far, in order (runtime.Dispatch)."""
        return [what for kind, what in self._steps if kind == "dispatch"]

    def run(self) -> None:
        """Submits the recorded operations again and waits for them (RuntimeError before the block ends).

        A Tensor that the recorded calls read and that a failed device check has reached (mode="raise" on
        Tensor indices: dmlgpu/plans/index_check.py) makes run() raise that check's IndexError, before any GPU
        work, on every run until the Tensor is overwritten whole (its queued calls' reports are made first)."""
        if self._seq is None:
            raise RuntimeError("the recording has not ended yet")
        queue = self._queue
        with queue.lock:
            queue.memory.check_open()
            queue.flush()                 # queued calls first: the recording may read what they write
            if self._flows:
                self._checks.report()
                self._admit()
            queue.submit(self._seq, self._zeroed)

    def _flow(self, reads: tuple[Buffer | None, ...], out: Buffer | None, whole: bool) -> None:
        """A recorded call reads ``reads`` and writes ``out`` (all of it: ``whole``) on each run (Device.taint)."""
        self._flows.append((reads, out, whole))

    def _admit(self) -> None:
        """Before a run: raises the failure of a buffer that a recorded call reads before the run overwrites it
        whole; else the buffers that it overwrites whole are no longer failed."""
        checks = self._checks
        cleared: dict[int, Buffer] = {}
        for reads, out, whole in self._flows:
            for buf in reads:
                if buf is not None and buf.error is not None and id(buf) not in cleared:
                    checks.raise_failure(buf)
            if out is not None and whole:
                cleared[id(out)] = out
        for buf in cleared.values():
            checks.write(buf, checks.gen, 0, True)

    def timestamps(self) -> list[float]:
        """GPU times in ns of the last run: one before the first recorded Vulkan command and one after each.
        A dispatch is two commands, its barrier and itself, or one without a barrier of its own; an upload
        or download is a barrier and a copy per buffer range (a download also a barrier
        before the host reads), on every memory type; a device copy (Tensor.copy(), a view's packed copy) a
        barrier and a copy per block range; the upload of a recorded call's NumPy operands is none on unified
        memory and a barrier and a copy per buffer elsewhere. A recording with dispatches ends with one more
        barrier on unified memory."""
        if not self._timestamps or self._seq is None:
            raise RuntimeError("timestamps need a finished recording made with record(timestamps=True)")
        period = self._queue.memory.info.timestamp_period_ns
        return [t * period for t in self._seq.get_timestamps()]

    # ---- internal ----
    def _range_of(self, t: object, ids: set[int]) -> tuple[Buffer, int, int]:
        rng = _range(t)
        ids.add(id(rng[0]))
        self._held.append(rng[0])
        return rng

    def _buffers(self) -> list[Buffer]:
        """Every buffer the recorded steps use."""
        out: list[Buffer] = []
        for kind, what in self._steps:
            if kind == "dispatch":
                out += [b for b in what.buffers if b is not None]
            elif kind == "copy":
                out += what[0]
            else:
                out += [b for b, _, _ in what]
        return out

    def _append(self, dispatches: list[Dispatch], uploads: list[Buffer], downloads: list[Buffer]) -> None:
        """Submitter.run inside the block: staged bytes go to the buffers' host copies now, to be uploaded at
        this point of every run."""
        for buf in uploads:
            if buf._pending is not None:
                buf._host_copy()[:buf._pending.size] = buf._pending
                buf._pending = None
        if uploads:
            self._steps.append(("stage", tuple((b, 0, b.nbytes) for b in uploads)))
        self._steps.extend(("dispatch", d) for d in dispatches)
        if downloads:
            self._steps.append(("download", tuple(self._range_of(b, self._downloaded) for b in downloads)))

    def _append_copy(self, buffers: list[Buffer], ops: list[Any]) -> None:
        """Device.copy_buffer inside the block: the copy ops (on ``buffers``) run at this point of every run."""
        self._steps.append(("copy", (list(buffers), list(ops))))

    def _ops(self) -> list[Any]:
        queue = self._queue
        encoder = queue.encoder
        ops: list[Any] = []
        run: list[Dispatch] = []
        for kind, what in self._steps + [("end", ())]:
            if kind == "dispatch":
                run.append(what)
                continue
            if run:
                encoder.encode(run, ops)
                run = []
            if kind == "copy":
                bufs, copies = what
                ops += encode.transfer(bufs, copies)
            elif kind in ("upload", "stage", "download"):
                # a recorded call's NumPy operands ("stage") on unified memory: their mapped memory holds them
                moved = [r for r in what if kind != "stage" or r[0]._mirrored]
                ops += encode.host_copies(moved, _mirror, kind != "download")
        if queue.settings.direct_memory and self.dispatches():
            ops.append(encoder.host_barrier)
        return ops


def _mirror(buf: Buffer) -> Any:
    """The kp buffer of a Buffer's mirror (made on first use: Buffer._mirror_array)."""
    buf._mirror_array()
    return buf._mirror


def _range(t: object) -> tuple[Buffer, int, int]:
    """(buffer, byte offset, bytes) of a Tensor (its range of its buffer) or of a Buffer (all of it)."""
    buf = getattr(t, "buffer", t)
    if not isinstance(buf, Buffer):
        raise TypeError(f"expected a dmlgpu.Tensor or Buffer, not {type(t).__name__}")
    if buf is t:
        return buf, 0, buf.nbytes
    if getattr(t, "_strides", None) is not None:     # a strided Tensor view's elements are no byte range
        raise TypeError("a recording uploads and downloads byte ranges: a strided Tensor view (t.T, t[:, 1], ...) "
                        "has none; record its base, or a packed copy (v.copy())")
    return buf, int(getattr(t, "offset", 0)), int(getattr(t, "nbytes"))
