"""One Darshan log -> one summary row: job, executable, ranks, times, findings, recoverable seconds.

The row rests on the per-log report's parts (``instrumentation.darshan_files.characterize`` and
``advisor.darshan_findings.find``), read through the crash-proof reader (``darshan_raw.read_raw_many``: a corrupt
log that makes libdarshan-util fault stays in a child process). A log that cannot be read is a row too, with
``status == "bad"`` and its one-line reason: it is counted, listed, and not read again on a rerun.

Recoverable seconds. Each finding's ``saves`` is what its fix gives back (``recover.recovers``: the file-level
model's saving where DXT recorded the requests, nothing for misalignment on local file systems, else the
seconds at stake, the wall time of the operations it concerns). Findings can concern the same seconds (small
reads that are also random), so the log's recoverable time is an interval: at least the largest single finding's, at most the sum of all of them,
never more than the log's I/O time (``critical_io_seconds``: the slowest rank's, at most the run time). ``recoverable`` is the upper end capped this way; ``recoverable_low`` the
lower end. Minor findings (under 1% of the run time) are left out, as the per-log report marks them.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass

from advisor.darshan_findings import find, trace_command
from instrumentation.darshan_files import characterize

from .recover import recovers
from instrumentation.darshan_raw import NOT_USED, DarshanError, RawLog, is_parser_text, read_parser_text, read_raw_many

HDF5_TIME_COUNTERS = {"H5F": ("H5F_F_META_TIME",),
                      "H5D": ("H5D_F_READ_TIME", "H5D_F_WRITE_TIME", "H5D_F_META_TIME")}
"""Darshan's HDF5 modules' time counters (seconds summed over the ranks of each record)."""
TRACEABLE = ("P05", "P06", "P11", "P13", "H01")
"""Findings on HDF5 files whose fix is a layout or cache change: ``ioadvisor run`` + ``advise`` picks it."""


@dataclass(frozen=True)
class RowOptions:
    """What a worker needs to summarize logs."""

    dxt: bool = True
    """Read DXT segments (the modelled savings need them; logs without DXT are unaffected)."""
    names: bool = False
    """Keep executable and user names; else a keyed hash of each (``name_key``)."""
    name_key: str = ""
    """Key of the names' hash (a site secret makes them unguessable from a list of common program names)."""
    timeout: float = 120.0
    """Seconds one log may take to read before it counts as bad."""


def content_hash(path: str | os.PathLike) -> str:
    """The log's identity across reruns and renames: BLAKE2b-128 of its bytes."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pseudonym(name: str, key: str = "") -> str:
    """A stable 12-hex-digit stand-in for an executable or user name."""
    return hashlib.blake2b(name.encode(), digest_size=6, key=key.encode()[:64]).hexdigest()


def application(exe: str) -> str:
    """The program a job ran: the executable, or the script an interpreter ran (python x.py -> x.py)."""
    words = exe.split()
    if not words:
        return "(unknown)"
    first = os.path.basename(words[0])
    if first.startswith(("python", "Rscript", "julia", "perl", "ruby", "bash", "sh")) and len(words) > 1:
        script = next((w for w in words[1:] if not w.startswith("-")), "")
        if script:
            return f"{first} {os.path.basename(script)}"
    return words[0]


def _hdf5_seconds(raw: RawLog) -> float | None:
    """Seconds in HDF5 calls per rank (H5D data and metadata, H5F metadata), None without those modules."""
    total, seen = 0.0, False
    for mod, names in HDF5_TIME_COUNTERS.items():
        m = raw.modules.get(mod)
        if m is None:
            continue
        seen = True
        for name in names:
            total += float(m.column(name).sum())
    return total / max(raw.nprocs, 1) if seen else None


def summarize_many(items: list[tuple[str, str]], opts: RowOptions = RowOptions()) -> list[dict]:
    """The summary rows of (path, content hash) pairs (``status`` ok, no-io or bad); never raises for a bad log.

    Binary logs are read by one crash-proof child process for the whole list (``read_raw_many``);
    ``read_seconds`` is each log's share of that read plus its own judging."""
    t0 = time.perf_counter()
    raws: dict[int, object] = {}
    binary = []
    for i, (path, _) in enumerate(items):
        try:
            if is_parser_text(path):
                raws[i] = read_parser_text(path)
            else:
                binary.append(i)
        except (DarshanError, OSError, ValueError) as exc:
            raws[i] = exc
    if binary:
        got = read_raw_many([items[i][0] for i in binary], dxt=opts.dxt, timeout=opts.timeout)
        raws.update(zip(binary, got))
    share = (time.perf_counter() - t0) / max(len(items), 1)
    rows = []
    for i, (path, digest) in enumerate(items):
        t = time.perf_counter()
        rows.append(_row(path, digest, raws[i], opts))
        rows[-1]["read_seconds"] = share + time.perf_counter() - t
    return rows


def summarize(path: str, digest: str, opts: RowOptions = RowOptions()) -> dict:
    """The summary row of one log (see ``summarize_many``)."""
    return summarize_many([(path, digest)], opts)[0]


def _row(path: str, digest: str, raw, opts: RowOptions) -> dict:
    try:
        if isinstance(raw, Exception):
            raise raw
        row = _summarize(raw, opts)
    except (DarshanError, OSError, ValueError, KeyError, IndexError, TypeError, ZeroDivisionError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if reason.startswith(f"{path}: "):
            reason = reason[len(path) + 2:]
        row = {**EMPTY, "status": "bad", "reason": reason[:300], "start_time": _mtime(path)}
    return {**row, "path": path, "content_hash": digest}


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


EMPTY = {"status": "ok", "reason": "", "job_id": 0, "exe": "", "app": "", "user": "", "ranks": 0,
         "start_time": 0.0, "run_time": 0.0, "io_time": 0.0, "hdf5_time": None, "n_files": 0, "n_hdf5_files": 0,
         "dxt": False, "findings": [], "codes": "", "recoverable": 0.0, "recoverable_low": 0.0,
         "trace_hint": ""}


def _summarize(raw: RawLog, opts: RowOptions) -> dict:
    path = raw.source
    log = characterize(raw, reach_files=False)  # a center's archive outlives the files: names and counters only
    failed = {m: why for m, why in raw.unread.items() if why != NOT_USED}
    if not log.files and failed:
        mod, why = next(iter(failed.items()))
        raise DarshanError(f"cannot read module {mod} ({why}): truncated, corrupt, or newer than this pydarshan")
    files = [f for f in log.files if not f.name.startswith("<")]
    io_time = critical_io_seconds(files, log.run_time)
    findings = [x for x in find(log) if x.level == "high"]
    hdf5 = {f.name for f in files if f.is_hdf5}
    rows = []
    for x in findings:
        saves = recovers(x.code, x.seconds, x.modelled, x.files, raw.fs_type)
        rows.append({"code": x.code, "title": x.title, "seconds": float(x.seconds),
                     "modelled": None if x.modelled is None else float(x.modelled), "saves": saves,
                     "hdf5": any(n in hdf5 for n in x.files), "advice": " | ".join(x.advice)})
    cap = io_time if io_time > 0 else float("inf")
    high = min(sum(r["saves"] for r in rows), cap) if rows else 0.0
    low = min(max((r["saves"] for r in rows), default=0.0), high)
    exe, user = application(raw.exe), str(raw.uid)
    if not opts.names:
        exe, user = pseudonym(exe, opts.name_key), pseudonym(user, opts.name_key)
    return {**EMPTY, "status": "ok" if files else "no-io", "job_id": int(raw.job_id or _job_from_name(path)),
            "exe": exe, "app": f"{exe}@{user}", "user": user, "ranks": int(log.nprocs),
            "start_time": float(raw.start_time), "run_time": float(log.run_time), "io_time": float(io_time),
            "hdf5_time": _hdf5_seconds(raw), "n_files": len(files), "n_hdf5_files": len(hdf5),
            "dxt": any(f.dxt is not None for f in files), "findings": rows, "codes": ",".join(r["code"] for r in rows),
            "recoverable": float(high), "recoverable_low": float(low),
            "trace_hint": trace_command(log) if opts.names else ""}


def critical_io_seconds(files, run_time: float) -> float:
    """I/O seconds on the job's critical path, an upper bound: the slowest rank's seconds over the files ranks
    had to themselves, plus each shared file's slowest rank; at most the run time. (The mean over ranks
    would hide a job where rank 0 does all the I/O: findings like R01 then exceed it.)"""
    per_rank: dict[int, float] = {}
    shared = 0.0
    for f in files:
        io = f.interfaces.get("POSIX") or f.interfaces.get("STDIO") or f.interfaces.get("MPI-IO")
        if io is None:
            continue
        if io.shared:
            shared += io.slowest_rank[2] if io.slowest_rank[0] >= 0 else io.seconds
        elif io.rank_seconds:
            for r, sec in io.rank_seconds.items():
                per_rank[r] = per_rank.get(r, 0.0) + sec
        else:
            shared += io.seconds
    total = max(per_rank.values(), default=0.0) + shared
    return min(total, run_time) if run_time > 0 else total


def _job_from_name(path: str) -> int:
    """Darshan names logs USER_EXE_idJOBID_...: the job id when the log itself has none."""
    base = os.path.basename(path)
    i = base.find("_id")
    if i < 0:
        return 0
    digits = ""
    for ch in base[i + 3:]:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits else 0


def next_step(code: str, hdf5: bool, advice: str, trace_hint: str) -> str:
    """The exact next step for a finding: trace the program for dataset-level advice, or the setting to change."""
    if hdf5 and code in TRACEABLE:
        hint = trace_hint or "mpiexec -n RANKS ioadvisor run -o run.jsonl -- PROGRAM ARGS; ioadvisor advise run.jsonl"
        return f"{hint}  (dataset-level chunk/cache advice); meanwhile: {advice.split(' | ')[-1]}"
    return advice.split(" | ")[0] if advice else "see `ioadvisor report LOG` for this job"


__all__ = ["EMPTY", "RowOptions", "TRACEABLE", "application", "content_hash", "next_step", "pseudonym", "summarize",
           "summarize_many"]
