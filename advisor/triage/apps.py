"""One row per application over all its jobs in the summary, ranked by recoverable time.

An application is an executable (or the script an interpreter ran) and the user who ran it
(``logrow.application``), hashed unless the summary was made with names. Per application: jobs, ranks
(median), run, I/O and HDF5 seconds summed over jobs, recoverable seconds summed (the interval's two ends
summed), and its findings: per code, the jobs that showed it, the seconds it holds, and the next step.
"""
from __future__ import annotations

import json
import os

from .logrow import next_step
from .store import load

APP_COLUMNS = ["path", "status", "app", "exe", "user", "ranks", "run_time", "io_time", "hdf5_time", "findings",
               "recoverable", "recoverable_low", "trace_hint"]


def app_findings(jobs) -> list[dict]:
    """Per finding code over an application's jobs: jobs, seconds saved, and the exact next step."""
    by_code: dict[str, dict] = {}
    for row in jobs.itertuples(index=False):
        for x in row.findings:
            d = by_code.setdefault(x["code"], {"code": x["code"], "title": x["title"], "jobs": 0, "seconds": 0.0,
                                               "hdf5": False, "advice": x["advice"], "hint": row.trace_hint})
            d["jobs"] += 1
            d["seconds"] += float(x["saves"])
            d["hdf5"] = d["hdf5"] or bool(x["hdf5"])
            if x["hdf5"] and len(x["advice"]) > len(d["advice"]):
                d["advice"] = x["advice"]
    out = sorted(by_code.values(), key=lambda d: -d["seconds"])
    ranks = int(jobs["ranks"].median()) if len(jobs) else 1
    for d in out:
        hint = d.pop("hint") or (f"{'mpiexec -n %d ' % ranks if ranks > 1 else ''}ioadvisor run -o run.jsonl -- "
                                 "PROGRAM ARGS; ioadvisor advise run.jsonl")
        d["next_step"] = next_step(d["code"], d["hdf5"], d.pop("advice"), hint)
    return out


def aggregate(out: str, dest: str):
    """Write the per-application table of the summary ``out`` to ``dest`` (replaced whole); return it."""
    import pandas as pd

    df = load(out, APP_COLUMNS)
    ok = df[df["status"] == "ok"]
    rows = []
    for app, jobs in ok.groupby("app", sort=False):
        finds = app_findings(jobs)
        rows.append({"app": app, "exe": jobs["exe"].iloc[0], "user": jobs["user"].iloc[0], "jobs": len(jobs),
                     "ranks_median": float(jobs["ranks"].median()), "run_time": float(jobs["run_time"].sum()),
                     "io_time": float(jobs["io_time"].sum()),
                     "hdf5_time": float(jobs["hdf5_time"].sum()) if jobs["hdf5_time"].notna().any() else None,
                     "recoverable": float(jobs["recoverable"].sum()),
                     "recoverable_low": float(jobs["recoverable_low"].sum()),
                     "top_code": finds[0]["code"] if finds else "",
                     "next_step": finds[0]["next_step"] if finds else "",
                     "findings": json.dumps(finds), "example_log": jobs.sort_values("recoverable")["path"].iloc[-1]})
    table = pd.DataFrame(rows, columns=["app", "exe", "user", "jobs", "ranks_median", "run_time", "io_time",
                                        "hdf5_time", "recoverable", "recoverable_low", "top_code", "next_step",
                                        "findings", "example_log"])
    table = table.sort_values(["recoverable", "app"], ascending=[False, True], ignore_index=True)
    tmp = dest + ".tmp"
    table.to_parquet(tmp, index=False)
    os.replace(tmp, dest)
    return table


__all__ = ["aggregate", "app_findings"]
