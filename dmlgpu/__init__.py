"""dmlgpu: DirectML's gather/scatter operators as Vulkan compute shaders, through Kompute.

Layer 1 (DirectML-faithful): TensorDesc, GatherDesc, GatherElementsDesc, GatherNDDesc, GatherND1Desc,
ScatterNDDesc, ScatterElementsDesc, Device.compile(desc).execute(...) on Device.buffer()s.
Layer 2 (NumPy-style, ONNX semantics): gather, gather_elements, gather_nd, scatter_nd, scatter_elements,
on NumPy arrays or device-resident Tensors (tensor(), asarray(), empty(), zeros(), ones(), full(), their
*_like forms; from_dlpack(), and Tensor.__dlpack__, share memory with NumPy, PyTorch, CuPy and JAX where the
device can); Device.record() batches operations into one submission. NumPy's names with NumPy's semantics: take,
take_along_axis, put_along_axis, and NumPy's indexing of Tensors (t[ids], t[ids] = v, np.add.at, JAX's t.at[]).
Gather and reduce in one pass: segment_reduce, embedding_bag, gather_scatter. An ONNX backend
(onnx.backend.base.Backend, needs the onnx package): dmlgpu.onnx.
"""
from .layer1.dtypes import DataType, FeatureLevel
from .errors import DescError, DeviceError
from .api.functions import gather, gather_elements, gather_nd, scatter_elements, scatter_nd
from .api.numpy_api import put_along_axis, take, take_along_axis
from .api.fused import EdgeGroups, embedding_bag, segment_reduce
from .api.fused_gather_scatter import gather_scatter
from .api import indexing as _indexing  # noqa: F401  (Tensor[] with index arrays, ufunc.at)
from .api import indexing_at as _indexing_at  # noqa: F401  (Tensor.at)
from .layer1.descriptors import (CompiledOperator, GatherDesc, GatherElementsDesc, GatherND1Desc, GatherNDDesc,
                                 ScatterElementsDesc, ScatterNDDesc)
from .api.device import Device, default_device
from .runtime import Buffer, DeviceInfo, Recording, devices
from .api.constructors import asarray, empty, empty_like, full, full_like, ones, ones_like, tensor, zeros, zeros_like
from .api.tensor import Tensor
from .api.dlpack import from_dlpack
from .layer1.tensor_desc import TensorDesc

__version__ = "0.1.0"

__all__ = [
    "Buffer", "CompiledOperator", "Recording", "Tensor", "asarray", "empty", "empty_like", "from_dlpack", "full",
    "full_like",
    "ones", "ones_like", "tensor", "zeros", "zeros_like", "DataType", "DescError", "Device", "DeviceError",
    "DeviceInfo", "FeatureLevel",
    "GatherDesc", "GatherElementsDesc", "GatherND1Desc", "GatherNDDesc", "ScatterElementsDesc", "ScatterNDDesc",
    "TensorDesc", "default_device", "devices", "gather", "gather_elements", "gather_nd", "scatter_elements",
    "scatter_nd", "put_along_axis", "take", "take_along_axis", "EdgeGroups", "embedding_bag", "gather_scatter",
    "segment_reduce",
]
