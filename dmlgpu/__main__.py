"""``python -m dmlgpu info`` lists the Vulkan devices; ``python -m dmlgpu demo`` runs the demo;
``python -m dmlgpu bench [roundtrip | reductions | large] [options]`` runs the benchmark harness (dmlgpu.bench)."""
import argparse
import sys

BENCH_SECTIONS = ("roundtrip", "reductions", "large")    # python -m dmlgpu bench SECTION: dmlgpu.bench.SECTION.main


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        rest = argv[1:]
        if rest[:1] and rest[0] in BENCH_SECTIONS:
            import importlib
            return importlib.import_module(f"dmlgpu.bench.{rest[0]}").main(rest[1:])
        from .bench import cli
        return cli.main(rest)
    ap = argparse.ArgumentParser(prog="python -m dmlgpu", description=__doc__)
    ap.add_argument("command", choices=["info", "demo", "bench"])
    args = ap.parse_args(argv)
    from . import runtime
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
                  f"{d.max_per_stage_storage_buffers}\n"
                  f"     features: {', '.join(sorted(d.features)) or 'none'}")
        print("(* = default device: DMLGPU_DEVICE, else the first discrete GPU, else the first device)")
        if profile.name != "full":
            print(f"(as the device profile {profile.name!r} shows them: DMLGPU_DEVICE_PROFILE)")
        return 0
    from . import demo
    return demo.main()


if __name__ == "__main__":
    sys.exit(main())
