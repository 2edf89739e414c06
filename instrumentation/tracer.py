"""``advisor.trace``: record every h5py / zarr array access of a program into a trace file.

How it behaves (each point is tested in tests/instrumentation/test_tracer.py):

- Patches are installed when the first tracer enters and the originals put
  back, exactly, when the last one exits (also on an exception). Libraries
  imported while a tracer is active are patched on import (a meta-path hook,
  removed on exit).
- Scope: an active tracer records the accesses of **every thread** of the
  process, not only the one that entered it. zarr 3 does its I/O on its own
  event-loop thread and programs read through thread pools; a trace around the
  code that starts them must see that I/O. Nested or overlapping tracers each
  get every access made while they are active, with their own clock origin and
  dataset ids.
- One public call is one access: when a traced call reaches another traced
  call on the same thread (``np.asarray(ds)`` -> ``read_direct``, ``ds['f']``
  -> fields view -> ``__getitem__``) only the outermost is recorded.
- Failed calls are not recorded: an access record is I/O that happened. The
  exception reaches the caller unchanged; ``Tracer.failed_calls`` counts them.
- Tracing never raises into user code, nor warns (a strict warnings filter
  would turn a warning into an exception): an error while recording is
  swallowed, counted in ``Tracer.record_errors``, written into the trace
  (``TraceHeader.missed``) and reported by one line on stderr at exit.
- Child processes are followed (``follow=True``, the default): every Python
  process the program starts is traced into its own part, merged into the
  trace at exit (instrumentation/follow.py).
- Below Python (instrumentation/interpose.py): where the libhdf5 interposer
  was built, the tracer collects what it records of every process started
  with it preloaded (``ioadvisor run`` preloads it; children of a tracer
  inherit it), and keeps once an access seen both by the h5py hooks and in
  libhdf5. The header's ``capture`` names the levels in force, ``missed``
  what is not seen.
- The traced thread only records an access (h5py reads, writes and resizes of
  a known dataset by ints and slices in C, normalized at the call:
  ``_hotpath.Recorder``); the ``ioadvisor-flush`` thread takes the records as
  arrays at each pass (hub.QUIET_PASS_SECONDS, or sooner when a recorder fills
  up; hub.FLUSH_INTERVAL for a part), the traced calls handing it the GIL
  (hotpath/passes.c), holds them as taken until the batch is due, then folds
  its runs in C and writes it (instrumentation/heldtakes.py,
  docs/tracing-overhead.md).
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import replace
from pathlib import Path

import numpy as np

from . import interpose, startup
from .chunklisting import ListLater

try:
    from . import _hotpath  # the traced h5py read in C (setup.py); hooks_h5py does the same in Python without it
except ImportError:
    _hotpath = None
from .columns import AccessColumns
from .errors import OutputExistsError
from .heldtakes import HeldTakes
from .decode import OP_READ, OP_RESIZE, OP_WRITE, RECORD_HEAD, from_c, record_resizes, write_resizes
from .opens import OpenRecord
from .records import CAPTURE_CALLS, SCHEMA_VERSION, WRITE, AccessRecord, ResizeRecord, TraceHeader
from .runinfo import RunInfo, SharedIds
from .hub import HUB
from .sink import DatasetInfo
from .tracedir import live_path
from .tracefile import Trace, TraceError, TraceWriter, is_jsonl, load_trace
from .versions import versions

hotpath = _hotpath
"""The C hooks' module (``_hotpath``: setup.py builds it), or None where no C compiler built it."""

class _PythonRecorder:
    """``_hotpath.Recorder``'s interface where no C compiler built it: the Python hooks' records, in call order."""

    def __init__(self, ids: dict):
        self._items: deque = deque()  # append/popleft are atomic

    def append(self, obj) -> None:
        self._items.append(obj)

    def __len__(self) -> int:
        return len(self._items)

    def take(self) -> tuple[bytes, bytes, list, list]:
        return b"", b"", [], [(0, self._items.popleft()) for _ in range(len(self._items))]


_Recorder = _PythonRecorder if _hotpath is None else _hotpath.Recorder

MAX_PENDING = 65536
"""Queued records beyond which the recording thread writes them itself (bounded memory)."""
KICK_PENDING = MAX_PENDING // 4
"""Queued records at which the recording thread wakes the flusher (``hub.QUIET_PASS_SECONDS`` between its passes
otherwise): a fast loop's records are taken long before MAX_PENDING makes the loop write them itself."""
class Tracer:
    """One trace being written; a context manager (single use).

    ``follow``: trace the child processes too. A *part* tracer is the one a child
    process runs under (``Tracer._part``): it writes ``<parts dir>/<pid>.parquet``
    (or ``.jsonl``) and its own children's parts go beside it; the run's tracer
    merges them all. Every tracer of a run takes its dataset ids from the run's
    ``runinfo.SharedIds`` and its clock origin and rank from its ``runinfo.RunInfo``; it is a ``sink.Sink``.
    """

    def __init__(self, path=None, *, comm=None, overwrite: bool = False, follow: bool = True):
        self._requested = path
        self._comm = comm
        self._overwrite = overwrite
        self._follow = follow
        self._is_part = False
        self._parts_dir: str | None = None
        self._run: RunInfo | None = None
        self._shared_ids: SharedIds | None = None
        self._own: Path | None = None
        self._export: Path | None = None  # the JSON Lines file asked for, written from ``_own`` at the end
        self._forked_part: Tracer | None = None
        self.path: Path | None = None
        self.rank, self.size = 0, 1
        self.failed_calls = 0
        self.record_errors = 0
        self.first_error: str | None = None
        self.missed: list[str] = []
        self._writer: TraceWriter | None = None
        self._ids: dict[DatasetInfo, int] = {}
        self._n_ids = 0
        self._key_ids: dict[str, int] = {}
        self._hook_created: dict[str, int] = {}  # key -> id of an array the h5py hooks created (see _register)
        self._lock = threading.Lock()
        self._recorder = _Recorder(self._ids)  # hooks -> writer hand-over
        self._drain_lock = threading.Lock()
        self._origin = 0.0
        self._state = "new"
        self._merge = False
        self.spans: deque | None = None  # h5py calls (key, t0, t1), when libhdf5 sees this process too
        self._libhdf5_before: frozenset[str] = frozenset()
        self._header: TraceHeader | None = None
        self._holds_hook = False  # the start-up hook, until this tracer's end (startup.release_startup_hook)
        self._later = ListLater()  # chunk offsets listed at the end, after the reads (instrumentation/chunklisting.py)
        self._held: HeldTakes | None = None  # the C hooks' records until the batch is due (heldtakes.py)

    @classmethod
    def part(cls, parts_dir: str, run: RunInfo) -> "Tracer":
        """The tracer of this (child) process's part of the run whose parts go to ``parts_dir``."""
        part = cls(run.part_path(parts_dir, os.getpid()))
        part._is_part = True
        part._parts_dir = parts_dir
        part._run = run
        part.rank, part.size = run.rank, run.size
        return part

    @property
    def is_part(self) -> bool:
        """This tracer writes a followed process's part (``part``), not a run's trace."""
        return self._is_part

    @property
    def parts_dir(self) -> str | None:
        """Where the run's processes write their parts (None: children not followed)."""
        return self._parts_dir

    @property
    def run(self) -> RunInfo | None:
        return self._run

    @property
    def own_path(self) -> Path | None:
        """This process's own file (a rank's, a part's); ``path`` is what the user gets."""
        return self._own

    @property
    def header(self) -> TraceHeader | None:
        return self._header

    @property
    def recorder(self):
        """Where the hooks queue this tracer's records (``_hotpath.Recorder``, or its Python stand-in)."""
        return self._recorder

    @property
    def drain_lock(self) -> threading.Lock:
        """Held while what the hooks queued is written (a fork waits for it: ``hub``)."""
        return self._drain_lock

    @property
    def origin(self) -> float:
        """The clock origin of this trace's accesses, on ``time.perf_counter``'s clock."""
        return self._origin

    # -- context manager --
    def __enter__(self) -> "Tracer":
        if self._state != "new":
            raise RuntimeError("a Tracer can be entered only once; call advisor.trace() again")
        self._start()
        HUB.attach(self)
        return self

    def _start(self) -> None:
        self._state = "active"
        if self._is_part:  # one process of a run: its rank is the run's
            self.path = self._own = Path(self._requested)
        else:
            try:
                from . import mpi

                self.rank, self.size = mpi.rank_size(self._comm)
            except ImportError:
                self.rank, self.size = 0, 1
            self.path, self._own = self._paths()
            if is_jsonl(self._own):  # written columnar while live, exported at the end (tracedir.live_path)
                self._export, self._own = self._own, live_path(self._own)
            if not self._overwrite and self._requested is not None:
                # another rank's part may be this run's own: only ours is checked
                for p in {self.path, self._own, self._export or self.path}:
                    if p.exists():
                        self._state = "done"
                        raise OutputExistsError(f"{p} exists: not replacing an earlier trace "
                                                "(choose another path, or overwrite=True / --force to replace it)")
        if self._is_part:
            # what closing a part imports at first use, imported now: SIGTERM's close runs in a thread of its own
            # while the thread it interrupted may hold an import lock, and an import there would wait for it until
            # the process ends with its part unclosed (tests/instrumentation/test_follow.py)
            from . import linkage  # noqa: F401 - interpose.LibraryCapture.lost
            import numpy.ma  # noqa: F401 - np.unique (decode.from_c) imports it at its first call
        capture = CAPTURE_CALLS
        below = HUB.start_below(self._parts_dir if self._is_part else None)
        if below is not None and below.control is None:
            if self._follow:
                capture += (interpose.CAPTURE_LEVEL + " in child processes only",)
        elif below is not None:
            capture += (interpose.CAPTURE_LEVEL,)
            self.spans = deque()
        if self._run is None:
            t_origin_unix, origin = time.time(), time.perf_counter()
        else:  # a part's accesses are timed from the run's origin: merged, they need no shift
            t_origin_unix, origin = self._run.t_origin_unix, self._run.origin
        if self._follow:
            if not self._is_part:
                self._parts_dir = str(self._own.with_name(f"{self._own.name}.parts-{os.urandom(4).hex()}"))
                os.makedirs(self._parts_dir)
                self._run = RunInfo(t_origin_unix, origin, self.rank, self.size)
                self._run.save(self._parts_dir)
            self._shared_ids = SharedIds(self._parts_dir)
            why = startup.ensure_startup_hook()
            self._holds_hook = why is None
            if why is None:
                capture += ("child processes",)
            else:  # a capture level, not a miss: whether such a child runs at all is not known here
                capture += (f"forked child processes (new interpreters not followed: {why})",)
        header = TraceHeader(
            schema=SCHEMA_VERSION,
            host=os.uname().nodename,  # = socket.gethostname(), without importing socket (start-up cost)
            pid=os.getpid(),
            rank=self.rank,
            size=self.size,
            t_origin_unix=t_origin_unix,
            versions=versions(installed=not self._is_part),
            # a child's own sys.argv is just ["-c"] for multiprocessing's spawn: its interpreter's command says more
            argv=tuple(sys.orig_argv if self._is_part else sys.argv),
            ppid=os.getppid(),
            capture=capture,
        )
        self._origin = origin
        if _hotpath is not None and hasattr(_hotpath, "fold"):
            self._held = HeldTakes(_hotpath.fold, origin, self.rank)
        self._header = header
        self._writer = TraceWriter(self._own, header)
        if self._is_part:
            self._writer.raw = True  # its batches are converted by the run's merge, where Parquet's code is warm
        # a copy loaded while tracing, unseen, is missed; read once the writer loaded its own libraries (pyarrow), so
        # that forked workers find it unchanged (interpose.mapped_libhdf5 reads /proc/self/maps only after a load)
        self._libhdf5_before = interpose.mapped_libhdf5()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._state == "forked":  # a forked child leaving its parent's with-block ends its own part
            if self._forked_part is not None and self._forked_part._state == "active":
                self._forked_part.__exit__(exc_type, exc, tb)
            return False
        ended = time.time_ns()
        self.drain()  # the h5py calls first: libhdf5 calls inside them are then known as such
        HUB.poll_below(final=True)
        # a program with libhdf5 linked in is named by `ioadvisor run` and by the interposer at its exit: once
        self.missed += [m for m in interpose.unseen(HUB.below, self._libhdf5_before) if m not in self.missed]
        libraries = HUB.below.libraries() if HUB.below is not None else ()
        HUB.detach(self)
        self._state = "done"
        self.drain()
        if self.record_errors:
            self.missed.append(f"{self.record_errors} access(es) could not be recorded "
                               f"(first: {self.first_error})")
        self._later.finish(self._describe_again)
        self._writer.close(tuple(self.missed), libraries, gather=not self._is_part)
        parts = Path(self._parts_dir) if self._parts_dir and not self._is_part else None
        if parts is not None and parts.is_dir():
            from . import parts as merging

            try:
                self.missed += merging.merge_parts(self._own, parts, ended)
                parts.rmdir()
            except (OSError, TraceError) as exc:
                self.missed.append(f"child processes' parts left unmerged in {parts}: {exc}")
        if self._export is not None:
            from .merge import export_live

            export_live(self._own, self._export)
        if self._merge:
            try:
                from . import mpi

                mpi.finish(self._comm, self.path, self.rank, self.size)
            except ImportError:
                pass
        if self._holds_hook:  # the run's children are merged: new interpreters need it no more
            self._holds_hook = False
            startup.release_startup_hook()
        if self.missed and not self._is_part:  # a part's notes reach the run's trace and its line
            more = f" (and {len(self.missed) - 1} more: ioadvisor trace show {self.path})" \
                if len(self.missed) > 1 else ""
            print(f"ioadvisor: trace {self.path} is missing something: {self.missed[0]}{more}",
                  file=sys.stderr)
        return False

    def note_failed_close(self, why: str) -> None:
        """``__exit__`` raised while this process ends (instrumentation/sigterm.py): end the file with the note,
        if it is not closed yet, so that the part says why it may not be whole."""
        self.missed.append(why)
        try:  # what the flusher held for the batch goes with the rest the writer has
            self._release(force=True)
        except Exception:  # noqa: BLE001 - the file is closed whatever happened
            pass
        self._writer.close(tuple(self.missed), (), gather=False)

    def orphan(self) -> "Tracer | None":
        """In a forked child: stop being this process's tracer; returns the child's own part, if followed."""
        self._state = "forked"
        self._recorder = _Recorder(self._ids)  # the parent's records, the parent writes them
        if self._held is not None:
            self._held.clear()
        # the inherited descriptor is the parent's file (JSON Lines; a columnar trace's records file): whatever
        # flushes it here goes nowhere
        fh = getattr(self._writer, "_fh", None) or getattr(self._writer, "_meta", None)
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fh.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass
        if not self._parts_dir:
            return None
        part = Tracer.part(self._parts_dir, self._run)
        part._start()
        self._forked_part = part
        return part

    def _paths(self) -> tuple[Path, Path]:
        """(path the user gets, this rank's own file)."""
        from_comm = self._requested is None and self.size > 1 and self._comm is not None
        if self._requested is None and not from_comm:
            name = tempfile.mkdtemp(prefix="ioadvisor-", suffix=".parquet")
            # without a communicator the ranks cannot agree on one name: each keeps its own file
            self._merge = False
            return Path(name), Path(name)
        if from_comm:
            name = None
            if self.rank == 0:
                name = tempfile.mkdtemp(prefix="ioadvisor-", suffix=".parquet")
            path = Path(self._comm.bcast(name, root=0))
        else:
            path = Path(self._requested).absolute()
        self._merge = self.size > 1
        if not self._merge:
            return path, path
        from . import mpi

        return path, mpi.rank_path(path, self.rank, self.size)

    @property
    def trace_root(self) -> tuple[Path | None, float]:
        """The run's trace path (a followed process's too, not its part) and the clock origin of its times."""
        path = self.path
        if self._is_part and self._parts_dir:
            parts = Path(self._parts_dir)
            path = parts.with_name(parts.name.rsplit(".parts-", 1)[0])
        return path, self._origin

    def flush(self) -> None:
        """Write every access recorded so far to the file now (the flusher thread does it at each of its
        passes anyway: hub.QUIET_PASS_SECONDS)."""
        if self._state == "active":
            self.drain()

    def load(self) -> Trace:
        """The trace written (after exit)."""
        if self._state != "done":
            raise RuntimeError("Tracer.load() is available after the with-block has exited")
        return load_trace(self.path)

    # -- a sink.Sink: called by the hub and by interpose.LibraryCapture --
    def register(self, info: DatasetInfo, created: bool = False, below: bool = False) -> int:
        tid = self._ids.get(info)
        return tid if tid is not None else self._register(info, created, below)

    def pending(self) -> int:
        """Records the hooks queued and the writer has not taken yet."""
        return len(self._recorder)

    def _register(self, info: DatasetInfo, created: bool = False, below: bool = False) -> int:
        """This trace's id of ``info``'s array; ``created``: made now, so new even where an old one had its name
        (overwritten files); ``below``: seen by the libhdf5 interposer, which also sees h5py's own creations."""
        with self._lock:
            if created and below and info.key in self._hook_created:
                # h5py created it (the hooks registered it first): the same array, not a recreation
                created = self._hook_created.pop(info.key) != self._key_ids.get(info.key)
            tid = None if created else self._key_ids.get(info.key)
            if tid is None:
                shape = info.template.shape if info.shape is None else info.shape  # None: no dataspace
                record = replace(info.template, shape=shape, created=created or info.template.created)
                if self._shared_ids is not None:  # the run's id, whichever of its processes saw it first
                    tid = self._shared_ids.id_of(record)
                else:
                    tid = self._n_ids
                    self._n_ids += 1
                self._writer.dataset(replace(record, id=tid))
                self._later.note(replace(record, id=tid))
                self._key_ids[info.key] = tid
                if created and not below:
                    self._hook_created[info.key] = tid
            self._ids[info] = tid
            return tid

    def _describe_again(self, record) -> None:
        """``record`` (this trace's id) completed at the end: written again, in the run's registry too."""
        self._writer.dataset(record)
        if self._shared_ids is not None:
            self._shared_ids.describe_again(record)

    def hyperslab(self, info, op, start, count, stride, block, n, nbytes, t0, dt) -> None:
        tid = self._ids.get(info)
        if tid is None:
            tid = self._register(info)
        recorder = self._recorder
        recorder.append([tid, op == WRITE, tuple(start), tuple(count), tuple(stride), tuple(block), n, nbytes,
                         t0 - self._origin, dt])  # a list: the writer's row, final as recorded
        self._bound(len(recorder))

    def access(self, info, op, selection, n, nbytes, t0, dt, collective=False) -> None:
        tid = self._ids.get(info)
        if tid is None:
            tid = self._register(info)
        recorder = self._recorder
        recorder.append(AccessRecord(tid, op, selection, n, nbytes, t0 - self._origin, dt, collective=collective))
        self._bound(len(recorder))

    def _bound(self, pending: int) -> None:
        """The recorder holds ``pending`` records: wake the flusher at KICK_PENDING, write them here past
        MAX_PENDING (the C hook does the same: hooks_h5py)."""
        if pending > MAX_PENDING:
            self.drain()
        elif pending == KICK_PENDING:
            HUB.kick()

    def columns(self, cols) -> None:
        """Hyperslab accesses already as AccessColumns (this trace's ids and clock), written in bulk."""
        self.drain(force=False)  # what the hooks recorded before goes first
        with self._drain_lock:
            self._release(force=True, folded=False)
            self._writer.access_columns(cols)

    def resize(self, info, t0) -> None:
        tid = self._ids.get(info)
        if tid is None:
            tid = self._register(info)
        self._recorder.append(ResizeRecord(tid, info.shape, t0 - self._origin))

    def opened(self, rec, t: float) -> None:
        """``rec`` (``opens.OpenRecord``) happened at ``t`` (perf_counter clock): written in this trace's clock and
        rank (rare: not through the hooks' recorder)."""
        self._writer.opened(OpenRecord(rec.file, rec.path, rec.event, t - self._origin, self.rank, rec.process,
                                       rec.via))  # (dataclasses.replace costs 3x as much)

    def drain(self, force: bool = True) -> None:
        """Hand what the hooks recorded to the writer (the flusher thread, a full recorder, or exit)."""
        writer = self._writer
        with self._drain_lock:
            heads, dims, infos, items = self._recorder.take()
            if not heads and not items and not infos:  # nothing recorded: no numpy call (its first ones cost ms)
                self._release(force)
                writer.flush(force)
                return
            head, vals = np.frombuffer(heads, RECORD_HEAD), np.frombuffer(dims, np.int64)
            if self.spans is not None:
                keys = [info.key for info in infos]
                self.spans.extend(zip(map(keys.__getitem__, head["slot"].tolist()), head["t0"].tolist(),
                                      (head["t0"] + head["dt"]).tolist()))
            if self._held is not None and not writer.pending() and self._held.hold(
                    head, vals, self._tids(infos), items, getattr(heads, "uniform", None)):
                self._release(force)  # kept until the batch is due: a few rows then, folded in C
                writer.flush(force)
                return
            self._release(force=True, folded=False)  # before these, in call order; the batch is folded as one
            cols, position, resized, resized_at = self._from_c(head, vals, infos)
            python = [(p, rec) for p, rec in items if type(rec) is ResizeRecord]
            if python:  # rare (a dataset's first resize, zarr's): in call order with the C hook's
                resized = AccessColumns.concat([resized, record_resizes([rec for _, rec in python], self.rank)])
                # a Python record at p came after p records of the C hook
                resized = resized.take(np.argsort(np.concatenate([resized_at, [p - 0.5 for p, _ in python]]),
                                                  kind="stable"))
            # resizes go ahead of the accesses (readers order records by time): a loop of resize + write keeps its
            # writes in one batch. Written one by one, each write cost the flusher 100 us with the GIL held, and the
            # program's calls took 30% longer (regret's w07). An append loop's resizes fold into runs, as its writes do
            write_resizes(writer, resized)
            done, rows = 0, []  # rows of cols written; consecutive Python rows, written together
            for p, item in items:  # file order = call order
                if type(item) is ResizeRecord:
                    continue
                upto = int(np.searchsorted(position, p))
                if upto > done:
                    writer.hyperslab_rows(rows)
                    rows = []
                    writer.access_columns(cols.rows_between(done, upto))
                    done = upto
                if type(item) is list:
                    rows.append(tuple(item))
                    continue
                writer.hyperslab_rows(rows)
                rows = []
                writer.access(item)
            writer.hyperslab_rows(rows)
            if done < cols.rows:
                writer.access_columns(cols.rows_between(done, cols.rows) if done else cols)
            writer.flush(force)

    def _release(self, force: bool, folded: bool = True) -> None:
        """Hand the held records (``HeldTakes``) to the writer when its batch is due (or ``force``): folded if
        the batch holds nothing else, and not a part (a part's batches stay one row per access: rawparts)."""
        held = self._held
        if held is None or not held.rows or not (force or self._writer.due(held.rows)):
            return
        # a batch with a close among its accesses is folded by the writer, which folds no run across a close
        # (``opens.cut_at``); the fold in C knows no closes
        folded = folded and not self._writer.raw and not self._writer.pending() and not self._writer.closes_pending()
        self._writer.access_columns(held.take(folded), folded=folded)

    def _tids(self, infos: list) -> np.ndarray:
        """This trace's id of each DatasetInfo of a take (numbering those it has not seen)."""
        return np.array([self._ids[info] if info in self._ids else self._register(info) for info in infos], np.int32)

    def _from_c(self, head: np.ndarray, vals: np.ndarray, infos: list):
        """What the C hooks recorded, in this trace's ids and clock (``decode.from_c``)."""
        return from_c(head, vals, self._tids(infos), self._origin, self.rank)


def trace(path=None, *, comm=None, overwrite: bool = False, follow: bool = True) -> Tracer:
    """Record every h5py / zarr array access inside the with-block into ``path``.

    ``path=None`` writes a temporary file (``Tracer.path``). ``comm`` (mpi4py) or an
    MPI launcher's environment gives one file per rank, merged by rank 0 into ``path``.
    An existing ``path`` (or this rank's part) is never replaced without ``overwrite=True``:
    entering the tracer raises OutputExistsError (a FileExistsError) before anything is traced.
    ``follow`` (default): the Python processes the block starts are traced too,
    each into its own part, merged into ``path`` at exit.
    """
    return Tracer(path, comm=comm, overwrite=overwrite, follow=follow)


__all__ = ["DatasetInfo", "HUB", "OP_READ", "OP_RESIZE", "OP_WRITE", "RECORD_HEAD", "Tracer", "hotpath", "trace"]
