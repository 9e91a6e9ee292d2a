"""A stateful fuzz of queued Tensor calls through views (issue 39): hypothesis draws sequences of views
(basic indexing with steps, None and ..., T, transpose, squeeze, reshape/flatten where possible), writes
through them (write(), ``t[key] = value`` with scalars, arrays and Tensors), and layer-2 calls and NumPy names
with strided views as operands and as ``out=`` (in place too), queued on one device; every step is mirrored
on NumPy views of NumPy arrays, and reads (which wait for the queue) must equal the mirrors bit for bit.
``-k fuzz`` runs it with the other campaigns (DMLGPU_FUZZ_EXAMPLES sets its size)."""
import numpy as np
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import dmlgpu

from strategies import same_bytes

DTYPES = [np.int32, np.float32, np.uint8, np.int64, np.float16]


def _key(draw, shape):
    """A basic index for ``shape``: per axis an int, a slice with any step or ``...``/None here and there."""
    key = []
    for n in shape:
        kind = draw(st.sampled_from(["slice", "slice", "int", "none"] if n else ["slice"]))
        if kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "none":
            key.append(None)
            key.append(slice(None))
        else:
            step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
            start = draw(st.one_of(st.none(), st.integers(-n, n)))
            stop = draw(st.one_of(st.none(), st.integers(-n, n)))
            key.append(slice(start, stop, step))
    if key and draw(st.booleans()):
        cut = draw(st.integers(0, len(key) - 1))
        key = key[:cut]
    return tuple(key) + (Ellipsis,)          # (NumPy's m[1, 2, ...] is a 0-d view, as the Tensor's)


class Views(RuleBasedStateMachine):
    """Tensors and their NumPy mirrors: ``pairs`` holds (Tensor view, NumPy view of the mirror) of bases."""

    def __init__(self):
        super().__init__()
        self.dev = dmlgpu.default_device()
        self.bases, self.pairs = [], []
        self.rng = np.random.default_rng(0)

    def _values(self, shape, dtype):
        if np.dtype(dtype).kind == "f":
            return self.rng.integers(-100, 100, shape).astype(dtype) / 4
        info = np.iinfo(dtype)
        return self.rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)

    @initialize(dtype=st.sampled_from(DTYPES), shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
                seed=st.integers(0, 2**32 - 1))
    def base(self, dtype, shape, seed):
        self.rng = np.random.default_rng(seed)
        mirror = self._values(tuple(shape), dtype)
        t = dmlgpu.tensor(mirror, device=self.dev)
        self.bases.append((t, mirror))
        self.pairs.append((t, mirror))

    @rule(data=st.data())
    def index(self, data):
        t, m = data.draw(st.sampled_from(self.pairs), label="of")
        key = _key(data.draw, m.shape)
        v = t[key]
        assert v.base is (t.base if t.base is not None else t)
        self.pairs.append((v, m[key]))

    @rule(data=st.data())
    def reshape(self, data):
        t, m = data.draw(st.sampled_from(self.pairs), label="of")
        how = data.draw(st.sampled_from(["T", "transpose", "squeeze", "flatten"]), label="how")
        if how == "T":
            self.pairs.append((t.T, m.T))
        elif how == "transpose":
            perm = data.draw(st.permutations(range(m.ndim)), label="perm")
            self.pairs.append((t.transpose(perm), m.transpose(perm)))
        elif how == "squeeze":
            self.pairs.append((t.squeeze(), m.squeeze()))
        else:
            flat = m.reshape(-1)
            if np.shares_memory(flat, m) or m.size == 0:        # NumPy needed no copy: nor must dmlgpu
                self.pairs.append((t.flatten(), flat))
            else:
                try:
                    t.flatten()
                except ValueError:
                    return
                raise AssertionError("flatten made a view where NumPy needs a copy")

    @rule(data=st.data())
    def write(self, data):
        t, m = data.draw(st.sampled_from(self.pairs), label="into")
        how = data.draw(st.sampled_from(["write", "setitem scalar", "setitem array", "tensor"]), label="how")
        if how == "write":
            values = self._values(m.shape, m.dtype)
            t.write(values)
            m[...] = values
        elif how == "setitem scalar":
            key = _key(data.draw, m.shape)
            value = int(self.rng.integers(0, 100))
            t[key] = value
            m[key] = value
        else:
            key = _key(data.draw, m.shape)
            values = self._values(m[key].shape, m.dtype)
            t[key] = dmlgpu.tensor(values, device=self.dev) if how == "tensor" else values
            m[key] = values

    @precondition(lambda self: any(m.ndim >= 1 and m.shape[0] for _, m in self.pairs))
    @rule(data=st.data())
    def operators(self, data):
        """take / gather from a view into another view as out=, scatter_nd in place on a view, put_along_axis
        on a view: strided operands and out=."""
        t, m = data.draw(st.sampled_from([p for p in self.pairs if p[1].ndim >= 1 and p[1].shape[0]]), label="on")
        n = m.shape[0]
        op = data.draw(st.sampled_from(["take", "gather out", "scatter in place", "put_along_axis"]), label="op")
        idx = self.rng.integers(-n, n, data.draw(st.integers(1, 4), label="k"))
        if op == "take":
            same_bytes(dmlgpu.take(t, dmlgpu.tensor(idx, device=self.dev), axis=0).numpy(), np.take(m, idx, axis=0))
        elif op == "gather out":                   # into a fresh strided view (a transposed base)
            shape = (len(idx),) + m.shape[1:]
            ob, mob = dmlgpu.zeros(shape[::-1], m.dtype, device=self.dev), np.zeros(shape[::-1], m.dtype)
            o, mo = ob.T, mob.T
            assert dmlgpu.gather(t, idx, 0, out=o) is o
            mo[...] = np.take(m, idx, axis=0)
            self.bases.append((ob, mob))
            self.pairs.append((o, mo))
        elif op == "scatter in place":
            rows = np.unique(idx % n)[:, None]
            upd = self._values((len(rows),) + m.shape[1:], m.dtype)
            dmlgpu.scatter_nd(t, dmlgpu.tensor(rows, device=self.dev), dmlgpu.tensor(upd, device=self.dev), out=t)
            m[rows[:, 0]] = upd
        else:
            ind = idx.reshape((-1,) + (1,) * (m.ndim - 1))
            value = int(self.rng.integers(0, 50))
            dmlgpu.put_along_axis(t, ind, value, axis=0)
            np.put_along_axis(m, ind, value, axis=0)

    @invariant()
    def same(self):
        if self.rng.random() < 0.3:                # reads wait for the queue: not after every step
            for t, m in self.pairs[-3:] + self.bases:
                same_bytes(t.numpy(), m)


Views.TestCase.settings = settings(settings.get_profile("dmlgpu"), stateful_step_count=20)
test_fuzz_views_of_queued_tensors = Views.TestCase
