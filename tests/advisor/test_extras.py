"""The tool-only install (no extras): the core commands work, and a feature that needs an extra says so in one
line naming it. The extras' packages are hidden from a child interpreter by a finder that refuses them."""
import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.advisor.conftest import IOADVISOR  # noqa: F401 - the venv whose interpreter runs the CLI

HIDE = (
    "import sys\n"
    "class Hide:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('matplotlib', 'scipy', 'hdf5plugin', 'mpi4py'):\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
    "sys.meta_path.insert(0, Hide())\n"
)


def _cli(*args, timeout=300, hide=True, env=None):
    code = (HIDE if hide else "import sys\n") + "from advisor.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _one_line(r, extra: str) -> None:
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"pip install 'ioadvisor[{extra}]'" in r.stderr and "Traceback" not in r.stderr, r.stderr


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


def _smooth_field(path: Path) -> Path:
    """A smooth float32 field (16, 256, 512) in 4x64x128 chunks: compresses well, no NaN."""
    import h5py

    y, x = np.meshgrid(np.linspace(0, 3, 256), np.linspace(0, 6, 512), indexing="ij")
    v = np.stack([np.sin(x + 0.1 * t) * np.cos(y) + 280 for t in range(16)]).astype("f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=v, chunks=(4, 64, 128))
    return path


def test_hdf5_filters_with_a_numcodecs_twin_are_estimated_without_hdf5plugin(tmp_path):
    """zstd, blosc-zstd, lz4 and zfp are priced for HDF5 through numcodecs/zfpy, which store what the filters
    store: the ratios match the filters' own (hdf5plugin installed), and a note says which binding was used."""
    src = _smooth_field(tmp_path / "f.h5")
    args = ("compression", f"{src}:/v", "--compressor", "zstd,blosc-zstd,lz4,zfp", "--method", "sampling",
            "--error-bound", "abs:1e-3", "--library", "hdf5", "--json")
    without, with_plugin = _cli(*args), _cli(*args, hide=False)
    assert without.returncode == 0 and with_plugin.returncode == 0, without.stderr + with_plugin.stderr
    rows, truth = json.loads(without.stdout), json.loads(with_plugin.stdout)
    assert [r["compressor"] for r in rows] == [r["compressor"] for r in truth] == ["zstd", "blosc-zstd", "lz4", "zfp"]
    for r, t in zip(rows, truth):
        assert abs(r["ratio"] / t["ratio"] - 1) < 0.02, (r["compressor"], r["ratio"], t["ratio"])
        assert any("hdf5plugin is not installed" in n for n in r["notes"]), r["notes"]
        assert not any("hdf5plugin" in n for n in t["notes"]), t["notes"]


def test_a_codec_only_hdf5plugin_implements_needs_the_extra(tmp_path):
    """SZ2 (only the filter) and, for HDF5, SZ3 (pysz compresses unlike the filter): named, one line naming the
    extra; by default, left out with a line saying why, and the other codecs still estimated."""
    src = _smooth_field(tmp_path / "f.h5")
    for name in ("sz", "sz3"):
        _one_line(_cli("compression", f"{src}:/v", "--compressor", name, "--error-bound", "abs:1e-3"), "hdf5-filters")
    r = _cli("compression", f"{src}:/v", "--error-bound", "abs:1e-3", "--json")
    assert r.returncode == 0, r.stderr
    assert [row["compressor"] for row in json.loads(r.stdout)] == ["zfp", "blosc-zstd"]
    assert r.stderr.count("left out") == 2 and "ioadvisor[hdf5-filters]" in r.stderr and "Traceback" not in r.stderr
    r = _cli("compression", f"{src}:/v", "--compressor", "sz3", "--error-bound", "abs:1e-3", "--library", "zarr")
    assert r.returncode == 0, r.stderr  # Zarr's SZ3 is pysz itself


def test_advise_prices_hdf5_compression_without_hdf5plugin(netcdf_case):
    _, trace, _ = netcdf_case
    r = _cli("advise", trace, "--json", "--top", "50")
    assert r.returncode == 0, r.stderr
    ds = json.loads(r.stdout)["datasets"][0]
    priced = [c for c in ds["candidates"] if c["library"] == "hdf5" and c["compressor"] in ("zstd", "blosc-zstd")]
    assert priced and all(c["seconds"] > 0 and c["ratio"] > 1 for c in priced), ds["candidates"]
    assert any("hdf5plugin is not installed" in n for n in ds["notes"]), ds["notes"]


def test_apply_with_an_hdf5_plugin_filter_needs_the_extra(netcdf_case, tmp_path):
    """Writing an HDF5 filter of hdf5plugin: one line before any output exists; HDF5's own gzip still works."""
    _, trace, values = netcdf_case
    dest = tmp_path / "out.h5"
    _one_line(_cli("apply", trace, "--out", dest, "--dataset", "tas", "--layout", "hdf5:chunks=24x4x8,codec=zstd"),
              "hdf5-filters")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == []
    r = _cli("apply", trace, "--out", dest, "--dataset", "tas", "--layout", "hdf5:chunks=24x4x8,codec=gzip")
    assert r.returncode == 0, r.stderr
    import h5py

    with h5py.File(dest, "r") as f:
        np.testing.assert_array_equal(f["tas"][...], values)


def test_advise_across_mpi_ranks_needs_the_extra(netcdf_case):
    _, trace, _ = netcdf_case
    env = {**os.environ, "PMI_RANK": "0", "PMI_SIZE": "2"}  # what the mpich wheel's mpiexec sets
    _one_line(_cli("advise", trace, env=env), "mpi")


def test_the_test_extra_installs_every_optional_extra():
    """`make test` installs the test extra: it holds every package of the other extras, which the tool-only
    install (install_requires, what `make demo` installs) leaves out; each optional import names its extra."""
    from instrumentation.extras import EXTRAS

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "setup.cfg")

    def names(text: str) -> set[str]:
        lines = [ln.split("#")[0].split(";")[0].strip() for ln in text.splitlines()]
        return {ln.split(">")[0].split("=")[0].split("<")[0].strip().lower() for ln in lines if ln}

    extras = {k: names(v) for k, v in cfg["options.extras_require"].items()}
    core = names(cfg["options"]["install_requires"])
    for module, extra in EXTRAS.items():
        assert module in extras[extra] and module not in core, (module, extra)
    for extra in set(EXTRAS.values()):
        assert extras[extra] <= extras["test"], (extra, extras[extra] - extras["test"])
        assert not extras[extra] & core, extra
