"""The cost chart of one dataset's advice: predicted seconds per candidate stacked by term, with the 95%
interval, the traced time of the current layout and, when given, the times ``verify`` measured.

The axis fits the rows that matter (the ranked candidates, the current layout and the marks): a row far beyond
them (a library default predicted 100x slower) is cut at the edge with its value written there, and the axis
turns logarithmic when those rows themselves span more than ``LOG_SPAN``.
"""
from __future__ import annotations

from dataclasses import replace

from typing import TYPE_CHECKING

from advisor.terms import TERM_MEANING

if TYPE_CHECKING:  # annotations only: the results import this module's caller (advisor.report)
    from advisor.advice import DatasetAdvice, Recommendation

from .common import new_figure

LOG_SPAN = 30.0
"""Largest / smallest time of the rows that matter above which the axis is logarithmic."""
TRACED = dict(marker="D", color="black", s=36, zorder=5)
MEASURED = dict(marker="X", color="#e6007e", s=64, zorder=6, edgecolors="white", linewidths=0.6)


def rows_of(adv: DatasetAdvice) -> list[tuple[str, str, Recommendation]]:
    """(chart label, verify label, recommendation): ranked candidates, the current layout, the defaults, the
    what-if rewrites of the program (on the current layout), as the report's table lists them."""
    rows = [(f"#{i} {r.label}", f"#{i}", r) for i, r in enumerate(adv.candidates, 1)]
    rows.append((f"current: {adv.current.label}", "current", adv.current))
    rows += [(f"{k} default: {d.label}", f"{k} default", d) for k, d in adv.defaults.items()]
    rows += [(f"what-if {w.kind}: current layout", f"what-if {w.kind}",
              replace(adv.current, seconds=w.seconds, seconds_ci=w.seconds_ci, terms=w.terms)) for w in adv.whatifs]
    return rows


def _short(label: str, n: int = 58) -> str:
    return label if len(label) <= n else label[: n - 3] + "..."


def figure(adv: DatasetAdvice, measured: dict[str, float] | None = None):
    """The chart as a matplotlib Figure. ``measured``: {verify label ("current", "#1", "h5py default", ...):
    measured seconds}."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    measured = measured or {}
    rows = rows_of(adv)
    terms = [t for t in TERM_MEANING if any(r.terms.get(t, 0) > 0 for _, _, r in rows)]
    sums = [sum(r.terms.get(t, 0.0) for t in terms) for _, _, r in rows]
    totals = [max(r.seconds, s) for (_, _, r), s in zip(rows, sums)]
    # what the axis must show: the candidates and the current layout with their intervals, and the marks
    core = [r.seconds_ci[1] if r.seconds_ci[1] > r.seconds_ci[0] else r.seconds for _, tag, r in rows
            if not tag.endswith("default") and not tag.startswith("what-if")]
    core += [v for v in (adv.traced_seconds, *measured.values()) if v]
    core = [v for v in core if v > 0] or [1.0]
    top = max(core)
    log = top / min(core) > LOG_SPAN
    legend_rows = -(-(len(terms) + 1 + bool(adv.traced_seconds) + bool(measured)) // 2)  # two columns
    fig = new_figure(0.4 * len(rows) + 1.1 + 0.19 * legend_rows)
    ax = fig.add_subplot()
    from matplotlib import colormaps

    palette = colormaps["tab20"]
    colour = {t: palette((2 * i) % 20 + (2 * i) // 20) for i, t in enumerate(TERM_MEANING)}  # one hue per term
    y = list(range(len(rows)))
    edge = min(core) / 3  # the log axis's left end
    done = [0.0] * len(rows)
    for t in terms:
        vals = [r.terms.get(t, 0.0) for _, _, r in rows]
        ends = [a + b for a, b in zip(done, vals)]
        if log:  # a bar ends at its total; each term takes its share of the bar's length (on a log axis a
            # stack from 0 would hide the first terms at the edge)
            starts, ends_x = ([edge * (max(r.seconds, edge) / edge) ** (v / s) if s > 0 else edge
                               for v, s, (_, _, r) in zip(x, sums, rows)] for x in (done, ends))
        else:
            starts, ends_x = done, ends
        ax.barh(y, [b - a for a, b in zip(starts, ends_x)], left=starts, color=colour[t], height=0.62, label=t)
        done = ends
    for i, (_, tag, r) in enumerate(rows):
        lo, hi = r.seconds_ci
        if hi > lo:
            ax.errorbar(r.seconds, i, xerr=[[max(r.seconds - lo, 0.0)], [max(hi - r.seconds, 0.0)]], fmt="none",
                        ecolor="k", capsize=3, lw=0.9)
        if tag in measured:
            ax.scatter([measured[tag]], [i], **MEASURED)
        if tag == "current" and adv.traced_seconds:
            ax.scatter([adv.traced_seconds], [i], **TRACED)
    limit = top * (3.0 if log else 1.15)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(edge, limit)
    else:
        ax.set_xlim(0, limit)
    for i, total in enumerate(totals):  # rows beyond the axis: cut, their time written at the edge
        if total > limit * 1.0001:
            ax.text(limit, i, f" {total:.3g} s \u2192", va="center", ha="right", fontsize=8, color="white",
                    bbox=dict(boxstyle="round,pad=0.15", fc="#444444", ec="none"))
    ax.set_yticks(y, [_short(lab) for lab, _, _ in rows], fontsize=8.5)
    ax.invert_yaxis()
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("predicted seconds (log scale; each term's colour takes its share of the bar)" if log else
                  "predicted seconds, stacked by term", fontsize=9)
    ax.set_title(f"Predicted time per layout: {adv.name}", fontsize=10, loc="left")
    handles = [Patch(color=colour[t], label=f"{t}: {TERM_MEANING[t]}") for t in terms]
    handles.append(Line2D([], [], color="k", lw=0.9, marker="|", label="95% interval"))
    if adv.traced_seconds:
        handles.append(Line2D([], [], ls="none", marker="D", color="black", label="traced (the run itself)"))
    if measured:
        handles.append(Line2D([], [], ls="none", marker="X", color="#e6007e", label="measured by verify"))
    ncol = 2
    height = fig.get_figheight()
    bottom = (0.15 + 0.19 * legend_rows) / height  # the legend sits below the axes, never on the bars
    fig.subplots_adjust(left=0.27, right=0.98, top=1 - 0.4 / height, bottom=bottom + 0.55 / height)
    fig.legend(handles=handles, loc="lower left", ncol=ncol, fontsize=8, frameon=False,
               bbox_to_anchor=(0.01, 0.0))
    return fig


def measured_of(verify_result, adv: DatasetAdvice) -> dict[str, float]:
    """{verify label: measured seconds} of the rows of ``verify_result`` (an ``advisor.verify.VerifyResult``) for
    this dataset (matched on the array's file name and path)."""
    if verify_result is None:
        return {}
    file, _, path = adv.name.partition("::")
    from pathlib import PurePath

    base = PurePath(file).name
    names = {f"{base}:{path}", f"{base}/{path}" if path else base}
    return {r.label: r.measured_seconds for r in verify_result.rows if r.dataset in names}


__all__ = ["figure", "measured_of", "rows_of"]
