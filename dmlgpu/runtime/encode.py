"""The runtime's one launch form and its one encoder: the only module that builds kp ops.

A kernel launch is a ``Dispatch`` (kernel variant, buffers in binding order, iteration count, whether a barrier
comes before it). A call template's launch (dmlgpu/api/call_templates.py, plans/index_check.py's queued checks) is
the same type with its buffers as slots: each an index into the buffer list bound per call, or a Buffer, and its
workgroups fixed when it was made (``groups``). ``Encoder.encode`` turns launches of either kind into kp ops with
their barriers, for every path that records work: synchronous runs and their replays, the batches of queued runs,
call templates and recordings. The other functions build the transfers' ops (copies, fills and their barriers).

Ordering: Kompute's OpAlgoDispatch records no barrier of its own (kp patch 0016), so dmlgpu records one
global memory barrier before every dispatch (``BEFORE_DISPATCH`` on all memory, kp patch 0017: one
vkCmdPipelineBarrier, made once per device): all earlier transfer and compute writes are made available and
visible to the dispatch's reads and writes, and all earlier reads finish first. Two dependent dispatches in
one submission are therefore ordered (RAW, WAW and WAR alike). A dispatch marked ``barrier=False`` (a
scatter's copy, independent of the claim pass before it) shares the barrier of the dispatch before it, so
the two may overlap. Copies into and out of device buffers are preceded by ``BEFORE_COPY``; memory the host
reads after a submission (staging, or mapped device buffers on unified memory) is made visible to it by a
global ``BEFORE_HOST_READ`` at the end.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from ..errors import DeviceError
from .discovery import kp

# Vulkan access and stage bits, and the barriers the runtime records (src access, dst access, src stage,
# dst stage)
SHADER_READ, SHADER_WRITE, TRANSFER_READ, TRANSFER_WRITE, HOST_READ = 0x20, 0x40, 0x800, 0x1000, 0x2000
STAGE_COMPUTE, STAGE_TRANSFER, STAGE_HOST = 0x800, 0x1000, 0x4000
# before a dispatch: earlier transfer and shader writes visible to its reads and writes
BEFORE_DISPATCH = (SHADER_WRITE | TRANSFER_WRITE, SHADER_READ | SHADER_WRITE, STAGE_COMPUTE | STAGE_TRANSFER,
                   STAGE_COMPUTE)
# before a copy into or out of a device buffer: earlier writes (and reads, an execution dependency) done
BEFORE_COPY = (SHADER_WRITE | TRANSFER_WRITE, TRANSFER_READ | TRANSFER_WRITE, STAGE_COMPUTE | STAGE_TRANSFER,
               STAGE_TRANSFER)
# before the host reads memory the device wrote (staging, or mapped device buffers)
BEFORE_HOST_READ = (SHADER_WRITE | TRANSFER_WRITE, HOST_READ, STAGE_COMPUTE | STAGE_TRANSFER, STAGE_HOST)

COPY = "copy"      # Dispatch.kernel of a buffer copy: ``count`` bytes of buffers[0] into buffers[1], both from byte 0


@dataclass(slots=True)
class Dispatch:
    """One kernel launch: SPIR-V variant name, its buffers in binding order, and the iteration count; or,
    with ``kernel`` COPY, a copy of ``count`` bytes of ``buffers[0]`` into ``buffers[1]`` by transfer commands
    (vkCmdCopyBuffer, always after a barrier of its own: ``barrier`` is ignored). A template's launch (the
    module's docstring) holds slots in ``buffers`` and its workgroups in ``groups``."""

    kernel: str
    buffers: tuple
    count: int
    barrier: bool = True  # False: may overlap the dispatch before it (independent of it); the barrier
                          # recorded before that one then covers this one's buffers too
    wide: bool = False    # a WIDE or ADDR variant (shaders/addressing.glsl): reaches its operands through the
                          # device addresses listed in its parameters (chunked ones too), so its barrier covers
                          # every block; the others bind each buffer's one block and refuse chunked buffers ...
    blocks: tuple | None = None   # ... unless this names the block to bind of each buffer (its index; None
                                  # for the first), for a kernel that reaches one block of a chunked buffer
    groups: int = 0       # workgroups fixed when the launch was made (a template's); 0: from ``count`` by the
                          # device's geometry when it is encoded


def barrier(tensors: Sequence[Any], kind: tuple) -> Any:
    """A memory barrier (``kind``: BEFORE_DISPATCH, BEFORE_COPY, BEFORE_HOST_READ) on these kp buffers (none:
    on all memory, kp patch 0017)."""
    return kp.OpMemoryBarrier(list(tensors), *kind)


def copy_region(src: Any, dst: Any, src_at: int, dst_at: int, nbytes: int) -> Any:
    """A copy of ``nbytes`` from kp buffer ``src`` at byte ``src_at`` into ``dst`` at ``dst_at``."""
    return kp.OpCopyRegion(src, dst, src_at, dst_at, nbytes)


def dispatch_op(algorithm: Any) -> Any:
    """The op that dispatches a kp algorithm (made once per algorithm: kp ops may be recorded any number of
    times)."""
    return kp.OpAlgoDispatch(algorithm)


def tensors_of(bufs: Iterable[Any]) -> list:
    """The kp buffers of these Buffers' blocks, in order."""
    return [block.tensor for b in bufs for block in b.block_list]


def copy_ops(src: Any, src_offset: int, dst: Any, dst_offset: int, nbytes: int) -> list:
    """The region copies that move ``nbytes`` from Buffer ``src`` at ``src_offset`` to Buffer ``dst`` at
    ``dst_offset``, split where either buffer's blocks end (no barrier: the caller's)."""
    ops = []
    for s_block, s_at, pos, n in src._pieces(src_offset, nbytes):
        for d_block, d_at, d_pos, m in dst._pieces(dst_offset + pos, n):
            ops.append(kp.OpCopyRegion(s_block.tensor, d_block.tensor, s_at + d_pos, d_at, m))
    return ops


def fill_ops(buf: Any, word: int, offset: int, nbytes: int) -> list:
    """The fills of ``nbytes`` of Buffer ``buf`` from byte ``offset`` with a 32-bit word (no barrier)."""
    return [kp.OpFill(block.tensor, at, n, word) for block, at, _, n in buf._pieces(offset, nbytes)]


def transfer(touched: Sequence[Any], ops: list, host_read: Sequence[Any] = ()) -> list:
    """Transfer ops on device Buffers after the barrier on those they touch (BEFORE_COPY), followed, where
    ``host_read`` names Buffers, by the barrier that lets the host read what they wrote."""
    out = [barrier(tensors_of(touched), BEFORE_COPY), *ops]
    if host_read:
        out.append(barrier(tensors_of(host_read), BEFORE_HOST_READ))
    return out


def host_copies(ranges: Sequence[tuple], host: Callable[[Any], Any], upload: bool) -> list:
    """Copies between byte ranges of Buffers (``ranges``: (buffer, start, bytes)) and host-visible kp buffers
    of the same layout (``host(buffer)``: its mirror), after the barrier on the device buffers: into the device
    (``upload``) or out of it, then the barrier that lets the host read the host copies."""
    if not ranges:
        return []
    ops = [barrier(tensors_of(b for b, _, _ in ranges), BEFORE_COPY)]
    for b, start, size in ranges:
        mirror = host(b)
        for block, at, pos, n in b._pieces(start, size):
            ops.append(kp.OpCopyRegion(mirror, block.tensor, start + pos, at, n) if upload else
                       kp.OpCopyRegion(block.tensor, mirror, at, start + pos, n))
    if not upload:
        mirrors = list({id(m): m for m in (host(b) for b, _, _ in ranges)}.values())
        ops.append(barrier(mirrors, BEFORE_HOST_READ))
    return ops


def staged_copies(bufs: Sequence[Any], offsets: Sequence[int], sizes: Sequence[int], staging: Any,
                  upload: bool) -> list:
    """Copies of ``sizes`` bytes of each Buffer from (``upload``) or into one staging kp buffer at ``offsets``,
    after the barrier on the device buffers; a download ends with the barrier that lets the host read it."""
    ops = [barrier(tensors_of(bufs), BEFORE_COPY)]
    for b, pos, n in zip(bufs, offsets, sizes):
        for block, at, off, m in b._pieces(0, n):
            ops.append(kp.OpCopyRegion(staging, block.tensor, pos + off, at, m) if upload else
                       kp.OpCopyRegion(block.tensor, staging, at, pos + off, m))
    if not upload:
        ops.append(barrier([staging], BEFORE_HOST_READ))
    return ops


def staging_upload(staging: Any, pos: int, tensor: Any, offset: int, nbytes: int) -> tuple:
    """The barrier on kp buffer ``tensor`` and the copy of ``nbytes`` from ``staging`` at ``pos`` into it at
    ``offset`` (a batch's queued upload)."""
    return barrier([tensor], BEFORE_COPY), kp.OpCopyRegion(staging, tensor, pos, offset, nbytes)


class Encoder:
    """Turns launches into kp ops with their barriers for one device: ``algorithm(kernel, groups, blocks)``
    binds a kernel variant to blocks (pipelines.Pipelines.algorithm: returns an object whose ``dispatch`` is its
    op), ``workgroups(count)`` is the device's geometry. Its global barriers are made once: ``barrier`` (before a
    dispatch), ``copy_barrier`` (before a copy step), ``host_barrier`` (before host reads)."""

    __slots__ = ("algorithm", "workgroups", "barrier", "copy_barrier", "host_barrier")

    def __init__(self, algorithm: Callable[[str, int, Sequence[Any]], Any], workgroups: Callable[[int], int]):
        self.algorithm = algorithm
        self.workgroups = workgroups
        self.barrier = barrier([], BEFORE_DISPATCH)          # global (kp patch 0017)
        self.copy_barrier = barrier([], BEFORE_COPY)         # before a copy step (Dispatch COPY)
        self.host_barrier = barrier([], BEFORE_HOST_READ)

    def encode(self, launches: Iterable[Dispatch], ops: list, bound: Sequence[Any] | None = None,
               mark: int = 0) -> list:
        """Appends the launches' kp ops to ``ops`` (and returns it), in order: the global barrier before each
        kernel that has ``barrier`` (and before the kernel after a copy step, whose barrier orders transfers
        only); a copy's region copies after a global barrier before transfers (BEFORE_COPY). ``bound``: the
        buffers that template launches' slots index (None: the launches hold Buffers; a template's buffers
        are those of its trace's sizes, whose blocks were checked then). ``mark``: the number
        of the batch the ops join, noted on every block they use (Block.batch; 0: none)."""
        algorithm, before, after_copy = self.algorithm, self.barrier, False
        for d in launches:
            bufs = d.buffers if bound is None else [bound[s] if s.__class__ is int else s for s in d.buffers]
            if d.kernel == COPY:
                ops.append(self.copy_barrier)
                ops += copy_ops(bufs[0], 0, bufs[1], 0, d.count)
                after_copy = True
            else:
                if d.barrier or after_copy:
                    ops.append(before)
                if d.blocks is not None:
                    blocks: Any = [b.block_list[i or 0] for b, i in zip(bufs, d.blocks)]
                else:
                    if bound is None and not d.wide:      # (a template's buffers were checked when traced)
                        for b in bufs:
                            if b.chunked:
                                raise DeviceError(f"kernel {d.kernel} binds single blocks: it cannot address a buffer "
                                                  f"held in several (a large-tensor variant must be chosen for it)")
                    blocks = [b._block for b in bufs]
                ops.append(algorithm(d.kernel, d.groups or self.workgroups(d.count), blocks).dispatch)
                after_copy = False
            if mark:
                for b in bufs:
                    for block in b.block_list:
                        block.batch = mark
        return ops

    def count(self, launches: Iterable[Dispatch]) -> int:
        """The Vulkan commands that these launches record in order (each op of encode() is one)."""
        return len(self.encode(launches, []))
