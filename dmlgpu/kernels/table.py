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
sort's digit and tile sizes) are given to every variant from here, so they are written once.
"""
from __future__ import annotations

import sys

WORKGROUP_SIZE = 256          # local_size_x of every kernel (shaders/workgroup.glsl: a specialization constant)
# A device whose maxComputeWorkGroupInvocations is below WORKGROUP_SIZE (Vulkan requires 128) runs the twin of
# every variant made with SMALL_WORKGROUP (stem + SMALL_SUFFIX: the same module, specialized so; the radix sort then sorts SMALL_RADIX_BITS
# per pass, one digit per invocation): Geometry says which sizes a device's plans use.
SMALL_WORKGROUP = 128
SMALL_SUFFIX = "_w128"
SMALL_RADIX_BITS = 7
UNITS = (1, 2, 4, 8, 16)      # bytes per access of the index-map kernels (shaders/units.glsl)
KERNELS = ("gather", "scatter_claim", "scatter_write")
LINE_CLAIM_WORDS = 4096       # shared claim words of scatter_lines.comp (16 KiB: Vulkan's minimum maximum)
RUN_UNROLL = 4                # units per invocation of the gather's run variants (gather.comp's RUN_UNROLL) ...
RUN_LANES = 32                # ... RUN_LANES apart (a block of RUN_LANES invocations moves adjacent units)
RUN_UNIFORM_WORDS = 1024      # 32-bit words of the ADDR and WIDE run variants' uniform buffer, block lists included
LINE_ITEMS = 4                # updates per invocation that scatter_lines.comp's workgroups aim at (ScatterLinesPlan)
REDUCE_OPS = ("add", "mul", "min", "max")    # arith.glsl's OP codes 0..3
REDUCE_TYPES = ("u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "f32", "f64")
# ml_dtypes' float types (arith.glsl's ELEM_KIND 3, 4, 5), by kind name; their bits: 16, 8, 8
NARROW_FLOATS = {"bf": (3, 16), "f8e4m3fn": (4, 8), "f8e5m2": (5, 8)}

# One digit of the radix sort (shaders/radix.glsl): radix_hist, radix_scan, and one of the radix_scatter variants
# (radix_scatter_variant).
RADIX_BITS = 8                # bits sorted per pass; one invocation per digit: 1 << RADIX_BITS == WORKGROUP_SIZE
RADIX_ITEMS = 8               # pairs per invocation in a tile of the histogram and scatter passes
RADIX_SCAN_ITEMS = 8          # tile counts per invocation in a step of the scan pass (its shared memory: 4 per count)
ATOMIC_REDUCTIONS = {("u", "add"), ("u", "min"), ("u", "max"), ("i", "min"), ("i", "max")}
WINDOW_LANES = 8              # invocations per row of the gather's WINDOW variants (CPU devices: a SIMD width)
CPU_LANES = 8                 # scatter_fold_cpu.comp (dmlgpu/plans/reduction_cpu.py): invocations per workgroup that work

WIDE_FEATURES = frozenset({"shaderInt64", "bufferDeviceAddress"})   # what the WIDE variants need
# The most that any variant needs of the limits a device may have too little of (tests/test_kernels.py checks
# them against the SPIR-V): on a device with at least these, the runtime checks no run's kernels
MOST_STORAGE_BUFFERS = 8      # scatter_reduce.comp's PARTIALS variants
MOST_SHARED_BYTES = 4 * (2 * RADIX_ITEMS * WORKGROUP_SIZE + (WORKGROUP_SIZE // 32 + 4) * (1 << RADIX_BITS)
                         + WORKGROUP_SIZE // 16)   # radix_scatter_local: the sorted tile, the chunk's masks, four
                                                   # words per digit, the scan's group sums (radix.glsl)
SUBGROUP_OPERATIONS = 0x1 | 0x4 | 0x8 | 0x10  # basic, arithmetic, ballot, shuffle: the most any variant needs
SCATTER_BUFFERS = 5           # the claim-and-write scatter's passes bind (plans take the FEW ones below this)
MIN_SUBGROUP = 8              # radix_scatter_match: the smallest subgroup it takes (its shared memory is sized so)
SORT_BUFFERS = 6              # a sorted reduction's radix_scatter binds (below: its FEW kernels, no PARTIALS)
BUCKET_MAX_E = 4              # scatter_bucket.comp: keys per invocation at most 2^BUCKET_MAX_E


def vec_sizes(unit: int) -> tuple:
    """Bytes of a packed dense tensor that a VEC gather of ``unit``-byte units writes per iteration: a word for 1-
    and 2-byte units, 16 for 4- and 8-byte ones; none for 16 (why: bench/RESULTS.md, "Design notes moved ...")."""
    return (4,) if unit < 4 else (16,) if unit < 16 else ()


# The device feature that the gather's NARROW variants (1- and 2-byte units loaded and stored as such) need, by unit.
# They are SPIR-V 1.3 (vulkan1.1): in SPIR-V 1.0 an 8-bit store would need uniformAndStorageBuffer8BitAccess too.
NARROW_FEATURES = {1: "storageBuffer8BitAccess", 2: "storageBuffer16BitAccess"}


def variant(kernel: str, unit: int, index_bytes: int, vec: int = 0, tuple_k: int | None = None,
            wide: bool = False, addr: bool = False, few: bool = False, narrow: bool = False,
            run: bool = False, window: bool = False) -> str:
    """File stem of an index-map kernel (gather.comp, scatter_claim.comp, scatter_write.comp) for an access
    unit (1-16 bytes) and an index width (4 or 8 bytes); ``vec`` (vec_sizes()): the gather writing that many
    bytes of a packed dense tensor per iteration, for tuples of ``tuple_k`` (1) components or any (None).
    ``wide``: the large-tensor variant (units.glsl's WIDE: 64-bit offsets, tensors held in several blocks
    reached through device addresses). ``addr`` (gathers only): the variant for tensors held in several blocks
    whose map fits 32 bits (addressing.glsl's ADDR: 32-bit offsets, the same device addresses). The gather's
    ``wide`` and ``addr`` variants have the ``vec`` ones too. ``few``: a scatter pass for devices that bind at
    most 4 storage buffers (scatter_claim.comp's and scatter_write.comp's FEW: the writes by output unit).
    ``narrow``: the one-unit gather of 1- or 2-byte units that loads and stores them as such (gather.comp's
    NARROW: no sub-word atomics; needs NARROW_FEATURES[unit]). ``run``: the gather of whole rows of 16-byte
    units whose invocations each take RUN_UNROLL units RUN_LANES apart (gather.comp's RUN_UNROLL; the launch
    has RUN_UNROLL times fewer invocations), also ``wide`` or ``addr``; every run variant reads its parameters
    from a uniform buffer (RUN_UNIFORM_WORDS words where they list blocks). ``window``: the whole-row gather of
    CPU devices bound to one block of a data tensor held in several (gather.comp's WINDOW)."""
    assert kernel in KERNELS and unit in UNITS and index_bytes in (4, 8) and not (wide and addr)
    assert kernel == "gather" or not addr
    if few:
        assert kernel != "gather" and not vec and not wide
        return f"{kernel}_u{unit}_i{index_bytes * 8}_few"
    if narrow:
        assert kernel == "gather" and unit in NARROW_FEATURES and not (vec or wide or addr)
        return f"gather_u{unit}_i{index_bytes * 8}_narrow"
    suffix = "_wide" if wide else "_addr" if addr else ""
    if run:
        assert kernel == "gather" and unit == 16 and not vec
        return f"gather_u16_i{index_bytes * 8}_run" + suffix
    if window:
        assert kernel == "gather" and unit >= 4 and not (vec or wide or addr)
        return f"gather_u{unit}_i{index_bytes * 8}_window"
    if vec:
        assert kernel == "gather" and vec in vec_sizes(unit) and tuple_k in (None, 1)
        return f"gather_vec{vec}{'_k1' if tuple_k else ''}_u{unit}_i{index_bytes * 8}" + suffix
    return f"{kernel}_u{unit}_i{index_bytes * 8}" + suffix


# segment.comp's SPLIT variants (6 bindings: ids and weights in buffers of their own, not packed with the offsets),
# for the element types of embedding tables and node features
SEGMENT_SPLIT = ("segment_f32", "segment_f16", "segment_bf16")
SEGMENT_SPLIT_BUFFERS = 6
SEGMENT_ORDERS = "_orders"     # the suffix of float types' variants with orders "tree" and "fixed-point" (ORDERS;
                               # no SPLIT twin: the ids and weights packed)


def segment_variant(reduce_kernel: str) -> tuple[str, str]:
    """(file stem of the one-pass segment and bag reduction (shaders/segment.comp: segment_reduce, embedding_bag,
    gather_scatter) for the element type of a scatter reduction kernel (reduce_variant), that kernel's operation):
    one module per element type, the operation a parameter word."""
    assert reduce_kernel.startswith("scatter_reduce_")
    kind, op = reduce_kernel.removeprefix("scatter_reduce_").split("_")[:2]
    return f"segment_{kind}", op


def check_variant(index_bytes: int) -> str:
    """File stem of the device-side index check (shaders/index_check.comp: mode="raise" on Tensor indices) for
    an index width (4 or 8 bytes)."""
    assert index_bytes in (4, 8)
    return f"index_check_i{index_bytes * 8}"


def row_claim_variants(unit: int, index_bytes: int) -> tuple[str, str, str]:
    """File stems of a scatter of whole rows (ROWS: scatter_claim.comp, scatter_write.comp): (the rows'
    claims, the units' writes for ``unit``-byte units, the claims' clearing), for an index width."""
    assert unit in UNITS and index_bytes in (4, 8)
    bits = index_bytes * 8
    return f"scatter_claim_rows_i{bits}", f"scatter_write_rows_u{unit}_i{bits}", f"scatter_clear_rows_i{bits}"


def copy_rows_variant(unit: int, clears: bool = False) -> str:
    """File stem of the pass that copies the input and writes the claimed rows in one go (scatter_write.comp's
    ROWS with COPY) for ``unit``-byte units (no index read); ``clears``: it clears the claims too (CLEARS)."""
    assert unit in UNITS
    return f"scatter_copy_rows_u{unit}" + ("_clears" if clears else "")


def small_scatter_variant(unit: int, index_bytes: int) -> str:
    """File stem of a scatter of at most WORKGROUP_SIZE rows in one workgroup (scatter_write.comp's SMALL)."""
    assert unit in UNITS and index_bytes in (4, 8)
    return f"scatter_small_rows_u{unit}_i{index_bytes * 8}"


def unique_variant(unit: int, index_bytes: int) -> str:
    """File stem of a scatter whose targets are distinct (scatter_write.comp's UNIQUE: one pass, no claims)."""
    assert unit in UNITS and index_bytes in (4, 8)
    return f"scatter_unique_u{unit}_i{index_bytes * 8}"


def lines_variant(unit: int, index_bytes: int, copy: bool = False) -> str:
    """File stem of the one-pass SCATTER_ELEMENTS (scatter_lines.comp) for an element size and an index width;
    ``copy``: its COPY variant (4-byte units), which copies the input too."""
    assert unit in UNITS and index_bytes in (4, 8) and (unit == 4 or not copy)
    return f"scatter_lines_u{unit}_i{index_bytes * 8}" + ("_copy" if copy else "")


def reduce_variant(kind: str, bits: int, op: str) -> str:
    """File stem of the scatter reduction kernel (shaders/scatter_reduce.comp) for an element type (kind "u", "i" or
    "f", 8-64 bits; or a NARROW_FLOATS kind and its bits) and an operation; integer add and mul share "u"'s."""
    assert (f"{kind}{bits}" in REDUCE_TYPES or NARROW_FLOATS.get(kind, (0, 0))[1] == bits) and op in REDUCE_OPS
    if kind in NARROW_FLOATS:
        return f"scatter_reduce_{kind if kind != 'bf' else 'bf16'}_{op}"
    kind = "u" if kind == "i" and op in ("add", "mul") else kind
    return f"scatter_reduce_{kind}{bits}_{op}"


def minmax_variants(name: str, index_bytes: int) -> tuple[str, str, str] | None:
    """The three stages of the min/max reduction by 64-bit atomics (shaders/scatter_minmax.comp) for a
    reduction kernel (reduce_variant) of elements of at most 4 bytes, for an index width; None for others."""
    if not name.endswith(("_min", "_max")) or "64_" in name:
        return None
    stem = name.replace("scatter_reduce_", "scatter_minmax_")
    return stem + "_s1", f"{stem}_s2_i{index_bytes * 8}", f"{stem}_s3_i{index_bytes * 8}"


def fixed_variants(name: str, index_bytes: int, few: bool = False) -> tuple[str | None, str, str, str, str] | None:
    """The stages of order="fixed-point" (shaders/scatter_fixed.comp; dmlgpu/plans/reduction_fixed.py) for a float add
    scatter reduction kernel (reduce_variant) of at most 4 bytes, for an index width: (self max, max, add, write by
    the updates, write by the output's span); the first is None with 64-bit atomics (the max takes the output's
    values in), ``few`` (no 64-bit types, 4 storage buffers) has it. None for other kernels."""
    if not has_tree(name) or not name.endswith("_add") or "64_" in name:
        return None
    stem = name.replace("scatter_reduce_", "scatter_fixed_").removesuffix("_add")
    suffix = f"_i{index_bytes * 8}" + ("_few" if few else "")
    return (f"{stem}_s0{suffix}" if few else None, f"{stem}_s1{suffix}", f"{stem}_s2{suffix}", f"{stem}_s3{suffix}",
            f"{stem}_s4" + ("_few" if few else ""))


def keys_variant(index_bytes: int, values: int = 0, hist: bool = False) -> str:
    """File stem of a scatter reduction's key kernel (shaders/reduce_keys.comp) for an index width (4 or 8), with
    update values of ``values`` (1, 2, 4) bytes or offsets (0); ``hist``: the sort's first histogram too."""
    assert index_bytes in (4, 8) and values in (0, 1, 2, 4)
    return f"reduce_keys{f'_v{values}' if values else ''}_i{index_bytes * 8}" + ("_hist" if hist else "")


def atomic_variant(kind: str, op: str, index_bytes: int, wide: bool = False) -> str | None:
    """File stem of the 32-bit atomic scatter reduction (shaders/scatter_atomic.comp) for integers of ``kind`` ("u"
    or "i", one for add) and an operation, or None where there is none; ``wide``: the large-tensor variant."""
    kind = "u" if kind == "i" and op == "add" else kind
    if (kind, op) not in ATOMIC_REDUCTIONS:
        return None
    assert index_bytes in (4, 8)
    return f"scatter_atomic_{kind}32_{op}_i{index_bytes * 8}" + ("_wide" if wide else "")


def _has_blocks(name: str) -> bool:
    """Float add and mul (and "mean") of at most 4 bytes fold long runs by blocks (FOLD_BLOCKS) on GPUs."""
    return has_tree(name.removesuffix("_mean")) and _has_values(name)


def _has_partials(name: str) -> bool:
    """Associative reductions (min/max, integer add/mul) fold long runs by levels of partials."""
    return name.endswith(("_min", "_max")) or not name.startswith(("scatter_reduce_f", "scatter_reduce_bf"))


def _has_values(name: str) -> bool:
    """Element types of at most 4 bytes: the sort can carry the update values."""
    return not name.endswith(("64_add", "64_mul", "64_min", "64_max", "64_add_mean"))


def fold_variant(name: str, blocks: bool, values: bool, bucket: bool = False) -> str:
    """The variant of a scatter reduction kernel (reduce_variant) that folds long runs by blocks where it has one
    (scatter_reduce.comp's FOLD_BLOCKS) if ``blocks``, and reads the values the sort carried (VALUES) if ``values``;
    ``bucket``: float add, mul (or their mean_variant) by a fold per bucket of keys (scatter_bucket.comp)."""
    if bucket:
        assert has_tree(name.removesuffix("_mean")) and values
        return name + "_bucket"
    if blocks and _has_blocks(name):
        name += "_blocks"
    assert _has_values(name) or not values
    return name + ("_values" if values else "")


def has_tree(name: str) -> bool:
    """Float add and mul (order matters) have the variants of order="tree" (shaders/scatter_tree.comp)."""
    return name.startswith(("scatter_reduce_f", "scatter_reduce_bf")) and name.endswith(("_add", "_mul"))


def mean_variant(name: str) -> str:
    """The variant of a float add scatter reduction kernel (reduce_variant) whose runs write their mean (reduction
    "mean": scatter_reduce.comp's MEAN, mean_of in arith.glsl): a pipeline of its own (MEAN is a specialization
    constant), so add's has no division."""
    assert name.startswith(("scatter_reduce_f", "scatter_reduce_bf")) and name.endswith("_add")
    return name + "_mean"


def tree_variants(name: str, values: bool, few: bool = False) -> tuple[str, str, str]:
    """The variants of a float add or mul scatter reduction kernel (reduce_variant) for order="tree"
    (shaders/scatter_tree.comp): (the init, reading the update values that the sort carried if ``values``,
    with the sorted rows after the keys in one buffer if ``few``; one pass of the tree; the final write)."""
    assert has_tree(name) and (_has_values(name) or not values)
    init = name + "_tree_init" + ("_values" if values else "") + ("_few" if few else "")
    return init, name + "_tree_pass", name + "_tree_final"


def partials_variants(name: str, values: bool) -> tuple[str, str]:
    """The variants of an associative reduction kernel (min/max, integer add/mul) folding long runs by levels of
    partials (scatter_reduce.comp's PARTIALS): (level 0 over the sorted rows, carried values if ``values``; above)."""
    assert _has_partials(name)
    return name + ("_partials_values" if values else "_partials"), name + "_up"


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


def few_variant(name: str) -> str:
    """The variant of a scatter reduction's key, radix scatter or fold kernel (without PARTIALS) for devices that
    bind fewer than SORT_BUFFERS storage buffers (FEW): each pair's row follows the keys in the keys' buffer."""
    return name + "_few"


def radix_scatter_variant(few: bool, local: bool, match: bool = False, tiles: bool = False) -> str:
    """The radix sort's scatter pass: FEW (see few_variant) or not; ``match``: radix_scatter_match.comp (ranks by
    subgroup ballots: for devices with the subgroup operations and sizes it takes; ``tiles``: its TILE_LOCAL),
    else radix_scatter.comp, LOCAL (the tile sorted in shared memory, then written out in order) or not."""
    name = "radix_scatter_match" if match else "radix_scatter_local" if local else "radix_scatter"
    name += "_tiles" if tiles else ""
    return few_variant(name) if few else name


def addr_variant(name: str) -> str:
    """The variant of a scatter reduction kernel (reduce_keys.comp, scatter_reduce.comp) that reaches the operands
    through their blocks' device addresses (addressing.glsl's ADDR): tensors in several blocks, 32-bit offsets."""
    return name + "_addr"


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
