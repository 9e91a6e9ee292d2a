#!/usr/bin/env bash
# Quick start, step 2: brings the build up to date (as scripts/setup.sh, without the demo), type-checks the
# package (mypy, configured in pyproject.toml) and runs the whole test suite, the docstrings' examples
# included (doctests), on the default Vulkan device (lavapipe without a GPU), with the Khronos validation
# layer (synchronization validation included) on: any message it reports fails the run
# (DMLGPU_VALIDATION=0 turns it off), and builds the documentation (scripts/docs.sh: warnings are errors).
# Extra arguments go to pytest (and skip the slices and the documentation).
# Without extra arguments it also reruns (in a second process beside the suite, their output after its) the Tensor,
# transfer and recording tests with DMLGPU_DIRECT_MEMORY=0
# (the default device then moves bytes through staging, as on discrete GPUs), the queue's tests with eager
# submission (DMLGPU_EAGER_SUBMIT=1), and runs the device-profile slice (dmlgpu/runtime/profiles.py, README's device
# feature matrix): every operator, a reduction, recordings and queued calls under the "minimum" profile (Vulkan
# 1.1's required limits, no optional feature), and the property and reduction tests under profiles between minimum
# and full (without the long-input reduction tests: `long_reductions` below). tests/test_profiles.py opens a device
# of each profile itself, so it runs once, whatever DMLGPU_DEVICE_PROFILE says.
# The bench harness's, layering, typing, SPIR-V, large-tensor, profile and block-addressing tests (`moved` below) run
# in that second process too, not in the suite's: the two processes then take about as long as each other.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-demo
export DMLGPU_VALIDATION="${DMLGPU_VALIDATION:-1}"
if [ $# -gt 0 ]; then
    .venv/bin/python -m mypy
    exec .venv/bin/python -m pytest -q "$@"
fi

# Test files run beside the suite (in the slices' process) instead of in it, and the slow reduction tests whose long
# inputs the profile slices skip (every plan they reach is reached by the shorter tests there: the same kernels).
moved=(tests/test_bench.py tests/test_imports.py tests/test_typing.py tests/test_kernels.py tests/test_large.py
       tests/test_profiles.py tests/test_addressed.py)
long_reductions="(partials_default_chunks_long_run or many_tiles_scan_carry or tree_order_bit_exact"
long_reductions+=" or narrow_floats_sequential_runs)"
profile_skips="(mean_bit_exact or include_self_false_every_dtype)"    # (the profile slices': the minimum one runs them)

# The slices (and mypy) run in a second process beside the suite (two cores: each keeps one busy; lavapipe's
# compiles and most tests' host work use one thread); their output follows the suite's.
slices() {
    set +e
    status=0
    .venv/bin/python -m mypy || status=1
    echo "== the bench harness, layering, typing, SPIR-V, large-tensor, profile and block-addressing tests (here, not in the suite)"
    .venv/bin/python -m pytest -q -p no:cacheprovider "${moved[@]}" || status=1
    echo "== staging memory (DMLGPU_DIRECT_MEMORY=0: as every discrete GPU moves bytes)"
    DMLGPU_DIRECT_MEMORY=0 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_tensor.py tests/test_runtime.py \
        tests/test_queue.py tests/test_calls.py tests/test_index_modes.py -k "not warmup" || status=1    # (building
        # every pipeline moves no bytes)
    echo "== eager submission (DMLGPU_EAGER_SUBMIT=1, an opt-in)"
    DMLGPU_EAGER_SUBMIT=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_queue.py tests/test_calls.py \
        tests/test_launch.py tests/test_inplace.py || status=1
    echo "== device profile minimum"
    DMLGPU_DEVICE_PROFILE=minimum .venv/bin/python -m pytest -q -p no:cacheprovider \
        tests/test_gathers.py tests/test_scatters.py tests/test_layer1.py tests/test_queue.py tests/test_reductions.py \
        tests/test_reductions_gpu.py tests/test_calls.py tests/test_onnx.py tests/test_numpy_api.py tests/test_index_modes.py \
        -k "not held_in_several_blocks and not in_several_blocks and not $long_reductions and not fold_variants" \
        --deselect "tests/test_reductions.py::test_heavy_duplicates[" || status=1
        # (chunked tensors are refused there: no device addresses; the long reductions and the fold variants: their
        # plans run here in the other reduction tests and in test_profiles.py's minimum device, the same kernels at
        # lengths that only take longer)
    for profile in small-workgroups no-int64 no-device-address small-shared-memory few-buffers; do
        echo "== device profile $profile"
        DMLGPU_DEVICE_PROFILE=$profile .venv/bin/python -m pytest -q -p no:cacheprovider \
            -k "(fuzz or reduction) and not $long_reductions and not $profile_skips" \
            --deselect "tests/test_reductions.py::test_heavy_duplicates[" \
            tests/test_gathers.py tests/test_scatters.py tests/test_reductions.py || status=1
    done
    # The documentation site (its benchmarks page runs python -m dmlgpu bench --quick): warnings are errors. Here
    # rather than after the suite: the suite is the longer of the two processes.
    echo "== the documentation (scripts/docs.sh)"
    bash scripts/docs.sh || { echo "test.sh: the documentation build failed"; status=1; }
    return $status
}
log=$(mktemp -t dmlgpu-test-slices.XXXXXX)
trap 'rm -f "$log"' EXIT
slices > "$log" 2>&1 &
slices_pid=$!
echo "== the suite (mypy, the slices and the documentation build run beside it; their output follows)"
suite=0
.venv/bin/python -m pytest -q "${moved[@]/#/--ignore=}" || suite=$?
sliced=0
wait "$slices_pid" || sliced=$?
echo "== mypy, the slices and the documentation"
cat "$log"
if [ "$suite" -ne 0 ] || [ "$sliced" -ne 0 ]; then
    echo "test.sh: FAILED (suite exit $suite; mypy, a slice or the documentation build failed: $sliced)"
    exit 1
fi
