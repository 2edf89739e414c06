"""A followed process's part while it has touched no array library: written with the standard library only.

Every Python process a traced run starts is traced into a part of its own (instrumentation/follow.py). The
tracer's own imports (numpy, the trace writers) cost about 100 ms at a start-up, a price a multiprocessing
worker, a ``subprocess`` step or a helper that never touches an array would pay for nothing
(benchmarks/speed/tracing_overhead.py, per followed child). So a followed process starts with an *idle* part: the
part's records file with its header (pid, parent, command), closed as any part is (at exit, at the end of a
multiprocessing ``Process._bootstrap``, on SIGTERM: instrumentation/sigterm.py), touched while the process
lives as a part's flusher touches it (the run's merge tells a live process from a lost one by that).

The first time the process completes an import of a module of ``WAKE`` (numpy, which every array library
imports, and each library the tracer hooks), the idle part gives way to the tracer's part
(``tracer.Tracer.part``, on the same path), which records from then on: none of its accesses can come before,
no array library being there. Imports nested in one of these (numpy inside h5py's) wait for the outermost, so
that the tracer hooks only libraries whose import is complete. A forked child of an idle process starts idle
parts of its own. libhdf5 calls made without numpy (ctypes) are recorded by the interposer into the run's log
directory (``LD_PRELOAD``, instrumentation/preload.py), as a C program's are.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time

from . import sigterm

WAKE = ("numpy", "h5py", "zarr", "s3fs.core", "obstore", "instrumentation.tracer")
"""Modules whose import ends the idle state: numpy, the libraries of ``hub.HOOKS`` (a test checks that each is
here) and the tracer itself (``advisor.trace`` in the process: it imports numpy first)."""
SCHEMA = 1
"""``header.SCHEMA_VERSION`` (not imported: records pulls in dataclasses, about 10 ms; a test checks they agree)."""
TOUCH_INTERVAL = 0.2
"""Seconds between touches of an idle part (``hub.FLUSH_INTERVAL``, the flusher's of an active one)."""
META = "_meta.jsonl"
"""A columnar part's records file (``tracedir.META``)."""


class IdlePart:
    """The part of this process in the run whose parts go to ``parts_dir`` (``run``: its ``_run.json``)."""

    def __init__(self, parts_dir: str, run: dict):
        self.parts_dir = parts_dir
        self.run = run
        self.path = os.path.join(parts_dir, f"{os.getpid()}.parquet")
        self._records = os.path.join(self.path, META)
        self.closed = False

    def open(self) -> "IdlePart":
        os.mkdir(self.path)
        header = {"t": "h", "schema": SCHEMA, "host": os.uname().nodename, "pid": os.getpid(), "ppid": os.getppid(),
                  "rank": int(self.run["rank"]), "size": int(self.run["size"]),
                  "t_origin_unix": float(self.run["t_origin_unix"]),
                  "versions": {"python": ".".join(map(str, sys.version_info[:3]))},
                  "argv": list(sys.orig_argv), "clock": "time.perf_counter", "capture": ["child processes"],
                  "processes": [], "missed": []}
        self._write(header, "w")
        return self

    def _write(self, obj: dict, mode: str) -> None:
        with open(self._records, mode, encoding="utf-8") as fh:
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def touch(self) -> None:
        now = time.time_ns()
        os.utime(self.path, ns=(now, now))

    def __exit__(self, *exc) -> bool:
        """Close the part: no access (its process never imported an array library)."""
        if not self.closed:
            self.closed = True
            self._write({"t": "end", "n_access": 0}, "a")
        return False

    def note_failed_close(self, why: str) -> None:
        """sigterm: the close raised (the end record is then not written): the end record, with the note."""
        self.closed = True
        self._write({"t": "end", "n_access": 0, "missed": [why]}, "a")


class _Idle:
    """This process's idle parts, the thread that touches them and the import hook that ends them."""

    def __init__(self):
        self.pid = 0
        self.parts: list[IdlePart] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.depth = 0  # imports of WAKE modules in progress (any thread)
        self.finder: _WakeFinder | None = None
        self.fork_handler = False
        self.waking = False

    def active(self) -> tuple:
        return tuple(self.parts) if self.pid == os.getpid() else ()


_IDLE = _Idle()


def start(dirs: list[str]) -> bool:
    """Idle parts of this process in the runs of ``dirs``; False when it must be traced at once (an array
    library is imported already), True when it has started them (or the runs are over)."""
    if _IDLE.active():
        return True  # started already (site runs the start-up hook twice where lib64 links to lib)
    if any(name in sys.modules for name in WAKE):
        return False
    runs = []
    for d in dirs:
        try:
            with open(os.path.join(d, "_run.json"), encoding="utf-8") as fh:  # runinfo.RUN_FILE
                runs.append((d, json.load(fh)))
        except FileNotFoundError:
            continue  # that run has ended: this process is not part of it
    if not runs:
        return True
    sigterm.close_with(_IDLE.active)
    with sigterm.sigterm_deferred():
        _open(runs)
        sigterm.install_sigterm()
    sigterm.close_at_exit()
    if _IDLE.finder is None:
        _IDLE.finder = _WakeFinder()
        sys.meta_path.insert(0, _IDLE.finder)
    if not _IDLE.fork_handler:
        _IDLE.fork_handler = True
        sigterm.register_fork_handler()  # before ours: a forked child forgets its parent's SIGTERM watcher
        os.register_at_fork(after_in_child=_after_fork_in_child)
    return True


def _open(runs: list[tuple[str, dict]]) -> None:
    parts = []
    for d, run in runs:
        try:
            parts.append(IdlePart(d, run).open())
        except FileNotFoundError:  # the run ended meanwhile (its parts directory removed)
            continue
    _IDLE.pid, _IDLE.parts = os.getpid(), parts
    _IDLE.stop = threading.Event()
    if parts:
        threading.Thread(target=_touch_loop, args=(_IDLE.stop, parts), name="ioadvisor-idle", daemon=True).start()


def _touch_loop(stop: threading.Event, parts: list[IdlePart]) -> None:
    while not stop.wait(TOUCH_INTERVAL):
        for part in parts:
            if not part.closed:
                try:
                    part.touch()
                except OSError:
                    pass  # the run's merge took it: nothing to tell it any more


def _after_fork_in_child() -> None:
    """A forked child of an idle process: parts of its own (threads do not survive a fork: a new toucher)."""
    if not _IDLE.parts or _IDLE.pid == os.getpid():
        return
    runs = [(part.parts_dir, part.run) for part in _IDLE.parts]
    _IDLE.lock = threading.Lock()
    _IDLE.depth = 0
    _IDLE.parts = []
    with sigterm.sigterm_deferred():
        _open(runs)
        sigterm.install_sigterm()
    if "multiprocessing.process" in sys.modules:  # a fork or forkserver child: it ends with os._exit
        _close_in_bootstrap()


def _close_in_bootstrap() -> None:
    """Close the parts of a process idle when its ``BaseProcess._bootstrap`` began at its end (``os._exit`` skips
    atexit), woken meanwhile or not; once per interpreter."""
    from multiprocessing.process import BaseProcess

    original = BaseProcess._bootstrap
    if getattr(original, "_ioadvisor_idle", False):
        return

    def _bootstrap(self, *args, **kwargs):
        idle = bool(_IDLE.active())
        if idle:
            sigterm.install_sigterm()  # a forkserver child: only now is the wakeup fd free for the watcher
        try:
            return original(self, *args, **kwargs)
        finally:
            if idle:  # its parts, idle or woken meanwhile (the hub's patch came after this call began)
                sigterm.close_all()

    _bootstrap._ioadvisor_idle = True
    BaseProcess._bootstrap = _bootstrap


def _wake() -> None:
    """An array library is here: the tracer's parts replace the idle ones (on their paths)."""
    parts = _IDLE.active()
    if not parts or _IDLE.waking:
        return  # not idle, or waking already (the tracer's own import is one of WAKE)
    _IDLE.waking = True
    try:
        from .runinfo import RunInfo
        from .tracer import Tracer

        with sigterm.sigterm_deferred():
            _IDLE.stop.set()
            _IDLE.parts = []
            for part in parts:
                run = RunInfo.load(part.parts_dir)
                if run is not None and not part.closed:  # else that run has ended
                    Tracer.part(part.parts_dir, run).__enter__()
            sigterm.install_sigterm()
    except Exception as exc:  # noqa: BLE001 - the program must run even if it cannot be traced
        print(f"ioadvisor: process {os.getpid()} not traced: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        _IDLE.waking = False
        if _IDLE.finder is not None and not _IDLE.parts:
            try:
                sys.meta_path.remove(_IDLE.finder)
            except ValueError:
                pass
            _IDLE.finder = None


class _WakeFinder:
    """Wraps the loader of each ``WAKE`` module imported while this process has idle parts (a meta-path finder)."""

    def __init__(self):
        self._busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in WAKE or not _IDLE.active() or _IDLE.waking or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.on = False
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _WakingLoader(spec.loader)
        return spec


class _WakingLoader:
    """A module's own loader, then the end of the idle state once no ``WAKE`` import is in progress."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = self._loader  # the module keeps its real loader
        module.__loader__ = self._loader
        with _IDLE.lock:
            _IDLE.depth += 1
        try:
            self._loader.exec_module(module)
        finally:
            with _IDLE.lock:
                _IDLE.depth -= 1
                outermost = _IDLE.depth == 0
        if outermost:
            _wake()


__all__ = ["IdlePart", "META", "SCHEMA", "TOUCH_INTERVAL", "WAKE", "start"]
