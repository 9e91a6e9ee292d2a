"""Layer 1's compiled operators: a descriptor validated for a device (CompiledOperator), run on its buffers."""
from __future__ import annotations

from .rules import OperatorDesc
from ..errors import DeviceError
from ..runtime import Buffer, Device


class CompiledOperator:
    """An operator descriptor validated for a device; execute() runs it on that device's buffers.

    execute() takes the buffers by name (``input``, ``indices``, ``output`` and, for scatters,
    ``updates``); each must hold at least its TensorDesc's TotalTensorSizeInBytes. A scatter's output may
    be the input's buffer (an in-place update, no copy). It returns when the GPU has finished.

    Parameters
    ----------
    device : dmlgpu.Device
    desc : an operator descriptor (GatherDesc, ...)

    Raises
    ------
    TypeError
        ``desc`` is no operator descriptor.
    dmlgpu.DescError
        ``desc`` breaks a rule at the device's feature level.

    Examples
    --------
    See Device.compile(), which makes them.
    """

    def __init__(self, device: Device, desc: OperatorDesc):
        if not isinstance(desc, OperatorDesc):
            raise TypeError(f"compile() takes an operator descriptor such as dmlgpu.GatherDesc, "
                            f"not {type(desc).__name__}")
        self.device = device
        self.desc = desc
        # a dmlgpu.Device (api/device.py, a layer above) carries the DirectML feature level that layer 1 follows
        self.plan = desc.plan(device.feature_level)  # type: ignore[attr-defined]

    def execute(self, **buffers: Buffer) -> None:
        """Runs the operator on this device's buffers and waits for the GPU.

        Parameters
        ----------
        **buffers : dmlgpu.Buffer
            By name: ``input``, ``indices``, ``output`` and, for scatters, ``updates``; each holding at least
            its TensorDesc's TotalTensorSizeInBytes. A scatter's output may be the input's buffer (in place).

        Raises
        ------
        TypeError
            A buffer missing or unknown, or not a Buffer of this device.
        ValueError
            A buffer too small, or an output over an input it may not overwrite.

        Examples
        --------
        See Device.compile().
        """
        desc = self.desc
        missing = [n for n in desc.BINDINGS if n not in buffers]
        unknown = [n for n in buffers if n not in desc.BINDINGS]
        if missing or unknown:
            raise TypeError(f"{desc.OPERATOR}.execute() takes the buffers {', '.join(desc.BINDINGS)}"
                            + (f"; missing: {', '.join(missing)}" if missing else "")
                            + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
        for attr, member, _ in desc.TENSORS:
            buf = buffers[attr]
            if not isinstance(buf, Buffer):
                raise TypeError(f"{attr} must be a dmlgpu.Buffer (Device.buffer()), not {type(buf).__name__}")
            if buf.device is not self.device:
                raise DeviceError(f"{attr} is a buffer of another device ({buf.device.info.name})")
            need = getattr(desc, attr).total_size_in_bytes
            if buf.nbytes < need:
                raise ValueError(f"{attr} holds {buf.nbytes} bytes; {member}.TotalTensorSizeInBytes is {need}")
        out = buffers["output"]
        for name in ("indices", "updates") + (() if self.plan.output_from_input else ("input",)):
            if buffers.get(name) is out:
                raise ValueError(f"{desc.OPERATOR} cannot write its output over its {name}: bind another buffer")
        if out is buffers["input"] and (desc.output.sizes, desc.output.element_strides) != (
                desc.input.sizes, desc.input.element_strides):
            raise ValueError(f"{desc.OPERATOR} in place (output bound to the input's buffer) needs OutputTensor "
                             f"and InputTensor of the same sizes and strides")
        with self.device.launch() as launch:
            dispatches, uploads = self.plan.dispatches(self.device, take=launch.scratch, **buffers)
            launch.run(dispatches, uploads=uploads)
