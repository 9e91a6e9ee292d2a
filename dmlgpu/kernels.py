"""The compiled kernel variants (dmlgpu/shaders/*.spv, built by CMakeLists.txt when the package is built:
``pip install .``, ``pip wheel .`` or scripts/setup.sh) and how to launch them."""
from __future__ import annotations

import functools
import importlib.resources

WORKGROUP_SIZE = 256          # local_size_x of every kernel (shaders/workgroup.glsl)
KERNELS = ("gather", "scatter_claim", "scatter_write")


def variant(kernel: str, unit: int, index_bytes: int) -> str:
    """File stem of a kernel specialised for an access unit (1-16 bytes) and an index width (4 or 8 bytes)."""
    assert kernel in KERNELS and unit in (1, 2, 4, 8, 16) and index_bytes in (4, 8)
    return f"{kernel}_u{unit}_i{index_bytes * 8}"


REDUCE_OPS = ("add", "mul", "min", "max")


def reduce_variant(kind: str, bits: int, op: str) -> str:
    """File stem of the scatter reduction kernel for an element type (kind "u", "i" or "f"; 8-64 bits) and an
    operation (shaders/scatter_reduce.comp). Integer add and mul share the unsigned variant."""
    assert kind in ("u", "i", "f") and op in REDUCE_OPS
    assert bits in ((16, 32, 64) if kind == "f" else (8, 16, 32, 64))
    if kind == "i" and op in ("add", "mul"):
        kind = "u"
    return f"scatter_reduce_{kind}{bits}_{op}"


def keys_variant(index_bytes: int, values: int = 0) -> str:
    """File stem of a scatter reduction's key kernel (shaders/reduce_keys.comp) for an index width (4 or 8),
    carrying the update values of ``values`` (1, 2 or 4) bytes, or the updates offsets (0)."""
    assert index_bytes in (4, 8) and values in (0, 1, 2, 4)
    return f"reduce_keys{f'_v{values}' if values else ''}_i{index_bytes * 8}"


# One digit of the radix sort (shaders/radix.glsl): radix_hist, radix_reduce (with more than one block of
# counts), radix_scan, radix_scatter.
RADIX_BITS = 8                # bits sorted per pass
RADIX = 1 << RADIX_BITS
RADIX_TILE = 16 * WORKGROUP_SIZE        # pairs per tile of the histogram and scatter passes (radix.glsl's TILE)
RADIX_SCAN_BLOCK = 16 * WORKGROUP_SIZE  # tile counts per block of the scan passes (radix.glsl's SCAN_BLOCK)
ATOMIC_REDUCTIONS = {("u", "add"), ("u", "min"), ("u", "max"), ("i", "min"), ("i", "max")}


def atomic_variant(kind: str, op: str, index_bytes: int) -> str | None:
    """File stem of the 32-bit atomic scatter reduction (shaders/scatter_atomic.comp) for integers of ``kind``
    ("u" or "i") and an operation, or None where there is none. Integer add does not depend on sign."""
    if kind == "i" and op == "add":
        kind = "u"
    if (kind, op) not in ATOMIC_REDUCTIONS:
        return None
    assert index_bytes in (4, 8)
    return f"scatter_atomic_{kind}32_{op}_i{index_bytes * 8}"


def fold_variant(name: str, blocks: bool, values: bool) -> str:
    """The variant of a scatter reduction kernel (reduce_variant) that folds long runs by blocks where it
    has one (float32 add and mul: scatter_reduce.comp's FOLD_BLOCKS) if ``blocks``, and reads the update
    values that the sort carried (element types of at most 4 bytes: VALUES) if ``values``."""
    if blocks and name in ("scatter_reduce_f32_add", "scatter_reduce_f32_mul"):
        name += "_blocks"
    if values:
        assert not name.endswith(("64_add", "64_mul", "64_min", "64_max"))
        name += "_values"
    return name


def partials_variants(name: str, values: bool) -> tuple[str, str]:
    """The variants of an associative scatter reduction kernel (reduce_variant: min/max, integer add/mul) that
    fold long runs by levels of partials (scatter_reduce.comp's PARTIALS): (level 0, over the sorted rows,
    reading the update values that the sort carried if ``values``; the levels above it)."""
    assert name.endswith(("_min", "_max")) or not name.startswith("scatter_reduce_f")
    return name + ("_partials_values" if values else "_partials"), name + "_up"


@functools.lru_cache(maxsize=None)
def spirv(name: str) -> bytes:
    """The SPIR-V of a variant; FileNotFoundError names the build step when it is missing."""
    path = importlib.resources.files(__package__) / "shaders" / f"{name}.spv"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing: build dmlgpu with 'pip install .' or 'bash scripts/setup.sh' "
                                f"(they compile the shaders)") from None


def workgroups(count: int, max_groups: int) -> int:
    """Workgroups for ``count`` loop iterations; the kernels' grid-stride loop covers any remainder."""
    return max(1, min(-(-count // WORKGROUP_SIZE), max_groups))
