"""Layer 2 and what users hold: the public Device (device.py: the runtime's device with DirectML's feature level and
compile()), the Tensor (tensor.py, its views, indexing and protocols: tensor_*.py) and its constructors, the
NumPy-style functions with ONNX semantics (functions.py; their signatures, argument checks and shared docstring
parts), the generic driver a function calls (driver.py) with its caches of planned calls (execution.py) and call
templates (call_templates.py), NumPy's names (numpy_api.py), items of any size (items.py) and foreign arrays
(interop.py). May import: errors, kernels, runtime, plans, layer1."""
