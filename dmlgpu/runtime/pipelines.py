"""Kernel pipelines: one VkPipeline per kernel variant and device (a module and its specialization constants:
kp patch 0013 shares them between algorithms, keyed by both), a Kompute algorithm per buffer set (the first of a
kernel made from its SPIR-V, later ones from a base of the kernel without it: kp patch 0024's
Manager.algorithm_like), and the device's VkPipelineCache kept on disk so that a new process does not compile
its kernels again.

How an algorithm binds its buffers is kp's choice, made once per pipeline (kp patch 0025) and read back here
(``Algorithm.pushes_descriptors()``): where the device enabled VK_KHR_push_descriptor (the feature
"pushDescriptor", which the ``minimum`` and ``no-push-descriptors`` profiles withhold) and the kernel binds at
most maxPushDescriptors buffers, its buffers' descriptors are recorded into the command buffer: a new buffer
set costs no Vulkan object or call, and the kernel's base binds only the device's placeholder buffer (never
forgotten). Otherwise each algorithm holds a descriptor set (from the device's shared pools, kp patch 0019),
and the kernel's base is its first algorithm, forgotten with the blocks it binds.

The cache file lives in ``DMLGPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/dmlgpu``, else ``~/.cache/dmlgpu``, one
file per device and driver (vendor, device id, driver version, pipelineCacheUUID in its name; the driver
also checks the data's header and ignores data that is not its own). It is written when a device that
created new pipelines is closed or the process exits; a cache directory that cannot be written is skipped.
"""
from __future__ import annotations

import os
import pathlib
import tempfile
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from ..kernels import table as kernels, spirv
from .encode import dispatch_op


def cache_dir() -> pathlib.Path:
    env = os.environ.get("DMLGPU_CACHE_DIR")
    if env:
        return pathlib.Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "dmlgpu"


def cache_file(info, profile: str = "") -> pathlib.Path:
    """The cache file of a device (and of a device profile other than "full": its features differ)."""
    name = (f"pipelines-{info.vendor_id:04x}-{info.device_id:04x}-{info.driver_version:08x}-"
            f"{info.pipeline_cache_uuid.hex()}{'-' + profile if profile else ''}.bin")
    return cache_dir() / name


# Bound algorithms a device keeps: a loop that binds new buffers every step (a decode loop's new token and
# position tensors, and results that alternate between two buffers) needs a few per step, and a 512-step loop
# must not miss (why 8192: bench/RESULTS.md, "Design notes moved from docstrings"). Each costs a few hundred
# bytes of host memory, and a descriptor set (kp patch 0019) where it binds without push descriptors.
ALGORITHMS = 8192


_NO_PUSH_CONSTANTS = np.empty(0, np.uint32)


def _algorithm(mgr, tensors: list, name: str, groups: int):
    """A kp algorithm of the variant ``name``: its module, specialized by its constants (32-bit unsigned, by
    constant_id: kp's NumPy overload takes their type from the array's dtype)."""
    constants = np.array(spirv.specialization(name), np.uint32)
    return mgr.algorithm(tensors, spirv.load(name), (groups, 1, 1), constants, _NO_PUSH_CONSTANTS)


class Bound(NamedTuple):
    """A kernel variant bound to buffers: the kp algorithm and the op that dispatches it (kp ops can be
    recorded any number of times, so it is made once)."""

    algorithm: object
    dispatch: object


class Pipelines:
    """The algorithms of one device: ``algorithm(kernel, groups, blocks)`` returns the Bound algorithm of
    a kernel variant bound to these blocks' kp buffers with this workgroup count, made once and kept (at
    most ``capacity``, least recently used dropped first); ``forget(block)`` drops those that bind a block.
    ``suffix``: the device's variant set (kernels.Geometry.suffix), appended to every kernel name;
    ``profile``: its device profile's name ("" for "full"), for the cache file; ``placeholder`` (set by the
    device once it has one): a kp buffer of the device that outlives every algorithm (the bases of
    push-descriptor kernels bind it; without one, they bind their first buffers as set-bound bases do)."""

    def __init__(self, mgr, info, suffix: str = "", profile: str = "", capacity: int = ALGORITHMS):
        self.placeholder: Any = None
        self._mgr = mgr
        self._info = info
        self._suffix = suffix
        self._profile = profile
        self._capacity = capacity
        self._algorithms: dict = {}
        self._by_block: dict = {}          # id(block) -> keys of the algorithms binding it
        # kernel -> (an algorithm sharing its pipeline, its binding count, ids of the blocks it binds): new
        # bindings of the kernel are made from it (Manager.algorithm_like) without the SPIR-V (_base)
        self._bases: dict = {}
        self._base_of: dict = {}           # id(block) -> kernels whose base binds it
        self._saved = 0
        self.generation = 0                # counts the drops of algorithms and blocks: ops made before
                                           # (launch.Prepared's) are valid while it is unchanged
        self._load()

    def __len__(self) -> int:
        return len(self._algorithms)

    @property
    def pipeline_count(self) -> int:
        """Distinct pipelines this device has built (one per kernel variant used)."""
        return self._mgr.pipeline_count()

    def algorithm(self, kernel: str, groups: int, blocks: Sequence[Any]) -> Bound:
        key = (kernel, groups, *map(id, blocks))
        bound = self._algorithms.pop(key, None)
        if bound is None:
            tensors = [b.tensor for b in blocks]
            base = self._bases.get(kernel)
            if base is not None and base[1] == len(tensors):     # a new binding of a built shader (kp patch 0024)
                algo = self._mgr.algorithm_like(base[0], tensors, (groups, 1, 1))
            else:
                algo = _algorithm(self._mgr, tensors, kernel + self._suffix, groups)
                self._base(kernel, algo, blocks)
            bound = Bound(algo, dispatch_op(algo))
            if len(self._algorithms) >= self._capacity:
                self._drop(next(iter(self._algorithms)))
            for b in blocks:
                self._by_block.setdefault(id(b), set()).add(key)
        self._algorithms[key] = bound             # most recently used last
        return bound

    def build(self, name: str, tensor: Any) -> None:
        """Builds the pipeline of the variant ``name`` (kept by the device and its pipeline cache) without
        binding buffers that matter: ``tensor`` (any kp buffer) fills every binding of an algorithm that is
        dropped at once."""
        count = spirv.requirements(name).bindings
        _algorithm(self._mgr, [tensor] * count, name, 1)

    def warmup(self, stems: Iterable[str] | None, supports: Callable[[str], bool], tensor: Any,
               step: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
        """Device.warmup: builds the variants ``stems`` (default: every one of the default geometry) in this
        device's geometry that ``supports(stem)``, ``tensor`` filling their bindings (build()), and saves the
        cache; returns the names built and those skipped."""
        built: list[str] = []
        skipped: list[str] = []
        for stem in [n for n in kernels.VARIANTS if not n.endswith(kernels.SMALL_SUFFIX)] if stems is None \
                else list(stems):
            name = stem + self._suffix
            if step is not None:
                step(name)
            if not supports(stem):
                skipped.append(name)
                continue
            self.build(name, tensor)
            built.append(name)
        self.save()
        return built, skipped

    def forget(self, block) -> None:
        """Drops the algorithms that bind ``block`` (before it is destroyed), and the bases that bind it; ops
        made before (which may bind it: a copy's too) are no longer valid (``generation``)."""
        self.generation += 1
        for key in list(self._by_block.pop(id(block), ())):
            self._drop(key)
        for kernel in self._base_of.pop(id(block), ()):
            base = self._bases.get(kernel)
            if base is not None and id(block) in base[2]:
                del self._bases[kernel]

    def clear(self) -> None:
        self.generation += 1
        self._algorithms.clear()
        self._by_block.clear()
        self._bases.clear()
        self._base_of.clear()

    @property
    def cache_path(self) -> pathlib.Path:
        """The file this device's pipeline cache is loaded from and saved to (cache_file)."""
        return cache_file(self._info, self._profile)

    def save(self) -> None:
        """Writes the pipeline cache to disk if pipelines were built since it was loaded or last saved."""
        count = self.pipeline_count
        if count <= self._saved:
            return
        path = self.cache_path
        try:
            data = self._mgr.pipeline_cache_data()
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as f:
                f.write(data)
            os.replace(f.name, path)
            self._saved = count
        except OSError:
            pass           # a read-only or missing cache directory: the next process compiles again

    # ---- internal ----
    def _base(self, kernel: str, algo, blocks: Sequence[Any]) -> None:
        """Keeps a base of ``kernel`` from its algorithm ``algo`` (made from the SPIR-V, binding ``blocks``):
        where kp binds it by push descriptors, a binding of the placeholder (no block to forget it with);
        otherwise ``algo`` itself, forgotten with its blocks."""
        count = len(blocks)
        if algo.pushes_descriptors() and self.placeholder is not None:
            self._bases[kernel] = (self._mgr.algorithm_like(algo, [self.placeholder] * count, (1, 1, 1)), count,
                                   frozenset())
            return
        self._bases[kernel] = (algo, count, {id(b) for b in blocks})
        for b in blocks:
            self._base_of.setdefault(id(b), set()).add(kernel)

    def _drop(self, key) -> None:
        self.generation += 1
        self._algorithms.pop(key, None)
        for block_id in key[2:]:
            keys = self._by_block.get(block_id)
            if keys is not None:
                keys.discard(key)

    def _load(self) -> None:
        try:
            data = self.cache_path.read_bytes()
        except OSError:
            return
        self._mgr.load_pipeline_cache(data)
