"""One row per application over all its jobs in the summary, ranked by recoverable time, kept up to date.

An application is an executable (or the script an interpreter ran) and the user who ran it
(``logrow.application``), hashed unless the summary was made with names. Per application: jobs, ranks
(median), run, I/O and HDF5 seconds summed over jobs, recoverable seconds summed (the interval's two ends
summed), and its findings: per code, the jobs that showed it, the seconds it holds, and the next step.

Every figure is a sum, a count or a maximum (the ranks' median comes from their counts), so the table is
updated with a run's new rows alone (``Applications.add``): a rerun costs what its new logs cost, not what
the whole summary does. The table names, in its Parquet metadata, the summary's part files it covers; a
table that does not cover exactly the parts there were before the run (a run that crashed after writing parts,
parts removed by hand) is rebuilt from the whole summary (``aggregate``).
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from . import arrowrows
from .logrow import next_step
from .store import COVERS, parts, relative

APP_COLUMNS = ["path", "status", "app", "exe", "user", "ranks", "run_time", "io_time", "hdf5_time", "findings",
               "recoverable", "recoverable_low", "trace_hint"]
"""The summary's columns an application's row is made of."""
APP_SCHEMA = pa.schema([
    ("app", pa.string()), ("exe", pa.string()), ("user", pa.string()), ("jobs", pa.int64()),
    ("ranks_median", pa.float64()), ("run_time", pa.float64()), ("io_time", pa.float64()),
    ("hdf5_time", pa.float64()), ("recoverable", pa.float64()), ("recoverable_low", pa.float64()),
    ("top_code", pa.string()), ("next_step", pa.string()), ("findings", pa.string()), ("example_log", pa.string()),
    ("example_recoverable", pa.float64()), ("ranks_counts", pa.string()),
])
"""``findings`` is JSON (per code: code, title, jobs, seconds, hdf5, next_step, and the advice and trace hint
it was made of); ``ranks_counts`` is JSON {ranks: jobs}; ``example_log`` the job with the most recoverable time."""


class Applications:
    """The per-application aggregates, folded one summary row at a time."""

    def __init__(self) -> None:
        self.apps: dict[str, dict] = {}

    def add(self, rows) -> None:
        """Fold summary rows (dicts with ``APP_COLUMNS``; rows not ``ok`` are skipped) into the aggregates."""
        for row in rows:
            if row["status"] != "ok":
                continue
            a = self.apps.get(row["app"])
            if a is None:
                a = self.apps[row["app"]] = {
                    "app": row["app"], "exe": row["exe"], "user": row["user"], "jobs": 0, "ranks": {},
                    "run_time": 0.0, "io_time": 0.0, "hdf5_time": None, "recoverable": 0.0,
                    "recoverable_low": 0.0, "findings": {}, "example_log": "", "example_recoverable": -1.0}
            a["jobs"] += 1
            r = str(int(row["ranks"]))
            a["ranks"][r] = a["ranks"].get(r, 0) + 1
            for k in ("run_time", "io_time", "recoverable", "recoverable_low"):
                a[k] += float(row[k])
            h = row["hdf5_time"]
            if h is not None and h == h:  # NaN from pandas: unknown
                a["hdf5_time"] = (a["hdf5_time"] or 0.0) + float(h)
            if float(row["recoverable"]) > a["example_recoverable"]:
                a["example_log"], a["example_recoverable"] = row["path"], float(row["recoverable"])
            for x in row["findings"]:
                d = a["findings"].setdefault(x["code"], {"code": x["code"], "title": x["title"], "jobs": 0,
                                                         "seconds": 0.0, "hdf5": False, "advice": x["advice"],
                                                         "hint": row["trace_hint"] or ""})
                d["jobs"] += 1
                d["seconds"] += float(x["saves"])
                d["hdf5"] = d["hdf5"] or bool(x["hdf5"])
                if x["hdf5"] and len(x["advice"]) > len(d["advice"]):
                    d["advice"] = x["advice"]

    @classmethod
    def read(cls, path: str, covers: list[str]) -> "Applications | None":
        """The aggregates in the table at ``path`` if it covers exactly the parts ``covers``; else None."""
        try:
            pf = pq.ParquetFile(path)
            meta = pf.schema_arrow.metadata or {}
            if COVERS not in meta or sorted(json.loads(meta[COVERS])) != sorted(covers):
                return None
            rows = pf.read().to_pylist()
        except (OSError, ValueError, pa.ArrowException):
            return None
        if rows and "ranks_counts" not in rows[0]:
            return None  # an older table: rebuilt
        self = cls()
        for row in rows:
            finds = {}
            for f in json.loads(row["findings"]):
                finds[f["code"]] = {"code": f["code"], "title": f["title"], "jobs": f["jobs"], "seconds": f["seconds"],
                                    "hdf5": f["hdf5"], "advice": f.get("advice", ""), "hint": f.get("hint", "")}
            self.apps[row["app"]] = {
                "app": row["app"], "exe": row["exe"], "user": row["user"], "jobs": row["jobs"],
                "ranks": json.loads(row["ranks_counts"]), "run_time": row["run_time"], "io_time": row["io_time"],
                "hdf5_time": row["hdf5_time"], "recoverable": row["recoverable"],
                "recoverable_low": row["recoverable_low"], "findings": finds, "example_log": row["example_log"],
                "example_recoverable": row["example_recoverable"]}
        return self

    def rows(self) -> list[dict]:
        """The table's rows, ranked by recoverable seconds (then by name)."""
        out = []
        for a in self.apps.values():
            median = _median(a["ranks"])
            finds = []
            for d in sorted(a["findings"].values(), key=lambda d: (-d["seconds"], d["code"])):
                hint = d["hint"] or (f"{'mpiexec -n %d ' % median if median > 1 else ''}ioadvisor run -o run.jsonl "
                                     "-- PROGRAM ARGS; ioadvisor advise run.jsonl")
                finds.append({**d, "next_step": next_step(d["code"], d["hdf5"], d["advice"], hint)})
            out.append({"app": a["app"], "exe": a["exe"], "user": a["user"], "jobs": a["jobs"],
                        "ranks_median": median, "run_time": a["run_time"], "io_time": a["io_time"],
                        "hdf5_time": a["hdf5_time"], "recoverable": a["recoverable"],
                        "recoverable_low": a["recoverable_low"], "top_code": finds[0]["code"] if finds else "",
                        "next_step": finds[0]["next_step"] if finds else "", "findings": json.dumps(finds),
                        "example_log": a["example_log"], "example_recoverable": a["example_recoverable"],
                        "ranks_counts": json.dumps(a["ranks"], sort_keys=True)})
        out.sort(key=lambda r: (-r["recoverable"], r["app"]))
        return out

    def write(self, dest: str, covers: list[str]) -> pa.Table:
        """Replace ``dest`` with the table (atomically), noting the summary parts it covers."""
        table = arrowrows.table(self.rows(), APP_SCHEMA)
        table = table.replace_schema_metadata({COVERS: json.dumps(sorted(covers)).encode()})
        tmp = dest + ".tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, dest)
        return table


def _median(counts: dict[str, int]) -> float:
    """The median of the values counted in ``counts`` ({value: how many}), as pandas gives it."""
    n = sum(counts.values())
    if not n:
        return 1.0
    order = sorted((int(k), c) for k, c in counts.items())

    def nth(i: int) -> int:
        for v, c in order:
            if i < c:
                return v
            i -= c
        return order[-1][0]

    return (nth((n - 1) // 2) + nth(n // 2)) / 2


def aggregate(out: str, dest: str) -> pa.Table:
    """Write the per-application table of the whole summary ``out`` to ``dest`` (replaced whole); return it."""
    files = parts(out)
    apps = Applications()
    for f in files:
        apps.add(pq.read_table(f, columns=APP_COLUMNS).to_pylist())
    return apps.write(dest, [relative(out, f) for f in files])


__all__ = ["APP_SCHEMA", "Applications", "aggregate"]
