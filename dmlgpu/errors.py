"""Exceptions raised by dmlgpu."""


class DescError(ValueError):
    """A tensor or operator descriptor breaks a rule of its DirectML page; the message names the member
    and the rule, e.g. ``IndicesTensor.DimensionCount (3) must match InputTensor.DimensionCount (4)``."""


class DeviceError(RuntimeError):
    """No usable Vulkan device, a closed device, a buffer from another device, or a device limit exceeded."""
