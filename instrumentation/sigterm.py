"""How a traced child process ends on SIGTERM (``Pool.terminate``): it closes its parts first, bounded.

A part is closed when its process exits: at interpreter exit (atexit), at the
end of a multiprocessing ``Process._bootstrap`` (fork and forkserver children
leave with ``os._exit``, which skips atexit), and on SIGTERM (``Pool.terminate``)
when the program has not set a handler of its own. The SIGTERM close runs in a
thread of its own and the process ends at most SIGTERM_WAIT seconds later
whatever happened to it: the handler interrupts code that may hold the locks the
close needs (the tracer's own, mid-flush), and a process that outlives SIGTERM
hangs the pool that waits for it.

The parts to close are the hub's tracers (``tracer.HUB.active``), which the hub names here when it loads, and a
process's idle parts (instrumentation/idlepart.py): each registers with ``close_with``; this module imports
nothing of theirs. The close imports nothing either: it may run while the thread SIGTERM interrupted holds an
import lock (a pool worker importing h5py when ``Pool.terminate`` comes), which would stop it until SIGTERM_WAIT.
"""
from __future__ import annotations

import _thread
import atexit
import os
import signal
import threading
import time
from collections.abc import Callable

from . import settings

SIGTERM_WAIT = settings.sigterm_wait()
"""Longest a child killed by SIGTERM spends closing its part before it ends (the part is then lost, and said so)."""
_closers: list[Callable[[], tuple]] = []


def close_with(active: Callable[[], tuple]) -> None:
    """Also close ``active()`` (objects with ``__exit__``, innermost last) when this process ends: the hub's tracers,
    the idle parts. Once per callable."""
    if active not in _closers:
        _closers.append(active)


def _open_parts() -> tuple:
    return tuple(part for active in _closers for part in active())


_at_exit: list[bool] = []


def close_at_exit() -> None:
    """Once per interpreter (a forked child inherits it): ``close_all`` at interpreter exit."""
    if not _at_exit:
        _at_exit.append(True)
        atexit.register(close_all)


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
        if self._own:
            _ending["starting"] = False
            if _ending["terminated"]:
                _terminate()
            elif not _open_parts():  # nothing to close: the program's own disposition
                signal.signal(signal.SIGTERM, self._before)
        return False


_ending = {"closing": False, "terminated": False, "starting": False}


def _close_tracers() -> None:
    if _ending["closing"]:
        return
    _ending["closing"] = True
    try:
        for tr in _open_parts()[::-1]:
            try:
                tr.__exit__(None, None, None)
            except Exception as exc:  # noqa: BLE001 - the process ends: the part says why it is not whole
                _note_failed_close(tr, exc)
    finally:
        _ending["closing"] = False


def _note_failed_close(part, exc: Exception) -> None:
    """A part whose close raised: its process ends anyway; the note goes into the part where it can still be
    written (its ``note_failed_close``), and to stderr: never silently."""
    why = f"closing its part at the end of the process failed: {type(exc).__name__}: {exc}"
    try:
        part.note_failed_close(why)
    except Exception:  # noqa: BLE001 - the part cannot take it: stderr says it
        pass
    try:
        os.write(2, f"ioadvisor: process {os.getpid()}: {why}\n".encode(errors="replace"))
    except OSError:
        pass


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


_registered = []


def register_fork_handler() -> None:
    """Once per process, at the first tracer's start (before the tracer's own fork hook): a forked child
    forgets its parent's watcher."""
    if not _registered:
        _registered.append(True)
        os.register_at_fork(after_in_child=_forget_watcher_in_child)


__all__ = ["SIGTERM_WAIT", "close_all", "close_at_exit", "close_with", "install_sigterm", "register_fork_handler", "sigterm_deferred",
           "terminating"]
