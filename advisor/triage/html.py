"""The triage page: the top applications by recoverable time, their findings, and the next step for each."""
from __future__ import annotations

import html
import json

import pandas as pd

from .store import load

TOP = 20


def render(apps: pd.DataFrame, logs: pd.DataFrame, top: int = TOP) -> str:
    """HTML of the per-application table (``apps.aggregate``) and the per-log counts."""
    e = html.escape
    n_ok = int((logs["status"] == "ok").sum())
    n_noio = int((logs["status"] == "no-io").sum())
    bad = logs[logs["status"] == "bad"]
    head = (f"<p>{len(logs):,} logs: {n_ok:,} with I/O, {n_noio:,} without, {len(bad):,} unreadable. "
            f"{len(apps):,} applications; recoverable {apps['recoverable_low'].sum():.4g} to "
            f"{apps['recoverable'].sum():.4g} s over all jobs (seconds of wall time per job, summed).</p>")
    rows = []
    for i, a in enumerate(apps.head(top).itertuples(index=False), start=1):
        finds = json.loads(a.findings)
        items = "".join(f"<li><b>{e(f['code'])}</b> {e(f['title'])}: {f['seconds']:.3g} s over {f['jobs']} job(s)"
                        f"<br>next step: <code>{e(f['next_step'])}</code></li>" for f in finds) or "<li>none</li>"
        hdf5 = "" if a.hdf5_time is None or pd.isna(a.hdf5_time) else f"{a.hdf5_time:.3g}"
        rows.append(f"<tr><td>{i}</td><td>{e(str(a.exe))}</td><td>{e(str(a.user))}</td><td>{a.jobs}</td>"
                    f"<td>{a.ranks_median:.0f}</td><td>{a.run_time:.4g}</td><td>{a.io_time:.4g}</td><td>{hdf5}</td>"
                    f"<td>{a.recoverable_low:.3g} &ndash; {a.recoverable:.3g}</td><td><ul>{items}</ul>"
                    f"<small>worst job: <code>ioadvisor report {e(str(a.example_log))}</code></small></td></tr>")
    badlist = "".join(f"<li>{e(p)}: {e(r)}</li>" for p, r in zip(bad["path"].head(50), bad["reason"].head(50)))
    more = f"<p>... and {len(bad) - 50:,} more (status == 'bad' in the summary)</p>" if len(bad) > 50 else ""
    return ("<!doctype html><html><head><meta charset='utf-8'><title>ioadvisor triage</title></head><body>"
            f"<h1>I/O triage: applications by recoverable time</h1>{head}"
            "<table border='1'><tr><th>#</th><th>executable</th><th>user</th><th>jobs</th><th>ranks</th>"
            "<th>run s</th><th>I/O s</th><th>HDF5 s</th><th>recoverable s</th><th>findings and next steps</th></tr>"
            + "".join(rows) + "</table>"
            + (f"<h2>Unreadable logs ({len(bad):,})</h2><ul>{badlist}</ul>{more}" if len(bad) else "")
            + "</body></html>")


def write_html(out: str, apps_file: str, dest: str) -> None:
    apps = pd.read_parquet(apps_file)
    logs = load(out, ["path", "status", "reason"])
    with open(dest, "w", encoding="utf-8") as fh:
        fh.write(render(apps, logs))


__all__ = ["render", "write_html"]
