"""Fetch real scientific fields for the compression model into ~/.cache/ioadvisor/data.

Sources (all offline-available here, none committed to the repo):
- Debian ``ferret-datasets`` and ``libncarg-data``: ``apt-get download`` + ``dpkg-deb -x`` (no install);
- PyPI ``iris-sample-data`` (installed in the venv; netCDF and UM PP files are read in place).

Usage: python -m benchmarks.helpers.fetch_data [--dest DIR] [--quick]
(--quick only checks what is already there and prints the paths.)
"""
from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_DEST = Path.home() / ".cache" / "ioadvisor" / "data"
DEBIAN_PACKAGES = {
    "ferret-datasets": "usr/share/ferret-vis/data",
    "libncarg-data": "usr/share/ncarg/data",
}


def debian_root(dest: Path, package: str) -> Path:
    """Directory holding the extracted data of ``package``."""
    return dest / package / DEBIAN_PACKAGES[package]


def fetch_debian(dest: Path, package: str) -> Path:
    root = debian_root(dest, package)
    if root.is_dir():
        return root
    with tempfile.TemporaryDirectory(prefix="ioadvisor-deb-") as tmp:
        cmd = ["apt-get", "download", package]
        if subprocess.run(cmd, cwd=tmp, capture_output=True).returncode != 0:
            # an empty apt list cache is the usual reason; refresh once
            subprocess.run(["apt-get", "update"], check=True, capture_output=True)
            subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        (deb,) = glob.glob(os.path.join(tmp, f"{package}_*.deb"))
        subprocess.run(["dpkg-deb", "-x", deb, str(dest / package)], check=True)
    if not root.is_dir():
        raise OSError(f"{package}: extracted, but {root} is missing")
    return root


def iris_root() -> Path:
    import iris_sample_data

    return Path(iris_sample_data.__file__).parent / "sample_data"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    ap.add_argument("--quick", action="store_true", help="do not download, only report")
    args = ap.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    for package in DEBIAN_PACKAGES:
        root = debian_root(args.dest, package) if args.quick else fetch_debian(args.dest, package)
        print(f"{package}: {root} ({'ok' if root.is_dir() else 'missing'})")
    root = iris_root()
    print(f"iris-sample-data: {root} ({'ok' if root.is_dir() else 'missing'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
