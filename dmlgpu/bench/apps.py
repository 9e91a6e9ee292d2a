"""``python -m dmlgpu bench apps``: the jobs users run, timed as they wait for them (issue 19).

Each workload is one call (or one loop of calls) that a user makes through dmlgpu's public API on device
Tensors, with the sizes of a real model, next to the fastest PyTorch call for the same job on the same GPU
(NumPy on the host where there is no CUDA). For each:

* **dmlgpu us**: eager wall time of the call a user makes until its result is ready: the call, then
  ``Device.synchronize()``; the median of ``--repeats`` calls, or fewer once ``--budget`` seconds have
  passed (but at least 5), after two warm-up calls. **first us**: the workload's first call, call + synchronize (cold: the
  signature's planning and allocations, and the pipelines no earlier workload of the process built, from
  the on-disk pipeline cache where it has them).
* **peer us**: the same for each of the peer's calls for the job (PyTorch: the call, then
  ``torch.cuda.synchronize()``; NumPy: the call), the fastest of them (**peer call**); **peer/dmlgpu** > 1
  means dmlgpu is faster. The geometric mean of the ratios is over the rows that ran and were checked.
* **dmlgpu GPU us**: Vulkan timestamps, first to last, of the call recorded once with
  ``Device.record(timestamps=True)`` and run (Kompute writes a timestamp after every command: their own
  cost is included, so this is an upper bound of the GPU time); **peer GPU us**: CUDA events around the
  call (median), PyTorch only.
* **check**: the result (the returned tensor, or the tensor written in place) of a fresh call on fresh inputs,
  compared bit for bit with the peer's. Any mismatch or error makes the run exit with status 1.

Workloads (``--scale`` multiplies the counts: ids, rows, vocabulary, nodes, edges, steps; row widths stay):
embedding lookups, a paged KV-cache gather by a 2-D block table, the logits of one label per row (float16 and bfloat16: moved as uint16 by dmlgpu, torch.bfloat16 on PyTorch), an
in-place KV-cache write and a decode loop (``scatter_nd(cache, idx, rows, out=cache)`` when the installed
dmlgpu has ``out=``, else the copying ``scatter_nd``, and the row's name ends in ``(copy)``), MoE dispatch
and combine, GNN gather and scatter-add (PyTorch's atomic calls; its deterministic mode in a column of its
own), top-k gather_elements, point clouds (gather_nd, batch_dims=1) and a recommender table past 4 GiB with
Zipf-skewed ids (skipped, with the reason, where the device lacks the memory), embedding bags (sum and mean of
bags of 20 Zipf ids: F.embedding_bag) and message passing (gather_scatter against index_select + index_add_:
no [edges, row] intermediate on dmlgpu's side); three rows repeat a job as users
spell it (``table[ids]``, ``cache[pos] = rows``, ``np.add.at``) beside its function call's row. Sums are exact: the GNN
messages are small integers, so every order of summation gives the same bits.

Processes: by default (``--process separate``) the peer runs first in a process of its own, and dmlgpu then
in this one, which holds no CUDA context of PyTorch's: each side as its users run it (a CUDA context keeps an
NVIDIA GPU's clocks up for every API of the process; dmlgpu holds its own where it can: runtime/clocks.py).
The peer's results reach dmlgpu's process as SHA-256 digests of their bytes. ``--process same`` runs both in
one process, the peer's calls after dmlgpu's for each workload.

Usage: python -m dmlgpu bench apps [--scale 1] [--workloads embedding*,gnn*] [--repeats 50] [--budget 3]
                                   [--peer auto|torch|numpy] [--process separate|same] [--out DIR]
                                   [--markdown] [--list]
       python -m dmlgpu bench apps --render DIR/apps.json [--markdown]
Writes apps.json and apps.md to --out (default dmlgpu-bench/). A full run at --scale 1 needs about 12 GiB of
device memory (the recommender's table, on both sides in turn) and as much host memory.
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import gc
import hashlib
import inspect
import json
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

import dmlgpu

from ..runtime import default_device_index
from .clock import host_samples
from .units import fmt_bytes, fmt_number

JSON_NAME, MARKDOWN_NAME = "apps.json", "apps.md"
WARMUP = 2                 # calls after the first (checked) call, before timing
MEMORY_HEADROOM = 0.8      # a case may use this fraction of the device memory (and of the peer's free memory)
GPU_EVENTS = 20            # CUDA-event samples of the peer's best call


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
                                                               "mode: the index Tensor is read back and checked)"),
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


# ---- the peers ----

class NumpySide:
    kind = "numpy"

    def info(self) -> dict:
        return {"name": "numpy", "version": np.__version__, "device": "host CPU"}

    def put(self, arr, as_dtype=None):
        return np.array(arr, copy=True)

    def fetch(self, x) -> np.ndarray:
        return np.asarray(x)

    def sync(self) -> None:
        pass

    def free_bytes(self):
        return None

    def release(self) -> None:
        pass

    def calls(self, app: App) -> dict:
        return {"numpy": app.numpy}

    def prepare(self, app: App, a: dict) -> dict:
        return a

    def gpu_us(self, fn, a) -> float | None:
        return None

    def deterministic(self, on: bool):
        raise RuntimeError("NumPy has no deterministic mode")


class TorchSide:
    """PyTorch on CUDA. Arrays go to the device as they are (uint16 as int16: PyTorch's uint16 is limited),
    then viewed as ``as_dtype`` (bfloat16) where the workload asks; results come back as bits."""
    kind = "torch"

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def info(self) -> dict:
        t = self.torch
        return {"name": "torch", "version": t.__version__, "cuda": t.version.cuda,
                "device": t.cuda.get_device_name(self.device), "cuda_index": self.device.index}

    def put(self, arr, as_dtype=None):
        a = np.ascontiguousarray(arr)
        if a.dtype == np.uint16:
            a = a.view(np.int16)
        x = self.torch.from_numpy(a).to(self.device)
        return x.view(getattr(self.torch, as_dtype)) if as_dtype else x

    def fetch(self, x) -> np.ndarray:
        """A host copy (of its own: later calls that write x in place must not change it), as bits."""
        t = self.torch
        if x.dtype in (t.bfloat16, t.int16):
            return np.array(x.view(t.int16).cpu().numpy().view(np.uint16))
        return np.array(x.cpu().numpy())

    def sync(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def free_bytes(self):
        return self.torch.cuda.mem_get_info(self.device)[0]

    def release(self) -> None:
        self.sync()
        self.torch.cuda.empty_cache()

    def calls(self, app: App) -> dict:
        return app.torch

    def prepare(self, app: App, a: dict) -> dict:
        return app.torch_prepare(a) if app.torch_prepare else a

    def gpu_us(self, fn, a) -> float | None:
        """Median microseconds between CUDA events recorded around ``fn(a)``."""
        cuda = self.torch.cuda
        times = []
        for _ in range(GPU_EVENTS):
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            start.record()
            fn(a)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)

    def deterministic(self, on: bool):
        self.torch.use_deterministic_algorithms(on)


class RemoteSide:
    """The peer run in a process of its own (``--process separate``): its figures and result digests, read
    from the JSON that ``--peer-side-only`` wrote, by workload."""

    def __init__(self, report: dict):
        self.report = report
        self.kind = report["info"]["name"]

    def info(self) -> dict:
        return {**self.report["info"], "process": "separate"}

    def free_bytes(self):
        return None

    def release(self) -> None:
        pass

    def peer(self, name: str, deterministic: bool = False) -> tuple[dict, dict]:
        """(the best call's figures, {call: Digest}) as run_peer gives them; RuntimeError where the peer's
        process failed or skipped the workload."""
        row = self.report["rows"][name]
        key = "peer_deterministic" if deterministic else "peer"
        if key + "_digests" not in row:
            raise RuntimeError(row.get(key, {}).get("error") or row.get("error") or row.get("skipped")
                               or f"the peer did not run {name}")
        digests = {call: Digest(tuple(d[0]), d[1], d[2]) for call, d in row[key + "_digests"].items()}
        return row[key], digests


def peer_report(side, names: list[str], s: "Settings") -> dict:
    """``--peer-side-only``: the peer's half of run() (the same workloads built from the same seed), with
    digests of its results in place of the results."""
    rng = np.random.default_rng(s.seed)
    inplace = has_out()
    rows: dict = {}
    for name in names:
        row = rows[name] = {}
        try:
            app = BUILDERS[name](s.scale, rng, inplace)
            need, free = int(app.device_bytes() * 1.25), side.free_bytes()
            if free is not None and need > MEMORY_HEADROOM * free:
                row["skipped"] = f"needs about {fmt_bytes(need)} of device memory; the peer has {fmt_bytes(free)} free"
                continue
            for det in (False, True) if app.deterministic and side.kind == "torch" else (False,):
                key = "peer_deterministic" if det else "peer"
                try:
                    peer, results = run_peer(side, app, s, deterministic=det)
                except RuntimeError as exc:
                    if not det:
                        raise
                    row[key] = {"error": str(exc)}
                    continue
                row[key] = peer
                row[key + "_digests"] = {call: list(Digest.of(r)) for call, r in results.items()}
                del results
        except MemoryError as exc:
            row["skipped"] = f"the host cannot hold the inputs ({exc})"
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            gc.collect()
            side.release()
    return {"info": side.info(), "rows": rows}


def make_side(choice: str, cuda_index: int | None, vulkan_name: str = ""):
    """The peer (peers.make_peer picks it: PyTorch where CUDA is available, on the CUDA device named like the
    Vulkan one by default) as the apps section uses it."""
    from .peers import make_peer
    peer = make_peer(choice, cuda_index, vulkan_name)
    return TorchSide(peer.torch, peer.device) if peer.kind == "torch" else NumpySide()


# ---- running ----

@dataclass
class Settings:
    scale: float = 1.0
    repeats: int = 50
    budget_s: float = 3.0
    seed: int = 0


def wall_samples(fn, sync, repeats: int, budget_s: float) -> list:
    """Seconds of ``fn(); sync()`` over up to ``repeats`` calls (at least 5, ``budget_s`` at most), after
    WARMUP calls."""
    for _ in range(WARMUP):
        fn()
        sync()

    def once():
        fn()
        sync()
    return host_samples(once, repeats, budget_s)


class Digest(NamedTuple):
    """A result as the peer's process reports it to dmlgpu's (``--process separate``): its shape, item size
    and the SHA-256 of its bytes."""
    shape: tuple
    itemsize: int
    sha256: str

    @classmethod
    def of(cls, a: np.ndarray) -> "Digest":
        a = np.ascontiguousarray(a)
        return cls(tuple(a.shape), a.dtype.itemsize, hashlib.sha256(a.view(np.uint8).reshape(-1)).hexdigest())


def compare_bits(got: np.ndarray, expected) -> str | None:
    """None if equal bit for bit (same shape and item size), else what differs; ``expected`` is an array or
    the Digest of one (the peer ran in a process of its own)."""
    if isinstance(expected, Digest):
        mine = Digest.of(got)
        return None if mine == expected else \
            f"the bits differ (SHA-256 across processes; dmlgpu {mine.shape}, peer {expected.shape})"
    got, expected = np.ascontiguousarray(got), np.ascontiguousarray(expected)
    if got.shape != expected.shape or got.dtype.itemsize != expected.dtype.itemsize:
        return f"got {got.shape} {got.dtype}, the peer {expected.shape} {expected.dtype}"
    u = np.dtype(f"u{got.dtype.itemsize}")
    diff = got.view(u) != expected.view(u)
    if not diff.any():
        return None
    where = tuple(int(i) for i in np.argwhere(diff)[0])
    return f"{int(diff.sum())} of {diff.size} elements differ; first at {where}: dmlgpu {got[where]!r}, " \
           f"peer {expected[where]!r}"


def run_dmlgpu(dev, app: App, s: Settings) -> tuple[dict, np.ndarray]:
    """The checked first call, the timed calls and the recorded GPU time, on fresh Tensors."""
    dev.synchronize()
    t = {k: dmlgpu.tensor(v, device=dev) for k, v in app.inputs.items()}
    if app.dml_prepare:
        t = app.dml_prepare(t)
    dev.synchronize()
    start = time.perf_counter()
    result = app.dml(t)
    dev.synchronize()
    first = time.perf_counter() - start
    got = result.numpy()
    del result
    samples = wall_samples(lambda: app.dml(t), dev.synchronize, s.repeats, s.budget_s)
    out = {"first_us": first * 1e6, "median_us": statistics.median(samples) * 1e6, "samples": len(samples)}
    try:
        if not app.recordable:
            raise RuntimeError("a Recording of the loop would hold every copy it makes")
        with dev.record(timestamps=True) as rec:
            app.dml(t)
        ts = rec.timestamps()
        out["gpu_us"] = (ts[-1] - ts[0]) / 1e3
        del rec
    except Exception as exc:       # e.g. a call that cannot be recorded
        out["gpu_us"] = None
        out["gpu_note"] = f"not recorded: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    del t
    gc.collect()
    dev.empty_cache()
    return out, got


def run_peer(side, app: App, s: Settings, deterministic: bool = False) -> tuple[dict, dict]:
    """(the best call's figures with every call's median, {call: result as NumPy} of fresh checked calls)."""
    results, calls, best = {}, {}, None
    if deterministic:
        side.deterministic(True)
    try:
        for name, fn in side.calls(app).items():
            try:
                a = {k: side.put(v, app.torch_dtypes.get(k) if side.kind == "torch" else None)
                     for k, v in app.inputs.items()}
                if side.kind == "torch":
                    a.update({k: side.put(v) for k, v in app.torch_aux.items()})
                a = side.prepare(app, a)
                side.sync()
                start = time.perf_counter()
                r = fn(a)
                side.sync()
                first = time.perf_counter() - start
                results[name] = side.fetch(r)
                del r
                samples = wall_samples(lambda: fn(a), side.sync, s.repeats, s.budget_s)
                med = statistics.median(samples) * 1e6
                calls[name] = med
                if best is None or med < best["median_us"]:
                    best = {"call": name, "median_us": med, "first_us": first * 1e6, "samples": len(samples),
                            "_fn": fn, "_args": a}
                else:
                    del a
            except Exception as exc:   # e.g. no deterministic implementation
                calls[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        if best is not None:
            best["gpu_us"] = side.gpu_us(best.pop("_fn"), best.pop("_args"))
    finally:
        if deterministic:
            side.deterministic(False)
        side.release()
    if best is None:
        raise RuntimeError("no peer call ran: " + "; ".join(f"{k}: {v}" for k, v in calls.items()))
    return {**best, "calls": calls}, results


def run_app(dev, side, name: str, s: Settings, rng, inplace: bool) -> dict:
    row = {"workload": name}
    try:
        app = BUILDERS[name](s.scale, rng, inplace)
    except MemoryError as exc:
        return {**row, "skipped": f"the host cannot hold the inputs ({exc})"}
    row.update(workload=app.name, family=app.family, sizes=app.sizes, steps=app.steps, note=app.note)
    need = int(app.device_bytes() * 1.25)
    capacity, free = dev.runtime.memory_capacity, side.free_bytes()
    if need > MEMORY_HEADROOM * capacity:
        return {**row, "skipped": f"needs about {fmt_bytes(need)} of device memory; the Vulkan device has "
                                  f"{fmt_bytes(capacity)}"}
    if free is not None and need > MEMORY_HEADROOM * free:
        return {**row, "skipped": f"needs about {fmt_bytes(need)} of device memory; the peer has "
                                  f"{fmt_bytes(free)} free"}
    try:
        if isinstance(side, RemoteSide) and "peer" not in side.report["rows"][name]:
            skipped = side.report["rows"][name].get("skipped")
            if skipped:
                return {**row, "skipped": skipped}
        dml, got = run_dmlgpu(dev, app, s)
        peer, results = side.peer(name) if isinstance(side, RemoteSide) else run_peer(side, app, s)
        mismatch = None
        for call, expected in results.items():
            bad = compare_bits(got, expected)
            if bad:
                mismatch = f"{call}: {bad}"
                break
        row.update(dmlgpu=dml, peer=peer, ratio=peer["median_us"] / dml["median_us"],
                   verified=mismatch is None, mismatch=mismatch)
        if app.deterministic and side.kind == "torch":
            try:
                det, det_results = side.peer(name, True) if isinstance(side, RemoteSide) else \
                    run_peer(side, app, s, deterministic=True)
                row["peer_deterministic"] = det
                for call, expected in det_results.items():
                    bad = compare_bits(got, expected)
                    if bad and row["mismatch"] is None:
                        row.update(verified=False, mismatch=f"{call} (deterministic): {bad}")
            except RuntimeError as exc:
                row["peer_deterministic"] = {"error": str(exc)}
    except Exception as exc:       # one failing workload must not end the run: it is reported
        row.update(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=-4))
    finally:
        gc.collect()
        side.release()
    return row


def run(dev, side, names: list[str], s: Settings, progress=None) -> dict:
    rng = np.random.default_rng(s.seed)
    inplace = has_out()
    rows = []
    for i, name in enumerate(names):
        if progress:
            print(f"[{i + 1}/{len(names)}] {name}", file=sys.stderr, flush=True)
        rows.append(run_app(dev, side, name, s, rng, inplace))
        r = rows[-1]
        if progress and (r.get("error") or r.get("mismatch")):
            print(f"  !! {r.get('error') or 'MISMATCH ' + r['mismatch']}", file=sys.stderr, flush=True)
        if progress and r.get("skipped"):
            print(f"  skipped: {r['skipped']}", file=sys.stderr, flush=True)
    ok = [r["ratio"] for r in rows if r.get("verified")]
    return {"meta": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "device": {"index": dev.info.index, "name": dev.info.name, "type": dev.info.type,
                                "memory": dev.runtime.memory_capacity},
                     "peer": side.info(), "dmlgpu": dmlgpu.__version__, "inplace_scatter": inplace,
                     "scale": s.scale, "repeats": s.repeats, "budget_s": s.budget_s, "numpy": np.__version__,
                     "python": platform.python_version(), "command": ""},
            "rows": rows,
            "geomean": math.exp(sum(map(math.log, ok)) / len(ok)) if ok else None}


# ---- the report ----

HEADER = ["workload", "sizes", "dmlgpu us (call+sync)", "first us", "peer us (call+sync)", "peer call",
          "peer/dmlgpu", "dmlgpu GPU us", "peer GPU us", "det. peer us", "check"]


def failures(results: dict) -> list[str]:
    out = []
    for r in results["rows"]:
        if r.get("error"):
            out.append(f"{r['workload']}: ERROR {r['error']}")
        elif r.get("verified") is False:
            out.append(f"{r['workload']}: MISMATCH {r['mismatch']}")
    return out


def _cells(r: dict) -> list[str]:
    blank = [""] * (len(HEADER) - 3)
    if r.get("skipped"):
        return [r["workload"], r.get("sizes", ""), *blank, f"skipped: {r['skipped']}"]
    if r.get("error"):
        return [r["workload"], r.get("sizes", ""), *blank, f"ERROR: {r['error']}"]
    d, p, det = r["dmlgpu"], r["peer"], r.get("peer_deterministic") or {}
    per = f" ({fmt_number(d['median_us'] / r['steps'])}/step)" if r["steps"] > 1 else ""
    return [r["workload"], r["sizes"], fmt_number(d["median_us"]) + per, fmt_number(d["first_us"]),
            fmt_number(p["median_us"]), p["call"], fmt_number(r["ratio"], 2), fmt_number(d.get("gpu_us")),
            fmt_number(p.get("gpu_us")), fmt_number(det["median_us"]) if "median_us" in det else "",
            "ok" if r["verified"] else "MISMATCH"]


def _table(rows, markdown: bool) -> str:
    if markdown:
        def line(cells):
            return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
        return "\n".join([line(HEADER), line(["---"] * len(HEADER))] + [line(r) for r in rows])
    widths = [max(len(str(r[i])) for r in [HEADER] + rows) for i in range(len(HEADER))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in [HEADER] + rows)


def render(results: dict, markdown: bool = False) -> str:
    m = results["meta"]
    p = m["peer"]
    peer = f"torch {p['version']} (CUDA {p['cuda']}, {p['device']})" if p["name"] == "torch" else \
        f"numpy {p['version']} (host)"
    head = (f"## apps: {m['device']['name']}, {m['date'][:10]}" if markdown else
            f"dmlgpu apps, {m['date']}: {m['device']['name']} ({m['device']['type']}); peer {peer}")
    lines = [head, "",
             f"command `{m['command']}`; scale {m['scale']}; dmlgpu {m['dmlgpu']}, scatter_nd(out=) "
             f"{'present: in-place rows' if m['inplace_scatter'] else 'absent: the (copy) rows copy the tensor'}; "
             f"peer {peer}, "
             + ("in a process of its own (dmlgpu's process holds no CUDA context of PyTorch's)"
                if p.get("process") == "separate" else "in dmlgpu's process")
             + (f"; dmlgpu's clock hold: {m['clock_hold']}." if m.get("clock_hold") else "."),
             "dmlgpu us: eager wall time of the call on device Tensors plus Device.synchronize(), median of up to "
             f"{m['repeats']} calls ({m['budget_s']} s at most) after {WARMUP} warm-up calls; first us: the first "
             "call (cold), call + synchronize; peer us: the fastest peer call (peer call) likewise "
             "(PyTorch: + torch.cuda.synchronize()); peer/dmlgpu > 1: dmlgpu faster; dmlgpu GPU us: Vulkan "
             "timestamps of the call recorded once (a timestamp after every command, their cost included); peer "
             "GPU us: CUDA events around the call; det. peer us: PyTorch under "
             "use_deterministic_algorithms(True); loops: the whole loop, per step in brackets; check: bit for "
             "bit against every peer call's result.", "",
             _table([_cells(r) for r in results["rows"]], markdown), ""]
    g = results["geomean"]
    lines.append(f"geometric mean of peer/dmlgpu over {sum(1 for r in results['rows'] if r.get('verified'))} "
                 f"checked rows: {fmt_number(g, 2) if g else '-'}")
    notes = [f"{r['workload']}: {r['note']}" for r in results["rows"] if r.get("note")]
    if notes:
        lines.append("notes: " + "; ".join(notes))
    bad = failures(results)
    lines += ["", (f"{len(bad)} FAILURES: " + "; ".join(bad)) if bad else "all results checked against the peer"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from .command import DEVICE_HELP, open_device, parser
    ap = parser("python -m dmlgpu bench apps", __doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the counts (default 1: real sizes; "
                                                             "0.01 on lavapipe)")
    ap.add_argument("--workloads", help="comma-separated names or shell patterns (see --list)")
    ap.add_argument("--repeats", type=int, default=50, help="timed calls per side (default 50)")
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of timed calls per call at most (default 3)")
    ap.add_argument("--peer", choices=("auto", "torch", "numpy"), default="auto",
                    help="auto (default): PyTorch when CUDA is available, else NumPy")
    ap.add_argument("--cuda-device", type=int, default=None,
                    help="PyTorch's CUDA device (default: the one named like the Vulkan device, else 0)")
    ap.add_argument("--device", type=int, default=None, help=DEVICE_HELP)
    ap.add_argument("--out", type=Path, default=Path("dmlgpu-bench"),
                    help="output folder for apps.json and apps.md (default: dmlgpu-bench)")
    ap.add_argument("--markdown", action="store_true", help="print the Markdown section")
    ap.add_argument("--list", action="store_true", help="list the workloads and exit")
    ap.add_argument("--render", type=Path, metavar="JSON", help="print a saved apps.json again; run nothing")
    ap.add_argument("--process", choices=("separate", "same"), default="separate",
                    help="separate (default): the peer runs in a process of its own, before dmlgpu's, which then "
                         "holds no CUDA context of PyTorch's (as each side's users run them); same: both in this one")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    ap.add_argument("--peer-side-only", type=Path, help=argparse.SUPPRESS)   # the separate peer's process
    ap.add_argument("--vulkan-name", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(BUILDERS))
        return 0
    if args.render:
        results = json.loads(args.render.read_text())
        print(render(results, markdown=args.markdown))
        return 1 if failures(results) else 0
    if args.scale <= 0 or args.repeats < 1:
        ap.error("--scale must be > 0 and --repeats >= 1")
    try:
        names = select(args.workloads.split(",") if args.workloads else None)
    except ValueError as exc:
        print(f"python -m dmlgpu bench apps: {exc}", file=sys.stderr)
        return 2
    settings = Settings(args.scale, args.repeats, args.budget)
    if args.peer_side_only:
        side = make_side(args.peer, args.cuda_device, args.vulkan_name)
        args.peer_side_only.write_text(json.dumps(peer_report(side, names, settings), default=str))
        return 0
    if args.device is not None and not 0 <= args.device < len(dmlgpu.devices()):
        open_device(ap, args.device)        # (the usage error that names the devices; no Device opens here)
    if args.process == "separate":
        index = args.device if args.device is not None else default_device_index()
        with tempfile.TemporaryDirectory(prefix="dmlgpu-peer-") as tmp:
            report = Path(tmp) / "peer.json"
            cmd = [sys.executable, "-m", "dmlgpu", "bench", "apps", "--peer-side-only", str(report),
                   "--vulkan-name", dmlgpu.devices()[index].name, "--scale", repr(args.scale), "--repeats",
                   str(args.repeats), "--budget", repr(args.budget), "--peer", args.peer,
                   "--workloads", ",".join(names)]
            if args.cuda_device is not None:
                cmd += ["--cuda-device", str(args.cuda_device)]
            if not args.quiet:
                print("the peer, in a process of its own ...", file=sys.stderr, flush=True)
            if subprocess.run(cmd).returncode != 0 or not report.exists():
                print("python -m dmlgpu bench apps: the peer's process failed", file=sys.stderr)
                return 1
            side = RemoteSide(json.loads(report.read_text()))
        dev = open_device(ap, args.device)
    else:
        dev = open_device(ap, args.device)
        side = make_side(args.peer, args.cuda_device, dev.info.name)
    results = run(dev, side, names, settings, progress=not args.quiet)
    results["meta"]["clock_hold"] = dev.clock_hold.wait()
    results["meta"]["command"] = " ".join(["python -m dmlgpu bench apps"] + list(sys.argv[1:] if argv is None
                                                                                 else argv))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / JSON_NAME).write_text(json.dumps(results, indent=1, default=str) + "\n")
    (args.out / MARKDOWN_NAME).write_text(render(results, markdown=True))
    print(render(results, markdown=args.markdown))
    bad = failures(results)
    if bad:
        print(f"!! {len(bad)} FAILURES (mismatches or errors): see above", file=sys.stderr)
    return 1 if bad else 0
