"""The runtime on a patched Kompute, which knows nothing of DirectML or of the operators (plans hand it Dispatches):
finding devices (discovery), device memory (memory: a caching allocator, and the part of a device its buffers
get), moving bytes (transfers), kernel pipelines (pipelines), buffers (buffer), the one launch form and its
encoder into kp commands (encode), the device composed of its parts (device): its queue of runs, replays and
transfers (submit), the batches of queued runs (batch), buffer access (access), scratch and admitted kernels
(scratch), its checks and their poison (checks); the launch contract every call path runs work through
(launch), recordings (recording), device profiles (profiles), the NVIDIA clock hold (clocks), memory shared with
other libraries (export: DLPack's views; cuda: the CUDA driver calls it needs) and the Vulkan validation layer
(validation). May import: errors, kernels."""
from .buffer import Buffer, as_bytes
from .checks import Marked, Watch
from .device import Device
from .encode import COPY, Dispatch
from .discovery import DeviceInfo, default_device_index, devices
from .launch import Prepared
from .recording import Recording

__all__ = ["COPY", "Buffer", "Device", "DeviceInfo", "Dispatch", "Marked", "Prepared", "Recording", "Watch", "as_bytes",
           "default_device_index", "devices"]
