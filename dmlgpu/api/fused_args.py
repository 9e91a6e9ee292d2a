"""The operands of the one-pass reductions (dmlgpu/api/fused.py): their checks, the packing of offsets, ids and
weights into one operand of 32-bit words, and ``EdgeGroups`` (gather_scatter's edges grouped once). Here, apart
from fused.py, so that signatures.py can name EdgeGroups without a circle of imports."""
from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import _device, _host_array, named
from .constructors import empty, tensor
from .device import Device, Runtime
from .execution import check_out_kind
from ..errors import DeviceError
from .tensor import DeviceLike, Tensor


_U32 = 1 << 32
_INDEX = (np.dtype(np.int32), np.dtype(np.int64))


# ---- operands ----
def _operand(x: Any, what: str) -> np.ndarray | Tensor:
    """A data operand: a Tensor (packed: a view at an offset or strided is copied on its device) or a NumPy array
    of native byte order (the kernels' arithmetic)."""
    if isinstance(x, Tensor):
        if x._strides is not None or x.offset:
            x = x._packed()
        a: Any = x
    else:
        a = _host_array(x)
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
    if a.dtype.hasobject or not a.dtype.isnative:
        raise TypeError(f"{what} has dtype {a.dtype}; it must be a numeric dtype of native byte order")
    return a


def _index(x: Any, what: str, ndims: tuple = (1,)) -> np.ndarray | Tensor:
    """An index operand: an int32 or int64 Tensor (packed), or a host array of integers as int64."""
    if isinstance(x, Tensor):
        if x.dtype not in _INDEX:
            raise TypeError(f"{what} Tensor has dtype {x.dtype}; it must be int32 or int64")
        if x._strides is not None or x.offset:
            x = x._packed()
        a: Any = x
    else:
        a = _host_array(x)
        if a.size == 0 and a.dtype.kind == "f" and isinstance(x, (list, tuple)):
            a = a.astype(np.int64)
        if a.dtype.kind not in "iu":
            raise TypeError(f"{what} must hold integers, not dtype {a.dtype}")
        if a.dtype.kind == "u" and a.size and int(a.max()) >= 1 << 63:
            raise IndexError(f"{what} holds {int(a.max())}, past any position")
        a = a.astype(np.int64)
    if a.ndim not in ndims:
        raise ValueError(f"{what} must have {' or '.join(map(str, ndims))} dimension(s), not shape {a.shape}")
    return a


def _narrow(a: np.ndarray) -> np.ndarray:
    """Checked host indices as int32 where they fit (half the words to move), else int64."""
    return a.astype(np.int32) if not a.size or (int(a.min()) >= -(1 << 31) and int(a.max()) < 1 << 31) else a


def _check_offsets(offsets: np.ndarray, end: int, what: str, of: str, first_zero: bool = False) -> None:
    if offsets.size == 0:
        raise ValueError(f"{what} must hold at least one bound")
    if first_zero and offsets[0] != 0:
        raise ValueError(f"{what}[0] must be 0 (the first bag starts at the first id), not {offsets[0]}")
    if offsets[0] < 0:
        raise ValueError(f"{what}[0] is {offsets[0]}; offsets must not be negative")
    bad = np.flatnonzero(np.diff(offsets) < 0)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{what} must be non-decreasing: {what}[{i + 1}] = {offsets[i + 1]} is below "
                         f"{what}[{i}] = {offsets[i]}")
    if offsets[-1] > end:
        raise ValueError(f"{what}[-1] = {offsets[-1]} is past the end of {of} ({end})")


def _check_ids(ids: np.ndarray, rows: int, what: str, of: str, low: int = 0, skip: int | None = None) -> None:
    """IndexError for the first id outside [low, rows) (``skip``: an id that is always allowed)."""
    bad = (ids < low) | (ids >= rows)
    if skip is not None:
        bad &= ids != skip
    if bad.any():
        pos = np.unravel_index(int(np.argmax(bad)), ids.shape)
        raise IndexError(f"{what}[{', '.join(map(str, pos))}] = {ids[pos]} is out of range for {of} of {rows} rows"
                         f" (valid: {low} to {rows - 1})")


def _identity(reduction: str, dtype: np.dtype) -> Any:
    """The value a reduction starts from that changes nothing: 0 for add and mean, 1 for mul; for min and max the
    largest and smallest values of the dtype (+-inf for floats that have them; float8_e4m3fn, which has none:
    its largest finite values; bool: True and False)."""
    if reduction in ("add", "mean"):
        return np.zeros((), dtype)
    if reduction == "mul":
        return np.ones((), dtype)
    top = reduction == "min"
    if dtype.kind == "b":
        return np.asarray(top)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.asarray(info.max if top else info.min, dtype)
    with np.errstate(all="ignore"):
        v = np.asarray(np.inf if top else -np.inf).astype(dtype)
    if np.isnan(v.astype(np.float32)):       # no infinity (float8_e4m3fn): its largest finite magnitude
        bits = np.asarray(0x7E if top else 0xFE, np.uint8)
        return bits.view(dtype)
    return v


def _checked_out(name: str, out: Any, shape: tuple, dtype: np.dtype, dev: Runtime, as_tensor: bool) -> None:
    if out is None:
        return
    check_out_kind(name, out, dev, as_tensor)
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise ValueError(f"{name}: out has shape {tuple(out.shape)} and dtype {out.dtype}; the result has shape "
                         f"{tuple(shape)} and dtype {dtype}")


# ---- the run ----
def _aux(dev: Runtime, parts: list) -> tuple[Any, list[int]]:
    """The offsets, ids and weights as one operand of 32-bit words (shaders/segment.comp's AUX), and the word where
    each part starts: host parts are concatenated on the host; with a Tensor part, one Tensor part is used as it
    is, several are copied into one Tensor on the device."""
    at, words = [], 0
    for p in parts:
        at.append(words)
        words += -(-p.nbytes // 4)
    if not any(isinstance(p, Tensor) for p in parts):
        buf = np.zeros(max(1, words), np.uint32)
        raw = buf.view(np.uint8)
        for a, p in zip(at, parts):
            raw[4 * a:4 * a + p.nbytes] = np.ascontiguousarray(p).reshape(-1).view(np.uint8)
        return buf, at
    if len(parts) == 1:
        return parts[0], at
    aux = empty((4 * max(1, words),), np.uint8, device=dev.user)
    for a, p in zip(at, parts):
        if p.nbytes:
            aux[4 * a:4 * a + p.nbytes] = (p if isinstance(p, Tensor) else tensor(p, device=dev.user)).reshape(-1) \
                .view(np.uint8)
    return aux, at


class EdgeGroups:
    """The edges of dmlgpu.gather_scatter grouped by target once, for many calls (a GNN layer per step): each
    later call skips the host work of grouping (and a Tensor's read back), and binds the grouped edges where
    they are on the device.

    The grouping is a stable sort of the edges by ``dst`` (each target's edges keep their order), made on the host
    when the object is made (Tensor ``src`` and ``dst`` are read back then, once); the targets' bounds and the
    sorted sources are uploaded to ``device`` at the first call for each number of rows of ``x`` (negative
    sources count from its end). ``dst`` is checked against ``dim_size`` here, ``src`` against ``x`` at each call.
    A call with an EdgeGroups returns a Tensor (its edges are on the device).

    Parameters
    ----------
    src, dst : array_like or Tensor
        1-D integers of one length: the edges' rows of ``x`` and of the output (``dst`` in ``[-dim_size,
        dim_size)``).
    dim_size : int, optional
        The output's rows (default: ``max(dst) + 1``).
    device : Device or int, optional
        Where the grouped edges live (default: a Tensor operand's device, else the default device).

    Raises
    ------
    IndexError
        A dst index out of range.
    ValueError, TypeError
        src and dst of other shapes, not integers, or no usable ``dim_size``.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> groups = dmlgpu.EdgeGroups([0, 1, 2, 2], [1, 1, 0, 1], dim_size=3)
    >>> x = np.array([[1, 10], [2, 20], [3, 30]], np.float32)
    >>> dmlgpu.gather_scatter(x, groups).numpy()
    array([[ 3., 30.],
           [ 6., 60.],
           [ 0.,  0.]], dtype=float32)
    >>> dmlgpu.gather_scatter(x, groups, "max").numpy()
    array([[ 3., 30.],
           [ 3., 30.],
           [ 0.,  0.]], dtype=float32)
    """

    def __init__(self, src: Any, dst: Any, dim_size: int | None = None, *, device: DeviceLike = None):
        name = "EdgeGroups"
        try:
            s, d = _index(src, "src"), _index(dst, "dst")
            self._dev = _device(name, device, s, d)
            self._setup(s, d, dim_size, None)
        except (TypeError, ValueError, IndexError, DeviceError) as e:
            raise named(e, name) from None

    @classmethod
    def _of(cls, s: Any, d: Any, dim_size: Any, out_rows: int | None, dev: Runtime) -> "EdgeGroups":
        """gather_scatter's own grouping of one call (errors raised as they are, for the caller to name)."""
        groups = cls.__new__(cls)
        groups._dev = dev
        groups._setup(s, d, dim_size, out_rows)
        return groups

    def _setup(self, s: Any, d: Any, dim_size: Any, out_rows: int | None) -> None:
        if s.shape != d.shape:
            raise ValueError(f"src and dst must have one shape (one entry per edge), not {s.shape} and {d.shape}")
        src = s.numpy().astype(np.int64) if isinstance(s, Tensor) else s
        dst = d.numpy().astype(np.int64) if isinstance(d, Tensor) else d
        edges = src.shape[0]
        if out_rows is not None:
            if dim_size is not None and dim_size != out_rows:
                raise ValueError(f"dim_size {dim_size} differs from out's rows ({out_rows})")
            dim = out_rows
        elif dim_size is None:
            if not edges:
                raise ValueError("dim_size is needed where there are no edges (and no out)")
            dim = int(dst.max()) + 1
            if dim <= 0:
                raise IndexError(f"dst holds only negative indices ({int(dst.max())}); pass dim_size")
        else:
            if not isinstance(dim_size, (int, np.integer)) or isinstance(dim_size, bool) or dim_size < 0:
                raise ValueError(f"dim_size must be a non-negative integer, not {dim_size!r}")
            dim = int(dim_size)
        _check_ids(dst, dim, "dst", "the output", low=-dim)
        resolved = dst % dim if dim else dst
        self.perm = np.argsort(resolved, kind="stable")
        self.bounds = _narrow(np.searchsorted(resolved[self.perm], np.arange(dim + 1)))
        self.src, self.dst, self.sorted_src = src, dst, src[self.perm]
        self.dim_size, self.edges = dim, edges
        self.longest = int(np.diff(self.bounds).max()) if dim else 0     # the most edges of one target
        self._aux: dict = {}           # rows of x -> (aux Tensor, word of the sources)
        self._perm: Tensor | None = None

    def _sources(self, n: int) -> np.ndarray:
        """The sorted sources resolved against ``n`` rows of x (IndexError outside [-n, n))."""
        _check_ids(self.sorted_src, n, "src", "x", low=-n)
        return _narrow(self.sorted_src % n if n else self.sorted_src)

    def _device_aux(self, n: int) -> tuple[Tensor, int, int]:
        """(the bounds and the sources resolved against ``n`` rows of x, on the device; the sources' word and
        width in words), made once per ``n``."""
        if n not in self._aux:
            sources = self._sources(n)
            aux, at = _aux(self._dev, [self.bounds, sources])
            self._aux[n] = (tensor(aux, device=self.device), at[1], sources.dtype.itemsize // 4)
        return self._aux[n]

    @property
    def device(self) -> Device:
        """The dmlgpu.Device where the grouped edges live."""
        return self._dev.user

    def _device_perm(self) -> Tensor:
        if self._perm is None:
            self._perm = tensor(_narrow(self.perm), device=self.device)
        return self._perm

    def __repr__(self) -> str:
        return f"<dmlgpu.EdgeGroups {self.edges} edges onto {self.dim_size} rows on {self.device.info.name}>"
