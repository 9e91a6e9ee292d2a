"""The runtime on a patched Kompute: finding devices (devices), device memory (memory: a caching allocator),
moving bytes (transfers), kernel pipelines (pipelines), buffers and launches (buffer), running dispatches
(device), the batches of queued runs (batch), recordings (recording). It knows nothing of DirectML or of the operators: plans hand it Dispatches."""
from .buffer import COPY, Buffer, Dispatch, as_bytes
from .device import Device
from .devices import DeviceInfo, default_device_index, devices
from .recording import Recording

__all__ = ["COPY", "Buffer", "Device", "DeviceInfo", "Dispatch", "Recording", "as_bytes", "default_device_index", "devices"]
