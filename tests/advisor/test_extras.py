"""The tool-only install (no extras): the core commands work, and a feature that needs an extra says so in one
line naming it. The extras' packages are hidden from a child interpreter by a finder that refuses them."""
import subprocess
import sys

from tests.advisor.conftest import IOADVISOR  # noqa: F401 - the venv whose interpreter runs the CLI

HIDE = (
    "import sys\n"
    "class Hide:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('matplotlib', 'scipy'):\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
    "sys.meta_path.insert(0, Hide())\n"
)


def _cli(*args, timeout=300):
    code = HIDE + "from advisor.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_demo_runs_without_the_extras():
    r = _cli("demo", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "Recommendation for" in r.stdout


def test_plot_without_matplotlib_is_one_line_naming_the_extra(netcdf_case, tmp_path):
    _, trace, _ = netcdf_case
    out = tmp_path / "map.png"
    r = _cli("trace", "plot", trace, "-o", out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "pip install 'ioadvisor[plots]'" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_html_report_without_matplotlib_notes_the_extra(netcdf_case, tmp_path):
    _, trace, _ = netcdf_case
    html = tmp_path / "r.html"
    r = _cli("advise", trace, "--html", html)
    assert r.returncode == 0, r.stderr
    text = html.read_text()
    assert "ioadvisor[plots]" in text and "<img" not in text
