"""Every real Darshan log through `ioadvisor report` and `ioadvisor import darshan`, then corrupt variants of them.

Logs: the darshan-logs repository (github.com/darshan-hpc/darshan-logs, extracted into a cache, never into
this repository) and the example logs of the pydarshan wheel. Per log: exit status, seconds, files found
(HDF5/netCDF ones), finding codes, and whether every H5D dataset is imported or named with a reason.
Fuzz: truncations and byte flips of every log; each variant through `ioadvisor report` (and every
IMPORT_EVERY-th also through `ioadvisor import darshan`), counting exit statuses: a crash is a status of
128 or more (or a signal), and the contract is one stderr line and a non-zero status.

    python -m benchmarks.validation.darshan_corpus [--logs DIR] [--git DARSHAN_LOGS_GIT_DIR] [--variants 12] [--jobs 2]

The logs are taken from --logs (a directory of .darshan files), else extracted from a clone of darshan-logs
(--git: its git directory; else `git clone --depth 1 https://github.com/darshan-hpc/darshan-logs` into the
cache). Results go to benchmarks/results/darshan_corpus.json; the tables in docs/darshan.md come from it.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path.home() / ".cache" / "ioadvisor" / "darshan-logs"
REPO = "https://github.com/darshan-hpc/darshan-logs"
IMPORT_EVERY = 4
ENTRY = Path(sys.executable).parent / "ioadvisor"
CLI = [str(ENTRY)] if ENTRY.exists() else [sys.executable, "-m", "advisor"]
"""The user's command (the venv's ``ioadvisor`` script)."""


def extract(git_dir: str | None, dest: Path) -> list[Path]:
    """The .darshan blobs of a darshan-logs clone, written to ``dest`` (absent blobs, e.g. large ones, skipped)."""
    dest.mkdir(parents=True, exist_ok=True)
    if git_dir is None and any(dest.glob("*.darshan")):
        return sorted(dest.glob("*.darshan"))  # extracted by an earlier run
    if git_dir is None:
        clone = dest / "repo.git"
        if not clone.exists():
            subprocess.run(["git", "clone", "--bare", "--depth", "1", REPO, str(clone)], check=True)
        git_dir = str(clone)
    names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD"], check=True,
                           capture_output=True, text=True).stdout.split()
    out = []
    for name in names:
        if not name.endswith(".darshan"):
            continue
        target = dest / os.path.basename(name)
        if not target.exists():
            blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{name}"], capture_output=True)
            if blob.returncode != 0:
                continue
            target.write_bytes(blob.stdout)
        out.append(target)
    return out


def wheel_logs() -> list[Path]:
    import darshan

    return sorted(Path(darshan.__file__).parent.glob("examples/example_logs/*.darshan"))


def run(argv: list[str], cwd: str) -> tuple[int, float, str, str]:
    t0 = time.perf_counter()
    p = subprocess.run(CLI + argv, cwd=cwd, capture_output=True, text=True, errors="replace",
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return p.returncode, time.perf_counter() - t0, p.stdout, p.stderr


def check_log(log: Path, work: str) -> dict:
    """One real log: the report (JSON) and, when it has H5D records, the import."""
    from instrumentation.darshan_raw import read_raw

    rc, secs, out, err = run(["report", str(log), "--json", "--no-files"], work)
    row = {"log": log.name, "rc": rc, "seconds": round(secs, 2), "error": err.strip().splitlines()[-1:] }
    if rc == 0:
        rep = json.loads(out)
        row.update(files=rep["n_files"], hdf5=sum(f["kind"] != "other" for f in rep["files"]),
                   findings=[f["code"] for f in rep["findings"]], modules=list(rep["modules"]),
                   report_seconds=round(rep["seconds"], 2))
        h5d = rep["h5d"]
        if h5d:
            raw = read_raw(log, modules=("H5D",), dxt=False)
            names = {raw.names.get(int(i)) for i in raw.modules["H5D"].ids}
            out_trace = os.path.join(work, log.name + ".jsonl")
            irc, isecs, _, ierr = run(["import", "darshan", str(log), "-o", out_trace, "--force", "--no-files"], work)
            imported = sum(w.startswith("imported") for _, w in h5d)
            row.update(h5d_datasets=len(names), h5d_reported=len({n for n, _ in h5d}), h5d_imported=imported,
                       h5d_skipped=len(h5d) - imported, import_rc=irc, import_seconds=round(isecs, 2),
                       import_line=ierr.strip().splitlines()[-1:])
    return row


def variants(logs: list[Path], per_log: int, seed: int = 0):
    """(name, bytes) of corrupt variants: truncations at fixed fractions, then single and multi-byte flips."""
    rng = random.Random(seed)
    for log in logs:
        data = log.read_bytes()
        cuts = [0.02, 0.1, 0.3, 0.5, 0.8, 0.98]
        for k in range(per_log):
            if k < len(cuts):
                n = max(1, int(len(data) * cuts[k]))
                yield f"{log.name}.trunc{n}", data[:n]
            else:
                b = bytearray(data)
                for _ in range(1 + (k % 3) * 4):
                    pos = rng.randrange(len(b))
                    b[pos] ^= 1 << rng.randrange(8)
                yield f"{log.name}.flip{k}", bytes(b)


def fuzz_one(name: str, data: bytes, work: str, with_import: bool) -> list[dict]:
    path = os.path.join(work, name)
    with open(path, "wb") as fh:
        fh.write(data)
    rows = []
    cmds = [["report", path]] + ([["import", "darshan", path, "-o", path + ".jsonl", "--force"]] if with_import else [])
    for cmd in cmds:
        rc, secs, _, err = run(cmd, work)
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
        rows.append({"variant": name, "command": cmd[0], "rc": rc, "seconds": round(secs, 2),
                     "stderr_lines": len(lines), "line": lines[-1][:200] if lines else ""})
    os.unlink(path)
    if os.path.exists(path + ".jsonl"):
        os.unlink(path + ".jsonl")
    return rows


def markdown(doc: dict) -> str:
    """The reference tables of docs/darshan.md from a results file."""
    out = ["| log | rc | seconds | files | HDF5/netCDF files | findings | H5D datasets (imported / named) |",
           "|---|---|---|---|---|---|---|"]
    for r in doc["corpus"]:
        h5d = (f"{r['h5d_datasets']} ({r['h5d_imported']} / {r['h5d_skipped']})" if "h5d_datasets" in r else "-")
        found = ", ".join(r.get("findings", [])) or ("none over threshold" if r["rc"] == 0 else r["error"][0][-90:])
        out.append(f"| {r['log'][:48]} | {r['rc']} | {r['seconds']:.1f} | {r.get('files', '-')} | {r.get('hdf5', '-')} "
                   f"| {found} | {h5d} |")
    s = doc["summary"]
    if s.get("runs"):
        # the reader child died by a signal (libdarshan-util's fault), reported in one line by the parent
        contained = collections.Counter(ln.split("crashed (")[1].split(")")[0] for f in doc["fuzz"]
                                        for ln in [f["line"]] if "libdarshan-util crashed (" in ln)
        out += ["", "| corrupt variants | runs (report + import) | exit statuses | crashes (rc >= 128) | "
                    "failures not one line | core files | reader child killed by a signal (contained) |",
                "|---|---|---|---|---|---|---|",
                f"| {s['variants']} | {s['runs']} | {', '.join(f'{k}: {v}' for k, v in sorted(s['rc'].items()))} "
                f"| {s['crashes']} | {s['not_one_line']} | {s['core_files']} | "
                f"{', '.join(f'{k}: {v}' for k, v in sorted(contained.items())) or 0} |"]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", help="directory of .darshan logs (default: extract darshan-logs into the cache)")
    ap.add_argument("--git", help="git directory of a darshan-logs clone")
    ap.add_argument("--variants", type=int, default=12, help="corrupt variants per log (0: no fuzz)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "darshan_corpus.json"))
    ap.add_argument("--table", metavar="RESULTS", help="print the markdown tables of a results file and stop")
    args = ap.parse_args()
    if args.table:
        with open(args.table) as fh:
            print(markdown(json.load(fh)))
        return 0
    logs = sorted(Path(args.logs).glob("*.darshan")) if args.logs else extract(args.git, CACHE)
    logs += wheel_logs()
    work = tempfile.mkdtemp(prefix="ioadvisor-darshan-corpus-")
    try:
        with cf.ThreadPoolExecutor(args.jobs) as pool:
            corpus = list(pool.map(lambda p: check_log(p, work), logs))
        for r in corpus:
            print(f"{r['rc']:>3} {r['seconds']:6.2f}s {r['log'][:60]:<60} files={r.get('files', '-')} "
                  f"hdf5={r.get('hdf5', '-')} {','.join(r.get('findings', [])) or r['error']}", flush=True)
        fuzz = []
        if args.variants:
            jobs = [(n, d, i % IMPORT_EVERY == 0) for i, (n, d) in enumerate(variants(logs, args.variants))]
            with cf.ThreadPoolExecutor(args.jobs) as pool:
                for rows in pool.map(lambda j: fuzz_one(j[0], j[1], work, j[2]), jobs):
                    fuzz += rows
        left = sorted(glob.glob(os.path.join(work, "core*")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "logs": len(corpus), "rc0": sum(r["rc"] == 0 for r in corpus),
        "refused": [(r["log"], r["error"]) for r in corpus if r["rc"] != 0],
        "h5d_logs": sum("h5d_datasets" in r for r in corpus),
        "h5d_unaccounted": sum(r.get("h5d_datasets", 0) - r.get("h5d_reported", 0) for r in corpus),
        "variants": len({f["variant"] for f in fuzz}), "runs": len(fuzz),
        "rc": dict(collections.Counter(f"{f['command']} {f['rc']}" for f in fuzz)),
        "crashes": sum(f["rc"] >= 128 or f["rc"] < 0 for f in fuzz),
        "not_one_line": sum(f["rc"] != 0 and f["stderr_lines"] != 1 for f in fuzz),
        "core_files": len(left),
        "median_seconds": sorted(r["seconds"] for r in corpus)[len(corpus) // 2] if corpus else None,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"summary": summary, "corpus": corpus, "fuzz": fuzz}, fh, indent=1)
    print(json.dumps(summary, indent=1))
    return 0 if summary["crashes"] == 0 and summary["h5d_unaccounted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
