"""Real files nobody here wrote, one trace per file as a new user would make it: exit codes and stray stderr.

    python -m benchmarks.validation.corpus [--out DIR]

Each file is read by tests/corpus/explore.py under ``ioadvisor run`` (iris-sample-data's netCDF-4 files
through xarray's h5netcdf engine; its netCDF-3 files and those of xarray's and scipy's test data through
xarray's default engine; the HDF5 test files of the h5py and PyTables wheels through h5py), then
``ioadvisor trace show`` and ``ioadvisor advise --json``. Prints one row per group: files, exit codes,
stray stderr lines (anything but advise's one-line machine check), datasets advised in full, summed up as
minor, and not advised (by reason), and traces with nothing advisable.
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPLORE = ROOT / "tests" / "corpus" / "explore.py"
IOADVISOR = Path(sys.executable).parent / "ioadvisor"
PROFILE_CHECK = ("warning: this machine differs from ", "note: ")


def groups() -> dict[str, tuple[str, list[Path]]]:
    import h5py
    import iris_sample_data
    import scipy
    import tables
    import xarray

    from instrumentation.formats import netcdf3_format

    iris = sorted(Path(iris_sample_data.path).rglob("*.nc"))
    nc3 = [p for p in iris + sorted((Path(xarray.__file__).parent / "tests" / "data").glob("*.nc"))
           + sorted((Path(scipy.__file__).parent / "io" / "tests" / "data").glob("*.nc")) if netcdf3_format(p)]
    h5 = (sorted((Path(h5py.__file__).parent / "tests" / "data_files").glob("*.h5"))
          + sorted((Path(tables.__file__).parent / "tests").glob("*.h5")))
    return {"iris-sample-data netCDF-4 (xarray, h5netcdf)": ("h5netcdf", [p for p in iris if h5py.is_hdf5(p)]),
            "netCDF-3: iris, xarray, scipy (xarray, default engine)": ("default", nc3),
            "h5py and PyTables test files (h5py)": ("h5py", h5)}


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(IOADVISOR), *map(str, args)], capture_output=True, text=True, timeout=900)


def one_file(engine: str, path: Path, work: Path, i: int) -> dict:
    trace = work / f"{i}.jsonl"
    run = _cli("run", "--force", "-o", trace, "--", sys.executable, EXPLORE, engine, path)
    show = _cli("trace", "show", trace)
    adv = _cli("advise", trace, "--json")
    stray = [line for line in show.stderr.splitlines() + adv.stderr.splitlines()
             if not line.startswith(PROFILE_CHECK)]
    doc = json.loads(adv.stdout) if adv.returncode == 0 else {"datasets": [], "minor": [], "not_advised": []}
    return {"run": run.returncode, "show": show.returncode, "advise": adv.returncode, "stray": stray,
            "advised": len(doc["datasets"]), "minor": len(doc["minor"]),
            "reasons": [n["reason"].split(":")[0] for n in doc["not_advised"]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="keep the traces here (default: a temporary directory)")
    args = ap.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="ioadvisor-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    print("| group | files | show exit != 0 | advise exit != 0 | stray stderr lines | advised | minor "
          "| not advised (reasons) | nothing advisable |")
    print("|---|---|---|---|---|---|---|---|---|")
    i = 0
    for name, (engine, files) in groups().items():
        rows = []
        for path in files:
            rows.append(one_file(engine, path, work, i))
            i += 1
            for line in rows[-1]["stray"]:
                print(f"  stray: {path.name}: {line}", file=sys.stderr)
        reasons = collections.Counter(r for row in rows for r in row["reasons"])
        print(f"| {name} | {len(rows)} | {sum(r['show'] != 0 for r in rows)} | {sum(r['advise'] != 0 for r in rows)} "
              f"| {sum(len(r['stray']) for r in rows)} | {sum(r['advised'] for r in rows)} "
              f"| {sum(r['minor'] for r in rows)} | {sum(reasons.values())} ("
              + ", ".join(f"{k} {v}" for k, v in reasons.most_common()) + ") "
              f"| {sum(r['advised'] + r['minor'] == 0 for r in rows)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
