"""``ioadvisor verify --html``: the advice's report with the measured times on its cost chart."""
from advisor.cli import main
from advisor.render import costchart

from test_advice import traced  # noqa: F401  (module fixture)


def test_verify_html_marks_the_measured_times(traced, tmp_path, capsys, monkeypatch):  # noqa: F811
    d, _ = traced
    report = tmp_path / "r.html"
    charted, charted_advice = [], []
    real = costchart.figure

    def spy(adv, measured=None):
        charted.append(measured)
        charted_advice.append(adv)
        return real(adv, measured)

    monkeypatch.setattr(costchart, "figure", spy)
    assert main(["verify", str(d / "t.jsonl"), "--top", "1", "--html", str(report), "--quiet"]) == 0
    out = capsys.readouterr()
    assert f"report: {report}" in out.err
    text = report.read_text()
    assert "<h3>Access map</h3>" in text and "<dt>measured</dt>" in text
    (measured,) = charted
    assert {"current", "#1"} <= set(measured) and all(v > 0 for v in measured.values())
    assert set(measured) <= {tag for _, tag, _ in costchart.rows_of(next(iter(charted_advice)))}
    for label, seconds in measured.items():  # the times the table printed
        assert f"{seconds:.3f}" in next(line for line in out.out.splitlines() if line.strip().startswith(label))
    assert main(["verify", str(d / "t.jsonl"), "--top", "0", "--html", str(tmp_path / "x.html")]) == 0
    assert "not written: --top 0" in capsys.readouterr().err and not (tmp_path / "x.html").exists()
