"""A trace directory's pending batch: what the libhdf5 interposer logged for a serial native run, sealed into the
trace at the run's exit, unconverted (docs/trace-format.md, "Pending batch").

``ioadvisor run`` of a program that is not Python (instrumentation/launch.py) needs numpy, Arrow and the
converters only to turn the interposer's logs into the trace's batches. Importing them beside the program, then
converting and tearing them down at its exit, cost a 20,000-box C program about a quarter of its own time
(benchmarks/speed/tracing_overhead.py, whole-process overhead). Where nothing else needs them (a columnar output,
no followed Python process wrote a part), the launcher instead moves the log directory into the trace
(``seal``): ``<trace>/pending/`` holds the logs and ``run.json`` (the run's clock origin and what is known to be
missing), and the records file ``_meta.jsonl`` holds the trace's header and a ``pending`` record. The trace's
first reader converts it as the exit would have (instrumentation/pendingconvert.py). This module is the light
half, standard library only (not even json until used): the launcher imports it, and nativestart.py its names.
"""
from __future__ import annotations

import os

PENDING = "pending"
"""The pending batch's directory in a trace directory."""
SEALING = "pending.tmp"
"""The pending batch while it is copied in (a log directory on another file system): renamed to PENDING once
whole."""
CONVERTING = ".converting-"
"""A reader's conversion of the pending batch, before it replaces the trace's files (left by a reader killed
mid-conversion: the next reader removes it)."""
RUN_CONFIG = "run.json"
"""The run's configuration in the pending batch (``{"run": RunInfo config, "missed": [...]}``); written last
into the log directory, so a batch without it is not sealed."""
PENDING_RECORD = {"t": "pending", "batch": PENDING}
"""The records file's line that says the trace's accesses wait in its pending batch."""
BATCH_HEAD = 16
"""Bytes of a batch head in an ``.acc`` file (``h5log.BATCH``: magic, n, width, pad, 4 bytes each)."""
RECORD_BASE, RECORD_PER_DIM = 48, 32
"""An ``h5log.ACCESS`` record cut to ``width`` dimensions takes RECORD_BASE + RECORD_PER_DIM * width bytes;
its dataset number (u4) is at DS_AT, its op (u1, 1 = write) at OP_AT."""
DS_AT, OP_AT = 16, 24
ALIKE_BASE = 16
"""What a batch of alike records holds of each after the first: t0, dt (f8 each), then start (8 bytes a dim)."""
MAGICS = (0x31414F49, 0x32414F49)
"""``h5log.BATCH_MAGIC``, ``h5log.BATCH_ALIKE_MAGIC``."""
MAX_DIMS = 8
READ_WHOLE = 16 << 20
"""``.acc`` files up to this size are read whole to be counted, larger ones mapped."""


def is_pending_name(name: str) -> bool:
    """A name of a trace directory's entry that belongs to a pending batch or its conversion."""
    return name in (PENDING, SEALING) or name.startswith(CONVERTING)


def waiting(path: str | os.PathLike) -> bool:
    """Does the trace directory ``path`` hold a sealed pending batch (its conversion not finished)?"""
    return os.path.isfile(os.path.join(path, PENDING, RUN_CONFIG))


def seal(live: str | os.PathLike, logs: str | os.PathLike, config: dict, records_line: str) -> None:
    """Move the log directory ``logs`` into the trace directory ``live`` as its pending batch, with ``config``
    (``RUN_CONFIG``), ``records_line`` (PENDING_RECORD's line) appended to the records file first: a reader may
    convert the batch as soon as it is in place, replacing the records file. A rename where both lie on one file
    system, else a copy renamed once whole: a launcher killed meanwhile leaves the logs."""
    import json

    tmp = os.path.join(logs, f".{RUN_CONFIG}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(config, fh)
    os.replace(tmp, os.path.join(logs, RUN_CONFIG))
    with open(os.path.join(live, "_meta.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(records_line)
    target = os.path.join(live, PENDING)
    try:
        os.rename(logs, target)
    except OSError:  # another file system (EXDEV): copied, RUN_CONFIG last, then renamed
        sealing = os.path.join(live, SEALING)
        remove_tree(sealing)
        os.mkdir(sealing, 0o700)
        names = sorted(os.listdir(logs), key=lambda n: n == RUN_CONFIG)
        for name in names:
            with open(os.path.join(logs, name), "rb") as src, open(os.path.join(sealing, name), "wb") as dst:
                while os.sendfile(dst.fileno(), src.fileno(), None, 1 << 24):
                    pass
        os.rename(sealing, target)
        remove_tree(logs)


def remove_tree(path: str | os.PathLike) -> None:
    """A directory of files and directories removed (``shutil.rmtree`` without its import); nothing if absent."""
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        if os.path.lexists(path) and not os.path.isdir(path):
            os.unlink(path)
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            remove_tree(entry.path)
        else:
            os.unlink(entry.path)
    os.rmdir(path)


class LogCounts:
    """What the exit says of a sealed batch without converting it: accesses, reads and datasets as the trace
    will count them (``summary_line``), what is known to be missing (``notes``) and the programs with libhdf5
    linked in, unseen (``linked_in``: (file, version) of each ``static`` line, ``linkage.gap_note``'s), from the
    interposer's logs read lightly: batch heads, five bytes of each record, and the metadata lines."""

    def __init__(self, log_dir: str | os.PathLike):
        self.accesses = self.reads = self.datasets = 0
        self.notes: list[str] = []
        self.linked_in: list[tuple[str, str]] = []
        bad = 0
        for name in sorted(os.listdir(log_dir)):
            if name.startswith("h5-") and name.endswith(".acc") and name[3:-4].isdigit():
                meta, bad_lines = _metadata(os.path.join(log_dir, f"{name[:-4]}.meta"))
                per_ds, writes, torn = _records(os.path.join(log_dir, name))
                bad += bad_lines + torn
                self._add(meta, per_ds, writes)
        if bad:
            self.notes.append(f"{bad} unreadable interposer line(s) or batch(es): their accesses are not in the "
                              "trace")

    def _add(self, meta: dict, per_ds: dict[int, int], writes: dict[int, int]) -> None:
        # datasets as the conversion numbers them: one per key (file::path), a new one per created dataset
        keys, created = set(), 0
        for num, n in per_ds.items():
            d = meta["d"].get(num)
            if d is None or d.get("null"):
                continue  # no dataspace: not converted
            self.accesses += n
            self.reads += n - writes.get(num, 0)
            if d.get("created"):
                created += 1
            else:
                keys.add(f"{d.get('file')}::{d.get('path')}")
        self.datasets += len(keys) + created
        if meta["static"] is not None:
            self.linked_in.append((meta["static"].get("file", "?"), meta["static"].get("version", "?")))


def _metadata(path: str) -> tuple[dict, int]:
    """({"d": dataset number -> its ``d`` line, "static": the ``static`` line}, unreadable lines) of a
    ``.meta`` file."""
    import json

    out: dict = {"d": {}, "static": None}
    bad = 0
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return out, 0
    for line in data[: data.rfind(b"\n") + 1].splitlines():
        if not (line.startswith(b'{"t":"d"') or line.startswith(b'{"t":"static"')):
            if not line.startswith(b'{"t":'):
                bad += 1
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if ev.get("t") == "d":
            out["d"][ev.get("i")] = ev
        else:
            out["static"] = ev
    return out, bad


def _records(path: str) -> tuple[dict[int, int], dict[int, int], int]:
    """(accesses per dataset number, writes per dataset number, 1 if a batch head is unreadable) of an ``.acc``
    file's complete batches, as ``h5log.read_batches`` reads them."""
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size <= READ_WHOLE:
                return _count_batches(fh.read())
            import mmap

            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:  # sliced, never read whole
                return _count_batches(data)
    except FileNotFoundError:
        return {}, {}, 0


def _count_batches(data) -> tuple[dict[int, int], dict[int, int], int]:
    per_ds: dict[int, int] = {}
    writes: dict[int, int] = {}
    at = 0
    while at + BATCH_HEAD <= len(data):
        magic, n, width = (int.from_bytes(data[at + k:at + k + 4], "little") for k in (0, 4, 8))
        if magic not in MAGICS or width > MAX_DIMS:
            return per_ds, writes, 1
        size = RECORD_BASE + RECORD_PER_DIM * width
        alike = magic == MAGICS[1]
        end = at + BATCH_HEAD + (size + n * (ALIKE_BASE + 8 * width) if alike else n * size)
        if end > len(data):
            break  # still being written (a process killed mid-batch): the conversion stops there too
        body = data[at + BATCH_HEAD: at + BATCH_HEAD + (size if alike else n * size)]
        if alike:  # all as the first
            num = int.from_bytes(body[DS_AT:DS_AT + 4], "little")
            per_ds[num] = per_ds.get(num, 0) + n
            if body[OP_AT] == 1:
                writes[num] = writes.get(num, 0) + n
        else:
            low = body[DS_AT::size]
            ops = body[OP_AT::size]
            if any(body[DS_AT + k::size].strip(b"\0") for k in (1, 2, 3)):  # a number over 255: record by record
                nums = [int.from_bytes(body[i * size + DS_AT: i * size + DS_AT + 4], "little") for i in range(n)]
            else:
                nums = None
            for num in (set(low) if nums is None else set(nums)):
                if nums is None:
                    count = low.count(num)
                    wrote = sum(1 for a, o in zip(low, ops) if a == num and o == 1) if len(set(low)) > 1 \
                        else ops.count(1)
                else:
                    count = nums.count(num)
                    wrote = sum(1 for a, o in zip(nums, ops) if a == num and o == 1)
                per_ds[num] = per_ds.get(num, 0) + count
                writes[num] = writes.get(num, 0) + wrote
        at = end
    return per_ds, writes, 0


__all__ = ["CONVERTING", "LogCounts", "PENDING", "PENDING_RECORD", "RUN_CONFIG", "SEALING", "is_pending_name",
           "remove_tree", "seal", "waiting"]
