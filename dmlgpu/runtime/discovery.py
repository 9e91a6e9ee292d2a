"""Finding Vulkan devices: the patched Kompute module, the device list with the limits dmlgpu needs, and
the default device's index. (Unpatched, Kompute aborted the process when Vulkan had no driver; kp patch
0014 makes that an exception, which becomes a DeviceError saying what to install.)"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from . import validation
from ..errors import DeviceError

_KP_IMPORT_ERROR: ImportError | None
try:
    import kp
except ImportError as exc:  # importing dmlgpu works without kp; opening a device says what is missing
    kp = None
    _KP_IMPORT_ERROR = exc
else:
    _KP_IMPORT_ERROR = None

# The patches of tools/kp-patches the runtime calls into (kp.__dmlgpu_patches__ lists those a build has).
REQUIRED_PATCHES = ("0003-sequence-one-fence", "0005-sequence-resettable-pool", "0006-python-eval-async-gil",
                    "0007-python-memory-barrier", "0008-python-manager-clear", "0009-python-device-properties",
                    "0011-device-buffers", "0012-buffer-regions", "0013-shared-pipelines",
                    "0014-manager-instance-errors", "0015-device-features", "0017-call-path",
                    "0018-withheld-features", "0020-uniform-parameters", "0021-subgroup-properties",
                    "0022-device-uuid", "0025-push-descriptors")

DEVICE_TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}

# VkMemoryPropertyFlagBits and VkMemoryHeapFlagBits
DEVICE_LOCAL, HOST_VISIBLE, HOST_COHERENT, HOST_CACHED = 0x1, 0x2, 0x4, 0x8
HEAP_DEVICE_LOCAL = 0x1

INSTALL_HINT = ("install a Vulkan driver (on Debian/Ubuntu without a GPU: 'apt-get install mesa-vulkan-drivers' "
                "for lavapipe) and run the README's set-up command")


def require_kp() -> None:
    """DeviceError unless the patched kp is importable, with every patch the runtime needs."""
    if kp is None:
        raise DeviceError(f"the Kompute module 'kp' is not importable ({_KP_IMPORT_ERROR}); "
                          "build it with 'python tools/build_kp.py'")
    missing = [p for p in REQUIRED_PATCHES if p not in getattr(kp, "__dmlgpu_patches__", ())]
    if missing:
        raise DeviceError(f"the installed 'kp' lacks dmlgpu's patches {', '.join(missing)}; "
                          "rebuild it with 'python tools/build_kp.py --force'")


@dataclass(frozen=True)
class DeviceInfo:
    """A Vulkan device as dmlgpu.devices() lists it; limits in bytes or counts. ``memory_heaps``: (size in
    bytes, VkMemoryHeapFlags) per heap; ``memory_types``: (VkMemoryPropertyFlags, heap index) per type.
    ``features``: the optional Vulkan features (Vulkan's names, kp patch 0015) that the device has, which
    a Device opened on it enables. ``max_memory_allocation_size``: the largest single allocation;
    ``max_buffer_size``: the largest buffer (0 where the device does not report it, before Vulkan 1.3).
    ``max_compute_shared_memory_size``: bytes of shared memory per workgroup; ``max_per_stage_storage_buffers``:
    storage buffers one kernel may bind (maxPerStageDescriptorStorageBuffers); ``subgroup_size`` (0 before
    Vulkan 1.1) and ``subgroup_operations``: the VkSubgroupFeatureFlags compute shaders have (kp patch 0021;
    0: none); ``device_uuid``: VkPhysicalDeviceIDProperties' deviceUUID (kp patch 0022; empty before Vulkan
    1.1), the GPU's name in other APIs; ``min_imported_host_pointer_alignment``: VK_EXT_external_memory_host's
    minImportedHostPointerAlignment (kp patch 0023; 0 without the extension: host arrays are then uploaded);
    ``max_push_descriptors``: VK_KHR_push_descriptor's maxPushDescriptors (kp patch 0025; 0 without the
    extension), the most bindings a kernel binds without a descriptor set. A Device's ``info`` is this as its
    profile shows it (runtime/profiles.py).

    Parameters
    ----------
    index, name, type, ... : the fields below, as Vulkan reports them (made by devices(), not by hand).

    Examples
    --------
    >>> import dmlgpu
    >>> info = dmlgpu.devices()[0]
    >>> info.index, info.max_storage_buffer_range >= 2**27
    (0, True)
    """

    index: int
    name: str
    type: str
    max_storage_buffer_range: int
    max_push_constants_size: int
    max_workgroup_count: tuple
    max_workgroup_size: tuple
    max_workgroup_invocations: int
    timestamp_period_ns: float
    memory_heaps: tuple
    memory_types: tuple
    vendor_id: int
    device_id: int
    driver_version: int
    pipeline_cache_uuid: bytes
    features: frozenset
    max_memory_allocation_size: int
    max_buffer_size: int
    max_compute_shared_memory_size: int
    max_per_stage_storage_buffers: int
    subgroup_size: int
    subgroup_operations: int
    device_uuid: bytes
    min_imported_host_pointer_alignment: int = 0
    max_push_descriptors: int = 0

    @classmethod
    def from_kp(cls, index: int, p: dict) -> "DeviceInfo":
        return cls(index, p["device_name"], DEVICE_TYPES.get(p["device_type"], "other"),
                   p["max_storage_buffer_range"], p["max_push_constants_size"], tuple(p["max_work_group_count"]),
                   tuple(p["max_work_group_size"]), p["max_work_group_invocations"], p["timestamp_period"],
                   tuple(tuple(h) for h in p["memory_heaps"]), tuple(tuple(t) for t in p["memory_types"]),
                   p["vendor_id"], p["vendor_device_id"], p["driver_version"], bytes(p["pipeline_cache_uuid"]),
                   frozenset(name for name, has in p["features"].items() if has), p["max_memory_allocation_size"],
                   p["max_buffer_size"], p["max_compute_shared_memory_size"],
                   p["max_per_stage_descriptor_storage_buffers"], p["subgroup_size"], p["subgroup_operations"],
                   bytes(p["device_uuid"]), p.get("min_imported_host_pointer_alignment", 0),
                   p.get("max_push_descriptors", 0))

    @property
    def device_memory(self) -> int:
        """Bytes of the largest device-local memory heap."""
        return max((size for size, flags in self.memory_heaps if flags & HEAP_DEVICE_LOCAL), default=0)

    def has_memory(self, flags: int) -> bool:
        """True when some memory type has all of these VkMemoryPropertyFlags."""
        return any(t & flags == flags for t, _ in self.memory_types)

    def gpu_choice(self, switch: bool | None) -> bool:
        """A plan's choice that measured faster on GPUs and slower on CPU devices (lavapipe): ``switch`` where it
        is a bool (tests force it so on every device), else whether this is no CPU device."""
        return switch if switch is not None else self.type != "CPU"

    @property
    def unified_memory(self) -> bool:
        """True for a device whose device-local memory is the host's own (a CPU or an integrated GPU) and can
        be mapped: dmlgpu then reads and writes buffers directly, without staging copies. (A discrete GPU's
        host-visible device memory, behind the PCIe BAR, is slow to read from the host: staging it is.)"""
        return self.type in ("CPU", "integrated GPU") and self.has_memory(DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT)


_devices_cache: list | None = None
_spare_manager = None     # the kp.Manager that listed the devices (it opened device 0): the first Device(0) takes it
_devices_lock = threading.Lock()


def devices() -> list[DeviceInfo]:
    """The Vulkan devices, with the limits that matter to dmlgpu (``python -m dmlgpu info`` prints them).

    Returns
    -------
    list of DeviceInfo
        In Vulkan's order: a device's index in it is what ``Device(index)`` and ``device=`` take.

    Raises
    ------
    dmlgpu.DeviceError
        No Vulkan device, or no usable kp.

    Examples
    --------
    >>> import dmlgpu
    >>> [d.index for d in dmlgpu.devices()][:1]
    [0]
    """
    global _devices_cache, _spare_manager
    require_kp()
    with _devices_lock:
        if _devices_cache is None:
            if validation.requested():
                validation.enable()
            try:
                mgr = kp.Manager()
                listed = mgr.list_devices()
            except Exception as exc:
                raise DeviceError(f"no Vulkan device could be opened ({exc}); {INSTALL_HINT}") from None
            _devices_cache = [DeviceInfo.from_kp(i, p) for i, p in enumerate(listed)]
            _spare_manager = mgr
        return list(_devices_cache)


def open_manager(index: int, withheld: frozenset = frozenset()):
    """A kp.Manager on device ``index`` (the one that listed the devices, if it is device 0 and unused and no
    feature is ``withheld``: those are not enabled, kp patch 0018)."""
    global _spare_manager
    devices()
    with _devices_lock:
        if index == 0 and _spare_manager is not None and not withheld:
            mgr, _spare_manager = _spare_manager, None
            return mgr
    validation.next_instance()          # (the validation layer truncates the log file an instance opens)
    try:
        return kp.Manager(index, [], [], sorted(withheld))
    except Exception as exc:
        raise DeviceError(f"Vulkan device {index} could not be opened ({exc}); {INSTALL_HINT}") from None


def default_device_index() -> int:
    """DMLGPU_DEVICE if set, else the first discrete GPU, else the first device."""
    listed = devices()
    env = os.environ.get("DMLGPU_DEVICE")
    if env not in (None, ""):
        try:
            index = int(env)
        except ValueError:
            raise DeviceError(f"DMLGPU_DEVICE ({env!r}) must be a device index, 0 to {len(listed) - 1}") from None
        if not 0 <= index < len(listed):
            raise DeviceError(f"DMLGPU_DEVICE ({index}) must be a device index, 0 to {len(listed) - 1}")
        return index
    for info in listed:
        if info.type == "discrete GPU":
            return info.index
    return 0
