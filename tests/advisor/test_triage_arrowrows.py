"""The triage's tables are built from numpy buffers (``advisor.triage.arrowrows``): the same tables pyarrow's own
conversion gives, and a rerun with a few new logs imports no pandas (pyarrow's ``pa.array`` would, on first use),
in the command's process or in its log reader server."""
import math
import os
import shutil
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from advisor.triage import arrowrows
from advisor.triage.apps import APP_SCHEMA
from advisor.triage.store import CATALOG_SCHEMA, LOG_SCHEMA

ROWS = [
    {"path": "/a/b.darshan", "content_hash": "ff", "size": 12, "mtime": 1.5, "status": "ok", "reason": "",
     "job_id": 7, "exe": "ior", "user": "é-ü ☃", "app": "ior@1", "ranks": 4, "start_time": 1_700_000_000,
     "run_time": 3.25, "io_time": float("nan"), "hdf5_time": None, "n_files": 2, "n_hdf5_files": 0, "dxt": True,
     "findings": [{"code": "P05", "title": "small reads", "seconds": 0.5, "modelled": None, "saves": 0.5,
                   "hdf5": True, "advice": "a | b"},
                  {"code": "P08", "title": "", "seconds": -0.0, "modelled": 1e-300, "saves": 0.0, "hdf5": False,
                   "advice": ""}],
     "codes": "P05,P08", "recoverable": 0.5, "recoverable_low": 0.5, "trace_hint": "", "read_seconds": 0.01},
    {"path": "/c", "content_hash": "00", "size": 0, "mtime": 0.0, "status": "bad", "reason": "x" * 300,
     "job_id": 0, "exe": "", "user": "", "app": "", "ranks": 0, "start_time": 0, "run_time": 0.0, "io_time": 0.0,
     "hdf5_time": 2.0, "n_files": 0, "n_hdf5_files": 0, "dxt": False, "findings": [], "codes": "",
     "recoverable": 0.0, "recoverable_low": 0.0, "trace_hint": "mpiexec -n 4 ioadvisor run", "read_seconds": 0.0},
    {"path": "/d", "findings": None, "start_time": None, "ranks": None, "dxt": None},  # every other column null
]


@pytest.mark.parametrize("rows", [ROWS, ROWS[:1], []])
def test_tables_equal_pyarrows_own_conversion(rows):
    for schema in (LOG_SCHEMA, CATALOG_SCHEMA):
        want = pa.table({f.name: [r.get(f.name) for r in rows] for f in schema}, schema=schema)
        got = arrowrows.table(rows, schema)
        assert got.schema.equals(want.schema, check_metadata=True)
        assert repr(got.to_pylist()) == repr(want.to_pylist())  # NaN is a value (repr 'nan'), not null, in both
        assert [c.null_count for c in got.columns] == [c.null_count for c in want.columns]
    if rows:
        assert math.isnan(arrowrows.table(rows, LOG_SCHEMA).column("io_time")[0].as_py())


def test_application_rows_and_nested_nulls_equal_pyarrows_own_conversion():
    rows = [{"app": "a", "jobs": 3, "ranks_median": 2.5, "hdf5_time": None, "findings": "[]"}, {"app": None}]
    assert arrowrows.table(rows, APP_SCHEMA).equals(pa.Table.from_pylist(rows, schema=APP_SCHEMA))
    t = pa.list_(pa.struct([("x", pa.int32()), ("y", pa.list_(pa.float32()))]))
    values = [[{"x": 1, "y": [1.5, None]}, None, {"x": None, "y": None}], None, []]
    assert arrowrows.column(values, t).equals(pa.array(values, type=t))


@pytest.mark.parametrize("values,type_", [([1.5], pa.int64()), ([3], pa.string()), (["x"], pa.float64())])
def test_values_pyarrow_refuses_are_refused(values, type_):
    with pytest.raises((TypeError, ValueError)):
        arrowrows.column(values, type_)


RERUN = textwrap.dedent("""
    import sys
    import psutil
    from advisor.triage import TriageOptions, triage

    res = triage([sys.argv[1]], TriageOptions(out=sys.argv[2]))
    server = [p for p in psutil.Process().children() if "instrumentation.darshan_raw" in " ".join(p.cmdline())]
    maps = open(f"/proc/{server[0].pid}/maps").read() if server else ""
    print(res.new, len(server), "pandas" in sys.modules, "/pandas/" in maps)
""")


def test_a_rerun_with_a_new_log_imports_no_pandas(tmp_path, darshan_examples):
    arch = tmp_path / "archive"
    arch.mkdir()
    logs = sorted(darshan_examples.glob("*.darshan"))
    for p in logs[:-1]:
        shutil.copy(p, arch / p.name)
    out = str(tmp_path / "s.parquet")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def run() -> list[str]:
        done = subprocess.run([sys.executable, "-c", RERUN, str(arch), out], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert run()[0] == str(len(logs) - 1)
    shutil.copy(logs[-1], arch / logs[-1].name)
    new, servers, here, there = run()
    assert (new, servers) == ("1", "1")
    assert (here, there) == ("False", "False"), "pandas imported by the rerun (here) or its log reader (there)"
