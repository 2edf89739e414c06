"""Following the processes a traced program starts (the way coverage.py measures subprocesses).

Every Python process the program starts, at any depth, is traced into its own
*part*: ``<parts dir>/<pid>.parquet`` (``<pid>.jsonl`` when the run's trace is
JSON Lines), whose header names its pid and parent pid. When the run's tracer
exits it merges the parts into the run's trace (``merge_parts``) and says in the
header which processes it holds and what is known to be missed.

Parts are written so that merging them rewrites no access: every process of a
run numbers its datasets from one registry (``SharedIds``, ``<parts
dir>/_datasets.jsonl``), times its accesses from the run's clock origin and
writes the run's rank (``RunInfo``, ``<parts dir>/_run.json``). A columnar
part's Parquet batches are then moved into the run's trace as they are, and only
its small records file is rewritten.

How a child gets traced:

- **A new interpreter** (multiprocessing spawn and forkserver, ``subprocess``
  running python, dask / distributed workers): the tracer puts
  ``child_environment()`` into ``os.environ`` while it is active, and the
  start-up hook ``ioadvisor-follow.pth`` (written into site-packages on the
  first trace, ``ensure_startup_hook``) calls ``start_part()`` in any Python
  process that has that variable. Without the variable the hook does nothing.
- **A forked child** (multiprocessing fork, DataLoader workers, a bare
  ``os.fork``): ``os.register_at_fork`` moves it off its parent's tracers, whose
  queues and files it inherited, onto parts of its own (``_after_fork_in_child``).

A part is closed when its process exits: at interpreter exit (atexit), at the
end of a multiprocessing ``Process._bootstrap`` (fork and forkserver children
leave with ``os._exit``, which skips atexit), and on SIGTERM (``Pool.terminate``)
when the program has not set a handler of its own. The SIGTERM close runs in a
thread of its own and the process ends at most SIGTERM_WAIT seconds later
whatever happened to it: the handler interrupts code that may hold the locks the
close needs (the tracer's own, mid-flush), and a process that outlives SIGTERM
hangs the pool that waits for it.
"""
from __future__ import annotations

import _thread
import fcntl
import functools
import json
import os
import shutil
import signal
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

ENV = "IOADVISOR_FOLLOW"
"""Parts directories of the active tracers (``os.pathsep``-separated): set in a process means "trace me"."""
PTH_NAME = "ioadvisor-follow.pth"
_PTH_CODE = """\
import sys
def start():
    try:
        import instrumentation.follow as follow
        follow.start_part()
    except ImportError as exc:
        return exc
failed = start()
if failed is not None:
    class Retry:  # the tracer's own imports (numpy) may be in a site directory processed later
        def find_spec(self, name, path=None, target=None):
            if name == "sitecustomize":  # site imports it once every .pth file was processed
                sys.meta_path.remove(self)
                again = start()
                if again is not None:
                    print(f"ioadvisor: process {os.getpid()} not traced: {again}", file=sys.stderr)
            return None
    sys.meta_path.insert(0, Retry())
"""
# executed by site at every start-up of this environment's interpreter; a no-op without the variable
PTH_LINE = f"import os; exec({_PTH_CODE!r}, {{'os': os}}) if os.environ.get({ENV!r}) else None\n"
PART_WAIT = float(os.environ.get("IOADVISOR_PART_WAIT", "10"))
"""Longest wait at the end of a run for a live child to flush what it recorded before the end."""
POLL = 0.02
SIGTERM_WAIT = float(os.environ.get("IOADVISOR_SIGTERM_WAIT", "5"))
"""Longest a child killed by SIGTERM spends closing its part before it ends (the part is then lost, and said so)."""


def child_environment(parts_dirs: list[str]) -> dict[str, str]:
    """The variables a child process needs to be traced (extend here: e.g. a preloaded library)."""
    return {ENV: os.pathsep.join(parts_dirs)}


RUN_FILE = "_run.json"
DATASETS_FILE = "_datasets.jsonl"
CONVERTED = ".conv"
"""``<pid>.conv.parquet`` (``.jsonl``): a process's libhdf5 records converted beside it (``convert``);
``<pid>.conv.lock``: held while its converter works."""
LOG_PREFIX = "h5-"
"""A followed process's libhdf5 log directory (``interpose.LibraryCapture``) in its run's parts directory is
``h5-PID``: the merge converts what a killed process left there."""


@dataclass(frozen=True)
class RunInfo:
    """What every part of a run shares with the run's trace, so that parts merge without rewriting an access.

    The run's tracer writes it into its parts directory (``RUN_FILE``); a forked child copies its parent's.
    """

    t_origin_unix: float
    """The run's clock origin (``TraceHeader.t_origin_unix``): every part times its accesses from it."""
    origin: float
    """The same instant on ``time.perf_counter``'s clock (CLOCK_MONOTONIC, one per host): taken as it is, not
    through ``time.time``, parts' times are the run's to the nanosecond (a salvage matches calls microseconds
    apart: ``merge_parts``)."""
    rank: int
    size: int
    columnar: bool
    """Parts are columnar trace directories (else JSON Lines files), as the run's trace is."""

    def part_path(self, parts_dir: str | os.PathLike, pid: int) -> Path:
        return Path(parts_dir) / f"{pid}{'.parquet' if self.columnar else '.jsonl'}"

    def get_config(self) -> dict:
        return {"t_origin_unix": self.t_origin_unix, "origin": self.origin, "rank": self.rank, "size": self.size,
                "columnar": self.columnar}

    @classmethod
    def from_config(cls, config: dict) -> "RunInfo":
        return cls(float(config["t_origin_unix"]), float(config["origin"]), int(config["rank"]), int(config["size"]),
                   bool(config["columnar"]))

    def save(self, parts_dir: str | os.PathLike) -> None:
        path = Path(parts_dir) / RUN_FILE
        tmp = path.with_name(f".{RUN_FILE}.{os.getpid()}")
        tmp.write_text(json.dumps(self.get_config()))
        os.replace(tmp, path)  # a child starting now reads all of it or nothing

    @classmethod
    def load(cls, parts_dir: str | os.PathLike) -> "RunInfo | None":
        """The run's information; None when the run is over (its tracer merged the parts and removed it)."""
        try:
            return cls.from_config(json.loads((Path(parts_dir) / RUN_FILE).read_text()))
        except FileNotFoundError:
            return None


class SharedIds:
    """Dataset ids shared by every process of one run: ``<parts dir>/_datasets.jsonl``, one dataset record
    per line in id order, appended under an exclusive ``flock``.

    A process asks only for a dataset it has not seen yet; it reads the lines other processes
    appended since its last look. As within one tracer, a key seen before keeps its id unless the
    dataset was created anew. The merged trace's dataset records are these lines.
    """

    def __init__(self, parts_dir: str | os.PathLike):
        self.path = Path(parts_dir) / DATASETS_FILE
        self._read = 0  # bytes of the file already parsed
        self._ids: dict[str, int] = {}
        self._next = 0

    def id_of(self, record) -> int:
        """The run's id of ``record`` (a DatasetRecord; its own ``id`` is ignored)."""
        from .tracefile import _dumps

        # opened anew each time: a forked child must not share its parent's open file (flock is per open file)
        with open(self.path, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.seek(self._read)
            new = fh.read()
            lines = new.split(b"\n")
            torn = lines.pop()  # b"" after a whole last line; else a writer killed mid-line
            for line in lines:
                self._learn(line)
            self._read += len(new)
            if not record.created and record.key in self._ids:
                return self._ids[record.key]
            tid = self._next
            line = ((b"\n" if torn else b"") +  # ends a torn line: it stays unreadable, ours does not
                    _dumps({"t": "d", **replace(record, id=tid).get_config()}).encode() + b"\n")
            fh.write(line)
            fh.flush()
            self._read += len(line)
            self._ids[record.key] = tid
            self._next = tid + 1
            return tid

    def _learn(self, line: bytes) -> None:
        try:
            obj = json.loads(line)
            key, tid = f"{obj['file']}::{obj['path']}", int(obj["id"])  # DatasetRecord.key
        except (ValueError, KeyError, TypeError):
            return  # a line torn by a killed writer: its id was never used
        self._ids[key] = tid
        self._next = max(self._next, tid + 1)


_hook_state: dict[str, str | None] = {}


def ensure_startup_hook() -> str | None:
    """Write the .pth start-up hook into this interpreter's site-packages if it is not there.

    Returns None when the hook is in place, else why not (new interpreters are then not followed).
    """
    if "result" in _hook_state:
        return _hook_state["result"]
    target = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
    result = None
    try:
        if not target.exists() or target.read_text() != PTH_LINE:
            tmp = target.with_name(f".{PTH_NAME}.{os.getpid()}")
            tmp.write_text(PTH_LINE)
            os.replace(tmp, target)  # another process may write it at the same time: all-or-nothing
    except OSError as exc:
        result = f"cannot write the start-up hook {target} ({exc.strerror or exc})"
    _hook_state["result"] = result
    return result


HELPERS = ("from multiprocessing.resource_tracker import main",)
"""``python -c`` commands of helper processes that never touch an array and outlive the program that starts them:
not followed. multiprocessing's resource tracker (spawn and forkserver) ends only when the program's exit closes
its pipe, so its part came after the run's merge: the parts directory was left behind with it, and the trace
said its children's parts were left unmerged."""


def _helper() -> bool:
    return any(arg.startswith(HELPERS) for arg in sys.orig_argv[1:])  # Python >= 3.10: the -c text too


def start_part() -> None:
    """Trace this whole process into parts of the tracers named by the environment (from the .pth hook)."""
    dirs = [d for d in os.environ.get(ENV, "").split(os.pathsep) if d]
    if not dirs or _helper():
        return
    from .tracer import HUB, Tracer  # an ImportError reaches the start-up hook: numpy may be in a later site dir

    try:
        if any(getattr(t, "_parts_dir", None) == d for t in HUB.active for d in dirs):
            return  # already traced (a start-up hook run twice)
        runs = [(d, RunInfo.load(d)) for d in dirs]
        with sigterm_deferred():
            for d, run in runs:
                if run is not None:  # else that run has ended: this process is not part of it
                    Tracer._part(d, run).__enter__()
            install_sigterm()
    except Exception as exc:  # noqa: BLE001 - the program must run even if it cannot be traced
        print(f"ioadvisor: process {os.getpid()} not traced: {type(exc).__name__}: {exc}", file=sys.stderr)


class sigterm_deferred:
    """While a child sets up its part (a context manager): a SIGTERM then is handled once the part is open.

    A pool terminated while a worker is still starting (spawn: while its interpreter imports; fork:
    in the fork hook) would otherwise end it between its part's creation and the handler that closes
    it: a part reported lost, for a worker that never ran the program's code. Blocking the signal
    is not enough: with SIG_DFL, any other thread (OpenBLAS's) takes it and the process ends.
    """

    def __enter__(self):
        self._before = signal.getsignal(signal.SIGTERM)
        self._own = (threading.current_thread() is threading.main_thread()
                     and self._before in (signal.SIG_DFL, _on_sigterm))  # a forked part's child has ours
        if self._own:
            _ending["starting"] = True
            signal.signal(signal.SIGTERM, _on_sigterm)
        return self

    def __exit__(self, *exc):
        from .tracer import HUB

        if self._own:
            _ending["starting"] = False
            if _ending["terminated"]:
                _terminate()
            elif not HUB.active:  # nothing to close: the program's own disposition
                signal.signal(signal.SIGTERM, self._before)
        return False


_ending = {"closing": False, "terminated": False, "starting": False}


def _close_tracers() -> None:
    from .tracer import HUB

    if _ending["closing"]:
        return
    _ending["closing"] = True
    try:
        for tr in HUB.active[::-1]:
            try:
                tr.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - nothing to report to while the process ends
                pass
    finally:
        _ending["closing"] = False


def close_all() -> None:
    """End every tracer still active in this process (also the exit paths that skip atexit)."""
    _close_tracers()
    if _ending["terminated"]:
        _end_by_sigterm()


def terminating() -> bool:
    """This process was sent SIGTERM and is closing its parts before it ends."""
    return _ending["terminated"]


def _end_by_sigterm() -> None:
    """The process still ends the way SIGTERM ends it (exit status, the parent's view)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _on_sigterm(signum, frame) -> None:
    if _ending["terminated"]:
        return  # the watcher's repeat of a SIGTERM this handler already has
    _ending["terminated"] = True
    if _ending["closing"] or _ending["starting"]:
        return  # the close under way (Process._bootstrap ending), or the end of the set-up, ends the process
    _terminate()


def _terminate() -> None:
    """Close this process's parts (bounded) and end it by SIGTERM."""
    # Not closing in this frame: the code it interrupted may hold a lock the close takes (a flush
    # holds the tracer's drain lock), and waiting here would wait for ourselves forever. A raw
    # thread, since threading's own locks may be the ones held.
    done = _thread.allocate_lock()
    done.acquire()

    def close():
        try:
            _close_tracers()
        finally:
            done.release()

    try:
        _thread.start_new_thread(close, ())
    except RuntimeError:  # no new thread while the interpreter shuts down: end without closing
        pass
    else:
        done.acquire(timeout=SIGTERM_WAIT)
    _end_by_sigterm()


def install_sigterm() -> None:
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, _on_sigterm):
        signal.signal(signal.SIGTERM, _on_sigterm)
        _watch_sigterm()


_wakeup = {"r": -1, "w": -1}


def _watch_sigterm() -> None:
    """Repeat a SIGTERM to the main thread until its handler runs.

    A Python handler runs only when the main thread returns to the interpreter. A
    SIGTERM that arrives while it is on its way into a blocking wait (a pool worker
    woken on the queue lock, the lock taken by the terminating parent, glibc waiting
    again) is recorded and never handled: the worker outlives ``Pool.terminate``, which
    waits for it for ever. SIG_DFL would have ended it; the repeat, aimed at the main
    thread, interrupts the wait. Only when the program uses no wakeup fd of its own
    (asyncio's: then not watched). A forkserver child first has the server's, which
    ``_serve_one`` removes before the process runs: ``_bootstrap`` installs it then.
    """
    if _wakeup["w"] != -1:
        return  # watching already
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:
        old = None
    if old != -1:  # the program's own (asyncio): leave it
        if old is not None:
            signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return
    _wakeup.update(r=r, w=w)
    main = threading.main_thread().ident

    def watch():
        while True:
            try:
                got = os.read(r, 64)
            except OSError:
                return
            if not got:
                return
            if signal.SIGTERM in got:
                time.sleep(0.5)
                # until the handler runs (it then ends the process, bounded); never once the
                # program has a SIGTERM handler of its own
                while signal.getsignal(signal.SIGTERM) is _on_sigterm and not _ending["terminated"]:
                    try:
                        signal.pthread_kill(main, signal.SIGTERM)
                    except OSError:  # the main thread has ended
                        return
                    time.sleep(0.5)

    _thread.start_new_thread(watch, ())


def _forget_watcher_in_child() -> None:
    """A forked child has the parent's pipe as its wakeup fd, not the watcher (threads do not
    survive a fork): its signals would reach the parent's watcher. install_sigterm makes its own."""
    if _wakeup["w"] == -1:
        return
    try:
        old = signal.set_wakeup_fd(-1)
        if old != _wakeup["w"]:
            signal.set_wakeup_fd(old)
    except ValueError:
        pass
    for fd in (_wakeup["r"], _wakeup["w"]):
        try:
            os.close(fd)
        except OSError:
            pass
    _wakeup.update(r=-1, w=-1)


os.register_at_fork(after_in_child=_forget_watcher_in_child)  # before the tracer's own fork hook


def _traced_bootstrap(original):
    def _bootstrap(self, *args, **kwargs):
        from .tracer import HUB

        if any(t._is_part for t in HUB.active):
            install_sigterm()  # a forkserver child: only now is the wakeup fd free for the watcher
        try:
            return original(self, *args, **kwargs)
        finally:
            if any(t._is_part for t in HUB.active):
                close_all()

    return functools.update_wrapper(_bootstrap, original)


def patches() -> list[tuple[object, str, object]]:
    """The tracer's hook on ``multiprocessing.process``: ``BaseProcess._bootstrap`` closes this process's
    parts before multiprocessing ends a fork or forkserver child with ``os._exit``."""
    from multiprocessing.process import BaseProcess

    return [(BaseProcess, "_bootstrap", _traced_bootstrap(BaseProcess._bootstrap))]


def reset() -> None:
    """Nothing cached (the tracer calls this on every hook module when the last tracer exits)."""


# -- end of a run: merging the parts --

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # an exited child not yet reaped is a zombie
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _part_state(path: Path, since_ns: int) -> str | None:
    """exited | running (flushed after the run ended) | lost (dead, not closed) | None (still to wait)."""
    from .mpi import _file_done

    if _file_done(path):
        return "exited"
    try:
        if os.stat(path).st_mtime_ns >= since_ns:  # the part's flusher touches it after each pass
            return "running"
    except OSError:
        return "lost"
    try:
        pid = int(path.stem)
    except ValueError:
        return "lost"
    return None if _alive(pid) else "lost"


def _part_paths(parts_dir: Path) -> list[Path]:
    """The parts in ``parts_dir`` (``<pid>.parquet`` directories or ``<pid>.jsonl`` files), by pid."""
    found = []
    for path in parts_dir.iterdir():
        stem, dot, suffix = path.name.partition(".")
        if stem.isdigit() and suffix in ("parquet", "jsonl"):
            found.append((int(stem), path))
    return [path for _, path in sorted(found)]


def wait_for_parts(parts_dir: Path, since_ns: int) -> dict[Path, str]:
    """Each part -> its state, once every live child flushed what it recorded before ``since_ns``."""
    deadline = time.monotonic() + PART_WAIT
    states: dict[Path, str] = {}
    while True:
        pending = []
        for path in _part_paths(parts_dir):
            if path not in states:
                state = _part_state(path, since_ns)
                if state is None:
                    pending.append(path)
                else:
                    states[path] = state
        if not pending or time.monotonic() > deadline:
            for path in pending:
                states[path] = "unflushed"
            return {path: states[path] for path in sorted(states, key=lambda p: int(p.name.partition(".")[0]))}


MERGING = ("the merge of the child processes' parts into this trace was interrupted: "
           "accesses of some of them may be missing")
"""The note a columnar trace carries while parts are moved into it (a process killed mid-merge leaves it)."""


def merge_parts(path: Path, parts_dir: Path, since_ns: int) -> list[str]:
    """Merge the parts in ``parts_dir`` into the trace at ``path`` (closed); returns the notes of what was missed.

    The merged trace keeps ``path``'s header, with ``processes`` (this process first)
    and ``missed`` filled in. Then removes ``parts_dir``'s shared files: the caller
    removes the directory, empty unless a child still writes into it.
    """
    from .records import ProcessInfo
    from .tracefile import TraceError, is_jsonl

    states = wait_for_parts(parts_dir, since_ns)
    missed: list[str] = []
    converted = _converted(parts_dir, missed)  # before any salvage: a killed process's converter ends first
    read = _read_jsonl_part if is_jsonl(path) else _read_columnar_part
    parts, processes, salvaged = [], [], []
    beside: dict[int, int] = {}  # pid -> its accesses converted beside it
    for out in converted:
        try:
            h, n_access, part = read(out)
        except TraceError as exc:
            missed.append(f"a process's libhdf5 calls converted beside it could not be read: {exc}")
            continue
        parts.append(part)
        beside[h.pid] = beside.get(h.pid, 0) + n_access
        missed += [f"process {h.pid}: {m}" for m in h.missed]
    for part_path, state in states.items():
        try:
            header, n_access, part = read(part_path)
        except TraceError as exc:
            missed.append(f"a child's part could not be read: {exc}")
            continue
        h = header
        parts.append(part)
        if state == "lost":
            recovered = ""
            out = parts_dir / f".salvage-{h.pid}{part_path.suffix}"
            salvaged.append(out)
            try:
                found = _salvage(out, part_path, h, part, parts_dir, read)
            except Exception as exc:  # noqa: BLE001 - a torn log must not cost the trace
                found = None
                missed.append(f"process {h.pid}: its libhdf5 calls not yet converted could not be: {exc}")
            if found is not None:
                sh, n_more, more = found
                parts.append(more)
                n_access += n_more
                missed += [f"process {h.pid}: {m}" for m in sh.missed]
                recovered = f" (but {n_more} libhdf5 access(es), converted from its interposer log)"
            missed.append(f"process {h.pid} (parent {h.ppid}) ended without closing its part: "
                          f"its accesses after its last flush are missing{recovered}")
        elif state == "unflushed":
            missed.append(f"process {h.pid} (parent {h.ppid}) was still running and did not flush within "
                          f"{PART_WAIT:g} s of the end of the run: its latest accesses may be missing")
            state = "running"
        missed += [f"process {h.pid}: {m}" for m in h.missed]
        processes.append(ProcessInfo(h.pid, h.ppid, h.argv, n_access + beside.pop(h.pid, 0), state))
    if parts:
        processes.sort(key=lambda p: p.pid)
        own_more = sum(beside.values())  # this process's (a child's without a part: none)
        if is_jsonl(path):
            _merge_jsonl(path, parts, processes, missed, own_more)
        else:
            _merge_columnar(path, parts, processes, missed, parts_dir / DATASETS_FILE, own_more)
    for part_path in [*states, *salvaged, *converted, *parts_dir.glob(f"*{CONVERTED}.lock")]:
        _remove(part_path)
    # a killed process's log directory, converted above; a running one's, as its part
    for log_dir in parts_dir.glob(f"{LOG_PREFIX}*"):
        shutil.rmtree(log_dir, ignore_errors=True)
    for name in (DATASETS_FILE, RUN_FILE):
        (parts_dir / name).unlink(missing_ok=True)
    return missed


def _converted(parts_dir: Path, missed: list[str]) -> list[Path]:
    """The outputs of the run's converters (``convert``), once each one has ended (at most PART_WAIT)."""
    deadline = time.monotonic() + PART_WAIT
    for lock_path in parts_dir.glob(f"*{CONVERTED}.lock"):
        try:
            fh = open(lock_path, "rb")
        except FileNotFoundError:  # ended meanwhile
            continue
        with fh:
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        missed.append(f"the converter {lock_path.name} was still converting at the end of the run:"
                                      " some libhdf5 calls of its process may be missing")
                        break
                    time.sleep(POLL)
    found = []
    for out in parts_dir.iterdir():
        stem, _, suffix = out.name.partition(".")
        if stem.isdigit() and suffix in (f"{CONVERTED[1:]}.parquet", f"{CONVERTED[1:]}.jsonl"):
            found.append((int(stem), out))
    return [out for _, out in sorted(found)]


def _salvage(out: Path, part_path: Path, header, part, parts_dir: Path, read):
    """What ``read`` gives of ``out``, a trace written of the libhdf5 accesses that a process killed before
    converting them left in its log directory; None when it left none.

    Converted as the process would have, its h5py calls' duplicates dropped: those calls are the accesses of its
    part (a libhdf5 call inside one of them, on the same dataset, is that call)."""
    from collections import deque

    from .interpose import LibraryCapture
    from .tracer import Tracer

    log_dir = parts_dir / f"{LOG_PREFIX}{header.pid}"
    run = RunInfo.load(parts_dir)
    if run is None or not any(log_dir.glob("h5-*.acc")):
        return None
    sink = Tracer._converter(out, str(parts_dir), run, replace(header, missed=()))
    keys = _dataset_keys(parts_dir / DATASETS_FILE)
    ds, t0, dt = _part_calls(part_path) if read is _read_jsonl_part else _part_calls(part[1])
    t0 = t0 + sink._origin
    sink._spans = deque(zip(map(keys.get, ds.tolist()), t0.tolist(), (t0 + dt).tolist()))
    capture = LibraryCapture(log_dir, None, header.pid)
    capture.poll([sink], final=True)
    sink._drain()
    sink._writer.close(tuple(capture.lost()), capture.libraries(), gather=False)
    return read(out)


def _dataset_keys(registry: Path) -> dict[int, str]:
    """The run's dataset ids -> keys (``DatasetRecord.key``), from its registry."""
    keys = {}
    try:
        lines = registry.read_bytes().split(b"\n")
    except FileNotFoundError:
        return keys
    for line in lines:
        try:
            obj = json.loads(line)
            keys[int(obj["id"])] = f"{obj['file']}::{obj['path']}"
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a killed writer
    return keys


def _part_calls(where: "Path | list[Path]"):
    """(dataset ids, t0, dt) of the accesses of a part: a JSON Lines file, or a columnar part's batch files (raw
    batches hold each call as recorded; a Parquet batch's folded runs are unrolled, their calls' times
    approximated)."""
    import numpy as np

    if isinstance(where, Path):
        from .tracefile import _read_records

        found: list = []
        _read_records(str(where), where.read_bytes(), True, found)
        return (np.array([a.dataset for a in found], np.int64), np.array([a.t_start for a in found], float),
                np.array([a.duration for a in found], float))
    from .columnar import _RAW, _parquet_file, from_table, read_raw
    from .columns import AccessColumns

    cols = AccessColumns.concat([read_raw(f) if _RAW.match(f.name)
                                 else from_table(_parquet_file(f).read_all(), str(f)).expanded() for f in where])
    return cols.ds, cols.t0, cols.dt


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _read_jsonl_part(path: Path):
    from .tracefile import load_trace

    part = load_trace(path, allow_truncated=True)
    return part.header, part.n_access, part


def _merge_jsonl(path: Path, parts, processes, missed, own_more: int) -> None:
    """JSON Lines: the whole trace is read and written again (the columnar format avoids this)."""
    from .records import ProcessInfo
    from .tracefile import load_trace, merge_traces, replace_trace, write_trace

    own = load_trace(path)
    merged = merge_traces([own, *parts])
    me = ProcessInfo(own.header.pid, own.header.ppid, own.header.argv, own.n_access + own_more, "exited")
    merged.headers = [replace(own.header, processes=(me, *processes), missed=own.header.missed + tuple(missed))]
    merged.complete = own.complete
    tmp = path.with_name(f".merging.{path.name}")  # the same suffix: the same trace format
    write_trace(merged, tmp)
    replace_trace(tmp, path)


def _read_columnar_part(path: Path):
    """(header, accesses, (records, batch files)) of a columnar part; its batches are not read (but to count the
    accesses of a part not closed)."""
    from .columnar import _RAW, batch_files, count_accesses, read_meta, read_raw

    headers, _, resizes, complete, n_end = read_meta(path, allow_truncated=True)
    files = batch_files(path)
    n_access = n_end if complete and n_end is not None else \
        count_accesses(path)[2] + sum(read_raw(f).n_access for f in files if _RAW.match(f.name))
    return headers[0], n_access, (resizes, files)


def _merge_columnar(path: Path, parts, processes, missed, registry: Path, own_more: int) -> None:
    """Move the parts' batches into the trace directory (their dataset ids, clock and rank are already the run's;
    Parquet batches as they are, the raw ones of followed processes converted) and rewrite only its records file.

    Crash safety: the records file is replaced whole (a temporary file renamed), first with every
    dataset and resize and the MERGING note, then, once every batch is in place, with the final
    count. A process killed at any point leaves a trace that loads; until the end it says the
    merge was interrupted."""
    from .columnar import META, adopt_batches, count_accesses, read_meta
    from .records import ProcessInfo
    from .tracefile import _dumps

    headers, _, resizes, _, n_end = read_meta(path, allow_truncated=False)
    own = headers[0]
    n_own = (n_end if n_end is not None else count_accesses(path)[2]) + own_more
    me = ProcessInfo(own.pid, own.ppid, own.argv, n_own, "exited")
    header = replace(own, processes=(me, *processes), missed=own.missed + tuple(missed))
    try:
        datasets = registry.read_bytes()
    except FileNotFoundError:  # no process saw a dataset
        datasets = b""
    if datasets and not datasets.endswith(b"\n"):  # a writer killed mid-line: its dataset was never used
        datasets = datasets[:datasets.rfind(b"\n") + 1]
    datasets = b"".join(line + b"\n" for line in datasets.split(b"\n") if line.startswith(b'{"t":"d"'))
    resizes = [*resizes, *(r for rs, _ in parts for r in rs)]
    total = n_own + sum(p.accesses for p in processes)

    def write_meta(h, end: dict) -> None:
        tmp = path / f".{META}.tmp"
        with open(tmp, "wb") as fh:
            fh.write((_dumps({"t": "h", **h.get_config()}) + "\n").encode())
            fh.write(datasets)
            fh.write("".join(_dumps({"t": "r", **r.get_config()}) + "\n" for r in resizes).encode())
            fh.write((_dumps({"t": "end", **end}) + "\n").encode())
        os.replace(tmp, path / META)  # a killed process leaves the old file or the new one, whole

    write_meta(replace(header, missed=header.missed + (MERGING,)), {})  # no count: batches are on their way
    adopt_batches(path, [f for _, files in parts for f in files])
    write_meta(header, {"n_access": total})


__all__ = ["ENV", "RunInfo", "SharedIds", "child_environment", "ensure_startup_hook", "merge_parts", "start_part"]
