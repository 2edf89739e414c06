"""The hub: process-wide state shared by every tracer and every hook (instrumentation/tracer.py).

It hands each access the hooks record to the active tracers (``HUB.hyperslab`` and the like: the hot path), installs
the hooks when the first tracer starts and removes them when the last one ends (also on import: a meta-path hook),
moves a forked child off its parent's tracers onto parts of its own, runs the ``ioadvisor-flush`` thread that writes
what the tracers queued, and polls the libhdf5 interposer's records (instrumentation/interpose.py). The tracers are
``tracer.Tracer`` objects, reached through their public methods only.
"""
from __future__ import annotations

import importlib.abc
import os
import sys
import threading
import time

from . import interpose, sigterm
from .partsdir import child_environment
from .sink import DatasetInfo

try:
    from . import _hotpath  # the C hooks' view of the active tracers' recorders, and the flusher's passes (setup.py)
    set_recorders = _hotpath.set_recorders
except ImportError:
    _hotpath = set_recorders = None
_passes = _hotpath is not None and hasattr(_hotpath, "flusher_wait")
"""The flusher waits and passes through hotpath/passes.c: the traced calls hand it the GIL for each pass."""

# Module name -> hook module (relative). A module is hooked when both it and
# the tracer are there; its hook module's ``patches()`` lists (owner, attr, wrapper).
HOOKS = {"h5py": ".hooks_h5py", "zarr": ".hooks_zarr", "multiprocessing.process": ".follow",
         "s3fs.core": ".hooks_s3fs", "obstore": ".hooks_obstore"}  # object-store requests (storerequests)


FLUSH_INTERVAL = 0.2
"""Seconds between the flusher's passes over the active tracers while a followed process's part is traced (its run's
tracer watches the part's time stamp, touched after each pass: parts.wait_for_parts) or the libhdf5 capture runs (its
logs are converted up to one pass ago). Each pass hands the recorded accesses to the trace writer, which writes a
batch every columnar_writer.BATCH_SECONDS (or BATCH_ROWS): a killed process can lose up to one batch (a JSON Lines
trace is written columnar while live too)."""
QUIET_PASS_SECONDS = 1.0
"""Seconds between passes otherwise (at least FLUSH_INTERVAL): one a batch (columnar_writer.BATCH_SECONDS), so a
killed process loses no more. Each pass needs the GIL from a program in the middle of its calls (hotpath/passes.c:
what that cost, and how the traced calls hand it over); fewer passes, fewer hand-overs. A recorder that reaches
tracer.KICK_PENDING records wakes the flusher at once (``kick``), long before it is full."""
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
        self._kick = threading.Event()
        self._environ: dict[str, str | None] | None = None  # the program's values of the child variables
        self._forking: list[threading.Lock] = []
        self.below: interpose.LibraryCapture | None = None
        self._below_lock = threading.Lock()  # not self.lock: detach holds that while joining the flusher
        self._process_hooks = False

    @property
    def active(self) -> "tuple":
        """The tracers recording now (innermost last)."""
        return self._active

    @active.setter
    def active(self, tracers: "tuple") -> None:
        self._active = tracers
        if set_recorders is not None:
            set_recorders(tuple(tr.recorder for tr in tracers))

    # -- recording (hot path: no locks, no allocation beyond the record) --
    def hyperslab(self, info: DatasetInfo, op: str, start, count, stride, block,
                  n: int, nbytes: int, t0: float, dt: float) -> None:
        for tr in self.active:
            tr.hyperslab(info, op, start, count, stride, block, n, nbytes, t0, dt)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t0 + dt))

    def access(self, info: DatasetInfo, op: str, selection, n: int, nbytes: int, t0: float, dt: float) -> None:
        if selection.kind == "hyperslab":
            self.hyperslab(info, op, selection.start, selection.count, selection.stride, selection.block,
                           n, nbytes, t0, dt)
            return
        for tr in self.active:
            tr.access(info, op, selection, n, nbytes, t0, dt)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t0 + dt))

    def collective(self, info: DatasetInfo, op: str, selection, n: int, nbytes: int, t0: float, dt: float) -> None:
        """An MPI-IO collective transfer: kept as a record (the flag does not fit the hyperslab fast path)."""
        for tr in self.active:
            tr.access(info, op, selection, n, nbytes, t0, dt, True)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t0 + dt))

    def resize(self, info: DatasetInfo, shape: tuple[int, ...], t0: float, t1: float) -> None:
        """``info``'s extent became ``shape`` in a call from ``t0`` to ``t1`` (libhdf5's record of it is dropped)."""
        active = self.active
        for tr in active:  # a dataset first seen now is recorded with its extent before the change
            tr.register(info)
        info.shape = shape
        for tr in active:
            tr.resize(info, t1)
            if tr.spans is not None:
                tr.spans.append((info.key, t0, t1))

    def opened(self, rec, t: float) -> None:
        """A file or dataset opened or closed at ``t`` (``opens.OpenRecord``; rare: outside the hooks' recorder)."""
        for tr in self.active:
            tr.opened(rec, t)

    def created(self, info: DatasetInfo) -> None:
        for tr in self.active:
            tr.register(info, created=True)

    def seen(self, info: DatasetInfo) -> None:
        """A dataset the program reached without moving data (its read failed): recorded, no access."""
        for tr in self.active:
            tr.register(info)

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
        sigterm.close_at_exit()

    def attach(self, tracer) -> None:
        with self.lock:
            self._register_process_hooks()
            idle = not self.active
            self.active = self.active + (tracer,)  # before hooking: a library that cannot be hooked is noted in it
            if idle:
                self._install()
            self._child_environment()

    def detach(self, tracer) -> None:
        if not self.lock.acquire(blocking=not sigterm.terminating()):
            # SIGTERM's close while the thread it interrupted holds the lock (importing a hook module): that
            # thread never resumes, so waiting would end the process with its part unclosed. The process
            # ends now, patches and all: only the recording and the flusher stop.
            self.active = tuple(t for t in self.active if t is not tracer)
            if not self.active:
                self._stop_flusher()
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
        dirs = [t.parts_dir for t in self.active if t.parts_dir]
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
        self._forking = [tr.drain_lock for tr in self.active]
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
            self.below = self.below.forked(next((tr.parts_dir for tr in parents if tr.parts_dir), None))
        self.lock = threading.RLock()
        self.active = ()
        self._flusher = None  # threads do not survive a fork
        with sigterm.sigterm_deferred():
            children = []
            for tr in parents:
                child = tr.orphan()
                if child is not None:
                    children.append(child)
            if not children:
                self._uninstall()
                return
            self.active = tuple(children)
            self._start_flusher()
            sigterm.install_sigterm()

    def kick(self) -> None:
        """Wake the flusher for a pass now (a recorder filling up; the C hook does it in C)."""
        if _passes:
            _hotpath.kick()
        else:
            self._kick.set()

    def _pass_seconds(self) -> float:
        """FLUSH_INTERVAL where a part or the libhdf5 capture needs the short cadence, else QUIET_PASS_SECONDS."""
        if self.below is not None or any(tr.is_part for tr in self.active):
            return FLUSH_INTERVAL
        return max(FLUSH_INTERVAL, QUIET_PASS_SECONDS)

    def _flush_loop(self, stop: threading.Event, kick: threading.Event) -> None:
        # formatting and file writes happen here, off the traced threads
        while True:
            if _passes:
                _hotpath.flusher_wait(self._pass_seconds())
            else:
                kick.wait(self._pass_seconds())
                kick.clear()
            try:
                if stop.is_set():
                    return
                self._pass()
            finally:
                if _passes:
                    _hotpath.pass_done()

    def _pass(self) -> None:
        """One pass: the active tracers' records to their writers, the libhdf5 capture's polled."""
        for tr in self.active:
            started = time.time_ns()
            try:
                tr.drain(force=False)
                if tr.is_part:  # tells the run's tracer that everything queued before `started` is written
                    os.utime(tr.own_path, ns=(started, started))
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
        self._stop, self._kick = threading.Event(), threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, args=(self._stop, self._kick),
                                         name="ioadvisor-flush", daemon=True)
        self._flusher.start()

    def _install(self) -> None:
        self._start_flusher()
        self._finder = _ImportHook(self)
        sys.meta_path.insert(0, self._finder)
        for lib in HOOKS:
            if lib in sys.modules:
                self.hook_library(lib)

    def hook_library(self, lib: str) -> None:
        """Patch ``lib`` (a key of HOOKS) with its hook module's patches, once."""
        with self.lock:
            if lib in self._hooked or not self.active and self._finder is None:
                return
            try:
                from importlib import import_module

                module = import_module(HOOKS[lib], __package__)
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

    def _stop_flusher(self) -> None:
        self._stop.set()
        self.kick()

    def _uninstall(self) -> None:
        self._stop_flusher()
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
        if fullname not in HOOKS or getattr(self._busy, "on", False):
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
        self._hub.hook_library(self._name)


HUB = _Hub()
sigterm.close_with(lambda: HUB.active)


__all__ = ["FLUSHER_WAIT", "FLUSH_INTERVAL", "HOOKS", "HUB", "QUIET_PASS_SECONDS"]
