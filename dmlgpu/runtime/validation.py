"""Vulkan validation for dmlgpu's own checks: the Khronos validation layer, synchronization validation
included, writing every message to a log file that this module reads.

Kompute registers no message callback in the build tools/build_kp.py makes, so the layer's own logging
(to a file, configured through a vk_layer_settings.txt) sees every message. The layer must be enabled
before the first Vulkan instance is created: set DMLGPU_VALIDATION=1 in the environment (dmlgpu enables
it when it first opens Vulkan), or call enable() before using any device.

The layer truncates its log file whenever an instance opens it (it reads its settings once per process, so
every instance writes the same file), and every dmlgpu.Device has an instance of its own: before each instance
is created, the runtime calls next_instance(), which keeps what the log holds so far, and messages() reads
what was kept and what the log holds now (an earlier instance may go on writing past the truncated end: the
gap reads as NUL bytes, which are dropped).
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
_kept: list[str] = []      # the log's text before each truncation


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
    os.environ["VK_LAYER_SETTINGS_PATH"] = str(folder / "vk_layer_settings.txt")
    pathlib.Path(os.environ["VK_LAYER_SETTINGS_PATH"]).write_text(
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG\n"
        f"khronos_validation.log_filename = {log}\n"
        "khronos_validation.report_flags = error,warn,perf\n"
        "khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT\n")
    layers = [x for x in os.environ.get("VK_INSTANCE_LAYERS", "").split(":") if x]
    os.environ["VK_INSTANCE_LAYERS"] = ":".join(layers + [LAYER] if LAYER not in layers else layers)
    _log = log
    return log


def _read() -> str:
    return _log.read_text(errors="replace").replace("\0", "") if _log is not None and _log.exists() else ""


def next_instance() -> None:
    """Before a Vulkan instance is created: keeps what the log holds (the new instance truncates it)."""
    if _log is not None:
        _kept.append(_read())


def log_path() -> pathlib.Path | None:
    return _log


def messages() -> list[str]:
    """The messages the layer has reported so far (one string each), or [] when it is not enabled."""
    text = "\n".join(_kept + [_read()])
    return [m.strip() for m in re.split(r"\n(?=\S)", text) if m.strip() and not m.startswith(" ")]
