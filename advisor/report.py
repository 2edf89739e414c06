"""Self-contained HTML report of an Advice: table, explanation, code, and per-term breakdown plots.

The plots (matplotlib, Agg backend) are embedded as base64 PNG so the file opens anywhere, offline.
"""
from __future__ import annotations

import base64
import html
import io
import os
from dataclasses import replace

from advisor.advice import TERM_MEANING, Advice, DatasetAdvice, Recommendation
from iomodel.layout import chunks_text, format_bytes

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:1em 0} th,td{padding:.3em .6em;border-bottom:1px solid #eee}
th{background:#f4f4f4;text-align:left} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.best td{background:#eef8ee;font-weight:600} tr.base td{color:#666}
pre{background:#f6f8fa;padding:1em;overflow-x:auto} .note{color:#666;font-size:.85em} img{max-width:100%}
"""


def _plot(adv: DatasetAdvice) -> str:
    """Stacked bars of predicted seconds per term for the top candidates and the baselines (base64 PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows: list[tuple[str, Recommendation]] = [(f"#{i} {r.label}", r) for i, r in enumerate(adv.candidates, 1)]
    rows.append((f"current: {adv.current.label}", adv.current))
    rows += [(f"{k} default: {d.label}", d) for k, d in adv.defaults.items()]
    terms = [t for t in TERM_MEANING if any(r.terms.get(t, 0) > 0 for _, r in rows)]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.6), dpi=100)
    left = [0.0] * len(rows)
    cmap = plt.get_cmap("tab10")
    for j, t in enumerate(terms):
        vals = [r.terms.get(t, 0.0) for _, r in rows]
        ax.barh(range(len(rows)), vals, left=left, color=cmap(j % 10), label=t)
        left = [a + b for a, b in zip(left, vals)]
    for i, (_, r) in enumerate(rows):
        lo, hi = r.seconds_ci
        if hi > lo:
            ax.errorbar(r.seconds, i, xerr=[[r.seconds - lo], [hi - r.seconds]], fmt="none", ecolor="k", capsize=3)
    ax.set_yticks(range(len(rows)), [lab if len(lab) < 60 else lab[:57] + "..." for lab, _ in rows], fontsize=8)
    ax.invert_yaxis()
    if max(left, default=0) / max(min((x for x in left if x > 0), default=1), 1e-12) > 100:
        ax.set_xscale("log")
    ax.set_xlabel("predicted seconds (stacked by term; whiskers: 95% interval)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _row(tag: str, r: Recommendation, adv: DatasetAdvice, cls: str = "") -> str:
    c = r.candidate
    cache = c.cache_or_shards
    codec = c.compressor + (f" {c.error_bound}" if c.error_bound else "") if c.compressor else "-"
    lo, hi = r.seconds_ci
    terms = ", ".join(f"{k[2:]} {v:.3g}" for k, v in sorted(r.terms.items(), key=lambda kv: -kv[1]) if v > 0)
    cells = [tag, c.library, chunks_text(c.chunks), cache, codec]
    nums = [f"{r.seconds:.3g}", f"{lo:.3g} - {hi:.3g}", format_bytes(r.stored_bytes),
            f"{adv.current_seconds / r.seconds:.3g}x" if r.seconds > 0 else "-"]
    return (f"<tr class='{cls}'>" + "".join(f"<td>{html.escape(x)}</td>" for x in cells)
            + "".join(f"<td class='n'>{html.escape(x)}</td>" for x in nums)
            + f"<td class='note'>{html.escape(terms)}</td></tr>")


def render(advice: Advice) -> str:
    """The report as one HTML string."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>ioadvisor report</title>"
             f"<style>{_CSS}</style></head><body><h1>ioadvisor: layout advice</h1>",
             f"<p class='note'>trace {html.escape(advice.source)} &middot; objective: "
             f"{html.escape(advice.objective)} &middot; advised in {advice.seconds:.1f} s</p>"]
    for adv in advice.datasets:
        parts.append(f"<h2>{html.escape(adv.name)}</h2><p>{html.escape(adv.library)} "
                     f"{'x'.join(map(str, adv.shape))} {html.escape(adv.dtype)}, {adv.n_accesses} accesses"
                     f"{f' on {adv.procs} processes' if adv.procs > 1 else ''}: {html.escape(adv.pattern)}. "
                     f"{adv.n_evaluated} of {adv.n_generated} candidates evaluated"
                     + (f"; traced {adv.traced_seconds:.3g} s" if adv.traced_seconds else "") + ".</p>"
                     f"<p><b>Verdict: {html.escape(adv.verdict)}</b> ({html.escape(adv.verdict_reason)})</p>")
        parts.append("<table><tr><th>#</th><th>library</th><th>chunks</th><th>cache/shards</th><th>codec</th>"
                     "<th>seconds</th><th>95% interval</th><th>stored</th><th>vs current</th><th>terms (s)</th></tr>")
        for i, r in enumerate(adv.candidates, 1):
            parts.append(_row(str(i), r, adv, "best" if i == 1 else ""))
        parts.append(_row("current", adv.current, adv, "base"))
        for k, d in adv.defaults.items():
            parts.append(_row(f"{k} default", d, adv, "base"))
        for w in adv.whatifs:
            parts.append(_row(f"what-if {w.kind}", replace(adv.current, seconds=w.seconds, seconds_ci=w.seconds_ci,
                                                           terms=w.terms), adv, "base"))
        parts.append("</table>")
        parts.append(f"<img alt='predicted time by term' src='data:image/png;base64,{_plot(adv)}'>")
        parts.append("<h3>Why</h3><ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in adv.explanation) + "</ul>")
        parts.append(f"<h3>Apply it</h3><pre>{html.escape(adv.code())}</pre>")
        if adv.xarray_code():
            parts.append(f"<p>In xarray:</p><pre>{html.escape(adv.xarray_code())}</pre>")
        if adv.notes:
            parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(n)}</li>" for n in adv.notes) + "</ul>")
    if not advice.datasets:
        parts.append(f"<p>{html.escape(advice.nothing_line())}</p>")
    elif advice.not_advised:
        parts.append("<h2>Not advised</h2><ul>" + "".join(
            f"<li>{html.escape(n.name)}: {html.escape(n.reason)}</li>" for n in advice.not_advised) + "</ul>")
    if advice.minor:
        parts.append(f"<p class='note'>{html.escape(advice.minor_line())}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(advice: Advice, path: str | os.PathLike) -> None:
    """Write the self-contained HTML report to ``path``."""
    text = render(advice)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


__all__ = ["render", "write_report"]
