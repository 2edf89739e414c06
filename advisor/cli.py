"""The ``ioadvisor`` command: a thin layer over the Python API.

Each subcommand lives in ``advisor/commands/<name>.py`` with ``register(sub)``
(adds its argparse parser, setting ``func``) and returns an exit code.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = ["run", "trace", "demo", "calibrate", "predict"]
"""Subcommand modules under advisor.commands, in help order."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ioadvisor",
        description="Trace h5py/zarr access, predict HDF5 vs Zarr cost, recommend a layout.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"advisor.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, KeyError) as exc:
        # user-facing errors (bad trace, layout, path) are one line; IOADVISOR_DEBUG=1 shows the traceback
        if os.environ.get("IOADVISOR_DEBUG"):
            raise
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"ioadvisor {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
