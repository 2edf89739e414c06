"""Read a binary Darshan log in a child process: libdarshan-util's faults stay there.

pydarshan hands a log to libdarshan-util (C). On a truncated or corrupt log it raises, but the half-read
report can then segfault or abort (``darshan_log_close: Assertion 'state' failed``, "double free or
corruption") while the interpreter exits (field notes, "Real Darshan logs"). So the log is read by
a child forked by ``python -m instrumentation.darshan_raw``: it copies every module's records into plain arrays,
appends them, pickled, to the batch's result stream, frees each report under a mark, and leaves with
``os._exit``. Core dumps are off in the child.
The parent turns any failure -- an exception, an exit status, a signal -- into one ``DarshanError`` line
naming the file.
"""
from __future__ import annotations

import gc
import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

import numpy as np

from .deferred import defer
from .errors import IoadvisorError

READ_TIMEOUT = 600.0
"""Seconds a child may take on one log (the 1.2 MB DXT log of darshan-logs takes a few; see docs/darshan.md)."""

COUNTER_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "DFS", "DAOS")
"""Modules read as records of integer and float counters (the report's and the importer's inputs)."""
DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
NOT_USED = "not used by ioadvisor"
"""The reason given for a module left unread on purpose (LUSTRE, HEATMAP, APMPI, ...)."""


class DarshanError(IoadvisorError, ValueError):
    """A log cannot be imported or reported; str() is one line naming the file."""


@dataclass(frozen=True)
class RawModule:
    """The records of one counter module: one row per (record id, rank); rank -1 is a shared record."""

    name: str
    version: int
    partial: bool
    """Darshan ran out of memory for this module's records: some are missing."""
    ids: np.ndarray
    ranks: np.ndarray
    counter_names: tuple[str, ...]
    counters: np.ndarray
    fcounter_names: tuple[str, ...]
    fcounters: np.ndarray

    def column(self, name: str) -> np.ndarray:
        """One counter for every record (zeros when this module version lacks it)."""
        if name in self.counter_names:
            return self.counters[:, self.counter_names.index(name)]
        if name in self.fcounter_names:
            return self.fcounters[:, self.fcounter_names.index(name)]
        return np.zeros(len(self.ids), np.float64 if "_F_" in name else np.int64)

    def as_dicts(self):
        """(id, rank, {counter: value}) per record, integer and float counters together."""
        for k in range(len(self.ids)):
            c = dict(zip(self.counter_names, self.counters[k].tolist()))
            c.update(zip(self.fcounter_names, self.fcounters[k].tolist()))
            yield int(self.ids[k]), int(self.ranks[k]), c


@dataclass(frozen=True)
class RawDxt:
    """DXT segments of one rank on one file, one op (``read`` or ``write``), as recorded (time order)."""

    module: str
    id: int
    rank: int
    op: str
    offset: np.ndarray
    length: np.ndarray
    start: np.ndarray
    end: np.ndarray


@dataclass(frozen=True)
class RawLog:
    """Everything read of a binary log, as plain arrays (no pydarshan object survives the child)."""

    source: str
    exe: str
    nprocs: int
    start_time: float
    run_time: float
    runtime_version: str
    log_version: str
    names: dict[int, str]
    modules: dict[str, RawModule]
    dxt: tuple[RawDxt, ...] = ()
    module_versions: dict[str, int] = field(default_factory=dict)
    """Every module present in the log (with its version), read or not."""
    unread: dict[str, str] = field(default_factory=dict)
    """Modules present but not read, with the reason (e.g. a DXT version this pydarshan does not know)."""
    job_id: int = 0
    uid: int = 0
    """The batch system's job id and the user's numeric id, as darshan-runtime recorded them."""
    mounts: tuple[tuple[str, str], ...] = ()
    """(mount point, file system type) of the job's mount table, e.g. ('/scratch', 'lustre'), ('/', 'ext4')."""

    def fs_type(self, name: str) -> str:
        """The file system type a file name is on (its longest mount point), '' when the log does not say."""
        best, kind = -1, ""
        for point, fs in self.mounts:
            p = point.rstrip("/")
            if (name == p or name.startswith(p + "/")) and len(p) > best:
                best, kind = len(p), fs
        return kind


class _ReaderServer:
    """``python -m instrumentation.darshan_raw``: a single-threaded process that imported pydarshan once and
    forks one child per batch of logs (cheap; fork is safe there, unlike in a threaded caller). This process reads
    no log but pydarshan's own example (a warm-up). Protocol: one JSON request a line on its stdin (the logs and
    the result stream's path), one JSON reply a line back (the logs a child died on)."""

    def __init__(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in sys.path if p]))
        self.proc = subprocess.Popen([sys.executable, "-m", "instrumentation.darshan_raw"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                     start_new_session=True)

    def ask(self, request: dict, timeout: float) -> dict | None:
        """The server's JSON reply to one request; None when it took over ``timeout``."""
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        return json.loads(line) if line else None

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()


_SERVER: _ReaderServer | None = None
_LOCK = threading.Lock()


def _serve() -> None:
    """The reader server's loop (see ``_ReaderServer``)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # inherited by every child
    defer("pandas")  # pydarshan imports it at module level, for outputs this reader never asks for
    try:
        import darshan  # noqa: F401 - imported once here, so each fork starts with it
    except ImportError:
        pass  # the child says so, in one line
    else:  # cffi parses each C type at its first use, a few ms in every batch child (benchmarks/speed/triage.py):
        # parsed here once instead, reading pydarshan's own example log (every module this reader reads)
        example = os.path.join(os.path.dirname(darshan.__file__), "examples", "example_logs",
                               "ior_hdf5_example.darshan")
        try:
            _read_in_child(example, COUNTER_MODULES, True) if os.path.isfile(example) else None
        except Exception:  # noqa: BLE001 - a warm-up only: the children read as well without it
            pass
        gc.collect()
    gc.freeze()  # what the imports made is never collected: a batch child's per-log gc.collect() stays cheap
    for line in sys.stdin:
        sys.stdout.write(json.dumps({"crashed": _serve_many(json.loads(line))}) + "\n")
        sys.stdout.flush()


BATCH_ERROR = 3
"""Exit status of a batch child that stopped after a log it could not read (said so in that log's message)."""

RESULT, MESSAGE, FREEING, FREED = b"R", b"M", b"G", b"F"
"""Record kinds of a batch's result stream: a log's pickled RawLog, the one line saying why it could not be read,
and the marks around freeing its report (a crash between them is that log's, after its result)."""
_HEAD = struct.Struct("<cII")  # kind, log index in the batch, payload bytes


def _record(fd: int, kind: bytes, index: int, payload: bytes = b"") -> None:
    """Append one record to a batch's result stream (one write: a child that dies leaves whole records, or a
    torn last one that ``scan_stream`` drops)."""
    os.write(fd, _HEAD.pack(kind, index, len(payload)) + payload)


def scan_stream(path: str, *, truncate: bool = False) -> tuple[dict[int, tuple[bytes, bytes]], int | None]:
    """A batch's result stream: {log index: (RESULT or MESSAGE, payload)}, and the index whose report was being
    freed when its child died (None). ``truncate`` cuts a torn last record, so the next child appends after
    whole ones."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return {}, None
    got: dict[int, tuple[bytes, bytes]] = {}
    freeing = None
    pos = 0
    while pos + _HEAD.size <= len(data):
        kind, index, n = _HEAD.unpack_from(data, pos)
        if pos + _HEAD.size + n > len(data):
            break
        if kind in (RESULT, MESSAGE):
            got[index] = (kind, data[pos + _HEAD.size:pos + _HEAD.size + n])
        freeing = index if kind == FREEING else None if kind == FREED else freeing
        pos += _HEAD.size + n
    if truncate and pos < len(data):
        os.truncate(path, pos)
    return got, freeing


def _serve_many(req: dict) -> dict[int, int]:
    """Read a batch of logs in one forked child, in order, into one result stream (``req["stream"]``: no file
    per log, whose creation costs more than small logs' reading: benchmarks/speed/triage.py); a child that dies
    on a log (signal, abort) is replaced by a new one from the next log. Returns {index: exit status} of the
    logs a child died on."""
    paths, stream = req["paths"], req["stream"]
    crashed: dict[int, int] = {}
    start = 0

    def run(first: int, last: int) -> int:
        pid = os.fork()
        if pid == 0:
            _child_many(paths, first, last, stream, tuple(req["modules"]), req["dxt"])
        _, status = os.waitpid(pid, 0)
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)

    while start < len(paths):
        code = run(start, len(paths))
        got, freeing = scan_stream(stream, truncate=True)
        k = next((i for i in range(start, len(paths)) if i not in got), None)
        if k is None:
            break
        if k > start and ((code == BATCH_ERROR and got[k - 1][0] == MESSAGE) or freeing == k - 1):
            start = k  # stopped on purpose after a bad log, or crashed freeing the last (read) one: go on
            continue
        if k > start:  # a damaged log read before may have left libdarshan-util broken: k alone decides
            code = run(k, k + 1)
            got, freeing = scan_stream(stream, truncate=True)
            if k in got or freeing == k:
                start = k + 1
                continue
        crashed[k] = code or 1
        start = k + 1
    return crashed


def _child_many(paths: list[str], first: int, last: int, stream: str, wanted: tuple[str, ...], dxt: bool) -> None:
    """A batch child: logs ``first`` to ``last`` (exclusive), each log's result appended to the stream; after a
    log that fails it records that log's message and leaves (a half-read report's destructor may crash: never
    while reading the next log)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    code = 2
    try:
        sink = os.open(os.path.join(os.path.dirname(stream), "child.stderr"),
                       os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        fd = os.open(stream, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for i in range(first, last):
            try:
                raw = _read_in_child(paths[i], wanted, dxt)
            except DarshanError as exc:
                _record(fd, MESSAGE, i, str(exc).encode())
                code = BATCH_ERROR
                return
            except Exception as exc:  # noqa: BLE001 - any fault reading: one line, the parent names the file
                _record(fd, MESSAGE, i, f"not a readable Darshan log ({type(exc).__name__}: {_short(exc)})".encode())
                code = BATCH_ERROR
                return
            _record(fd, RESULT, i, pickle.dumps(raw, protocol=pickle.HIGHEST_PROTOCOL))
            # A report of a damaged log can read "fine" and crash when its cycles are freed; the one-log reader
            # never frees it (os._exit). Free it now, marked, so such a crash is this log's, after its result.
            del raw
            _record(fd, FREEING, i)
            gc.collect()
            _record(fd, FREED, i)
        code = 0
    finally:
        os._exit(code)


def start_reader() -> None:
    """Start this process's log reader server now (it imports pydarshan, a few tenths of a second), so that it
    is ready by the first ``read_raw_many``/``read_raw``; does nothing when it runs already."""
    global _SERVER
    with _LOCK:
        if _SERVER is None or _SERVER.proc.poll() is not None:
            _SERVER = _ReaderServer()


def read_raw_many(paths: list[str], *, modules: tuple[str, ...] | None = None, dxt: bool = True,
                  timeout: float = READ_TIMEOUT) -> list[RawLog | DarshanError]:
    """Each log's records (or the DarshanError saying why not), read by one child process per batch rather
    than per log (the per-log fork and hand-over dominate on small logs: benchmarks/triage.py); a log that
    crashes libdarshan-util costs only itself. ``timeout`` is per log."""
    global _SERVER
    paths = [str(p) for p in paths]
    results: list = [None] * len(paths)
    todo = []
    for i, p in enumerate(paths):
        if os.path.isfile(p):
            todo.append(i)
        else:
            results[i] = DarshanError(f"{p}: no such file")
    while todo:
        with tempfile.TemporaryDirectory(prefix="ioadvisor-darshan-") as tmp:
            stream = os.path.join(tmp, "results")
            request = {"paths": [os.path.abspath(paths[i]) for i in todo], "stream": stream,
                       "modules": list(modules or COUNTER_MODULES), "dxt": dxt}
            with _LOCK:
                for attempt in (0, 1):  # a server that died (killed from outside) is restarted once
                    if _SERVER is None or _SERVER.proc.poll() is not None:
                        _SERVER = _ReaderServer()
                    try:
                        reply = _SERVER.ask(request, timeout * len(todo))
                        break
                    except (BrokenPipeError, ValueError, OSError):
                        reply = None
                        _SERVER.stop()
                        _SERVER = None
                        scan_stream(stream, truncate=True)  # the retry appends after whole records
                if reply is None and _SERVER is not None:  # stopped (too slow): what was read stands
                    _SERVER.stop()
                    _SERVER = None
            crashed = {} if reply is None else {int(k): int(v) for k, v in reply["crashed"].items()}
            got, _ = scan_stream(stream)
            rest = []
            for j, i in enumerate(todo):
                p = paths[i]
                if j in got and got[j][0] == RESULT:
                    try:
                        results[i] = pickle.loads(got[j][1])
                    except (EOFError, pickle.UnpicklingError) as exc:
                        results[i] = DarshanError(f"{p}: the log reader left no result ({exc})")
                elif j in got:
                    results[i] = DarshanError(f"{p}: {_failure(1, said=got[j][1].decode('utf-8', 'replace'))}")
                elif j in crashed:
                    results[i] = DarshanError(f"{p}: {_failure(crashed[j], os.path.join(tmp, 'child'))}")
                elif reply is None and not rest and all(results[t] is None for t in todo[j:]):
                    results[i] = DarshanError(f"{p}: reading the log took over {timeout:.0f} s: stopped")
                else:
                    rest.append(i)
            todo = rest
    return results


def read_raw(path: str | os.PathLike, *, modules: tuple[str, ...] | None = None, dxt: bool = True,
             timeout: float = READ_TIMEOUT) -> RawLog:
    """The log's records, read in a child process. ``modules``: counter modules to read (default: all known)."""
    raw = read_raw_many([path], modules=modules, dxt=dxt, timeout=timeout)[0]
    if isinstance(raw, DarshanError):
        raise raw
    return raw


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _failure(exitcode: int, out: str = "", said: str = "") -> str:
    """One line: the child's own message (``said``), else libdarshan-util's (OUT.stderr), else the signal that
    ended it."""
    said = [ln.strip() for ln in said.splitlines() if ln.strip()]
    if said:
        return said[-1]
    errs = [ln.strip() for ln in (_read_text(out + ".stderr") if out else "").splitlines() if ln.strip()]
    lib = next((e for e in errs if e.lower().startswith("error")), errs[-1] if errs else "")
    if exitcode < 0:
        try:
            sig = signal.Signals(-exitcode).name
        except ValueError:
            sig = f"signal {-exitcode}"
        why = f"libdarshan-util crashed ({sig})"
    else:
        why = f"the log reader failed (exit status {exitcode})"
    return f"not a readable Darshan log: {why}" + (f": {lib[:200]}" if lib else "") + ": truncated or corrupt?"


# ---------------------------------------------------------------------------- darshan-parser text

def is_parser_text(path: str) -> bool:
    """Whether a file looks like ``darshan-parser`` output ('#' header lines or tab-separated counter lines)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).lstrip()
    except OSError as exc:
        raise DarshanError(f"{path}: cannot read ({exc.strerror})") from None
    if not head:
        raise DarshanError(f"{path}: empty file, not a Darshan log")
    return head.startswith(b"#") or head.split(b"\t", 1)[0] in (b"H5D", b"H5F", b"POSIX", b"MPI-IO", b"STDIO")


def read_parser_text(path: str) -> RawLog:
    """Every counter module of ``darshan-parser LOG`` text (module, rank, record id, counter, value, file name,
    mount point, fs type per line) as a RawLog; DXT is not in that text."""
    meta: dict[str, str] = {}
    rows: dict[str, dict[tuple[int, int], dict[str, float]]] = {}
    names: dict[int, str] = {}
    mounts: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="strict") as fh:
            for lineno, line in enumerate(fh, start=1):
                line = line.rstrip("\n")
                if line.startswith("#"):
                    key, sep, value = line[1:].partition(":")
                    if sep and key.strip() not in meta:
                        meta[key.strip()] = value.strip()
                    continue
                parts = line.split("\t")
                if not line.strip():
                    continue
                if len(parts) < 6:
                    raise DarshanError(f"{path}:{lineno}: not a darshan-parser counter line "
                                       f"(expected 8 tab-separated fields, got {len(parts)})")
                try:
                    rank, rec_id, value = int(parts[1]), int(parts[2]), float(parts[4])
                except ValueError:
                    raise DarshanError(f"{path}:{lineno}: bad rank, record id or value in counter "
                                       f"{parts[3]!r:.40}") from None
                names.setdefault(rec_id, parts[5])
                if len(parts) >= 8 and parts[6]:
                    mounts.setdefault(parts[6], parts[7])
                rows.setdefault(parts[0], {}).setdefault((rec_id, rank), {})[parts[3]] = value
    except UnicodeDecodeError:
        raise DarshanError(f"{path}: not darshan-parser text (not UTF-8)") from None
    except OSError as exc:
        raise DarshanError(f"{path}: cannot read ({exc.strerror})") from None
    if "darshan log version" not in meta and not rows:
        raise DarshanError(f"{path}: not darshan-parser output (no '# darshan log version' header)")
    modules = {}
    for mod, recs in rows.items():
        cols = list(dict.fromkeys(c for counters in recs.values() for c in counters))
        fcols = tuple(c for c in cols if "_F_" in c)
        icols = tuple(c for c in cols if "_F_" not in c)
        keys = list(recs)
        modules[mod] = RawModule(
            mod, 0, False, np.asarray([k[0] for k in keys], np.uint64), np.asarray([k[1] for k in keys], np.int64),
            icols, np.asarray([[recs[k].get(c, 0) for c in icols] for k in keys], np.float64).astype(np.int64),
            fcols, np.asarray([[recs[k].get(c, 0.0) for c in fcols] for k in keys], np.float64).reshape(len(keys), -1))
    try:
        nprocs, start = int(meta.get("nprocs", "1")), float(meta.get("start_time", "0"))
        run_time = float(meta.get("run time", "0"))
    except ValueError:
        raise DarshanError(f"{path}: bad '# nprocs', '# start_time' or '# run time' header line") from None
    lib = meta.get("metadata", "")
    lib = lib.split("=", 1)[1].strip() if lib.startswith("lib_ver") else meta.get("darshan log version", "")
    return RawLog(path, meta.get("exe", ""), nprocs, start, run_time, lib, meta.get("darshan log version", ""),
                  names, modules, (), {m: 0 for m in modules}, {}, _int(meta.get("jobid")), _int(meta.get("uid")),
                  tuple(mounts.items()))


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


# ---------------------------------------------------------------------------- the child

def _read_in_child(path: str, wanted: tuple[str, ...], dxt: bool) -> RawLog:
    try:
        import darshan
    except ImportError:
        raise DarshanError(
            "reading binary Darshan logs needs pydarshan (pip install 'ioadvisor[darshan]'; wheels exist for "
            "CPython 3.8-3.12), or convert the log with `darshan-parser LOG > LOG.txt` and import the text"
        ) from None
    try:
        report = darshan.DarshanReport(path, read_all=False)
    except Exception as exc:  # noqa: BLE001 - pydarshan raises bare RuntimeError/KeyError/... on bad input
        raise DarshanError(f"not a readable Darshan log ({_short(exc)})") from None
    job = report.metadata["job"]
    lib_ver = str(job.get("metadata", {}).get("lib_ver", "")) or str(job.get("log_ver", ""))
    versions = {m: int(info.get("ver", 0)) for m, info in report.modules.items()}
    mods: dict[str, RawModule] = {}
    unread: dict[str, str] = {}
    for mod in wanted:
        if mod not in report.modules:
            continue
        try:
            mods[mod] = _counter_module(report, mod)
        except Exception as exc:  # noqa: BLE001 - a module of a version this pydarshan cannot read
            unread[mod] = _short(exc)
    segments: list[RawDxt] = []
    for mod in DXT_MODULES if dxt else ():
        if mod not in report.modules:
            continue
        try:
            report.mod_read_all_dxt_records(mod, dtype="numpy")
            for rec in report.records[mod]:
                for op, key in (("write", "write_segments"), ("read", "read_segments")):
                    seg = rec[key]
                    if len(seg):
                        segments.append(RawDxt(mod, int(rec["id"]), int(rec["rank"]), op, *_segment_arrays(seg)))
        except Exception as exc:  # noqa: BLE001
            unread[mod] = _short(exc)
    for mod in report.modules:
        if mod not in mods and mod not in unread and mod not in DXT_MODULES:
            unread.setdefault(mod, NOT_USED)
    names = {int(k): str(v) for k, v in report.name_records.items()}
    start = float(job.get("start_time_sec", 0) or 0) + float(job.get("start_time_nsec", 0) or 0) * 1e-9
    run_time = float(job.get("run_time", 0) or 0)
    if not run_time and job.get("end_time_sec"):
        run_time = float(job["end_time_sec"]) - float(job.get("start_time_sec", 0))
    try:
        mounts = tuple((str(point), str(fs)) for point, fs in report.mounts)
    except Exception:  # noqa: BLE001 - a mount table this pydarshan cannot read: the file systems are unknown
        mounts = ()
    return RawLog(path, str(report.metadata.get("exe", "")), int(job["nprocs"]), start, run_time, lib_ver,
                  str(job.get("log_ver", "")), names, mods, tuple(segments), versions, unread,
                  int(job.get("jobid", 0) or 0), int(job.get("uid", 0) or 0), mounts)


def _segment_arrays(seg) -> tuple[np.ndarray, ...]:
    """offset, length, start, end of DXT segments: a list of dicts (pydarshan 3.5, dtype numpy) or a DataFrame."""
    cols = (("offset", np.int64), ("length", np.int64), ("start_time", float), ("end_time", float))
    if isinstance(seg, list):
        return tuple(np.fromiter((s[c] for s in seg), t, len(seg)) for c, t in cols)
    return tuple(np.asarray(seg[c], t) for c, t in cols)


def _counter_module(report, mod: str) -> RawModule:
    info = report.modules[mod]
    report.mod_read_all_records(mod, dtype="numpy")
    recs = list(report.records[mod])
    cnames = tuple(report.counters[mod]["counters"])
    fnames = tuple(report.counters[mod]["fcounters"])
    ids = np.asarray([int(r["id"]) for r in recs], np.uint64)
    ranks = np.asarray([int(r["rank"]) for r in recs], np.int64)
    counters = (np.stack([np.asarray(r["counters"], np.int64) for r in recs]) if recs
                else np.zeros((0, len(cnames)), np.int64))
    fcounters = (np.stack([np.asarray(r["fcounters"], np.float64) for r in recs]) if recs
                 else np.zeros((0, len(fnames)), np.float64))
    if info.get("len", 0) > 0 and not recs:
        raise DarshanError(f"module {mod} version {info.get('ver')}: no record could be read")
    return RawModule(mod, int(info.get("ver", 0)), bool(info.get("partial_flag", False)), ids, ranks, cnames,
                     counters, fnames, fcounters)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


if __name__ == "__main__":
    # the module's own copy serves, so the pickled classes are instrumentation.darshan_raw's, not __main__'s
    from instrumentation import darshan_raw

    darshan_raw._serve()
