"""What a Darshan log says about each file: counters of the POSIX, MPI-IO and STDIO modules, DXT segments.

Every log has these modules (H5D is off unless darshan-runtime was built with ``--enable-hdf5-mod``), so this
is what a report rests on for most logs: per file and interface, operation and byte counts, request-size
histograms, sequential and consecutive counts, alignment, metadata time, which ranks did the I/O and how
long each took. Files are told HDF5 or netCDF by their H5F / PNETCDF records, by name, and by the format's
signature in their first bytes when the file is still there.

Pure computation on ``darshan_raw.RawLog`` (no pydarshan here).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

import numpy as np

from .darshan_raw import RawDxt, RawLog, RawModule

INTERFACES = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}
"""Module -> counter prefix."""
SIZE_BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
                "100M_1G", "1G_PLUS")
SMALL_BUCKETS = 5
"""Buckets below 1 MiB: Drishti's "small request" (its small_bytes threshold, 1048576)."""
TINY_BUCKETS = 2
"""Buckets below 1 KiB: in an HDF5 file these are metadata (superblock, object headers, B-tree and heap
nodes), which HDF5 reads and writes in pieces of tens to hundreds of bytes."""
SMALL_BYTES = 1 << 20
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
NETCDF_SIGNATURES = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
HDF5_NAMES = (".h5", ".hdf5", ".hdf", ".he5", ".h5p", ".h5m", ".mat")
NETCDF_NAMES = (".nc", ".nc4", ".netcdf", ".cdf")
SPECIAL = ("<STDIN>", "<STDOUT>", "<STDERR>")


@dataclass(frozen=True)
class InterfaceIO:
    """One file through one interface (POSIX, MPI-IO or STDIO), summed over the ranks that used it."""

    interface: str
    reads: int = 0
    writes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0
    opens: int = 0
    seeks: int = 0
    stats: int = 0
    read_sizes: tuple[int, ...] = (0,) * 10
    write_sizes: tuple[int, ...] = (0,) * 10
    seq_reads: int = 0
    seq_writes: int = 0
    consec_reads: int = 0
    consec_writes: int = 0
    file_not_aligned: int = 0
    mem_not_aligned: int = 0
    file_alignment: int = 0
    collective_reads: int = 0
    collective_writes: int = 0
    nonblocking: int = 0
    shared: bool = False
    """One record for all ranks (rank -1): the counters are sums, the rank counters below hold the extremes."""
    fastest_rank: tuple[int, int, float] = (-1, 0, 0.0)
    slowest_rank: tuple[int, int, float] = (-1, 0, 0.0)
    """(rank, bytes, seconds) of the fastest and slowest rank on a shared file."""
    rank_seconds: dict[int, float] = field(default_factory=dict)
    rank_bytes: dict[int, int] = field(default_factory=dict)
    """Per-rank I/O time and bytes where the records are per rank."""

    @property
    def ops(self) -> int:
        return self.reads + self.writes

    @property
    def nbytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def seconds(self) -> float:
        return self.read_time + self.write_time + self.meta_time


@dataclass(frozen=True)
class DxtFile:
    """DXT segments of one file, per op: request sizes and sequentiality measured one by one."""

    module: str
    ranks: tuple[int, ...]
    reads: int
    writes: int
    small: dict[str, tuple[int, float, int]]
    """op -> (requests under 1 MiB, their seconds, their bytes)."""
    large: dict[str, tuple[int, float, int]]
    backward: dict[str, tuple[int, float]]
    """op -> (requests starting before the previous one's end on the same rank, their seconds)."""
    rank_seconds: dict[int, float]
    requests: tuple = field(default=(), compare=False, repr=False)
    """(rank, op, offset array, length array) of each recorded segment list, in time order."""


@dataclass(frozen=True)
class FileIO:
    """What the log holds about one file."""

    name: str
    kind: str
    """``hdf5``, ``netcdf`` (classic/64-bit/CDF-5), ``netcdf-or-hdf5`` (by name only) or ``other``."""
    evidence: tuple[str, ...]
    interfaces: dict[str, InterfaceIO]
    dxt: DxtFile | None = None
    h5f_mpiio: bool = False

    @property
    def posix(self) -> InterfaceIO | None:
        return self.interfaces.get("POSIX")

    @property
    def seconds(self) -> float:
        """The file's I/O time at the lowest level that saw it (POSIX, else STDIO, else MPI-IO)."""
        low = self.interfaces.get("POSIX") or self.interfaces.get("STDIO") or self.interfaces.get("MPI-IO")
        return low.seconds if low else 0.0

    @property
    def is_hdf5(self) -> bool:
        return self.kind in ("hdf5", "netcdf-or-hdf5")


@dataclass(frozen=True)
class LogJob:
    """The job a Darshan log describes: the log, the program, its processes and run time, the modules."""

    source: str
    exe: str
    nprocs: int
    run_time: float
    runtime_version: str
    modules: dict[str, int]
    unread: dict[str, str]

    def job_fields(self) -> dict:
        """This job's fields by name (to build another record of the same job)."""
        return {f.name: getattr(self, f.name) for f in fields(LogJob)}


@dataclass(frozen=True)
class LogFiles(LogJob):
    """Every file of a log with its I/O, and the job around it."""

    files: tuple[FileIO, ...]
    partial: tuple[str, ...] = ()
    """Modules whose records are incomplete (Darshan ran out of record memory)."""


def characterize(raw: RawLog, *, reach_files: bool = True) -> LogFiles:
    """Per-file I/O of a log, HDF5/netCDF files identified."""
    by_file: dict[int, dict[str, InterfaceIO]] = {}
    for mod, prefix in INTERFACES.items():
        m = raw.modules.get(mod)
        if m is None or not len(m.ids):
            continue
        for rec_id in sorted(set(m.ids.tolist())):  # np.unique's order; np.unique imports numpy.ma (a triage rerun)
            rows = np.flatnonzero(m.ids == rec_id)
            by_file.setdefault(int(rec_id), {})[mod] = _interface(m, prefix, rows)
    h5f = _names_of(raw, "H5F") | _names_of(raw, "H5D", dataset=True)
    h5f_mpiio = set()
    if "H5F" in raw.modules:
        m = raw.modules["H5F"]
        use = m.column("H5F_USE_MPIIO")
        h5f_mpiio = {raw.names.get(int(i), "") for i, u in zip(m.ids, use) if u > 0}
    pnetcdf = _names_of(raw, "PNETCDF_FILE") | _names_of(raw, "PNETCDF_VAR", dataset=True)
    dxt = _dxt_by_file(raw)
    files = []
    named = {int(i): raw.names.get(int(i), f"<record {int(i):#x}>") for i in by_file}
    for rec_id, ifaces in by_file.items():
        name = named[rec_id]
        kind, evidence = identify(name, in_h5f=name in h5f, in_pnetcdf=name in pnetcdf, reach_file=reach_files)
        files.append(FileIO(name, kind, evidence, ifaces, dxt.get(rec_id), name in h5f_mpiio))
    files.sort(key=lambda f: -f.seconds)
    partial = tuple(m.name for m in raw.modules.values() if m.partial)
    return LogFiles(raw.source, raw.exe, raw.nprocs, raw.run_time, raw.runtime_version, dict(raw.module_versions),
                    dict(raw.unread), tuple(files), partial)


def identify(name: str, *, in_h5f: bool = False, in_pnetcdf: bool = False,
             reach_file: bool = True) -> tuple[str, tuple[str, ...]]:
    """(kind, evidence) of a file: HDF5/netCDF records first, then the signature, then the name."""
    evidence = []
    if in_h5f:
        evidence.append("H5F/H5D records")
    if in_pnetcdf:
        evidence.append("PNETCDF records")
    sig = signature(name) if reach_file else None
    if sig:
        evidence.append(f"{sig} signature in the file")
    low = name.lower()
    by_name = next((e for e in HDF5_NAMES + NETCDF_NAMES if low.endswith(e)), None)
    if by_name:
        evidence.append(f"name ends {by_name}")
    if in_h5f or sig == "HDF5":
        return "hdf5", tuple(evidence)
    if sig == "netCDF" or in_pnetcdf:
        return "netcdf", tuple(evidence)
    if by_name in HDF5_NAMES:
        return "hdf5", tuple(evidence)
    if by_name in NETCDF_NAMES:
        return "netcdf-or-hdf5", tuple(evidence)  # netCDF-4 files are HDF5 files; classic ones are not
    return "other", tuple(evidence)


def signature(path: str) -> str | None:
    """``HDF5`` or ``netCDF`` when the file is here and starts (HDF5: at 0, 512, 1024, ... ) with the signature."""
    if not path.startswith("/") or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if head[:4] in NETCDF_SIGNATURES:
                return "netCDF"
            offset = 0
            size = os.fstat(fh.fileno()).st_size
            while offset + 8 <= size and offset <= 1 << 20:  # HDF5 looks at 0 and powers of two from 512
                fh.seek(offset)
                if fh.read(8) == HDF5_SIGNATURE:
                    return "HDF5"
                offset = 512 if offset == 0 else offset * 2
    except OSError:
        return None
    return None


def _names_of(raw: RawLog, mod: str, *, dataset: bool = False) -> set[str]:
    m = raw.modules.get(mod)
    if m is None:
        return set()
    names = {raw.names.get(int(i), "") for i in m.ids}
    if dataset:  # "<file>:<dataset path>" (H5D) or "<file>:<variable>" (PNETCDF_VAR)
        names = {n.rsplit(":/", 1)[0] if ":/" in n else n.rsplit(":", 1)[0] for n in names}
    return {n for n in names if n}


def _interface(m: RawModule, prefix: str, rows: np.ndarray) -> InterfaceIO:
    # the integer counters summed over the rows in one reduction (integer sums: the same whatever the order);
    # one reduction per counter was most of a triage worker's judging (benchmarks/speed/triage.py)
    int_sums = dict(zip(m.counter_names, m.counters[rows].sum(axis=0).tolist()))

    def total(name: str) -> float:
        return float(m.column(f"{prefix}_{name}")[rows].sum())

    def i(name: str) -> int:
        key = f"{prefix}_{name}"
        return int(float(int_sums[key])) if key in int_sums else int(total(name))

    ranks = m.ranks[rows]
    shared = bool((ranks < 0).any())
    if prefix == "MPIIO":
        coll_r, coll_w = i("COLL_READS"), i("COLL_WRITES")
        reads = i("INDEP_READS") + coll_r + i("SPLIT_READS") + i("NB_READS")
        writes = i("INDEP_WRITES") + coll_w + i("SPLIT_WRITES") + i("NB_WRITES")
        sizes = ("SIZE_READ_AGG_", "SIZE_WRITE_AGG_")
        opens = i("INDEP_OPENS") + i("COLL_OPENS")
        nb = i("NB_READS") + i("NB_WRITES")
    else:
        coll_r = coll_w = nb = 0
        reads, writes = i("READS"), i("WRITES")
        sizes = ("SIZE_READ_", "SIZE_WRITE_")
        opens = i("OPENS") + i("FDOPENS")
    # negative times occur in real logs (darshan-runtime 3.1's <STDERR> record): not a duration, taken as 0
    time_r = np.maximum(m.column(f"{prefix}_F_READ_TIME")[rows], 0.0)
    time_w = np.maximum(m.column(f"{prefix}_F_WRITE_TIME")[rows], 0.0)
    time_m = np.maximum(m.column(f"{prefix}_F_META_TIME")[rows], 0.0)
    moved = m.column(f"{prefix}_BYTES_READ")[rows] + m.column(f"{prefix}_BYTES_WRITTEN")[rows]
    per_rank_s: dict[int, float] = {}
    per_rank_b: dict[int, int] = {}
    if not shared:
        for r, s, b in zip(ranks.tolist(), (time_r + time_w + time_m).tolist(), moved.tolist()):
            per_rank_s[r] = per_rank_s.get(r, 0.0) + s
            per_rank_b[r] = per_rank_b.get(r, 0) + int(b)

    def rank_of(which: str) -> tuple[int, int, float]:
        return (i(f"{which}_RANK"), i(f"{which}_RANK_BYTES"), total(f"F_{which}_RANK_TIME"))

    align = m.column(f"{prefix}_FILE_ALIGNMENT")[rows]
    return InterfaceIO(
        interface=m.name, reads=reads, writes=writes, bytes_read=i("BYTES_READ"), bytes_written=i("BYTES_WRITTEN"),
        read_time=float(time_r.sum()), write_time=float(time_w.sum()), meta_time=float(time_m.sum()), opens=opens,
        seeks=i("SEEKS"), stats=i("STATS"),
        read_sizes=tuple(i(sizes[0] + b) for b in SIZE_BUCKETS), write_sizes=tuple(i(sizes[1] + b) for b in SIZE_BUCKETS),
        seq_reads=i("SEQ_READS"), seq_writes=i("SEQ_WRITES"), consec_reads=i("CONSEC_READS"),
        consec_writes=i("CONSEC_WRITES"), file_not_aligned=i("FILE_NOT_ALIGNED"), mem_not_aligned=i("MEM_NOT_ALIGNED"),
        file_alignment=int(align.max()) if len(align) else 0, collective_reads=coll_r, collective_writes=coll_w,
        nonblocking=nb, shared=shared,
        fastest_rank=rank_of("FASTEST") if shared else (-1, 0, 0.0),
        slowest_rank=rank_of("SLOWEST") if shared else (-1, 0, 0.0),
        rank_seconds=per_rank_s, rank_bytes=per_rank_b)


def _dxt_by_file(raw: RawLog) -> dict[int, DxtFile]:
    """DXT per file, at the POSIX level when present (the requests the file system served), else MPI-IO."""
    levels = {s.module for s in raw.dxt}
    module = "DXT_POSIX" if "DXT_POSIX" in levels else "DXT_MPIIO"
    by_file: dict[int, list[RawDxt]] = {}
    for s in raw.dxt:
        if s.module == module:
            by_file.setdefault(s.id, []).append(s)
    return {rec_id: _dxt_file(module, segs) for rec_id, segs in by_file.items()}


def _dxt_file(module: str, segs: list[RawDxt]) -> DxtFile:
    small: dict[str, tuple[int, float, int]] = {}
    large: dict[str, tuple[int, float, int]] = {}
    backward: dict[str, tuple[int, float]] = {}
    rank_seconds: dict[int, float] = {}
    counts = {"read": 0, "write": 0}
    for s in segs:
        dur = np.maximum(s.end - s.start, 0.0)
        counts[s.op] += len(s.offset)
        is_small = s.length < SMALL_BYTES
        for out, on in ((small, is_small), (large, ~is_small)):
            n, t, b = out.get(s.op, (0, 0.0, 0))
            out[s.op] = (n + int(on.sum()), t + float(dur[on].sum()), b + int(s.length[on].sum()))
        order = np.argsort(s.start, kind="stable")
        off, ln = s.offset[order], s.length[order]
        back = np.zeros(len(off), bool)
        back[1:] = off[1:] < (off[:-1] + ln[:-1])
        n, t = backward.get(s.op, (0, 0.0))
        backward[s.op] = (n + int(back.sum()), t + float(dur[order][back].sum()))
        rank_seconds[s.rank] = rank_seconds.get(s.rank, 0.0) + float(dur.sum())
    requests = tuple((s.rank, s.op, s.offset[o], s.length[o])
                     for s in segs for o in [np.argsort(s.start, kind="stable")])
    return DxtFile(module, tuple(sorted(rank_seconds)), counts["read"], counts["write"], small, large, backward,
                   rank_seconds, requests)


__all__ = ["DxtFile", "FileIO", "InterfaceIO", "LogFiles", "LogJob", "SIZE_BUCKETS", "SMALL_BUCKETS", "TINY_BUCKETS",
           "characterize", "identify", "signature"]
