"""The end of a run: merging its processes' parts into its trace (instrumentation/follow.py), with the output of
their converters (instrumentation/convert.py) and what killed processes left unconverted (a salvage).

Parts are written so that merging them rewrites no access: every process of a
run numbers its datasets from one registry (``runinfo.SharedIds``), times its accesses from the run's clock origin
and writes the run's rank (``runinfo.RunInfo``). A columnar part's Parquet batches are then moved into the run's
trace as they are, and only its small records file is rewritten.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

from . import settings
from .partsdir import CONVERTED, DATASETS_FILE, LOG_PREFIX, RUN_FILE, dataset_keys, part_paths
from .runinfo import RunInfo
from .tracedir import RAW

PART_WAIT = settings.part_wait()
"""Longest wait at the end of a run for a live child to flush what it recorded before the end."""
POLL = 0.02


def process_alive(pid: int) -> bool:
    """Is process ``pid`` of this host running (an exited child not yet reaped counts as gone)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # an exited child not yet reaped is a zombie
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _part_state(path: Path, since_ns: int) -> str | None:
    """exited | running (flushed after the run ended) | lost (dead, not closed) | None (still to wait)."""
    from .mpi import file_done

    if file_done(path):
        return "exited"
    try:
        if os.stat(path).st_mtime_ns >= since_ns:  # the part's flusher touches it after each pass
            return "running"
    except OSError:
        return "lost"
    try:
        pid = int(path.stem)
    except ValueError:
        return "lost"
    return None if process_alive(pid) else "lost"


def wait_for_parts(parts_dir: Path, since_ns: int) -> dict[Path, str]:
    """Each part -> its state, once every live child flushed what it recorded before ``since_ns``."""
    deadline = time.monotonic() + PART_WAIT
    states: dict[Path, str] = {}
    while True:
        pending = []
        for path in part_paths(parts_dir):
            if path not in states:
                state = _part_state(path, since_ns)
                if state is None:
                    pending.append(path)
                else:
                    states[path] = state
        if not pending or time.monotonic() > deadline:
            for path in pending:
                states[path] = "unflushed"
            return {path: states[path] for path in sorted(states, key=lambda p: int(p.name.partition(".")[0]))}


MERGING = ("the merge of the child processes' parts into this trace was interrupted: "
           "accesses of some of them may be missing")
"""The note a columnar trace carries while parts are moved into it (a process killed mid-merge leaves it)."""


def merge_parts(path: Path, parts_dir: Path, since_ns: int) -> list[str]:
    """Merge the parts in ``parts_dir`` into the trace at ``path`` (closed); returns the notes of what was missed.

    The merged trace keeps ``path``'s header, with ``processes`` (this process first)
    and ``missed`` filled in. Then removes ``parts_dir``'s shared files: the caller
    removes the directory, empty unless a child still writes into it.
    """
    from .records import ProcessInfo
    from .tracefile import TraceError

    states = wait_for_parts(parts_dir, since_ns)
    missed: list[str] = []
    converted = _converted(parts_dir, missed)  # before any salvage: a killed process's converter ends first
    read = _read_columnar_part
    parts, owners, processes, salvaged = [], [], [], []  # owners: the pid of each part's process
    beside: dict[int, int] = {}  # pid -> its accesses converted beside it
    for out in converted:
        try:
            h, n_access, part = read(out)
        except TraceError as exc:
            missed.append(f"a process's libhdf5 calls converted beside it could not be read: {exc}")
            continue
        parts.append(part)
        owners.append(h.pid)
        beside[h.pid] = beside.get(h.pid, 0) + n_access
        missed += [f"process {h.pid}: {m}" for m in h.missed]
    for part_path, state in states.items():
        try:
            header, n_access, part = read(part_path)
        except TraceError as exc:
            missed.append(f"a child's part could not be read: {exc}")
            continue
        h = header
        parts.append(part)
        owners.append(h.pid)
        if state == "lost":
            recovered = ""
            out = parts_dir / f".salvage-{h.pid}{part_path.suffix}"
            salvaged.append(out)
            try:
                found = _salvage(out, part_path, h, part, parts_dir, read)
            except Exception as exc:  # noqa: BLE001 - a torn log must not cost the trace
                found = None
                missed.append(f"process {h.pid}: its libhdf5 calls not yet converted could not be: {exc}")
            if found is not None:
                sh, n_more, more = found
                parts.append(more)
                owners.append(h.pid)
                n_access += n_more
                missed += [f"process {h.pid}: {m}" for m in sh.missed]
                recovered = f" (but {n_more} libhdf5 access(es), converted from its interposer log)"
            missed.append(f"process {h.pid} (parent {h.ppid}) ended without closing its part: "
                          f"its accesses after its last flush are missing{recovered}")
        elif state == "unflushed":
            missed.append(f"process {h.pid} (parent {h.ppid}) was still running and did not flush within "
                          f"{PART_WAIT:g} s of the end of the run: its latest accesses may be missing")
            state = "running"
        missed += [f"process {h.pid}: {m}" for m in h.missed]
        processes.append(ProcessInfo(h.pid, h.ppid, h.argv, n_access + beside.pop(h.pid, 0), state))
    if parts:
        processes.sort(key=lambda p: p.pid)
        own_more = sum(beside.values())  # this process's (a child's without a part: none)
        index = {p.pid: i for i, p in enumerate(processes, 1)}  # the header's ``processes``: this process first
        procs = [index.get(pid, 0) for pid in owners]
        _merge_columnar(path, parts, processes, missed, parts_dir / DATASETS_FILE, own_more, procs)
    for part_path in [*states, *salvaged, *converted, *parts_dir.glob(f"*{CONVERTED}.lock")]:
        _remove(part_path)
    # a killed process's log directory, converted above; a running one's, as its part
    for log_dir in parts_dir.glob(f"{LOG_PREFIX}*"):
        shutil.rmtree(log_dir, ignore_errors=True)
    for name in (DATASETS_FILE, RUN_FILE):
        (parts_dir / name).unlink(missing_ok=True)
    return missed


def _converted(parts_dir: Path, missed: list[str]) -> list[Path]:
    """The outputs of the run's converters (``convert``), once each one has ended (at most PART_WAIT)."""
    deadline = time.monotonic() + PART_WAIT
    for lock_path in parts_dir.glob(f"*{CONVERTED}.lock"):
        try:
            fh = open(lock_path, "rb")
        except FileNotFoundError:  # ended meanwhile
            continue
        with fh:
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        missed.append(f"the converter {lock_path.name} was still converting at the end of the run:"
                                      " some libhdf5 calls of its process may be missing")
                        break
                    time.sleep(POLL)
    found = []
    for out in parts_dir.iterdir():
        stem, _, suffix = out.name.partition(".")
        if stem.isdigit() and suffix == f"{CONVERTED[1:]}.parquet":
            found.append((int(stem), out))
    return [out for _, out in sorted(found)]


def _salvage(out: Path, part_path: Path, header, part, parts_dir: Path, read):
    """What ``read`` gives of ``out``, a trace written of the libhdf5 accesses that a process killed before
    converting them left in its log directory; None when it left none.

    Converted as the process would have, its h5py calls' duplicates dropped: those calls are the accesses of its
    part (a libhdf5 call inside one of them, on the same dataset, is that call)."""
    from .convertsink import ConvertedSink
    from .interpose import LibraryCapture

    log_dir = parts_dir / f"{LOG_PREFIX}{header.pid}"
    run = RunInfo.load(parts_dir)
    if run is None or not any(log_dir.glob("h5-*.acc")):
        return None
    sink = ConvertedSink(out, str(parts_dir), run, replace(header, missed=()))
    keys = dataset_keys(parts_dir / DATASETS_FILE)
    ds, t0, dt = part_calls(part[1])
    t0 = t0 + sink.origin
    sink.spans.extend(zip(map(keys.get, ds.tolist()), t0.tolist(), (t0 + dt).tolist()))
    capture = LibraryCapture(log_dir, None, header.pid)
    capture.poll([sink], final=True)
    sink.close(tuple(capture.lost()), capture.libraries())
    return read(out)


def part_calls(where: list[Path]):
    """(dataset ids, t0, dt) of the accesses of a columnar part's batch files (raw batches hold each call as
    recorded; a Parquet batch's folded runs are unrolled, their calls' times approximated)."""
    import numpy as np

    from .columnar import from_table, parquet_file, read_raw
    from .columns import AccessColumns

    batches = []
    for f in where:
        try:
            batches.append(read_raw(f) if RAW.match(f.name)
                           else from_table(parquet_file(f).read_all(), str(f)).expanded())
        except Exception:  # noqa: BLE001 - a batch no reader takes holds no call of the trace: its duplicates stay
            continue
    if not batches:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    cols = AccessColumns.concat(batches)
    return cols.ds, cols.t0, cols.dt


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _read_columnar_part(path: Path):
    """(header, accesses, (records, batch files)) of a columnar part; its batches are not read (but to count the
    accesses of a part not closed)."""
    from .columnar import batch_files, count_accesses, read_meta, read_raw

    opens: list = []
    headers, _, resizes, complete, n_end = read_meta(path, allow_truncated=True, opens=opens)
    files = batch_files(path)
    n_access = n_end if complete and n_end is not None else \
        count_accesses(path)[2] + sum(read_raw(f).n_access for f in files if RAW.match(f.name))
    return headers[0], n_access, (resizes, files, opens)


def _merge_columnar(path: Path, parts, processes, missed, registry: Path, own_more: int, procs: list[int]) -> None:
    """Move the parts' batches into the trace directory (their dataset ids, clock and rank are already the run's;
    Parquet batches as they are, the raw ones of followed processes converted) and rewrite only its records file.
    ``procs``: each part's process, its index in the header's ``processes`` (``AccessColumns.proc``): the
    batches go in process by process.

    Crash safety: the records file is replaced whole (a temporary file renamed), first with every
    dataset and resize and the MERGING note, then, once every batch is in place, with the final
    count. A process killed at any point leaves a trace that loads; until the end it says the
    merge was interrupted."""
    from .columnar_reader import count_accesses, read_meta
    from .merge import adopt, whole_lines
    from .records import ProcessInfo
    from .tracemodel import dumps

    opens: list = []
    headers, _, resizes, _, n_end = read_meta(path, allow_truncated=False, opens=opens)
    own = headers[0]
    n_own = (n_end if n_end is not None else count_accesses(path)[2]) + own_more
    me = ProcessInfo(own.pid, own.ppid, own.argv, n_own, "exited")
    header = replace(own, processes=(me, *processes), missed=own.missed + tuple(missed))
    try:
        datasets = registry.read_bytes()
    except FileNotFoundError:  # no process saw a dataset
        datasets = b""
    datasets = whole_lines(datasets)  # a writer killed mid-line: its dataset was never used
    datasets = b"".join(line + b"\n" for line in datasets.split(b"\n") if line.startswith(b'{"t":"d"'))
    resizes = [*resizes, *(r for rs, *_ in parts for r in rs)]
    opens = [*opens, *(replace(o, process=proc) for proc, (*_, os_) in zip(procs, parts) for o in os_)]
    closes: dict[int, list[float]] = {}  # no run of a raw batch folded across its process's closes
    for o in opens:
        if o.event == "close":
            closes.setdefault(o.process, []).append(o.t_start)
    closes = {proc: sorted(times) for proc, times in closes.items()}
    total = n_own + sum(p.accesses for p in processes)

    def records(h, end: dict) -> bytes:
        return b"".join([(dumps({"t": "h", **h.get_config()}) + "\n").encode(), datasets,
                         "".join(dumps({"t": "r", **r.get_config()}) + "\n" for r in resizes).encode(),
                         "".join(dumps({"t": "o", **o.get_config()}) + "\n" for o in opens).encode(),
                         (dumps({"t": "end", **end}) + "\n").encode()])

    owned = sorted(((proc, f) for proc, (_, files, *_) in zip(procs, parts) for f in files), key=lambda pf: pf[0])
    adopt(path, [f for _, f in owned], records(replace(header, missed=header.missed + (MERGING,)), {}),  # no count yet
          records(header, {"n_access": total}), [proc for proc, _ in owned], closes)


__all__ = ["process_alive", "MERGING", "PART_WAIT", "merge_parts", "part_calls", "wait_for_parts"]
