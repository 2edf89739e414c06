"""The files of a trace: which format a path names, and the files of a columnar trace directory
(instrumentation/columnar.py): their names, and an empty directory.

Apart from columnar.py (numpy, Arrow) so that a launcher that writes only a trace's records file
(instrumentation/launch.py: a run that made no access) imports neither."""
from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import OutputExistsError
from .pendingbatch import is_pending_name, remove_tree

META = "_meta.jsonl"
"""The records file: header(s), dataset and resize records, end (JSON Lines)."""
PART = re.compile(r"^part-(\d{6,})\.parquet$")
PARTS = re.compile(r"^parts-(\d{6,})-(\d{6,})\.parquet$")
RAW = re.compile(r"^part-(\d{6,})\.npy$")


def is_jsonl(path: str | os.PathLike) -> bool:
    """Trace files named ``*.jsonl`` are JSON Lines (schema 1); any other name is a columnar trace."""
    return str(path).endswith(".jsonl")


def live_path(path: str | os.PathLike) -> Path:
    """Where a trace requested at ``path`` is written while its run is live: ``path`` itself for a columnar
    trace; for a ``*.jsonl`` one, the columnar directory ``<path>.live`` beside it, exported to ``path`` at the
    end (``merge.export_live``) and then removed. A killed run leaves it: ``load_trace(path)`` reads it."""
    return Path(f"{path}.live") if is_jsonl(path) else Path(path)


def prepare(path: Path) -> None:
    """An empty trace directory at ``path`` (an earlier trace there is replaced)."""
    if path.is_dir():
        for f in path.iterdir():
            if is_pending_name(f.name):  # a native run's raw logs (instrumentation/pendingbatch.py)
                remove_tree(f)
            elif f.name == META or PART.match(f.name) or PARTS.match(f.name) or RAW.match(f.name) \
                    or f.name.endswith((".parquet.tmp", ".npy.tmp")):
                f.unlink()
        if any(path.iterdir()):
            raise OutputExistsError(f"{path} is a directory with other files in it, not a trace: not replacing it "
                                    "(choose another path)")
    else:
        if path.exists():
            path.unlink()
        path.mkdir(parents=True)
