"""The kernel variants: one table (``VARIANTS``) that the build and the package both read, the names the
plans ask for, and how to launch them.

Each variant (a stem of ``VARIANTS``: a shader of shaders/ and its values ``NAME=VALUE``) is a SPIR-V module and the
values of its specialization constants. The values named in ``SPEC_CONSTANTS`` (the workgroup size, the radix
sort's digit size, a reduction's operation: nothing that changes a shader's types, bindings or capabilities) are
specialization constants, given when a pipeline is made (``specialization()``); the others are defines, compiled
in. Variants that differ only in specialization constants share one module (``MODULES``; ``module()``): the
128-invocation twins (SMALL_SUFFIX) of every variant, the four operations of a reduction kernel.
CMakeLists.txt runs this file as a script (``python -I dmlgpu/kernels/table.py``: standard library only, no package
import) and compiles every line it prints, ``module source NAME=VALUE ...``, into dmlgpu/shaders/<module>.spv; the
defines include ``<NAME>_ID=<constant_id>`` for each specialization constant, so that its id is written here once.
A new variant is one row of ``_table()``. Facts the shaders share with the host (the workgroup size, the radix
sort's digit and tile sizes) are given to every variant from here, so they are written once: they and the
functions that name a plan's variant live in names.py, whose names this module re-exports (plans read them here).
"""
from __future__ import annotations

import pathlib
import sys

try:                   # the facts and names the table is made of (names.py), re-exported here for the plans
    from .names import *  # noqa: F401,F403
    from .names import _has_blocks, _has_partials, _has_values
except ImportError:    # run as a script by CMakeLists.txt (python -I: no package): names.py loaded by its path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from names import *  # type: ignore[import-not-found]  # noqa: F401,F403
    from names import _has_blocks, _has_partials, _has_values  # type: ignore[no-redef]


class Geometry:
    """The workgroup and radix sort sizes of a set of variants (the values every variant is given): the
    default one (WORKGROUP_SIZE, RADIX_BITS) or the small one (SMALL_WORKGROUP, SMALL_RADIX_BITS, variants
    named with SMALL_SUFFIX) for devices that allow fewer than WORKGROUP_SIZE invocations per workgroup."""

    def __init__(self, workgroup_size: int, radix_bits: int, suffix: str):
        assert workgroup_size == 1 << radix_bits      # the radix kernels give each invocation one digit
        self.workgroup_size, self.radix_bits, self.suffix = workgroup_size, radix_bits, suffix
        self.radix = 1 << radix_bits
        self.radix_tile = RADIX_ITEMS * workgroup_size             # radix.glsl's TILE
        self.radix_scan_step = RADIX_SCAN_ITEMS * workgroup_size   # radix.glsl's SCAN_BLOCK: counts per scan step

    def workgroups(self, count: int, max_groups: int) -> int:
        """Workgroups for ``count`` loop iterations; the kernels' grid-stride loop covers any remainder."""
        return max(1, min(-(-count // self.workgroup_size), max_groups))

    def __repr__(self) -> str:
        return f"Geometry({self.workgroup_size}, {self.radix_bits}, {self.suffix!r})"


FULL_GEOMETRY = Geometry(WORKGROUP_SIZE, RADIX_BITS, "")
SMALL_GEOMETRY = Geometry(SMALL_WORKGROUP, SMALL_RADIX_BITS, SMALL_SUFFIX)


def geometry(max_invocations: int) -> Geometry:
    """The variant set for a device allowing ``max_invocations`` per workgroup (Vulkan: at least 128)."""
    return FULL_GEOMETRY if max_invocations >= WORKGROUP_SIZE else SMALL_GEOMETRY


def _table() -> dict[str, tuple[str, dict]]:
    """stem -> (shader source in shaders/, its values: defines and specialization constants), for every variant:
    each in the default geometry and its twin in the small one (stem + SMALL_SUFFIX)."""
    table = _geometry_table()
    for stem, (source, defines) in list(table.items()):
        small = dict(defines, WORKGROUP_SIZE=SMALL_WORKGROUP)
        if "RADIX_BITS" in small:
            small["RADIX_BITS"] = SMALL_RADIX_BITS
        table[stem + SMALL_SUFFIX] = (source, small)
    return table


def _geometry_table() -> dict[str, tuple[str, dict]]:
    """stem -> (shader source in shaders/, its values) of the default geometry's variants."""
    table: dict[str, tuple[str, dict]] = {}

    def add(stem: str, source: str, **defines) -> None:
        assert stem not in table, stem
        table[stem] = (source, {"WORKGROUP_SIZE": WORKGROUP_SIZE, **defines})

    radix = dict(RADIX_BITS=RADIX_BITS, RADIX_ITEMS=RADIX_ITEMS, RADIX_SCAN_ITEMS=RADIX_SCAN_ITEMS)   # radix.glsl's
    ranks = dict(MIN_SUBGROUP=MIN_SUBGROUP, TARGET_ENV="vulkan1.1")     # tile_rank.glsl's (subgroup operations)
    for kernel in KERNELS:
        for unit in UNITS:
            for index_bytes in (4, 8):
                add(variant(kernel, unit, index_bytes), f"{kernel}.comp", UNIT=unit, IDX64=index_bytes // 8,
                    **({"PARAMS_UNIFORM": 1} if kernel == "gather" else {}))
                add(variant(kernel, unit, index_bytes, wide=True), f"{kernel}.comp", UNIT=unit,
                    IDX64=index_bytes // 8, WIDE=1)
                if kernel != "gather":
                    add(variant(kernel, unit, index_bytes, few=True), f"{kernel}.comp", UNIT=unit,
                        IDX64=index_bytes // 8, FEW=1)
    for index_bytes in (4, 8):
        add(check_variant(index_bytes), "index_check.comp", IDX64=index_bytes // 8)
        claim, _, clear = row_claim_variants(4, index_bytes)
        add(claim, "scatter_claim.comp", UNIT=4, IDX64=index_bytes // 8, ROWS=1)
        add(clear, "scatter_claim.comp", UNIT=4, IDX64=index_bytes // 8, ROWS=1, CLEAR=1)
        for unit in UNITS:
            add(row_claim_variants(unit, index_bytes)[1], "scatter_write.comp", UNIT=unit, IDX64=index_bytes // 8,
                ROWS=1)
            add(small_scatter_variant(unit, index_bytes), "scatter_write.comp", UNIT=unit, IDX64=index_bytes // 8,
                ROWS=1, SMALL=1)
            for clears in (0, 1)[:2 * (index_bytes == 4)]:
                add(copy_rows_variant(unit, bool(clears)), "scatter_write.comp", UNIT=unit, IDX64=0, ROWS=1, COPY=1,
                    CLEARS=clears)
            add(unique_variant(unit, index_bytes), "scatter_write.comp", UNIT=unit, IDX64=index_bytes // 8, UNIQUE=1)
    for unit in UNITS:
        for index_bytes in (4, 8):
            for copy in (0, 1)[:1 + (unit == 4)]:
                add(lines_variant(unit, index_bytes, bool(copy)), "scatter_lines.comp", UNIT=unit, COPY=copy,
                    IDX64=index_bytes // 8, CLAIM_WORDS=LINE_CLAIM_WORDS, LINE_ITEMS=LINE_ITEMS, PARAMS_UNIFORM=1)
        for vec in vec_sizes(unit):
            for index_bytes in (4, 8):
                for k in (None, 1):
                    add(variant("gather", unit, index_bytes, vec, k), "gather.comp", UNIT=unit,
                        IDX64=index_bytes // 8, VEC=vec, PARAMS_UNIFORM=1, **({"TUPLE_K": k} if k else {}))
        if unit == 16:
            for index_bytes in (4, 8):
                add(variant("gather", unit, index_bytes, run=True), "gather.comp", UNIT=unit,
                    IDX64=index_bytes // 8, PARAMS_UNIFORM=1, RUN_UNROLL=RUN_UNROLL, RUN_LANES=RUN_LANES)
                for mode in ("wide", "addr"):
                    add(variant("gather", unit, index_bytes, run=True, **{mode: True}), "gather.comp", UNIT=unit,
                        IDX64=index_bytes // 8, PARAMS_UNIFORM=1, UNIFORM_WORDS=RUN_UNIFORM_WORDS,
                        RUN_UNROLL=RUN_UNROLL, RUN_LANES=RUN_LANES, **{mode.upper(): 1})
        if unit >= 4:
            for index_bytes in (4, 8):
                add(variant("gather", unit, index_bytes, window=True), "gather.comp", UNIT=unit,
                    IDX64=index_bytes // 8, PARAMS_UNIFORM=1, WINDOW=1, WINDOW_LANES=WINDOW_LANES)
        if unit in NARROW_FEATURES:
            for index_bytes in (4, 8):
                add(variant("gather", unit, index_bytes, narrow=True), "gather.comp", UNIT=unit,
                    IDX64=index_bytes // 8, NARROW=1, PARAMS_UNIFORM=1, TARGET_ENV="vulkan1.1")
    # gathers and copies on tensors held in several blocks: ADDR (maps under 2^32 units) and WIDE, every path
    for unit in UNITS:
        for index_bytes in (4, 8):
            add(variant("gather", unit, index_bytes, addr=True), "gather.comp", UNIT=unit, IDX64=index_bytes // 8,
                ADDR=1)
            for vec in vec_sizes(unit):
                for k in (None, 1):
                    for mode in ("wide", "addr"):
                        add(variant("gather", unit, index_bytes, vec, k, **{mode: True}), "gather.comp", UNIT=unit,
                            IDX64=index_bytes // 8, VEC=vec, **({"TUPLE_K": k} if k else {}), **{mode.upper(): 1})
    # scatter reductions (reduction.py), by element type (ELEM_KIND 0 unsigned, 1 signed, 2 float) and OP
    types = [(t[0], int(t[1:]), "uif".index(t[0])) for t in REDUCE_TYPES]
    types += [(kind, bits, code) for kind, (code, bits) in NARROW_FLOATS.items()]
    for kind, bits, elem_kind in types:
        for op_code, op in enumerate(REDUCE_OPS):
            name = reduce_variant(kind, bits, op)
            if name in table:     # signed add and mul are the unsigned ones
                continue
            defines = dict(ELEM_KIND=elem_kind, ELEM_BYTES=bits // 8, OP=op_code)
            add(name, "scatter_reduce.comp", **defines)
            add(name + "_cpu", "scatter_fold_cpu.comp", **defines, CPU_LANES=CPU_LANES)   # CPU devices: no sort
            if _has_values(name):
                add(fold_variant(name, False, True), "scatter_reduce.comp", **defines, VALUES=1)
                add(name + "_cpu_values", "scatter_fold_cpu.comp", **defines, CPU_LANES=CPU_LANES, VALUES=1)
            for of_mean in ((False, True) if op == "add" else (False,)) if has_tree(name) and _has_values(name) else ():
                add(fold_variant(mean_variant(name) if of_mean else name, True, True, True), "scatter_bucket.comp",
                    **defines, **({"MEAN": 1} if of_mean else {}), **radix, **ranks, MAX_E=BUCKET_MAX_E)
            if _has_blocks(name):
                add(fold_variant(name, True, False), "scatter_reduce.comp", **defines, FOLD_BLOCKS=1)
                add(fold_variant(name, True, True), "scatter_reduce.comp", **defines, FOLD_BLOCKS=1, VALUES=1)
            if has_tree(name):
                for carried in (False, True) if _has_values(name) else (False,):
                    for few in (False, True):
                        add(tree_variants(name, carried, few)[0], "scatter_tree.comp", **defines, TREE=1,
                            **({"VALUES": 1} if carried else {}), **({"FEW": 1} if few else {}))
                _, pass_, final = tree_variants(name, False)
                add(pass_, "scatter_tree.comp", **defines, TREE=2)
                add(final, "scatter_tree.comp", **defines, TREE=3)
            for index_bytes in (4, 8):
                stages = minmax_variants(name, index_bytes)
                if stages is not None:                # min and max by 64-bit atomics (step 7)
                    for stage, stage_stem in enumerate(stages, 1):
                        if stage_stem not in table:    # (stage 1 reads no index)
                            add(stage_stem, "scatter_minmax.comp", **defines, STAGE=stage, IDX64=index_bytes // 8,
                                **({"TARGET_ENV": "vulkan1.1"} if stage == 2 else {}))
            for index_bytes in (4, 8):              # order="fixed-point" (reduction_fixed.py)
                for few in (False, True):
                    for stage, fixed_stem in enumerate(fixed_variants(name, index_bytes, few) or ()):
                        if fixed_stem is not None and fixed_stem not in table:    # (stage 4 reads no index)
                            add(fixed_stem, "scatter_fixed.comp", **defines, STAGE=stage,
                                IDX64=index_bytes // 8 if stage < 4 else 0, FEW=int(few),
                                **({"TARGET_ENV": "vulkan1.1"} if stage in (1, 2) and not few else {}))
            if op == "add" and elem_kind >= 2:       # float add: its "mean" twin (the fold only)
                mean = mean_variant(name)
                add(mean, "scatter_reduce.comp", **defines, MEAN=1)
                add(mean + "_cpu_finish", "scatter_fold_cpu.comp", **defines, FINISH=1)
                if _has_values(mean):
                    add(fold_variant(mean, False, True), "scatter_reduce.comp", **defines, MEAN=1, VALUES=1)
                if _has_blocks(mean):
                    add(fold_variant(mean, True, False), "scatter_reduce.comp", **defines, MEAN=1, FOLD_BLOCKS=1)
                    add(fold_variant(mean, True, True), "scatter_reduce.comp", **defines, MEAN=1, FOLD_BLOCKS=1,
                        VALUES=1)
            if _has_partials(name):
                level0, up = partials_variants(name, False)
                add(level0, "scatter_reduce.comp", **defines, PARTIALS=1)
                add(up, "scatter_reduce.comp", **defines, PARTIALS=2)
                if _has_values(name):
                    add(partials_variants(name, True)[0], "scatter_reduce.comp", **defines, PARTIALS=1, VALUES=1)
    # segment and bag reductions in one pass (dmlgpu/plans/segment.py): one module per element type
    for kind, bits, elem_kind in types:
        segment = segment_variant(reduce_variant(kind, bits, "max"))[0]
        add(segment, "segment.comp", ELEM_KIND=elem_kind, ELEM_BYTES=bits // 8)
        if segment in SEGMENT_SPLIT:          # embedding tables' types: ids and weights bound as they are
            add(segment + "_split", "segment.comp", ELEM_KIND=elem_kind, ELEM_BYTES=bits // 8, SPLIT=1)
        if elem_kind >= 2:                    # float types: orders "tree" and "fixed-point" (SEGMENT_ORDERS)
            add(segment + SEGMENT_ORDERS, "segment.comp", ELEM_KIND=elem_kind, ELEM_BYTES=bits // 8, ORDERS=1)
    # a reduction's grouping: each update row's sort key, then the passes of the radix sort
    for index_bytes in (4, 8):
        for values in (0, 1, 2, 4):
            for hist in (False, True):
                add(keys_variant(index_bytes, values, hist), "reduce_keys.comp", IDX64=index_bytes // 8,
                    **({"VALUES": values} if values else {}), **(dict(FIRST_HIST=1, **radix) if hist else {}))
    for step in ("hist", "scan", "scatter", "scatter_local"):
        add(f"radix_{step}", f"radix_{step.split('_')[0]}.comp", **radix, **({"LOCAL": 1} if "local" in step else {}))
    for tiles in (0, 1):        # TILE_LOCAL: the tiles sorted in place (reduction_buckets.py)
        add(radix_scatter_variant(False, False, True, bool(tiles)), "radix_scatter_match.comp", **radix,
            **ranks, **({"TILE_LOCAL": 1} if tiles else {}))
    # order-free 32-bit integer reductions by atomics
    for index_bytes in (4, 8):
        for kind, op in sorted(ATOMIC_REDUCTIONS):
            for wide in (False, True):
                stem = atomic_variant(kind, op, index_bytes, wide)
                assert stem is not None
                add(stem, "scatter_atomic.comp", OP=REDUCE_OPS.index(op),
                    SIGNED=int(kind == "i"), IDX64=index_bytes // 8, **({"WIDE": 1} if wide else {}))
    # the scatter reductions' kernels that touch the operands, for operands held in several blocks: ADDR
    for stem, (source, defines) in list(table.items()):
        if source in ("scatter_reduce.comp", "reduce_keys.comp") and "FIRST_HIST" not in defines:
            add(addr_variant(stem), source, **{k: v for k, v in defines.items() if k != "WORKGROUP_SIZE"}, ADDR=1)
    # the sort's kernels with their keys and rows in one buffer, for devices that bind fewer than SORT_BUFFERS
    for stem, (source, defines) in list(table.items()):
        if (source == "reduce_keys.comp" or source.startswith("radix_scatter") or source == "scatter_reduce.comp"
                and "PARTIALS" not in defines) and not {"ADDR", "TILE_LOCAL", "FIRST_HIST"} & defines.keys():
            add(few_variant(stem), source, **{k: v for k, v in defines.items() if k != "WORKGROUP_SIZE"}, FEW=1)
    return table


VARIANTS = _table()

# The values of the variant table that are specialization constants, by constant_id (their index): the shaders
# declare them as ``layout(constant_id = <NAME>_ID)`` (WORKGROUP_SIZE: ``local_size_x_id`` too, workgroup.glsl), and
# no preprocessor line of theirs may test them (tests/test_kernels.py checks). A variant without one of them gets 0.
SPEC_CONSTANTS = ("WORKGROUP_SIZE", "RADIX_BITS", "OP", "MEAN")


def _module_name(source: str, defines: dict) -> str:
    """The file stem of the module of ``source`` compiled with ``defines`` (its defines, in table order)."""
    return ".".join([source.removesuffix(".comp")] + [f"{k.lower()}{v}" for k, v in defines.items()])


def _modules() -> tuple[dict[str, tuple[str, dict]], dict[str, str]]:
    """(module -> (source, defines), stem -> module): the compiled defines of a variant are its values but the
    specialization constants, and the constants' ids."""
    ids = {f"{name}_ID": i for i, name in enumerate(SPEC_CONSTANTS)}
    modules: dict[str, tuple[str, dict]] = {}
    of: dict[str, str] = {}
    for stem, (source, defines) in VARIANTS.items():
        compiled = {k: v for k, v in defines.items() if k not in SPEC_CONSTANTS}
        name = _module_name(source, compiled)
        modules.setdefault(name, (source, {**compiled, **ids}))
        of[stem] = name
    return modules, of


MODULES, _MODULE_OF = _modules()


def module(stem: str) -> str:
    """The module (a key of MODULES: dmlgpu/shaders/<module>.spv) of a variant."""
    return _MODULE_OF[stem]


def specialization(stem: str) -> tuple[int, ...]:
    """The values of a variant's specialization constants, by constant_id (SPEC_CONSTANTS' order)."""
    defines = VARIANTS[stem][1]
    return tuple(int(defines.get(name, 0)) for name in SPEC_CONSTANTS)


if __name__ == "__main__":     # the modules for CMakeLists.txt: "module source NAME=VALUE ..." per line
    for name, (source, defines) in MODULES.items():
        sys.stdout.write(" ".join([name, source] + [f"{k}={v}" for k, v in defines.items()]) + "\n")
