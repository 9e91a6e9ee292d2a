"""Device profiles: a device opened as if it had fewer optional features and lower limits than it has, so that
the suite can run on one machine as it would on the least capable device Vulkan allows (tests and CI).

A profile withholds optional features (kp patch 0015's names: they are not enabled at device creation, so
the Khronos validation layer reports any shader or command that still uses them; kp patch 0018) and lowers
limits (the runtime plans, picks kernel variants and refuses work as if the device's limits were these).
``DMLGPU_DEVICE_PROFILE`` names the profile of devices opened without ``Device(profile=...)``; "full" (the
default) changes nothing. A profile is a name of ``PROFILES``, a Profile, or a string of comma-separated
items, each a profile name, ``-feature`` (withhold it) or ``limit=value`` (lower it; names as in ``LIMITS``),
e.g. "no-int64,maxComputeSharedMemorySize=16384".
"""
from __future__ import annotations

import dataclasses
import os
from typing import NamedTuple

from ..errors import DeviceError

# The optional features dmlgpu may enable (kp patch 0015), Vulkan's names.
# "externalMemoryHost" is the extension VK_EXT_external_memory_host (kp patch 0023: host arrays read in place),
# "pushDescriptor" the extension VK_KHR_push_descriptor (kp patch 0025: kernels bind their buffers without
# descriptor sets; withheld, every binding allocates and writes a set: runtime/pipelines.py), "externalMemoryFd"
# the extension VK_KHR_external_memory_fd (kp patch 0026: buffers exportable to CUDA, DLPack's kDLCUDA path).
FEATURES = frozenset({"shaderInt64", "shaderInt16", "shaderInt8", "storageBuffer16BitAccess",
                      "storageBuffer8BitAccess", "shaderBufferInt64Atomics", "bufferDeviceAddress",
                      "externalMemoryHost", "pushDescriptor", "externalMemoryFd"})

# The limits a profile may lower: Vulkan's name -> DeviceInfo's field.
LIMITS = {"maxComputeWorkGroupInvocations": "max_workgroup_invocations",
          "maxComputeSharedMemorySize": "max_compute_shared_memory_size",
          "maxStorageBufferRange": "max_storage_buffer_range",
          "maxPerStageDescriptorStorageBuffers": "max_per_stage_storage_buffers",
          "maxPushConstantsSize": "max_push_constants_size",
          "maxComputeWorkGroupCount": "max_workgroup_count",          # each of the three dimensions
          "maxComputeWorkGroupSize": "max_workgroup_size",           # each of x, y, z: (128, 128, 64) below
          "subgroupSupportedOperations": "subgroup_operations"}      # a mask: lowered to the bits in both
MASKS = {"subgroupSupportedOperations"}

# Vulkan 1.1's required minimums of those limits (the specification's "Required Limits" table).
VULKAN_MINIMUMS = {"maxComputeWorkGroupInvocations": 128, "maxComputeSharedMemorySize": 16384,
                   "maxStorageBufferRange": 1 << 27, "maxPerStageDescriptorStorageBuffers": 4,
                   "maxPushConstantsSize": 128, "maxComputeWorkGroupCount": 65535,
                   "maxComputeWorkGroupSize": (128, 128, 64),
                   "subgroupSupportedOperations": 0x1}     # VK_SUBGROUP_FEATURE_BASIC_BIT, in compute shaders


class Profile(NamedTuple):
    """``name``; ``withheld``: features not enabled; ``limits``: Vulkan limit name -> the most it may be."""

    name: str
    withheld: frozenset = frozenset()
    limits: tuple = ()          # ((Vulkan limit name, value), ...)


PROFILES = {
    "full": Profile("full"),
    "minimum": Profile("minimum", FEATURES, tuple(VULKAN_MINIMUMS.items())),
    "no-int64": Profile("no-int64", frozenset({"shaderInt64", "shaderBufferInt64Atomics"})),
    "no-device-address": Profile("no-device-address", frozenset({"bufferDeviceAddress"})),
    "no-narrow-storage": Profile("no-narrow-storage", frozenset({"shaderInt8", "shaderInt16",
                                                                 "storageBuffer8BitAccess",
                                                                 "storageBuffer16BitAccess"})),
    "small-shared-memory": Profile("small-shared-memory", limits=(("maxComputeSharedMemorySize", 16384),)),
    "small-workgroups": Profile("small-workgroups", limits=(("maxComputeWorkGroupInvocations", 128),
                                                            ("maxComputeWorkGroupSize", (128, 128, 64)))),
    "few-buffers": Profile("few-buffers", limits=(("maxPerStageDescriptorStorageBuffers", 4),)),
    "no-host-import": Profile("no-host-import", frozenset({"externalMemoryHost"})),
    "no-push-descriptors": Profile("no-push-descriptors", frozenset({"pushDescriptor"})),
    "no-export": Profile("no-export", frozenset({"externalMemoryFd"})),
}


def resolve(profile) -> Profile:
    """The Profile that ``profile`` names (None: DMLGPU_DEVICE_PROFILE, else "full"). ValueError names an
    unknown item."""
    if isinstance(profile, Profile):
        return profile
    if profile is None:
        profile = os.environ.get("DMLGPU_DEVICE_PROFILE", "") or "full"
    withheld: set[str] = set()
    limits: dict[str, int] = {}
    for item in (part.strip() for part in str(profile).split(",")):
        if item in PROFILES:
            withheld |= PROFILES[item].withheld
            for name, value in PROFILES[item].limits:
                limits[name] = _lower(limits.get(name), value, name in MASKS)
        elif item.startswith("-") and item[1:] in FEATURES:
            withheld.add(item[1:])
        elif "=" in item and item.split("=", 1)[0] in LIMITS:
            name, value = item.split("=", 1)
            limits[name] = _lower(limits.get(name), int(value, 0), name in MASKS)
        else:
            raise ValueError(f"device profile item {item!r} is no profile ({', '.join(PROFILES)}), '-feature' "
                             f"({', '.join(sorted(FEATURES))}) or 'limit=value' ({', '.join(LIMITS)})")
    return Profile(str(profile), frozenset(withheld), tuple(sorted(limits.items())))


def _lower(old, new, mask: bool = False):
    if old is None:
        return new
    if mask:
        return old & new
    if isinstance(old, tuple) or isinstance(new, tuple):
        old, new = _triple(old), _triple(new)
        return tuple(min(a, b) for a, b in zip(old, new))
    return min(old, new)


def _triple(value) -> tuple:
    return value if isinstance(value, tuple) else (value, value, value)


def apply(info, profile: Profile):
    """The DeviceInfo as the profile shows it: its features without the withheld ones (without
    "pushDescriptor", no maxPushDescriptors either), its limits at most the profile's."""
    changes = {"features": info.features - profile.withheld}
    if "pushDescriptor" in profile.withheld:
        changes["max_push_descriptors"] = 0
    for name, value in profile.limits:
        field = LIMITS[name]
        have = getattr(info, field)
        changes[field] = _lower(have, _triple(value)) if isinstance(have, tuple) else _lower(have, value,
                                                                                            name in MASKS)
    return dataclasses.replace(info, **changes)


def limit_problem(info, features: frozenset, need) -> str | None:
    """What keeps a device (its profile's DeviceInfo and enabled features) from running a kernel of these
    spirv.Requirements, naming the limit or feature and both sizes; None where nothing does."""
    for needed, limit, what in ((need.invocations, "maxComputeWorkGroupInvocations", "invocations per workgroup"),
                                (need.shared_bytes, "maxComputeSharedMemorySize", "bytes of shared memory"),
                                (need.storage_buffers, "maxPerStageDescriptorStorageBuffers", "storage buffers"),
                                (need.push_constant_bytes, "maxPushConstantsSize", "bytes of push constants")):
        have = getattr(info, LIMITS[limit])
        if needed > have:
            return f"{needed} {what}, over its {limit} ({have})"
    if need.subgroup_operations & ~info.subgroup_operations:
        return (f"the subgroup operations {need.subgroup_operations:#x} in compute shaders, over its "
                f"subgroupSupportedOperations ({info.subgroup_operations:#x})")
    if not need.features <= features:
        return f"the features {', '.join(sorted(need.features - features))}, which it lacks"
    return None


def check_limits(device, kernel: str, need) -> None:
    """DeviceError, naming the limit or feature and both sizes (limit_problem), unless the device (its
    profile's DeviceInfo and enabled features) can run a kernel of these spirv.Requirements."""
    info = device.info
    problem = limit_problem(info, device.features, need)
    if problem:
        raise DeviceError(f"this operation needs kernel {kernel}, which needs {problem} on {info.name} "
                          f"(profile {device.profile.name}); see the device feature matrix in docs/guide/devices.md")
