"""Opens and closes of files and datasets (``o`` records, instrumentation/opens.py): what the h5py and zarr hooks
and the libhdf5 interposer record, how they round-trip and merge, and each access's open span (``epoch``)."""
from __future__ import annotations

import multiprocessing as mp
from dataclasses import replace

import numpy as np
import pytest

import advisor
from instrumentation.merge import merge_files
from instrumentation.opens import CLOSE, OPEN, OpenRecord, mark_epochs
from instrumentation.records import AccessRecord, Selection
from instrumentation.tracefile import Trace, TraceWriter, load_trace, write_trace

from test_tracefile import dataset, header


def _write(path, n_rows=400, chunk=100):
    import h5py

    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(n_rows * 8.0).reshape(n_rows, 8), chunks=(chunk, 8),
                         compression="gzip")


def _reopening_program(data, batches=3):
    """``with h5py.File`` inside the loop: the file opened, read (two rows of chunk 0, one handle on x) and
    closed per batch."""
    import h5py

    for k in range(batches):
        with h5py.File(data, "r") as f:
            x = f["x"]
            x[2 * k]
            x[2 * k + 1]
            del x


def _events(trace, path=None):
    return [(o.event, o.path) for o in trace.opens if path is None or o.path in (None, path)]


@pytest.mark.parametrize("name", ["t.parquet", "t.jsonl"])
def test_h5py_file_and_dataset_opens_and_closes_are_recorded(tmp_path, name):
    data = tmp_path / "d.h5"
    _write(data)
    with advisor.trace(tmp_path / name) as t:
        _reopening_program(data)
    trace = t.load()
    file = str(data)
    assert all(o.file == file and o.via == "h5py" for o in trace.opens)
    assert _events(trace) == [(OPEN, None), (OPEN, "/x"), (CLOSE, "/x"), (CLOSE, None)] * 3
    times = [o.t_start for o in trace.opens]
    assert times == sorted(times) and times[0] > 0
    # each batch's two reads under one open span, the next batch's under the next
    assert trace.columns.expanded().epoch.tolist() == [0, 0, 2, 2, 4, 4]  # x's own close and its file's count


def test_a_temporary_dataset_per_read_is_a_reopen_per_read(tmp_path):
    """``f["x"][i]`` with no handle on x held: HDF5 closes x (and frees its chunk cache) after every read."""
    data = tmp_path / "d.h5"
    _write(data)
    import h5py

    with advisor.trace(tmp_path / "t.parquet") as t:
        with h5py.File(data, "r") as f:
            held = f["x"]
            for i in range(3):
                f["x"][i]  # another handle on x is held: one open span
            del held
            for i in range(3):
                f["x"][i]  # none held: each read its own span
    trace = t.load()
    epochs = trace.columns.expanded().epoch.tolist()
    assert epochs[:3] == [0, 0, 0] and len(set(epochs[3:])) == 3 and epochs[3] > 0
    assert sum(1 for o in trace.opens if o.path == "/x" and o.event == CLOSE) == 4


def test_tracing_opens_changes_nothing_the_program_sees(tmp_path):
    import h5py

    data = tmp_path / "d.h5"
    _write(data)
    with advisor.trace(tmp_path / "t.parquet"):
        with h5py.File(data, "r") as f:
            got = f["x"][3]
            again = h5py.File(f.id)  # bound to an open file: no open recorded, the same file
            assert again.filename == f.filename
        with pytest.raises(FileNotFoundError):
            h5py.File(tmp_path / "missing.h5", "r")
    assert got.tolist() == list(np.arange(24.0, 32.0))
    assert [o.event for o in load_trace(tmp_path / "t.parquet").opens] == [OPEN, OPEN, CLOSE, CLOSE]


def test_zarr_opens_are_recorded(tmp_path):
    zarr = pytest.importorskip("zarr")
    store = tmp_path / "a.zarr"
    with advisor.trace(tmp_path / "t.parquet") as t:
        g = zarr.open_group(store, mode="w")
        g.create_array("v", shape=(10,), chunks=(5,), dtype="f8")[:] = 1.0
        zarr.open_array(store, path="v", mode="r")[:4]
        zarr.open_group(store, mode="r")
    trace = t.load()
    assert [(o.path, o.event, o.via) for o in trace.opens] == [(None, OPEN, "zarr"), ("v", OPEN, "zarr"),
                                                                (None, OPEN, "zarr")]
    assert {o.file for o in trace.opens} == {trace.datasets[0].file}


def test_open_records_round_trip_through_json_lines_and_parquet(tmp_path):
    data = tmp_path / "d.h5"
    _write(data)
    with advisor.trace(tmp_path / "t.parquet") as t:
        _reopening_program(data)
    first = t.load()
    write_trace(first, tmp_path / "t.jsonl")
    jl = load_trace(tmp_path / "t.jsonl")
    write_trace(jl, tmp_path / "back.parquet")
    back = load_trace(tmp_path / "back.parquet")
    for tr in (jl, back):
        assert tr.opens == first.opens
        assert tr.columns.expanded().epoch.tolist() == first.columns.expanded().epoch.tolist()


def _worker(data, _):
    _reopening_program(data, batches=2)


def test_a_followed_process_s_opens_merge_with_its_process_index(tmp_path):
    data = tmp_path / "d.h5"
    _write(data)
    ctx = mp.get_context("fork")
    with advisor.trace(tmp_path / "t.parquet") as t:
        _reopening_program(data, batches=1)
        w = ctx.Process(target=_worker, args=(data, 0))
        w.start()
        w.join()
    assert w.exitcode == 0
    trace = t.load()
    assert len(trace.header.processes) == 2
    assert [(o.process, o.event, o.path) for o in trace.opens if o.process == 0] == [
        (0, OPEN, None), (0, OPEN, "/x"), (0, CLOSE, "/x"), (0, CLOSE, None)]
    assert len([o for o in trace.opens if o.process == 1]) == 8
    cols = trace.columns.expanded()
    # each process's accesses counted against its own closes: the worker's first batch is its span 0
    assert cols.epoch[cols.proc == 1].tolist() == [0, 0, 2, 2] and cols.epoch[cols.proc == 0].tolist() == [0, 0]


def _rank_trace(path, rank, t_origin, closes):
    w = TraceWriter(path, header(rank, 2, t_origin))
    w.dataset(dataset())
    for k in range(4):
        w.access(AccessRecord(0, "read", Selection.box((k, 0), (1, 8)), 8, 32, 1.0 * k, 0.01, rank))
    for at in closes:
        w.opened(OpenRecord("/data/a.h5", None, CLOSE, at, rank, via="h5py"))
    w.close()


@pytest.mark.parametrize("out", ["m.parquet", "m.jsonl"])
def test_rank_files_merge_with_their_rank_and_clock(tmp_path, out):
    _rank_trace(tmp_path / "r0.parquet", 0, 1000.0, [1.5])
    _rank_trace(tmp_path / "r1.parquet", 1, 1000.5, [2.5])  # its clock starts 0.5 s later
    merge_files([tmp_path / "r0.parquet", tmp_path / "r1.parquet"], tmp_path / out)
    m = load_trace(tmp_path / out)
    assert sorted((o.rank, o.t_start) for o in m.opens) == [(0, 1.5), (1, 3.0)]
    cols = m.columns.expanded()
    order = np.lexsort((cols.t0, cols.rank))
    assert cols.epoch[order].tolist() == [0, 0, 1, 1, 0, 0, 0, 1]  # rank 1: accesses at 0.5..3.5, closed at 3.0


def test_a_close_inside_a_folded_run_splits_it(tmp_path):
    """A strided scan folded into one run, with a close in the middle: the accesses after it are the next span."""
    recs = [AccessRecord(0, "read", Selection.box((k, 0), (1, 8)), 8, 32, 0.1 * k, 0.01) for k in range(10)]
    tr = Trace([header()], {0: dataset()}, recs)
    assert tr.columns.rows == 1  # one run
    marked = mark_epochs(tr.columns, [OpenRecord("/data/a.h5", "/x", CLOSE, 0.45)], tr.datasets)
    assert marked.n_access == 10 and marked.expanded().epoch.tolist() == [0] * 5 + [1] * 5
    other = mark_epochs(tr.columns, [OpenRecord("/data/b.h5", None, CLOSE, 0.45),
                                     OpenRecord("/data/a.h5", "/y", CLOSE, 0.45),
                                     OpenRecord("/data/a.h5", None, CLOSE, 0.45, process=1)], tr.datasets)
    assert not other.epoch.any()  # another file, another dataset, another process


def test_a_trace_without_open_records_is_one_span_per_dataset(tmp_path):
    """Traces written before opens were recorded (no ``o`` lines) read as they did: every access in span 0."""
    w = TraceWriter(tmp_path / "old.parquet", header())
    w.dataset(dataset())
    for k in range(5):
        w.access(AccessRecord(0, "read", Selection.box((k, 0), (1, 8)), 8, 32, 0.1 * k, 0.01))
    w.close()
    assert b'"t":"o"' not in (tmp_path / "old.parquet" / "_meta.jsonl").read_bytes()
    old = load_trace(tmp_path / "old.parquet")
    assert old.opens == [] and not old.columns.epoch.any()
    write_trace(old, tmp_path / "old.jsonl")
    assert b'"t":"o"' not in (tmp_path / "old.jsonl").read_bytes()


def test_open_record_fields_are_checked():
    from instrumentation.records import RecordError

    good = OpenRecord("/f.h5", "/x", OPEN, 1.0, 2, 3, "h5py")
    assert OpenRecord.from_config(good.get_config()) == good
    assert OpenRecord.from_config({"file": "/f.h5", "ev": "close", "t0": 2}, rank=4) == \
        OpenRecord("/f.h5", None, CLOSE, 2.0, 4)
    for bad, field in (({"file": "/f.h5", "ev": "shut", "t0": 1}, "ev"), ({"ev": "open", "t0": 1}, "file"),
                       ({"file": "/f.h5", "ev": "open", "t0": "x"}, "t0"),
                       ({"file": "/f.h5", "ev": "open", "t0": 1, "proc": -1}, "proc")):
        with pytest.raises(RecordError, match=field):
            OpenRecord.from_config(bad)
    assert replace(good, process=0).get_config().get("proc") is None


def test_an_interposed_c_program_s_h5fopen_and_h5fclose_are_recorded(tmp_path):
    """A C program (``ioadvisor run``, the libhdf5 interposer preloaded) that opens its file again per batch: every
    H5Fopen and H5Fclose in the trace, in the program's order, and its reads in the open spans they ran in."""
    from test_interpose import SERIAL, compile_c, traced_run

    exe = compile_c(tmp_path, "reopen_batches.c", SERIAL)
    data = tmp_path / "r.h5"
    trace, truth = traced_run(tmp_path, exe, data, output="t.parquet")
    assert [t["ev"] for t in truth] == [OPEN, CLOSE] * 4
    below = [o for o in trace.opens if o.via == "libhdf5"]
    assert below == [o for o in trace.opens]
    # the created file's close (H5Fcreate is no reopen), then the program's own opens and closes
    assert [o.event for o in below] == [CLOSE] + [t["ev"] for t in truth]
    assert {(o.file, o.path) for o in below} == {(str(data), None)}
    reads = trace.columns.expanded()
    reads = reads.take(~reads.write)
    assert reads.epoch.tolist() == [1, 1, 2, 2, 3, 3, 4, 4]


def test_the_writer_folds_no_run_across_a_close(tmp_path):
    """A row scan that goes on across a reopen, in one batch (the h5py hooks' records folded in C where that is
    built): the stored runs end at the close, so each access keeps its own time and open span."""
    import h5py
    import pyarrow.parquet as pq

    data = tmp_path / "d.h5"
    _write(data)
    with advisor.trace(tmp_path / "t.parquet") as t:
        for lo in (0, 100):
            with h5py.File(data, "r") as f:
                x = f["x"]
                for k in range(lo, lo + 100):
                    x[k]
                del x
    trace = t.load()
    (close, *_) = sorted(o.t_start for o in trace.opens if o.event == CLOSE and o.path == "/x")
    stored = pq.read_table(sorted((tmp_path / "t.parquet").glob("part-*.parquet"))).to_pydict()
    assert sum(stored["rep"]) == 200 and max(stored["rep"]) > 1  # folded into runs
    close_ns = close * 1e9
    for t0, step, rep in zip(stored["t0_ns"], stored["t_step_ns"], stored["rep"]):
        assert not t0 < close_ns < t0 + step * (rep - 1)  # no run starts before the close and ends after it
    assert trace.columns.expanded().epoch.tolist() == [0] * 100 + [2] * 100
