"""The compiled kernel variants: their SPIR-V (``load``, shipped in dmlgpu/shaders/) and what each asks of a
device, read from that SPIR-V (``requirements``). The variants themselves are kernels.VARIANTS."""
from __future__ import annotations

import functools
import importlib.resources
from typing import Any, NamedTuple

from .kernels import VARIANTS


@functools.lru_cache(maxsize=None)
def load(name: str) -> bytes:
    """The SPIR-V of a variant; FileNotFoundError names the build step when it is missing."""
    assert name in VARIANTS, f"{name} is no kernel variant (kernels.VARIANTS)"
    path = importlib.resources.files(__package__) / "shaders" / f"{name}.spv"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing: build dmlgpu with 'pip install .' or 'bash scripts/setup.sh' "
                                f"(they compile the shaders)") from None


# SPIR-V capabilities -> the Vulkan feature each needs (kp patch 0015's names); any other capability a
# kernel declares is core Vulkan 1.0 (Shader, ...) or one dmlgpu never enables (Float64: "shaderFloat64")
_CAPABILITY_FEATURES = {11: "shaderInt64", 22: "shaderInt16", 39: "shaderInt8", 12: "shaderBufferInt64Atomics",
                        4433: "storageBuffer16BitAccess", 4448: "storageBuffer8BitAccess",
                        5347: "bufferDeviceAddress", 10: "shaderFloat64"}
# SPIR-V's GroupNonUniform* capabilities -> the VkSubgroupFeatureFlagBits each needs in compute shaders
_CAPABILITY_SUBGROUP = {61: 0x1, 62: 0x2, 63: 0x4, 64: 0x8, 65: 0x10, 66: 0x20, 67: 0x40, 68: 0x80}


class Requirements(NamedTuple):
    """What a compiled variant asks of a device, read from its SPIR-V: ``invocations`` per workgroup (its
    LocalSize), ``shared_bytes`` (its Workgroup variables), ``storage_buffers`` (its bindings but the uniform
    buffers), ``push_constant_bytes`` (0: the parameters are a buffer), the optional ``features`` its
    capabilities need, ``bindings``: the buffers a launch binds, its highest binding + 1 (a binding that the
    code does not use is not declared: the launch fills it all the same), and ``uniform_buffers``: its
    bindings that are uniform buffers (a Block-decorated struct of the Uniform storage class: the parameters
    of the gathers and scatter_lines.comp, bindings.glsl's PARAMS_UNIFORM; kp patch 0020 binds them so), and
    ``subgroup_operations``: the VkSubgroupFeatureFlags its GroupNonUniform capabilities need."""

    invocations: int
    shared_bytes: int
    storage_buffers: int
    push_constant_bytes: int
    features: frozenset
    bindings: int
    uniform_buffers: frozenset = frozenset()
    subgroup_operations: int = 0


@functools.lru_cache(maxsize=None)
def requirements(name: str) -> Requirements:
    """The Requirements of a variant (its SPIR-V, load(), parsed: the instructions that declare them)."""
    words = memoryview(load(name)).cast("I")
    assert words[0] == 0x07230203, f"{name}.spv is not SPIR-V"
    ops: dict[int, list[Any]] = {}
    at = 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        ops.setdefault(opcode, []).append(words[at + 1:at + count])
        at += count
    types = {op[0]: (code, op[1:]) for code in (20, 21, 22, 23, 28, 30, 32) for op in ops.get(code, ())}
    constants = {op[1]: op[2] for op in ops.get(43, ())}        # OpConstant: type, id, value

    def size(type_id: int) -> int:
        code, rest = types[type_id]
        if code == 20:                                           # OpTypeBool
            return 4
        if code in (21, 22):                                     # OpTypeInt, OpTypeFloat: width
            return rest[0] // 8
        if code == 23:                                           # OpTypeVector: component, count
            return size(rest[0]) * rest[1]
        if code == 28:                                           # OpTypeArray: element, length constant
            return size(rest[0]) * constants[rest[1]]
        return sum(size(member) for member in rest)              # OpTypeStruct

    shared = 0
    for result_type, _, storage, *_ in ops.get(59, ()):          # OpVariable
        if storage == 4:                                         # Workgroup
            shared += size(types[result_type][1][1])             # the pointer's pointee
    pushed: int = sum(size(types[t][1][1]) for t, _, storage, *_ in ops.get(59, ()) if storage == 9)  # PushConstant
    local = [op for op in ops.get(16, ()) if op[1] == 17]        # OpExecutionMode LocalSize x y z
    bound = {op[0]: op[2] for op in ops.get(71, ()) if op[1] == 33}   # OpDecorate <id> Binding <n>
    blocks = {op[0] for op in ops.get(71, ()) if op[1] == 2}          # OpDecorate <id> Block
    uniform = frozenset(bound[v] for t, v, storage, *_ in ops.get(59, ())   # OpVariable of the Uniform class
                        if storage == 2 and v in bound and types[t][1][1] in blocks)
    features = frozenset(_CAPABILITY_FEATURES[op[0]] for op in ops.get(17, ()) if op[0] in _CAPABILITY_FEATURES)
    subgroup = 0
    for op in ops.get(17, ()):                                   # OpCapability
        subgroup |= _CAPABILITY_SUBGROUP.get(op[0], 0)
    return Requirements(local[0][2] * local[0][3] * local[0][4], shared, len(bound) - len(uniform), pushed,
                        features, max(bound.values(), default=-1) + 1, uniform, subgroup)
