"""The compiled kernel variants: their SPIR-V (``load``: the module, shipped in dmlgpu/shaders/, and
``specialization``: the values of its specialization constants) and what each asks of a device, read from that
SPIR-V as specialized (``requirements``). The variants themselves are kernels.VARIANTS, their modules
kernels.MODULES.

``DMLGPU_SHADER_DIR``, where set, is a directory of SPIR-V read in place of the package's dmlgpu/shaders/ (an A/B of
two shader builds in one session: bench/probes/spec_ab.py): ``<module>.spv`` files, or a build from before the
specialization constants, one ``<variant>.spv`` per variant, which then is the variant's module (it declares no
specialization constant: the values given are ignored)."""
from __future__ import annotations

import functools
import importlib.resources
import os
import pathlib
from typing import Any, NamedTuple

from . import table as kernels
from .table import VARIANTS


def load(name: str) -> bytes:
    """The SPIR-V module of a variant (shared by the variants that differ only in specialization constants);
    FileNotFoundError names the build step when it is missing."""
    assert name in VARIANTS, f"{name} is no kernel variant (kernels.VARIANTS)"
    shader_dir = os.environ.get("DMLGPU_SHADER_DIR")
    if shader_dir and (pathlib.Path(shader_dir) / f"{name}.spv").is_file():
        return _module(name)            # a variant's own module (see above)
    return _module(kernels.module(name))


def specialization(name: str) -> tuple[int, ...]:
    """The values of a variant's specialization constants, by constant_id (kernels.specialization)."""
    return kernels.specialization(name)


@functools.lru_cache(maxsize=None)
def _module(module: str) -> bytes:
    shader_dir = os.environ.get("DMLGPU_SHADER_DIR")
    path: Any = (pathlib.Path(shader_dir) if shader_dir else importlib.resources.files("dmlgpu") / "shaders")
    path = path / f"{module}.spv"
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
    """What a compiled variant asks of a device, read from its SPIR-V as its specialization constants make it:
    ``invocations`` per workgroup (its WorkgroupSize or LocalSize), ``shared_bytes`` (its Workgroup variables), ``storage_buffers`` (its bindings but the uniform
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


# OpSpecConstantOp's integer and logical operations (opcode -> function of 32-bit operands; S*: signed)
def _signed(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


_SPEC_OPS = {
    128: lambda a, b: a + b, 130: lambda a, b: a - b, 132: lambda a, b: a * b,          # IAdd ISub IMul
    134: lambda a, b: a // b, 137: lambda a, b: a % b,                                  # UDiv UMod
    135: lambda a, b: int(_signed(a) / _signed(b)),                                     # SDiv
    194: lambda a, b: a >> b, 196: lambda a, b: a << b,                                 # ShiftRight/LeftLogical
    195: lambda a, b: _signed(a) >> b,                                                  # ShiftRightArithmetic
    197: lambda a, b: a | b, 198: lambda a, b: a ^ b, 199: lambda a, b: a & b,          # BitwiseOr Xor And
    126: lambda a: -a, 200: lambda a: ~a, 168: lambda a: int(not a),                    # SNegate Not LogicalNot
    113: lambda a: a, 114: lambda a: a,                                                 # UConvert SConvert
    166: lambda a, b: int(bool(a or b)), 167: lambda a, b: int(bool(a and b)),          # LogicalOr And
    164: lambda a, b: int(a == b), 165: lambda a, b: int(a != b),                       # LogicalEqual NotEqual
    170: lambda a, b: int(a == b), 171: lambda a, b: int(a != b),                       # IEqual INotEqual
    172: lambda a, b: int(a > b), 174: lambda a, b: int(a >= b),                        # UGreaterThan(Equal)
    176: lambda a, b: int(a < b), 178: lambda a, b: int(a <= b),                        # ULessThan(Equal)
    173: lambda a, b: int(_signed(a) > _signed(b)), 175: lambda a, b: int(_signed(a) >= _signed(b)),
    177: lambda a, b: int(_signed(a) < _signed(b)), 179: lambda a, b: int(_signed(a) <= _signed(b)),
    169: lambda c, a, b: a if c else b,                                                 # Select
}


def _constants(ops: dict[int, list[Any]], values: tuple[int, ...]) -> dict[int, Any]:
    """id -> value of every constant of the module, its specialization constants given ``values`` by SpecId
    (their defaults where ``values`` has none): integers and booleans (0/1), composites as tuples."""
    spec_ids = {op[0]: op[2] for op in ops.get(71, ()) if op[1] == 1}       # OpDecorate <id> SpecId <n>

    def given(ident: int, default: int) -> int:
        n = spec_ids.get(ident)
        return values[n] if n is not None and n < len(values) else default

    out: dict[int, Any] = {}
    for op in ops.get(43, ()):                                  # OpConstant: type, id, value
        out[op[1]] = op[2]
    for code, value in ((41, 1), (42, 0)):                      # OpConstantTrue, OpConstantFalse
        for op in ops.get(code, ()):
            out[op[1]] = value
    for code, value in ((48, 1), (49, 0)):                      # OpSpecConstantTrue, OpSpecConstantFalse
        for op in ops.get(code, ()):
            out[op[1]] = int(bool(given(op[1], value)))
    for op in ops.get(50, ()):                                  # OpSpecConstant: type, id, value
        out[op[1]] = given(op[1], op[2])
    pending = [(op[1], op[2:], None) for code in (44, 51) for op in ops.get(code, ())]   # (Spec)ConstantComposite
    pending += [(op[1], op[3:], op[2]) for op in ops.get(52, ())]                       # OpSpecConstantOp
    while pending:
        waiting = []
        for ident, operands, opcode in pending:
            if opcode == 81:                                    # CompositeExtract: composite, indices (literals)
                if operands[0] not in out:
                    waiting.append((ident, operands, opcode))
                    continue
                value = out[operands[0]]
                for index in operands[1:]:
                    value = value[index]
                out[ident] = value
            elif any(o not in out for o in operands):
                waiting.append((ident, operands, opcode))
            elif opcode is None:
                out[ident] = tuple(out[o] for o in operands)
            elif opcode in _SPEC_OPS:
                out[ident] = _SPEC_OPS[opcode](*(out[o] for o in operands)) & 0xFFFFFFFF
        if len(waiting) == len(pending):
            break                                               # (an operation not above: its users stay unknown)
        pending = waiting
    return out


@functools.lru_cache(maxsize=None)
def requirements(name: str) -> Requirements:
    """The Requirements of a variant (its SPIR-V, load(), parsed, specialized by specialization(): the
    instructions that declare them)."""
    words = memoryview(load(name)).cast("I")
    assert words[0] == 0x07230203, f"{kernels.module(name)}.spv is not SPIR-V"
    ops: dict[int, list[Any]] = {}
    at = 5
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        ops.setdefault(opcode, []).append(words[at + 1:at + count])
        at += count
    types = {op[0]: (code, op[1:]) for code in (20, 21, 22, 23, 28, 30, 32) for op in ops.get(code, ())}
    constants = _constants(ops, specialization(name))

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
    # the workgroup: a constant decorated BuiltIn WorkgroupSize where there is one, else LocalSize(Id)
    local = [constants[op[0]] for op in ops.get(71, ()) if len(op) > 2 and op[1] == 11 and op[2] == 25]
    local += [op[2:5] for op in ops.get(16, ()) if op[1] == 17]              # OpExecutionMode LocalSize x y z
    local += [[constants[i] for i in op[2:5]] for op in ops.get(331, ()) if op[1] == 38]     # LocalSizeId
    bound = {op[0]: op[2] for op in ops.get(71, ()) if op[1] == 33}   # OpDecorate <id> Binding <n>
    blocks = {op[0] for op in ops.get(71, ()) if op[1] == 2}          # OpDecorate <id> Block
    uniform = frozenset(bound[v] for t, v, storage, *_ in ops.get(59, ())   # OpVariable of the Uniform class
                        if storage == 2 and v in bound and types[t][1][1] in blocks)
    features = frozenset(_CAPABILITY_FEATURES[op[0]] for op in ops.get(17, ()) if op[0] in _CAPABILITY_FEATURES)
    subgroup = 0
    for op in ops.get(17, ()):                                   # OpCapability
        subgroup |= _CAPABILITY_SUBGROUP.get(op[0], 0)
    # storage buffers: distinct bindings (several variables may view one binding: a descriptor each binding)
    return Requirements(local[0][0] * local[0][1] * local[0][2], shared, len(set(bound.values()) - uniform), pushed,
                        features, max(bound.values(), default=-1) + 1, uniform, subgroup)
