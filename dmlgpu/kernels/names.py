"""The kernel variants' facts and names: the sizes that the shaders share with the host (the workgroup size, the
radix sort's digit and tile sizes, ...) and the functions that name the variant a plan asks for. The table of every
variant (dmlgpu/kernels/table.py, which re-exports these names) is built from them. Standard library only: the
build runs the table as a script (CMakeLists.txt), which loads this module by its path.
"""
from __future__ import annotations

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
