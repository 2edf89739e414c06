"""Self-contained HTML report of an Advice: table, access map, cost chart, explanation, code and a glossary.

The pictures (``advisor.render``, matplotlib) are embedded as base64 PNG so the file opens anywhere, offline.
``fragment`` is the short form a notebook shows (``Advice._repr_html_``).
"""
from __future__ import annotations

import base64
import html
import os
from dataclasses import replace

from typing import TYPE_CHECKING

from advisor.terms import TERM_MEANING
from instrumentation import settings

if TYPE_CHECKING:  # annotations only: Advice._repr_html_ imports this module
    from advisor.advice import Advice, DatasetAdvice, Recommendation
from iomodel.layout import chunks_text, format_bytes

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85em;margin:1em 0} th,td{padding:.3em .6em;border-bottom:1px solid #eee}
th{background:#f4f4f4;text-align:left} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.best td{background:#eef8ee;font-weight:600} tr.base td{color:#666}
pre{background:#f6f8fa;padding:1em;overflow-x:auto} .note{color:#666;font-size:.85em} img{max-width:100%}
dl.gloss{display:grid;grid-template-columns:max-content auto;gap:.2em 1em;font-size:.9em}
dl.gloss dt{font-family:monospace;font-weight:600} dl.gloss dd{margin:0}
"""


def _img(png: bytes, alt: str) -> str:
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode('ascii')}'>"


def _cost_chart(adv: DatasetAdvice, measured=None) -> str:
    """The cost chart (``advisor.render.costchart``) as an <img>."""
    try:  # the import too: without matplotlib (the plots extra) the note names the extra
        from advisor.render.common import png_bytes
        from advisor.render.costchart import figure, measured_of

        return _img(png_bytes(figure(adv, measured_of(measured, adv))), f"predicted time by term: {adv.name}")
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be drawn never costs the report
        if settings.debug():
            raise
        return f"<p class='note'>no cost chart: {html.escape(str(exc) or type(exc).__name__)}</p>"


def _trace_of(advice: Advice):
    """The advised trace, loaded again from ``advice.source`` when that file is still there (None if not)."""
    path = advice.source
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    key = (path, stat.st_mtime_ns, stat.st_size)
    if _TRACES.get("key") != key:
        from instrumentation.tracefile import load_trace

        try:
            _TRACES.update(key=key, trace=load_trace(path, allow_truncated=True))
        except (ValueError, OSError):
            return None
    return _TRACES["trace"]


_TRACES: dict = {}
"""The last trace ``_trace_of`` loaded (a notebook shows the same advice again and again)."""


def access_map_html(adv: DatasetAdvice, trace) -> str:
    """The access map of ``adv``'s array with the recommended grid, as an <img> and one line saying what it shows
    ('' without a trace; a note when the map cannot be drawn)."""
    if trace is None:
        return ""
    from advisor.accessmap import access_map

    try:
        from advisor.render.accessmap import to_png

        m = access_map(trace, trace.dataset_by_key(adv.name), recommended=adv.recommendation.candidate.chunks)
        return (_img(to_png(m), f"access map: {adv.name}")
                + f"<p class='note'>{html.escape(m.describe())}.</p>")
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be drawn never costs the report
        if settings.debug():
            raise
        return f"<p class='note'>no access map: {html.escape(str(exc) or type(exc).__name__)}</p>"


def glossary(advice: Advice) -> str:
    """The cost terms that appear in the advice, in plain words."""
    used = {t for d in advice.datasets for r in (d.current, *d.candidates, *d.defaults.values())
            for t, v in r.terms.items() if v > 0}
    items = "".join(f"<dt>{html.escape(t)}</dt><dd>{html.escape(TERM_MEANING[t])}</dd>"
                    for t in TERM_MEANING if t in used)
    return ("<h2>Glossary</h2><dl class='gloss'>"
            "<dt>seconds</dt><dd>predicted time of the traced accesses in that layout (the cost models, "
            "calibrated on the trace's own timings when it has them)</dd>"
            "<dt>95% interval</dt><dd>where the time falls 19 times in 20, given the models' measured error</dd>"
            "<dt>traced</dt><dd>the time the traced run itself spent in these calls (current layout)</dd>"
            "<dt>measured</dt><dd>the time <code>ioadvisor verify</code> measured replaying the trace on the "
            "layout rebuilt for real</dd>" + items + "</dl>")


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


def _table(adv: DatasetAdvice) -> str:
    parts = ["<table><tr><th>#</th><th>library</th><th>chunks</th><th>cache/shards</th><th>codec</th>"
             "<th>seconds</th><th>95% interval</th><th>stored</th><th>vs current</th><th>terms (s)</th></tr>"]
    for i, r in enumerate(adv.candidates, 1):
        parts.append(_row(str(i), r, adv, "best" if i == 1 else ""))
    parts.append(_row("current", adv.current, adv, "base"))
    for k, d in adv.defaults.items():
        parts.append(_row(f"{k} default", d, adv, "base"))
    for w in adv.whatifs:
        parts.append(_row(f"what-if {w.kind}", replace(adv.current, seconds=w.seconds, seconds_ci=w.seconds_ci,
                                                       terms=w.terms), adv, "base"))
    parts.append("</table>")
    return "".join(parts)


def _heading(adv: DatasetAdvice) -> str:
    return (f"<h2>{html.escape(adv.name)}</h2><p>{html.escape(adv.library)} "
            f"{'x'.join(map(str, adv.shape))} {html.escape(adv.dtype)}, {adv.n_accesses} accesses"
            f"{f' on {adv.procs} processes' if adv.procs > 1 else ''}: {html.escape(adv.pattern)}. "
            f"{adv.n_evaluated} of {adv.n_generated} candidates evaluated"
            + (f"; traced {adv.traced_seconds:.3g} s" if adv.traced_seconds else "") + ".</p>"
            f"<p><b>Verdict: {html.escape(adv.verdict)}</b> ({html.escape(adv.verdict_reason)})</p>")


def fragment(advice: Advice, trace=None) -> str:
    """The notebook view (``Advice._repr_html_``): per dataset the verdict, the table and the access map."""
    trace = trace if trace is not None else _trace_of(advice)
    parts = [f"<div class='ioadvisor'><style>.ioadvisor td.n{{text-align:right}} "
             ".ioadvisor tr.best td{background:#eef8ee;font-weight:600} .ioadvisor .note{color:#666}</style>"]
    for adv in advice.datasets:
        parts += [_heading(adv), _table(adv), access_map_html(adv, trace)]
    if not advice.datasets:
        parts.append(f"<p>{html.escape(advice.nothing_line())}</p>")
    parts.append("</div>")
    return "\n".join(parts)


def render(advice: Advice, trace=None, measured=None) -> str:
    """The report as one HTML string. ``trace``: the advised Trace, for the access maps (default: loaded again from
    ``advice.source`` when that file exists); ``measured``: an ``advisor.verify.VerifyResult`` whose times are
    marked on the cost charts."""
    trace = trace if trace is not None else _trace_of(advice)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>ioadvisor report</title>"
             f"<style>{_CSS}</style></head><body><h1>ioadvisor: layout advice</h1>",
             f"<p class='note'>trace {html.escape(advice.source)} &middot; objective: "
             f"{html.escape(advice.objective)} &middot; advised in {advice.seconds:.1f} s</p>"]
    for adv in advice.datasets:
        parts += [_heading(adv), _table(adv), "<h3>Access map</h3>", access_map_html(adv, trace)
                  or "<p class='note'>no access map: the trace file is not available</p>",
                  "<h3>Predicted time by layout</h3>", _cost_chart(adv, measured)]
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
    if advice.datasets:
        parts.append(glossary(advice))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(advice: Advice, path: str | os.PathLike, trace=None, measured=None) -> None:
    """Write the self-contained HTML report to ``path`` (``render``'s ``trace`` and ``measured``)."""
    text = render(advice, trace, measured)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


__all__ = ["access_map_html", "fragment", "glossary", "render", "write_report"]
