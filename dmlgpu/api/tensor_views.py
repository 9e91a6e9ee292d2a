"""The view methods of dmlgpu.Tensor (module functions that Tensor takes as its methods): basic indexing and ``t[key] = value``, reshape, flatten,
transpose/T, squeeze, view(dtype) and strides. Every one gives a view sharing the buffer, with element
strides (Tensor._view), or raises: nothing here copies (the index rules: dmlgpu/api/tensor_index.py)."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from . import tensor_index as _index

if TYPE_CHECKING:
    from .tensor import Tensor

_AxisError = getattr(np, "exceptions", np).AxisError     # NumPy's (an IndexError and a ValueError)


def device_dtype(dtype: DTypeLike, who: str) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.hasobject or dt.itemsize == 0:
        raise TypeError(f"{who}: dtype {dt} cannot live on a device (Python objects or empty items): use a "
                        f"numeric dtype")
    return dt


def __getitem__(self: "Tensor", key: Any) -> "Tensor":
    """Basic indexing (ints, slices with any step, None, Ellipsis), as NumPy's: always a view of the
    buffer, at a byte offset with element strides, whose writes (write(), ``t[key] = value``, ``out=``)
    reach the base. Arrays as indices: TypeError (use dmlgpu.take / gather). The rules:
    dmlgpu/api/tensor_index.py."""
    out: Tensor = _index.getitem(self, key)
    return out


def __setitem__(self: "Tensor", key: Any, value: Any) -> None:
    """``t[key] = value`` for basic indexing (ints, slices, None, ...): ``t[key].write(value)``, on the
    device for Tensor values, with NumPy's broadcasting and casting (``a[...] = value``). Index arrays:
    TypeError (use dmlgpu.put_along_axis / scatter_nd / scatter_elements)."""
    try:
        view = self[key]
    except TypeError as e:
        raise TypeError(str(e).replace("for index arrays use dmlgpu.take(t, indices, axis) or dmlgpu.gather / "
                                       "gather_nd", "to write at index arrays use dmlgpu.put_along_axis, "
                                       "dmlgpu.scatter_nd or dmlgpu.scatter_elements")) from None
    view.write(value)


def reshape(self: "Tensor", *shape: Any, order: str = "C") -> "Tensor":
    """The same elements as another shape: a view sharing the buffer (as NumPy's reshape where it needs no
    copy; a strided view that no strides can reshape raises ValueError: reshape ``t.copy()``).

    Parameters
    ----------
    *shape : int or sequence of int
        ``reshape(2, 3)`` or ``reshape((2, 3))``; one dimension may be -1 (inferred).
    order : {"C"}
        Row-major only.

    Returns
    -------
    Tensor
        A view of this tensor's buffer.

    Raises
    ------
    ValueError
        A shape of another size, more than one -1, a negative dimension, another order, or a strided view
        that no strides can show as ``shape``.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32))
    >>> t.reshape(2, -1).numpy()
    array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    """
    dims = _index.reshaped(self.size, shape, order)
    if self._strides is None:
        return self._view(dims, self.dtype, self.offset)
    strides = _index.nocopy_reshape(self.shape, self._strides, dims)
    if strides is None:
        raise ValueError(f"Tensor.reshape: this strided view (shape {self.shape}, element strides "
                         f"{self._strides}) cannot be seen as shape {dims} without a copy: reshape "
                         f"t.copy(), or write through the base")
    return self._view(dims, self.dtype, self.offset, strides)


def flatten(self: "Tensor") -> "Tensor":
    """The elements as one dimension in row-major order: a view sharing the buffer (as PyTorch's
    flatten and NumPy's ravel where they need no copy); ValueError for a strided view whose elements
    no single stride reaches (flatten ``t.copy()``).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    >>> f = t.flatten(); f.base is t, f.tolist()
    (True, [0, 1, 2, 3, 4, 5])
    """
    return self.reshape(-1)


def transpose(self: "Tensor", *axes: Any) -> "Tensor":
    """The axes permuted (reversed without arguments): a strided view sharing the buffer, as NumPy's.

    Parameters
    ----------
    *axes : int
        A permutation of ``range(ndim)`` (or one tuple of it); negative ones count from the end.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> t = dmlgpu.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    >>> t.T.shape, t.transpose(1, 0).tolist()
    ((3, 2), [[0, 3], [1, 4], [2, 5]])
    """
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = tuple(axes[0]) if axes[0] is not None else ()
    perm = [operator.index(a) for a in axes] if axes else list(range(self.ndim))[::-1]
    if sorted(a % self.ndim if -self.ndim <= a < self.ndim else a for a in perm) != list(range(self.ndim)):
        raise ValueError(f"Tensor.transpose: axes {tuple(perm)} are not a permutation of the "
                         f"{self.ndim} axes")
    perm = [a % self.ndim for a in perm]
    strides = self._element_strides()
    return self._view(tuple(self.shape[a] for a in perm), self.dtype, self.offset,
                      tuple(strides[a] for a in perm))


def transposed(self: "Tensor") -> "Tensor":
    """transpose(): the axes reversed, a view."""
    return self.transpose()


def squeeze(self: "Tensor", axis: Any = None) -> "Tensor":
    """The dimensions of size 1 removed (all, or those of ``axis``: an int or a tuple): a view, as NumPy's.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.zeros((1, 3, 1)).squeeze().shape, dmlgpu.zeros((1, 3, 1)).squeeze(0).shape
    ((3,), (3, 1))
    """
    if axis is None:
        drop = {d for d, n in enumerate(self.shape) if n == 1}
    else:
        drop = set()
        for a in (axis if isinstance(axis, tuple) else (axis,)):
            a = operator.index(a)
            if not -self.ndim <= a < self.ndim:
                raise _AxisError(f"Tensor.squeeze: axis {a} is out of bounds for a tensor of rank {self.ndim}")
            if self.shape[a] != 1:
                raise ValueError(f"Tensor.squeeze: cannot select an axis to squeeze out which has size not "
                                 f"equal to one (axis {a} has size {self.shape[a]})")
            drop.add(a % self.ndim)
    strides = self._element_strides()
    keep = [d for d in range(self.ndim) if d not in drop]
    return self._view(tuple(self.shape[d] for d in keep), self.dtype, self.offset, tuple(strides[d] for d in keep))


def strides(self: "Tensor") -> tuple[int, ...]:
    """The bytes between neighbours along each dimension (NumPy's strides; a packed tensor's are
    row-major)."""
    return tuple(s * self.dtype.itemsize for s in self._element_strides())


def view(self: "Tensor", dtype: DTypeLike) -> "Tensor":
    """The same bytes as another dtype: a view sharing the buffer, with NumPy's rule for a changed item
    size (the last axis's bytes are divided into the new items).

    Parameters
    ----------
    dtype : dtype_like

    Returns
    -------
    Tensor
        A view of this tensor's buffer; its last dimension scaled by the ratio of the item sizes.

    Raises
    ------
    ValueError
        Another item size on a 0-d tensor, or a last axis whose bytes the new item size does not divide.

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dmlgpu.tensor(np.array([1.0], np.float32)).view(np.uint16).numpy()
    array([    0, 16256], dtype=uint16)
    """
    new = device_dtype(dtype, "Tensor.view")
    if self._strides is not None:
        if new.itemsize != self.dtype.itemsize:
            raise ValueError(f"Tensor.view: a strided view's items cannot change size ({self.dtype} to {new}): "
                             f"view t.copy()")
        return self._view(self.shape, new, self.offset, self._strides)
    return self._view(_index.viewed(self.shape, self.dtype, new), new, self.offset)

