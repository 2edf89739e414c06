"""The journal of a copy in progress: what is finished and verified, so that a rerun skips it.

One JSON object a line in ``<work dir>/journal.jsonl``: first the header (the
run's fingerprint: source, its size and modification time, the layouts), then
one line per step done: ``structure`` (groups, arrays, attributes created and
flushed), ``block`` (one block of one stage of one array written, flushed and
verified, with its largest error and seconds), ``array`` (an array finished).
Each line is written and fsync'ed after the step it records; a line cut by a
kill does not parse and is ignored, so its step is done again.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

JOURNAL_NAME = "journal.jsonl"


class Journal:
    """Append-only record of finished steps, read back on a rerun."""

    def __init__(self, path: Path, header: dict, entries: list[dict]):
        self.path = path
        self.header = header
        self.entries = entries
        self._fh = None

    @classmethod
    def open(cls, work: Path, header: dict) -> tuple["Journal", bool]:
        """The journal in ``work``, and whether it resumes an earlier run with the same header. A journal of
        another run (different source, layouts or plan) is not resumed: the caller starts over."""
        path = work / JOURNAL_NAME
        entries: list[dict] = []
        resumed = False
        if path.exists():
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            parsed = []
            for line in lines:
                try:
                    parsed.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # cut by a kill: this step and any after it are done again
            if parsed and parsed[0].get("header") == header:
                entries, resumed = [{**e, "prior": True} for e in parsed[1:]], True
        journal = cls(path, header, entries)
        if not resumed:
            journal._rewrite()
        return journal, resumed

    def _rewrite(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"header": self.header}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def record(self, entry: dict) -> None:
        """Append ``entry`` durably (after the step it records is on disk)."""
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(json.dumps(entry) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.entries.append(entry)

    def has(self, kind: str, **match) -> bool:
        return any(e.get("kind") == kind and all(e.get(k) == v for k, v in match.items()) for e in self.entries)

    def blocks_done(self, array: str, stage: int) -> dict[int, dict]:
        """``{block index: entry}`` of the finished blocks of one stage of one array."""
        return {e["block"]: e for e in self.entries
                if e.get("kind") == "block" and e.get("array") == array and e.get("stage") == stage}

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
