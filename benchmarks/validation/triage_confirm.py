"""Confirm the top application's finding: replay its worst job as recorded and with the fix, under Darshan.

    .venv/bin/python -m benchmarks.validation.triage_confirm SUMMARY [--reps 5]

SUMMARY: a triage summary made with ``--names`` over benchmarks/speed/triage_archive.py's archive. Takes the top
application (``summary.apps.parquet``), its top finding, and the job where that finding holds the most
seconds; reads the job's command line from its log; runs it again under the same darshan-runtime build as
recorded and as the finding's advice changes it, ``--reps`` times each, interleaved; each run's log is
summarized as triage does. Estimate: the finding's seconds (``saves``) in the as-recorded runs' logs;
measured: the drop of the critical-path I/O time (``io_time``) from as-recorded to fixed runs (medians).

The fix is applied to the program through its arguments, so this knows one program: benchmarks/c/iogen.c
(``iogen DIR PATTERN SEED COUNT SIZE FILES``): small requests (P05/P06) -> the same bytes in 1 MiB requests;
misaligned requests (P08) -> request sizes rounded up to 4 KiB, or for its HDF5 patterns the HDF5 advice
``H5Pset_alignment`` (``IOGEN_ALIGN=4096``); STDIO (S01) -> POSIX; random reads (P11) ->
sequential. Another program at the top is reported as not confirmed.
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


import pandas as pd  # noqa: E402

from advisor.triage.logrow import RowOptions, summarize_many  # noqa: E402
from advisor.triage.store import apps_path  # noqa: E402
from instrumentation.darshan_raw import read_raw  # noqa: E402

CACHE = Path(os.environ.get("IOADVISOR_CACHE", Path.home() / ".cache" / "ioadvisor"))


def fixed_args(code: str, args: list[str]) -> tuple[list[str], dict] | None:
    """iogen's arguments and environment with the finding's fix applied (None: no fix known here)."""
    pattern, seed, count, size, files = args
    count, size = int(count), int(size)
    if code in ("P05", "P06") and size < 1 << 20 and not pattern.startswith("h5"):
        total = count * size
        return [pattern, seed, str(max(total // (1 << 20), 1)), str(min(1 << 20, total)), files], {}
    if code == "P08" and pattern.startswith("h5"):  # the HDF5 advice: H5Pset_alignment on the file
        return args, {"IOGEN_ALIGN": "4096"}
    if code == "P08":
        return [pattern, seed, str(count), str(-(-size // 4096) * 4096), files], {}
    if code == "S01" and pattern == "stdio":
        return ["seqwrite", seed, str(count), str(size), files], {}
    if code == "P11" and pattern == "randread":
        return ["seqwrite", seed, str(count), str(size), files], {}
    return None


def run_logged(argv: list[str], build: Path, logdir: Path, extra: dict | None = None) -> dict:
    before = set(glob.glob(str(logdir / "*.darshan")))
    with tempfile.TemporaryDirectory(prefix="triage-confirm-") as tmp:
        argv = [tmp if a == "{dir}" else a for a in argv]
        env = dict(os.environ, LD_PRELOAD=str(build / "lib" / "libdarshan.so"), DARSHAN_ENABLE_NONMPI="1",
                   DARSHAN_LOGPATH=str(logdir), **(extra or {}))
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    new = sorted(set(glob.glob(str(logdir / "*.darshan"))) - before)
    return summarize_many([(new[-1], "")], RowOptions(names=True))[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    apps = pd.read_parquet(apps_path(args.summary))
    # the top application whose program is on this machine: the real corpus's come from other centres
    runnable = [i for i, exe in enumerate(apps["exe"]) if os.path.isfile(exe.split(" ")[0])]
    if not runnable:
        print("not confirmed: no ranked application's program is on this machine")
        return 1
    for i in range(runnable[0]):
        print(f"rank {i + 1}: {apps['exe'][i]}: program not on this machine")
    top = apps.iloc[runnable[0]]
    print(f"rank {runnable[0] + 1}: {top['exe']}")
    logs = pd.read_parquet(args.summary)
    jobs = logs[(logs["app"] == top["app"]) & (logs["status"] == "ok")]
    code = top["top_code"]
    best = max(((x["saves"], row.path) for row in jobs.itertuples() for x in row.findings if x["code"] == code))
    raw = read_raw(best[1], dxt=False)
    words = raw.exe.split()
    print(f"top application {top['exe']} ({top['jobs']} jobs, recoverable {top['recoverable_low']:.3g}-"
          f"{top['recoverable']:.3g} s), top finding {code}; worst job {best[1]}: {best[0]:.3g} s at stake; "
          f"command: {raw.exe}")
    if os.path.basename(words[0]) != "iogen" or len(words) != 7:
        print("not confirmed: the top program is not benchmarks/c/iogen.c, whose fix this script can apply")
        return 1
    fix = fixed_args(code, words[2:])
    if fix is not None:
        fix, extra = fix
    if fix is None:
        print(f"not confirmed: no fix of {code} known for {' '.join(words[2:])}")
        return 1
    build = CACHE / ("darshan" if "H5F" in raw.modules or "H5D" in raw.modules else "darshan-mpi-noh5")
    exe = str(CACHE / "triage-bin" / "iogen")
    as_is, fixed = [], []
    with tempfile.TemporaryDirectory(prefix="triage-confirm-logs-") as logdir:
        for _ in range(args.reps):
            as_is.append(run_logged([exe, "{dir}"] + words[2:], build, Path(logdir)))
            fixed.append(run_logged([exe, "{dir}"] + fix, build, Path(logdir), extra))
    est = statistics.median(next((x["saves"] for x in r["findings"] if x["code"] == code), 0.0) for r in as_is)
    io_before = statistics.median(r["io_time"] for r in as_is)
    io_after = statistics.median(r["io_time"] for r in fixed)
    measured = io_before - io_after
    ratio = measured / est if est else float("nan")
    still = statistics.median(next((x["saves"] for x in r["findings"] if x["code"] == code), 0.0) for r in fixed)
    print(f"fix: {' '.join(words[2:])} -> {' '.join(fix)} {extra} ({args.reps} runs each, interleaved, {build.name})")
    print(f"| estimate ({code} seconds at stake, as recorded) | measured I/O time saved | ratio | within 2x |")
    print("|---|---|---|---|")
    print(f"| {est * 1000:.2f} ms | {measured * 1000:.2f} ms ({io_before * 1000:.2f} -> {io_after * 1000:.2f} ms) "
          f"| {ratio:.2f} | {'yes' if 0.5 <= ratio <= 2 else 'no'} |")
    print(f"{code} still at stake after the fix: {still * 1000:.2f} ms; load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
