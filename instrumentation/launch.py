"""The tracer of ``ioadvisor run`` around a program that is not Python (C, C++, Fortran, a shell script), serial.

Such a program's libhdf5 calls are recorded by the interposer it is started with (``LD_PRELOAD``,
instrumentation/preload.py) into a log directory, and the Python processes it starts are followed into parts
(instrumentation/follow.py). The launcher itself records nothing: what it must do is set that up before the
program starts and, once it ended, turn the logs and parts into the trace. ``NativeRun`` does the first with
the standard library and light modules only (what the program's start waits for); the rest waits until the
program runs (``program_started``) and is done beside it by a watcher thread: the trace's header and records file,
then, once the program recorded something, numpy, Arrow and the converters (instrumentation/interpose.py,
columnar.py), and the conversion of the records as they reach the disk. A traced run then costs the program's own
time plus the conversion of its last records, not the launcher's imports (benchmarks/speed/tracing_overhead.py,
fixed cost and whole-process overhead). The trace is written in full before ``__exit__`` returns, as
``advisor.trace`` writes it.

Under an MPI launcher the run keeps ``advisor.trace`` with ``mpi.FileSync`` (its ranks agree through their trace
files, which rank 0 merges): ``NativeRun.possible()`` says when this one applies.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from . import mpi, preload
from .nativestart import NativeStart
from .partsdir import RUN_FILE
from .startup import release_startup_hook
from .tracedir import META, live_path, prepare

WATCH_INTERVAL = 0.02
"""Seconds between the watcher's looks at the log directory (and conversions) while the program runs: what came
after the last look is the exit's to convert (a look that finds nothing new costs a directory listing)."""
FIRST_LOOK = 0.01
"""Seconds between its looks until the program recorded something (a listing of the log directory each): the
imports then start sooner, so that they end before the program does (benchmarks/speed/tracing_overhead.py, the
20,000-box C program)."""
WATCH_NICE = 10
"""The watcher thread's nice value while the program runs: below the program (nice 0 weighs about ten times
more), above the machine's batch work (nice 19 weighs seven times less), which would otherwise leave the
conversion to the exit, where the user waits for it (benchmarks/speed/tracing_overhead.py, whole-process overhead)."""
SCHEMA = 1
"""``header.SCHEMA_VERSION`` (not imported: records pulls in dataclasses; a test checks they agree)."""
CAPTURE_CALLS = ("h5py calls", "zarr calls")
"""``records.CAPTURE_CALLS``, as ``SCHEMA``."""
_NOTHING = (b'{"t":"lib"', b'{"t":"caller"')
"""Interposer metadata lines that come without any access (a libhdf5 loaded, who calls it)."""


class NativeRun:
    """A context manager around the run of a program started with the interposer (``Program.execute``, which
    calls ``program_started`` once the program runs); ``path``, ``rank`` and ``size`` as ``advisor.trace``'s
    tracer has them."""

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False):
        self.path = Path(path).absolute()
        self.rank, self.size = 0, 1
        self.missed: list[str] = []
        self._overwrite = overwrite
        self._start: NativeStart | None = None
        self._started = threading.Event()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._begun = threading.Lock()
        self._header = None  # the trace's header (its config), its records file written: once the program runs
        self._sink = self._capture = None  # the trace's writer, the logs' reader: once something was recorded
        self._failed: str | None = None
        self.pending_counts = None  # pendingbatch.LogCounts of the logs sealed into the trace, unconverted (``_seal``)

    @staticmethod
    def possible() -> bool:
        """A serial run (no MPI launcher) where the interposer was built."""
        return not mpi.launched() and preload.library() is not None

    def __enter__(self) -> "NativeRun":
        """What the program's start needs (its environment, the parts directory that its Python children find
        the run in), checks that refuse the run before it starts; the rest waits for ``program_started``. A run
        ``started`` already is entered as it is."""
        if self._start is not None:
            return self
        start = NativeStart(str(self.path), self._overwrite)
        prepare(live_path(self.path))
        start.open()
        return self._started_from(start)

    @classmethod
    def started(cls, start: NativeStart) -> "NativeRun":
        """The run of a program started already, ``start`` opened and its trace directory made
        (``NativeStart.clear_trace_dir``): advisor/entry.py starts the program before importing this module."""
        run = cls(start.path, overwrite=True)._started_from(start)
        run.program_started()
        return run

    def _started_from(self, start: NativeStart) -> "NativeRun":
        self._start = start
        self._live = Path(start.live)  # a *.jsonl trace is exported from it at the end
        self._run_config = start.run_config
        self._hook_why, self._holds_hook = start.hook_why, start.holds_hook
        self._records = self._live / META
        self._parts, self._logs = Path(start.parts), Path(start.logs)
        self._deferring = self._live == self.path  # a columnar trace: its conversion may be left to its reader
        self._watcher = threading.Thread(target=self._watch, name="ioadvisor-watch", daemon=True)
        self._watcher.start()
        return self

    def program_started(self) -> None:
        """The program runs (its start no longer waits for this process): the watcher may begin."""
        self._started.set()

    def _begin(self) -> None:
        """The trace's header and its records file (once; the watcher's first work, else the exit's)."""
        with self._begun:
            if self._header is not None:
                return
            capture = [*CAPTURE_CALLS, preload.CAPTURE_LEVEL]
            capture += ["child processes"] if self._hook_why is None else \
                [f"forked child processes (new interpreters not followed: {self._hook_why})"]
            # TraceHeader(...).get_config(), field for field, without importing records (dataclasses, inspect, ast:
            # about 17 ms of CPU, the exit's own time where the program ends at once; a test checks they agree)
            header = {"schema": SCHEMA, "host": os.uname().nodename,  # = socket.gethostname(), without socket
                      "pid": os.getpid(), "ppid": os.getppid(), "rank": self.rank, "size": self.size,
                      "t_origin_unix": float(self._run_config["t_origin_unix"]),
                      "versions": {"python": ".".join(map(str, sys.version_info[:3]))}, "argv": list(sys.argv),
                      "clock": "time.perf_counter", "capture": capture, "processes": [], "missed": []}
            self._records.write_text(self._line({"t": "h", **header}))
            self._header = header

    def __exit__(self, exc_type, exc, tb) -> bool:
        ended = time.time_ns()
        self._stop.set()
        self._started.set()  # a watcher still waiting for the program: there is none any more
        self._hurry_watcher()
        self._watcher.join()
        self._start.restore_environment()  # the program's own environment back
        try:
            self._begin()
            if self._sink is None and self._anything():
                if self._deferring and self._failed is None and not self._children():
                    self._seal()
                else:
                    self._open_sink()
            if self.pending_counts is not None:
                pass  # the trace's reader converts it
            elif self._sink is None:  # nothing recorded: the records file is the whole trace
                with open(self._records, "a", encoding="utf-8") as fh:
                    fh.write(self._line({"t": "end", "n_access": 0}))
                (self._parts / RUN_FILE).unlink()
                self._parts.rmdir()
            else:
                self._finish(ended)
            if self._live != self.path and self._sink is None:  # its records are the whole JSON Lines trace
                os.replace(self._records, self.path)
                self._live.rmdir()
            elif self._live != self.path:
                from .merge import export_live

                export_live(self._live, self.path)
        finally:
            if self._logs.is_dir():  # not sealed into the trace
                _remove(self._logs)
            if self._holds_hook:  # the run's children are merged: site-packages as it was
                release_startup_hook()
        if self.missed:
            more = f" (and {len(self.missed) - 1} more: ioadvisor trace show {self.path})" \
                if len(self.missed) > 1 else ""
            print(f"ioadvisor: trace {self.path} is missing something: {self.missed[0]}{more}", file=sys.stderr)
        return False

    def _hurry_watcher(self) -> None:
        """The program ended: what the watcher is still doing (an import, a conversion) is now the run's exit,
        which the user waits for, so it goes back to this process's priority where the system allows it (an
        unprivileged process may not lower a nice value: the watcher then finishes at its own)."""
        tid = self._watcher.native_id
        if tid is None or not self._watcher.is_alive():
            return
        try:
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, 0))
        except (OSError, AttributeError):
            pass

    @staticmethod
    def _line(obj: dict) -> str:
        return json.dumps(obj, separators=(",", ":")) + "\n"  # as tracefile.dumps writes plain values

    def _anything(self) -> bool:
        """Did a process log anything but the libraries it loaded, or a followed process start a part?"""
        for f in self._logs.iterdir():
            if f.name.endswith(".acc"):
                if f.stat().st_size:
                    return True
            elif f.name.endswith(".meta"):
                if any(line and not line.startswith(_NOTHING) for line in f.read_bytes().split(b"\n")):
                    return True
        return self._children()

    def _children(self) -> bool:
        """Did a followed process start a part (or log directory) in the run's parts directory?"""
        return any(p.name != RUN_FILE for p in self._parts.iterdir())

    def _seal(self) -> None:
        """The program's logs moved into the trace as its pending batch, converted by the trace's first reader
        (instrumentation/pendingbatch.py): this process imports neither numpy nor Arrow. What the exit says
        (the summary line, what is missing) comes from reading the logs lightly."""
        from .pendingbatch import PENDING_RECORD, LogCounts, seal

        counts = LogCounts(self._logs)
        config = {"run": self._run_config, "missed": list(self.missed)}
        seal(self._live, self._logs, config, self._line(PENDING_RECORD))
        self.pending_counts = counts
        notes = counts.notes
        if counts.linked_in:  # as LibraryCapture.lost names them
            from .linkage import gap_note

            notes = sorted({gap_note(path, version) for path, version in counts.linked_in}) + notes
        self.missed += [note for note in notes if note not in self.missed]
        (self._parts / RUN_FILE).unlink()
        try:
            self._parts.rmdir()
        except OSError as exc:  # a process the program left running started a part since: not merged
            self.missed.append(f"child processes' parts left unmerged in {self._parts}: {exc}")

    def _open_sink(self) -> None:
        """The trace's writer and the reader of the interposer's logs (numpy, Arrow, the merge: imported now)."""
        with _OneBlasThread():
            from . import columnar
            from .convertsink import ConvertedSink
            from .interpose import LibraryCapture
            from . import parts  # noqa: F401 - the exit's merge (``_finish``), imported beside the program

        columnar.load_arrow()
        from .records import TraceHeader
        from .runinfo import RunInfo

        header = TraceHeader.from_config(self._header)
        self._sink = ConvertedSink(self._live, str(self._parts), RunInfo.from_config(self._run_config), header)
        self._capture = LibraryCapture(self._logs, None)

    def _watch(self) -> None:
        """While the program runs: the trace's records file, then, once the program recorded something, convert
        its records as they reach the disk, on a core the program may not use (its exit then waits only for the
        last ones). At a low priority (Linux schedules a thread as its own task): where no core is idle, the
        program goes first (WATCH_NICE), and the records wait for the exit (benchmarks/speed/tracing_overhead.py:
        the C loops' own time)."""
        try:
            # never above the launcher's own priority (a run started with nice 19 stays there)
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, max(WATCH_NICE, os.getpriority(os.PRIO_PROCESS, tid)))
        except (OSError, AttributeError):
            pass
        self._started.wait()  # not before: the program's start would wait for this thread's imports (the GIL)
        while not self._stop.is_set():
            try:
                if self._sink is None:
                    self._begin()
                    # a columnar trace waits for its reader unless a followed process writes a part (merged at
                    # the exit as today, its records converted beside the program)
                    if self._children() if self._deferring else self._anything():
                        self._open_sink()
                if self._sink is not None:
                    self._capture.poll([self._sink], eager=True)
                    self._sink.stage()  # encoded now: the exit writes only the last records
            except Exception as exc:  # noqa: BLE001 - the exit converts what is left, and says what failed
                self._failed = f"{type(exc).__name__}: {exc}"
                return
            self._stop.wait(FIRST_LOOK if self._sink is None else WATCH_INTERVAL)

    def _finish(self, ended: int) -> None:
        """Convert the rest of the program's libhdf5 records and merge the followed processes' parts, as
        ``advisor.trace`` does at its exit (instrumentation/tracer.py)."""
        from .parts import merge_parts
        from .tracefile import TraceError

        try:
            self._capture.poll([self._sink], final=True)
            self._sink.drain()
        except Exception as exc:  # noqa: BLE001 - a torn log must cost neither the trace nor the exit status
            self._failed = self._failed or f"{type(exc).__name__}: {exc}"
        if self._failed:
            self.missed.append(f"the program's libhdf5 records could not all be converted: {self._failed}")
        # a program with libhdf5 linked in is named by `ioadvisor run` and by the interposer at its exit: once
        self.missed += [m for m in self._capture.lost() if m not in self.missed]
        self._sink.close(tuple(self.missed), self._capture.libraries(), gather=True)
        try:
            self.missed += merge_parts(self._live, self._parts, ended)
            self._parts.rmdir()
        except (OSError, TraceError) as exc:
            self.missed.append(f"child processes' parts left unmerged in {self._parts}: {exc}")


def _remove(logs: Path) -> None:
    """The log directory and its files (flat: the interposer's logs and marks), else ``shutil.rmtree``."""
    try:
        for entry in os.scandir(logs):
            os.unlink(entry.path)
        logs.rmdir()
    except OSError:
        import shutil

        shutil.rmtree(logs, ignore_errors=True)


class _OneBlasThread:
    """numpy imported with one BLAS thread, where this process did not import it yet and the user did not choose:
    the launcher never multiplies matrices, and OpenBLAS starting a thread per core took about half of numpy's
    import (benchmarks/speed/tracing_overhead.py, the 20,000-box C program). The program started earlier, with
    its own environment; the variable is this process's only for the time of the import."""

    VAR = "OPENBLAS_NUM_THREADS"

    def __enter__(self):
        self._set = "numpy" not in sys.modules and self.VAR not in os.environ
        if self._set:
            os.environ[self.VAR] = "1"
        return self

    def __exit__(self, *exc):
        if self._set:
            os.environ.pop(self.VAR, None)
        return False


__all__ = ["NativeRun"]
