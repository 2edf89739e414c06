"""Capture below Python: what the libhdf5 interposer (interposer/h5interpose.c) records, as trace records.

The interposer is a shared library built at install time (``setup.py``) and
loaded with ``LD_PRELOAD``; it sees every ``H5Dread``/``H5Dwrite`` of a
process, whoever calls it: netCDF-C (netCDF4-python, xarray's default engine),
PyTables, h5py's low-level calls, C/C++/Fortran programs. Each process writes
``h5-PID.meta`` (JSON lines) and ``h5-PID.acc`` (``ACCESS`` records) into a
log directory; ``LibraryCapture`` reads them while the program runs (on the
tracer's flusher thread, never on the program's) and hands them to the active
tracers in bulk: the records are read as a numpy structured array and become
the trace writer's columns (``AccessColumns``) with no Python object per
access, but for point and block lists (rare). A busy process's records wait
(``ProcessLog.due``): converting them beside the traced program, a few hundred
every flush interval or in bulk every 10 s, cost it about 5 times what the
same conversion costs alone (docs/tracing-overhead.md). They are flushed to
the file at each poll and converted once the process has been quiet for a
poll, at its tracer's exit, or when PENDING_BYTES (or MAX_SPANS h5py calls)
wait: never on a timer while it is busy. Past that bound, a process's own
records are converted outside it from then on, by a converter process beside
it (``convert``), where it has a parts directory; another process's records
(a C program's, a child's logging here) are not this process's program's time
and are converted here. A followed process's log directory lies in its run's
parts directory, where the run's merge converts what a process killed with
SIGKILL left (``parts.merge_parts``); the trace of a killed run's own process
(``load_trace(..., allow_truncated=True)``) holds its libhdf5 accesses up to
its last pause (at most PENDING_BYTES of records lost) or, once its converter
runs, every one the interposer wrote.

An access that the h5py hooks recorded too is kept once, as the h5py hooks
saw it: a libhdf5 call of the same dataset that ran inside a recorded h5py
call of the same process is dropped. Records are converted one flush
interval after they were made, so the h5py call around them is known by then
(at the merge of a killed process's records, from the h5py calls in its part).
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from .columns import POINTS, SLAB, AccessColumns
from .partsdir import LOG_PREFIX
from .locations import hdf5_location
from .preload import CAPTURE_LEVEL, LOG_DIR_VAR, child_environment, library, preloaded  # noqa: F401 - also public here
from .records import ChunkCache, DatasetRecord, Filter, Selection
from .selection import points_selection
from .sink import DatasetInfo

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

PENDING_BYTES = int(os.environ.get("IOADVISOR_PENDING_BYTES", 16 << 20))
"""Unconverted bytes of a process's ``.acc`` file (about 150,000 2-D records, 520,000 of a loop's alike ones) that
make a poll convert them while the process is still recording (a process's own, from then on, by a converter
beside it: ``convert.Converter``): bounds the log directory's disk use."""
MAX_SPANS = 1 << 17
"""h5py calls kept to drop their libhdf5 duplicates (about 120 bytes each) beyond which a poll converts this
process's records while it is still recording: bounds the memory they take."""
READ_BYTES = 4 << 20
"""Bytes of records converted at a time (the widened records and their columns take about 5 times that)."""
_UNLIMITED = 2**64 - 1


def unavailable() -> str | None:
    """Why libhdf5 calls below Python cannot be captured here, or None when they can."""
    if library() is None:
        return "the libhdf5 interposer was not built (no C compiler at install time)"
    return None


class _DlPhdrInfo(ctypes.Structure):
    """The head of glibc's ``struct dl_phdr_info``, up to its load counters."""

    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p), ("phdr", ctypes.c_void_p),
                ("phnum", ctypes.c_uint16), ("adds", ctypes.c_ulonglong), ("subs", ctypes.c_ulonglong)]


_DL_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_DlPhdrInfo), ctypes.c_size_t, ctypes.c_void_p)


def _dl_walker():
    """A function ``walk(with_names=False)`` returning glibc's (libraries ever loaded, ever unloaded) in about
    1 µs and, ``with_names``, the loaded objects' names too (about 0.2 ms: /proc/self/maps costs 1-3 ms); None
    without it."""
    try:
        iterate = ctypes.CDLL(None).dl_iterate_phdr
    except (OSError, AttributeError):
        return None
    iterate.argtypes = [_DL_CALLBACK, ctypes.c_void_p]
    counters: list = []
    names: list = []
    want = [False]

    def visit(info, size, _data):
        if not counters:  # the counters are the same in every entry; valid only when the C library's struct has them
            counters.append((info.contents.adds, info.contents.subs)
                            if size >= _DlPhdrInfo.subs.offset + _DlPhdrInfo.subs.size else None)
        if not want[0]:
            return 1
        names.append(info.contents.name)
        return 0

    callback = _DL_CALLBACK(visit)

    def walk(with_names: bool = False):
        # no lock (one held by another thread at a fork would hang the child): the counters are the process's,
        # so threads racing here read the same values, or none (then the caller reads the maps)
        counters.clear()
        names.clear()
        want[0] = with_names
        iterate(callback, None)
        loads = next(iter(counters), None)
        return (loads, [os.fsdecode(n) for n in names if n]) if with_names else loads

    return walk if walk() is not None else None


_walker: dict = {}  # "walk": _dl_walker()'s, made at the first use (importing this module calls nothing)
_mapped: dict = {}  # the last listing of the loaded libraries and the load counters then (a forked child inherits it)


def _dl_walk():
    """The walker of the loaded libraries (``_dl_walker``), or None."""
    if "walk" not in _walker:
        _walker["walk"] = _dl_walker()
    return _walker["walk"]


def _loaded_files() -> tuple[object, set[str]]:
    """(load counters or None, paths of the loaded shared objects)."""
    walk = _dl_walk()
    if walk is not None:
        loads, names = walk(True)
        if loads is not None:
            return loads, set(names)
    with open("/proc/self/maps") as fh:
        return None, {fields[5].strip() for fields in (line.split(None, 5) for line in fh) if len(fields) == 6}


def mapped_libhdf5() -> frozenset[str]:
    """The libhdf5 files this process has loaded, other than h5py's own (its calls are hooked above)."""
    # listed again only when a library was loaded or unloaded since (every tracer's start and exit, every forked
    # worker's, asks)
    walk = _dl_walk()
    loads = walk() if walk is not None else None
    if loads is not None and _mapped.get("loads") == loads:
        return _mapped["files"]
    try:
        loads, files = _loaded_files()
    except OSError:
        return frozenset()
    found = frozenset(os.path.realpath(f) for f in files
                      if os.path.basename(f).startswith("libhdf5") and ".so" in f
                      and not os.path.basename(f).startswith(("libhdf5_hl", "libhdf5_cpp", "libhdf5_fortran"))
                      and "/h5py.libs/" not in f and "/h5py/" not in f)
    _mapped.update(loads=loads, files=found)
    return found


def unseen(capture: "LibraryCapture | None", before: frozenset[str]) -> list[str]:
    """What is known to be missing below Python: accesses the interposer recorded that could not be
    converted, and, when it does not record this process, the libhdf5 copies loaded since ``before``
    (so while tracing)."""
    lost = []
    if capture is not None:
        lost += capture.lost()
        if capture.control is not None:
            return lost
    why = unavailable() if capture is None else \
        "this process was not started with the interposer preloaded (ioadvisor run does that)"
    return lost + [f"libhdf5 calls through {f} (netCDF4, PyTables, ...) are not captured: {why}"
                   for f in sorted(mapped_libhdf5() - before)]


def loaded() -> ctypes.CDLL | None:
    """The interposer when this process was started with it preloaded."""
    path = library()
    if path is None:
        return None
    try:
        return ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None


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
    value = np.frombuffer(bytes.fromhex(hexbytes), dtype=np.dtype(dtype))[0].item()
    return value if not isinstance(value, bytes) else value.decode("utf-8", "replace")


def _file_location(name: str, driver: str | None) -> str:
    """The file's location (``locations.hdf5_location``): h5py names a file object's file by its repr
    ("<File-like object ...>"), to which the interposer prepended the working directory as to any relative name."""
    cut = name.find("/<")
    if name.endswith(">") and cut >= 0:
        return hdf5_location(name[cut + 1:], "fileobj")
    return hdf5_location(name, driver)


def dataset_template(meta: dict, version: str, created: bool) -> DatasetRecord:
    """The DatasetRecord (id -1) an interposer ``d`` line describes."""
    cls = meta.get("class", -1)
    vstr = bool(meta.get("vstr"))
    dtype = numpy_dtype(cls, meta.get("size", 0), meta.get("order", 0), meta.get("sign", -1), vstr)
    cache = meta.get("cache")
    chunks = meta.get("chunks")
    offsets = meta.get("offsets")
    if offsets is not None and chunks:
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, len(chunks) + 2)
        offsets[:, : len(chunks)] //= np.asarray(chunks, dtype=np.int64)
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


def _blocks_selection(values: list[int], ndim: int) -> Selection:
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


class LibraryCapture:
    """The interposer's records of every process logging into ``log_dir``, delivered to the active tracers.

    ``control``: the interposer loaded in this process (it was started preloaded), which then
    records into ``log_dir`` too; its h5py calls are seen at both levels and kept once.
    """

    def __init__(self, log_dir: Path, control: ctypes.CDLL | None, pid: int | None = None):
        self.log_dir = log_dir
        self.control = control
        self.pid = os.getpid() if pid is None else pid  # whose h5py calls the tracers' spans are
        self.logs: dict[int, ProcessLog] = {}
        self.infos: dict[tuple[int, int], object] = {}
        self._cutoff = 0.0
        self.hooked: dict[str, str] = {}  # libhdf5 file -> its version, as the processes reported them
        self.unconverted = 0
        self._spans: dict[object, list] = {}  # tracer -> h5py calls (key, t0, t1) not yet behind the cutoff
        self.converter = None  # convert.Converter: this process's own records are converted there
        self.failed: str | None = None  # why the converter failed: this process's records are then not read on
        self._refused = False  # no converter could be started here: this process's records are converted here

    @classmethod
    def start(cls, parts_dir: str | None = None) -> "LibraryCapture | None":
        """A capture with a fresh log directory, recording this process too if it was started preloaded.

        ``parts_dir``: this process is followed; its directory goes there (``LOG_PREFIX``), where the run's
        merge converts what it left if it is killed (``parts.merge_parts``)."""
        if library() is None:
            return None
        log_dir = None
        if parts_dir is not None:
            log_dir = Path(parts_dir) / f"{LOG_PREFIX}{os.getpid()}"
            try:
                log_dir.mkdir(exist_ok=True)
            except OSError:  # the run is over (a forkserver outlives the run that started it): nobody merges it
                log_dir = None
        if log_dir is None:
            log_dir = Path(tempfile.mkdtemp(prefix="ioadvisor-h5-"))
        control = loaded()
        if control is not None:
            control.ioadv_set_dir.argtypes = [ctypes.c_char_p]
            control.ioadv_set_dir(os.fsencode(log_dir))
        return cls(log_dir, control)

    def forked(self, parts_dir: str | None) -> "LibraryCapture | None":
        """In a forked child: a capture of its own. The parent's directory stays the parent's (its
        records, and the removal at its end), so does its converter; the interposer here writes into the new
        one."""
        if self.converter is not None:
            self.converter.abandon()
        return LibraryCapture.start(parts_dir)

    def libraries(self) -> tuple[str, ...]:
        """The libhdf5 copies calls were recorded through, ``HDF5 VERSION: PATH`` each."""
        return tuple(f"HDF5 {version}: {path}" for path, version in sorted(self.hooked.items()))

    def lost(self) -> list[str]:
        """What the interposer recorded that could not be converted, as notes for ``TraceHeader.missed``."""
        bad = sum(log.bad_lines for log in self.logs.values())
        failed = [self.failed] if self.failed else []
        from .linkage import gap_note

        failed += sorted({gap_note(log.linked_in.get("file", "?"), log.linked_in.get("version", "?"))
                          for log in self.logs.values() if log.linked_in})
        if not (self.unconverted or bad):
            return failed
        return failed + [f"{self.unconverted} libhdf5 access(es) with a selection not converted (a point or block list "
                f"over the size limit, H5S_PLIST) and {bad} unreadable interposer line(s)"]

    def close(self) -> None:
        if self.converter is not None:  # its tracer exited without a final poll (an error): nothing to wait for
            self.converter.stop()
            self.converter = None
        if self.control is not None:
            self.control.ioadv_set_dir(None)
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def poll(self, tracers, final: bool = False, *, eager: bool = False) -> None:
        """Convert what the processes recorded, up to one flush interval ago, where due (everything when
        ``final``); ``eager``: every other process's records, due or not (a launcher that records nothing itself
        and is idle while its program runs: instrumentation/launch.py)."""
        now = time.perf_counter()
        if self.control is not None:  # this process's records reach the disk (and the trace) even if it is killed
            self.control.ioadv_flush()
        cutoff = float("inf") if final else self._cutoff
        self._cutoff = now
        for name in os.listdir(self.log_dir):
            if name.startswith("h5-") and name.endswith(".acc") and name[3:-4].isdigit():
                pid = int(name[3:-4])
                if pid not in self.logs:
                    self.logs[pid] = ProcessLog(self.log_dir, pid)
        # a busy process's own records wait (converting them beside its program cost it 5 times the work: module
        # docstring) unless they, or the h5py calls kept to drop their duplicates, reach their bound: then a
        # converter process takes them over (where it can: one tracer, with a parts directory), else they are
        # converted here
        crowded = any(tr.spans is not None and len(tr.spans) > MAX_SPANS for tr in tracers)
        for pid, log in self.logs.items():
            if pid == self.pid and (self.converter is not None or self.failed):
                continue
            due = log.due()
            if pid == self.pid and not final and not self._refused and \
                    (crowded or (due and log.backlog() >= PENDING_BYTES)):
                from .convert import Converter

                self.converter = Converter.start(self, log, tracers)
                self._refused = self.converter is None
                if self.converter is not None:
                    continue
            if not due and not final and not (crowded and pid == self.pid) and not (eager and pid != self.pid):
                continue
            self.convert(log, tracers, cutoff)
        if self.converter is not None and tracers:
            self.converter.send(cutoff, tracers[0], final)
            if final:
                self._converted(self.converter.finish())

    def convert(self, log: ProcessLog, tracers, cutoff: float) -> None:
        """Hand ``log``'s records that ended before ``cutoff`` to ``tracers``."""
        log.more = True
        while log.more:
            rec = log.read()
            # the records up to the first one that ended after the cutoff; the rest is read again next time
            late = np.flatnonzero(rec["t0"] + rec["dt"] > cutoff)
            if len(late):
                log.unread(len(rec) - int(late[0]))
                rec = rec[: late[0]]
                log.more = False
            if len(rec):
                self._deliver(log, rec, log.n_read - len(rec), tracers)

    def take_spans(self, sink) -> list:
        """The h5py calls of ``sink`` kept here to drop their libhdf5 duplicates, handed over (to its converter)."""
        return self._spans.pop(sink, [])

    def _converted(self, result: dict | None) -> None:
        """The converter's end: what it learnt; this process's records are read on from where it stopped."""
        converter, self.converter = self.converter, None
        if result is None:  # what it did not write is lost: where it stopped is not known, so nothing more is read
            self.failed = (f"the converter of this process's libhdf5 records failed ({converter.error()}): those "
                           "not in its output are missing")
            return
        self.hooked.update(result["hooked"])
        log = ProcessLog(self.log_dir, self.pid)
        log.resume(*result["position"])
        self.logs[self.pid] = log

    def _info(self, log: ProcessLog, num: int):
        info = self.infos.get((log.pid, num))
        if info is None:
            meta = log.datasets[num]
            lib = log.libs.get(meta["lib"], {})
            version = lib.get("version", "")
            # a program's own libhdf5, reached by the link-time wrapper (interposer/h5wrap.c, linkage.py) or the VOL
            # connector (volconnector.py)
            via = " (VOL connector)" if lib.get("vol") else " (linked in: link-time wrapper)" if lib.get("linked") else ""
            self.hooked[lib.get("file", "") + via] = version
            template = dataset_template(meta, f"HDF5 {version} ({os.path.basename(lib.get('file', ''))})",
                                        bool(meta.get("created")))
            info = DatasetInfo(template, np.dtype(template.dtype))
            if meta.get("null"):
                info.shape = None
            self.infos[(log.pid, num)] = info
        return info

    def _deliver(self, log: ProcessLog, rec: np.ndarray, first: int, tracers) -> None:
        # in bulk, in call order, to each tracer's writer as columns: no Python object per access but
        # for point and block lists (rare), whose selections are read from the metadata
        infos = []
        nums, which = np.unique(rec["ds"], return_inverse=True)
        for num in nums.tolist():
            infos.append(self._info(log, num))
        live = np.array([info.shape is not None for info in infos], bool)[which]
        kind, ndim = rec["kind"], rec["ndim"].astype(np.int64)
        none = kind == KIND_NONE
        slab = live & ((((kind == KIND_ALL) | (kind == KIND_REGULAR)) & (ndim <= MAXD)) | none)
        irregular = {}
        for i in np.flatnonzero(live & ~slab).tolist():
            sel = log.selections.pop(first + i, None)
            if sel is not None and "v" in sel:
                nd = int(ndim[i])
                irregular[i] = points_selection(np.asarray(sel["v"], np.int64).reshape(-1, nd)) \
                    if sel["kind"] == "points" else _blocks_selection(sel["v"], nd)
        converted = slab.copy()
        converted[list(irregular)] = True
        width = int(ndim[converted].max(initial=0))
        start, count, stride, block = canonical_hyperslabs(rec, width)
        # past a row's dimensions the record holds whatever the C stack held: the trace's fill instead
        beyond = np.arange(width) >= ndim[:, None]
        past = beyond | none[:, None]
        start = np.where(past, 0, start)
        count = np.where(past, 1, count)
        stride = np.where(past, 1, stride)
        block = np.where(beyond, 1, np.where(none[:, None], 0, block))
        for i, sel in irregular.items():  # their bounding box, as the writers keep it
            lo, hi = sel.bounds()
            start[i, : len(lo)], block[i, : len(lo)] = lo, np.subtract(hi, lo)
        t0 = rec["t0"]
        last = first + len(rec) - 1
        resizes = []
        while log.resizes and log.resizes[0]["a"] <= last:
            ev = log.resizes.pop(0)  # timed by H5Dset_extent, else seen at the access it precedes
            resizes.append((ev, float(ev.get("at", t0[max(ev["a"] - first, 0)]))))
        r_nums = np.array([ev["i"] for ev, _ in resizes], np.int64)
        r_at = np.array([at for _, at in resizes])
        keep, keep_resize = {}, {}
        for tr in tracers:
            if log.pid == self.pid:
                above = self._seen_above(tr, log, min(float(t0.min(initial=np.inf)), r_at.min(initial=np.inf)))
                keep[tr] = ~above(rec["ds"], t0, t0 + rec["dt"]) & (t0 >= tr.origin)
                keep_resize[tr] = ~above(r_nums, r_at, r_at) & (r_at >= tr.origin)
            else:
                keep[tr], keep_resize[tr] = t0 >= tr.origin, r_at >= tr.origin
        for tr in tracers:  # each dataset enters a trace with its extent before this batch's changes
            self.unconverted += int((keep[tr] & live & ~converted).sum())
            for i in np.unique(which[keep[tr] & converted]).tolist():
                # H5Dcreate2 made it: a new array even where an old one had its name (one the trace knows keeps its id)
                tr.register(infos[i], created=infos[i].template.created, below=True)
        for j, (ev, at) in enumerate(resizes):
            resized = self._info(log, ev["i"])
            resized.shape = tuple(ev["dims"])
            for tr in tracers:
                if keep_resize[tr][j]:
                    tr.resize(resized, at)
        for tr in tracers:
            rows = np.flatnonzero(keep[tr] & converted)
            if not len(rows):
                continue
            used = set(np.unique(which[rows]).tolist())  # each registered above
            tids = np.array([tr.register(info) if i in used else -1 for i, info in enumerate(infos)], np.int32)
            m = len(rows)
            at = {r: j for j, r in enumerate(rows.tolist())} if irregular else {}
            tr.columns(AccessColumns(
                ds=tids[which[rows]], write=rec["op"][rows] == 1, rank=np.full(m, tr.rank, np.int32),
                t0=t0[rows] - tr.origin, dt=rec["dt"][rows], t_step=np.zeros(m),
                n=rec["n"][rows].astype(np.int64), nbytes=rec["nbytes"][rows].astype(np.int64),
                rep=np.ones(m, np.int64), kind=np.where(slab[rows], SLAB, POINTS).astype(np.int8),
                ndim=ndim[rows].astype(np.int8), start=start[rows], count=count[rows], stride=stride[rows],
                block=block[rows], step=np.zeros((m, width), np.int64),
                irregular={at[i]: sel for i, sel in irregular.items() if i in at}))

    def _seen_above(self, tracer, log: ProcessLog, since: float):
        """``inside(nums, a0, a1)``: True where an h5py call recorded by ``tracer`` on the same dataset holds the
        libhdf5 call (an access, or an extent change) of dataset ``nums`` from ``a0`` to ``a1``; none of these
        began before ``since``."""
        queued = tracer.spans
        spans = self._spans.setdefault(tracer, [])
        spans += [queued.popleft() for _ in range(len(queued))]
        if since < np.inf:  # an h5py call that ended well before holds nothing still to come
            spans[:] = [s for s in spans if s[2] >= since - 1.0]
        by_key: dict[str, list] = {}
        for key, s0, s1 in spans:
            by_key.setdefault(key, []).append((s0, s1))
            # h5py's `f[name] = data` writes an anonymous dataset, linked only afterwards: libhdf5 names it "" (so
            # its key is "FILE::"); any h5py call on its file holds it
            by_key.setdefault(key.rpartition("::")[0] + "::", []).append((s0, s1))
        for key, pairs in by_key.items():
            s = np.asarray(sorted(pairs))
            by_key[key] = (s[:, 0], np.maximum.accumulate(s[:, 1]))  # starts; latest end among those no later

        def inside(nums: np.ndarray, a0: np.ndarray, a1: np.ndarray) -> np.ndarray:
            held = np.zeros(len(nums), bool)
            if not by_key:
                return held
            for num in np.unique(nums).tolist():
                starts_reach = by_key.get(self._info(log, num).key)
                if starts_reach is None:
                    continue
                starts, reach = starts_reach
                mine = np.flatnonzero(nums == num)
                j = np.searchsorted(starts, a0[mine], side="right") - 1
                held[mine] = (j >= 0) & (reach[np.maximum(j, 0)] >= a1[mine])
            return held

        return inside


__all__ = ["ACCESS", "CAPTURE_LEVEL", "LOG_DIR_VAR", "LibraryCapture", "ProcessLog", "child_environment",
           "canonical_hyperslabs", "dataset_template", "library", "loaded", "numpy_dtype", "preloaded",
           "mapped_libhdf5", "unavailable", "unseen"]
