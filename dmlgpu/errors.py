"""Exceptions raised by dmlgpu."""


class DescError(ValueError):
    """A tensor or operator descriptor breaks a rule of its DirectML page; the message names the member
    and the rule, e.g. ``IndicesTensor.DimensionCount (3) must match InputTensor.DimensionCount (4)``.

    Examples
    --------
    >>> import dmlgpu
    >>> dmlgpu.TensorDesc(dmlgpu.DataType.INT8, [1, 0])
    Traceback (most recent call last):
    dmlgpu.errors.DescError: TensorDesc.Sizes[1] (0) must be in [1, 2^32-1]: a size of zero is invalid
    """


class DeviceError(RuntimeError):
    """No usable Vulkan device, a closed device, a Tensor or buffer of another Device, or a device limit
    exceeded (the message names the sizes).

    Examples
    --------
    >>> import numpy as np, dmlgpu
    >>> dev = dmlgpu.Device(0)
    >>> dev.close()
    >>> dmlgpu.gather(np.arange(3), [0], device=dev)
    Traceback (most recent call last):
    dmlgpu.errors.DeviceError: gather: device 0 (...) is closed
    """
