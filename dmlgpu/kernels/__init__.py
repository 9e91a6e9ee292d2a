"""The kernel variants: the one table of every compiled shader variant (table.py: ``VARIANTS``, the workgroup
geometries, the name functions the plans call), which CMakeLists.txt runs as a script to compile the shaders, and
their SPIR-V with what each asks of a device (spirv.py). May import: nothing of dmlgpu (table.py runs alone, as the
build's script; spirv.py reads table.py and dmlgpu/shaders/)."""
