"""A Darshan log as the importer (instrumentation/darshan.py) uses it: the HDF5 dataset (H5D) counters per dataset
and rank, DXT segments, read from a binary log (pydarshan, an optional extra, imported only there:
instrumentation/darshan_raw.py) or from the text ``darshan-parser`` prints; and, the other way, what Darshan's H5D
module would record of a captured trace (``counters_of_trace``).

Dimension order (darshan-runtime's darshan-hdf5.c): access LENGTH/STRIDE put
C-order dimension k in D(5-k), the first dimension always in D5; chunk sizes put
dimension k in D(n-k), n = min(ndims, 5), the last dimension always in D1.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from .darshan_raw import DXT_MODULES, DarshanError, RawLog, read_raw
from .records import READ, WRITE, AccessRecord

MAX_NDIMS = 5
"""Dimensions Darshan records per access shape and chunk (H5D_MAX_NDIMS)."""
N_ACCESS_SHAPES = 4
SIZE_BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M",
                "100M_1G", "1G_PLUS")
BUCKET_EDGES = (0, 101, 1025, 10241, 102401, 1048577, 4194305, 10485761, 104857601, 1073741825)
"""Lower byte bound of each H5D_SIZE_*_AGG_* bucket (darshan-common's DARSHAN_BUCKET_INC)."""

# ---------------------------------------------------------------------------- what a log holds

@dataclass(frozen=True)
class AccessShape:
    """One of the four most frequent H5D access shapes (op unknown: an identical read and write merge)."""

    nbytes: int
    length: tuple[int, ...]
    """count x block per C-order dimension (min(ndims, 5) of them); zeros or -1: not a regular hyperslab."""
    stride: tuple[int, ...]
    count: int

    @property
    def regular(self) -> bool:
        return bool(self.length) and all(v > 0 for v in self.length)


@dataclass(frozen=True)
class H5DCounters:
    """The H5D record of one dataset on one rank (-1: shared, counts summed over ranks)."""

    name: str
    """``<file>:<dataset path>`` as Darshan names it."""
    rank: int
    reads: int
    writes: int
    bytes_read: int
    bytes_written: int
    ndims: int
    npoints: int
    itemsize: int
    chunks: tuple[int, ...]
    """C-order chunk dimensions (the first min(ndims, 5)); all zero when contiguous or unknown."""
    collective: bool
    shapes: tuple[AccessShape, ...]
    read_buckets: tuple[int, ...]
    write_buckets: tuple[int, ...]
    read_time: float
    write_time: float
    read_span: tuple[float, float]
    write_span: tuple[float, float]

    @property
    def file(self) -> str:
        return split_name(self.name)[0]

    @property
    def path(self) -> str:
        return split_name(self.name)[1]

    @classmethod
    def from_counters(cls, name: str, rank: int, c: Mapping[str, float]) -> "H5DCounters":
        def i(key: str) -> int:
            return int(c.get(key, 0))

        ndims = i("H5D_DATASPACE_NDIMS")
        n = min(ndims, MAX_NDIMS)
        chunks = tuple(i(f"H5D_CHUNK_SIZE_D{n - k}") for k in range(n))
        shapes = []
        for a in range(1, N_ACCESS_SHAPES + 1):
            count = i(f"H5D_ACCESS{a}_COUNT")
            if count > 0:
                shapes.append(AccessShape(
                    i(f"H5D_ACCESS{a}_ACCESS"),
                    tuple(i(f"H5D_ACCESS{a}_LENGTH_D{MAX_NDIMS - k}") for k in range(n)),
                    tuple(i(f"H5D_ACCESS{a}_STRIDE_D{MAX_NDIMS - k}") for k in range(n)),
                    count))
        return cls(
            name=name, rank=rank, reads=i("H5D_READS"), writes=i("H5D_WRITES"),
            bytes_read=i("H5D_BYTES_READ"), bytes_written=i("H5D_BYTES_WRITTEN"), ndims=ndims,
            npoints=i("H5D_DATASPACE_NPOINTS"), itemsize=i("H5D_DATATYPE_SIZE"), chunks=chunks,
            collective=i("H5D_USE_MPIIO_COLLECTIVE") > 0, shapes=tuple(shapes),
            read_buckets=tuple(i(f"H5D_SIZE_READ_AGG_{b}") for b in SIZE_BUCKETS),
            write_buckets=tuple(i(f"H5D_SIZE_WRITE_AGG_{b}") for b in SIZE_BUCKETS),
            read_time=float(c.get("H5D_F_READ_TIME", 0.0)), write_time=float(c.get("H5D_F_WRITE_TIME", 0.0)),
            read_span=(float(c.get("H5D_F_READ_START_TIMESTAMP", 0.0)),
                       float(c.get("H5D_F_READ_END_TIMESTAMP", 0.0))),
            write_span=(float(c.get("H5D_F_WRITE_START_TIMESTAMP", 0.0)),
                        float(c.get("H5D_F_WRITE_END_TIMESTAMP", 0.0))),
        )


@dataclass(frozen=True)
class DxtSegments:
    """DXT operations of one rank on one file (POSIX or MPI-IO level), one op, in time order."""

    file: str
    rank: int
    op: str
    offset: np.ndarray
    length: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class DarshanLog:
    """What the importer uses of a Darshan log."""

    source: str
    exe: str
    nprocs: int
    start_time: float
    runtime_version: str
    h5d: tuple[H5DCounters, ...]
    mpiio_files: frozenset[str] = frozenset()
    """Files HDF5 opened with the MPI-IO driver (H5F_USE_MPIIO)."""
    dxt: tuple[DxtSegments, ...] = field(default=(), compare=False)


def split_name(name: str) -> tuple[str, str]:
    """``<file>:<dataset path>`` -> (file, path); Darshan joins them with ':' and the path starts with '/'.

    darshan-runtime 3.5 names a dataset by its location's name followed by the name passed to H5Dcreate/H5Dopen
    (``/`` + ``/grid``): repeated slashes are one."""
    cut = name.find(":/")
    if cut < 0:
        cut = name.rfind(":")
        return (name, "") if cut < 0 else (name[:cut], name[cut + 1:])
    return name[:cut], re.sub("/{2,}", "/", name[cut + 1:])


# ---------------------------------------------------------------------------- reading logs

def read_log(path: str | os.PathLike, *, dxt: bool = True) -> DarshanLog:
    """A binary Darshan log (through pydarshan) or ``darshan-parser`` text output, by content."""
    path = str(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise DarshanError(f"{path}: cannot read ({exc.strerror})") from None
    if not head:
        raise DarshanError(f"{path}: empty file, not a Darshan log")
    text = head.lstrip()
    if text.startswith(b"#") or text.split(b"\t", 1)[0] in (b"H5D", b"H5F", b"POSIX", b"MPI-IO", b"STDIO"):
        return parse_text(path)
    return read_binary(path, dxt=dxt)


def read_binary(path: str, *, dxt: bool = True) -> DarshanLog:
    """Read a binary log with pydarshan (``pip install ioadvisor[darshan]``), in a child process
    (``darshan_raw.read_raw``: libdarshan-util's crashes on corrupt logs stay there)."""
    return log_from_raw(read_raw(path, modules=("H5F", "H5D"), dxt=dxt), dxt=dxt)


def log_from_raw(raw: RawLog, *, dxt: bool = True) -> DarshanLog:
    """What the importer uses of a log read by ``darshan_raw.read_raw``."""
    path = raw.source
    if "H5D" not in raw.module_versions:
        raise DarshanError(
            f"{path}: the log has no H5D module (HDF5 dataset records): darshan-runtime was built without "
            "--enable-hdf5-mod, or the program did no HDF5 dataset I/O; `ioadvisor report LOG` characterizes "
            "its file-level I/O")
    for mod in ("H5D", "H5F") + (DXT_MODULES if dxt else ()):
        if mod in raw.unread:
            hint = (": import without DXT (--no-dxt)" if mod.startswith("DXT") else
                    ": the log is truncated or corrupt, or written by a darshan-runtime newer than this pydarshan")
            raise DarshanError(f"{path}: cannot read module {mod} version {raw.module_versions.get(mod)} "
                               f"({raw.unread[mod]}){hint}")
    h5d = [H5DCounters.from_counters(raw.names.get(i, f"<record {i:#x}>"), rank, c)
           for i, rank, c in raw.modules["H5D"].as_dicts()]
    mpiio = ({raw.names.get(i, "") for i, _, c in raw.modules["H5F"].as_dicts() if c.get("H5F_USE_MPIIO", 0) > 0}
             if "H5F" in raw.modules else set())
    # MPI-IO when present: it is the level HDF5 calls; POSIX repeats it below
    level = "DXT_MPIIO" if any(s.module == "DXT_MPIIO" for s in raw.dxt) else "DXT_POSIX"
    segments = [DxtSegments(raw.names.get(s.id, ""), s.rank, WRITE if s.op == "write" else READ, s.offset, s.length,
                            s.start, s.end) for s in raw.dxt if s.module == level]
    return DarshanLog(path, raw.exe, raw.nprocs, float(int(raw.start_time)), raw.runtime_version, tuple(h5d),
                      frozenset(mpiio), tuple(segments))


_PARSER_HEAD = re.compile(r"#\s*([a-z _]+):\s*(.*)$")


def parse_text(path: str) -> DarshanLog:
    """The text ``darshan-parser LOG`` prints: '# key: value' header lines, then one tab-separated counter a line
    (module, rank, record id, counter, value, file name, mount point, fs type)."""
    meta: dict[str, str] = {}
    counters: dict[tuple[int, str], dict[str, float]] = {}
    order: list[tuple[int, str]] = []
    mpiio: set[str] = set()
    incomplete = False
    try:
        fh = open(path, encoding="utf-8", errors="strict")
    except OSError as exc:
        raise DarshanError(f"{path}: cannot read ({exc.strerror})") from None
    with fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                if line.startswith("#"):
                    m = _PARSER_HEAD.match(line)
                    if m and m.group(1) not in meta:
                        meta[m.group(1)] = m.group(2).strip()
                    if "H5D module contains incomplete data" in line:
                        incomplete = True
                    continue
                parts = line.split("\t")
                if len(parts) < 6:
                    raise DarshanError(f"{path}:{lineno}: not a darshan-parser counter line "
                                       f"(expected 8 tab-separated fields, got {len(parts)})")
                module, rank, _rec_id, name, value, fname = parts[:6]
                if module not in ("H5D", "H5F"):
                    continue
                try:
                    rank_i, val = int(rank), float(value)
                except ValueError:
                    raise DarshanError(f"{path}:{lineno}: bad rank or value in counter {name!r:.40}") from None
                if module == "H5F":
                    if name == "H5F_USE_MPIIO" and val > 0:
                        mpiio.add(fname)
                    continue
                key = (rank_i, fname)
                if key not in counters:
                    counters[key] = {}
                    order.append(key)
                counters[key][name] = val
        except UnicodeDecodeError:
            raise DarshanError(f"{path}: not darshan-parser text (not UTF-8): a binary log? "
                               "install pydarshan (pip install 'ioadvisor[darshan]')") from None
    if "darshan log version" not in meta and not order:
        raise DarshanError(f"{path}: not darshan-parser output (no '# darshan log version' header)")
    if not order:
        raise DarshanError(
            f"{path}: the log has no H5D module (HDF5 dataset records): darshan-runtime was built without "
            "--enable-hdf5-mod, or the program did no HDF5 dataset I/O")
    if incomplete:
        raise DarshanError(f"{path}: the H5D module holds incomplete data (Darshan ran out of record memory)")
    try:
        nprocs = int(meta.get("nprocs", "1"))
        start = float(meta.get("start_time", "0"))
    except ValueError:
        raise DarshanError(f"{path}: bad '# nprocs' or '# start_time' header line") from None
    lib_ver = meta.get("metadata", "")
    lib_ver = lib_ver.split("=", 1)[1].strip() if lib_ver.startswith("lib_ver") else meta.get("darshan log version", "")
    h5d = tuple(H5DCounters.from_counters(fname, rank, counters[(rank, fname)]) for rank, fname in order)
    return DarshanLog(path, meta.get("exe", ""), nprocs, start, lib_ver, h5d, frozenset(mpiio))


def to_parser_text(log_path: str) -> str:
    """darshan-parser's text for the H5D/H5F records of a binary log, written through pydarshan.

    For sites that convert logs where pydarshan has no wheel, this is the format ``parse_text`` reads; here it
    lets tests and docs produce it without building darshan-util."""
    raw = read_raw(log_path, modules=("H5F", "H5D"), dxt=False)
    out = [f"# darshan log version: {raw.log_version}", f"# exe: {raw.exe}", "# uid: 0", "# jobid: 0",
           f"# start_time: {int(raw.start_time)}", f"# nprocs: {raw.nprocs}", f"# run time: {raw.run_time:.4f}",
           f"# metadata: lib_ver = {raw.runtime_version}"]
    for mod in ("H5F", "H5D"):
        if mod not in raw.modules:
            continue
        m = raw.modules[mod]
        out += ["", "# " + "*" * 55, f"# {mod} module data", "# " + "*" * 55]
        for k in range(len(m.ids)):
            rec_id, rank = int(m.ids[k]), int(m.ranks[k])
            name = raw.names.get(rec_id, "")
            out += [f"{mod}\t{rank}\t{rec_id}\t{c}\t{int(v)}\t{name}\t/\tunknown"
                    for c, v in zip(m.counter_names, m.counters[k].tolist())]
            out += [f"{mod}\t{rank}\t{rec_id}\t{c}\t{v:f}\t{name}\t/\tunknown"
                    for c, v in zip(m.fcounter_names, m.fcounters[k].tolist())]
    return "\n".join(out) + "\n"


def size_bucket(nbytes: int) -> int:
    return int(np.searchsorted(BUCKET_EDGES, nbytes, side="right") - 1)


def counters_of_trace(trace) -> DarshanLog:
    """What darshan-runtime's H5D module would record of a captured trace's HDF5 datasets, one record per rank.

    Follows darshan-hdf5.c: LENGTH_D(i+1) = count x block of C-order dimension 4-i and STRIDE likewise (unused
    dimensions 0), CHUNK_SIZE_D(i+1) = chunk dimension n-1-i; point and orthogonal selections record no shape;
    the four most frequent (bytes, lengths, strides) values with their counts (ties: first seen). Used to
    validate the importer against traces whose every access is known."""
    out = []
    for ds in trace.datasets.values():
        if ds.library != "hdf5":
            continue
        ndims = len(ds.shape)
        n = min(ndims, MAX_NDIMS)
        by_rank: dict[int, list[AccessRecord]] = {}
        for a in trace.accesses_of(ds.id):
            by_rank.setdefault(a.rank, []).append(a)
        for rank, accs in sorted(by_rank.items()):
            c: dict[str, float] = {"H5D_DATASPACE_NDIMS": ndims, "H5D_DATASPACE_NPOINTS": math.prod(ds.shape),
                                   "H5D_DATATYPE_SIZE": ds.itemsize}
            for i, size in enumerate((ds.chunks or ())[:n]):
                c[f"H5D_CHUNK_SIZE_D{i + 1}"] = ds.chunks[n - i - 1]
            common: dict[tuple, int] = {}
            for a in accs:
                op = "READ" if a.op == READ else "WRITE"
                c[f"H5D_{op}S"] = c.get(f"H5D_{op}S", 0) + 1
                c[f"H5D_BYTES_{'READ' if a.op == READ else 'WRITTEN'}"] = c.get(
                    f"H5D_BYTES_{'READ' if a.op == READ else 'WRITTEN'}", 0) + a.nbytes
                bucket = f"H5D_SIZE_{op}_AGG_{SIZE_BUCKETS[size_bucket(a.nbytes)]}"
                c[bucket] = c.get(bucket, 0) + 1
                sel = a.selection
                lengths = [0] * MAX_NDIMS
                strides = [0] * MAX_NDIMS
                if sel.kind == "hyperslab":
                    for d in range(n):
                        lengths[d], strides[d] = sel.count[d] * sel.block[d], sel.stride[d]
                key = (a.nbytes, *lengths[::-1], *strides[::-1])  # stored D1..D5: dimension 4 first
                common[key] = common.get(key, 0) + 1
            top = sorted(common.items(), key=lambda kv: -kv[1])[:N_ACCESS_SHAPES]
            for j, (key, count) in enumerate(top, start=1):
                c[f"H5D_ACCESS{j}_ACCESS"] = key[0]
                for i in range(MAX_NDIMS):
                    c[f"H5D_ACCESS{j}_LENGTH_D{i + 1}"] = key[1 + i]
                    c[f"H5D_ACCESS{j}_STRIDE_D{i + 1}"] = key[1 + MAX_NDIMS + i]
                c[f"H5D_ACCESS{j}_COUNT"] = count
            for op, kind in (("READ", READ), ("WRITE", WRITE)):
                mine = [a for a in accs if a.op == kind]
                if mine:
                    c[f"H5D_F_{op}_TIME"] = sum(a.duration for a in mine)
                    c[f"H5D_F_{op}_START_TIMESTAMP"] = min(a.t_start for a in mine)
                    c[f"H5D_F_{op}_END_TIMESTAMP"] = max(a.t_start + a.duration for a in mine)
            out.append(H5DCounters.from_counters(f"{ds.file}:{ds.path}", rank, c))
    h = trace.header
    return DarshanLog(trace.source, " ".join(h.argv), trace.nprocs, h.t_origin_unix, "emulated", tuple(out))



__all__ = ["BUCKET_EDGES", "MAX_NDIMS", "N_ACCESS_SHAPES", "SIZE_BUCKETS", "AccessShape", "DarshanError",
           "DarshanLog", "DxtSegments", "H5DCounters", "counters_of_trace", "log_from_raw", "parse_text",
           "read_binary", "read_log", "size_bucket", "split_name", "to_parser_text"]
