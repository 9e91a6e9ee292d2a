"""Build Kompute's Python module ``kp`` 0.9.0 offline, with dmlgpu's patches, into the running interpreter.

Everything that fought back when building kp lives here, in one place:

* kp 0.9.0 on PyPI is a source distribution whose CMake clones its dependencies from GitHub. The
  ``KOMPUTE_OPT_USE_BUILT_IN_*=OFF`` switches make it use the system's Vulkan headers, fmt and pybind11
  instead (Debian: libvulkan-dev, libfmt-dev, pybind11-dev).
* Its setup.py glues ``-DPYTHON_EXECUTABLE=...`` onto the previous flag (a missing comma), so CMake
  picks whatever Python it finds first. The patch below restores the comma and also names the
  interpreter for CMake's newer FindPython modules.
* kp's Release build still compiles in its debug-layer code: it turns on VK_LAYER_KHRONOS_validation
  whenever that layer is installed and routes every message to a debug log that is off. We build with
  ``KOMPUTE_OPT_DISABLE_VK_DEBUG_LAYERS=ON``; dmlgpu enables the layer itself through the Vulkan loader
  when asked to (``DMLGPU_VALIDATION=1``), so its messages reach a log file we read (dmlgpu/validation.py).
* ``OpAlgoDispatch`` records only a transfer-to-compute barrier, so two dependent dispatches in one
  Sequence are not ordered. The C++ library has ``OpMemoryBarrier``; the patch exposes it to Python with
  plain integer Vulkan flags, and dmlgpu records the compute-to-compute barriers it needs.
* The Python binding of ``Sequence.eval_async()`` (no argument) runs ``eval()``, which blocks; the patch
  makes it asynchronous and lets ``eval``/``eval_await`` release the GIL while they wait.
* ``get_device_properties``/``list_devices`` report only a few limits; the patch adds the device type,
  maxStorageBufferRange, maxPushConstantsSize, the shared-memory size and the timestamp period.
* ``get_device_properties``/``list_devices`` report only a few limits; the patch adds the device type,
  maxStorageBufferRange, maxPushConstantsSize, the shared-memory size and the timestamp period.
* The Manager keeps a weak reference to every tensor, algorithm and sequence it made and forgets the
  expired ones only in ``clear()``, which Python cannot call: the patch exposes it (dmlgpu calls it
  now and then, so that host memory stays flat over many operations).
* Each ``Sequence.evalAsync`` created a new fence and ``evalAwait`` destroyed it: on an H200 (in a VM) that
  alone made every submission cost about 550 us. The patch keeps one fence per Sequence and resets it.
  ``evalAwait`` also polls the fence for a short while (``DMLGPU_KP_SPIN_US``, default 2000 us) before
  blocking in vkWaitForFences.
* A Sequence recorded again begins its command buffer again, which Vulkan allows only for command pools
  made with the reset flag: the patch sets it, so dmlgpu can reuse one Sequence for its submissions.

Usage: ``python tools/build_kp.py [--sdist PATH]``. It does nothing when the patched kp is already
importable. The patch level is ``kp.__dmlgpu_patch__``; dmlgpu refuses an unpatched kp.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

PATCH_LEVEL = 4
KP_VERSION = "0.9.0"

# (file, old text, new text): each old text must occur exactly once.
PATCHES = [
    ("setup.py",
     "'-DKOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON'\n",
     "'-DKOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON',\n"
     "                      '-DPython_EXECUTABLE=' + sys.executable,\n"
     "                      '-DPython3_EXECUTABLE=' + sys.executable,\n"),
    ("setup.py", '"numpy<2.0.0"', '"numpy"'),
    ("src/Sequence.cpp",
     "    vk::Result result =\n      this->mDevice->waitForFences(1, &this->mFence, VK_TRUE, waitFor);\n",
     "    vk::Result result = vk::Result::eNotReady;\n"
     "    {\n"
     "        // dmlgpu: poll the fence for a while before blocking; a blocking wait's wake-up is slow.\n"
     "        static const long spinUs = [] {\n"
     "            const char* v = std::getenv(\"DMLGPU_KP_SPIN_US\");\n"
     "            return v ? std::atol(v) : 2000L;\n"
     "        }();\n"
     "        auto start = std::chrono::steady_clock::now();\n"
     "        while (spinUs > 0) {\n"
     "            result = this->mDevice->getFenceStatus(this->mFence);\n"
     "            if (result != vk::Result::eNotReady) break;\n"
     "            if (std::chrono::steady_clock::now() - start > std::chrono::microseconds(spinUs)) break;\n"
     "        }\n"
     "    }\n"
     "    if (result != vk::Result::eSuccess)\n"
     "        result = this->mDevice->waitForFences(1, &this->mFence, VK_TRUE, waitFor);\n"),
    ("src/Sequence.cpp",
     '#include "kompute/Sequence.hpp"\n',
     '#include "kompute/Sequence.hpp"\n#include <chrono>\n#include <cstdlib>\n'),
    # One fence per Sequence, reset before each submission, instead of a new fence per submission
    # (creating and destroying fences cost about 550 us per round trip on an H200 in a VM).
    ("src/include/kompute/Sequence.hpp",
     "    vk::Fence mFence;\n",
     "    vk::Fence mFence;\n    bool mFenceCreated = false;\n"),
    ("src/Sequence.cpp",
     "    this->mFence = this->mDevice->createFence(vk::FenceCreateInfo());\n",
     "    if (!this->mFenceCreated) {\n"
     "        this->mFence = this->mDevice->createFence(vk::FenceCreateInfo());\n"
     "        this->mFenceCreated = true;\n"
     "    } else {\n"
     "        (void)this->mDevice->resetFences(1, &this->mFence);\n"
     "    }\n"),
    ("src/Sequence.cpp",
     "    this->mDevice->destroy(\n      this->mFence, (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n\n"
     "    this->mIsRunning = false;\n",
     "    this->mIsRunning = false;\n"),
    ("src/Sequence.cpp",
     "    if (this->mFreeCommandBuffer) {\n        KP_LOG_INFO(\"Freeing CommandBuffer\");\n",
     "    if (this->mFenceCreated) {\n"
     "        this->mDevice->destroy(this->mFence, (vk::Optional<const vk::AllocationCallbacks>)nullptr);\n"
     "        this->mFenceCreated = false;\n"
     "    }\n\n"
     "    if (this->mFreeCommandBuffer) {\n        KP_LOG_INFO(\"Freeing CommandBuffer\");\n"),
    # Re-recording a Sequence begins its command buffer again: legal only from a resettable pool.
    ("src/Sequence.cpp",
     "    vk::CommandPoolCreateInfo commandPoolInfo(vk::CommandPoolCreateFlags(),\n",
     "    vk::CommandPoolCreateInfo commandPoolInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,\n"),
    ("python/src/main.cpp",
     '      .def(\n        "eval_async",\n        [](kp::Sequence& self) { return self.eval(); },\n',
     '      .def(\n        "eval_async",\n        [](kp::Sequence& self) { return self.evalAsync(); },\n'),
    ("python/src/main.cpp",
     '        [](kp::Sequence& self) { return self.eval(); },\n        DOC(kp, Sequence, eval))',
     '        [](kp::Sequence& self) { return self.eval(); },\n'
     '        py::call_guard<py::gil_scoped_release>(),\n        DOC(kp, Sequence, eval))'),
    ("python/src/main.cpp",
     '        [](kp::Sequence& self) { return self.evalAwait(); },\n',
     '        [](kp::Sequence& self) { return self.evalAwait(); },\n'
     '        py::call_guard<py::gil_scoped_release>(),\n'),
    ("python/src/main.cpp",
     '    py::class_<kp::OpMult, kp::OpBase, std::shared_ptr<kp::OpMult>>(',
     '    m.attr("__dmlgpu_patch__") = ' + str(PATCH_LEVEL) + ';\n'
     '    py::class_<kp::OpMemoryBarrier, kp::OpBase, std::shared_ptr<kp::OpMemoryBarrier>>(\n'
     '      m, "OpMemoryBarrier", "Pipeline barrier on the tensors\' buffers; masks are Vulkan flag bits.")\n'
     '      .def(py::init([](const std::vector<std::shared_ptr<kp::Tensor>>& tensors,\n'
     '                       uint32_t srcAccess, uint32_t dstAccess,\n'
     '                       uint32_t srcStage, uint32_t dstStage) {\n'
     '               return std::make_shared<kp::OpMemoryBarrier>(\n'
     '                 tensors, static_cast<vk::AccessFlagBits>(srcAccess),\n'
     '                 static_cast<vk::AccessFlagBits>(dstAccess),\n'
     '                 static_cast<vk::PipelineStageFlagBits>(srcStage),\n'
     '                 static_cast<vk::PipelineStageFlagBits>(dstStage), true);\n'
     '           }),\n'
     '           py::arg("tensors"), py::arg("src_access"), py::arg("dst_access"),\n'
     '           py::arg("src_stage"), py::arg("dst_stage"));\n\n'
     '    py::class_<kp::OpMult, kp::OpBase, std::shared_ptr<kp::OpMult>>('),
    ("python/src/main.cpp",
     '      .def("destroy", &kp::Manager::destroy, DOC(kp, Manager, destroy))\n',
     '      .def("destroy", &kp::Manager::destroy, DOC(kp, Manager, destroy))\n'
     '      .def("clear", &kp::Manager::clear, "Forgets the expired tensors, algorithms and sequences.")\n'),
    ("python/src/utils.hpp",
     '      "timestamps_supported"_a =\n        (bool)properties.limits.timestampComputeAndGraphics);\n',
     '      "timestamps_supported"_a =\n        (bool)properties.limits.timestampComputeAndGraphics,\n'
     '      "device_type"_a = static_cast<int>(properties.deviceType),\n'
     '      "api_version"_a = properties.apiVersion,\n'
     '      "vendor_id"_a = properties.vendorID,\n'
     '      "max_storage_buffer_range"_a = properties.limits.maxStorageBufferRange,\n'
     '      "max_push_constants_size"_a = properties.limits.maxPushConstantsSize,\n'
     '      "max_compute_shared_memory_size"_a = properties.limits.maxComputeSharedMemorySize,\n'
     '      "timestamp_period"_a = properties.limits.timestampPeriod);\n'),
]

ENV = {
    "KOMPUTE_OPT_INSTALL": "OFF",
    "KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER": "OFF",
    "KOMPUTE_OPT_USE_BUILT_IN_FMT": "OFF",
    "KOMPUTE_OPT_USE_BUILT_IN_PYBIND11": "OFF",
    "KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK": "ON",
    "KOMPUTE_OPT_DISABLE_VK_DEBUG_LAYERS": "ON",
}


def installed_patch_level() -> int | None:
    code = "import kp; print(getattr(kp, '__dmlgpu_patch__', 0))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 else None


def fetch_sdist(dest: pathlib.Path) -> pathlib.Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    "-d", str(dest), f"kp=={KP_VERSION}"], check=True)
    return next(dest.glob(f"kp-{KP_VERSION}.tar.gz"))


def apply_patches(src: pathlib.Path) -> None:
    for rel, old, new in PATCHES:
        path = src / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"build_kp: patch for {rel} does not apply (expected text found {text.count(old)} times)")
        path.write_text(text.replace(old, new))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", help="kp-0.9.0.tar.gz to build (default: download it from PyPI)")
    ap.add_argument("--target", help="install into this folder instead of the interpreter's site-packages")
    ap.add_argument("--force", action="store_true", help="rebuild even if the patched kp is importable")
    args = ap.parse_args()
    if not args.force and not args.target and installed_patch_level() == PATCH_LEVEL:
        print(f"kp {KP_VERSION} (dmlgpu patch {PATCH_LEVEL}) is already installed")
        return 0
    with tempfile.TemporaryDirectory(prefix="dmlgpu-kp-") as tmp:
        tmp = pathlib.Path(tmp)
        sdist = pathlib.Path(args.sdist) if args.sdist else fetch_sdist(tmp)
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp / "src")
        src = next((tmp / "src").glob("kp-*"))
        apply_patches(src)
        env = dict(os.environ, **ENV)
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(src)]
        if args.target:
            cmd += ["--target", args.target, "--upgrade"]
        print(f"building kp {KP_VERSION} with dmlgpu patch {PATCH_LEVEL} (about a minute)...", flush=True)
        subprocess.run(cmd, check=True, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
