"""Run zarr's own test suite with and without ``advisor.trace`` around every test; require identical outcomes.

From the repository root::

    python tests/zarr_suite/compare.py [extra pytest args...]

zarr's wheel carries no tests: the sdist of the installed zarr version is
downloaded with pip (cached in ``$IOADVISOR_ZARR_SDIST``, default the system
temporary directory) and its ``tests/`` run under zarr's own pytest
configuration (``filterwarnings = error``, strict markers), without
``tests/benchmarks``. The tracing plugin is h5py_suite's, under its
non-clashing module name (zarr's tests are a package named ``tests``).
Exit status and output as tests/h5py_suite/compare.py.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "h5py_suite" / "compare.py"
_spec = importlib.util.spec_from_file_location("ioadvisor_suite_compare", SUITE)
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)


def zarr_sources(cache: Path) -> Path:
    """The unpacked sdist of the installed zarr (its tests/ and pyproject.toml), downloaded once."""
    release = version("zarr")
    root = cache / f"zarr-{release}"
    if (root / "tests").is_dir() and (root / "pyproject.toml").exists():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    # the build backend is installed (test extra): no isolated build environment to download
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                           "--no-build-isolation", f"zarr=={release}", "-d", str(cache)],
                          capture_output=True, text=True)
    sdist = cache / f"zarr-{release}.tar.gz"
    if not sdist.exists():
        sys.exit(f"cannot download the zarr {release} sdist: {proc.stderr.strip().splitlines()[-1:]}")
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers()
                   if m.name.startswith((f"zarr-{release}/tests/", f"zarr-{release}/pyproject.toml"))]
        tar.extractall(cache, members=members, filter="data")
    return root


def main(argv: list[str]) -> int:
    root = zarr_sources(Path(os.environ.get("IOADVISOR_ZARR_SDIST", Path(tempfile.gettempdir()) / "ioadvisor-zarr-sdist")))
    args = ["tests", "--ignore=tests/benchmarks", *argv]
    with tempfile.TemporaryDirectory(prefix="ioadvisor-zarr-compare-") as tmp:
        plain, _ = suite.run_suite(False, Path(tmp), args, cwd=root)
        traced, stdout = suite.run_suite(True, Path(tmp), args, cwd=root)
    return suite.report(plain, traced, stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
