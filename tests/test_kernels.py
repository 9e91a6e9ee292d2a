"""Facts written once: the variant table against the compiled shaders, and the parameter-word names of the
host (index_map.py, reduction.py) against those of the shaders that read them."""
import pathlib
import re
import subprocess
import sys

import pytest

import dmlgpu
from dmlgpu.plans import addressing, index_map, scatter_lines as lines_plan, plan, radix_sort, reduction
from dmlgpu.plans import reduction_buckets
from dmlgpu.kernels import table as kernels, spirv

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHADERS = ROOT / "shaders"
CONST = re.compile(r"^const uint (\w+) = ([^;]+);", re.M)


def glsl_constants(name: str, known: dict) -> dict:
    """{name: value} of the ``const uint NAME = EXPR;`` lines of a shader file (EXPR: integer literals and
    the names defined before it or in ``known``)."""
    env = dict(known)
    out = {}
    for const, expr in CONST.findall((SHADERS / name).read_text()):
        expr = re.sub(r"\b(0x[0-9A-Fa-f]+|\d+)u\b", r"\1", expr)
        if re.fullmatch(r"[\w\s+*()]+", expr) and all(w in env or w[0].isdigit() for w in re.findall(r"\w+", expr)):
            out[const] = env[const] = eval(expr, {}, env)
    return out


def test_index_map_words_match_the_glsl():
    glsl = glsl_constants("index_map.glsl", {})
    host = {n: getattr(index_map, n) for n in dir(index_map) if re.fullmatch(r"(P|FLAG)_[A-Z]+", n)}
    assert glsl == host
    assert index_map.PARAM_WORDS == glsl["P_END"]


@pytest.mark.parametrize("shader, module, names", [
    ("reduce_keys.comp", reduction, ["P_KEY_SHIFT"]),
    ("scatter_reduce.comp", reduction, ["P_SLICE", "P_FOLD_SHIFT", "P_ROWS", "P_CHUNK", "P_PIECE", "P_PASS", "P_MODE",
                                        "NO_KEY", "MODE_EXCLUDE_SELF", "MODE_MEAN"]),
    ("scatter_tree.comp", reduction, ["P_SLICE", "P_FOLD_SHIFT", "P_ROWS", "P_PASS", "P_MODE", "MODE_EXCLUDE_SELF",
                                      "MODE_MEAN"]),
    ("radix.glsl", radix_sort, ["R_COUNT", "R_SHIFT", "R_MASK", "R_TILES", "R_SCAN_DIGITS"]),
    ("scatter_bucket.comp", reduction_buckets, ["B_OWNER_BITS", "B_FOLD_SHIFT", "B_MODE", "B_LAST_KEY", "B_OWNERS",
                                                "B_HEAVY", "B_RANKED", "MODE_SOURCE"]),
    ("gather.comp", plan, ["P_WINDOW"]),
    ("scatter_claim.comp", plan, ["P_OWNER_SHIFT", "P_ROW_UNITS"]),
    ("scatter_write.comp", plan, ["P_OWNER_SHIFT", "P_ROW_UNITS", "P_CLAIM_WORDS"]),
    ("scatter_lines.comp", lines_plan, ["P_LINE_M", "P_LINE_DENSE", "P_LINE_INDEX", "P_LINE_N", "P_LINE_DATA",
                                  "P_LINE_GROUP", "P_LINE_MAGIC", "P_LINE_SHIFT"]),
])
def test_kernel_words_match_the_shaders(shader, module, names):
    known = glsl_constants("index_map.glsl", {})
    if shader != "radix.glsl":              # (its words from R_BASE: 0 but in reduce_keys.comp's FIRST_HIST)
        known.update(glsl_constants("radix.glsl", {"R_BASE": 0}))
    glsl = glsl_constants(shader, {"R_BASE": 0, **known}) if shader == "radix.glsl" else {
        n: v for n, v in glsl_constants(shader, known).items() if n not in known}
    assert {n: glsl[n] for n in names} == {n: getattr(module, n) for n in names}
    assert not {n for n in glsl if re.fullmatch(r"[PRB]_[A-Z_]+", n)} - set(names), "a word without a host name"


def glsl_defines(name: str) -> dict:
    """{name: value} of the ``#define NAME <integer>`` lines of a shader file."""
    return {n: int(v) for n, v in re.findall(r"^#define (\w+) (\d+)u?\b", (SHADERS / name).read_text(), re.M)}


def test_reduction_op_codes_match_the_glsl():
    """kernels.REDUCE_OPS' order is reduce_op.glsl's OP codes (the OP constant of every reduction variant)."""
    ops = {n: v for n, v in glsl_defines("reduce_op.glsl").items() if n.startswith("OP_")}
    assert ops == {f"OP_{op.upper()}": i for i, op in enumerate(kernels.REDUCE_OPS)}


def test_block_list_slots_match_the_glsl():
    """addressing.WIDE_SLOTS, the order of the tensors in a WIDE/ADDR variant's block lists, is addressing.glsl's."""
    text = (SHADERS / "addressing.glsl").read_text()
    slots = {n: int(v) for n, v in re.findall(r"SLOT_(\w+) = (\d+)u", text)}
    assert slots == {name: i for i, name in enumerate(addressing.WIDE_SLOTS)}


def test_access_units_are_written_once():
    """The access units of the index-map kernels: kernels.UNITS, which index_map.py takes (widest first)."""
    assert index_map.UNITS is kernels.UNITS
    assert re.search(r"UNIT == 16 \? 4u : UNIT == 8 \? 3u : UNIT == 4 \? 2u : UNIT == 2 \? 1u : 0u",
                     (SHADERS / "gather.comp").read_text())
    assert kernels.UNITS == (1, 2, 4, 8, 16)


def test_line_claims_fit_the_shared_memory_every_device_has():
    assert 4 * kernels.LINE_CLAIM_WORDS <= 16384    # Vulkan's minimum maxComputeSharedMemorySize


def test_variant_table_is_what_was_built():
    built = {p.stem for p in (pathlib.Path(dmlgpu.__file__).parent / "shaders").glob("*.spv")}
    assert built == set(kernels.MODULES)
    assert {kernels.module(stem) for stem in kernels.VARIANTS} == set(kernels.MODULES)
    for stem, (source, defines) in kernels.VARIANTS.items():
        module_source, compiled = kernels.MODULES[kernels.module(stem)]
        assert module_source == source
        assert {k: v for k, v in defines.items() if k not in kernels.SPEC_CONSTANTS} == {
            k: v for k, v in compiled.items() if not k.endswith("_ID")}
        assert kernels.specialization(stem) == tuple(defines.get(n, 0) for n in kernels.SPEC_CONSTANTS)
        geometry = kernels.SMALL_GEOMETRY if stem.endswith(kernels.SMALL_SUFFIX) else kernels.FULL_GEOMETRY
        assert (SHADERS / source).is_file() and defines["WORKGROUP_SIZE"] == geometry.workgroup_size
        assert defines.get("RADIX_BITS", geometry.radix_bits) == geometry.radix_bits
        if geometry is kernels.SMALL_GEOMETRY:      # the twin of a default variant, with the small sizes
            twin = kernels.VARIANTS[stem[:-len(kernels.SMALL_SUFFIX)]]
            assert twin == (source, dict(defines, WORKGROUP_SIZE=kernels.WORKGROUP_SIZE,
                                         **({"RADIX_BITS": kernels.RADIX_BITS} if "RADIX_BITS" in defines else {})))


def test_requirements_read_from_the_spirv():
    """spirv.requirements (read from the SPIR-V) agrees with the table: every variant's workgroup is its
    geometry's, only WIDE/ADDR variants and the NARROW gathers (NARROW_FEATURES) need optional features, the FEW scatter passes bind at most 4 storage
    buffers, and MOST_* are what the most demanding variants need (the runtime checks no run below them)."""
    for name in kernels.VARIANTS:
        need = spirv.requirements(name)
        small = name.endswith(kernels.SMALL_SUFFIX)
        assert need.invocations == (kernels.SMALL_WORKGROUP if small else kernels.WORKGROUP_SIZE), name
        wide = "_wide" in name or "_addr" in name
        narrow = kernels.NARROW_FEATURES[int(name.split("_u")[1].split("_")[0])] if "_narrow" in name else None
        if "scatter_minmax" in name or ("scatter_fixed" in name and "_few" not in name):
            # 64-bit slots, and atomics on them (reduction.py's steps 7 and 8; step 8's FEW variants: none)
            assert "shaderInt64" in need.features and need.features <= {"shaderInt64", "shaderBufferInt64Atomics"}, \
                name
        else:
            assert need.features == (kernels.WIDE_FEATURES if wide else {narrow} if narrow else frozenset()), name
        assert need.push_constant_bytes == 0
        if "_few" in name:
            assert need.storage_buffers <= 4, name
    assert max(spirv.requirements(n).storage_buffers for n in kernels.VARIANTS) == kernels.MOST_STORAGE_BUFFERS
    assert max(spirv.requirements(n).shared_bytes for n in kernels.VARIANTS) == kernels.MOST_SHARED_BYTES
    used = 0
    for n in kernels.VARIANTS:
        used |= spirv.requirements(n).subgroup_operations
    assert used == kernels.SUBGROUP_OPERATIONS
    assert spirv.requirements(kernels.variant("scatter_write", 4, 4)).storage_buffers == kernels.SCATTER_BUFFERS


def test_variant_table_script_prints_the_modules():
    """CMakeLists.txt runs kernels/table.py as a script, isolated (-I: no package import, standard library only): a line
    per module, whose defines give each specialization constant's id."""
    out = subprocess.run([sys.executable, "-I", kernels.__file__], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == len(kernels.MODULES)
    ids = [f"{name}_ID={i}" for i, name in enumerate(kernels.SPEC_CONSTANTS)]
    for line, (name, (source, defines)) in zip(lines, kernels.MODULES.items()):
        assert line.split() == [name, source] + [f"{k}={v}" for k, v in defines.items()]
        assert line.split()[-len(ids):] == ids


def test_no_preprocessor_line_tests_a_specialization_constant():
    """A specialization constant is no macro: ``#if OP == ...`` would read 0. Shaders test them in code."""
    names = re.compile(r"\b(" + "|".join(kernels.SPEC_CONSTANTS) + r")\b")
    for path in SHADERS.iterdir():
        for line in path.read_text().splitlines():
            if re.match(r"\s*#\s*(if|elif|ifdef|ifndef)\b", line):
                assert not names.search(line.split("//")[0]), f"{path.name}: {line}"


def test_shader_build_stays_small():
    """Specialization constants keep the shader build within issue 38's budget: at most 700 modules, 15 MB."""
    assert len(kernels.MODULES) <= 700
    built = (pathlib.Path(dmlgpu.__file__).parent / "shaders").glob("*.spv")
    assert sum(p.stat().st_size for p in built) <= 15_000_000


def test_variant_names_are_in_the_table():
    names = [kernels.variant(k, u, i) for k in kernels.KERNELS for u in kernels.UNITS for i in (4, 8)]
    names += [kernels.variant("gather", u, i, v, k) for u in kernels.UNITS for v in kernels.vec_sizes(u)
              for i in (4, 8) for k in (None, 1)]
    names += [kernels.lines_variant(u, i) for u in kernels.UNITS for i in (4, 8)]
    names += [v for u in kernels.UNITS for i in (4, 8) for v in kernels.row_claim_variants(u, i)]
    names += [kernels.keys_variant(i, v) for i in (4, 8) for v in (0, 1, 2, 4)]
    for t in kernels.REDUCE_TYPES:
        for op in kernels.REDUCE_OPS:
            name = kernels.reduce_variant(t[0], int(t[1:]), op)
            names += [name, kernels.fold_variant(name, True, False)]
            if int(t[1:]) < 64:
                names.append(kernels.fold_variant(name, True, True))
            if op in ("min", "max") or t[0] != "f":
                names += list(kernels.partials_variants(name, int(t[1:]) < 64))
            for i in (4, 8):
                atomic = kernels.atomic_variant(t[0], op, i) if t[1:] == "32" and t[0] != "f" else None
                names += [atomic] if atomic else []
    missing = sorted(set(names) - set(kernels.VARIANTS))
    assert not missing
