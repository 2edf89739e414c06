"""Confirm the top application's finding: replay its worst job as recorded and with the fix, under Darshan.

    .venv/bin/python -m benchmarks.validation.triage_confirm SUMMARY [--reps 7] [--code P08] [--warm]

SUMMARY: a triage summary made with ``--names`` over benchmarks/speed/triage_archive.py's archive. Takes the top
application (``summary.apps.parquet``), its top finding (or ``--code``), and the job where that finding
recovers the most seconds; reads the job's command line from its log; runs it again under the same
darshan-runtime build as recorded and as the finding's advice changes it, ``--reps`` times each,
interleaved; each run's log is summarized as triage does. Cold by default: the program empties its file's page
cache before reading it back (``IOGEN_COLD=1``), as a job on a node that did not write the data reads it.
Estimate: what triage says the fix recovers (the finding's ``saves``) in the as-recorded runs' logs; measured:
the drop of the critical-path I/O time (``io_time``) from as-recorded to fixed runs (medians). iogen is built
from benchmarks/c/iogen.c for the run (``h5cc -shlib``), so the fixes it knows are the source's.

The fix is applied to the program through its arguments, so this knows one program: benchmarks/c/iogen.c
(``iogen DIR PATTERN SEED COUNT SIZE FILES``): small requests (P05/P06) -> the same bytes in 1 MiB requests,
or for its HDF5 patterns the HDF5 advice, a chunk cache that holds what the reads touch (``IOGEN_CACHE``);
misaligned requests (P08) -> request sizes rounded up to 4 KiB, or for its HDF5 patterns the HDF5 advice
``H5Pset_alignment`` (``IOGEN_ALIGN=4096``); STDIO (S01) -> POSIX; random reads (P11) -> sequential, or the
chunk cache for HDF5. Another program at the top is reported as not confirmed.
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
    if code in ("P05", "P11") and pattern.startswith("h5"):  # the HDF5 advice: a chunk cache holding the reads'
        return args, {"IOGEN_CACHE": str(count * max(size, 4) + (1 << 20))}  # chunks (here: the whole dataset)
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


def build_iogen(work: Path) -> str:
    exe = work / "iogen"
    subprocess.run(["h5cc", "-shlib", "-O1", "-o", str(exe), str(Path(__file__).parents[1] / "c" / "iogen.c")],
                   check=True)
    return str(exe)


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
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--code", help="confirm this finding of the top application instead of its top one")
    ap.add_argument("--warm", action="store_true", help="read back from the page cache (default: cold)")
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
    code = args.code or top["top_code"]
    best = max(((x["saves"], x["seconds"], row.path) for row in jobs.itertuples() for x in row.findings
                if x["code"] == code))[::2]
    raw = read_raw(best[1], dxt=False)
    words = raw.exe.split()
    print(f"top application {top['exe']} ({top['jobs']} jobs, recoverable {top['recoverable_low']:.3g}-"
          f"{top['recoverable']:.3g} s), finding {code} (top: {top['top_code']}); worst job {best[1]}: "
          f"{best[0]:.3g} s recoverable; "
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
    cold = {} if args.warm else {"IOGEN_COLD": "1"}
    as_is, fixed = [], []
    with tempfile.TemporaryDirectory(prefix="triage-confirm-logs-") as logdir:
        exe = build_iogen(Path(logdir))
        for _ in range(args.reps):
            as_is.append(run_logged([exe, "{dir}"] + words[2:], build, Path(logdir), cold))
            fixed.append(run_logged([exe, "{dir}"] + fix, build, Path(logdir), {**cold, **extra}))
    est = statistics.median(next((x["saves"] for x in r["findings"] if x["code"] == code), 0.0) for r in as_is)
    io_before = statistics.median(r["io_time"] for r in as_is)
    io_after = statistics.median(r["io_time"] for r in fixed)
    measured = io_before - io_after
    ratio = measured / est if est else float("nan")
    still = statistics.median(next((x["saves"] for x in r["findings"] if x["code"] == code), 0.0) for r in fixed)
    at_stake = statistics.median(next((x["seconds"] for x in r["findings"] if x["code"] == code), 0.0) for r in as_is)
    spread = statistics.median(abs(a["io_time"] - b["io_time"]) for a, b in zip(as_is[::2], as_is[1::2])) \
        if len(as_is) > 1 else 0.0
    print(f"fix: {' '.join(words[2:])} -> {' '.join(fix)} {extra} ({args.reps} runs each, interleaved, {build.name}, "
          f"{'warm' if args.warm else 'cold'})")
    print(f"| {code}: seconds at stake | estimate (what triage says the fix recovers) | measured I/O time saved "
          "| ratio | within 2x |")
    print("|---|---|---|---|---|")
    within = 0.5 <= ratio <= 2 if est else abs(measured) <= max(spread, 0.1 * io_before)
    print(f"| {at_stake * 1000:.2f} ms | {est * 1000:.2f} ms | {measured * 1000:.2f} ms ({io_before * 1000:.2f} -> "
          f"{io_after * 1000:.2f} ms) | {ratio:.2f} | {'yes' if within else 'no'} |")
    print(f"(as-recorded runs differ by {spread * 1000:.2f} ms between pairs, median)")
    print(f"{code} still at stake after the fix: {still * 1000:.2f} ms; load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
