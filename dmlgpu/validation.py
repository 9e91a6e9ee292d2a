"""Vulkan validation for dmlgpu's own checks: the Khronos validation layer, synchronization validation
included, writing every message to a log file that this module reads.

Kompute registers no message callback in the build tools/build_kp.py makes, so the layer's own logging
(to a file, configured through a vk_layer_settings.txt) sees every message. The layer must be enabled
before the first Vulkan instance is created: set DMLGPU_VALIDATION=1 in the environment (dmlgpu enables
it when it first opens Vulkan), or call enable() before using any device.
"""
from __future__ import annotations

import os
import pathlib
import re
import tempfile

LAYER = "VK_LAYER_KHRONOS_validation"
_MANIFEST_DIRS = ("/usr/share/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d",
                  "/etc/vulkan/explicit_layer.d")
_log: pathlib.Path | None = None


def requested() -> bool:
    return os.environ.get("DMLGPU_VALIDATION", "") not in ("", "0")


def available() -> bool:
    """True when the Khronos validation layer's manifest is installed (Debian: vulkan-validationlayers)."""
    dirs = list(_MANIFEST_DIRS) + [d for d in os.environ.get("VK_LAYER_PATH", "").split(os.pathsep) if d]
    return any(pathlib.Path(d, "VkLayer_khronos_validation.json").exists() for d in dirs)


def enable(log_path: str | os.PathLike | None = None) -> pathlib.Path:
    """Turns the layer on for instances created from now on; returns the log file's path."""
    global _log
    if _log is not None:
        return _log
    if not available():
        raise RuntimeError("the Khronos validation layer is not installed: apt-get install vulkan-validationlayers")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="dmlgpu-vvl-"))
    log = pathlib.Path(log_path) if log_path else folder / "validation.log"
    log.write_text("")
    (folder / "vk_layer_settings.txt").write_text(
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
        f"khronos_validation.log_filename = {log}\n"
        "khronos_validation.report_flags = error,warn,perf\n"
        "khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT\n")
    os.environ["VK_LAYER_SETTINGS_PATH"] = str(folder / "vk_layer_settings.txt")
    layers = [x for x in os.environ.get("VK_INSTANCE_LAYERS", "").split(":") if x]
    os.environ["VK_INSTANCE_LAYERS"] = ":".join(layers + [LAYER] if LAYER not in layers else layers)
    _log = log
    return log


def log_path() -> pathlib.Path | None:
    return _log


def messages() -> list[str]:
    """The messages the layer has reported so far (one string each), or [] when it is not enabled."""
    if _log is None or not _log.exists():
        return []
    text = _log.read_text(errors="replace")
    return [m.strip() for m in re.split(r"\n(?=\S)", text) if m.strip() and not m.startswith(" ")]
