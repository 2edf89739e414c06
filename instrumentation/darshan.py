"""Import Darshan logs: the HDF5 dataset (H5D) records of C/C++/Fortran/MPI programs into a trace.

Darshan keeps a bounded summary per dataset and rank (or one shared record,
rank -1, with counts summed over ranks): operation and byte counts, the
dataspace's rank and number of points (not its dimensions), element size,
chunk dimensions, a collective flag, timers, and the four most frequent access
shapes (LENGTH = count x block and STRIDE per dimension, bytes, how often).
The importer rebuilds accesses from those: the shapes with their counts, split
into reads and writes by the op, byte and size-histogram counters; placed as
tiles in row-major order, consecutive per rank (DXT offsets pin the placement
where they can). The trace is marked ``synthetic`` and its header lists every
fact the rebuild rests on, guessed or not (see docs/darshan.md).

Dimension order (darshan-runtime's darshan-hdf5.c): access LENGTH/STRIDE put
C-order dimension k in D(5-k), the first dimension always in D5; chunk sizes put
dimension k in D(n-k), n = min(ndims, 5), the last dimension always in D1.

Two inputs: a binary log, read with pydarshan (optional extra, imported here
only), or the text ``darshan-parser`` prints (no dependency).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

import numpy as np

from .darshan_raw import DarshanError  # noqa: F401 - also public here
from .darshan_split import split_reads_writes
from .errors import OutputExistsError
from .opener import open_array
from .records import READ, WRITE, AccessRecord, DatasetRecord, ImportedFact, Selection, TraceHeader
from .darshan_log import (  # noqa: F401 - a log's names, also public here
    BUCKET_EDGES, MAX_NDIMS, N_ACCESS_SHAPES, SIZE_BUCKETS, AccessShape, DarshanLog, DxtSegments, H5DCounters,
    counters_of_trace, log_from_raw, parse_text, read_binary, read_log, size_bucket, split_name, to_parser_text)
from .tracefile import TraceWriter

MAX_SYNTHESIZED = 2_000_000
"""Reads plus writes of a log's H5D records beyond which it is refused: accesses are synthesized one object
each (a few hundred thousand take minutes); the real logs of docs/darshan.md hold at most a few
hundred."""


# ---------------------------------------------------------------------------- rebuilding accesses

@dataclass(frozen=True)
class _Tile:
    """The synthesized selection of one access shape: per-dimension count, stride, block."""

    count: tuple[int, ...]
    stride: tuple[int, ...]
    block: tuple[int, ...]

    @property
    def footprint(self) -> tuple[int, ...]:
        return tuple(s * (c - 1) + b if c > 0 and b > 0 else 0
                     for c, s, b in zip(self.count, self.stride, self.block))


def _tile_of(length: Iterable[int], stride: Iterable[int]) -> tuple[_Tile, bool]:
    """Count/stride/block from Darshan's LENGTH (= count x block) and STRIDE; True when the split is a guess.

    HDF5 reports the caller's stride as given (C callers passing NULL get 1). A stride of at most 1 or equal
    to the length is one dense block; any other stride is taken as every stride-th element (block 1), the
    common strided selection, and flagged: count x block cannot be told apart."""
    count, strides, block, guessed = [], [], [], False
    for n, s in zip(length, stride):
        if s <= 1 or s == n:
            count.append(1), strides.append(1), block.append(n)
        else:
            count.append(n), strides.append(s), block.append(1)
            guessed = True
    return _Tile(tuple(count), tuple(strides), tuple(block)), guessed


def _run_box(nelements: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A dense box of ``nelements`` laid in row-major order from the last dimension (a run of unknown shape)."""
    box = [1] * len(shape)
    rest = nelements
    for d in range(len(shape) - 1, -1, -1):
        if d == 0 or rest <= shape[d] or rest % shape[d]:
            box[d] = min(rest, shape[d]) if d else rest
            break
        box[d] = shape[d]
        rest //= shape[d]
    return tuple(box)


@dataclass(frozen=True)
class _Planned:
    """Accesses of one op of one record, before placement: per access its tile and op."""

    op: str
    tile: _Tile | None  # None: unknown shape (a run of nelements)
    nelements: int
    n: int
    nbytes: int


def _plan(rec: H5DCounters, shape: tuple[int, ...], facts: list[ImportedFact], key: str) -> list[_Planned]:
    """The accesses of one record: its access shapes split into reads and writes, then what the shapes miss."""
    reads_per_shape, unique = split_reads_writes(rec)
    if rec.reads and rec.writes and rec.shapes:
        facts.append(ImportedFact(key, "read/write split", (
            "the access shapes carry no op: reads per shape {} of counts {} ({}), rank {}".format(
                reads_per_shape, [s.count for s in rec.shapes],
                "the only split the op, byte and size-histogram counters allow" if unique else
                "one of several splits the counters allow", rec.rank)), guessed=not unique))
    ndim = len(shape)
    out: list[_Planned] = []
    left = {READ: [rec.reads, rec.bytes_read], WRITE: [rec.writes, rec.bytes_written]}
    for s, n_read in zip(rec.shapes, reads_per_shape):
        if s.regular:
            length = list(s.length) + [1] * (ndim - len(s.length))
            stride = list(s.stride) + [1] * (ndim - len(s.stride))
            if ndim > MAX_NDIMS and rec.itemsize:  # the dimensions past the fifth: put their product on the last
                rest = max(1, s.nbytes // rec.itemsize // math.prod(s.length))
                length[-1] = rest
                facts.append(ImportedFact(key, "access shape", f"dimensions 6-{ndim} of shape {s.length} not "
                                          f"recorded: {rest} elements assumed on the last", True))
            tile, guessed = _tile_of(length, stride)
            if guessed:
                facts.append(ImportedFact(key, "selection", f"length {s.length} stride {s.stride}: "
                                          f"count {tile.count} block {tile.block} assumed", True))
        elif rec.itemsize and s.nbytes == rec.npoints * rec.itemsize:
            tile = _Tile((1,) * ndim, (1,) * ndim, shape)  # the whole dataset (H5S_ALL or every point)
        else:
            tile = None
            facts.append(ImportedFact(key, "unknown-shape accesses", (
                f"{s.count} accesses of {s.nbytes} B are point or irregular selections (Darshan keeps no "
                "shape): synthesized as row-major runs"), True))
        nel = s.nbytes // rec.itemsize if rec.itemsize else 0
        for op, n in ((READ, n_read), (WRITE, s.count - n_read)):
            if n > 0:
                out.append(_Planned(op, tile, nel, n, s.nbytes))
                left[op][0] -= n
                left[op][1] -= n * s.nbytes
    for op, (n, nbytes) in left.items():
        if n > 0:
            per = max(nbytes, 0) // n
            facts.append(ImportedFact(key, "unknown-shape accesses", (
                f"{n} {op}s ({max(nbytes, 0)} B) on rank {rec.rank} are outside the four recorded access shapes: "
                f"synthesized as row-major runs of {per} B"), True))
            out.append(_Planned(op, None, per // rec.itemsize if rec.itemsize else 0, n, per))
    return out


def _tile_starts(tile: _Tile, shape: tuple[int, ...], first: int, n: int, total: int) -> np.ndarray:
    """Starts of accesses first..first+n-1 of ``total`` of one shape, as tiles in row-major order (kept inside).

    When the accesses cover less than the dataset they are spread evenly over it rather than packed at its
    start: Darshan attests no locality between them, and packing would invent chunk reuse (measured in
    benchmarks/darshan_roundtrip.py: packed random reads were predicted up to 6x too fast)."""
    foot = np.maximum(np.asarray(tile.footprint, np.int64), 1)
    extent = np.asarray(shape, np.int64)
    # a partial last tile counts (its start is pulled inside below): 72 (31, 31, 24) tiles in (72, 31, 744)
    # need the third row of tiles, or 10 of them land on starts already taken
    grid = np.maximum(-(-extent // foot), 1)
    n_tiles = int(np.prod(grid))
    step = max(1, n_tiles // max(total, 1))
    k = ((first + np.arange(n, dtype=np.int64)) * step) % n_tiles
    starts = np.stack(np.unravel_index(k, tuple(grid)), axis=1) * foot
    return np.minimum(starts, np.maximum(extent - np.asarray(tile.footprint, np.int64), 0))


# ---------------------------------------------------------------------------- datasets: shape and the HDF5 file

def _from_file(file: str, path: str) -> DatasetRecord | None:
    """The dataset as the HDF5 file describes it now, when it is still reachable."""
    if not os.path.isfile(file):
        return None
    try:
        from .hooks_h5py import describe

        with open_array(file, path, "hdf5") as opened:
            return describe(opened.array, created=False).template
    except Exception:  # noqa: BLE001 - an unreadable or foreign file, or no such dataset, only means: not reachable
        return None


def _guess_shape(recs: list[H5DCounters], tiles: list[_Tile]) -> tuple[tuple[int, ...], bool]:
    """Largest access extent per dimension, the remainder of NPOINTS on the first; exact for a fixed 1-D one.

    NPOINTS is the size at the last open: a chunked dataset (only those can be extended) that was written more
    elements than that grew after it (appends), and its first dimension takes the elements written."""
    ndims, npoints, itemsize = recs[0].ndims, recs[0].npoints, recs[0].itemsize
    chunked = any(recs[0].chunks)
    written = sum(r.bytes_written for r in recs) // itemsize
    elements = max(npoints, written) if chunked else npoints
    if ndims == 1:
        return (elements,), elements != npoints
    other = [1] * (ndims - 1)
    for t in tiles:
        for d in range(1, ndims):
            other[d - 1] = max(other[d - 1], t.footprint[d])
    if not tiles and chunked:
        other = [max(1, c) for c in recs[0].chunks[1:]] + [1] * (ndims - len(recs[0].chunks))
    first = max(-(-elements // math.prod(other)), max((t.footprint[0] for t in tiles), default=1))
    return (first, *other), True


def parse_shapes(specs: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """``DATASET=AxBxC`` (DATASET: the dataset path, or file:path as Darshan names it) -> shape."""
    out = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        try:
            shape = tuple(int(x) for x in dims.lower().split("x"))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) < 1:
            raise DarshanError(f"--shape {spec!r}: expected DATASET=AxB (positive integers), e.g. /data=1000x64")
        out[name] = shape
    return out


def _dtype_for(itemsize: int) -> str:
    return {1: "|u1", 2: "<i2", 4: "<f4", 8: "<f8", 16: "<c16"}.get(itemsize, f"|V{max(itemsize, 1)}")


# ---------------------------------------------------------------------------- the trace

@dataclass(frozen=True)
class ImportSummary:
    """What ``import_darshan`` wrote: the trace path, its datasets, access count and the facts it rests on."""

    trace: str
    datasets: tuple[str, ...]
    n_access: int
    facts: tuple[ImportedFact, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    """H5D datasets (``file:path``) not imported, each with the reason: with ``datasets``, every record."""


def import_darshan(log: str | os.PathLike | DarshanLog, output: str | os.PathLike, *,
                   shapes: Mapping[str, tuple[int, ...]] | None = None, dxt: bool = True,
                   reach_files: bool = True, overwrite: bool = False) -> ImportSummary:
    """Write a synthetic trace of the HDF5 dataset accesses a Darshan log describes.

    ``shapes``: dataset shapes by path or ``file:path`` (used when the HDF5 file is not reachable);
    ``dxt=False`` ignores DXT segments; ``reach_files=False`` never opens the HDF5 files named in the log.
    An existing ``output`` is never replaced without ``overwrite=True``.
    """
    if not overwrite and os.path.exists(output):
        raise OutputExistsError(f"{output} exists: not replacing an earlier trace "
                                "(choose another path, or overwrite=True / --force to replace it)")
    log = log if isinstance(log, DarshanLog) else read_log(log, dxt=dxt)
    for rec in log.h5d:
        if min(rec.reads, rec.writes, rec.ndims, rec.npoints, rec.itemsize) < 0:
            raise DarshanError(f"{log.source}: {rec.name} (rank {rec.rank}) records {rec.reads:,} reads, "
                               f"{rec.writes:,} writes, NDIMS {rec.ndims}, NPOINTS {rec.npoints}, element size "
                               f"{rec.itemsize}: a negative counter (a corrupt log?)")
    n_ops = sum(rec.reads + rec.writes for rec in log.h5d)
    if n_ops > MAX_SYNTHESIZED:
        worst = max(log.h5d, key=lambda r: r.reads + r.writes)
        raise DarshanError(f"{log.source}: its H5D records count {n_ops:,} reads and writes ({worst.name}, rank "
                           f"{worst.rank}: {worst.reads + worst.writes:,}), beyond the {MAX_SYNTHESIZED:,} accesses "
                           "ioadvisor synthesizes (a corrupt counter?); `ioadvisor report` summarizes the log")
    try:
        return _import(log, output, dict(shapes or {}), dxt, reach_files)
    except (ValueError, MemoryError, OverflowError) as exc:
        if isinstance(exc, DarshanError):
            raise
        raise DarshanError(f"{log.source}: cannot rebuild its accesses ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}): a corrupt counter?") from None


def _import(log: DarshanLog, output: str | os.PathLike, shapes: dict, dxt: bool, reach_files: bool) -> ImportSummary:
    """import_darshan's work, once the log is read and its counters are in range."""
    by_name: dict[str, list[H5DCounters]] = {}
    for rec in log.h5d:
        by_name.setdefault(rec.name, []).append(rec)
    unknown = [k for k in shapes if k not in by_name and not any(split_name(n)[1] == k for n in by_name)]
    if unknown:
        raise DarshanError(f"--shape {unknown[0]!r}: no such dataset in {log.source} "
                           f"(datasets: {', '.join(sorted(split_name(n)[1] for n in by_name))})")
    facts: list[ImportedFact] = [ImportedFact("", "source", (
        f"Darshan log {os.path.basename(log.source)} (darshan-runtime {log.runtime_version}, {log.nprocs} ranks): "
        "accesses rebuilt from per-dataset counters, not captured one by one"), False)]
    datasets: list[tuple[DatasetRecord, list[H5DCounters], list[list[_Planned]]]] = []
    skipped: list[tuple[str, str]] = []
    for name, recs in by_name.items():
        file, path = split_name(name)
        key = f"{file}::{path}"
        first = recs[0]
        why = _not_importable(recs)
        if why is not None:
            facts.append(ImportedFact(key, "skipped", why, False))
            skipped.append((name, why))
            continue
        if first.ndims == 0:  # a scalar dataspace (NDIMS 0, NPOINTS 1): one element per read or write
            ds = _scalar_dataset(len(datasets), file, path, first, log, any(r.writes for r in recs))
            facts.append(ImportedFact(key, "shape", "scalar: the log records a 0-D dataspace (NDIMS 0, NPOINTS 1)",
                                      False))
            facts.append(ImportedFact(key, "dtype", f"{ds.dtype} assumed from the {first.itemsize}-byte element "
                                      "size (Darshan records no type)", True))
            datasets.append((ds, recs, []))
            continue
        on_disk = _from_file(file, path) if reach_files else None
        if on_disk is not None and (on_disk.itemsize != first.itemsize or len(on_disk.shape) != first.ndims):
            facts.append(ImportedFact(key, "file", f"{file} has {path} with shape {on_disk.shape} "
                                      f"{on_disk.dtype}, not the logged {first.ndims}-D {first.itemsize}-byte "
                                      "elements: not used", False))
            on_disk = None
        given = shapes.get(name, shapes.get(path))
        # NPOINTS is the size at the last open: a chunked dataset may have been extended after it
        extendible = any(first.chunks)
        if given is not None and (len(given) != first.ndims or math.prod(given) < first.npoints
                                  or (math.prod(given) != first.npoints and not extendible)):
            raise DarshanError(f"--shape {path}={'x'.join(map(str, given))}: the log records a {first.ndims}-D "
                               f"{'chunked' if extendible else 'fixed'} dataspace of "
                               f"{'at least ' if extendible else ''}{first.npoints} points")
        # shapes first with a placeholder extent; the extent may come from the tiles
        placeholder = on_disk.shape if on_disk is not None else given or (first.npoints,) + (1,) * (first.ndims - 1)
        local: list[ImportedFact] = []
        plans = [_plan(r, tuple(placeholder), local, key) for r in recs]
        tiles = [p.tile for plan in plans for p in plan if p.tile is not None and p.tile.block != placeholder]
        if on_disk is not None:
            shape, how = on_disk.shape, ("shape", f"{on_disk.shape} from the HDF5 file, still reachable", False)
        elif given is not None:
            shape, how = given, ("shape", f"{given} given with --shape", False)
        else:
            shape, guessed = _guess_shape(recs, tiles)
            how = ("shape", (f"{shape} guessed: largest access extent per dimension, the rest of the "
                             f"{first.npoints} points (or of the elements written, when more) on the first"
                             if guessed else f"{shape}: a 1-D dataspace of {first.npoints} points"), guessed)
        if tuple(shape) != tuple(placeholder):  # whole-dataset tiles and runs follow the final extent
            local = []
            plans = [_plan(r, tuple(shape), local, key) for r in recs]
        facts.append(ImportedFact(key, *how))
        chunks = tuple(first.chunks) if any(first.chunks) else None
        if chunks is not None and first.ndims > MAX_NDIMS:
            chunks = chunks + tuple(shape[MAX_NDIMS:])
            facts.append(ImportedFact(key, "chunks", f"chunk dimensions 6-{first.ndims} not recorded: "
                                      "the full extent assumed", True))
        if on_disk is not None:
            dtype, filters, fill = on_disk.dtype, on_disk.filters, on_disk.fillvalue
            if on_disk.chunks != chunks:
                facts.append(ImportedFact(key, "chunks", f"the log records {chunks}, the file now "
                                          f"{on_disk.chunks}: the log's kept", False))
        else:
            dtype, filters, fill = _dtype_for(first.itemsize), (), None
            facts.append(ImportedFact(key, "dtype", f"{dtype} assumed from the {first.itemsize}-byte element size "
                                      "(Darshan records no type)", True))
            facts.append(ImportedFact(key, "filters", "none assumed (Darshan records no filter pipeline)", True))
        if chunks is None and on_disk is not None and on_disk.chunks is None:
            facts.append(ImportedFact(key, "layout", "contiguous (or compact): no chunk sizes in the log or the file",
                                      False))
        elif chunks is None:
            facts.append(ImportedFact(key, "layout", "no chunk sizes recorded: contiguous (or compact) assumed",
                                      True))
        collective = any(r.collective for r in recs)
        mpio = file in log.mpiio_files or collective
        facts.append(ImportedFact(key, "MPI-IO", f"{'collective' if collective else 'independent'} transfers"
                                  + (", MPI-IO file driver" if mpio else ""), False))
        facts.extend(dict.fromkeys(local))  # once each, in order
        n_writes = sum(r.writes for r in recs)
        created = bool(n_writes) and not any(r.reads for r in recs)
        if created:
            facts.append(ImportedFact(key, "created", "written, never read: taken as created by the run "
                                      "(no chunks on disk before its writes)", True))
        ds = DatasetRecord(
            id=len(datasets), library="hdf5", library_version=f"HDF5 (Darshan {log.runtime_version} log)",
            file=file, path=path, shape=tuple(shape), dtype=dtype, chunks=chunks, filters=filters, fillvalue=fill,
            driver="mpio" if mpio else None, mode="r+" if n_writes else "r",
            created=created,
        )
        datasets.append((ds, recs, plans))
    if not datasets:
        reasons = sorted({why for _, why in skipped})
        raise DarshanError(f"{log.source}: none of its {len(by_name)} H5D dataset(s) can be imported: "
                           + "; ".join(reasons))
    header = TraceHeader(1, "darshan", 0, 0, max(log.nprocs, 1), log.start_time,
                         versions={"darshan": log.runtime_version}, argv=tuple(log.exe.split()),
                         clock="darshan timestamps (seconds since job start)", synthetic=True)
    accesses: list[AccessRecord] = []
    per_file = {}
    for ds, _, _ in datasets:
        per_file[ds.file] = per_file.get(ds.file, 0) + 1
    for ds, recs, plans in datasets:
        accesses += (_place(ds, recs, plans, log, per_file[ds.file] == 1, facts) if ds.shape else
                     _scalar_accesses(ds, recs, log))
    for file in per_file:  # DXT saw ranks do I/O on the file that have no H5D record there
        h5d_ranks = {r.rank for ds, recs, _ in datasets if ds.file == file for r in recs}
        silent = sorted({s.rank for s in log.dxt if s.file == file} - h5d_ranks) if -1 not in h5d_ranks else []
        if silent:
            facts.append(ImportedFact("", "missing records", f"ranks {silent} did I/O on {file} (DXT) but have no "
                                      "H5D record for its datasets: their HDF5 accesses are not in the trace", False))
    accesses.sort(key=lambda a: a.t_start)
    header = replace(header, facts=tuple(facts))
    writer = TraceWriter(output, header)
    for ds, _, _ in datasets:
        writer.dataset(ds)
    for a in accesses:
        writer.access(a)
    writer.close()
    return ImportSummary(str(output), tuple(ds.key for ds, _, _ in datasets), len(accesses), tuple(facts),
                         tuple(skipped))


def account_h5d(log: DarshanLog) -> tuple[tuple[str, str], ...]:
    """Every H5D dataset of a log (``file:path``) with what ``import_darshan`` does with it, in one phrase."""
    by_name: dict[str, list[H5DCounters]] = {}
    for rec in log.h5d:
        by_name.setdefault(rec.name, []).append(rec)
    out = []
    for name, recs in by_name.items():
        why = _not_importable(recs)
        reads, writes = sum(r.reads for r in recs), sum(r.writes for r in recs)
        what = "scalar" if recs[0].ndims == 0 else f"{recs[0].ndims}-D"
        out.append((name, f"not imported: {why}" if why else f"imported: {what}, {reads} read(s), {writes} write(s)"))
    return tuple(out)


def _not_importable(recs: list[H5DCounters]) -> str | None:
    """Why a dataset's H5D records cannot be rebuilt into accesses (None: they can), as the counters show it."""
    first = recs[0]
    ops = sum(r.reads + r.writes for r in recs)
    if ops == 0:
        return "opened, never read or written (no H5Dread/H5Dwrite in the log): nothing to import"
    if first.itemsize <= 0:
        return f"{ops} read(s)/write(s) but no datatype size recorded (H5D_DATATYPE_SIZE 0): accesses cannot be sized"
    if first.ndims < 0 or (first.ndims == 0 and first.npoints > 1):
        return (f"inconsistent dataspace counters (H5D_DATASPACE_NDIMS {first.ndims}, NPOINTS {first.npoints}): "
                "a corrupt record")
    return None


def _scalar_dataset(ds_id: int, file: str, path: str, first: H5DCounters, log: DarshanLog,
                    written: bool) -> DatasetRecord:
    return DatasetRecord(id=ds_id, library="hdf5", library_version=f"HDF5 (Darshan {log.runtime_version} log)",
                         file=file, path=path, shape=(), dtype=_dtype_for(first.itemsize), chunks=None, filters=(),
                         fillvalue=None, driver="mpio" if file in log.mpiio_files else None,
                         mode="r+" if written else "r", created=False)


def _scalar_accesses(ds: DatasetRecord, recs: list[H5DCounters], log: DarshanLog) -> list[AccessRecord]:
    """One whole-dataspace access per read and write of a scalar, spread over the op's span like the others."""
    sel = Selection((), (), (), ())
    out = []
    for rec in recs:
        ranks = list(range(max(log.nprocs, 1))) if rec.rank < 0 else [rec.rank]
        for op, n_op, total, span in ((WRITE, rec.writes, rec.write_time, rec.write_span),
                                      (READ, rec.reads, rec.read_time, rec.read_span)):
            if n_op <= 0:
                continue
            dt = total / n_op
            t0 = np.linspace(span[0], max(span[1] - dt, span[0]), n_op) if n_op > 1 else [span[0]]
            for k in range(n_op):
                out.append(AccessRecord(ds.id, op, sel, 1, ds.itemsize, float(t0[k]), dt, ranks[k % len(ranks)]))
    return out


def _place(ds: DatasetRecord, recs: list[H5DCounters], plans: list[list[_Planned]], log: DarshanLog,
           alone_in_file: bool, facts: list[ImportedFact]) -> list[AccessRecord]:
    """Selections and times of one dataset's planned accesses: tiles row-major, consecutive per rank."""
    shape = ds.shape
    ndim = len(shape)
    out: list[AccessRecord] = []
    pinned_ranks = []
    for rec, plan in zip(recs, plans):
        ranks = list(range(max(log.nprocs, 1))) if rec.rank < 0 else [rec.rank]
        for op in (WRITE, READ):
            mine = [p for p in plan if p.op == op]
            n_op = sum(p.n for p in mine)
            if not n_op:
                continue
            span = rec.write_span if op == WRITE else rec.read_span
            total = rec.write_time if op == WRITE else rec.read_time
            # the op's time goes to the accesses that moved bytes: a zero-byte call (a rank with nothing to
            # write in a collective) is not where a run's write time goes (MACSio: 8 of 80 writes)
            n_moving = sum(p.n for p in mine if p.nbytes > 0) or n_op
            length = max(span[1] - span[0], 0.0)
            per_rank: dict[int, int] = {}
            for p in mine:
                for j, rank in enumerate(ranks):
                    per_rank[rank] = per_rank.get(rank, 0) + (p.n * (j + 1) // len(ranks) - p.n * j // len(ranks)
                                                              if p.nbytes > 0 or n_moving == n_op else 0)
            # shared records sum the time over ranks, as they sum the ops: each rank that moved data gets an
            # equal share (not a share by its op count: 72 writes over 16 ranks put 5 on some, and 5 x the mean
            # op time overflowed the span), and a rank's accesses never take longer than the span
            busy = sum(1 for v in per_rank.values() if v) or 1
            rank_time = total / busy
            for p in mine:
                for j, rank in enumerate(ranks):
                    lo, hi = p.n * j // len(ranks), p.n * (j + 1) // len(ranks)
                    n = hi - lo
                    if n <= 0:
                        continue
                    base = lo if rec.rank < 0 else rec.rank * p.n
                    # one rank's accesses fit in the op's span (a rank's calls do not overlap)
                    mine_n = per_rank[rank]
                    dt_rank = (min(rank_time, length) if length > 0 else rank_time) / mine_n if mine_n else 0.0
                    dt_rank = dt_rank if p.nbytes > 0 or n_moving == n_op else 0.0
                    t0 = (np.linspace(span[0], max(span[1] - dt_rank, span[0]), n) if n > 1
                          else np.asarray([span[0]]))
                    dts = np.full(n, dt_rank)
                    if p.tile is None:
                        box = _run_box(p.nelements, shape) if p.nelements else (0,) + (1,) * (ndim - 1)
                        tile = _Tile((1,) * ndim, (1,) * ndim, box)
                    else:
                        tile = p.tile
                    total = p.n if rec.rank < 0 else p.n * (max(r.rank for r in recs) + 1)
                    starts = _tile_starts(tile, shape, base, n, total)
                    pinned = _dxt_pin(ds, tile, p, rank, op, log, alone_in_file)
                    if pinned is not None and len(pinned[0]) == n:
                        starts[:, 0], t0, dts = pinned
                        pinned_ranks.append(rank)
                    nel = int(np.prod(tile.count) * np.prod(tile.block)) if p.tile is not None or p.nelements else 0
                    for k in range(n):
                        sel = Selection(tuple(int(v) for v in starts[k]), tile.count, tile.stride, tile.block)
                        out.append(AccessRecord(ds.id, op, sel, nel, p.nbytes, float(t0[k]), float(dts[k]), rank))
    key = ds.key
    if pinned_ranks:
        facts.append(ImportedFact(key, "placement", (
            f"first-dimension offsets of ranks {sorted(set(pinned_ranks))} from DXT file offsets (contiguous "
            "dataset, one dataset in the file, one transfer per access); the rest row-major tiles, consecutive "
            "per rank"), True))
    else:
        facts.append(ImportedFact(key, "placement", (
            "synthetic: Darshan keeps no start offsets; tiles in row-major order, consecutive per rank, spread "
            "evenly over the dataset when they cover only part of it"), True))
    return out


def _dxt_pin(ds: DatasetRecord, tile: _Tile, p: _Planned, rank: int, op: str, log: DarshanLog,
             alone_in_file: bool):
    """First-dimension starts and times of one rank's accesses from DXT, where the file offsets pin them.

    Only for a contiguous dataset alone in its file whose accesses are whole rows (one transfer each, the
    transfer as large as the access): element = (offset - lowest such offset in the file) / itemsize."""
    if ds.chunks is not None or not alone_in_file or not log.dxt or p.tile is None or p.nbytes <= 0:
        return None
    if tile.count != (1,) * len(ds.shape) or tuple(tile.block[1:]) != tuple(ds.shape[1:]):
        return None
    segs = [s for s in log.dxt if s.file == ds.file and s.rank == rank and s.op == op]
    if not segs:
        return None
    seg = segs[0]
    same = seg.length == p.nbytes
    base = min(int(s.offset[s.length == p.nbytes].min()) for s in log.dxt
               if s.file == ds.file and (s.length == p.nbytes).any())
    row_bytes = ds.itemsize * math.prod(ds.shape[1:])
    rel = seg.offset[same] - base
    if (rel % row_bytes).any():
        return None
    rows = rel // row_bytes
    if (rows + tile.block[0] > ds.shape[0]).any():
        return None
    return rows, seg.start[same], seg.end[same] - seg.start[same]


__all__ = ["AccessShape", "DarshanError", "DarshanLog", "DxtSegments", "H5DCounters", "ImportSummary", "account_h5d",
           "counters_of_trace", "import_darshan", "log_from_raw", "parse_shapes", "parse_text", "read_log",
           "split_reads_writes", "to_parser_text"]
