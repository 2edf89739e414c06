"""Reruns of ``advisor.triage`` cost what their new logs cost: the per-application table is updated with the new
rows alone and stays what a rebuild from the whole summary gives; the catalog finds the parts a stopped run left;
few new logs are read without a cluster, and give the rows the cluster gives. Real logs: pydarshan's examples."""
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

from advisor.triage import TriageOptions, run, triage
from advisor.triage.apps import aggregate
from advisor.triage.run import BATCH, MIN_BATCH, batches
from advisor.triage.store import apps_path, catalog_path

VOLATILE = ["read_seconds"]
"""Per-row columns that differ between two reads of the same log (the reading's own time)."""


def _apps(path) -> pd.DataFrame:
    return pd.read_parquet(path).sort_values("app", ignore_index=True)


def _rebuilt(out, tmp_path) -> pd.DataFrame:
    aggregate(out, str(tmp_path / "rebuilt.parquet"))
    return _apps(tmp_path / "rebuilt.parquet")


def _archive(tmp_path, darshan_examples, names):
    d = tmp_path / "archive"
    d.mkdir(exist_ok=True)
    for p in sorted(darshan_examples.glob("*.darshan")):
        if p.name in names:
            shutil.copy(p, d / p.name)
    return d


def test_updated_applications_table_equals_a_rebuild(tmp_path, darshan_examples, monkeypatch):
    logs = sorted(p.name for p in darshan_examples.glob("*.darshan"))
    arch = _archive(tmp_path, darshan_examples, logs[:3])
    out = str(tmp_path / "s.parquet")
    triage([str(arch)], TriageOptions(out=out))
    _archive(tmp_path, darshan_examples, logs[3:])

    def whole_summary_read(*_):
        raise AssertionError("the rerun rebuilt the table from the whole summary")

    monkeypatch.setattr(run, "aggregate", whole_summary_read)
    res = triage([str(arch)], TriageOptions(out=out))
    assert res.new == len(logs) - 3
    updated = _apps(apps_path(out))
    rebuilt = _rebuilt(out, tmp_path)
    assert updated["jobs"].sum() == (pd.read_parquet(out)["status"] == "ok").sum()
    pd.testing.assert_frame_equal(updated, rebuilt, check_exact=False, rtol=1e-9)


def test_catalog_and_table_of_a_stopped_run_are_made_again_from_the_parts(tmp_path, darshan_examples):
    logs = sorted(p.name for p in darshan_examples.glob("*.darshan"))
    arch = _archive(tmp_path, darshan_examples, logs[:-1])
    out = str(tmp_path / "s.parquet")
    triage([str(arch)], TriageOptions(out=out))
    old_catalog, old_apps = tmp_path / "catalog.old", tmp_path / "apps.old"
    shutil.copy(catalog_path(out), old_catalog)
    shutil.copy(apps_path(out), old_apps)
    _archive(tmp_path, darshan_examples, logs[-1:])
    assert triage([str(arch)], TriageOptions(out=out)).new == 1
    # as if that run had stopped after writing its part: catalog and table from before it
    shutil.copy(old_catalog, catalog_path(out))
    shutil.copy(old_apps, apps_path(out))
    again = triage([str(arch)], TriageOptions(out=out))
    assert again.new == 0 and again.skipped == len(logs)
    covered = pq.read_table(catalog_path(out))
    assert sorted(covered["path"].to_pylist()) == sorted(pd.read_parquet(out)["path"])
    rebuilt = _rebuilt(out, tmp_path)
    pd.testing.assert_frame_equal(_apps(apps_path(out)), rebuilt, check_exact=False, rtol=1e-9)
    # a catalog lost altogether: made again from the parts, nothing read twice
    (tmp_path / "s.catalog.parquet").unlink()
    assert triage([str(arch)], TriageOptions(out=out)).new == 0


def test_few_new_logs_read_without_a_cluster_give_the_cluster_rows(tmp_path, darshan_examples):
    arch = _archive(tmp_path, darshan_examples, {p.name for p in darshan_examples.glob("*.darshan")})
    here, there = str(tmp_path / "here.parquet"), str(tmp_path / "there.parquet")
    triage([str(arch)], TriageOptions(out=here))
    triage([str(arch)], TriageOptions(out=there, workers=1, in_process=0))
    a = pd.read_parquet(here).drop(columns=VOLATILE).sort_values("path", ignore_index=True)
    b = pd.read_parquet(there).drop(columns=VOLATILE).sort_values("path", ignore_index=True)
    assert len(a) == len(list(arch.glob("*.darshan")))
    pd.testing.assert_frame_equal(a.astype(str), b.astype(str))


@pytest.mark.parametrize("n,workers", [(1, 1), (9, 2), (3000, 1), (3000, 2), (100_000, 64)])
def test_guided_batches_cover_every_log_once_and_shrink(n, workers):
    todo = list(range(n))
    tasks = batches(todo, workers)
    assert [x for t in tasks for x in t] == todo
    sizes = [len(t) for t in tasks]
    assert sizes == sorted(sizes, reverse=True) and max(sizes) <= BATCH
    assert all(s >= MIN_BATCH for s in sizes[:-1])
    assert sizes[-1] <= max(MIN_BATCH, n // (4 * workers) + 1)  # the tail is small
    fixed = batches(todo, workers, batch=7)
    assert all(len(t) == 7 for t in fixed[:-1]) and sum(map(len, fixed)) == n
