"""The PNG plot: GB/s against bytes moved (log-log), one panel per workload group, one line per workload for
dmlgpu (solid) and for the peer (dashed, same colour), and the copy shader (grey, dotted) for reference.
Needs matplotlib; ``plot`` returns None (and says why) when it cannot be imported."""
from __future__ import annotations

import math
import statistics
from pathlib import Path

from .units import fmt_bytes


def plot(results: dict, path: Path) -> str | None:
    """Writes the plot to ``path``; returns None, or the reason no plot was written."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"no plot: matplotlib is not importable ({exc}); pip install 'dmlgpu[bench]'"
    cases = [c for c in results["cases"] if "dmlgpu" in c]
    if not cases:
        return "no plot: no case was measured"
    groups = list(dict.fromkeys(c["group"] for c in cases))
    by_size: dict = {}
    for c in cases:          # the copy shader: one point per target size (median over its cases)
        by_size.setdefault(c["target_bytes"], []).append(c["copy"]["gbps"])
    copy = sorted((size, statistics.median(g)) for size, g in by_size.items())
    cols = min(3, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False)
    peer = results["meta"]["peer"]["name"]
    for ax, group in zip(axes.flat, groups):
        ax.plot([b for b, _ in copy], [g for _, g in copy], ":", color="grey", label="copy shader")
        names = list(dict.fromkeys(c["workload"] for c in cases if c["group"] == group))
        for i, name in enumerate(names):
            mine = sorted((c for c in cases if c["workload"] == name), key=lambda c: c["moved_bytes"])
            x = [c["moved_bytes"] for c in mine]
            color = f"C{i % 10}"
            ax.plot(x, [c["dmlgpu"]["gbps"] for c in mine], "o-", ms=3, color=color, label=f"{name} dmlgpu")
            ax.plot(x, [c["peer"]["gbps"] for c in mine], "x--", ms=3, color=color, label=f"{name} {peer}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = [b for b in (4**k * 1024 for k in range(1, 12)) if copy[0][0] / 2 <= b <= copy[-1][0] * 2]
        ax.set_xticks(ticks, [fmt_bytes(t) for t in ticks], fontsize=7, rotation=30)
        ax.set_title(group, fontsize=10)
        ax.set_xlabel("bytes moved", fontsize=8)
        ax.set_ylabel("GB/s", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    m = results["meta"]
    fig.suptitle(f"dmlgpu on {m['device']['name']} vs {peer} ({m['date'][:10]})", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
