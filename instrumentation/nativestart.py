"""The start of a program that is not Python under ``ioadvisor run`` (instrumentation/launch.py), with ``os`` calls
and the standard library's lightest modules only.

What the launcher does before the program starts is the program's start-up time as the user sees it
(benchmarks/speed/tracing_overhead.py: the fixed cost, the 20,000-box C program). What that start needs is small:
the trace's path checked, the start-up hook held, the parts directory with its run file, the interposer's log
directory, the child's environment, and the spawn. ``NativeStart`` does it without pathlib, re, json, argparse,
subprocess or threading: those imports were about two thirds of a launcher's start beyond the interpreter's own.
``ioadvisor run`` of a native program (advisor/entry.py) starts it so, before the CLI's parser exists, and imports
the rest (``NativeRun``, the watcher) once the program runs; ``NativeRun.__enter__`` prepares through it too.
"""
from __future__ import annotations

import _signal as signals  # the signal module's C half: signal.py wraps it in enums (enum's import: ms of a start)
import os
import time

from . import preload, settings
from .errors import OutputExistsError
from .partsdir import RUN_FILE, child_environment
from .pendingbatch import is_pending_name, remove_tree
from .startup import adopt_startup_hook, ensure_startup_hook, release_startup_hook

DEFAULT_TRACE = "ioadvisor-trace.parquet"
"""The trace ``ioadvisor run`` writes where not told (advisor/commands/run.py, advisor/entry.py)."""
RECORDS_FILE = "_meta.jsonl"
"""A columnar trace's records file (``tracedir.META``, which imports ``re``)."""
_RESET_SIGNALS = tuple(getattr(signals, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signals, name))
"""Signals Python ignores that a child starts with at their default, as ``subprocess`` (``restore_signals``)."""
HDF5_VERSION_MARK = b"HDF5 library version: "
"""What every build of libhdf5 holds (``linkage.inspect``): in a program's own file, libhdf5 is linked in."""
FRONT_STARTED = settings.FRONT_STARTED
"""Set by the native front end (instrumentation/frontend/ioadvisor.c) when it execs the Python entry point with
the program started already: the ``NativeStart`` it did, fields separated by FIELD_SEPARATOR (``resumed``)."""
FRONT_ARGV0 = settings.FRONT_ARGV0
"""Set by the native front end: the command's own ``argv[0]`` (the Python entry point's is its script's)."""
FIELD_SEPARATOR = "\x1f"
LAUNCH_NICE = 19
"""The launcher's nice value while the program the native front end started runs: its interpreter's start and
its imports run beside the program, below it (within the session's CPU share: on a machine with no idle core
they took the program's time; benchmarks/speed/tracing_overhead.py --fixed-only, the 20,000-box C program)."""
READ_WHOLE = 16 << 20
"""Programs up to this size are read to be searched, larger ones mapped: loading the mmap module (a shared
library) costs a start about as much as reading a few MB here."""


class NativeStart:
    """What a native program's start needs for the trace at ``path`` (absolute, as ``NativeRun.path``)."""

    def __init__(self, path: str, overwrite: bool):
        self.path = path
        self.live = f"{path}.live" if path.endswith(".jsonl") else path  # tracedir.live_path
        if os.path.lexists(path) and not overwrite:
            raise OutputExistsError(f"{path} exists: not replacing an earlier trace "
                                    "(choose another path, or overwrite=True / --force to replace it)")
        if self.live != path and os.path.lexists(self.live) and not overwrite:
            raise OutputExistsError(f"{self.live} exists: not replacing an earlier trace's records "
                                    "(choose another path, or overwrite=True / --force to replace it)")
        # runinfo.RunInfo's fields: built into a RunInfo once the program runs (dataclasses cost its start ms)
        self.run_config = {"t_origin_unix": time.time(), "origin": time.perf_counter(), "rank": 0, "size": 1}
        self.hook_why: str | None = None
        self.holds_hook = False
        self.parts = self.logs = ""
        self.saved: dict[str, str | None] = {}
        self.nice_before: int | None = None  # the front end's (``resumed``)

    @classmethod
    def resumed(cls, state: str) -> tuple["NativeStart", int]:
        """(the ``NativeStart`` the native front end did before it started the program, the program's pid), from
        its FRONT_STARTED variable: the trace directory cleared, the start-up hook held by this process (the same
        one: the front end execs its Python entry point), the program's variables in its environment only."""
        pid, path, live, parts, logs, t_unix, origin, holds, why, nice = state.split(FIELD_SEPARATOR)
        start = cls.__new__(cls)
        start.path, start.live, start.parts, start.logs = path, live, parts, logs
        start.run_config = {"t_origin_unix": float(t_unix), "origin": float(origin), "rank": 0, "size": 1}
        start.holds_hook = holds == "1"
        start.hook_why = None if start.holds_hook else why
        start.saved = {}
        start.nice_before = int(nice)
        if start.holds_hook:
            adopt_startup_hook()
        return start, int(pid)

    def program_ended(self) -> None:
        """The launcher's priority back to what it was before the front end lowered it (``resumed``), where the
        system allows it (an unprivileged process may not lower its nice value: it then stays)."""
        if self.nice_before is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, self.nice_before)
            except OSError:
                pass

    def clear_trace_dir(self) -> bool:
        """The empty trace directory ``tracedir.prepare`` makes, where what is at ``live`` is surely an earlier
        trace (nothing, a file, a directory of a trace's files: ``is_trace_file``); False, and nothing touched,
        where ``tracedir.prepare`` must decide (and say why not)."""
        if not os.path.lexists(self.live):
            os.makedirs(self.live)
            return True
        if not os.path.isdir(self.live) or os.path.islink(self.live):
            return False
        names = os.listdir(self.live)
        if not all(is_trace_file(name) for name in names):
            return False
        for name in names:
            if is_pending_name(name):
                remove_tree(os.path.join(self.live, name))
            else:
                os.unlink(os.path.join(self.live, name))
        return True

    def open(self) -> None:
        """The start-up hook held, the parts directory with its run file, the log directory, and the variables
        that make the program record into them, set in this process's environment (``restore_environment``)."""
        self.hook_why = ensure_startup_hook()
        self.holds_hook = self.hook_why is None
        self.parts = f"{self.path}.parts-{os.urandom(4).hex()}"
        os.mkdir(self.parts)
        tmp = os.path.join(self.parts, f".{RUN_FILE}")
        with open(tmp, "w", encoding="utf-8") as fh:  # runinfo.RunInfo.save's JSON: numbers only (repr is JSON)
            fh.write("{" + ", ".join(f'"{k}": {v!r}' for k, v in self.run_config.items()) + "}")
        os.replace(tmp, os.path.join(self.parts, RUN_FILE))  # a child starting now reads all of it or nothing
        self.logs = log_dir()
        env = {**child_environment([self.parts]), **preload.child_environment(self.logs)}
        self.saved = {name: os.environ.get(name) for name in env}
        os.environ.update(env)

    def restore_environment(self) -> None:
        """This process's environment as it was before ``open`` (the program's own, for what runs after it)."""
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.saved = {}

    def abandon(self) -> None:
        """Undo ``open`` and the trace directory: the program could not be started (``spawn`` failed)."""
        self.restore_environment()
        for path in (os.path.join(self.parts, RUN_FILE), os.path.join(self.live, RECORDS_FILE)):
            if os.path.exists(path):
                os.unlink(path)
        for path in (self.parts, self.live, self.logs):
            try:
                os.rmdir(path)
            except OSError:
                pass
        if self.holds_hook:
            release_startup_hook()
            self.holds_hook = False


def is_trace_file(name: str) -> bool:
    """A name ``tracedir.prepare`` replaces in a trace directory (its records file, a batch, a batch's temporary
    file, a pending batch: instrumentation/pendingbatch.py), told without ``re``; never true of a name it would
    not replace."""
    if name == RECORDS_FILE or name.endswith((".parquet.tmp", ".npy.tmp")) or is_pending_name(name):
        return True
    stem, dot, suffix = name.rpartition(".")
    if stem.startswith("part-") and suffix in ("parquet", "npy"):
        return _batch_number(stem[5:])
    if stem.startswith("parts-") and suffix == "parquet":
        first, dash, last = stem[6:].partition("-")
        return bool(dash) and _batch_number(first) and _batch_number(last)
    return False


def _batch_number(text: str) -> bool:
    return len(text) >= 6 and text.isascii() and text.isdigit()


def is_python_file(path: str) -> bool:
    """A Python script (source, or a ``#!...python`` script), not an executable or another interpreter's script."""
    try:
        with open(path, "rb") as fh:
            head = fh.readline(256)
    except OSError:
        return True  # not readable here: let runpy report it as python would
    if head.startswith(b"\x7fELF"):
        return False
    return not head.startswith(b"#!") or b"python" in head


def links_hdf5_in(path: str) -> bool:
    """Might the program at ``path`` have libhdf5 linked into its own file (``linkage.inspect`` tells how)?"""
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size <= READ_WHOLE:
                return fh.read().find(HDF5_VERSION_MARK) >= 0
            import mmap

            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(HDF5_VERSION_MARK) >= 0
    except (OSError, ValueError):
        return False


def which(name: str) -> str | None:
    """``shutil.which(name)`` for a name without a directory (shutil imports ``re`` through fnmatch)."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory, name)
        if os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return path
    return None


def spawn(argv: list[str]) -> int:
    """Start ``argv`` (its first item a path) with this process's environment and every inheritable descriptor,
    as a shell would pass them (an MPI launcher's PMI_FD among them); its pid."""
    return os.posix_spawn(argv[0], argv, os.environ, setsigdef=_RESET_SIGNALS)


def wait(pid: int, started=None) -> int:
    """The exit code of the child ``pid``, negative for the signal that ended it (``Popen.wait``'s), after calling
    ``started()``; a KeyboardInterrupt (or any exception) meanwhile kills it first, as ``subprocess.call`` does."""
    try:
        if started is not None:
            started()
        _, status = os.waitpid(pid, 0)
    except BaseException:
        os.kill(pid, signals.SIGKILL)
        os.waitpid(pid, 0)
        raise
    return os.waitstatus_to_exitcode(status)


def log_dir() -> str:
    """A new private directory for the interposer's logs, in the temporary directory (``tempfile.mkdtemp``'s
    place, without its import on the program's way to start)."""
    try:
        path = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"ioadvisor-h5-{os.urandom(6).hex()}")
        os.mkdir(path, 0o700)
        return path
    except OSError:
        import tempfile

        return tempfile.mkdtemp(prefix="ioadvisor-h5-")


__all__ = ["DEFAULT_TRACE", "FIELD_SEPARATOR", "FRONT_ARGV0", "FRONT_STARTED", "HDF5_VERSION_MARK", "LAUNCH_NICE",
           "NativeStart", "RECORDS_FILE", "is_python_file", "is_trace_file", "links_hdf5_in", "log_dir", "spawn", "wait",
           "which"]
