"""What the pictures share: figure creation, PNG bytes, byte-count labels."""
from __future__ import annotations

import io

from advisor.extras import require

require("matplotlib", "drawing the access map and the cost chart")

WIDTH_IN = 11.0
"""Figure width in inches at DPI: 1100 px, the HTML report's column, drawn 1:1 (text stays sharp)."""
DPI = 100


def new_figure(height_in: float):
    """A figure not attached to pyplot (works whatever backend the session uses)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH_IN, height_in), dpi=DPI)


def png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def save(fig, path) -> None:
    """Write the figure; the format follows the file name (png, svg, pdf, ...)."""
    fig.savefig(path, dpi=DPI)


def bytes_label(n: float, _pos=None) -> str:
    """1.5 MB, 320 KB, 12 B (decimal units, as ``trace show`` prints them)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.3g} B"
