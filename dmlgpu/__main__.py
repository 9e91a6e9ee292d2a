"""``python -m dmlgpu info`` lists the Vulkan devices; ``python -m dmlgpu demo`` runs the demo;
``python -m dmlgpu warmup [--device N]`` builds every kernel variant's pipeline for a device into the on-disk
pipeline cache (run it once per machine and driver, e.g. when a service's image is built, so that its first
calls do not compile); ``python -m dmlgpu bench [roundtrip | reductions | large] [options]`` runs the
benchmark harness (dmlgpu.bench)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

PIPELINE_CACHE_HEADER = 32     # bytes of a Vulkan pipeline cache's header (VkPipelineCacheHeaderVersionOne)
BENCH_SECTIONS = ("roundtrip", "reductions", "large")    # python -m dmlgpu bench SECTION: dmlgpu.bench.SECTION.main


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``argv``: its arguments; default: sys.argv[1:]); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        rest = argv[1:]
        if rest[:1] and rest[0] in BENCH_SECTIONS:
            import importlib
            status: int = importlib.import_module(f"dmlgpu.bench.{rest[0]}").main(rest[1:])
            return status
        from .bench import cli
        status = cli.main(rest)
        return status
    ap = argparse.ArgumentParser(prog="python -m dmlgpu", description=__doc__)
    commands = ap.add_subparsers(dest="command", required=True, metavar="{info,demo,warmup,bench}")
    commands.add_parser("info", help="lists the Vulkan devices")
    commands.add_parser("demo", help="runs the DirectML pages' examples and a timed gather")
    warm = commands.add_parser("warmup", help="builds every kernel variant's pipeline into the pipeline cache")
    warm.add_argument("--device", type=int, default=None,
                      help="the device index (python -m dmlgpu info); default: the default device")
    commands.add_parser("bench", help="the benchmark harness: python -m dmlgpu bench --help")
    args = ap.parse_args(argv)
    from . import runtime
    if args.command == "warmup":
        return warmup(args.device)
    if args.command == "info":
        from .runtime import profiles
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
        print("(* = default device: DMLGPU_DEVICE, else the first discrete GPU, else the first device)")
        if profile.name != "full":
            print(f"(as the device profile {profile.name!r} shows them: DMLGPU_DEVICE_PROFILE)")
        return 0
    from . import demo
    return demo.main()


def warmup(index: int | None = None) -> int:
    """``python -m dmlgpu warmup``: builds every kernel variant's pipeline on device ``index`` (default: the
    default device) and saves the device's pipeline cache, with a progress line on stderr."""
    from .kernels import table as kernels, spirv
    from .bench.progress import Progress
    from .api.device import as_device
    from .runtime.pipelines import cache_file
    from .errors import DeviceError
    try:
        dev = as_device(index, "python -m dmlgpu warmup", "--device")
    except DeviceError as e:
        print(e, file=sys.stderr)
        return 2
    progress = Progress()
    progress.start(sum(not n.endswith(kernels.SMALL_SUFFIX) for n in kernels.VARIANTS))
    built, skipped = dev.warmup(step=lambda name: progress.step(f"{kernels.VARIANTS[name][0]} {name}"))
    progress.finish()
    path = cache_file(dev.info, "" if dev.profile.name == "full" else dev.profile.name)
    print(f"device {dev.info.index} ({dev.info.name}): the pipelines of {len(built)} kernel variants are built; "
          f"pipeline cache: {path}")
    size = path.stat().st_size if path.exists() else 0
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
