import base64
import html
import re
from dataclasses import replace

import pytest

from advisor.advice import TERM_MEANING
from advisor.render import costchart
from advisor.report import render, write_report

from test_advice import advice, traced  # noqa: F401  (module fixtures)


def test_report_is_self_contained_with_plots(advice, tmp_path):  # noqa: F811
    path = tmp_path / "r.html"
    write_report(advice, path)
    text = path.read_text()
    assert text == render(advice)
    assert "http://" not in text and "https://" not in text and "<script" not in text
    imgs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)
    assert len(imgs) == 2 * len(advice.datasets)  # the access map and the cost chart
    png = base64.b64decode(imgs[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    d = advice.dataset()
    assert d.recommendation.label.split()[1] in text and "h5py.File(" in text
    assert text.count("<tr") == 1 + len(d.candidates) + 1 + len(d.defaults) + len(d.whatifs)


def test_report_has_access_map_and_glossary_of_every_term_shown(advice):  # noqa: F811
    text = render(advice)
    d = advice.dataset()
    assert "<h3>Access map</h3>" in text and f"access map: {d.name}" in text
    assert f"{d.n_accesses} accesses of {d.name}" in text  # the map's own line: what it shows
    shown = {t for r in (d.current, *d.candidates, *d.defaults.values()) for t, v in r.terms.items() if v > 0}
    for term in shown:
        assert f"<dt>{term}</dt><dd>{html.escape(TERM_MEANING[term])}</dd>" in text
    assert "<dt>traced</dt>" in text and "<dt>measured</dt>" in text


def test_report_without_the_trace_file_says_so(advice, tmp_path):  # noqa: F811
    gone = replace(advice, source=str(tmp_path / "moved.jsonl"))
    text = render(gone)
    assert "no access map: the trace file is not available" in text
    assert len(re.findall(r"data:image/png;base64,", text)) == len(advice.datasets)  # the cost chart still


def _chart_rows(adv, measured=None):
    fig = costchart.figure(adv, measured)
    (ax,) = fig.axes
    return ax


def test_cost_chart_axis_fits_the_rows_that_matter(advice):  # noqa: F811
    d = advice.dataset()
    ax = _chart_rows(d)
    assert ax.get_xscale() == "linear" or max(r.seconds for r in d.candidates) / min(
        r.seconds for r in d.candidates) > costchart.LOG_SPAN
    # a default predicted 1000x slower than everything else: cut at the edge with its time written, not stretching
    slow = replace(d.defaults["zarr"], seconds=1000 * d.current.seconds, terms={"t_zopen": 1000 * d.current.seconds},
                   seconds_ci=(900 * d.current.seconds, 1100 * d.current.seconds))
    far = replace(d, defaults={**d.defaults, "zarr": slow})
    ax = _chart_rows(far)
    matter = max([r.seconds_ci[1] for r in (*d.candidates, d.current)] + [d.traced_seconds or 0])
    assert ax.get_xlim()[1] <= 3 * matter < slow.seconds / 10  # (3x: a log axis's margin)
    assert any(t.get_text().strip().startswith(f"{slow.seconds:.3g} s") for t in ax.texts)
    # candidates spanning 100x: a log axis
    fast = replace(d.candidates[0], seconds=d.current.seconds / 100,
                   seconds_ci=(d.current.seconds / 120, d.current.seconds / 80))
    ax = _chart_rows(replace(d, candidates=(fast,) + d.candidates[1:]))
    assert ax.get_xscale() == "log"
    # on it each bar still ends at its predicted seconds, every term a visible share of it
    rows = costchart.rows_of(replace(d, candidates=(fast,) + d.candidates[1:]))
    for i, (_, _, r) in enumerate(rows):
        bars = [p for p in ax.patches if abs(p.get_y() + p.get_height() / 2 - i) < 1e-9 and p.get_width() > 0]
        assert max(p.get_x() + p.get_width() for p in bars) == pytest.approx(r.seconds, rel=1e-9)
        assert len(bars) == sum(v > 0 for v in r.terms.values())


def test_cost_chart_marks_traced_and_measured_times(advice):  # noqa: F811
    d = advice.dataset()
    ax = _chart_rows(d, {"current": 0.5, "#1": 0.2})
    marks = [c.get_offsets().tolist() for c in ax.collections if c.get_offsets().size and len(c.get_offsets()) == 1]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    current_row = next(i for i, lab in enumerate(labels) if lab.startswith("current:"))
    assert [0.5, current_row] in [m[0] for m in marks] and [0.2, 0] in [m[0] for m in marks]
    assert [d.traced_seconds, current_row] in [m[0] for m in marks]
    legend = [t.get_text() for t in ax.figure.legends[0].get_texts()]
    assert "measured by verify" in legend and "traced (the run itself)" in legend
    # the legend is below the axes: it covers no bar
    fig = ax.figure
    fig.canvas.draw()
    box = fig.legends[0].get_window_extent()
    assert box.y1 <= ax.get_window_extent().y0


def test_measured_of_matches_verify_rows_of_the_dataset(advice):  # noqa: F811
    from advisor.verify import VerifyResult, VerifyRow

    d = advice.dataset()
    file, _, path = d.name.partition("::")
    name = f"{file.rsplit('/', 1)[-1]}:{path}"
    row = dict(library="hdf5", chunks=None, shards=None, cache_bytes=None, compressor=None, error_bound=None,
               predicted_seconds=0.1, measured_all=(0.3,), stored_bytes=1, data="user", max_error=None)
    result = VerifyResult("t", (VerifyRow(name, "current", measured_seconds=0.3, **row),
                                VerifyRow("other.h5:/y", "#1", measured_seconds=9.0, **row)), "w")
    assert costchart.measured_of(result, d) == {"current": 0.3}
