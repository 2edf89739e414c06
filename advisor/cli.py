"""The ``ioadvisor`` command: a thin layer over the Python API.

Each subcommand lives in ``advisor/commands/<name>.py`` with ``register(sub)``
(adds its argparse parser, setting ``func``); ``func(args)`` returns an exit code.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = {
    "run": "trace an unmodified script (python app.py ...), also under mpiexec",
    "trace": "show or merge trace files",
    "demo": "trace a small bundled h5py program, report what it did, advise a layout",
    "calibrate": "measure this machine: fit the I/O (and compression) cost coefficients",
    "predict": "predict HDF5/Zarr time of a traced access pattern per layout",
    "advise": "recommend a layout (library, chunks, cache/shards, codec) from a trace",
    "verify": "replay the trace for real in the current and the top-K recommended layouts",
    "compression": "predict compression ratio/throughput per compressor and error bound",
    "import": "turn another tool's log into a (synthetic) trace: darshan",
}
"""Subcommand name -> one-line help. The module advisor.commands.<name> is imported only
when that command runs: some pull in numba or the codecs, and every MPI rank pays start-up."""
MODULES = {"import": "import_"}
"""Command names that are Python keywords -> their module under advisor.commands."""


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioadvisor",
        description="Trace h5py/zarr access, predict HDF5 vs Zarr cost, recommend a layout.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if name == selected:
            importlib.import_module(f"advisor.commands.{MODULES.get(name, name)}").register(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected if selected in COMMANDS else None)
    args = parser.parse_args(argv)
    from advisor import progress

    progress.configure(getattr(args, "quiet", True))  # commands without --quiet draw nothing (run: the program's)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # `ioadvisor trace show T | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0
    except (ValueError, OSError, KeyError) as exc:
        # user-facing errors (bad trace, layout, path) are one line; IOADVISOR_DEBUG=1 shows the traceback
        if os.environ.get("IOADVISOR_DEBUG"):
            raise
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"ioadvisor {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
