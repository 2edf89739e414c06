"""Following the processes a traced program starts (the way coverage.py measures subprocesses).

Every Python process the program starts, at any depth, is traced into its own
*part*: ``<parts dir>/<pid>.jsonl``, whose header names its pid and parent pid.
When the run's tracer exits it merges the parts into the run's trace
(``merge_parts``) and says in the header which processes it holds and what is
known to be missed.

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
import functools
import os
import signal
import sys
import sysconfig
import threading
import time
from pathlib import Path

ENV = "IOADVISOR_FOLLOW"
"""Parts directories of the active tracers (``os.pathsep``-separated): set in a process means "trace me"."""
PTH_NAME = "ioadvisor-follow.pth"
_PTH_CODE = """\
import sys
def start():
    try:
        import instrumentation.follow as follow
    except ImportError as exc:
        return exc
    follow.start_part()
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


def start_part() -> None:
    """Trace this whole process into parts of the tracers named by the environment (from the .pth hook)."""
    dirs = [d for d in os.environ.get(ENV, "").split(os.pathsep) if d]
    if not dirs:
        return
    try:
        from .tracer import HUB, Tracer

        if any(getattr(t, "_parts_dir", None) == d for t in HUB.active for d in dirs):
            return  # already traced (a start-up hook run twice)
        for d in dirs:
            Tracer._part(d).__enter__()
        install_sigterm()
    except Exception as exc:  # noqa: BLE001 - the program must run even if it cannot be traced
        print(f"ioadvisor: process {os.getpid()} not traced: {type(exc).__name__}: {exc}", file=sys.stderr)


_ending = {"closing": False, "terminated": False}


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


def _end_by_sigterm() -> None:
    """The process still ends the way SIGTERM ends it (exit status, the parent's view)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _on_sigterm(signum, frame) -> None:
    if _ending["terminated"]:
        return  # the watcher's repeat of a SIGTERM this handler already has
    _ending["terminated"] = True
    if _ending["closing"]:
        return  # the close under way (Process._bootstrap ending) ends the process when it is done
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
    thread, interrupts the wait. Only when the program uses no wakeup fd of its own.
    """
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
        try:
            return original(self, *args, **kwargs)
        finally:
            from .tracer import HUB

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


def wait_for_parts(parts_dir: Path, since_ns: int) -> dict[Path, str]:
    """Each part file -> its state, once every live child flushed what it recorded before ``since_ns``."""
    deadline = time.monotonic() + PART_WAIT
    states: dict[Path, str] = {}
    while True:
        pending = []
        for path in sorted(parts_dir.glob("*.jsonl")):
            if path not in states:
                state = _part_state(path, since_ns)
                if state is None:
                    pending.append(path)
                else:
                    states[path] = state
        if not pending or time.monotonic() > deadline:
            for path in pending:
                states[path] = "unflushed"
            return states
        time.sleep(POLL)


def merge_parts(path: Path, parts_dir: Path, since_ns: int) -> list[str]:
    """Merge the parts in ``parts_dir`` into the trace at ``path`` (closed); returns the notes of what was missed.

    The merged trace keeps ``path``'s header, with ``processes`` (this process first)
    and ``missed`` filled in; records keep this process's rank.
    """
    from dataclasses import replace

    from .records import ProcessInfo
    from .tracefile import TraceError, load_trace, merge_traces, replace_trace, write_trace

    own = load_trace(path)
    states = wait_for_parts(parts_dir, since_ns)
    parts, processes, missed = [], [], []
    for part_path, state in states.items():
        try:
            part = load_trace(part_path, allow_truncated=True)
        except TraceError as exc:
            missed.append(f"a child's part could not be read: {exc}")
            continue
        h = part.header
        if state == "lost":
            missed.append(f"process {h.pid} (parent {h.ppid}) ended without closing its part: "
                          f"its accesses after its last flush are missing")
        elif state == "unflushed":
            missed.append(f"process {h.pid} (parent {h.ppid}) was still running and did not flush within "
                          f"{PART_WAIT:g} s of the end of the run: its latest accesses may be missing")
            state = "running"
        missed += [f"process {h.pid}: {m}" for m in h.missed]
        processes.append(ProcessInfo(h.pid, h.ppid, h.argv, part.n_access, state))
        parts.append(part)
    if not parts:
        return missed
    merged = merge_traces([own, *parts])
    if own.header.rank:
        merged.accesses = [replace(a, rank=own.header.rank) for a in merged.accesses]
        merged.resizes = [replace(r, rank=own.header.rank) for r in merged.resizes]
    me = ProcessInfo(own.header.pid, own.header.ppid, own.header.argv, own.n_access, "exited")
    processes.sort(key=lambda p: p.pid)
    merged.headers = [replace(own.header, processes=(me, *processes),
                              missed=own.header.missed + tuple(missed))]
    merged.complete = own.complete
    tmp = path.with_name(f".merging.{path.name}")  # the same suffix: the same trace format
    write_trace(merged, tmp)
    replace_trace(tmp, path)
    for part_path in states:
        part_path.unlink(missing_ok=True)
    return missed


__all__ = ["ENV", "child_environment", "ensure_startup_hook", "merge_parts", "start_part"]
