"""``python -m dmlgpu info`` lists the Vulkan devices; ``python -m dmlgpu demo`` runs the demo."""
import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dmlgpu", description=__doc__)
    ap.add_argument("command", choices=["info", "demo"])
    args = ap.parse_args(argv)
    from . import runtime
    if args.command == "info":
        default = runtime.default_device_index()
        for d in runtime.devices():
            mark = "*" if d.index == default else " "
            print(f"{mark} {d.index}: {d.name} ({d.type})\n"
                  f"     maxStorageBufferRange {d.max_storage_buffer_range} bytes, "
                  f"maxPushConstantsSize {d.max_push_constants_size} bytes\n"
                  f"     workgroups: count {d.max_workgroup_count}, size {d.max_workgroup_size}, "
                  f"invocations {d.max_workgroup_invocations}; timestamp period {d.timestamp_period_ns} ns")
        print("(* = default device: DMLGPU_DEVICE, else the first discrete GPU, else the first device)")
        return 0
    from . import demo
    return demo.main()


if __name__ == "__main__":
    sys.exit(main())
