"""The files of a run's parts directory (instrumentation/follow.py): their names, and reading its dataset registry.

A leaf module: the tracer, the interposer's capture, the converter and the merge of parts all need these names,
and none of them needs the others for it."""
from __future__ import annotations

import os

from . import settings

# no pathlib, no json at import (``Path`` below is an annotation): a native run's launcher starts its program with
# this module imported and the standard library's lightest modules only (instrumentation/nativestart.py)

ENV = settings.FOLLOW
"""Parts directories of the active tracers (``os.pathsep``-separated): set in a process means "trace me"."""
RUN_FILE = "_run.json"
DATASETS_FILE = "_datasets.jsonl"
CONVERTED = ".conv"
"""``<pid>.conv.parquet``: a process's libhdf5 records converted beside it (``convert``);
``<pid>.conv.lock``: held while its converter works."""
LOG_PREFIX = "h5-"
"""A followed process's libhdf5 log directory (``interpose.LibraryCapture``) in its run's parts directory is
``h5-PID``: the merge converts what a killed process left there."""


def child_environment(parts_dirs: list[str]) -> dict[str, str]:
    """The variables a child process needs to be traced (extend here: e.g. a preloaded library)."""
    return {ENV: os.pathsep.join(parts_dirs)}


def dataset_keys(registry: Path) -> dict[int, str]:
    """The run's dataset ids -> keys (``DatasetRecord.key``), from its registry."""
    import json

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


def part_paths(parts_dir: Path) -> list[Path]:
    """The parts in ``parts_dir`` (``<pid>.parquet`` directories), by pid."""
    found = []
    for path in parts_dir.iterdir():
        stem, dot, suffix = path.name.partition(".")
        if stem.isdigit() and suffix == "parquet":
            found.append((int(stem), path))
    return [path for _, path in sorted(found)]


__all__ = ["CONVERTED", "DATASETS_FILE", "ENV", "LOG_PREFIX", "RUN_FILE", "child_environment", "dataset_keys",
           "part_paths"]
