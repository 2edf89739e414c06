"""The converter process of a busy traced process's own libhdf5 records (instrumentation/convert.py says why
and how): it reads the process's log from where the process stopped, converts as the process would
(``interpose.LibraryCapture.convert``) into ``<parts dir>/<pid>.conv.parquet`` and frees the bytes it converted."""
from __future__ import annotations

import ctypes
import json
import os
import pickle
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from .partsdir import CONVERTED, DATASETS_FILE, dataset_keys
from .parts import part_calls
from .runinfo import RunInfo

_PUNCH = 0x01 | 0x02  # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
_PAGE = 4096


def _punch():
    """``free(path, end)``: release the disk blocks of ``path`` before ``end`` (size unchanged), or nothing
    where the file system cannot."""
    try:
        fallocate = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):
        return lambda path, end: None
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]

    def free(path: Path, end: int) -> None:
        try:
            fd = os.open(path, os.O_WRONLY)
        except OSError:
            return
        try:
            fallocate(fd, _PUNCH, 0, end)
        finally:
            os.close(fd)

    return free


def _trace_calls(trace: Path, parts_dir: Path, origin: float, since: float) -> list:
    """The h5py calls a killed process's trace (or part) holds on disk that ended after ``since``, as spans (key, t0,
    t1): those that may hold a libhdf5 call still to convert (a long run's part holds millions of others)."""
    from .columnar import batch_files

    keys = dataset_keys(parts_dir / DATASETS_FILE)
    try:
        ds, t0, dt = part_calls(batch_files(trace))
    except Exception:  # noqa: BLE001 - no part (or none readable): none of its calls is in the trace to drop
        return []
    t0 = t0 + origin
    t1 = t0 + dt
    late = t1 >= since
    return list(zip(map(keys.get, ds[late].tolist()), t0[late].tolist(), t1[late].tolist()))


def _into_trace(out: Path, trace: Path) -> None:
    """Move the converted batches into a killed run's own columnar trace, their datasets and resizes into its
    records file (after its last whole line: the process may have been killed in the middle of one)."""
    from .merge import adopt, whole_lines
    from .rawparts import batch_files
    from .tracedir import META

    have = whole_lines((trace / META).read_bytes())
    known = set()
    for line in have.splitlines():
        if line.startswith(b'{"t":"d"'):
            known.add(json.loads(line)["id"])
    more = [line for line in (out / META).read_bytes().splitlines()
            if (line.startswith(b'{"t":"d"') and (json.loads(line)["id"] not in known or b'"chunk_offsets":[' in line))
            or line.startswith((b'{"t":"r"', b'{"t":"o"'))]  # an id completed at the close (instrumentation/chunklisting.py) too
    adopt(trace, batch_files(out), have + b"".join(line + b"\n" for line in more))


def main() -> None:
    """The converter process: its first message says what to convert, each next one up to when."""
    from .convertsink import ConvertedSink
    from .interpose import LibraryCapture, ProcessLog
    from .records import TraceHeader

    fin, fout = sys.stdin.buffer, sys.stdout.buffer
    start = pickle.load(fin)
    pid, parts, out = start["pid"], Path(start["parts_dir"]), Path(start["out"])
    lock_path = parts / f"{pid}{CONVERTED}.lock"
    lock = os.fdopen(start["lock_fd"], "wb")  # locked by the process that started this one (convert.Converter.start)
    run = RunInfo.load(parts)
    sink = ConvertedSink(out, str(parts), run, replace(TraceHeader.from_config(start["header"]), missed=()))
    capture = LibraryCapture(Path(start["log_dir"]), None, pid)
    log = capture.logs[pid] = ProcessLog(capture.log_dir, pid)
    log.resume(*start["position"])
    sink.spans.extend(start["spans"])
    free, freed = _punch(), 0
    killed = False
    converted = float("-inf")  # the last cutoff: the records that ended before it are converted
    while True:
        try:
            cutoff, spans, final = pickle.load(fin)
        except (EOFError, pickle.UnpicklingError):  # the process is gone (a message cut short by its end too)
            killed, final, cutoff = True, True, float("inf")
            trace = Path(start["trace"]) if start["trace"] else run.part_path(parts, pid)
            # an h5py call that ended well before the last cutoff holds nothing still to come (as interpose's
            # LibraryCapture._seen_above keeps them)
            spans = _trace_calls(trace, parts, run.origin, converted - 1.0)
        sink.spans.extend(spans)
        capture.convert(log, [sink], cutoff)
        converted = cutoff
        sink.drain(force=final)
        end = log.position()[0] // _PAGE * _PAGE
        if end > freed:
            free(log.acc_path, end)
            freed = end
        if final:
            break
    sink.close(tuple(capture.lost()), capture.libraries())
    if not killed:
        fout.write(pickle.dumps({"hooked": capture.hooked, "position": log.position()}))
        fout.flush()
    else:
        # converted whole: the run's merge must not salvage it again
        log.acc_path.unlink(missing_ok=True)
        log.meta_path.unlink(missing_ok=True)
        (capture.log_dir / f"convert-{pid}.err").unlink(missing_ok=True)
        if start["trace"]:  # the run's own process: nobody merges; its trace takes the batches now
            trace = Path(start["trace"])
            if trace.is_dir() and out.is_dir():
                _into_trace(out, trace)
            shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)
            try:
                capture.log_dir.rmdir()  # its temporary log directory, unless children still log into it
            except OSError:
                pass
    lock_path.unlink(missing_ok=True)
    lock.close()


__all__ = ["main"]
