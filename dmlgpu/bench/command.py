"""What the command lines (``python -m dmlgpu ...``) share: help texts made from the modules' docstrings (plain
text, not the reStructuredText the docstrings are written in; a description that is the docstring's whole first
paragraph, not its first line, which stops mid-sentence, and the rest as the epilog), the ``--device`` option and
its errors (a --device naming no device is a command-line error, exit status 2; no usable default device is
python -m dmlgpu's status 1), comma-separated choices checked as argparse checks choices (exit status 2)."""
from __future__ import annotations

import argparse
import re


def plain(text: str) -> str:
    """``text`` without reStructuredText's markup: ``code`` as code, *emphasis* as emphasis, a literal block's
    "::" as ":"."""
    text = re.sub(r"``(.+?)``", r"\1", text, flags=re.S)
    text = re.sub(r"(?<![\w*])\*(\w[^*\n]*?)\*(?![\w*])", r"\1", text)
    return re.sub(r"(\S)::$", r"\1:", text, flags=re.M)


def parser(prog: str, doc: str | None, **kwargs) -> argparse.ArgumentParser:
    """An ArgumentParser whose description is ``doc``'s first paragraph and whose epilog is the rest, both plain
    text with their line breaks kept."""
    paragraphs = plain((doc or "").strip()).split("\n\n")
    return argparse.ArgumentParser(prog=prog, description=paragraphs[0],
                                   epilog="\n\n".join(paragraphs[1:]) or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


DEVICE_HELP = "the Vulkan device index (python -m dmlgpu info lists them); default: DMLGPU_DEVICE, else the first " \
              "discrete GPU, else the first device"


def open_device(ap: argparse.ArgumentParser, index: int | None):
    """dmlgpu.Device(index); a DeviceError for a given ``index`` is ``ap``'s usage error (exit status 2)."""
    import dmlgpu
    from ..errors import DeviceError
    try:
        return dmlgpu.Device(index)
    except DeviceError as e:
        if index is None:
            raise
        ap.error(f"--device {index}: {e}")


def listed(choices, convert=None):
    """An argparse ``type`` for a comma-separated list of ``choices`` (or, without them, of what ``convert``
    takes): a bad item is a usage error naming the choices (exit status 2), as argparse's ``choices`` are."""
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError("an empty list")
        out = []
        for item in items:
            if choices is not None and item not in choices:
                raise argparse.ArgumentTypeError(f"invalid choice: {item!r} (choose from {', '.join(choices)})")
            try:
                out.append(convert(item) if convert else item)
            except (TypeError, ValueError, AttributeError, ImportError) as e:
                raise argparse.ArgumentTypeError(f"invalid value {item!r}: {e}") from None
        return out
    return parse
