"""``python -m dmlgpu info`` lists the Vulkan devices; ``python -m dmlgpu demo`` runs the demo;
``python -m dmlgpu warmup [--device N]`` builds every kernel variant's pipeline for a device into the on-disk
pipeline cache (run it once per machine and driver, e.g. when a service's image is built, so that its first
calls do not compile); ``python -m dmlgpu bench [roundtrip | reductions | large | apps | latency] [options]`` runs the
benchmark harness (dmlgpu.bench).

Exit status: 0 done; 1 no usable device (no Vulkan driver, a DMLGPU_DEVICE naming no device) or, for bench, a
wrong result; 2 a command-line error (an unknown option or value, a --device naming no device).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PIPELINE_CACHE_HEADER = 32     # bytes of a Vulkan pipeline cache's header (VkPipelineCacheHeaderVersionOne)
PROG = "python -m dmlgpu"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``argv``: its arguments; default: sys.argv[1:]); returns the exit status. A DeviceError
    (no usable device) is one line on stderr and status 1, not a traceback."""
    from .errors import DeviceError
    try:
        return _main(sys.argv[1:] if argv is None else list(argv))
    except DeviceError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1


def parser() -> argparse.ArgumentParser:
    """The command line's parser (its sections' parsers are their modules')."""
    from .bench.command import parser as make
    ap = make(PROG, __doc__)
    commands = ap.add_subparsers(dest="command", required=True, metavar="{info,demo,warmup,bench}")
    commands.add_parser("info", help="lists the Vulkan devices, what DLPack shares with each, and, on NVIDIA GPUs, "
                                     "the clock hold a Device makes")
    commands.add_parser("demo", help="runs the DirectML pages' examples and a timed gather")
    warm = commands.add_parser("warmup", help="builds every kernel variant's pipeline into the pipeline cache")
    warm.add_argument("--device", type=int, default=None,
                      help="the device index (python -m dmlgpu info); default: the default device")
    commands.add_parser("bench", help="the benchmark harness: python -m dmlgpu bench --help")
    return ap


def _main(argv: list[str]) -> int:
    if argv[:1] == ["bench"]:
        from .bench import cli                     # (its sections too: python -m dmlgpu bench SECTION)
        status: int = cli.main(argv[1:])
        return status
    args = parser().parse_args(argv)
    if args.command == "warmup":
        return warmup(args.device)
    if args.command == "info":
        return info()
    from . import demo
    return demo.main()


def info() -> int:
    """``python -m dmlgpu info``: every Vulkan device's limits and features, the default one marked, and what
    DLPack exchanges with it (runtime/export.py's describe)."""
    from . import runtime
    from .runtime import clocks, export, profiles
    default = runtime.default_device_index()
    profile = profiles.resolve(None)
    for d in runtime.devices():
        d = profiles.apply(d, profile)
        mark = "*" if d.index == default else " "
        print(f"{mark} {d.index}: {d.name} ({d.type})\n"
              f"     maxStorageBufferRange {d.max_storage_buffer_range} bytes, "
              f"maxPushConstantsSize {d.max_push_constants_size} bytes, device memory {d.device_memory} bytes\n"
              f"     workgroups: count {d.max_workgroup_count}, size {d.max_workgroup_size}, "
              f"invocations {d.max_workgroup_invocations}; timestamp period {d.timestamp_period_ns} ns\n"
              f"     maxMemoryAllocationSize {d.max_memory_allocation_size} bytes, maxBufferSize "
              f"{d.max_buffer_size or 'not reported'}, maxComputeSharedMemorySize "
              f"{d.max_compute_shared_memory_size} bytes, maxPerStageDescriptorStorageBuffers "
              f"{d.max_per_stage_storage_buffers}, maxPushDescriptors {d.max_push_descriptors}\n"
              f"     subgroups of {d.subgroup_size}, operations in compute shaders {d.subgroup_operations:#x} "
              f"(VkSubgroupFeatureFlags)\n"
              f"     features: {', '.join(sorted(d.features)) or 'none'}")
        print(f"     {export.describe(d)}")
        hold = clocks.notice(d.vendor_id)
        if hold:
            print(f"     {hold}")
    print("(* = default device: DMLGPU_DEVICE, else the first discrete GPU, else the first device)")
    if profile.name != "full":
        print(f"(as the device profile {profile.name!r} shows them: DMLGPU_DEVICE_PROFILE)")
    return 0


def warmup(index: int | None = None) -> int:
    """``python -m dmlgpu warmup``: builds every kernel variant's pipeline on device ``index`` (default: the
    default device) and saves the device's pipeline cache, with a progress line on stderr. The first variant
    is built and saved alone, so that a driver whose cache keeps no pipelines (lavapipe's) is named before the
    rest are built, not after."""
    from .kernels import table as kernels, spirv
    from .bench.progress import Progress
    from .api.device import as_device
    from .runtime.pipelines import cache_file
    from .errors import DeviceError
    try:
        dev = as_device(index, f"{PROG} warmup", "--device")
    except DeviceError as e:
        if index is None:
            raise               # (no usable default device: status 1)
        print(e, file=sys.stderr)
        return 2                # a --device naming no device: a command-line error
    path = cache_file(dev.info, "" if dev.profile.name == "full" else dev.profile.name)
    stems = [n for n in kernels.VARIANTS if not n.endswith(kernels.SMALL_SUFFIX)]
    first = next((i for i, n in enumerate(stems) if dev.runtime.supports(n)), 0)
    progress = Progress()
    progress.start(len(stems))

    def step(name: str) -> None:
        progress.step(f"{kernels.VARIANTS[name][0]} {name}")
    built, skipped = dev.warmup(stems[first:first + 1], step=step)
    size = path.stat().st_size if path.exists() else 0
    if size <= PIPELINE_CACHE_HEADER:
        progress.warn(f"the driver's pipeline cache kept no pipeline ({size} bytes after the first was built): "
                      f"warming up saves nothing on this driver (lavapipe's); the rest are built only to check that "
                      f"they build (Ctrl-C stops)")
    more_built, more_skipped = dev.warmup(stems[:first] + stems[first + 1:], step=step)
    built, skipped = built + more_built, skipped + more_skipped
    progress.finish()
    print(f"device {dev.info.index} ({dev.info.name}): the pipelines of {len(built)} kernel variants are built; "
          f"pipeline cache: {path}")
    if size <= PIPELINE_CACHE_HEADER:
        print(f"the driver's pipeline cache holds no pipelines ({size} bytes{': its header alone' if size else ''}): "
              f"this driver compiles each pipeline when a process builds it, so warming up saves nothing here "
              f"(lavapipe does this; GPU drivers keep their compiled pipelines)")
    if skipped:
        lacking = sorted(set().union(*(spirv.requirements(n).features for n in skipped)) - dev.features)
        print(f"skipped {len(skipped)} variants that need a feature or limit the device (profile "
              f"{dev.profile.name}) lacks{': ' + ', '.join(lacking) if lacking else ''}; dmlgpu never runs them there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
