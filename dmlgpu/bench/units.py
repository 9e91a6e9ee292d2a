"""Byte sizes: parsing ("4K", "256M", "1G": binary multiples) and formatting."""
from __future__ import annotations

_SUFFIXES = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
             "G": 2**30, "GB": 2**30, "GIB": 2**30}


def parse_size(text: str) -> int:
    """Bytes in ``text``: a whole number with an optional binary suffix, e.g. "4096", "4K", "1.5M", "1GiB"."""
    s = text.strip().upper()
    digits = s.rstrip("KMGIB")
    suffix = s[len(digits):]
    if suffix not in _SUFFIXES or not digits:
        raise ValueError(f"not a size: {text!r} (examples: 4K, 256M, 1G)")
    value = float(digits) * _SUFFIXES[suffix]
    if value < 1 or value != int(value):
        raise ValueError(f"not a whole, positive number of bytes: {text!r}")
    return int(value)


def parse_sizes(text: str) -> list[int]:
    """A comma-separated list of sizes, in bytes, sorted and without duplicates."""
    return sorted({parse_size(part) for part in text.split(",") if part.strip()})


def fmt_bytes(n: float) -> str:
    """A short binary size: 4 KiB, 1.5 MiB, 1 GiB (bytes below 1 KiB as "512 B")."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if abs(value - round(value)) < 0.05 else f"{value:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_number(x: float | None, digits: int = 3) -> str:
    """A number with about ``digits`` significant digits ("-" for None)."""
    if x is None:
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"
