"""``ioadvisor triage``: every log a row (bad ones with their reason), applications ranked by recoverable time,
reruns read only new logs, and the summary reads in pandas and DuckDB as is. Real logs: pydarshan's examples
in Darshan's YEAR/MONTH/DAY layout, plus truncated copies (some of which crash libdarshan-util)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

IOADVISOR = Path(sys.executable).parent / "ioadvisor"
HELD_BACK = "dxt.darshan"
"""Left out of the first run, added for the rerun."""


def triage_cli(*args, timeout=600):
    return subprocess.run([str(IOADVISOR), "triage", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def archive(tmp_path_factory, darshan_examples):
    """(archive dir, summary dir, first run's CLI result, the good logs, the truncated logs)."""
    root = tmp_path_factory.mktemp("triage")
    day = root / "archive" / "2020" / "5" / "22"
    day.mkdir(parents=True)
    good, bad = [], []
    for p in sorted(darshan_examples.glob("*.darshan")):
        if p.name == HELD_BACK:
            continue
        shutil.copy(p, day / p.name)
        good.append(day / p.name)
        data = p.read_bytes()
        cut = day / f"cut_{p.name}"
        cut.write_bytes(data[: len(data) * 3 // 10])  # a log cut short: a crashed job, a full disk
        bad.append(cut)
    out = root / "summary.parquet"
    first = triage_cli(root / "archive", "--out", out, "--workers", "1", "--html", root / "triage.html")
    return root, out, first, good, bad


def test_every_log_is_a_row_and_bad_logs_are_listed_with_a_reason(archive):
    root, out, first, good, bad = archive
    assert first.returncode == 0, first.stderr
    assert f"{len(good) + len(bad)} logs found" in first.stdout
    df = pd.read_parquet(out)
    assert sorted(df["path"]) == sorted(str(p) for p in good + bad)
    by_path = df.set_index("path")
    assert set(by_path.loc[[str(p) for p in good], "status"]) <= {"ok", "no-io"}
    cut = by_path.loc[[str(p) for p in bad]]
    assert (cut["status"] == "bad").all() and (cut["reason"].str.len() > 0).all()
    assert not cut["reason"].str.contains("\n").any()
    assert f"{len(bad)} unreadable" in first.stdout


def test_rows_hold_job_ranks_times_and_recoverable_interval(archive):
    root, out, first, good, bad = archive
    df = pd.read_parquet(out).set_index("path")
    ior = df.loc[str(good[0].parent / "ior_hdf5_example.darshan")]
    assert ior["ranks"] == 4 and ior["job_id"] > 0 and ior["run_time"] > 0
    assert ior["hdf5_time"] > 0  # the H5F/H5D modules' time counters
    plain = df.loc[str(good[0].parent / "example.darshan")]
    assert pd.isna(plain["hdf5_time"])  # no HDF5 module in that log: unknown, not zero
    ok = df[df["status"] == "ok"]
    assert (ok["recoverable_low"] <= ok["recoverable"] + 1e-12).all()
    assert (ok["recoverable"] <= ok["io_time"] + 1e-9).all()
    with_findings = ok[ok["codes"] != ""]
    assert len(with_findings)
    for row in with_findings.itertuples():
        saves = [x["saves"] for x in row.findings]
        assert row.recoverable_low == pytest.approx(max(saves)) or row.recoverable_low == pytest.approx(row.io_time)


def test_applications_ranked_hashed_and_summed_over_jobs(archive):
    root, out, first, good, bad = archive
    apps = pd.read_parquet(root / "summary.apps.parquet")
    logs = pd.read_parquet(out)
    ok = logs[logs["status"] == "ok"]
    assert list(apps["recoverable"]) == sorted(apps["recoverable"], reverse=True)
    assert apps["jobs"].sum() == len(ok)
    assert apps["recoverable"].sum() == pytest.approx(ok["recoverable"].sum())
    assert apps["exe"].str.fullmatch(r"[0-9a-f]{12}").all()  # hashed by default
    assert not logs["exe"].str.contains("ior|mpi|/", regex=True).any()
    html = (root / "triage.html").read_text()
    top = apps.iloc[0]
    assert top["exe"] in html and "next step" in html and top["next_step"][:40] in html.replace("&#x27;", "'")


def test_rerun_reads_only_new_logs_and_appends(archive, darshan_examples):
    root, out, first, good, bad = archive
    parts = sorted(out.glob("month=*/*.parquet"))
    again = triage_cli(root / "archive", "--out", out, "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert " 0 read" in again.stdout
    assert sorted(out.glob("month=*/*.parquet")) == parts  # nothing rewritten
    shutil.copy(darshan_examples / HELD_BACK, good[0].parent.parent / HELD_BACK)
    shutil.copy(good[1], root / "archive" / "renamed_copy.darshan")  # same content under a new name
    third = triage_cli(root / "archive", "--out", out, "--workers", "1")
    assert third.returncode == 0, third.stderr
    assert " 1 read" in third.stdout
    df = pd.read_parquet(out)
    assert df["content_hash"].is_unique and len(df) == len(good) + len(bad) + 1
    assert set(parts) < set(out.glob("month=*/*.parquet"))  # appended: the old parts are as they were


def test_summary_is_partitioned_by_month_and_reads_in_duckdb(archive):
    root, out, first, good, bad = archive
    months = {p.name for p in out.glob("month=*")}
    assert months and all(len(m) == len("month=2020-05") for m in months)
    df = pd.read_parquet(out)
    ok = df[df["status"] == "ok"]
    # the partition is the job's start month (from the log), not the directory the log sits in
    assert set(ok["month"].astype(str)) == {t.strftime("%Y-%m") for t in ok["start_time"]}
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    [(n, rec)] = con.execute(f"select count(*), sum(recoverable) from read_parquet('{out}/*/*.parquet') "
                             "where status = 'ok'").fetchall()
    assert n == len(ok) and rec == pytest.approx(ok["recoverable"].sum())
    codes = con.execute(f"select distinct unnest(findings).code from read_parquet('{out}/*/*.parquet')").fetchall()
    assert {c for (c,) in codes} == {x["code"] for fs in df["findings"] for x in fs}


def test_names_kept_on_request(tmp_path, darshan_examples):
    shutil.copy(darshan_examples / "ior_hdf5_example.darshan", tmp_path / "a.darshan")
    res = triage_cli(tmp_path / "a.darshan", "--out", tmp_path / "s.parquet", "--workers", "1", "--names")
    assert res.returncode == 0, res.stderr
    df = pd.read_parquet(tmp_path / "s.parquet")
    assert df["exe"].iloc[0].endswith("ior") and df["trace_hint"].iloc[0].startswith("mpiexec -n 4 ioadvisor run")


def test_no_log_found_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    res = triage_cli(tmp_path / "empty", "--out", tmp_path / "s.parquet", "--workers", "1")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("ioadvisor triage: error: no Darshan log found")
    assert "Traceback" not in res.stderr
