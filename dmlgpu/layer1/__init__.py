"""Layer 1, DirectML's fixed operator set: the tensor descriptors (tensor_desc.py), data types and feature levels
(dtypes.py), the operator descriptors (descriptors.py) validated rule by rule (rules.py) and planned by plans/ops.py,
the compiled operators (compiled.py) and the DirectML pages' worked examples (examples.py). May import: errors,
kernels, runtime, plans."""
