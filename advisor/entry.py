"""The ``ioadvisor`` command's Python entry point (the ``ioadvisor-python`` script, ``python -m advisor``).

Where it was built, the ``ioadvisor`` command is a native front end (instrumentation/frontend/ioadvisor.c) that
does what ``run_native`` does below before any interpreter starts, for a program in a virtual environment's
install, then execs this entry point with the program started (``_from_front_end``); every other command line
it passes here unchanged.

``ioadvisor run [-o TRACE] [--force] [--] PROGRAM ARGS...`` of a program that is not Python, serial, starts the
program before anything else is imported: the parser (argparse), the run command and ``NativeRun`` (pathlib, re,
json, subprocess, threading) wait until it runs, beside it, and then the run goes on as advisor/commands/run.py's
(``traced``). What a native program's start waits for is then the interpreter and instrumentation/nativestart.py
(benchmarks/speed/tracing_overhead.py: the fixed cost and the 20,000-box C program). Every other command line,
and a run this path does not decide alone (another option, a Python program, a statically linked libhdf5, an
MPI launcher, an output that is not surely an earlier trace, a program that cannot be started), goes to
advisor/cli.py, which parses, refuses or reports it as always.
"""
from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
        resumed = _from_front_end()
        if resumed is not None:
            return _traced(argv, *resumed)
    else:
        argv = list(argv)
    status = run_native(argv)
    if status is None:
        from .cli import main as cli_main

        status = cli_main(argv)
    return status


def run_native(argv: list[str]) -> int | None:
    """``ioadvisor run`` of a native program, started at once (module docstring); None where advisor/cli.py
    decides, nothing done."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    output, force, command = parsed
    from instrumentation import mpi, preload
    from instrumentation import nativestart as ns
    from instrumentation.errors import OutputExistsError

    target = command[0]
    name = os.path.basename(target)
    if mpi.launched() or preload.library_file() is None or (name.startswith("python") and
                                                            not name[6:].strip("0123456789.")):
        return None
    path = target if os.path.exists(target) else None if os.sep in target else ns.which(target)
    if path is None or ns.is_python_file(path) or ns.links_hdf5_in(path):
        return None
    try:
        start = ns.NativeStart(os.path.join(os.getcwd(), output), force)
    except OutputExistsError:
        return None  # the CLI says so
    if not start.clear_trace_dir():
        return None
    start.open()
    try:
        pid = ns.spawn([path, *command[1:]])
    except OSError:
        start.abandon()  # the CLI starts it again and reports what fails as the run command does
        return None
    return _traced(argv, start, pid)


def _traced(argv: list[str], start, pid: int) -> int:
    """The run of the program ``pid``, started by ``start`` (nativestart.NativeStart), until its end."""
    from instrumentation import nativestart as ns
    from instrumentation.launch import NativeRun

    from .cli import guarded
    from .commands.run import exit_with, traced

    def execute(_):
        status = ns.wait(pid)
        start.program_ended()
        exit_with(status)

    return guarded("run", lambda: traced(lambda: NativeRun.started(start), execute, argv == sys.argv[1:]))


def _from_front_end():
    """(NativeStart, pid) of a program the native front end (instrumentation/frontend/ioadvisor.c) started before
    it became this process, else None; this process's ``sys.argv[0]`` and environment made the command's."""
    from instrumentation import settings  # a leaf (os only): nativestart waits for a run the front end started

    if settings.front_argv0() is None:
        return None
    from instrumentation import nativestart as ns

    sys.argv[0] = os.environ.pop(ns.FRONT_ARGV0)
    state = os.environ.pop(ns.FRONT_STARTED, None)
    return None if state is None else ns.NativeStart.resumed(state)


def _parse(argv: list[str]) -> tuple[str, bool, list[str]] | None:
    """(TRACE, --force, the program's command) of ``run [-o TRACE | --output[=]TRACE] [--force] [--] PROGRAM
    ...``, as the run command's parser reads it; None for anything else."""
    from instrumentation.nativestart import DEFAULT_TRACE

    if not argv or argv[0] != "run":
        return None
    output, force, i = DEFAULT_TRACE, False, 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg == "--force":
            force = True
        elif arg in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] and not argv[i + 1].startswith("-"):
            output = argv[i + 1]
            i += 1
        elif arg.startswith("--output=") and len(arg) > len("--output="):
            output = arg[len("--output="):]
        elif arg.startswith("-"):
            return None
        else:
            break
        i += 1
    return (output, force, argv[i:]) if i < len(argv) else None


__all__ = ["main", "run_native"]
