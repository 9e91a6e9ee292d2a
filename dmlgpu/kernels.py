"""The compiled kernel variants (dmlgpu/shaders/*.spv, built by CMakeLists.txt when the package is built:
``pip install .``, ``pip wheel .`` or scripts/setup.sh) and how to launch them."""
from __future__ import annotations

import functools
import importlib.resources

WORKGROUP_SIZE = 256          # local_size_x of every kernel (shaders/bindings.glsl)
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
