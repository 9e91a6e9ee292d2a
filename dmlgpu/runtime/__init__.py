"""The runtime on a patched Kompute: finding devices (devices), device memory (memory: a caching allocator),
moving bytes (transfers), kernel pipelines (pipelines), running and recording dispatches (device,
recording). It knows nothing of DirectML or of the operators: plans hand it Dispatches."""
from .device import Buffer, Device, Dispatch, as_bytes
from .devices import DeviceInfo, default_device_index, devices
from .recording import Recording

__all__ = ["Buffer", "Device", "DeviceInfo", "Dispatch", "Recording", "as_bytes", "default_device_index", "devices"]
