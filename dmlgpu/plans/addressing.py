"""The parameters of the large-tensor kernel variants (WIDE: 64-bit index maps and tensors held in several blocks;
ADDR: device addresses): whether a dispatch needs them (``needs_wide``), and their parameter buffers, the words
followed by the block lists of the tensors they bind (``wide_params``, ``listed_params``; ``recipe``: how a call
template makes them again for other buffers)."""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from ..errors import DeviceError
from .index_map import P_ADDR, P_END, IndexMap
from ..runtime import Buffer, Device


def needs_wide(device: Device, index_map: IndexMap, *buffers) -> bool:
    """True when a dispatch of ``index_map`` on these buffers (None: absent) needs the WIDE kernel variants
    (kernels.variant(wide=True)): a buffer is held in several blocks, or the map needs 64 bits. DeviceError,
    before any GPU work, when the device lacks their features."""
    wide = not index_map.fits_32_bits() or any(b is not None and b.chunked for b in buffers)
    if wide and not kernels.WIDE_FEATURES <= device.features:
        largest = max((b.nbytes for b in buffers if b is not None), default=0)
        raise DeviceError(f"this operation has tensors larger than one buffer of {device.info.name} "
                          f"({device.max_block} bytes: the largest is {largest} bytes) or 2^32 units, which needs "
                          f"the device features {', '.join(sorted(kernels.WIDE_FEATURES - device.features))} "
                          f"that it lacks; split it into smaller ones")
    return wide


# The tensors whose block lists a WIDE or ADDR variant's parameters carry, in addressing.glsl's SLOT_* order
# (tests/test_kernels.py checks it): the indices, the data tensor, the dense tensor, the scatter claims
WIDE_SLOTS = ("IDX", "DATA", "DENSE", "OWNER")


def wide_params(device: Device, words: np.ndarray, *slots) -> tuple[Buffer, bool]:
    """Device.params for a WIDE variant: its uint64 words followed by the block lists of the tensors in
    ``slots`` (WIDE_SLOTS' order; None: absent). The buffer's ``recipe`` (its words, the ids of the ``slots`` it
    was made for, the size padded to) lets a call template make it again for other buffers
    (dmlgpu/api/call_templates.py)."""
    made = listed_params(device, words, *slots)
    assert made is not None               # (not padded: always made)
    return made


def listed_params(device: Device, words: np.ndarray, *slots, size: int = 0) -> tuple[Buffer, bool] | None:
    """The same, padded to ``size`` uint64 words where it is not 0 (the run variants' uniform buffer:
    kernels.RUN_UNIFORM_WORDS 32-bit words); None where the block lists do not fit that."""
    body = block_params(words, device.block_table(slots, len(words)), size)
    if body is None:
        return None
    buf, fresh = device.params(body)
    buf.recipe = (words, tuple(None if b is None else id(b) for b in slots), size)
    return buf, fresh


def block_params(words: np.ndarray, table: np.ndarray, size: int) -> np.ndarray | None:
    """``words`` then the block lists ``table`` (uint64), zero-padded to ``size`` words unless 0; None past it."""
    body = np.concatenate([words, table])
    return body if not size else None if body.size > size else np.concatenate([body, np.zeros(size - body.size,
                                                                                              np.uint64)])


def addr_words(words: np.ndarray) -> np.ndarray:
    """The words of an ADDR variant of the gather kernel (index_map.glsl's WIDE_LISTS) as wide_params and
    listed_params take them: its uint32 words (P_END of them) and zeros up to P_ADDR, seen as P_ADDR / 2 uint64
    words, so that the block lists lie as in the WIDE variants (and a call template remakes them alike)."""
    assert words.dtype == np.uint32 and words.size == P_END and P_ADDR % 2 == 0
    return np.concatenate([words, np.zeros(P_ADDR - P_END, np.uint32)]).view(np.uint64)


def _chunked(*buffers) -> bool:
    return any(b is not None and b.chunked for b in buffers)


def _sizes(*buffers) -> tuple:
    """The sizes of the distinct buffers (None: absent)."""
    return tuple(b.nbytes for b in {id(b): b for b in buffers if b is not None}.values())
