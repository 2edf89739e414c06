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
  arrays, formats and writes them every FLUSH_INTERVAL seconds
  (docs/tracing-overhead.md).
"""
from __future__ import annotations

import atexit
import functools
import importlib.abc
import os
import platform
import socket
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import replace
from operator import itemgetter
from pathlib import Path

import numpy as np

from . import interpose, sigterm, startup

try:
    from . import _hotpath  # the traced h5py read in C (setup.py); hooks_h5py does the same in Python without it
except ImportError:
    _hotpath = None
from .columns import AccessColumns
from .decode import OP_READ, OP_RESIZE, OP_WRITE, RECORD_HEAD, from_c, record_resizes, write_resizes
from .partsdir import child_environment
from .records import CAPTURE_CALLS, SCHEMA_VERSION, WRITE, AccessRecord, ResizeRecord, TraceHeader
from .runinfo import RunInfo, SharedIds
from .sink import DatasetInfo
from .tracefile import Trace, TraceError, TraceWriter, is_jsonl, load_trace

hotpath = _hotpath
"""The C hooks' module (``_hotpath``: setup.py builds it), or None where no C compiler built it."""

# Module name -> hook module (relative). A module is hooked when both it and
# the tracer are there; its hook module's ``patches()`` lists (owner, attr, wrapper).
_HOOKS = {"h5py": ".hooks_h5py", "zarr": ".hooks_zarr", "multiprocessing.process": ".follow"}


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

FLUSH_INTERVAL = 0.2
"""Seconds between writes of queued records: a killed process loses at most this much."""
MAX_PENDING = 65536
"""Queued records beyond which the recording thread writes them itself (bounded memory)."""
FLUSHER_WAIT = 5.0
"""Longest the last tracer's exit waits for the flusher thread to stop."""


class _TLS(threading.local):
    depth = 0  # traced calls in progress on this thread: only the outermost records


class _Hub:
    """Process-wide state shared by all tracers and hooks."""

    def __init__(self):
        self.lock = threading.RLock()
        self.active = ()
        self.tls = _TLS()
        self._patched: list[tuple[object, str, object, bool]] = []  # owner, attr, original, was_own
        self._hooked: dict[str, object] = {}  # library -> its hook module
        self._finder: _ImportHook | None = None
        self._flusher: threading.Thread | None = None
        self._stop = threading.Event()
        self._environ: dict[str, str | None] | None = None  # the program's values of the child variables
        self._forking: list[threading.Lock] = []
        self.below: interpose.LibraryCapture | None = None
        self._below_lock = threading.Lock()  # not self.lock: detach holds that while joining the flusher
        self._process_hooks = False

    @property
    def active(self) -> "tuple[Tracer, ...]":
        """The tracers recording now (innermost last)."""
        return self._active

    @active.setter
    def active(self, tracers: "tuple[Tracer, ...]") -> None:
        self._active = tracers
        if _hotpath is not None:
            _hotpath.set_recorders(tuple(tr._recorder for tr in tracers))

    # -- recording (hot path: no locks, no allocation beyond the record) --
    def hyperslab(self, info: DatasetInfo, op: str, start, count, stride, block,
                  n: int, nbytes: int, t0: float, dt: float) -> None:
        for tr in self.active:
            tr._hyperslab(info, op, start, count, stride, block, n, nbytes, t0, dt)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t0 + dt))

    def access(self, info: DatasetInfo, op: str, selection, n: int, nbytes: int, t0: float, dt: float) -> None:
        if selection.kind == "hyperslab":
            self.hyperslab(info, op, selection.start, selection.count, selection.stride, selection.block,
                           n, nbytes, t0, dt)
            return
        for tr in self.active:
            tr._access(info, op, selection, n, nbytes, t0, dt)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t0 + dt))

    def collective(self, info: DatasetInfo, op: str, selection, n: int, nbytes: int, t0: float, dt: float) -> None:
        """An MPI-IO collective transfer: kept as a record (the flag does not fit the hyperslab fast path)."""
        for tr in self.active:
            tr._access(info, op, selection, n, nbytes, t0, dt, True)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t0 + dt))

    def resize(self, info: DatasetInfo, shape: tuple[int, ...], t0: float, t1: float) -> None:
        """``info``'s extent became ``shape`` in a call from ``t0`` to ``t1`` (libhdf5's record of it is dropped)."""
        active = self.active
        for tr in active:  # a dataset first seen now is recorded with its extent before the change
            if info not in tr._ids:
                tr._register(info)
        info.shape = shape
        for tr in active:
            tr.resize(info, t1)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t1))

    def created(self, info: DatasetInfo) -> None:
        for tr in self.active:
            tr._register(info, created=True)

    def seen(self, info: DatasetInfo) -> None:
        """A dataset the program reached without moving data (its read failed): recorded, no access."""
        for tr in self.active:
            if info not in tr._ids:
                tr._register(info)

    def failed(self) -> None:
        for tr in self.active:
            tr.failed_calls += 1

    def error(self, exc: BaseException, tracers=None) -> None:
        for tr in self.active if tracers is None else tracers:
            tr.record_errors += 1
            if tr.first_error is None:
                tr.first_error = f"{type(exc).__name__}: {exc}"

    # -- patch management --
    def _register_process_hooks(self) -> None:
        """Once, at the first tracer's start (importing this module registers nothing): the fork handlers, and
        the close of a tracer entered by hand and never exited, or of a child process's parts, at exit."""
        if self._process_hooks:
            return
        self._process_hooks = True
        sigterm.register_fork_handler()  # before the hub's own
        os.register_at_fork(before=self._before_fork, after_in_parent=self._after_fork_in_parent,
                            after_in_child=self._after_fork_in_child)
        atexit.register(sigterm.close_all)

    def attach(self, tracer: "Tracer") -> None:
        with self.lock:
            self._register_process_hooks()
            idle = not self.active
            self.active = self.active + (tracer,)  # before hooking: a library that cannot be hooked is noted in it
            if idle:
                self._install()
            self._child_environment()

    def detach(self, tracer: "Tracer") -> None:
        if not self.lock.acquire(blocking=not sigterm.terminating()):
            # SIGTERM's close while the thread it interrupted holds the lock (importing a hook module): that
            # thread never resumes, so waiting would end the process with its part unclosed. The process
            # ends now, patches and all: only the recording and the flusher stop.
            self.active = tuple(t for t in self.active if t is not tracer)
            if not self.active:
                self._stop.set()
            return
        try:
            self.active = tuple(t for t in self.active if t is not tracer)
            self._child_environment()
            if not self.active:
                self._uninstall()
        finally:
            self.lock.release()

    def _child_environment(self) -> None:
        """Put the variables that make child processes traced into os.environ, or give the program its own back."""
        dirs = [t._parts_dir for t in self.active if t._parts_dir]
        below = self.below if dirs else None  # children are left alone unless followed
        if self._environ is not None:
            for name, value in self._environ.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            self._environ = None
        if dirs or below is not None:
            env = child_environment(dirs) if dirs else {}
            if below is not None:  # children record their libhdf5 calls where this process collects them
                env.update(interpose.child_environment(str(below.log_dir)))
            self._environ = {name: os.environ.get(name) for name in env}
            os.environ.update(env)

    # -- fork: the child gets parts of its own, never its parent's queues or files --
    def _before_fork(self) -> None:
        if self.active:  # the child's part starts from this reading of the libraries loaded (not its own 1-3 ms)
            interpose.mapped_libhdf5()
        self._forking = [tr._drain_lock for tr in self.active]
        # a flush in progress ends before the fork, so no lock of the writers is copied held
        self._forking = [lock for lock in self._forking if lock.acquire(timeout=1.0)]

    def _after_fork_in_parent(self) -> None:
        for lock in self._forking:
            lock.release()
        self._forking = []

    def _after_fork_in_child(self) -> None:
        for lock in self._forking:  # taken by the parent's forking thread: here nobody will release them
            lock.release()
        self._forking = []
        parents = self.active
        if not parents:
            return
        self._below_lock = threading.Lock()  # the flusher may have held it at the fork
        if self.below is not None:  # never the parent's log directory: the child collects its own
            self.below = self.below.forked(next((tr._parts_dir for tr in parents if tr._parts_dir), None))
        self.lock = threading.RLock()
        self.active = ()
        self._flusher = None  # threads do not survive a fork
        with sigterm.sigterm_deferred():
            children = []
            for tr in parents:
                child = tr._orphan()
                if child is not None:
                    children.append(child)
            if not children:
                self._uninstall()
                return
            self.active = tuple(children)
            self._stop = threading.Event()
            self._start_flusher()
            sigterm.install_sigterm()

    def _flush_loop(self, stop: threading.Event) -> None:
        # formatting and file writes happen here, off the traced threads
        while not stop.wait(FLUSH_INTERVAL):
            for tr in self.active:
                started = time.time_ns()
                try:
                    tr._drain(force=False)
                    if tr._is_part:  # tells the run's tracer that everything queued before `started` is written
                        os.utime(tr._own, ns=(started, started))
                except Exception as exc:  # noqa: BLE001 - a full disk must not kill the program
                    tr.record_errors += 1
                    tr.first_error = tr.first_error or f"{type(exc).__name__}: {exc}"
            self.poll_below()

    def poll_below(self, final: bool = False) -> None:
        """Hand what the libhdf5 interposer recorded to the active tracers."""
        below = self.below
        if below is None:
            return
        with self._below_lock:
            try:
                below.poll(self.active, final)
            except Exception as exc:  # noqa: BLE001 - a torn log must not kill the program
                self.error(exc)

    def start_below(self, parts_dir: str | None) -> "interpose.LibraryCapture | None":
        """The libhdf5 capture, started with the first tracer (children inherit it: ``_child_environment``);
        ``parts_dir``: that tracer is a followed process's part."""
        with self.lock:
            if self.below is None and not self.active:
                self.below = interpose.LibraryCapture.start(parts_dir)
            return self.below

    def _start_flusher(self) -> None:
        self._flusher = threading.Thread(target=self._flush_loop, args=(self._stop,),
                                         name="ioadvisor-flush", daemon=True)
        self._flusher.start()

    def _install(self) -> None:
        self._stop = threading.Event()
        self._start_flusher()
        self._finder = _ImportHook(self)
        sys.meta_path.insert(0, self._finder)
        for lib in _HOOKS:
            if lib in sys.modules:
                self._hook(lib)

    def _hook(self, lib: str) -> None:
        with self.lock:
            if lib in self._hooked or not self.active and self._finder is None:
                return
            try:
                from importlib import import_module

                module = import_module(_HOOKS[lib], __package__)
                patches = module.patches()
                self._hooked[lib] = module
            except Exception as exc:  # a library version we cannot hook: trace the rest, say so in the trace
                for tr in self.active:
                    tr.missed.append(f"{lib} not traced: {type(exc).__name__}: {exc}")
                return
            for owner, attr, wrapper in patches:
                was_own = attr in vars(owner)
                self._patched.append((owner, attr, vars(owner).get(attr), was_own))
                setattr(owner, attr, wrapper)

    def _uninstall(self) -> None:
        self._stop.set()
        if self._flusher is not None and self._flusher is not threading.current_thread():
            # bounded: a flusher stuck on a lock the exiting code holds must not hang the exit
            # (the exit drains again under the drain lock anyway)
            self._flusher.join(FLUSHER_WAIT)
        self._flusher = None
        if self._finder is not None:
            try:
                sys.meta_path.remove(self._finder)
            except ValueError:
                pass
            self._finder = None
        for owner, attr, original, was_own in reversed(self._patched):
            if was_own:
                setattr(owner, attr, original)
            else:
                delattr(owner, attr)
        self._patched.clear()
        for module in self._hooked.values():
            module.reset()  # cached shapes may change while nothing is traced
        self._hooked.clear()
        if self.below is not None:
            self.below.close()
            self.below = None


class _ImportHook(importlib.abc.MetaPathFinder):
    """Patches h5py / zarr as soon as they finish importing while a tracer is active."""

    def __init__(self, hub: _Hub):
        self.hub = hub
        self._busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _HOOKS or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            from importlib.util import find_spec

            spec = find_spec(fullname)
        finally:
            self._busy.on = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _HookingLoader(spec.loader, self.hub, fullname)
        return spec


class _HookingLoader(importlib.abc.Loader):
    def __init__(self, loader, hub: _Hub, name: str):
        self._loader = loader
        self._hub = hub
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = self._loader  # the module keeps its real loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._hub._hook(self._name)


HUB = _Hub()
sigterm.close_with(lambda: HUB.active)


@functools.lru_cache(maxsize=None)
def _dist_info_versions() -> dict[str, str]:
    """Name -> version of the distributions installed as ``NAME-VERSION.dist-info`` directories on sys.path
    (the first one found, as importlib.metadata finds them): a directory listing per entry, about 1 ms, where
    importlib.metadata costs about 20 ms to import and 3 ms a package (a run's fixed cost:
    benchmarks/tracing_overhead.py)."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for dist in names:
            if dist.endswith(".dist-info"):
                name, _, version = dist[: -len(".dist-info")].partition("-")
                found.setdefault(name.lower().replace("-", "_").replace(".", "_"), version)
    return found


@functools.lru_cache(maxsize=None)
def _installed_version(name: str) -> str | None:
    """A package's installed version, looked up once per process (forked children inherit it)."""
    found = _dist_info_versions().get(name.lower().replace("-", "_"))
    if found:
        return found
    try:  # installed otherwise (an egg, a zip): the slower, general way
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def _versions(installed: bool = True) -> dict:
    """Versions of Python and the array libraries: those imported, and (``installed``) those installed but not
    imported yet. A followed process's part looks up none (about 15-30 ms of its start-up, per child process:
    benchmarks/tracing_overhead.py); the run's trace has them."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "h5py", "zarr", "numcodecs", "hdf5plugin"):
        mod = sys.modules.get(name)
        if mod is None:
            if not installed:
                continue
            found = _installed_version(name)
            if found is not None:
                out[name] = found
        else:
            out[name] = getattr(mod, "__version__", "")
    h5 = sys.modules.get("h5py")
    if h5 is not None:
        out["hdf5"] = h5.version.hdf5_version
    return out


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
            if not self._overwrite and self._requested is not None:
                for p in {self.path, self._own}:  # another rank's part may be this run's own: only ours is checked
                    if p.exists():
                        self._state = "done"
                        raise FileExistsError(f"{p} exists: not replacing an earlier trace "
                                              "(choose another path, or overwrite=True / --force to replace it)")
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
                self._run = RunInfo(t_origin_unix, origin, self.rank, self.size, not is_jsonl(self._own))
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
            host=socket.gethostname(),
            pid=os.getpid(),
            rank=self.rank,
            size=self.size,
            t_origin_unix=t_origin_unix,
            versions=_versions(installed=not self._is_part),
            # a child's own sys.argv is just ["-c"] for multiprocessing's spawn: its interpreter's command says more
            argv=tuple(sys.orig_argv if self._is_part else sys.argv),
            ppid=os.getppid(),
            capture=capture,
        )
        self._origin = origin
        self._header = header
        self._writer = TraceWriter(self._own, header)
        if self._is_part and not is_jsonl(self._own):
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
        self._drain()  # the h5py calls first: libhdf5 calls inside them are then known as such
        HUB.poll_below(final=True)
        # a program with libhdf5 linked in is named by `ioadvisor run` and by the interposer at its exit: once
        self.missed += [m for m in interpose.unseen(HUB.below, self._libhdf5_before) if m not in self.missed]
        libraries = HUB.below.libraries() if HUB.below is not None else ()
        HUB.detach(self)
        self._state = "done"
        self._drain()
        if self.record_errors:
            self.missed.append(f"{self.record_errors} access(es) could not be recorded "
                               f"(first: {self.first_error})")
        self._writer.close(tuple(self.missed), libraries, gather=not self._is_part)
        parts = Path(self._parts_dir) if self._parts_dir and not self._is_part else None
        if parts is not None and parts.is_dir():
            from . import parts as merging

            try:
                self.missed += merging.merge_parts(self._own, parts, ended)
                parts.rmdir()
            except (OSError, TraceError) as exc:
                self.missed.append(f"child processes' parts left unmerged in {parts}: {exc}")
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

    def _orphan(self) -> "Tracer | None":
        """In a forked child: stop being this process's tracer; returns the child's own part, if followed."""
        self._state = "forked"
        self._recorder = _Recorder(self._ids)  # the parent's records, the parent writes them
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

    def flush(self) -> None:
        """Write every access recorded so far to the file now (the flusher thread does it every
        FLUSH_INTERVAL seconds anyway)."""
        if self._state == "active":
            self._drain()

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
                self._key_ids[info.key] = tid
                if created and not below:
                    self._hook_created[info.key] = tid
            self._ids[info] = tid
            return tid

    def _hyperslab(self, info, op, start, count, stride, block, n, nbytes, t0, dt) -> None:
        tid = self._ids.get(info)
        if tid is None:
            tid = self._register(info)
        recorder = self._recorder
        recorder.append([tid, op == WRITE, tuple(start), tuple(count), tuple(stride), tuple(block), n, nbytes,
                         t0 - self._origin, dt])  # a list: the writer's row, final as recorded
        if len(recorder) > MAX_PENDING:
            self._drain()

    def _access(self, info, op, selection, n, nbytes, t0, dt, collective=False) -> None:
        tid = self._ids.get(info)
        if tid is None:
            tid = self._register(info)
        recorder = self._recorder
        recorder.append(AccessRecord(tid, op, selection, n, nbytes, t0 - self._origin, dt, collective=collective))
        if len(recorder) > MAX_PENDING:
            self._drain()

    def columns(self, cols) -> None:
        """Hyperslab accesses already as AccessColumns (this trace's ids and clock), written in bulk."""
        self._drain(force=False)  # what the hooks recorded before goes first
        with self._drain_lock:
            self._writer.access_columns(cols)

    def resize(self, info, t0) -> None:
        tid = self._ids.get(info)
        if tid is None:
            tid = self._register(info)
        self._recorder.append(ResizeRecord(tid, info.shape, t0 - self._origin))

    def _drain(self, force: bool = True) -> None:
        """Hand what the hooks recorded to the writer (the flusher thread, a full recorder, or exit)."""
        writer = self._writer
        with self._drain_lock:
            heads, dims, infos, items = self._recorder.take()
            if not heads and not items and not infos:  # nothing recorded: no numpy call (its first ones cost ms)
                writer.flush(force)
                return
            cols, position, resized, resized_at = self._from_c(np.frombuffer(heads, RECORD_HEAD),
                                                               np.frombuffer(dims, np.int64), infos)
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

    def _from_c(self, head: np.ndarray, vals: np.ndarray, infos: list):
        """What the C hooks recorded, in this trace's ids and clock (``decode.from_c``); the h5py calls kept."""
        tids = np.array([self._ids[info] if info in self._ids else self._register(info) for info in infos], np.int32)
        if self.spans is not None:
            keys = [info.key for info in infos]
            self.spans.extend(zip(map(keys.__getitem__, head["slot"].tolist()), head["t0"].tolist(),
                                  (head["t0"] + head["dt"]).tolist()))
        return from_c(head, vals, tids, self._origin, self.rank)


def trace(path=None, *, comm=None, overwrite: bool = False, follow: bool = True) -> Tracer:
    """Record every h5py / zarr array access inside the with-block into ``path``.

    ``path=None`` writes a temporary file (``Tracer.path``). ``comm`` (mpi4py) or an
    MPI launcher's environment gives one file per rank, merged by rank 0 into ``path``.
    An existing ``path`` (or this rank's part) is never replaced without ``overwrite=True``:
    entering the tracer raises FileExistsError before anything is traced.
    ``follow`` (default): the Python processes the block starts are traced too,
    each into its own part, merged into ``path`` at exit.
    """
    return Tracer(path, comm=comm, overwrite=overwrite, follow=follow)


__all__ = ["DatasetInfo", "HUB", "OP_READ", "OP_RESIZE", "OP_WRITE", "RECORD_HEAD", "Tracer", "hotpath", "trace"]
