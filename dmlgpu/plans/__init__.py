"""Planning: from tensor layouts to the dispatches that run an operation. Index maps (index_map.py, the host half of
shaders/index_map.glsl), the Plan interface and the gather, scatter and copy plans (plan.py; the large-tensor
variants' parameters: addressing.py), SCATTER_ELEMENTS by lines (scatter_lines.py), the plan of each operator, which
both layers call (ops.py: ``PLANS``), the radix sort (radix_sort.py) and the scatter reductions (reduction*.py).
May import: errors, kernels, runtime."""
