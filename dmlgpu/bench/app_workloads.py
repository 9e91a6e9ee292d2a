"""The workloads of ``python -m dmlgpu bench apps`` (dmlgpu/bench/apps.py: what it times and how): their inputs and
the App each builds (dmlgpu's call and the peers', PyTorch's and NumPy's, for the same job), by name (``BUILDERS``,
``select``)."""
from __future__ import annotations

import fnmatch
import inspect
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import dmlgpu

from .units import fmt_bytes


def has_out() -> bool:
    """Whether the installed dmlgpu's scatter_nd writes in place into ``out=`` (issue 25)."""
    return "out" in inspect.signature(dmlgpu.scatter_nd).parameters


# ---- inputs ----

def random_rows(rng, shape, dtype) -> np.ndarray:
    """Finite values of ``dtype`` (float16, bfloat16 bits as uint16, float32): random bits with the exponent's
    top bit cleared (no inf or NaN), a block of a prime number of random words repeated (cheap at gigabytes;
    no two rows alike)."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    block = np.frombuffer(rng.bytes(min(n, 1_000_003) * dtype.itemsize), dtype=f"u{dtype.itemsize}")
    words = np.resize(block, n)
    np.bitwise_and(words, (1 << (8 * dtype.itemsize)) - 1 - (1 << (8 * dtype.itemsize - 2)), out=words)
    return words.view(dtype).reshape(shape)


def normal_values(rng, shape, dtype) -> np.ndarray:
    """Normal values of ``dtype`` with no zeros and no subnormals (|x| >= 1/1024), so that adding one onto a
    zero gives the value's own bits (a -0.0 onto +0.0 gives +0.0): for PyTorch's index_add_ onto zeros."""
    x = rng.standard_normal(shape, dtype=np.float32)
    np.copysign(np.maximum(np.abs(x), np.float32(1 / 1024)), x, out=x)
    return x.astype(dtype)


def zipf_ids(rng, n: int, rows: int, a: float = 1.1) -> np.ndarray:
    """``n`` ids in [0, rows): Zipf-distributed ranks (exponent ``a``: a few ids take most lookups) scattered
    over the table by a multiplicative hash (a bijection: 2654435761 is prime and not a factor of rows)."""
    ranks = (rng.zipf(a, size=n) - 1) % rows
    return (ranks.astype(np.uint64) * np.uint64(2654435761) % np.uint64(rows)).astype(np.int64)


# ---- the workloads ----

@dataclass
class App:
    """One workload at one scale. ``inputs``: host arrays given to both sides; ``torch_aux``: arrays for the
    PyTorch calls only; ``torch_dtypes``: inputs PyTorch sees in another dtype of the same bits (bfloat16).
    ``dml(t)`` and each of ``torch`` (by name) and ``numpy`` take a dict of their side's tensors (after
    ``dml_prepare`` / ``torch_prepare``, which add derived entries such as per-step lists) and return the
    result to check; ``mutates``: inputs the calls write in place (every side's checked call gets fresh
    inputs, so this is for the reader).
    ``deterministic``: PyTorch's calls are also timed under torch.use_deterministic_algorithms(True)."""

    name: str
    family: str
    sizes: str
    inputs: dict
    dml: Callable
    numpy: Callable
    torch: dict
    torch_aux: dict = field(default_factory=dict)
    torch_dtypes: dict = field(default_factory=dict)
    mutates: tuple = ()
    dml_prepare: Callable | None = None
    torch_prepare: Callable | None = None
    deterministic: bool = False
    steps: int = 1                  # calls per loop (the decode loop): per-step figures divide by it
    note: str = ""
    recordable: bool = True         # False: no GPU time (a Recording would pin every copy a loop makes)

    def device_bytes(self) -> int:
        return sum(a.nbytes for a in self.inputs.values())


def _n(x: float, scale: float, least: int = 1) -> int:
    return max(least, int(round(x * scale)))


def embedding(scale, rng, bf16: bool) -> App:
    vocab, hidden, n = _n(151936, scale, 64), 4096, _n(8192, scale, 8)
    table = random_rows(rng, (vocab, hidden), np.uint16 if bf16 else np.float16)
    ids = rng.integers(0, vocab, n, dtype=np.int64)
    return _row_gather(f"embedding-{'bf16' if bf16 else 'f16'}", "token embedding lookup",
                       f"{n} ids from [{vocab}, {hidden}] {'bfloat16 (uint16 bits)' if bf16 else 'float16'} "
                       f"({fmt_bytes(table.nbytes)})",
                       {"table": table, "ids": ids}, embedding=True,
                       torch_dtypes={"table": "bfloat16"} if bf16 else {})


def _row_gather(name: str, family: str, sizes: str, inputs: dict, embedding: bool = False, indexing: bool = True,
                **more) -> App:
    """An App that gathers rows of the first of ``inputs`` (the table) at the second (int64 row ids):
    dmlgpu.gather, np.take on axis 0, and on PyTorch F.embedding (``embedding``), index_select and
    ``table[ids]`` (``indexing``). ``more``: App's other fields."""
    table, ids = inputs
    torch = {"F.embedding": lambda a: _torch_module("torch.nn.functional").embedding(a[ids], a[table])} \
        if embedding else {}
    torch["index_select"] = lambda a: a[table].index_select(0, a[ids])
    if indexing:
        torch[f"{table}[{ids}]"] = lambda a: a[table][a[ids]]
    return App(name, family, sizes, inputs, dml=lambda t: dmlgpu.gather(t[table], t[ids]),
               numpy=lambda a: np.take(a[table], a[ids], axis=0), torch=torch, **more)


def _torch_module(name: str):
    import importlib
    return importlib.import_module(name)


def _scatter_rows(inplace: bool):
    """scatter_nd of rows into ``data``: in place through out= (issue 25) when ``inplace`` (returns data),
    else the copy (returns it)."""
    if inplace:
        def write(data, idx, rows):
            dmlgpu.scatter_nd(data, idx, rows, out=data)
            return data
        return write
    return lambda data, idx, rows: dmlgpu.scatter_nd(data, idx, rows)


KV_HEADS, HEAD_DIM = 32, 128     # one layer's K cache of a 4096-wide multi-head model (Llama-2-7B's)


def kv_write(scale, rng, inplace: bool) -> App:
    slots, n = _n(4096, scale, 16), _n(256, scale, 4)
    cache = random_rows(rng, (slots, KV_HEADS, HEAD_DIM), np.float16)
    rows = random_rows(rng, (n, KV_HEADS, HEAD_DIM), np.float16)
    pos = rng.choice(slots, n, replace=False).astype(np.int64)       # paged cache: any free slots
    return _row_write("kv-cache-write", "KV-cache write",
                      f"{n} rows of [{KV_HEADS}, {HEAD_DIM}] float16 into a [{slots}, {KV_HEADS}, {HEAD_DIM}] cache "
                      f"({fmt_bytes(cache.nbytes)}), random slots",
                      {"cache": cache, "pos": pos, "rows": rows}, inplace, "the cache")


def _row_write(name: str, family: str, sizes: str, inputs: dict, inplace: bool, copied: str,
               torch_more: dict | None = None) -> App:
    """An App that writes the rows of the third of ``inputs`` into the first (``data``, mutated) at the
    distinct rows the second (int64) names: scatter_nd (in place when ``inplace``, else the copy, whose
    note says it copies ``copied``), ``out[idx] = rows`` on a NumPy copy, and on PyTorch index_copy_,
    ``torch_more`` (by name) and ``data[idx] = rows``."""
    data, idx, rows = inputs
    write = _scatter_rows(inplace)
    column = idx + "2"           # the row ids as index tuples ([n, 1]) for scatter_nd

    def numpy(a):
        out = a[data].copy()
        out[a[idx]] = a[rows]
        return out

    def index_put(a):
        a[data][a[idx]] = a[rows]
        return a[data]
    return App(name + ("" if inplace else " (copy)"), family, sizes, inputs,
               dml=lambda t: write(t[data], t[column], t[rows]),
               dml_prepare=lambda t: {**t, column: dmlgpu.tensor(inputs[idx][:, None], device=t[data].device)},
               numpy=numpy,
               torch={"index_copy_": lambda a: a[data].index_copy_(0, a[idx], a[rows]), **(torch_more or {}),
                      f"{data}[{idx}] = {rows}": index_put},
               mutates=(data,),
               note="" if inplace else f"dmlgpu has no scatter_nd(out=) here: the call copies {copied}")


def decode_loop(scale, rng, inplace: bool) -> App:
    vocab, slots = _n(151936, scale, 64), _n(4096, scale, 16)
    steps = min(slots, _n(512, scale, 16))
    table = random_rows(rng, (vocab, KV_HEADS, HEAD_DIM), np.float16)   # [vocab, 4096] as heads
    cache = random_rows(rng, (slots, KV_HEADS, HEAD_DIM), np.float16)
    tokens = rng.integers(0, vocab, steps, dtype=np.int64)
    start = slots - steps
    write = _scatter_rows(inplace)

    def dml_prepare(t):
        dev = t["cache"].device
        return {**t, "tok": [dmlgpu.tensor(tokens[i:i + 1], device=dev) for i in range(steps)],
                "pos": [dmlgpu.tensor(np.array([[start + i]], np.int64), device=dev) for i in range(steps)]}

    def dml(t):
        cache, table_t = t["cache"], t["table"]
        for tok, pos in zip(t["tok"], t["pos"]):
            row = dmlgpu.gather(table_t, tok)                 # [1, heads, dim]: stands in for the K row
            cache = write(cache, pos, row)
        return cache

    def numpy(a):
        out = a["cache"].copy()
        out[start:start + steps] = a["table"][a["tokens"]]
        return out

    def torch_prepare(a):
        torch = _torch_module("torch")
        tok = [a["tokens"][i:i + 1].clone() for i in range(steps)]
        pos = [torch.full((1,), start + i, dtype=torch.int64, device=a["cache"].device) for i in range(steps)]
        return {**a, "tok": tok, "pos": pos, "table2": a["table"].view(vocab, KV_HEADS * HEAD_DIM)}

    def torch_index(a):
        cache, table_t = a["cache"], a["table"]
        for tok, pos in zip(a["tok"], a["pos"]):
            cache.index_copy_(0, pos, table_t.index_select(0, tok))
        return cache

    def torch_slice(a):
        F = _torch_module("torch.nn.functional")
        cache, table2 = a["cache"], a["table2"]      # F.embedding takes a 2-D table
        for i, tok in enumerate(a["tok"]):
            cache[start + i] = F.embedding(tok, table2).view(KV_HEADS, HEAD_DIM)   # a copy_ into the slot
        return cache
    return App("decode-loop" + ("" if inplace else " (copy)"), "decode loop",
               f"{steps} steps of: embed 1 token from [{vocab}, {KV_HEADS * HEAD_DIM}] float16, write its row "
               f"into a [{slots}, {KV_HEADS}, {HEAD_DIM}] cache; one synchronize at the end",
               {"table": table, "cache": cache, "tokens": tokens},
               dml=dml, dml_prepare=dml_prepare, numpy=numpy, torch_prepare=torch_prepare,
               torch={"index_select + index_copy_": torch_index, "F.embedding + cache[p] = row": torch_slice},
               mutates=("cache",), steps=steps, recordable=inplace,
               note="the embedded row stands in for the K projection" +
                    ("" if inplace else "; dmlgpu has no scatter_nd(out=) here: each step copies the cache"))


def moe_dispatch(scale, rng) -> App:
    tokens, topk, hidden = _n(4096, scale, 8), 8, 4096
    x = random_rows(rng, (tokens, hidden), np.float16)
    order = np.argsort(rng.integers(0, 64, tokens * topk), kind="stable") // topk   # tokens by expert
    order = order.astype(np.int64)
    return _row_gather("moe-dispatch", "MoE dispatch",
                       f"gather {order.size} rows of 8 KiB (float16 [{tokens}, {hidden}], top-{topk} of 64 experts) "
                       f"in routing order",
                       {"x": x, "order": order})


def moe_combine(scale, rng, inplace: bool) -> App:
    rows, hidden = _n(32768, scale, 16), 4096
    y = normal_values(rng, (rows, hidden), np.float16)     # index_add_ onto zeros keeps their bits
    perm = rng.permutation(rows).astype(np.int64)
    out0 = np.zeros((rows, hidden), np.float16)
    return _row_write("moe-combine", "MoE combine",
                      f"scatter {rows} rows of 8 KiB (float16) back to token order (a permutation)",
                      {"out": out0, "perm": perm, "y": y}, inplace, "the output first",
                      {"index_add_ (onto zeros; timed calls accumulate)":
                       lambda a: a["out"].index_add_(0, a["perm"], a["y"])})


GNN_WIDTH = 64      # float32: rows of 256 B


def gnn_gather(scale, rng) -> App:
    nodes, edges = _n(262144, scale, 16), _n(4 << 20, scale, 64)
    x = random_rows(rng, (nodes, GNN_WIDTH), np.float32)
    src = rng.integers(0, nodes, edges, dtype=np.int64)
    return _row_gather("gnn-gather", "GNN message gather",
                       f"{edges} rows of 256 B (float32 x {GNN_WIDTH}) from {nodes} nodes", {"x": x, "src": src})


def gnn_scatter_add(scale, rng) -> App:
    nodes, edges = _n(262144, scale, 16), _n(4 << 20, scale, 64)
    msg = rng.integers(-4, 5, (edges, GNN_WIDTH), dtype=np.int8).astype(np.float32)   # exact sums
    dst = rng.integers(0, nodes, edges, dtype=np.int64)
    agg = np.zeros((nodes, GNN_WIDTH), np.float32)

    def numpy(a):
        out = a["agg"].copy()
        np.add.at(out, a["dst"], a["msg"])
        return out

    def torch_zeros_index_add(a):
        return a["agg"].new_zeros(a["agg"].shape).index_add_(0, a["dst"], a["msg"])

    def torch_scatter_add(a):
        return a["agg"].new_zeros(a["agg"].shape).scatter_add_(0, a["dst2"], a["msg"])
    return App("gnn-scatter-add", "GNN scatter-add",
               f"{edges} rows of 256 B added onto {nodes} nodes (float32 x {GNN_WIDTH}; small-integer values)",
               {"agg": agg, "dst": dst, "msg": msg},
               dml=lambda t: dmlgpu.scatter_nd(t["agg"], t["dst2"], t["msg"], reduction="add"),
               dml_prepare=lambda t: {**t, "dst2": dmlgpu.tensor(dst[:, None], device=t["msg"].device)},
               numpy=numpy,
               torch={"zeros + index_add_": torch_zeros_index_add,
                      "zeros + scatter_add_": torch_scatter_add},
               torch_prepare=lambda a: {**a, "dst2": a["dst"][:, None].expand(-1, GNN_WIDTH)},
               deterministic=True)


def topk_logits(scale, rng) -> App:
    batch, vocab, k = 64, _n(151936, scale, 64), 50
    logits = rng.standard_normal((batch, vocab), dtype=np.float32)
    idx = np.stack([rng.choice(vocab, k, replace=False) for _ in range(batch)]).astype(np.int64)
    return _logits_gather("topk-gather", "top-k logits", f"gather_elements of [{batch}, {k}] from [{batch}, {vocab}] "
                          f"float32", logits, idx)


def _logits_gather(name: str, family: str, sizes: str, logits: np.ndarray, idx: np.ndarray) -> App:
    """An App that gathers ``logits`` (float32 [rows, vocab]) at ``idx`` along axis 1: dmlgpu.gather_elements,
    np.take_along_axis, and on PyTorch torch.gather and take_along_dim."""
    return App(name, family, sizes, {"logits": logits, "idx": idx},
               dml=lambda t: dmlgpu.gather_elements(t["logits"], t["idx"], axis=1),
               numpy=lambda a: np.take_along_axis(a["logits"], a["idx"], axis=1),
               torch={"torch.gather": lambda a: _torch_module("torch").gather(a["logits"], 1, a["idx"]),
                      "take_along_dim": lambda a: _torch_module("torch").take_along_dim(a["logits"], a["idx"], 1)})


def paged_kv(scale, rng) -> App:
    blocks, block_elems, seqs, per_seq = _n(4096, scale, 64), 16384, 32, _n(64, scale, 2)
    pool = random_rows(rng, (blocks, block_elems), np.float16)       # 32 KiB blocks
    table = rng.integers(0, blocks, (seqs, per_seq), dtype=np.int64)
    return App("paged-kv-gather", "paged KV cache",
               f"[{seqs}, {per_seq}] block ids (a 2-D block table) from [{blocks}, {block_elems}] float16 "
               f"({fmt_bytes(pool.nbytes)}, 32 KiB blocks)",
               {"pool": pool, "table": table},
               dml=lambda t: dmlgpu.gather(t["pool"], t["table"]),
               numpy=lambda a: np.take(a["pool"], a["table"], axis=0),
               torch={"pool[table]": lambda a: a["pool"][a["table"]],
                      "index_select": lambda a: a["pool"].index_select(0, a["table"].view(-1)).view(
                          *a["table"].shape, block_elems)})


def label_logits(scale, rng) -> App:
    rows, vocab = _n(8192, scale, 8), _n(32000, scale, 64)
    logits = rng.standard_normal((rows, vocab), dtype=np.float32)
    labels = rng.integers(0, vocab, (rows, 1), dtype=np.int64)
    return _logits_gather("label-gather", "cross-entropy label logits", f"gather_elements of one label per row from "
                          f"[{rows}, {vocab}] float32 ({fmt_bytes(logits.nbytes)})", logits, labels)


def point_cloud(scale, rng) -> App:
    batch, points, picked, width = 8, _n(65536, scale, 16), _n(16384, scale, 4), 64
    x = rng.standard_normal((batch, points, width), dtype=np.float32)
    idx = rng.integers(0, points, (batch, picked), dtype=np.int64)
    return App("pointcloud-gather_nd", "point clouds",
               f"gather_nd, batch_dims=1: {batch} x {picked} rows of {width} float32 from [{batch}, {points}, "
               f"{width}]",
               {"x": x, "idx3": idx[..., None]},
               dml=lambda t: dmlgpu.gather_nd(t["x"], t["idx3"], batch_dims=1),
               numpy=lambda a: a["x"][np.arange(batch)[:, None], a["idx3"][..., 0]],
               torch={"gather(idx.expand)": lambda a: a["x"].gather(1, a["idx3"].expand(-1, -1, width)),
                      "x[b, idx]": lambda a: a["x"][a["b"], a["idx3"][..., 0]],
                      "flat index_select": lambda a: a["x"].view(-1, width).index_select(
                          0, (a["idx3"][..., 0] + a["off"]).view(-1)).view(batch, picked, width)},
               torch_aux={"b": np.arange(batch, dtype=np.int64)[:, None],
                          "off": (np.arange(batch, dtype=np.int64) * points)[:, None]})


def recommender(scale, rng) -> App:
    rows, width, n = _n(int(4.8 * 2**30) // 512, scale, 64), 128, _n(65536, scale, 8)
    table = random_rows(rng, (rows, width), np.float32)
    ids = zipf_ids(rng, n, rows)
    return _row_gather("recommender", "recommender",
                       f"{n} Zipf(1.1) ids from [{rows}, {width}] float32 ({fmt_bytes(table.nbytes)}, 512 B rows)",
                       {"table": table, "ids": ids}, embedding=True, indexing=False)


BAG_IDS, BAG_WIDTH = 20, 128     # DLRM-style bags: 20 Zipf ids each, rows of 512 B (float32)


def embedding_bag(scale, rng, mode: str) -> App:
    rows, bags = _n(1 << 20, scale, 64), _n(65536, scale, 8)
    table = rng.integers(-4, 5, (rows, BAG_WIDTH), dtype=np.int8).astype(np.float32)     # exact sums
    ids = zipf_ids(rng, bags * BAG_IDS, rows)
    offsets = np.arange(bags, dtype=np.int64) * BAG_IDS

    def numpy(a):
        rows = np.take(a["table"], a["ids"], axis=0)
        if mode == "max":
            return np.maximum.reduceat(rows, a["offsets"], axis=0)
        summed = np.add.reduceat(rows, a["offsets"], axis=0)
        return summed if mode == "sum" else (summed / np.float32(BAG_IDS)).astype(np.float32)
    return App(f"embedding-bag-{mode}", "embedding bags",
               f"{bags} bags of {BAG_IDS} Zipf(1.1) ids from [{rows}, {BAG_WIDTH}] float32 "
               f"({fmt_bytes(table.nbytes)}), mode {mode!r}",
               {"table": table, "ids": ids, "offsets": offsets},
               dml=lambda t: dmlgpu.embedding_bag(t["table"], t["ids"], t["offsets"], mode=mode),
               numpy=numpy,
               torch={"F.embedding_bag": lambda a: _torch_module("torch.nn.functional").embedding_bag(
                   a["ids"], a["table"], a["offsets"], mode=mode)},
               note="small-integer values: every order of summation gives the same bits")


MP_WIDTH = 128      # message passing: rows of 512 B (float32)


def message_passing(scale, rng, order: str | None = None) -> App:
    nodes, edges = _n(100_000, scale, 16), _n(1 << 20, scale, 64)
    x = rng.integers(-4, 5, (nodes, MP_WIDTH), dtype=np.int8).astype(np.float32)      # exact sums
    src = rng.integers(0, nodes, edges, dtype=np.int64)
    dst = rng.integers(0, nodes, edges, dtype=np.int64)
    agg = np.zeros((nodes, MP_WIDTH), np.float32)

    def numpy(a):
        out = np.zeros_like(a["agg"])
        np.add.at(out, a["dst"], np.take(a["x"], a["src"], axis=0))
        return out

    def torch_index_add(a):
        return a["agg"].new_zeros(a["agg"].shape).index_add_(0, a["dst"], a["x"].index_select(0, a["src"]))
    return App("message-passing" + (f"-{order}" if order else ""), "GNN message passing",
               f"out[dst] += x[src]: {edges} edges, {nodes} nodes, rows of 512 B (float32 x {MP_WIDTH}; "
               f"small-integer values)",
               {"agg": agg, "x": x, "src": src, "dst": dst},
               dml=lambda t: dmlgpu.gather_scatter(t["x"], t["groups"], order=order),
               dml_prepare=lambda t: {**t, "groups": dmlgpu.EdgeGroups(t["src"], t["dst"], nodes,
                                                                       device=t["x"].device)},
               numpy=numpy, torch={"index_select + index_add_": torch_index_add}, deterministic=True,
               note="dmlgpu: gather_scatter with the edges grouped once (EdgeGroups, made before the timed calls, "
                    "as a GNN keeps its graph's)" + (f", order={order!r}" if order else ""))


# name -> builder(scale, rng, inplace)
def spelled(app: App, name: str, dml: Callable, note: str) -> App:
    """``app`` with dmlgpu's call as users spell it (Tensor indexing, ufunc.at: issue 48), beside the function
    call's row: the same inputs, peer calls and check."""
    from dataclasses import replace
    return replace(app, name=name, dml=dml, note=(app.note + "; " if app.note else "") + note)


def _add_at(t):
    out = dmlgpu.zeros_like(t["agg"])
    np.add.at(out, t["dst"], t["msg"])
    return out


def _cache_setitem(t):
    t["cache"][t["pos"]] = t["rows"]
    return t["cache"]


BUILDERS = {
    "embedding-f16": lambda s, r, ip: embedding(s, r, False),
    "embedding-f16-table[ids]": lambda s, r, ip: spelled(embedding(s, r, False), "embedding-f16-table[ids]",
                                                         lambda t: t["table"][t["ids"]], "dmlgpu: table[ids]"),
    "embedding-bf16": lambda s, r, ip: embedding(s, r, True),
    "kv-cache-write": kv_write,
    "kv-cache-write-cache[pos]=rows": lambda s, r, ip: spelled(kv_write(s, r, True), "kv-cache-write-cache[pos]=rows",
                                                               _cache_setitem, "dmlgpu: cache[pos] = rows (NumPy's "
                                                               "mode: the device's check of the index Tensor guards "
                                                               "the write)"),
    "decode-loop": decode_loop,
    "moe-dispatch": lambda s, r, ip: moe_dispatch(s, r),
    "moe-combine": moe_combine,
    "paged-kv-gather": lambda s, r, ip: paged_kv(s, r),
    "label-gather": lambda s, r, ip: label_logits(s, r),
    "gnn-gather": lambda s, r, ip: gnn_gather(s, r),
    "gnn-scatter-add": lambda s, r, ip: gnn_scatter_add(s, r),
    "gnn-scatter-add-np.add.at": lambda s, r, ip: spelled(gnn_scatter_add(s, r), "gnn-scatter-add-np.add.at", _add_at,
                                                          "dmlgpu: zeros_like + np.add.at(out, dst, msg)"),
    "message-passing": lambda s, r, ip: message_passing(s, r),
    "message-passing-fixed-point": lambda s, r, ip: message_passing(s, r, "fixed-point"),
    "embedding-bag-sum": lambda s, r, ip: embedding_bag(s, r, "sum"),
    "embedding-bag-mean": lambda s, r, ip: embedding_bag(s, r, "mean"),
    "embedding-bag-max": lambda s, r, ip: embedding_bag(s, r, "max"),
    "topk-gather": lambda s, r, ip: topk_logits(s, r),
    "pointcloud-gather_nd": lambda s, r, ip: point_cloud(s, r),
    "recommender": lambda s, r, ip: recommender(s, r),
}


def select(patterns: list[str] | None) -> list[str]:
    if not patterns:
        return list(BUILDERS)
    out = []
    for p in patterns:
        hit = [n for n in BUILDERS if fnmatch.fnmatch(n, p) or n == p]
        if not hit:
            raise ValueError(f"no apps workload matches {p!r} (--list shows them)")
        out += [n for n in hit if n not in out]
    return out
