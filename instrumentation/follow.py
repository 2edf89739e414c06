"""Following the processes a traced program starts (the way coverage.py measures subprocesses).

Every Python process the program starts, at any depth, is traced into its own
*part*: ``<parts dir>/<pid>.parquet`` (columnar, whatever format the run's trace is asked in), whose header
names its pid and parent pid. When the run's tracer
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
  first trace, ``startup.ensure_startup_hook``) calls ``start_part()`` in any Python
  process that has that variable. Without the variable the hook does nothing.
- **A forked child** (multiprocessing fork, DataLoader workers, a bare
  ``os.fork``): ``os.register_at_fork`` moves it off its parent's tracers, whose
  queues and files it inherited, onto parts of its own (``_after_fork_in_child``).

A new interpreter's part starts idle (instrumentation/idlepart.py: its header, written with the standard
library) and becomes the tracer's part when the process imports numpy or a library the tracer hooks: a process
that touches no array pays no tracer import. A part is closed when its process exits (instrumentation/sigterm.py: atexit, the end of a multiprocessing
``Process._bootstrap``, SIGTERM). The run's tracer merges the parts at its exit (instrumentation/parts.py).
The pieces live in their own modules: the run's shared clock and ids (runinfo.py), the parts directory's names
(partsdir.py), the start-up hook (startup.py), idle parts (idlepart.py), SIGTERM (sigterm.py), the merge
(parts.py); this module starts a
process's part and patches multiprocessing, and names the public parts of the others.
"""
from __future__ import annotations

import functools
import os
import sys

from . import settings
from .partsdir import CONVERTED, DATASETS_FILE, ENV, LOG_PREFIX, RUN_FILE, child_environment
from .sigterm import close_all, install_sigterm, sigterm_deferred, terminating

_LAZY = {"MERGING": ".parts", "PART_WAIT": ".parts", "merge_parts": ".parts", "wait_for_parts": ".parts",
         "RunInfo": ".runinfo", "SharedIds": ".runinfo", "PTH_LINE": ".startup", "PTH_NAME": ".startup",
         "ensure_startup_hook": ".startup"}
"""Names of the other modules, imported at first use (PEP 562): every followed process imports this module at its
start-up, and needs none of them until it records (benchmarks/speed/tracing_overhead.py, per followed child)."""


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_LAZY[name], __package__), name)
    globals()[name] = value
    return value


HELPERS = ("from multiprocessing.resource_tracker import main",)
"""``python -c`` commands of helper processes that never touch an array and outlive the program that starts them:
not followed. multiprocessing's resource tracker (spawn and forkserver) ends only when the program's exit closes
its pipe, so its part came after the run's merge: the parts directory was left behind with it, and the trace
said its children's parts were left unmerged."""


def _helper() -> bool:
    return any(arg.startswith(HELPERS) for arg in sys.orig_argv[1:])  # Python >= 3.10: the -c text too


def start_part() -> None:
    """Trace this whole process into parts of the tracers named by the environment (from the .pth hook)."""
    dirs = settings.follow_dirs()
    if not dirs or _helper():
        return
    from . import idlepart

    try:
        if idlepart.start(dirs):  # the tracer's part once the process imports an array library
            return
    except Exception as exc:  # noqa: BLE001 - the program must run even if it cannot be traced
        print(f"ioadvisor: process {os.getpid()} not traced: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    from .runinfo import RunInfo
    from .tracer import HUB, Tracer  # an ImportError reaches the start-up hook: numpy may be in a later site dir

    try:
        if any(t.parts_dir == d for t in HUB.active for d in dirs):
            return  # already traced (a start-up hook run twice)
        runs = [(d, RunInfo.load(d)) for d in dirs]
        with sigterm_deferred():
            for d, run in runs:
                if run is not None:  # else that run has ended: this process is not part of it
                    Tracer.part(d, run).__enter__()
            install_sigterm()
    except Exception as exc:  # noqa: BLE001 - the program must run even if it cannot be traced
        print(f"ioadvisor: process {os.getpid()} not traced: {type(exc).__name__}: {exc}", file=sys.stderr)


def _traced_bootstrap(original):
    def _bootstrap(self, *args, **kwargs):
        from .tracer import HUB

        if any(t.is_part for t in HUB.active):
            install_sigterm()  # a forkserver child: only now is the wakeup fd free for the watcher
        try:
            return original(self, *args, **kwargs)
        finally:
            if any(t.is_part for t in HUB.active):
                close_all()

    return functools.update_wrapper(_bootstrap, original)


def patches() -> list[tuple[object, str, object]]:
    """The tracer's hook on ``multiprocessing.process``: ``BaseProcess._bootstrap`` closes this process's
    parts before multiprocessing ends a fork or forkserver child with ``os._exit``."""
    from multiprocessing.process import BaseProcess

    return [(BaseProcess, "_bootstrap", _traced_bootstrap(BaseProcess._bootstrap))]


def reset() -> None:
    """Nothing cached (the tracer calls this on every hook module when the last tracer exits)."""


__all__ = ["CONVERTED", "DATASETS_FILE", "ENV", "HELPERS", "LOG_PREFIX", "MERGING", "PART_WAIT", "PTH_LINE", "PTH_NAME",
           "RUN_FILE", "RunInfo", "SharedIds", "child_environment", "close_all", "ensure_startup_hook",
           "install_sigterm", "merge_parts", "patches", "sigterm_deferred", "start_part", "terminating",
           "wait_for_parts"]
