"""Findings on a Darshan log's file-level I/O: stable codes, stated thresholds, seconds at stake, HDF5 advice.

Codes and thresholds follow Drishti (hpc-io/drishti-io, ``drishti/includes/config.py``) where the trigger is
the same, so a user who knows one reads the other: P05/P06 small reads/writes (under 1 MiB: over 10% of the
requests and over 1000 of them), P07/P08 memory/file misalignment (over 10%), P11/P13 random reads/writes
(over 20% and over 1000), P17 metadata time, P19 straggler on a shared file (slowest vs fastest rank over
15%), P21/P22 per-rank byte imbalance (over 30%), M01 no MPI-IO, M02/M03 independent MPI-IO reads/writes
(over 50% and over 1000), S01 STDIO (over 10% of the bytes). Added here: H01 HDF5 metadata-sized requests
(under 1 KiB in an HDF5 file), R01 rank time imbalance over the job.

Seconds at stake are wall-clock seconds the pattern may cost the run, an upper bound: the time of the
affected operations (from DXT's own segment times where DXT recorded the file; else the module's time
counter times the affected share of its operations), summed over ranks and divided by the ranks that did
them (they ran in parallel), and never more than the run time (operations of one rank can overlap: threads,
several files at once). Imbalance findings give the slowest rank's excess over the mean. Where DXT recorded
the offsets, P05/P06/P08/P11/P13 also give ``modelled``: the seconds ``iomodel.filelevel`` predicts the fix
saves (the requests replayed as recorded and coalesced into stripe-aligned requests) on this machine's profile.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from instrumentation.darshan_files import SMALL_BUCKETS, TINY_BUCKETS, FileIO, InterfaceIO, LogFiles
from iomodel.filelevel import replay
from iomodel.profile import load_profile

THRESHOLDS = {
    "small_share": 0.1, "small_count": 1000,
    "misaligned_share": 0.1,
    "random_share": 0.2, "random_count": 1000,
    "metadata_rank_seconds": 30.0, "metadata_share": 0.5, "metadata_min_seconds": 0.1,
    "straggler_share": 0.15,
    "size_imbalance_share": 0.3,
    "time_imbalance_share": 0.15,
    "independent_share": 0.5, "independent_count": 1000,
    "stdio_share": 0.1,
    "hdf5_tiny_share": 0.1, "hdf5_tiny_count": 1000,
    "minor_share": 0.01, "minor_seconds": 0.01,
}
"""The trigger of every finding (Drishti's values where it has the same finding; see the module docstring)."""
MAX_FILES = 10


@dataclass(frozen=True)
class Finding:
    """One problem the counters show, with the files it concerns, how much it may cost and what to do."""

    code: str
    level: str
    """``high``: over its threshold and at least 1% of the run time (and 10 ms) at stake; else ``minor``."""
    title: str
    detail: str
    seconds: float
    seconds_from: str
    """How ``seconds`` was estimated: ``DXT segment times`` or ``counter time share``."""
    threshold: str
    files: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()
    modelled: float | None = None
    """Seconds the fix saves by the file-level model (``iomodel.filelevel``) replaying DXT's requests as
    recorded and as the fix issues them (coalesced, sorted, stripe-aligned); None without DXT offsets."""
    replayed: float | None = None
    """Modelled seconds of the recorded requests replayed (the whole of which ``modelled`` is a part)."""

    def get_config(self) -> dict:
        return {**asdict(self), "files": list(self.files), "advice": list(self.advice)}

    @classmethod
    def from_config(cls, c: dict) -> "Finding":
        return cls(**{**c, "files": tuple(c.get("files", ())), "advice": tuple(c.get("advice", ()))})


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ranks_on(f: FileIO, io: InterfaceIO, nprocs: int) -> int:
    return max(nprocs if io.shared else len(io.rank_seconds) or 1, 1)


def _share_seconds(f: FileIO, io: InterfaceIO, op: str, share: float, nprocs: int,
                   dxt_key: str | None = None) -> tuple[float, str]:
    """Wall seconds of the affected share of one op's time on a file: DXT's own times when it saw the file."""
    if f.dxt is not None and dxt_key is not None:
        table = getattr(f.dxt, dxt_key)
        if op in table:
            return table[op][1] / max(len(f.dxt.ranks), 1), "DXT segment times"
    t = io.read_time if op == "read" else io.write_time
    return t * share / _ranks_on(f, io, nprocs), "counter time share"


def _collect(files, nprocs: int, op: str, affected, dxt_key: str | None = None):
    """(affected, total, seconds, how, files by seconds) of one per-file count over POSIX records."""
    n_aff = n_all = 0
    seconds, hows, per_file = 0.0, set(), []
    for f in files:
        io = f.posix
        if io is None:
            continue
        total = io.reads if op == "read" else io.writes if op == "write" else io.ops
        a = affected(io)
        if total <= 0 or a <= 0:
            continue
        n_aff += a
        n_all += total
        s, how = _share_seconds(f, io, op, a / total, nprocs, dxt_key) if op in ("read", "write") else (
            (io.read_time + io.write_time) * a / total / _ranks_on(f, io, nprocs), "counter time share")
        seconds += s
        hows.add(how)
        per_file.append((s, f.name))
    per_file.sort(reverse=True)
    return n_aff, n_all, seconds, " + ".join(sorted(hows)), tuple(n for _, n in per_file[:MAX_FILES])


MODELLED_OPS = {"P05": ("read",), "P06": ("write",), "P11": ("read",), "P13": ("write",),
                 "P08": ("read", "write")}
"""Findings whose fix the file-level model replays (small, random, misaligned requests), and the ops it moves."""


def modelled_seconds(files, ops: tuple[str, ...], profile) -> tuple[float, float] | None:
    """(seconds saved, seconds replayed) of ``ops`` on the files DXT recorded, per rank then in parallel.

    Each rank's requests on a file are replayed as recorded and coalesced into stripe-size aligned requests
    (``iomodel.filelevel.replay``); a file's seconds are summed over its ranks and divided by their number
    (they ran in parallel), as the log's own seconds at stake are. None when no file has DXT offsets.
    """
    saved = whole = 0.0
    seen = False
    for f in files:
        if f.dxt is None or not f.dxt.requests:
            continue
        by_rank: dict[int, list] = {}
        for rank, op, off, ln in f.dxt.requests:
            if op in ops:
                by_rank.setdefault(rank, []).append((off, ln, np.full(len(off), op == "write")))
        for parts in by_rank.values():
            r = replay(*(np.concatenate(x) for x in zip(*parts)), profile)
            saved += r.at_stake / len(by_rank)
            whole += r.recorded.total / len(by_rank)
            seen = True
    return (saved, whole) if seen else None


def find(log: LogFiles, profile=None) -> tuple[Finding, ...]:
    """Every finding over its threshold, most seconds at stake first (``profile``: iomodel's, for DXT replay)."""
    t = THRESHOLDS
    out: list[Finding] = []
    files = [f for f in log.files if not f.name.startswith("<")]  # <STDIN>/<STDOUT>/<STDERR> kept for S01 only
    hdf5 = {f.name for f in files if f.is_hdf5}
    if profile is None and any(f.dxt is not None and f.dxt.requests for f in files):
        profile = load_profile()

    def add(code, title, detail, seconds, how, threshold, names, advice=()):
        if log.run_time > 0 and seconds > log.run_time:  # overlapping operations (threads, several files)
            seconds, how = log.run_time, how + ", capped at the run time"
        level = "high" if seconds >= max(t["minor_share"] * log.run_time, t["minor_seconds"]) else "minor"
        model = None
        if code in MODELLED_OPS and profile is not None:
            model = modelled_seconds([f for f in files if f.name in set(names)], MODELLED_OPS[code], profile)
        out.append(Finding(code, level, title, detail, float(seconds), how, threshold,
                           names, tuple(advice) + tuple(_hdf5_advice(code, names, hdf5, log)),
                           *(model if model else (None, None))))

    for op, code in (("read", "P05"), ("write", "P06")):
        sizes = "read_sizes" if op == "read" else "write_sizes"
        a, n, s, how, names = _collect(files, log.nprocs, op, lambda io: sum(getattr(io, sizes)[:SMALL_BUCKETS]),
                                       "small")
        if n and a / n > t["small_share"] and a > t["small_count"]:
            add(code, f"small {op}s", f"{a:,} of {n:,} POSIX {op}s ({_pct(a / n)}) are under 1 MiB", s, how,
                f"> {_pct(t['small_share'])} and > {t['small_count']} {op}s under 1 MiB", names,
                ["aggregate requests: larger transfers per call, or MPI-IO collective buffering "
                 "(romio_cb_read/romio_cb_write=enable)"])
    for op, code in (("read", "P11"), ("write", "P13")):
        seq = "seq_reads" if op == "read" else "seq_writes"
        a, n, s, how, names = _collect(
            files, log.nprocs, op,
            lambda io, seq=seq, op=op: max((io.reads if op == "read" else io.writes) - getattr(io, seq), 0),
            "backward")
        if n and a / n > t["random_share"] and a > t["random_count"]:
            add(code, f"random {op}s", f"{a:,} of {n:,} POSIX {op}s ({_pct(a / n)}) are not sequential "
                f"(start before the previous {op}'s end)", s, how,
                f"> {_pct(t['random_share'])} and > {t['random_count']} non-sequential {op}s", names,
                [f"order {op}s by offset, or gather them into fewer larger ones (MPI-IO collective I/O does so)"])
    for attr, code, what in (("file_not_aligned", "P08", "file offset"), ("mem_not_aligned", "P07", "memory buffer")):
        a, n, s, how, names = _collect(files, log.nprocs, "any", lambda io, attr=attr: getattr(io, attr))
        if n and a / n > t["misaligned_share"]:
            align = max((f.posix.file_alignment for f in files if f.posix), default=0)
            add(code, f"misaligned {what}s", f"{a:,} of {n:,} POSIX requests ({_pct(a / n)}) are not aligned "
                f"to the {what} alignment" + (f" ({align} B)" if code == "P08" and align else ""), s, how,
                f"> {_pct(t['misaligned_share'])} of the requests", names,
                ["align requests to the file system's block/stripe size" if code == "P08" else
                 "allocate I/O buffers aligned (posix_memalign) to the memory alignment"])
    _metadata(files, log, add)
    _hdf5_tiny(files, log, add)
    _imbalance(files, log, add)
    _mpiio(files, log, add)
    _stdio(log, add)
    out.sort(key=lambda x: (-x.seconds, x.code))
    return tuple(out)


def _metadata(files, log: LogFiles, add) -> None:
    t = THRESHOLDS
    meta = sum(f.posix.meta_time for f in files if f.posix)
    io_time = sum(f.posix.seconds for f in files if f.posix)
    per_rank = meta / max(log.nprocs, 1)
    if io_time and (per_rank > t["metadata_rank_seconds"] or (
            meta / io_time > t["metadata_share"] and per_rank > t["metadata_min_seconds"])):
        worst = sorted(((f.posix.meta_time, f.name) for f in files if f.posix and f.posix.meta_time), reverse=True)
        add("P17", "metadata time", f"opens, stats, seeks and syncs took {meta:.3g} s over all ranks "
            f"({_pct(meta / io_time)} of the POSIX I/O time, {per_rank:.3g} s per rank)", per_rank,
            "counter time share", f"> {t['metadata_rank_seconds']:.0f} s per rank, or > "
            f"{_pct(t['metadata_share'])} of the I/O time and > {t['metadata_min_seconds']} s per rank",
            tuple(n for _, n in worst[:MAX_FILES]),
            ["open each file once (not per step or per rank), and avoid stat/seek between requests"])


def _hdf5_tiny(files, log: LogFiles, add) -> None:
    t = THRESHOLDS
    h5 = [f for f in files if f.is_hdf5 and f.posix is not None]
    a, n, s, how, names = _collect(
        h5, log.nprocs, "any", lambda io: sum(io.read_sizes[:TINY_BUCKETS]) + sum(io.write_sizes[:TINY_BUCKETS]))
    if n and a / n > t["hdf5_tiny_share"] and a > t["hdf5_tiny_count"]:
        add("H01", "HDF5 metadata-sized requests", f"{a:,} of {n:,} POSIX requests ({_pct(a / n)}) to HDF5 files "
            "are under 1 KiB: HDF5 metadata (object headers, B-tree and heap nodes) read and written piecewise",
            s, how, f"> {_pct(t['hdf5_tiny_share'])} and > {t['hdf5_tiny_count']} requests under 1 KiB", names)


def _imbalance(files, log: LogFiles, add) -> None:
    t = THRESHOLDS
    if log.nprocs <= 1:
        return
    stragglers = []
    for f in files:
        io = f.posix
        if io is None or not io.shared:
            continue
        slow, fast = io.slowest_rank[2], io.fastest_rank[2]
        if slow > 0 and (slow - fast) / slow > t["straggler_share"]:
            stragglers.append((max(slow - io.seconds / log.nprocs, 0.0), f.name, io))
    if stragglers:
        stragglers.sort(key=lambda x: -x[0])
        s, name, io = stragglers[0]
        add("P19", "straggler on shared files", f"{len(stragglers)} shared file(s) where the slowest rank took over "
            f"{_pct(t['straggler_share'])} longer than the fastest; worst {name}: rank {io.slowest_rank[0]} "
            f"{io.slowest_rank[2]:.3g} s vs rank {io.fastest_rank[0]} {io.fastest_rank[2]:.3g} s", s,
            "counter time share", f"(slowest - fastest) / slowest > {_pct(t['straggler_share'])}",
            tuple(n for _, n, _ in stragglers[:MAX_FILES]),
            ["balance the data per rank, or let MPI-IO collective I/O pick aggregators"])
    for op, code in (("read", "P22"), ("write", "P21")):
        bad = []
        for f in files:
            io = f.posix
            if io is None or io.shared or len(io.rank_bytes) < 2:
                continue
            b = list(io.rank_bytes.values())
            if max(b) > 0 and (max(b) - min(b)) / max(b) > t["size_imbalance_share"] and (
                    io.bytes_read if op == "read" else io.bytes_written):
                secs = list(io.rank_seconds.values())
                bad.append((max(secs) - sum(secs) / len(secs), f.name))
        if bad:
            bad.sort(reverse=True)
            add(code, f"per-rank {op} size imbalance", f"{len(bad)} file(s) accessed by several ranks with over "
                f"{_pct(t['size_imbalance_share'])} difference between the most and least bytes per rank",
                bad[0][0], "counter time share", f"(max - min) / max bytes per rank > {_pct(t['size_imbalance_share'])}",
                tuple(n for _, n in bad[:MAX_FILES]), ["give every rank an even share of the data"])
    per_rank: dict[int, float] = {}
    for f in files:
        for r, s in (f.posix.rank_seconds.items() if f.posix else ()):
            per_rank[r] = per_rank.get(r, 0.0) + s
        if f.posix is not None and f.posix.shared:
            for r in range(log.nprocs):
                per_rank[r] = per_rank.get(r, 0.0) + f.posix.seconds / log.nprocs
    if len(per_rank) >= 2:
        mx, mean = max(per_rank.values()), sum(per_rank.values()) / log.nprocs
        if mx > 0 and (mx - mean) / mx > t["time_imbalance_share"]:
            worst = max(per_rank, key=per_rank.get)
            add("R01", "rank time imbalance", f"rank {worst} spent {mx:.3g} s in POSIX I/O, the mean over "
                f"{log.nprocs} ranks is {mean:.3g} s (shared files' time split evenly)", mx - mean,
                "counter time share", f"(max - mean) / max I/O seconds per rank > {_pct(t['time_imbalance_share'])}",
                (), ["spread the I/O over ranks (e.g. not all on rank 0), or use collective I/O"])


def _mpiio(files, log: LogFiles, add) -> None:
    t = THRESHOLDS
    if log.nprocs <= 1:
        return
    if "MPI-IO" not in log.modules:
        # data files: written by several ranks, or read by several with at least 1 MiB moved (not the Python
        # modules and shared libraries every rank reads)
        multi = [f for f in files if f.posix and (f.posix.shared or len(f.posix.rank_seconds) > 1)
                 and (f.posix.bytes_written > 0 or f.posix.bytes_read >= 1 << 20)]
        if multi:
            s = sum(f.posix.seconds for f in multi) / log.nprocs
            add("M01", "no MPI-IO", f"{len(multi)} file(s) accessed by several of the {log.nprocs} ranks "
                "through POSIX only", s, "counter time share", "several ranks on a file, no MPI-IO module",
                tuple(f.name for f in multi[:MAX_FILES]),
                ["use MPI-IO (or HDF5/PnetCDF over MPI-IO) for files several ranks share"])
        return
    for op, code in (("read", "M02"), ("write", "M03")):
        indep = total = 0
        s = 0.0
        names = []
        for f in files:
            io = f.interfaces.get("MPI-IO")
            if io is None:
                continue
            n = io.reads if op == "read" else io.writes
            coll = io.collective_reads if op == "read" else io.collective_writes
            if n and n - coll:
                indep += n - coll
                total += n
                s += (io.read_time if op == "read" else io.write_time) * (n - coll) / n / _ranks_on(f, io, log.nprocs)
                names.append(f.name)
        if total and indep / total > t["independent_share"] and indep > t["independent_count"]:
            add(code, f"independent MPI-IO {op}s", f"{indep:,} of {total:,} MPI-IO {op}s ({_pct(indep / total)}) "
                "are independent", s, "counter time share",
                f"> {_pct(t['independent_share'])} and > {t['independent_count']} independent {op}s",
                tuple(names[:MAX_FILES]), [f"use collective {op}s (MPI_File_{op}_all)"])


def _stdio(log: LogFiles, add) -> None:
    t = THRESHOLDS
    stdio = [f for f in log.files if "STDIO" in f.interfaces]
    total = sum(max(f.interfaces[k].nbytes for k in f.interfaces) for f in log.files)
    nbytes = sum(f.interfaces["STDIO"].nbytes for f in stdio)
    if total and nbytes / total > t["stdio_share"]:
        s = sum(f.interfaces["STDIO"].seconds for f in stdio) / max(log.nprocs, 1)
        add("S01", "STDIO", f"{nbytes:,} of {total:,} bytes ({_pct(nbytes / total)}) moved through STDIO "
            "(fread/fwrite/fprintf)", s, "counter time share", f"> {_pct(t['stdio_share'])} of the bytes",
            tuple(f.name for f in sorted(stdio, key=lambda f: -f.interfaces["STDIO"].nbytes)[:MAX_FILES]),
            ["move bulk data through POSIX read/write, MPI-IO or HDF5, not STDIO"])


# ---------------------------------------------------------------------------- HDF5-aware advice

HDF5_ADVICE = {
    "P08": "HDF5: H5Pset_alignment(fapl, threshold, alignment) puts objects over `threshold` bytes on the "
           "file system's block/stripe boundary (POSIX_FILE_ALIGNMENT in the log)",
    "P05": "HDF5: a chunk cache too small for the chunks one read touches re-reads them piecewise: "
           "H5Pset_chunk_cache(dapl, nslots, nbytes, w0) (or H5Pset_cache on the file) to hold them",
    "P11": "HDF5: random reads across chunks: a chunk cache that holds a row of chunks "
           "(H5Pset_chunk_cache), or chunks shaped like the reads (`ioadvisor run` + `advise` picks them)",
    "H01": "HDF5: paged aggregation gathers metadata into pages: H5Pset_file_space_strategy(fcpl, "
           "H5F_FSPACE_STRATEGY_PAGE, 0, 0), H5Pset_file_space_page_size(fcpl, 1 MiB) and "
           "H5Pset_page_buffer_size(fapl, ...); H5Pset_meta_block_size and H5Pset_libver_bounds(latest) help too",
    "M02": "HDF5: collective transfers: H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE)",
    "M03": "HDF5: collective transfers: H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE)",
}
COLLECTIVE_METADATA = ("HDF5 over MPI-IO: collective metadata: H5Pset_all_coll_metadata_ops(fapl, 1) and "
                       "H5Pset_coll_metadata_write(fapl, 1), so ranks do not each read the same metadata")
for _code in ("P06", "P13"):
    HDF5_ADVICE[_code] = HDF5_ADVICE["P05"].replace("re-reads them piecewise", "writes partial chunks back")


def _hdf5_advice(code: str, names: tuple[str, ...], hdf5: set[str], log: LogFiles) -> list[str]:
    if not any(n in hdf5 for n in names):
        return []
    out = [HDF5_ADVICE[code]] if code in HDF5_ADVICE else []
    if code in ("H01", "P05", "P06", "P17") and log.nprocs > 1 and "MPI-IO" in log.modules:
        out.append(COLLECTIVE_METADATA)
    return out


def trace_command(log: LogFiles) -> str:
    """The command that captures the dataset-level accesses `ioadvisor advise` needs, for this log's program."""
    exe = log.exe.split()[0] if log.exe.strip() else "./program"
    args = " ".join(log.exe.split()[1:4])
    launch = f"mpiexec -n {log.nprocs} " if log.nprocs > 1 else ""
    return f"{launch}ioadvisor run -o run.jsonl -- {exe}{' ' + args if args else ''}; ioadvisor advise run.jsonl"


__all__ = ["COLLECTIVE_METADATA", "Finding", "HDF5_ADVICE", "THRESHOLDS", "find", "trace_command"]
