"""The libhdf5 interposer's log (interposer/*.c): its record layout, and reading one process's log (``ProcessLog``):
``h5-PID.acc`` (binary batches of ``ACCESS`` records) and ``h5-PID.meta`` (JSON lines: libraries, datasets, point
and block selections, extent changes), turned into arrays and dataset records (instrumentation/interpose.py hands
them to the tracers)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from . import settings
from .chunklisting import remember_listed
from .jsonvalue import plain
from .locations import hdf5_location
from .records import ChunkCache, DatasetRecord, Filter, Selection
from .selection import points_selection

MAXD = 8
ACCESS = np.dtype([
    ("t0", "<f8"), ("dt", "<f8"), ("ds", "<u4"), ("tid", "<u4"), ("op", "u1"), ("kind", "u1"),
    ("ndim", "u1"), ("pad", "u1"), ("caller", "<u2"), ("pad2", "<u2"), ("n", "<u8"), ("nbytes", "<u8"),
    ("start", "<u8", (MAXD,)), ("stride", "<u8", (MAXD,)), ("count", "<u8", (MAXD,)), ("block", "<u8", (MAXD,)),
])
"""One access as the interposer holds it (``struct ioadv_access``)."""
BATCH = np.dtype([("magic", "<u4"), ("n", "<u4"), ("width", "<u4"), ("pad", "<u4")])
"""The head of a batch of records in an ``.acc`` file (``struct ioadv_batch``): ``n`` records of ``ACCESS``
follow, each of start, stride, count and block cut to ``width`` dimensions (``BATCH_MAGIC``); or, for ``n``
records alike in all but t0, dt and start (``BATCH_ALIKE_MAGIC``), the first of them so cut, then (t0, dt,
start) of each (``_alike``)."""
BATCH_MAGIC, BATCH_ALIKE_MAGIC = 0x31414F49, 0x32414F49
KIND_ALL, KIND_REGULAR, KIND_BLOCKS, KIND_POINTS, KIND_NONE, KIND_OTHER = range(6)

PENDING_BYTES = settings.pending_bytes()
"""Unconverted bytes of a process's ``.acc`` file (about 150,000 2-D records, 520,000 of a loop's alike ones) that
make a poll convert them while the process is still recording (a process's own, from then on, by a converter
beside it: ``convert.Converter``): bounds the log directory's disk use."""
READ_BYTES = 4 << 20
"""Bytes of records converted at a time (the widened records and their columns take about 5 times that)."""
_UNLIMITED = 2**64 - 1




HDF5_TYPE_CLASSES = {0: "integer", 1: "float", 2: "time", 3: "string", 4: "integer", 5: "opaque",
                     6: "compound", 7: "reference", 8: "enum", 9: "vlen", 10: "opaque"}
"""H5T_class_t -> records.TYPE_CLASSES."""


def numpy_dtype(cls: int, size: int, order: int, sign: int, vstr: bool = False) -> str:
    """An HDF5 type class/size/byte order/sign as a numpy dtype string, as h5py would give it
    (objects for variable-length data and references, raw bytes for what has no numpy peer)."""
    end = ">" if order == 1 else "<"
    if cls in (0, 4, 8):  # integer, bitfield, enum (h5py: its integer base type)
        return f"{end}{'i' if sign == 1 or cls == 8 else 'u'}{size}" if size > 1 else \
            ("|i1" if sign == 1 or cls == 8 else "|u1")
    if cls == 1 and size in (2, 4, 8, 16):
        return f"{end}f{size}"
    if cls == 3:
        return "|O" if vstr else f"|S{size}"
    if cls in (7, 9):
        return "|O"
    return f"|V{size}"


def _fill(hexbytes: str | None, dtype: str):
    if not hexbytes or dtype == "|O":
        return None
    return plain(np.frombuffer(bytes.fromhex(hexbytes), dtype=np.dtype(dtype))[0])


def _file_location(name: str, driver: str | None) -> str:
    """The file's location (``locations.hdf5_location``): h5py names a file object's file by its repr
    ("<File-like object ...>"), to which the interposer prepended the working directory as to any relative name."""
    cut = name.find("/<")
    if name.endswith(">") and cut >= 0:
        return hdf5_location(name[cut + 1:], "fileobj")
    return hdf5_location(name, driver)


def file_location(name: str) -> str:
    """The location of a file an interposer ``f`` line names, as its datasets' records name it."""
    return _file_location(name, None)


def _offsets_array(offsets: list, chunks: list) -> np.ndarray:
    """(n, ndim + 2) chunk-grid coordinates, byte offset, stored size, from the interposer's flat list of element
    offsets, addresses and sizes."""
    arr = np.asarray(offsets, dtype=np.int64).reshape(-1, len(chunks) + 2)
    arr[:, : len(chunks)] //= np.asarray(chunks, dtype=np.int64)
    return arr


def _listed_at_close(meta: dict | None, offsets: list) -> None:
    """An ``o`` line: the chunks of a read-only file's dataset, listed as the program closed it (its ``d`` line
    ``meta``), kept for the trace's end (instrumentation/chunklisting.py)."""
    chunks = (meta or {}).get("chunks")
    if chunks:
        key = f"{_file_location(meta['file'], meta.get('driver'))}::{meta['path']}"  # DatasetRecord.key
        remember_listed(key, _offsets_array(offsets, chunks))


def dataset_template(meta: dict, version: str, created: bool) -> DatasetRecord:
    """The DatasetRecord (id -1) an interposer ``d`` line describes."""
    cls = meta.get("class", -1)
    vstr = bool(meta.get("vstr"))
    dtype = numpy_dtype(cls, meta.get("size", 0), meta.get("order", 0), meta.get("sign", -1), vstr)
    cache = meta.get("cache")
    chunks = meta.get("chunks")
    offsets = meta.get("offsets")
    if offsets is not None and chunks:
        offsets = _offsets_array(offsets, chunks)
    intent = meta.get("intent")
    return DatasetRecord(
        id=-1,
        library="hdf5",
        library_version=version,
        file=_file_location(meta["file"], meta.get("driver")),
        path=meta["path"],
        shape=tuple(meta["dims"]),
        dtype=dtype,
        maxshape=tuple(None if m == _UNLIMITED else m for m in meta["maxdims"]),
        chunks=tuple(chunks) if chunks else None,
        filters=tuple(Filter.hdf5(f["id"], f["flags"], f["cd"], f["name"]) for f in meta.get("filters", ())),
        fillvalue=_fill(meta.get("fill"), dtype),
        cache=None if cache is None else ChunkCache(int(cache[0]), int(cache[1]), float(cache[2])),
        driver=meta.get("driver"),
        mode=None if intent is None else ("r+" if intent & 1 else "r"),
        created=created,
        chunk_offsets=None if created else offsets,
        type_class="vlen-string" if vstr else HDF5_TYPE_CLASSES.get(cls),
    )


def _cut(width: int) -> np.dtype:
    """An ``ACCESS`` record as written in a batch of this width."""
    return np.dtype([(n, ACCESS[n].base, (width,)) if ACCESS[n].shape else (n, ACCESS[n]) for n in ACCESS.names])


_CUT = [_cut(w) for w in range(MAXD + 1)]
_ALIKE = [np.dtype([("t0", "<f8"), ("dt", "<f8"), ("start", "<u8", (w,))]) for w in range(MAXD + 1)]
"""What a batch of records alike holds of each record after the first (whole)."""


def read_batches(data: bytes) -> tuple[np.ndarray, int, bool, np.ndarray]:
    """(the records of the complete batches at the start of ``data``, the bytes they take, whether a
    batch head is unreadable there: nothing after it can be read, the offset of each record's batch)."""
    parts, heads, at, bad = [], [], 0, False
    while at + BATCH.itemsize <= len(data):
        head = np.frombuffer(data, BATCH, 1, at)[0]
        if head["magic"] not in (BATCH_MAGIC, BATCH_ALIKE_MAGIC) or head["width"] > MAXD:
            bad = True
            break
        n, width = int(head["n"]), int(head["width"])
        cut, alike = _CUT[width], head["magic"] == BATCH_ALIKE_MAGIC
        end = at + BATCH.itemsize + (cut.itemsize + n * _ALIKE[width].itemsize if alike else n * cut.itemsize)
        if end > len(data):
            break  # still being written
        packed = np.frombuffer(data, cut, 1 if alike else n, at + BATCH.itemsize)
        rec = np.zeros(n, ACCESS)
        for name in ACCESS.names:
            if rec[name].ndim == 2:
                rec[name][:, :width] = packed[name]
            else:
                rec[name] = packed[name]
        if alike:  # the first record, as every one's; then each one's own times and start
            own = np.frombuffer(data, _ALIKE[width], n, at + BATCH.itemsize + cut.itemsize)
            rec["t0"], rec["dt"] = own["t0"], own["dt"]
            rec["start"][:, :width] = own["start"]
        parts.append(rec)
        heads.append(np.full(n, at, np.int64))
        at = end
    return (np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.zeros(0, ACCESS)), at, bad, \
        np.concatenate(heads) if heads else np.zeros(0, np.int64)


def canonical_hyperslabs(rec: np.ndarray, width: int = MAXD) -> tuple[np.ndarray, ...]:
    """(start, count, stride, block) of ``rec``'s regular selections in the trace's canonical form, first
    ``width`` dimensions.

    Per dimension (as ``selection._multiblock_dim``): nothing selected -> count 1, block 0; one block
    or touching blocks -> one run (count 1, stride 1); else count blocks of block, stride apart.
    """
    start, stride, count, block = (rec[name][:, :width].astype(np.int64)
                                   for name in ("start", "stride", "count", "block"))
    empty = (count == 0) | (block == 0)
    run = ~empty & ((count == 1) | (stride == block))
    block = np.where(empty, 0, np.where(run, count * block, block))
    count = np.where(empty | run, 1, count)
    stride = np.where(empty | run, 1, stride)
    return start, count, stride, block


def blocks_selection(values: list[int], ndim: int) -> Selection:
    """A union of blocks (pairs of inclusive corners) as points: every element once, in order."""
    corners = np.asarray(values, dtype=np.int64).reshape(-1, 2, ndim)
    pts = [np.stack(np.meshgrid(*[np.arange(lo, hi + 1) for lo, hi in zip(b[0], b[1])], indexing="ij"),
                    -1).reshape(-1, ndim) for b in corners]
    return points_selection(np.unique(np.concatenate(pts), axis=0) if pts else np.zeros((0, ndim), np.int64))


class ProcessLog:
    """One process's interposer files, read as they grow (complete lines and records only)."""

    def __init__(self, log_dir: Path, pid: int):
        self.pid = pid
        self.meta_path = log_dir / f"h5-{pid}.meta"
        self.acc_path = log_dir / f"h5-{pid}.acc"
        self._meta_at = 0
        self._acc_at = 0
        self._held = np.zeros(0, ACCESS)  # records given back by ``unread``
        self._last = self._held
        # the file offset of each record's batch (of ``_last``, of ``_held``), the records of the first one's batch
        # returned before it, and those of the batch at ``_acc_at`` to skip (``resume``): where reading resumes
        self._where = self._held_where = np.zeros(0, np.int64)
        self._first_skip = self._held_skip = self._skip = 0
        self._from = 0  # metadata of the accesses before this one was another reader's (``resume``)
        self._acc_lost = False  # an unreadable batch head: the rest of the file cannot be read
        self._size = 0  # of the .acc file at the last ``due``
        self.more = False  # the last ``read`` stopped at its limit
        self.libs: dict[int, dict] = {}
        self.callers: dict[int, dict] = {}
        self.datasets: dict[int, dict] = {}
        self.selections: dict[int, dict] = {}
        self.resizes: list[dict] = []  # extent changes, in the order of the accesses they precede
        self.files: list[dict] = []  # opens and closes of files ("f" lines), not yet handed over
        self.linked_in: dict | None = None  # the process's program has libhdf5 linked in, unseen ("static" line)
        self.n_read = 0
        self.bad_lines = 0

    def due(self) -> bool:
        """Whether records wait to be converted and this is the time: the file has not grown since the last
        ``due`` (the process is idle, or gone) or holds PENDING_BYTES not read."""
        try:
            size = os.stat(self.acc_path).st_size
        except FileNotFoundError:
            size = 0
        grown, self._size = size != self._size, size
        if size <= self._acc_at and not len(self._held):
            return False
        return not grown or size - self._acc_at >= PENDING_BYTES

    def backlog(self) -> int:
        """Bytes of the ``.acc`` file not read yet, at the last ``due``."""
        return self._size - self._acc_at

    def read(self, limit: int = READ_BYTES) -> np.ndarray:
        """Take in the new metadata; return the new access records, from at most ``limit`` bytes of the file
        (``more``: it may hold more)."""
        for line in self._new_lines():
            try:
                ev = json.loads(line)
                kind = ev["t"]
            except (ValueError, KeyError, TypeError):
                self.bad_lines += 1
                continue
            if kind == "d":
                self.datasets[ev["i"]] = ev
            elif kind == "o":
                _listed_at_close(self.datasets.get(ev["i"]), ev["offsets"])
            elif kind == "lib":
                self.libs[ev["i"]] = ev
            elif kind == "caller":
                self.callers[ev["i"]] = ev
            elif kind == "s" and ev["a"] >= self._from:
                self.selections[ev["a"]] = ev
            elif kind == "r" and ev["a"] >= self._from:
                self.resizes.append(ev)
            elif kind == "static":
                self.linked_in = ev
            elif kind == "f":
                self.files.append(ev)
        try:
            with open(self.acc_path, "rb") as fh:
                fh.seek(self._acc_at)
                data = b"" if self._acc_lost else fh.read(limit)
        except FileNotFoundError:
            data = b""
        new, used, bad, where = read_batches(data)
        where += self._acc_at
        self.more = not bad and len(data) == limit
        if bad:
            self._acc_lost = True
            self.bad_lines += 1
        self._acc_at += used
        if len(self._held):
            rec, self._where = np.concatenate([self._held, new]), np.concatenate([self._held_where, where])
            self._first_skip = self._held_skip
        else:
            skip, self._skip = self._skip, 0
            rec, self._where, self._first_skip = new[skip:], where[skip:], skip
        self._held = rec[:0]
        self._last = rec
        self.n_read += len(rec)
        return rec

    def unread(self, n: int) -> None:
        """Give back the last ``n`` access records read: the next ``read`` returns them again."""
        first = len(self._last) - n
        self._held = self._last[first:] if n else self._last[:0]
        self._held_where = self._where[first:]
        if n:
            batch = int(np.searchsorted(self._where, self._where[first]))
            self._held_skip = first - batch + (self._first_skip if batch == 0 else 0)
        self.n_read -= n

    def position(self) -> tuple[int, int, int]:
        """Where the records not yet returned start: (file offset of their first one's batch, records of that
        batch returned already, the first one's number among the process's accesses)."""
        if len(self._held):
            return int(self._held_where[0]), self._held_skip, self.n_read
        return self._acc_at, self._skip, self.n_read

    def resume(self, offset: int, skip: int, first: int) -> None:
        """Read on from another reader's ``position()``: the metadata anew, the accesses from there."""
        self._acc_at, self._skip, self.n_read, self._from = offset, skip, first, first

    def _new_lines(self) -> list[bytes]:
        try:
            with open(self.meta_path, "rb") as fh:
                fh.seek(self._meta_at)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self._meta_at += end
        return data[:end].splitlines()


__all__ = ["PENDING_BYTES", "ACCESS", "BATCH", "BATCH_ALIKE_MAGIC", "BATCH_MAGIC", "HDF5_TYPE_CLASSES", "KIND_ALL", "KIND_BLOCKS",
           "KIND_NONE", "KIND_OTHER", "KIND_POINTS", "KIND_REGULAR", "MAXD", "READ_BYTES", "ProcessLog",
           "blocks_selection", "canonical_hyperslabs", "dataset_template", "numpy_dtype", "read_batches"]
