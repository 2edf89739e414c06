"""Progress of long work on a terminal: a bar per task with the work done, the elapsed time and an ETA (rich).

The commands call ``configure(quiet)`` once; library code opens ``task(...)`` and
advances it, or advances the innermost open task through ``current()`` (the
candidate search does not know who asked). Nothing is drawn unless both stdout
and stderr are terminals and neither ``--quiet`` nor ``IOADVISOR_QUIET`` is set:
then every call here is a no-op, and the API (``advisor.advise``) stays silent.

``compiling()`` watches numba's compile events: the first model run after an
install compiles the cost model's kernels (tens of seconds; numba caches them on
disk for later runs), shown as its own bar with that reason from the first kernel.
"""
from __future__ import annotations

import contextlib
import sys
import threading

from instrumentation import settings

_state = {"enabled": False, "progress": None, "depth": 0}
_stack: list = []
_lock = threading.RLock()

DESCRIPTION_WIDTH = 62
"""Characters of a bar's description (longer ones end in an ellipsis)."""
COMPILE_REASON = "first run: compiling the cost model (numba; cached for later runs)"


def _tty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def configure(quiet: bool = False) -> bool:
    """Show progress from now on when on a terminal and not ``quiet``; returns whether it is shown."""
    _state["enabled"] = (not quiet and not settings.quiet()
                         and _tty(sys.stdout) and _tty(sys.stderr))
    return _state["enabled"]


def enabled() -> bool:
    return _state["enabled"]


class _NoTask:
    """What ``task`` gives when progress is not shown."""

    def advance(self, n: float = 1.0) -> None:
        pass

    def add_total(self, n: float) -> None:
        pass

    def set(self, done: float, total: float) -> None:
        pass

    def describe(self, text: str) -> None:
        pass


NO_TASK = _NoTask()


class Task:
    """One bar of the shared display."""

    def __init__(self, progress, task_id, description: str):
        self._progress, self._id, self._description = progress, task_id, description

    def advance(self, n: float = 1.0) -> None:
        self._progress.advance(self._id, n)

    def add_total(self, n: float) -> None:
        """More work found (a search learns its size stage by stage)."""
        with _lock:
            t = self._progress.tasks[self._progress.task_ids.index(self._id)]
            self._progress.update(self._id, total=(t.total or 0) + n)

    def set(self, done: float, total: float) -> None:
        """``done`` of ``total`` (a step callback's ``(done, total)``)."""
        self._progress.update(self._id, completed=done, total=total)

    def describe(self, text: str) -> None:
        """What is being done now, after the task's name."""
        self._progress.update(self._id, description=f"{self._description}: {text}" if text else self._description)


def _display():
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    from rich.table import Column

    text = Column(width=DESCRIPTION_WIDTH, no_wrap=True, overflow="ellipsis")  # the numbers keep their place
    return Progress(SpinnerColumn(), TextColumn("{task.description}", table_column=text), BarColumn(bar_width=24),
                    MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                    console=Console(file=sys.stderr), transient=True, refresh_per_second=5)


@contextlib.contextmanager
def task(description: str, total: float | None = None):
    """A bar for ``description`` (``total`` units of work, or unknown: ``add_total`` later) while the block runs.
    Nested tasks share one display, one line each; it disappears when the outermost ends."""
    if not _state["enabled"]:
        yield NO_TASK
        return
    with _lock:
        if _state["progress"] is None:
            _state["progress"] = _display()
            _state["progress"].start()
        progress = _state["progress"]
        _state["depth"] += 1
        t = Task(progress, progress.add_task(description, total=total), description)
        _stack.append(t)
    try:
        yield t
    finally:
        with _lock:
            _stack.remove(t)
            # a task shorter than the refresh period (a fast search) is still drawn once, finished, before it goes
            progress.refresh()
            progress.remove_task(t._id)
            _state["depth"] -= 1
            if not _state["depth"]:
                progress.stop()
                _state["progress"] = None


def current():
    """The innermost open task (``NO_TASK`` when none, or progress is not shown)."""
    with _lock:
        return _stack[-1] if _stack else NO_TASK


@contextlib.contextmanager
def compiling():
    """While the block runs, numba compiles of the cost model's kernels show as a bar with their reason, from the
    block's start (nothing when they are all cached or progress is not shown)."""
    if not _state["enabled"]:
        yield
        return
    from iomodel import kernels, uncached_kernels

    todo = uncached_kernels()
    if not todo:
        yield
        return
    import numba.core.event as ev

    names = {id(d): d.py_func.__name__ for d in todo}
    stack = contextlib.ExitStack()
    bar: dict = {}

    def show() -> None:
        with _lock:
            if "task" not in bar:
                bar["task"] = stack.enter_context(task(COMPILE_REASON, total=len(todo)))

    if len(todo) > len(kernels()) / 2:  # a fresh install: the reason from the start, before the wait
        show()

    class Listener(ev.Listener):  # else (a kernel some runs never use) from the first compile, if any
        def on_start(self, event):
            d = event.data.get("dispatcher")
            if d is not None and id(d) in names:
                show()
                bar["task"].describe(names[id(d)])

        def on_end(self, event):
            d = event.data.get("dispatcher")
            if d is not None and names.pop(id(d), None) is not None and "task" in bar:
                bar["task"].advance()
                bar["task"].describe("")

    with stack, ev.install_listener("numba:compile", Listener()):
        yield


__all__ = ["COMPILE_REASON", "NO_TASK", "Task", "compiling", "configure", "current", "enabled", "task"]
