"""The runtime on a patched Kompute, which knows nothing of DirectML or of the operators (plans hand it Dispatches):
finding devices (discovery), device memory (memory: a caching allocator), moving bytes (transfers), kernel pipelines
(pipelines), buffers (buffer), the device, its runs and scratch (device), the launch contract every call path
runs work through (launch), the batches of queued runs (batch), recordings (recording), device profiles (profiles),
the NVIDIA clock hold (clocks), memory shared with other libraries (export: DLPack's views; cuda: the CUDA
driver calls it needs) and the Vulkan validation layer (validation). May import: errors, kernels."""
from .buffer import COPY, Buffer, Dispatch, as_bytes
from .device import Device, Marked
from .discovery import DeviceInfo, default_device_index, devices
from .launch import Prepared
from .recording import Recording

__all__ = ["COPY", "Buffer", "Device", "DeviceInfo", "Dispatch", "Marked", "Prepared", "Recording", "as_bytes",
           "default_device_index", "devices"]
