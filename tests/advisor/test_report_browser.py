"""The HTML report in a real browser: headless Chromium at 1400 px wide."""
import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from advisor.report import write_report

from test_advice import advice, traced  # noqa: F401  (module fixtures)

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium): the report is not "
                             "checked in a browser")
WIDTH = 1400
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--window-size={WIDTH},4000"]

# a copy of the report with this script measures every picture as laid out (the report itself has no script)
PROBE = ("<script>document.body.setAttribute('data-images', JSON.stringify([...document.images].map(i => "
         "({alt: i.alt, natural: i.naturalWidth, shown: i.getBoundingClientRect().width, "
         "top: i.getBoundingClientRect().top + window.scrollY}))))</script></body>")


def _chromium(*args) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *HEADLESS, *args], capture_output=True, text=True, timeout=180)


@needs_chromium
def test_report_pictures_readable_at_1400_px(advice, tmp_path):  # noqa: F811
    report = tmp_path / "report.html"
    write_report(advice, report)
    probe = tmp_path / "probe.html"
    probe.write_text(report.read_text().replace("</body>", PROBE))
    dom = _chromium("--dump-dom", probe.as_uri()).stdout
    found = re.search(r'data-images="([^"]*)"', dom)
    assert found, dom[-500:]
    images = json.loads(html.unescape(found.group(1)))
    name = advice.dataset().name
    kinds = {img["alt"]: img for img in images}
    assert set(kinds) == {f"access map: {name}", f"predicted time by term: {name}"}
    for img in images:
        # drawn 1:1 (text at the size matplotlib set it, no blur from scaling) and wide enough to read
        assert img["natural"] >= 1000 and img["shown"] == pytest.approx(img["natural"], abs=1), img
    assert kinds[f"access map: {name}"]["top"] < kinds[f"predicted time by term: {name}"]["top"]

    shot = tmp_path / "report.png"
    _chromium(f"--screenshot={shot}", report.as_uri())
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[1] == WIDTH
    top = int(kinds[f"access map: {name}"]["top"])
    band = pixels[top + 60: top + 400, 100: WIDTH - 100, :3]  # inside the access map as painted
    colours = np.unique((band * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50  # a heatmap and a timeline, not a blank or broken image
