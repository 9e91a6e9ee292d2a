"""The views of a dmlgpu.Tensor, as its own methods (``Tensor`` inherits them): NumPy's indexing (basic indexing a view,
advanced indexing a gather or scatter: dmlgpu/api/indexing.py), JAX's ``at``, ``reshape``, ``flatten``, ``transpose`` /
``T``, ``squeeze``, ``view(dtype)`` and ``strides``; the index rules they follow: dmlgpu/api/tensor_index.py."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import tensor_index as _index
from . import tensor_protocols as _protocols
from .tensor_index import device_dtype as _device_dtype

if TYPE_CHECKING:
    from typing_extensions import Self

_AxisError = getattr(np, "exceptions", np).AxisError     # NumPy's (an IndexError and a ValueError)


class TensorViews(_protocols.TensorFields):
    """dmlgpu.Tensor's views (module docstring); the other Tensor attributes that they use are declared here."""

    if TYPE_CHECKING:
        def _view(self, shape: tuple[int, ...], dtype: np.dtype[Any], offset: int,
                  strides: tuple[int, ...] | None = None) -> Self: ...

        def _element_strides(self) -> tuple[int, ...]: ...

        def write(self, array: ArrayLike) -> None: ...

    def __getitem__(self, key: Any) -> Self:
        """NumPy's indexing. Basic indexing (ints, slices with any step, None, Ellipsis) is always a view of the
        buffer, at a byte offset with element strides, whose writes (write(), ``t[key] = value``, ``out=``)
        reach the base (the rules: dmlgpu/api/tensor_index.py). Advanced indexing (integer arrays given as
        lists, NumPy arrays or Tensors, broadcast together; boolean arrays and Tensors, as their nonzero();
        mixed with basic indices, placed as NumPy places them) gives a new Tensor made by one gather (queued):
        ``t[ids]`` is ``dmlgpu.take(t, ids, axis=0)``. Out-of-range NumPy indices raise IndexError before any
        GPU work; a Tensor's are checked on the device, as take's (dmlgpu/plans/index_check.py). A boolean
        Tensor index is read back (its count decides the result's shape: one synchronisation), and so are the
        Tensor indices of a key with several index arrays (combined on the host). dmlgpu/api/indexing.py.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> t = dmlgpu.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        >>> t[[2, 0]].numpy()
        array([[ 8.,  9., 10., 11.],
               [ 0.,  1.,  2.,  3.]], dtype=float32)
        >>> t[[0, 2], [1, 3]].numpy(), t[:, [3]].numpy().ravel()
        (array([ 1., 11.], dtype=float32), array([ 3.,  7., 11.], dtype=float32))
        >>> t[np.array([True, False, True])].shape
        (2, 4)
        """
        if key.__class__ is type(self) or not _protocols.INDEXING.is_basic(key):
            adv: Self = _protocols.INDEXING.getitem(self, key)
            return adv
        out: Self = _index.getitem(self, key)
        return out

    def __setitem__(self, key: Any, value: Any) -> None:
        """``t[key] = value``, with NumPy's broadcasting of ``value`` to the indexed shape and its casting
        (``a[...] = value``). Basic indexing: ``t[key].write(value)``, on the device for Tensor values.
        Advanced indexing (as ``__getitem__`` takes it): one scatter into ``t``'s buffer in place (also through
        views); where several indices select one element, the last value in row-major order wins, on every
        device. Out-of-range indices raise IndexError and leave ``t`` unchanged: NumPy indices before any GPU
        work; a Tensor's are checked on the device, and the check guards the scatter (nothing is written where one
        is bad, and ``t`` then fails: its reads raise the IndexError until it is overwritten whole, as
        dmlgpu/plans/index_check.py says). A key with several
        index arrays of which one is a Tensor, or a boolean Tensor, is read back first, as for reads.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> cache = dmlgpu.zeros((4, 2), np.float32)
        >>> cache[[3, 0, 3]] = np.array([[1, 1], [2, 2], [3, 3]], np.float32)    # the last duplicate wins
        >>> cache[:, 1] = 9.0
        >>> cache.numpy()
        array([[2., 9.],
               [0., 9.],
               [0., 9.],
               [3., 9.]], dtype=float32)
        """
        if key.__class__ is type(self) or not _protocols.INDEXING.is_basic(key):
            _protocols.INDEXING.setitem(self, key, value)
            return
        self[key].write(value)

    @property
    def at(self) -> _protocols.At[Self]:
        """JAX's functional updates (``jax.Array.at``): ``t.at[key].get(mode=, fill_value=)``, ``.set(v)``,
        ``.add(v)``, ``.multiply(v)``, ``.min(v)``, ``.max(v)`` return a new Tensor and leave ``t`` unchanged.
        ``mode``: None (JAX's default: a get clamps out-of-range indices, an update drops them),
        "promise_in_bounds", "clip", "fill" (get) or "drop" (updates); ``.set`` with duplicates keeps the last in
        row-major order (JAX leaves it unspecified); the reductions apply every update in row-major order.
        dmlgpu/api/tensor_protocols.py's AtRef.

        Examples
        --------
        >>> import numpy as np, dmlgpu
        >>> x = dmlgpu.tensor(np.zeros(4, np.float32))
        >>> x.at[[0, 0, 9]].add(1.0).numpy()            # 9 is out of range: dropped
        array([2., 0., 0., 0.], dtype=float32)
        >>> x.at[[1, 9]].get(mode="fill", fill_value=-1.0).numpy()
        array([ 0., -1.], dtype=float32)
        >>> x.numpy()                                   # unchanged
        array([0., 0., 0., 0.], dtype=float32)
        """
        return _protocols.At(self)

    def reshape(self, *shape: Any, order: str = "C") -> Self:
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

    def flatten(self) -> Self:
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

    def transpose(self, *axes: Any) -> Self:
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

    def squeeze(self, axis: Any = None) -> Self:
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

    def view(self, dtype: DTypeLike) -> Self:
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
        new = _device_dtype(dtype, "Tensor.view")
        if self._strides is not None:
            if new.itemsize != self.dtype.itemsize:
                raise ValueError(f"Tensor.view: a strided view's items cannot change size ({self.dtype} to {new}): "
                                 f"view t.copy()")
            return self._view(self.shape, new, self.offset, self._strides)
        return self._view(_index.viewed(self.shape, self.dtype, new), new, self.offset)

    @property
    def T(self) -> Self:
        """transpose(): the axes reversed, a view."""
        return self.transpose()

    @property
    def strides(self) -> tuple[int, ...]:
        """The bytes between neighbours along each dimension (NumPy's strides; a packed tensor's are
        row-major)."""
        return tuple(s * self.dtype.itemsize for s in self._element_strides())
