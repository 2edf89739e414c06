"""Draw an ``advisor.accessmap.AccessMap``: bytes per chunk on the array (left) and a timeline of the positions
read and written (right), the recorded chunk grid and the recommended one drawn on both."""
from __future__ import annotations

import math

import numpy as np

from advisor.accessmap import AccessMap

from .common import bytes_label, new_figure, png_bytes, save

MAX_LINES = 60
"""Grid lines drawn per axis at most; a finer grid is drawn every k-th boundary (the legend says so)."""
READ_RGB = np.array([0.12, 0.40, 0.75])
WRITE_RGB = np.array([0.90, 0.40, 0.05])
CURRENT = dict(color="#333333", lw=0.6, alpha=0.75)
RECOMMENDED = dict(color="#d62728", lw=1.4, ls=(0, (4, 3)))


def _boundaries(extent: int, chunk: int | None) -> tuple[np.ndarray, int]:
    """Chunk boundaries inside (0, extent), every k-th when there are more than MAX_LINES, and k."""
    if not chunk or chunk >= extent:
        return np.zeros(0), 1
    n = math.ceil(extent / chunk) - 1
    k = max(1, math.ceil(n / MAX_LINES))
    return np.arange(chunk * k, extent, chunk * k, dtype=float), k


def _grid_label(name: str, chunks, axes, step: list[int]) -> str:
    if chunks is None:
        return f"{name} chunks: none (contiguous)"
    shown = "x".join(str(chunks[a]) for a in axes)
    every = max(step, default=1)
    return f"{name} chunks ({shown} on these axes" + (f"; one boundary in {every} drawn)" if every > 1 else ")")


def _draw_grid(ax, m: AccessMap, chunks, style: dict, vertical_axis: int | None, horizontal_axis: int | None,
               span: tuple[float, float] | None = None) -> list[int]:
    """Lines at ``chunks``' boundaries: vertical ones along array axis ``vertical_axis`` (x), horizontal along
    ``horizontal_axis`` (y). Returns the every-k of each."""
    steps = []
    if chunks is None:
        return steps
    if vertical_axis is not None:
        xs, k = _boundaries(m.shape[vertical_axis], chunks[vertical_axis])
        ax.vlines(xs, 0, 1, transform=ax.get_xaxis_transform(), **style)
        steps.append(k)
    if horizontal_axis is not None:
        ys, k = _boundaries(m.shape[horizontal_axis], chunks[horizontal_axis])
        ax.hlines(ys, 0, 1, transform=ax.get_yaxis_transform(), **style)
        steps.append(k)
    return steps


def _space(ax, fig, m: AccessMap) -> list[int]:
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.ticker import FuncFormatter, LogLocator

    total = m.read_bytes + m.write_bytes
    ax.set_facecolor("#eeeeee")  # never accessed
    group = "" if m.chunks is None or all(w == m.chunks[a] for a, w in zip(m.axes, m.bin_size)) else \
        f" (bins of {'x'.join(map(str, m.bin_size))} elements)"
    if len(m.axes) == 1:
        a = m.axes[0]
        edges = np.arange(len(total) + 1) * m.bin_size[0]
        ax.stairs(m.read_bytes[:, 0], edges, fill=True, color=READ_RGB, alpha=0.8, label="read")
        ax.stairs(m.read_bytes[:, 0] + m.write_bytes[:, 0], edges, baseline=m.read_bytes[:, 0], fill=True,
                  color=WRITE_RGB, alpha=0.8, label="written")
        ax.set_xlim(0, m.shape[a])
        ax.set_xlabel(f"axis {a} (element index)")
        ax.yaxis.set_major_formatter(FuncFormatter(bytes_label))
        ax.set_ylabel("bytes per chunk" if m.chunks else "bytes per bin")
        ax.set_title("Bytes requested along the array" + group, fontsize=10)
        return _draw_grid(ax, m, m.chunks, CURRENT, a, None)
    r, c = m.axes
    shown = np.ma.masked_less_equal(total, 0)
    vmax = float(total.max()) if total.size else 1.0
    positive = total[total > 0]
    vmin = max(float(positive.min()) if positive.size else 1.0, vmax / 1e4)
    log = vmax / vmin > 20  # a log scale only when the counts span it: else no tick would fall in the range
    norm = (LogNorm if log else Normalize)(vmin=vmin if log else 0.0, vmax=max(vmax, vmin * 1.0001))
    im = ax.imshow(shown, cmap="viridis", norm=norm, interpolation="nearest", aspect="auto",
                   extent=(0, total.shape[1] * m.bin_size[1], total.shape[0] * m.bin_size[0], 0))
    ax.set_xlim(0, m.shape[c])
    ax.set_ylim(m.shape[r], 0)
    ax.set_xlabel(f"axis {c} (element index)")
    ax.set_ylabel(f"axis {r} (element index)")
    cb = fig.colorbar(im, ax=ax, pad=0.02, fraction=0.05)
    if log:
        cb.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        cb.ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, p: ""))
    cb.ax.yaxis.set_major_formatter(FuncFormatter(bytes_label))
    cb.set_label("bytes per chunk" if m.chunks and not group else "bytes per bin", fontsize=8, labelpad=2)
    cb.ax.tick_params(labelsize=8)
    ax.tick_params(labelsize=8.5)
    ax.set_title("Where: bytes read + written per chunk" + group + " (grey: never accessed)", fontsize=10)
    return _draw_grid(ax, m, m.chunks, CURRENT, c, r)


def _intensity(v: np.ndarray) -> np.ndarray:
    """0 where nothing, else 0.3..1 by the log of the bytes (faint accesses stay visible)."""
    top = float(v.max()) if v.size else 0.0
    if top <= 0:
        return np.zeros_like(v)
    lo = top / 1e3
    a = np.log1p(v / lo) / np.log1p(top / lo)
    return np.where(v > 0, 0.3 + 0.7 * a, 0.0)


def _timeline(ax, m: AccessMap) -> None:
    ar, aw = _intensity(m.timeline_read), _intensity(m.timeline_write)
    both = np.maximum(ar + aw, 1.0)
    ar, aw = ar / both, aw / both
    rgb = 1.0 - ar[..., None] * (1 - READ_RGB) - aw[..., None] * (1 - WRITE_RGB)
    img = np.transpose(np.clip(rgb, 0, 1), (1, 0, 2))  # rows: position, columns: time
    n_pos = img.shape[0]
    t_end = float(m.time_edges[-1])
    ax.imshow(img, origin="lower", aspect="auto", interpolation="nearest",
              extent=(0.0, t_end, 0, n_pos * m.timeline_bin))
    ax.set_ylim(0, m.shape[m.timeline_axis])
    ax.set_xlim(-0.015 * t_end, 1.015 * t_end)  # an access at either end stays clear of the frame
    ax.set_xlabel("seconds since the first traced access" if m.time_unit == "s" else "access number")
    ax.set_ylabel(f"axis {m.timeline_axis} (element index)")
    ax.tick_params(labelsize=8.5)
    ax.set_title(f"When: position along axis {m.timeline_axis} over time", fontsize=10)


def figure(m: AccessMap):
    """The access map as a matplotlib Figure."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = new_figure(5.0)
    grid = fig.add_gridspec(1, 2, width_ratios=(1.15, 1.0), left=0.085, right=0.985, top=0.84, bottom=0.2,
                            wspace=0.36)
    space, time = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    steps = _space(space, fig, m)
    _timeline(time, m)
    t_steps = _draw_grid(time, m, m.chunks, CURRENT, None, m.timeline_axis)
    r_steps: list[int] = []
    if m.recommended is not None:
        r_steps = _draw_grid(space, m, m.recommended, RECOMMENDED, m.axes[-1],
                             m.axes[0] if len(m.axes) == 2 else None)
        _draw_grid(time, m, m.recommended, RECOMMENDED, None, m.timeline_axis)
    handles = [Patch(color=READ_RGB, label="read"), Patch(color=WRITE_RGB, label="written"),
               Line2D([], [], **CURRENT, label=_grid_label("recorded", m.chunks, m.axes, steps + t_steps))]
    if m.recommended is not None:
        handles.append(Line2D([], [], **RECOMMENDED, label=_grid_label("recommended", m.recommended, m.axes,
                                                                        r_steps)))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 0.005))
    fig.suptitle(f"Access map of {m.name}", fontsize=11, x=0.01, ha="left", y=0.985)
    fig.text(0.01, 0.905, m.describe().split("; ", 1)[-1] + f"; {bytes_label(m.total_bytes)} requested",
             fontsize=8.5, color="#444444", ha="left")
    return fig


def to_png(m: AccessMap) -> bytes:
    return png_bytes(figure(m))


def save_map(m: AccessMap, path) -> None:
    save(figure(m), path)


__all__ = ["figure", "save_map", "to_png"]
