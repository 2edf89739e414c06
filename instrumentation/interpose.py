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
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from .columns import POINTS, SLAB, AccessColumns
from .partsdir import LOG_PREFIX
from .preload import CAPTURE_LEVEL, LOG_DIR_VAR, child_environment, library, preloaded  # noqa: F401 - also public here
from . import h5log
from .h5log import (  # noqa: F401 - the log format's names, also public here
    ACCESS, BATCH, BATCH_ALIKE_MAGIC, BATCH_MAGIC, HDF5_TYPE_CLASSES, KIND_ALL, KIND_NONE, KIND_REGULAR, MAXD,
    READ_BYTES, ProcessLog, blocks_selection, canonical_hyperslabs, dataset_template, numpy_dtype, read_batches)
from .libraries import mapped_libhdf5
from .opens import CLOSE, OPEN, OpenRecord
from .selection import points_selection
from .sink import DatasetInfo

MAX_SPANS = 1 << 17
"""h5py calls kept to drop their libhdf5 duplicates (about 120 bytes each) beyond which a poll converts this
process's records while it is still recording: bounds the memory they take."""
def _present(indices: np.ndarray, n: int) -> list[int]:
    """The distinct values of ``indices`` (each in 0..n-1), in order. Not ``np.unique``: without a ``return_*``
    it imports numpy.ma, tens of milliseconds of a traced run's exit (benchmarks/speed/tracing_overhead.py)."""
    return np.flatnonzero(np.bincount(indices, minlength=n)).tolist()


def unavailable() -> str | None:
    """Why libhdf5 calls below Python cannot be captured here, or None when they can."""
    if library() is None:
        return "the libhdf5 interposer was not built (no C compiler at install time)"
    return None


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
        ``final``); ``eager``: every other process's records, due or not, and all of them (a launcher that records
        nothing itself and is idle while its program runs: instrumentation/launch.py; no h5py call of theirs is
        in this process's tracers, so none is waited for: the run's exit converts only the last interval's)."""
        now = time.perf_counter()
        if self.control is not None:  # this process's records reach the disk (and the trace) even if it is killed
            if final and hasattr(self.control, "ioadv_list_late"):  # (an interposer built before it: no such call)
                self.control.ioadv_list_late()  # read-only datasets left open: chunks listed after the reads
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
                    (crowded or (due and log.backlog() >= h5log.PENDING_BYTES)):
                from .convert import Converter

                self.converter = Converter.start(self, log, tracers)
                self._refused = self.converter is None
                if self.converter is not None:
                    continue
            others = eager and pid != self.pid
            if not due and not final and not (crowded and pid == self.pid) and not others:
                continue
            self.convert(log, tracers, float("inf") if others else cutoff)
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
        self._files(log, tracers, cutoff)

    @staticmethod
    def _files(log: ProcessLog, tracers, cutoff: float) -> None:
        """Hand ``log``'s file opens and closes (H5Fopen/H5Fclose) before ``cutoff`` to ``tracers``."""
        while log.files and float(log.files[0].get("at", 0.0)) <= cutoff:
            ev = log.files.pop(0)
            rec = OpenRecord(h5log.file_location(str(ev.get("file", ""))), None, CLOSE if ev.get("ev") == CLOSE
                             else OPEN, 0.0, via="libhdf5")
            at = float(ev.get("at", 0.0))
            for tr in tracers:
                if at >= tr.origin:
                    tr.opened(rec, at)

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
                    if sel["kind"] == "points" else blocks_selection(sel["v"], nd)
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
            for i in _present(which[keep[tr] & converted], len(infos)):
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
            used = set(_present(which[rows], len(infos)))  # each registered above
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
            for num in np.unique(nums, return_index=True)[0].tolist():  # (return_index: as _present says)
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
