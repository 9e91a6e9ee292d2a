"""dmlgpu's benchmark harness: ``python -m dmlgpu bench`` (see ``python -m dmlgpu bench --help``); also
``python -m dmlgpu bench roundtrip`` (eager calls end to end, bench.roundtrip) and ``python -m dmlgpu bench
reductions`` (scatter reductions, bench.reductions).

Runs each operator on named workloads (bench.workloads), times dmlgpu on the GPU with Vulkan timestamps
(bench.gpu_timing), times a peer on the same data in the same process (bench.peers: PyTorch on CUDA when
available, else NumPy), checks every dmlgpu result against the peer's, measures small-op latency
(bench.latency), and writes a table, JSON, Markdown and a PNG plot (bench.report, bench.plot).
"""
