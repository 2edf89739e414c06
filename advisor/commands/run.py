"""``ioadvisor run [-o TRACE] -- [python] script.py args...``: trace an unmodified program.

Like ``python -m cProfile``, a Python program runs in this process as
``__main__`` (``runpy``), with its own ``sys.argv`` and ``sys.path[0]``, inside
``advisor.trace(TRACE)``; this process first re-executes itself with the
libhdf5 interposer preloaded (instrumentation/interpose.py), so that HDF5 calls
below Python (netCDF4, PyTables) are seen too. Any other program (a C, C++ or
Fortran executable, a shell script) runs as a child process with the
interposer preloaded. Its exit code and uncaught exception come out as they
would without tracing, and the trace is closed and kept in every case. Under
``mpiexec`` each rank writes ``TRACE`` with ``.rankNNNN`` before the suffix
and rank 0 merges them into ``TRACE`` (for a child program, the ranks agree
through their trace files: the MPI job is the child's, never this process's).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import types
from collections import namedtuple
from pathlib import Path

from instrumentation import preload
from instrumentation.nativestart import DEFAULT_TRACE, is_python_file, spawn, wait
from instrumentation.tracedir import META, PART, PARTS
from instrumentation.errors import InputError

_PYTHON = re.compile(r"python[0-9.]*$")
_RUNNER_MODULES = {__name__, "runpy"}


class Program(namedtuple("Program", "target args module unbuffered native code", defaults=(False,) * 4)):
    """What to run: a script path, a module name (``-m``) or Python code (``-c``), and its arguments.

    Immutable; a named tuple, not a dataclass, and this module's other imports wait for their use: the command's
    first process only re-executes itself with the interposer preloaded (``_preload_and_restart``), and what it
    imports before is every traced Python run's start-up time (benchmarks/speed/tracing_overhead.py, fixed cost)."""

    __slots__ = ()

    @classmethod
    def parse(cls, command: list[str]) -> "Program":
        """From ``[python [-u] [-m|-c] ]target args...``; ValueError names what is not supported."""
        cmd = list(command)
        if cmd and cmd[0] == "--":
            cmd.pop(0)
        if not cmd:
            raise InputError("no program given: use ioadvisor run [-o TRACE] -- python script.py args...")
        unbuffered = False
        if _PYTHON.match(os.path.basename(cmd[0])):
            cmd.pop(0)
            while cmd and cmd[0] == "-u":
                unbuffered = True
                cmd.pop(0)
            if cmd and cmd[0] == "-m":
                if len(cmd) < 2:
                    raise InputError("python -m needs a module name")
                return cls(cmd[1], tuple(cmd[2:]), module=True, unbuffered=unbuffered)
            if cmd and cmd[0] == "-c":
                if len(cmd) < 2:
                    raise InputError("python -c needs the code to run")
                return cls(cmd[1], tuple(cmd[2:]), unbuffered=unbuffered, code=True)
            if cmd and cmd[0].startswith("-"):
                raise InputError(f"python option {cmd[0]} is not supported here: only -m, -c and -u")
            if not cmd:
                raise InputError("python needs a script to run")
            target = cmd[0]
            if not os.path.exists(target):
                raise InputError(f"{target}: no such script")
            return cls(target, tuple(cmd[1:]), unbuffered=unbuffered)
        target = cmd[0]
        if os.path.exists(target):
            path = target
        else:
            import shutil

            path = shutil.which(target)
        if path is None:
            raise InputError(f"{target}: no such program or script")
        native = not is_python_file(path)
        return cls(path if native else target, tuple(cmd[1:]), native=native)

    def execute(self, started=None) -> None:
        """Run as ``__main__`` with python's sys.argv / sys.path[0]; restores both afterwards.

        A native program runs as a child (``started()`` is called once it runs); its exit status comes back as
        SystemExit (128 + N when signal N ended it, as shells report it).
        """
        if self.native:
            exit_with(wait(spawn([self.target, *self.args]), started))
            return
        import runpy

        saved_argv, saved_path0 = sys.argv[:], sys.path[0]
        if self.unbuffered:
            sys.stdout.reconfigure(write_through=True)
            sys.stderr.reconfigure(write_through=True)
        try:
            if self.code:
                sys.argv[:] = ["-c", *self.args]
                sys.path[0] = ""  # as python -c: the current directory
                _run_code(self.target)
            elif self.module:
                sys.argv[:] = [self.target, *self.args]  # runpy replaces argv[0] with the module's file
                sys.path[0] = os.getcwd()
                runpy.run_module(self.target, run_name="__main__", alter_sys=True)
            else:
                sys.argv[:] = [self.target, *self.args]
                sys.path[0] = os.path.dirname(os.path.abspath(self.target))
                runpy.run_path(os.path.abspath(self.target), run_name="__main__")  # python's absolute __file__
        finally:
            sys.argv[:] = saved_argv
            sys.path[0] = saved_path0


def _run_code(code: str) -> None:
    """Run ``code`` as ``python -c`` runs it: in a fresh ``__main__`` module, named ``<string>``."""
    main = types.ModuleType("__main__")
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<string>", "exec"), vars(main))
    finally:
        sys.modules["__main__"] = saved


def _preload_and_restart(args) -> None:
    """Start this command again with the libhdf5 interposer preloaded, when it can be and is not yet.

    Only when this process is the command itself (not ``cli.main`` called from other code): the
    re-executed process is the same command, pid and MPI rank, with LD_PRELOAD set.
    """
    if preload.library() is None or preload.preloaded() or not _is_the_command(args) or not sys.orig_argv:
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = preload.child_environment("", env)["LD_PRELOAD"]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def reach_static_hdf5(program: Program, tracer) -> None:
    """A native program with libhdf5 linked in statically and without the link-time wrapper: its calls are
    reached through the VOL connector where it loads (HDF5 >= 1.14), else they are out of reach and the
    trace says so, never "complete" (instrumentation/linkage.py)."""
    if program.native:
        from instrumentation.linkage import reach

        env, note = reach(program.target)
        os.environ.update(env)  # the program runs as a child: it inherits them
        if note is not None:
            tracer.missed.append(note)


def exit_with(status: int) -> None:
    """A native program's exit code (``nativestart.wait``'s) as SystemExit, 128 + N when signal N ended it, as
    shells report it; nothing for 0."""
    if status:
        raise SystemExit(128 - status if status < 0 else status)


def exit_status(exc: BaseException | None) -> int:
    """The exit status python itself would give for this ending; prints what python would print."""
    if exc is None:
        return 0
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_globals.get("__name__") in _RUNNER_MODULES:
        tb = tb.tb_next  # python's own traceback starts at the program's frame
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)  # the hook prints exc.__traceback__
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def summary_line(tracer) -> str:
    """``ioadvisor: trace PATH: N datasets, M accesses (R reads, W writes), P ranks, Q processes``.

    Counted by scanning lines or reading two columns, not by loading records: the trace may hold
    millions of accesses.
    """
    path = Path(tracer.path)
    counts = getattr(tracer, "pending_counts", None)
    if counts is not None:  # a native run's logs sealed into the trace, unconverted: counted from them
        return (f"ioadvisor: trace {path}: {counts.datasets} datasets, {counts.accesses} accesses "
                f"({counts.reads} reads, {counts.accesses - counts.reads} writes)")
    if not path.exists() and tracer.size > 1:
        from instrumentation.mpi import rank_path

        own = rank_path(path, tracer.rank, tracer.size)
        return (f"ioadvisor: no merged trace; per-rank traces like {own} are kept "
                f"(merge them: ioadvisor trace merge -o {path} {path.stem}.rank*{path.suffix})")
    if path.is_dir() and any(PART.match(f.name) or PARTS.match(f.name) for f in path.iterdir()):
        from instrumentation.columnar import count_accesses

        head, n_ds, n_acc, n_read = count_accesses(path)
    else:  # JSON Lines, or a trace directory with no access (its records file: no numpy, no Arrow)
        import json

        n_acc = n_read = 0
        ids = set()  # an id's record may come twice (completed at the end: instrumentation/chunklisting.py)
        with open(path / META if path.is_dir() else path, "rb") as fh:  # each line starts with its type: {"t":"a",...
            head = json.loads(fh.readline() or b"{}")
            for line in fh:
                if line.startswith(b'{"t":"a"'):
                    n_acc += 1
                    n_read += b'"op":"read"' in line
                elif line.startswith(b'{"t":"d"'):
                    ids.add(line.split(b",", 2)[1])  # b'"id":N'
        n_ds = len(ids)
    ranks = f", {head['size']} ranks" if head.get("size", 1) > 1 else ""
    procs = f", {len(head['processes'])} processes" if len(head.get("processes") or ()) > 1 else ""
    return (f"ioadvisor: trace {path}: {n_ds} datasets, {n_acc} accesses "
            f"({n_read} reads, {n_acc - n_read} writes){ranks}{procs}")


def register(sub) -> None:
    p = sub.add_parser(
        "run",
        help="trace an unmodified program: Python, or one linked with libhdf5 (also under mpiexec)",
        description="Trace an unmodified program, like python -m cProfile: a Python script, or any program "
                    "whose HDF5 calls go through a shared libhdf5 (C, C++, Fortran); under mpiexec each rank "
                    "writes TRACE with .rankNNNN before the suffix and rank 0 merges them into TRACE.",
        usage="ioadvisor run [-o TRACE] [--force] [--substitute SRC=DEST] -- [python [-m]] script.py args... "
              "| ./program args...",
    )
    p.add_argument("-o", "--output", default=DEFAULT_TRACE, metavar="TRACE",
                   help=f"trace file to write (default ./{DEFAULT_TRACE}); per-rank files under MPI")
    p.add_argument("--force", action="store_true",
                   help="replace an existing TRACE (or rank part); without it the run refuses before starting")
    p.add_argument("--substitute", action="append", default=[], metavar="SRC=DEST",
                   help="serve the program's opens of SRC from DEST (h5py, zarr, netCDF4; repeatable; e.g. a copy "
                        "written by ioadvisor apply)")
    # not "command": the CLI's own subcommand name lives there (error messages use it)
    p.add_argument("program", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    p.set_defaults(func=run)


def _tracer(args, program: Program):
    """``advisor.trace``, or for a serial program that is not Python the light launcher's tracer, which imports
    numpy and the converters only if the program records something (instrumentation/launch.py)."""
    if program.native:
        from instrumentation.launch import NativeRun

        if NativeRun.possible():
            return NativeRun(args.output, overwrite=args.force)
    _preload_and_restart(args)  # this process runs the Python program: libhdf5 below it is seen too
    import advisor
    from instrumentation.mpi import FileSync

    return advisor.trace(args.output, overwrite=args.force, comm=FileSync() if program.native else None)


def run(args) -> int:
    program = Program.parse(args.program)
    if args.substitute:
        from advisor.apply.compare import parse_substitutions, substitute_here

        substitute_here(parse_substitutions(args.substitute))

    def execute(tracer) -> None:
        reach_static_hdf5(program, tracer)
        program.execute(getattr(tracer, "program_started", None))

    return traced(lambda: _tracer(args, program), execute, program.native and _is_the_command(args))


def traced(open_tracer, execute, the_command: bool) -> int:
    """``execute(tracer)`` inside the tracer ``open_tracer()`` gives, the program's ending passed through it; the
    exit status python would give, with the trace's summary line. ``the_command``: this process is ``ioadvisor
    run`` of a native program (also advisor/entry.py's, started before the tracer's import): it ends here."""
    ending: BaseException | None = None
    tracer = None
    try:
        with open_tracer() as tracer:
            try:
                execute(tracer)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    raise
                ending = exc  # a clean exit: the trace finishes normally (MPI merge included)
    except BaseException as exc:
        if tracer is None:  # the trace itself could not start: an ioadvisor error, not the program's
            raise
        ending = exc  # the program's own failure, passed through the tracer so it can tell
    finally:
        sys.stdout.flush()
    status = exit_status(ending)
    if tracer.rank == 0:
        print(summary_line(tracer), file=sys.stderr)
    if the_command and hasattr(tracer, "program_started"):
        _leave(status)
    return status


def _is_the_command(args) -> bool:
    """This process is ``ioadvisor run`` itself (not ``cli.main`` called from other code)."""
    argv = sys.argv[1:]
    return "run" in argv and argv[len(argv) - len(args.program):] == args.program


def _leave(status: int) -> None:
    """End the command once a native program's trace is whole: the program ran in its own process, so nothing of
    it is in this interpreter, whose teardown (numpy's and Arrow's modules, where the program recorded something)
    cost about as much as the run's exit itself (benchmarks/speed/tracing_overhead.py, the 20,000-box C program)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that left, a stream closed: as python's own exit would
            pass
    os._exit(status & 0xFF)  # what sys.exit(status) gives the parent
