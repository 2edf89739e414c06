"""Columnar traces: round trips with JSON Lines, compact runs, crash safety, streaming merge, bad input."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from advisor.cli import main
from instrumentation import AccessRecord, Selection, TraceError, load_trace, merge_traces
from instrumentation.columnar import part_files
from instrumentation.merge import merge_files
from instrumentation.columns import AccessColumns, compact_runs
from instrumentation.patterns import classify
from instrumentation.tracefile import Trace, TraceWriter
from iomodel.layout import Layout
from iomodel.variables import count_variables

from test_tracefile import dataset, header, write_sample

REPO = Path(__file__).resolve().parents[2]


def same_accesses(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.dataset, x.op, x.selection, x.nelements, x.nbytes, x.rank) == \
               (y.dataset, y.op, y.selection, y.nelements, y.nbytes, y.rank)
        if x.selection.points is not None:
            assert np.array_equal(x.selection.points, y.selection.points)
        assert abs(x.t_start - y.t_start) < 1e-9 and abs(x.duration - y.duration) < 1e-9


def test_columnar_round_trip_matches_json_lines(tmp_path):
    write_sample(tmp_path / "t.jsonl")
    write_sample(tmp_path / "t.parquet")
    j, c = load_trace(tmp_path / "t.jsonl"), load_trace(tmp_path / "t.parquet")
    assert (tmp_path / "t.parquet").is_dir() and c.complete
    assert c.header == j.header and c.datasets == j.datasets and c.resizes == j.resizes
    assert np.array_equal(c.datasets[0].chunk_offsets, dataset().chunk_offsets)
    same_accesses(c.accesses, j.accesses)


def test_convert_both_ways_keeps_every_record(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    write_sample(src, n=50)
    assert main(["trace", "convert", str(src), str(tmp_path / "b.parquet")]) == 0
    assert main(["trace", "convert", str(tmp_path / "b.parquet"), str(tmp_path / "c.jsonl")]) == 0
    a, b, c = (load_trace(tmp_path / n) for n in ("a.jsonl", "b.parquet", "c.jsonl"))
    assert b.columns.rows == a.columns.rows == 3  # the 50 consecutive row reads are one run, in memory either way
    same_accesses(b.accesses, a.accesses)
    same_accesses(c.accesses, a.accesses)
    assert (tmp_path / "c.jsonl").read_text().count('"t":"a"') == 52
    # pandas reads the batches as a Parquet dataset directly
    import pandas as pd

    df = pd.read_parquet(tmp_path / "b.parquet")
    assert int(df["rep"].sum()) == 52 and len(df) == 3 and "start_0" in df


def test_compact_runs_folds_constant_offsets_only():
    recs = [AccessRecord(0, "read", Selection.box((10 * i, 0), (10, 8)), 80, 320, 0.1 * i, 1e-3) for i in range(100)]
    recs += [AccessRecord(0, "read", Selection.box((i, 0), (1, 8)), 8, 32, 20.0 + i, 1e-3)
             for i in (5, 90, 3, 71, 72, 73, 74, 11)]
    recs += [AccessRecord(0, "write", Selection.box((0, 4 * i), (100, 4)), 400, 1600, 30.0 + i, 2e-3) for i in range(2)]
    cols = AccessColumns.from_records(recs)
    packed = compact_runs(cols)
    assert packed.rep.tolist() == [100, 1, 1, 1, 4, 1, 1, 1]  # runs need >= 3 accesses
    assert packed.n_access == len(recs)
    same_accesses(packed.records(), recs)
    every = packed.every(7)
    same_accesses(every.records(), recs[::7])


def test_extent_over_many_blocks_of_rows(monkeypatch):
    """The upper corner is taken CORNER_ROWS rows at a time: the largest row in any block counts, whatever
    block holds it; a run's steps reach past its first access; a trace keeps each dataset's extent until its
    columns change."""
    import instrumentation.columns as columns

    monkeypatch.setattr(columns, "CORNER_ROWS", 3)
    recs = [AccessRecord(0, "read", Selection.box((i % 5, 0), (1, 8)), 8, 32, 0.1 * i, 1e-3) for i in range(10)]
    recs[7] = AccessRecord(0, "read", Selection.box((150, 2), (1, 7)), 7, 28, 0.7, 1e-3)  # beyond the shape
    trace = Trace([], {0: dataset()}, recs)
    assert trace.extent(0) == (151, 9)
    assert trace.extent(0) is trace.extent(0)  # kept
    # a run of 4 accesses stepping by 40 rows: its last access ends at 3 * 40 + 130 + 1
    run = [AccessRecord(0, "read", Selection.box((130 + 40 * i, 0), (1, 8)), 8, 32, 2.0 + i, 1e-3)
           for i in range(4)]
    trace.accesses = recs + run
    assert trace.columns.rows < len(recs) + len(run)  # folded into a run
    assert trace.extent(0) == (251, 9)


def test_records_are_held_as_a_columnar_trace_stores_them():
    """Two ranks' regular reads, interleaved in time, each with its own duration: a Trace made of the records
    folds each rank's run, as writing it to a columnar trace does, and keeps the runs' total durations."""
    dts = np.random.default_rng(1).uniform(1e-4, 5e-3, 20)
    recs = [AccessRecord(0, "read", Selection.box((10 * (i // 2), 0), (10, 8)), 80, 320, 0.1 * i, dts[i],
                         rank=i % 2) for i in range(20)]
    trace = Trace([], {}, recs)
    assert trace.columns.rows == 2 and trace.columns.rank.tolist() == [0, 1]
    assert trace.columns.dt.tolist() == pytest.approx([dts[0::2].sum(), dts[1::2].sum()])
    again = trace.accesses  # made from the columns: rank by rank, each access the mean of its run
    assert [a.rank for a in again] == [0] * 10 + [1] * 10
    assert [a.duration for a in again] == pytest.approx([dts[0::2].mean()] * 10 + [dts[1::2].mean()] * 10)
    one = Trace([], {}, recs[:1])
    assert one.accesses == recs[:1]  # nothing to fold: the records as given


def test_models_see_the_same_accesses_folded_or_not():
    recs = [AccessRecord(0, "write" if i % 50 == 49 else "read", Selection((3 * i, 0), (1, 2), (1, 4), (2, 3)),
                         12, 48, float(i), 1e-4) for i in range(600)]
    recs += [AccessRecord(0, "read", Selection.from_config({"points": [[1, 2], [7, 0]]}), 2, 8, 700.0, 1e-4)]
    cols = AccessColumns.from_records(recs)
    packed = compact_runs(cols)
    assert packed.rows < 30
    ds = dataset()
    lay = Layout("hdf5", (2000, 8), 4, chunks=(64, 8))
    assert count_variables(packed, ds, lay, 1 << 30) == count_variables(recs, ds, lay, 1 << 30)
    assert classify(packed, (2000, 8)) == classify(recs, (2000, 8))


def test_columns_of_one_value_are_views_the_models_read_as_copies(tmp_path):
    """A loaded trace's columns of one value are read-only zero-stride views (nothing allocated for them): the
    chunk walk, the replay and classification give what contiguous copies give, and the numba kernels are only
    ever handed contiguous arrays (a strided one would compile another specialization)."""
    import numba

    from instrumentation.columns import ARRAYS
    from iomodel import cache, chunks, variables

    path = tmp_path / "t.parquet"
    w = TraceWriter(path, header(0, 1, 1000.0))
    w.dataset(dataset())
    for i, r in enumerate(np.random.default_rng(3).integers(0, 100, 500).tolist()):  # random rows: not folded
        w.hyperslab_access(0, "read", (r, 0), (1, 1), (1, 1), (1, 8), 8, 32, 0.1 * i, 1e-4)
    w.close()
    cols = load_trace(path).columns
    views = [name for name in ARRAYS if getattr(cols, name).strides[0] == 0]
    assert {"ds", "n", "nbytes", "rep", "count", "block"} <= set(views) and "start" not in views
    copies = cols._with(**{name: np.ascontiguousarray(getattr(cols, name)) for name in ARRAYS})
    ds = dataset()
    for lay in (Layout("hdf5", (100, 8), 4, chunks=(10, 8)), Layout("zarr", (100, 8), 4, chunks=(16, 4))):
        assert count_variables(cols, ds, lay, 1 << 30) == count_variables(copies, ds, lay, 1 << 30)
    assert classify(cols, (100, 8)) == classify(copies, (100, 8))
    kernels = [f for m in (cache, chunks, variables) for f in vars(m).values()
               if isinstance(f, numba.core.registry.CPUDispatcher)]
    layouts = {a.layout for f in kernels for sig in f.signatures for a in sig if isinstance(a, numba.types.Array)}
    assert layouts == {"C"}


def _bad_trace(tmp_path, edit):
    p = tmp_path / "t.parquet"
    write_sample(p)
    edit(p)
    return p


def test_bad_batches_give_one_line_errors(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = _bad_trace(tmp_path, lambda p: part_files(p)[0].write_bytes(b"PAR1 garbage"))
    with pytest.raises(TraceError, match=r"part-000000\.parquet: not a readable Parquet batch") as err:
        load_trace(p)
    assert "\n" not in str(err.value)

    def other_id(p):
        f = part_files(p)[0]
        t = pq.read_table(f)
        pq.write_table(t.set_column(0, "ds", pa.array(t.column("ds").to_numpy() + 7)), f)
    with pytest.raises(TraceError, match=r"row 0: access refers to unknown dataset id 7"):
        load_trace(_bad_trace(tmp_path, other_id))

    def version(p):
        f = part_files(p)[0]
        pq.write_table(pq.read_table(f).replace_schema_metadata({b"ioadvisor.columns": b"9"}), f)
    with pytest.raises(TraceError, match=r"unknown access-column version 9"):
        load_trace(_bad_trace(tmp_path, version))

    assert main(["trace", "show", str(_bad_trace(tmp_path, lambda p: (p / "_meta.jsonl").write_text("{")))]) == 2


def test_a_directory_of_other_files_is_not_replaced_even_with_force(tmp_path):
    """``--force`` replaces an earlier trace, never a directory holding the user's files: one line, no traceback."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "keep.txt").write_text("the user's")
    proc = subprocess.run([sys.executable, "-m", "advisor", "run", "--force", "-o", str(out), "--",
                           sys.executable, "-c", "pass"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"ioadvisor run: error: {out} is a directory with other files in it, not a trace: not replacing it "
        "(choose another path)"]
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "the user's"


def test_merge_streams_rank_files_into_one_columnar_trace(tmp_path):
    paths = []
    for r in range(3):
        paths.append(tmp_path / f"t.rank{r}.parquet")
        write_sample(paths[-1], n=20, rank=r, size=3, t=1000.0 + r)
    n_traces, n_access, n_ds = merge_files(paths, tmp_path / "m.parquet")
    assert (n_traces, n_access, n_ds) == (3, 66, 1)
    m = load_trace(tmp_path / "m.parquet")
    ref = merge_traces([load_trace(p) for p in paths])
    assert m.nprocs == 3 and [h.rank for h in m.headers] == [0, 1, 2]
    key = lambda a: (a.rank, a.t_start)  # noqa: E731 - the merged file is in rank order, the in-memory one in time order
    same_accesses(sorted(m.accesses, key=key), sorted(ref.accesses, key=key))
    assert len(part_files(tmp_path / "m.parquet")) == 1  # every file costs a reader a fixed time


def test_merge_writes_files_of_at_most_compact_rows(tmp_path, monkeypatch):
    import instrumentation.columnar as columnar
    import instrumentation.merge as merge

    paths = []
    for r in range(3):
        paths.append(tmp_path / f"t.rank{r}.parquet")
        write_sample(paths[-1], n=20, rank=r, size=3, t=1000.0 + r)
    monkeypatch.setattr(merge, "COMPACT_ROWS", 4)  # each rank folds to 3 rows
    merge_files(paths, tmp_path / "m.parquet")
    rows = [columnar.pq.read_metadata(f).num_rows for f in part_files(tmp_path / "m.parquet")]
    assert len(rows) == 3 and max(rows) <= 4, rows
    assert sum(rows) == load_trace(tmp_path / "m.parquet").columns.rows



SCAN = """
import sys, time, h5py, numpy as np
import advisor
path, n = sys.argv[1], int(sys.argv[2])
with h5py.File(sys.argv[3], "w") as f:
    f.create_dataset("x", data=np.zeros((max(n, 10), 16), "f4"), chunks=(256, 16))
with h5py.File(sys.argv[3], "r") as f, advisor.trace(path):
    x = f["x"]
    for i in range(n):
        x[i]
    print("scanned", flush=True)
    if len(sys.argv) > 4:
        time.sleep(60)
"""


def _scan(tmp_path, n, *extra):
    prog = tmp_path / "scan.py"
    prog.write_text(textwrap.dedent(SCAN))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return [sys.executable, str(prog), str(tmp_path / f"scan{n}.parquet"), str(n), str(tmp_path / "d.h5"), *extra], env


def test_regular_scan_costs_bytes_per_run_not_per_access(tmp_path):
    sizes = {}
    for n in (2000, 40000):
        cmd, env = _scan(tmp_path, n)
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        p = tmp_path / f"scan{n}.parquet"
        tr = load_trace(p)
        assert tr.n_access == n and tr.columns.rows <= 1 + n // 10000  # one run per batch (a batch a second)
        sizes[n] = sum(f.stat().st_size for f in p.iterdir())
    assert sizes[40000] < 0.5 * 40000, sizes  # the fixed cost (records file, Parquet footer) dominates


def test_sigkill_leaves_a_readable_prefix(tmp_path):
    cmd, env = _scan(tmp_path, 3000, "sleep")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "scanned"
    p = tmp_path / "scan3000.parquet"
    from instrumentation.columnar import count_accesses

    deadline = time.monotonic() + 20
    # a batch goes out every BATCH_SECONDS: until they hold every access (the first may hold only the first few,
    # when the scan is slowed past BATCH_SECONDS)
    while (not part_files(p) or count_accesses(p)[2] < 3000) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with pytest.raises(TraceError, match="no end record"):
        load_trace(p)
    tr = load_trace(p, allow_truncated=True)
    assert not tr.complete and tr.n_access == 3000
    assert [a.selection.start[0] for a in tr.accesses] == list(range(3000))


def test_resizes_reach_the_disk_with_the_batch_after_them(tmp_path):
    """Resize lines are written with the next batch, not one write each (an append loop's): a process killed
    after a batch leaves every resize before it, each batch row within its extent."""
    from instrumentation import ResizeRecord
    from instrumentation.columnar import ColumnarTraceWriter

    w = ColumnarTraceWriter(tmp_path / "t.parquet", header())
    w.dataset(dataset())
    for i in range(100, 140):
        w.resizes([(0, (i + 1, 8), 0.01 * i, 1, (), 0.0)])
        w.hyperslab_access(0, "write", (i, 0), (1, 1), (1, 1), (1, 8), 8, 32, 0.01 * i + 0.001, 1e-5)
    w.flush()
    w.resizes([(0, (141, 8), 1.41, 1, (), 0.0)])  # after the last batch: lost with the process, as its accesses are
    tr = load_trace(tmp_path / "t.parquet", allow_truncated=True)  # read as a SIGKILL leaves it: no close
    assert [r.shape[0] for r in tr.resizes] == list(range(101, 141))
    assert tr.n_access == 40
    w.close()
    assert [r.shape[0] for r in load_trace(tmp_path / "t.parquet").resizes] == list(range(101, 142))


def _batched_trace(path, batches=10, rows=30):
    """A columnar trace written as ``batches`` batch files (a flush each) of ``rows`` random row reads; its rows."""
    from instrumentation.columnar import ColumnarTraceWriter
    from test_tracefile import header

    w = ColumnarTraceWriter(path, header())
    w.dataset(dataset())
    starts = np.random.default_rng(5).integers(0, 100, batches * rows).tolist()
    for b in range(batches):
        for k, i in enumerate(starts[b * rows:(b + 1) * rows]):
            w.hyperslab_access(0, "read", (i, 0), (1, 1), (1, 1), (1, 8), 8, 32, 0.01 * (b * rows + k), 1e-5)
        w.flush()
    return w, starts


def test_close_keeps_one_batch_as_written_and_gathers_two(tmp_path):
    w, starts = _batched_trace(tmp_path / "a.parquet", batches=1)
    w.close()
    assert [f.name for f in part_files(tmp_path / "a.parquet")] == ["part-000000.parquet"]
    assert load_trace(tmp_path / "a.parquet").columns.expanded().start[:, 0].tolist() == starts
    w, starts = _batched_trace(tmp_path / "b.parquet", batches=2)
    w.close()
    assert [f.name for f in part_files(tmp_path / "b.parquet")] == ["parts-000000-000001.parquet"]
    assert load_trace(tmp_path / "b.parquet").columns.expanded().start[:, 0].tolist() == starts
    # a followed process's part (a loader worker) leaves its batches to the run's merge
    w, starts = _batched_trace(tmp_path / "c.parquet", batches=2)
    w.close(gather=False)
    assert [f.name for f in part_files(tmp_path / "c.parquet")] == ["part-000000.parquet", "part-000001.parquet"]
    assert load_trace(tmp_path / "c.parquet").columns.expanded().start[:, 0].tolist() == starts


def test_close_rewrites_consecutive_batches_into_few_files(tmp_path):
    from instrumentation.columnar import compact_parts

    w, starts = _batched_trace(tmp_path / "a.parquet")
    w.close()
    assert [f.name for f in part_files(tmp_path / "a.parquet")] == ["parts-000000-000009.parquet"]
    assert load_trace(tmp_path / "a.parquet").columns.expanded().start[:, 0].tolist() == starts
    # groups of at most max_rows rows: 30 + 30 rows, not a third batch
    w, starts = _batched_trace(tmp_path / "b.parquet")
    compact_parts(part_files(tmp_path / "b.parquet"), max_rows=70)
    names = [f.name for f in part_files(tmp_path / "b.parquet")]
    assert names == [f"parts-{i:06d}-{i + 1:06d}.parquet" for i in range(0, 10, 2)]
    assert not list((tmp_path / "b.parquet").glob("part-*"))
    got = load_trace(tmp_path / "b.parquet", allow_truncated=True)
    assert got.columns.expanded().start[:, 0].tolist() == starts


def test_close_gathers_small_batches_and_keeps_large_ones_as_written(tmp_path, monkeypatch):
    """Gathering a large batch would cost the exit time per record for a reader's saving of one file."""
    from instrumentation import columnar_writer

    monkeypatch.setattr(columnar_writer, "GATHER_BELOW", 30)  # the batches of 30 rows count as large
    w, starts = _batched_trace(tmp_path / "a.parquet", batches=3)
    inodes = [f.stat().st_ino for f in part_files(tmp_path / "a.parquet")]
    w.close()
    assert [f.stat().st_ino for f in part_files(tmp_path / "a.parquet")] == inodes  # not rewritten
    assert load_trace(tmp_path / "a.parquet").columns.expanded().start[:, 0].tolist() == starts
    monkeypatch.setattr(columnar_writer, "GATHER_BELOW", 31)
    w, starts = _batched_trace(tmp_path / "b.parquet", batches=3)
    w.close()
    assert [f.name for f in part_files(tmp_path / "b.parquet")] == ["parts-000000-000002.parquet"]
    assert load_trace(tmp_path / "b.parquet").columns.expanded().start[:, 0].tolist() == starts


def test_batches_lz4_required_constants_in_statistics_and_older_batches_load(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from instrumentation import columnar_reader

    new, old, other = tmp_path / "new.parquet", tmp_path / "old.parquet", tmp_path / "other.parquet"
    for p in (new, old, other):
        write_sample(p, n=40)
    for f in part_files(new):
        meta = pq.read_metadata(f)
        assert {meta.row_group(0).column(i).compression for i in range(meta.num_columns)} == {"LZ4"}  # Parquet LZ4_RAW
        schema = pq.read_schema(f)
        assert [f.name for f in schema if f.nullable] == ["idx_len", "idx"]  # null but for the points read
        # statistics on the columns of one value only: the reader takes them from there
        t = pq.read_table(f)
        one = {c for c in t.column_names if c not in ("idx", "idx_len") and len(set(t.column(c).to_pylist())) == 1}
        assert "ds" in one and "start_0" not in one
        stats = {meta.row_group(0).column(i).path_in_schema for i in range(meta.num_columns)
                 if meta.row_group(0).column(i).is_stats_set}
        assert stats == one
    # written by another Parquet writer: statistics on every column
    for f in part_files(other):
        pq.write_table(pq.read_table(f), f, compression="snappy")
    # as written before: zstd, every column nullable
    for f in part_files(old):
        t = pq.read_table(f)
        t = t.cast(pa.schema([c.with_nullable(True) for c in t.schema], metadata=t.schema.metadata))
        pq.write_table(t, f, compression="zstd", use_dictionary=False, write_statistics=False,
                       column_encoding={c: "DELTA_BINARY_PACKED" for c in t.column_names
                                        if c not in ("idx", "idx_len")})
        assert pq.read_metadata(f).row_group(0).column(0).compression == "ZSTD"
    ref = load_trace(new)
    same_accesses(load_trace(old).accesses, ref.accesses)
    same_accesses(load_trace(other).accesses, ref.accesses)
    # decoded on Arrow's threads (large row groups) or on this one: the same columns
    monkeypatch.setattr(columnar_reader, "THREADED_ROWS", 1)
    threaded = load_trace(new)
    for name in ("ds", "write", "rank", "t0", "dt", "t_step", "n", "nbytes", "rep", "kind", "ndim", "start", "count",
                 "stride", "block", "step", "collective"):
        assert np.array_equal(getattr(threaded.columns, name), getattr(ref.columns, name)), name
    same_accesses(threaded.accesses, ref.accesses)


def test_a_null_in_an_access_column_is_a_one_line_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def null_rank(p):
        f = part_files(p)[0]
        t = pq.read_table(f)
        rank = pa.array([None] + [0] * (t.num_rows - 1), pa.int32())
        pq.write_table(t.set_column(t.column_names.index("rank"), "rank", rank), f)
    with pytest.raises(TraceError, match=r"part-000000\.parquet: column 'rank' must hold integers without nulls"):
        load_trace(_bad_trace(tmp_path, null_rank))


def test_loading_a_trace_does_not_import_pandas(tmp_path):
    """Arrow's ``to_numpy`` imports pandas, 0.23 s of a process's first load: the reader takes the buffers."""
    write_sample(tmp_path / "t.parquet")
    code = ("import sys\nfrom instrumentation import load_trace\nfrom instrumentation.columnar import count_accesses\n"
            "load_trace(sys.argv[1]).accesses\ncount_accesses(sys.argv[1])\nprint('pandas' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.parquet")], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "False"


def _owner(a):
    while isinstance(a, np.ndarray):
        a = a.base
    return a.obj if isinstance(a, memoryview) else a


def test_large_columns_are_fresh_mappings_holding_what_numpy_arrays_would(tmp_path, monkeypatch):
    """Columns of FRESH_BYTES or more are anonymous mappings (no huge-page advice), columns of one value read-only
    zero-stride views of it: the same values, the others writable, contiguous and independent of each other and
    of other loads."""
    import mmap

    from instrumentation import arrowcodec
    from instrumentation.columns import ARRAYS

    write_sample(tmp_path / "t.parquet", n=40)
    small = load_trace(tmp_path / "t.parquet").columns
    monkeypatch.setattr(arrowcodec, "FRESH_BYTES", 1)
    big, other = (load_trace(tmp_path / "t.parquet").columns for _ in range(2))
    assert small.rows == 3 and not small.ds.any() and small.write.any() and small.irregular
    one = set()
    for name in ARRAYS:
        a, b = getattr(small, name), getattr(big, name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name
        if b.strides[0] == 0:
            one.add(name)
            assert not b.flags.writeable and a.strides[0] == 0 and (b == b[:1]).all(), name
            continue
        assert isinstance(_owner(b), mmap.mmap) and not isinstance(_owner(a), mmap.mmap)
        assert b.flags.c_contiguous and b.flags.writeable
    assert {"ds", "rank", "count", "stride"} <= one and not one & {"write", "n", "start", "t0"}
    big.n[:] = -1
    big.start[:] = 7
    assert not (other.n == -1).any() and not (other.start == 7).any() and not (big.nbytes == -1).any()
    assert big.irregular.keys() == small.irregular.keys()
