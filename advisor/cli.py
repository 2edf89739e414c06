"""The ``ioadvisor`` command: a thin layer over the Python API.

Each subcommand lives in ``advisor/commands/<name>.py`` with ``register(sub)``
(adds its argparse parser, setting ``func``); ``func(args)`` returns an exit code.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from instrumentation import settings
from instrumentation.errors import IoadvisorError

COMMANDS = {
    "run": "trace an unmodified script (python app.py ...), also under mpiexec",
    "link-flags": "print the link flags that make a statically linked HDF5 program traceable",
    "trace": "show or merge trace files",
    "demo": "trace a small bundled h5py program, report what it did, advise a layout",
    "calibrate": "measure this machine: fit the I/O (and compression) cost coefficients",
    "predict": "predict HDF5/Zarr time of a traced access pattern per layout",
    "advise": "recommend a layout (library, chunks, cache/shards, codec) from a trace",
    "verify": "replay the trace for real in the current and the top-K recommended layouts",
    "compression": "predict compression ratio/throughput per compressor and error bound",
    "import": "turn another tool's log into a (synthetic) trace: darshan",
    "report": "report on a Darshan log (any log): files, findings with seconds at stake, HDF5 advice",
    "triage": "rank a Darshan archive's applications by recoverable I/O time (dask, incremental)",
    "apply": "copy the traced file into the advised layout, verified, resumable",
    "compare": "run a program on the original data and on the rewritten copy: measured vs claimed speed-up",
}
"""Subcommand name -> one-line help. The module advisor.commands.<name> is imported only
when that command runs: some pull in numba or the codecs, and every MPI rank pays start-up."""
MODULES = {"import": "import_", "link-flags": "link_flags"}
"""Command names that are Python keywords or hold a dash -> their module under advisor.commands."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ioadvisor")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


class _VersionAction(argparse.Action):
    """``--version``: the installed version is looked up when asked for (importlib.metadata costs tens of ms at
    every start of ``ioadvisor run``: benchmarks/speed/tracing_overhead.py, fixed cost)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _one_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioadvisor",
        description="Trace h5py/zarr access, predict HDF5 vs Zarr cost, recommend a layout.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if selected in COMMANDS:  # the others' parsers only list them in the top-level help (each costs a traced
        # run's start about 0.3 ms: benchmarks/speed/tracing_overhead.py, fixed cost)
        importlib.import_module(f"advisor.commands.{MODULES.get(selected, selected)}").register(sub)
        return parser
    for name, help_text in COMMANDS.items():
        sub.add_parser(name, help=help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected if selected in COMMANDS else None)
    args = parser.parse_args(argv)
    from advisor import progress

    progress.configure(getattr(args, "quiet", True))  # commands without --quiet draw nothing (run: the program's)
    return guarded(args.command, lambda: args.func(args))


def guarded(command: str, func) -> int:
    """``func()``'s exit code, errors handled as the CLI handles them (also advisor/entry.py's, for ``run``)."""
    try:
        return int(func() or 0)
    except BrokenPipeError:
        # `ioadvisor trace show T | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0
    except IoadvisorError as exc:
        # bad input (trace, layout, profile, path, option) and refused overwrites (OutputExistsError) are one
        # line; IOADVISOR_DEBUG=1 shows the traceback. Anything else is a bug and keeps its traceback.
        if settings.debug():
            raise
        print(f"ioadvisor {command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
