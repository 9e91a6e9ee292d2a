"""Segment and bag reductions in one pass (shaders/segment.comp): the plan of segment_reduce, embedding_bag and
gather_scatter (dmlgpu/api/fused.py).

Contract: output element (s, c) combines column c of the rows of segment s one by one, in position order, with
arith.glsl's combine (the scatter reductions' arithmetic: reduction.py's docstring), from a base value (``base``:
"out", the output's own value, or "zeros"), or from ``initial``, or else from the segment's first row (no
identity step: a float sum's first step is its first row itself, so -0.0 stays -0.0); "mean" (float add)
divides once at the end (mean_of) by the rows combined (+ 1 for a base). A segment s spans positions
[offsets[s], offsets[s + 1]) (CSR; or bags of ``fixed`` positions); a position is a row of the data, or of the
table through ``ids``; ``weights`` multiply each row first (combine(w, row), OP mul); ``pad``: positions whose id
is it are skipped and not counted. Segments with nothing to combine get ``empty`` (bits of the dtype), or keep
the output's value (``keep``).

Orders (gather_scatter's and embedding_bag's ``order``; float types' ORDERS variants, kernels.SEGMENT_ORDERS):
"tree" combines each segment's rows in reference.tree's pairwise tree, then into the base value; "fixed-point"
(add and mean of float types of at most 4 bytes: reduction_fixed.FRACTION_BITS) sums the base value and the rows
as a scatter's order="fixed-point" sums a target's terms (reduction_fixed.py's contract), with ``fraction`` bits
(the call's, from its count of update elements): the bits of the scatter it stands for. Either runs in one piece
(``ordered_runs``).

Rows of a multiple of 16 bytes (row-major order) take one invocation per 16 bytes of a row (MODE_VEC: one load
of each row's piece; each column still combined one by one, in position order).

Plan: one dispatch (CPU devices: one per piece of PIECE positions, the running values carried in the output)
of segments x columns invocations, lanes along the row, no atomics on values and no sort; every operand of 32-bit
offsets in one block (DeviceError otherwise: runtime Encoder.encode). The offsets, ids and weights are one buffer of
32-bit words (``aux``), each part from a word given here: a kernel of four bindings, which every Vulkan device
binds (dmlgpu/api/fused.py packs them); for the types of kernels.SEGMENT_SPLIT, devices binding six buffers take
the SPLIT variant, the ids and the weights bound where they are (``splits``).

Examples
--------
>>> import numpy as np
>>> from dmlgpu.plans.segment import SegmentPlan
>>> p = SegmentPlan(np.float32, "add", segments=3, cols=4, limit=10)
>>> p.kernel, p.op, p.invocations      # (rows of 16 bytes: one invocation per row's 4 columns)
('segment_f32', 'add', 3)
"""
from __future__ import annotations

import numpy as np

from ..kernels import table as kernels
from .reduction_args import kernel_for
from .reduction_fixed import FRACTION_BITS, fraction_bits
from ..runtime import Buffer, Device, Dispatch

# shaders/segment.comp's parameter words and MODE_ bits
(P_TOTAL, P_COLS, P_OP, P_MODE, P_OFF_AT, P_OFF_W, P_IDS_AT, P_IDS_W, P_W_AT, P_FIXED, P_PAD, P_ROWS, P_LIMIT,
 P_FIRST, P_LAST, P_INIT) = range(16)
P_EMPTY = 17
P_FRAC = 19
WORDS = 20
MODE_IDS, MODE_FIXED, MODE_WEIGHTS, MODE_PAD, MODE_MEAN, MODE_INIT, MODE_SELF, MODE_KEEP, MODE_CARRY, MODE_FINAL, \
    MODE_SIGNED, MODE_OPEN_END, MODE_TREE, MODE_FIXED_POINT, MODE_VEC = (1 << k for k in range(15))
VEC_BYTES = 16        # MODE_VEC: the bytes of a row each invocation reads per load (segment.comp's VEC_ELEMS)
PIECE = 57344         # CPU devices: positions per dispatch (llvmpipe ends an invocation's loops after 65535 iterations)
ALL = 0xFFFFFFFF


def splits(dtype, reduction: str, device: Device, order: str | None = None) -> bool:
    """Whether a plan of this dtype and reduction on ``device`` binds the ids and the weights as buffers of their
    own (segment.comp's SPLIT variants: kernels.SEGMENT_SPLIT's types, on devices binding 6 buffers), rather than
    packed after the offsets (``order``: ordered_mode's; the ORDERS variants have no SPLIT twin)."""
    if order is not None:
        return False
    stem = kernels.segment_variant(kernel_for(np.dtype(dtype), reduction))[0]
    return stem in kernels.SEGMENT_SPLIT and device.supports(stem + "_split")


def ordered_mode(dtype, reduction: str, order: str | None) -> str | None:
    """The order a segment plan of this dtype and reduction runs with ``order`` (a scatter's: None or "row-major",
    "tree", "fixed-point"): "tree" or "fixed-point" where it gives other bits than row-major (float add, mul,
    mean; fixed-point: add and mean of reduction_fixed.FRACTION_BITS' types), else None (row-major: the same
    bits)."""
    dtype = np.dtype(dtype)
    if order not in ("tree", "fixed-point") or dtype.kind != "f" and dtype.name != "bfloat16" and \
            not dtype.name.startswith("float8"):
        return None
    if order == "tree":
        return order if reduction in ("add", "mul", "mean") else None
    stem = kernel_for(dtype, reduction).removeprefix("scatter_reduce_").split("_")[0]
    return order if reduction in ("add", "mean") and stem in FRACTION_BITS else None


def ordered_runs(device: Device, longest: int) -> bool:
    """Whether an ordered plan ("tree", "fixed-point": one piece) whose longest segment has ``longest`` positions
    runs on ``device`` (CPU devices: each invocation's loops stay below llvmpipe's bound, the rows read twice)."""
    return device.info.type != "CPU" or 2 * longest <= PIECE


def _bits(value, dtype: np.dtype) -> tuple[int, int]:
    """A scalar of ``dtype`` as the kernel's two words (low, high)."""
    raw = int(np.asarray(value, dtype).reshape(1).view(f"u{dtype.itemsize}")[0])
    return raw & ALL, raw >> 32


class SegmentPlan:
    """One segment or bag reduction (module docstring): its kernel and parameter words, worked out once.

    ``dtype``, ``reduction`` ("add", "mul", "min", "max", "mean"; bool as the scatter reductions take it);
    ``order``: ordered_mode's ("tree", "fixed-point") or None; ``elements``: the count of update elements that
    sets fixed-point's fraction bits (default ``limit * cols``: the positions' elements, skipped ones included);
    ``segments`` x ``cols`` output elements; ``limit``: positions (offsets clamp to it); ``offsets``: (word, words
    per offset) in aux, or None with ``fixed`` positions per segment; ``ids``: (word, words per id) or None (a
    position is a data row); ``rows``: the table's rows (ids clamp below it); ``weights``: their word or None;
    ``pad``: the skipped id or None; ``signed``: offsets and ids are signed; ``initial``, ``empty``: scalars
    of ``dtype`` or None (empty: 0); ``base``: None, "out" or "zeros"; ``keep``: empty segments keep the output's
    value."""

    def __init__(self, dtype, reduction: str, *, segments: int, cols: int, limit: int,
                 offsets: tuple[int, int] | None = (0, 1), fixed: int = 0, ids: tuple[int, int] | None = None,
                 rows: int = 0, weights: int | None = None, pad: int | None = None, signed: bool = True,
                 initial=None, empty=None, base: str | None = None, keep: bool = False, open_end: bool = False,
                 order: str | None = None, elements: int | None = None):
        dtype = np.dtype(dtype)
        self.kernel, self.op = kernels.segment_variant(kernel_for(dtype, reduction))
        self.ordered = order is not None
        if order is not None:
            assert order == ordered_mode(dtype, reduction, order) and initial is None
            self.kernel += kernels.SEGMENT_ORDERS
        vec = VEC_BYTES // dtype.itemsize       # rows of whole 16-byte pieces: one invocation per piece
        self.vec = order is None and cols >= vec and cols % vec == 0
        self.invocations = segments * cols // (vec if self.vec else 1)
        self.limit = limit
        mode = (MODE_SIGNED if signed else 0) | (MODE_MEAN if reduction == "mean" else 0) | \
            (MODE_VEC if self.vec else 0)
        words = np.zeros(WORDS, np.uint32)
        words[[P_TOTAL, P_COLS, P_OP, P_LIMIT]] = (self.invocations, cols, kernels.REDUCE_OPS.index(self.op), limit)
        if offsets is None:
            mode |= MODE_FIXED
            words[P_FIXED] = fixed
        else:
            words[[P_OFF_AT, P_OFF_W]] = offsets
            mode |= MODE_OPEN_END if open_end else 0
        if ids is not None:
            mode |= MODE_IDS
            words[[P_IDS_AT, P_IDS_W, P_ROWS]] = (*ids, rows)
        if weights is not None:
            mode |= MODE_WEIGHTS
            words[P_W_AT] = weights
        self.pad = pad is not None
        if pad is not None:
            mode |= MODE_PAD
            words[P_PAD] = pad
        if initial is not None:
            mode |= MODE_INIT
            words[P_INIT:P_INIT + 2] = _bits(initial, dtype)
        if base == "zeros":                     # a base of zeros: P_INIT's 0, counted
            mode |= MODE_SELF | MODE_INIT
            words[P_INIT:P_INIT + 2] = 0
        elif base == "out":
            mode |= MODE_SELF
        if keep:
            mode |= MODE_KEEP
        words[P_EMPTY:P_EMPTY + 2] = _bits(0 if empty is None else empty, dtype)
        if order == "tree":
            mode |= MODE_TREE
        elif order == "fixed-point":
            mode |= MODE_FIXED_POINT
            stem = self.kernel.removeprefix("segment_").removesuffix(kernels.SEGMENT_ORDERS)
            words[P_FRAC] = fraction_bits(FRACTION_BITS[stem], limit * cols if elements is None else elements)
        self.mode, self.words = mode, words

    def pieces(self, device: Device) -> list[np.ndarray]:
        """The parameter words of each dispatch on ``device``: one, or on CPU devices one per PIECE positions
        (never with a skipped id: the caller removes those positions first)."""
        if device.info.type != "CPU" or self.limit <= PIECE:
            words = self.words.copy()
            words[[P_MODE, P_FIRST, P_LAST]] = (self.mode | MODE_FINAL, 0, ALL)
            return [words]
        assert not self.pad and not self.ordered, "pieces of positions never skip ids, nor run an order"
        out = []
        for first in range(0, self.limit, PIECE):
            words = self.words.copy()
            last = first + PIECE >= self.limit
            words[[P_MODE, P_FIRST, P_LAST]] = (self.mode | (MODE_CARRY if first else 0) | (MODE_FINAL if last else 0),
                                                first, ALL if last else first + PIECE)
            out.append(words)
        return out

    def dispatches(self, device: Device, aux: Buffer, data: Buffer, out: Buffer, ids: Buffer | None = None,
                   weights: Buffer | None = None) -> tuple[list, list]:
        """(the dispatches, the new parameter buffers to upload first) on these buffers; ``ids`` and ``weights``
        (any buffer where there are none): the SPLIT variant's (splits()), whose word positions start at 0."""
        dispatches, uploads = [], []
        kernel = self.kernel + ("_split" if ids is not None else "")
        bound = (aux, data, out) + ((ids, weights if weights is not None else ids) if ids is not None else ())
        for words in self.pieces(device):
            params, fresh = device.params(words)
            if fresh:
                uploads.append(params)
            dispatches.append(Dispatch(kernel, (params,) + bound, max(1, self.invocations)))
        return dispatches, uploads
