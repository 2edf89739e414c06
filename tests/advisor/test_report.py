import base64
import re

from advisor.report import render, write_report

from test_advice import advice, traced  # noqa: F401  (module fixtures)


def test_report_is_self_contained_with_plots(advice, tmp_path):  # noqa: F811
    path = tmp_path / "r.html"
    write_report(advice, path)
    text = path.read_text()
    assert text == render(advice)
    assert "http://" not in text and "https://" not in text and "<script" not in text
    imgs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)
    assert len(imgs) == len(advice.datasets)
    png = base64.b64decode(imgs[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    d = advice.dataset()
    assert d.recommendation.label.split()[1] in text and "h5py.File(" in text
    assert text.count("<tr") == 1 + len(d.candidates) + 1 + len(d.defaults) + len(d.whatifs)
