"""``advisor.report_darshan``: a report on any Darshan log, with or without the H5D module.

    from advisor.darshan_report import report_darshan
    rep = report_darshan("run.darshan")
    print(rep.text()); rep.get_config(); rep.html()

The report lists the files the program touched (HDF5 and netCDF ones identified), the findings over their
thresholds with the seconds at stake (``advisor.darshan_findings``), HDF5-aware advice, what
``ioadvisor import darshan`` makes of every H5D record, and how to trace the program for dataset-level
advice.
"""
from __future__ import annotations

import html
import json
import os
import time
from dataclasses import asdict, dataclass

from advisor.darshan_findings import Finding, find, trace_command
from instrumentation.darshan import account_h5d, log_from_raw
from instrumentation.darshan_files import FileIO, LogFiles, LogJob, characterize
from instrumentation.darshan_raw import NOT_USED, DarshanError, RawLog, is_parser_text, read_parser_text, read_raw

MAX_FILE_ROWS = 20
HDF5_KINDS = ("hdf5", "netcdf-or-hdf5")
"""File kinds `ioadvisor run` can trace at the dataset level (netCDF-4 is HDF5)."""


@dataclass(frozen=True)
class FileRow:
    """One file of the report's table."""

    name: str
    kind: str
    evidence: tuple[str, ...]
    interfaces: tuple[str, ...]
    reads: int
    writes: int
    nbytes: int
    seconds: float
    """I/O time summed over ranks, at the lowest interface that saw the file."""
    ranks: str
    dxt: bool

    @classmethod
    def of(cls, f: FileIO, nprocs: int) -> "FileRow":
        low = f.interfaces.get("POSIX") or f.interfaces.get("STDIO") or f.interfaces.get("MPI-IO")
        ranks = f"all {nprocs} (shared)" if low.shared else str(len(low.rank_seconds))
        return cls(f.name, f.kind, f.evidence, tuple(f.interfaces), low.reads, low.writes, low.nbytes, low.seconds,
                   ranks, f.dxt is not None)


@dataclass(frozen=True)
class LogReport(LogJob):
    """What a Darshan log shows; JSON round trip through ``get_config``/``from_config``."""

    partial: tuple[str, ...]
    n_files: int
    files: tuple[FileRow, ...]
    findings: tuple[Finding, ...]
    h5d: tuple[tuple[str, str], ...]
    """Every H5D dataset with what ``ioadvisor import darshan`` does with it."""
    trace_hint: str
    seconds: float
    """Time taken to read the log and build the report."""

    @property
    def hdf5_files(self) -> tuple[FileRow, ...]:
        return tuple(f for f in self.files if f.kind != "other")

    def get_config(self) -> dict:
        c = asdict(self)
        c["files"] = [asdict(f) for f in self.files]
        c["findings"] = [f.get_config() for f in self.findings]
        c["h5d"] = [list(x) for x in self.h5d]
        return json.loads(json.dumps(c))  # tuples as lists: what a JSON file gives back

    @classmethod
    def from_config(cls, c: dict) -> "LogReport":
        return cls(**{**c, "partial": tuple(c["partial"]),
                      "files": tuple(FileRow(**{**f, "evidence": tuple(f["evidence"]),
                                                "interfaces": tuple(f["interfaces"])}) for f in c["files"]),
                      "findings": tuple(Finding.from_config(f) for f in c["findings"]),
                      "h5d": tuple(tuple(x) for x in c["h5d"])})

    def text(self) -> str:
        out = [f"{self.source}: {self.exe.split()[0] if self.exe else '(no exe)'}, {self.nprocs} rank(s), "
               f"run {self.run_time:.4g} s, darshan-runtime {self.runtime_version}",
               "modules: " + ", ".join(f"{m} v{v}" if v else m for m, v in self.modules.items())]  # text: no version
        if self.partial:
            out.append(f"incomplete: {', '.join(self.partial)} ran out of record memory: some files are missing")
        if self.unread:
            out.append("not read: " + "; ".join(f"{m} ({why})" for m, why in self.unread.items()))
        n_h5 = sum(f.kind in ("hdf5", "netcdf-or-hdf5") for f in self.files)
        n_nc = sum(f.kind == "netcdf" for f in self.files)
        out.append(f"files: {self.n_files} ({n_h5} HDF5, {n_nc} netCDF classic among the {len(self.files)} listed), "
                   "I/O seconds summed over ranks")
        out.append(f"  {'seconds':>9} {'reads':>9} {'writes':>9} {'bytes':>10}  {'ranks':<14} kind    file")
        for f in self.files:
            out.append(f"  {f.seconds:9.3g} {f.reads:9,} {f.writes:9,} {_size(f.nbytes):>10}  {f.ranks:<14} "
                       f"{f.kind:<7} {f.name}" + (" [DXT]" if f.dxt else ""))
        for f in self.hdf5_files:
            out.append(f"  {f.kind}: {f.name} ({'; '.join(f.evidence)})")
        if self.h5d:
            out.append(f"H5D datasets: {len(self.h5d)} (`ioadvisor import darshan` makes a trace of the imported ones)")
            out += [f"  {name}: {what}" for name, what in self.h5d]
        out.append(f"findings: {len(self.findings)}" + ("" if self.findings else " (no threshold crossed)"))
        for x in self.findings:
            out.append(f"  [{x.code}]{' (minor)' if x.level == 'minor' else ''} {x.title}: {x.detail}")
            out.append(f"      at stake: {x.seconds:.3g} s ({x.seconds_from}){_modelled(x)}; threshold {x.threshold}")
            for name in x.files[:3]:
                out.append(f"      file: {name}")
            out += [f"      - {a}" for a in x.advice]
        if any(f.kind in HDF5_KINDS for f in self.files):
            out.append(f"dataset-level advice (chunk shape, cache, compression): trace the program: {self.trace_hint}")
        elif self.hdf5_files:
            out.append("netCDF classic files (PnetCDF or netCDF-3) are not HDF5: `ioadvisor run` does not see their "
                       "variables' accesses; written as netCDF-4 (HDF5) they would be")
        return "\n".join(out)

    def html(self) -> str:
        e = html.escape
        rows = "".join(f"<tr><td>{f.seconds:.3g}</td><td>{f.reads:,}</td><td>{f.writes:,}</td>"
                       f"<td>{_size(f.nbytes)}</td><td>{e(f.ranks)}</td><td>{e(f.kind)}</td><td>{e(f.name)}</td></tr>"
                       for f in self.files)
        finds = "".join(
            f"<h3>{e(x.code)} {e(x.title)}</h3><p>{e(x.detail)}</p><p>at stake: {x.seconds:.3g} s "
            f"({e(x.seconds_from)}){e(_modelled(x))}; threshold {e(x.threshold)}</p><ul>"
            + "".join(f"<li>{e(a)}</li>" for a in x.advice) + "</ul>"
            + ("<p>files: " + ", ".join(e(n) for n in x.files) + "</p>" if x.files else "")
            for x in self.findings) or "<p>No threshold crossed.</p>"
        h5d = ("<h2>H5D datasets</h2><ul>" + "".join(f"<li>{e(n)}: {e(w)}</li>" for n, w in self.h5d) + "</ul>"
               if self.h5d else "")
        hint = (f"<h2>Dataset-level advice</h2><p>Trace the program: <code>{e(self.trace_hint)}</code></p>"
                if any(f.kind in HDF5_KINDS for f in self.files) else "")
        return ("<!doctype html><html><head><meta charset='utf-8'><title>ioadvisor report: "
                f"{e(os.path.basename(self.source))}</title></head><body>"
                f"<h1>{e(os.path.basename(self.source))}</h1><p>{e(self.exe)}: {self.nprocs} rank(s), run "
                f"{self.run_time:.4g} s, darshan-runtime {e(self.runtime_version)}</p>"
                f"<h2>Files ({self.n_files})</h2><table border='1'><tr><th>seconds</th><th>reads</th><th>writes</th>"
                f"<th>bytes</th><th>ranks</th><th>kind</th><th>file</th></tr>{rows}</table>"
                f"<h2>Findings</h2>{finds}{h5d}{hint}</body></html>")


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _modelled(x) -> str:
    """The file-level model's seconds next to the log's: '; modelled: Y s of Z s replayed'."""
    if x.modelled is None:
        return ""
    return f"; modelled: {x.modelled:.3g} s of {x.replayed:.3g} s replayed"


def read_any(path: str | os.PathLike, *, dxt: bool = True) -> RawLog:
    """A binary log (read in a child process) or darshan-parser text, by content."""
    return read_parser_text(str(path)) if is_parser_text(str(path)) else read_raw(path, dxt=dxt)


def report_darshan(path: str | os.PathLike, *, reach_files: bool = True, dxt: bool = True) -> LogReport:
    """The report on one log; ``DarshanError`` (one line naming the file) when it cannot be read or holds no I/O."""
    t0 = time.perf_counter()
    raw = read_any(path, dxt=dxt)
    files = characterize(raw, reach_files=reach_files)
    h5d = ()
    if "H5D" in raw.modules:
        try:
            h5d = account_h5d(log_from_raw(raw, dxt=False))
        except DarshanError as exc:  # H5F unreadable: the datasets cannot be accounted for
            h5d = (("H5D", str(exc).split(": ", 1)[-1]),)
    if not files.files and not h5d:
        failed = {m: why for m, why in raw.unread.items() if why != NOT_USED}
        if failed:
            mod, why = next(iter(failed.items()))
            raise DarshanError(f"{path}: cannot read module {mod} version {raw.module_versions.get(mod)} ({why}): "
                               "the log is truncated or corrupt, or newer than this pydarshan")
        mods = ", ".join(raw.module_versions) or "none"
        raise DarshanError(f"{path}: no I/O to report: the log holds no file records (modules: {mods})")
    return _build(files, h5d, time.perf_counter() - t0)


def _build(files: LogFiles, h5d, seconds: float) -> LogReport:
    rows = tuple(FileRow.of(f, files.nprocs) for f in files.files[:MAX_FILE_ROWS])
    extra = tuple(FileRow.of(f, files.nprocs) for f in files.files[MAX_FILE_ROWS:] if f.kind != "other")
    return LogReport(**files.job_fields(), partial=files.partial, n_files=len(files.files), files=rows + extra,
                     findings=find(files), h5d=tuple(h5d), trace_hint=trace_command(files), seconds=seconds)


def write_json(report: LogReport, path: str | os.PathLike | None = None) -> str:
    text = json.dumps(report.get_config(), indent=1)
    if path is not None:
        with open(path, "w") as fh:
            fh.write(text)
    return text


__all__ = ["FileRow", "LogReport", "read_any", "report_darshan", "write_json"]
