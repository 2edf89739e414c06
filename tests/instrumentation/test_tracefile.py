"""The trace file contract: round trips, streaming, and one-line errors on bad input."""
import json

import numpy as np
import pytest

from instrumentation import (
    AccessRecord,
    ChunkCache,
    DatasetRecord,
    Filter,
    ResizeRecord,
    Selection,
    TraceError,
    TraceHeader,
    TraceWriter,
    load_trace,
    merge_traces,
    write_trace,
)
from instrumentation.records import SCHEMA_VERSION, RecordError


def header(rank=0, size=1, t=1000.0):
    return TraceHeader(SCHEMA_VERSION, "host", 42, rank, size, t, {"h5py": "3"}, ("app.py",))


def dataset(id=0, file="/data/a.h5"):
    return DatasetRecord(
        id=id, library="hdf5", library_version="3.16.0/2.0.0", file=file, path="/x",
        shape=(100, 8), dtype="<f4", maxshape=(None, 8), chunks=(10, 8),
        filters=(Filter("sz3", 32024, {"cd_values": [1, 2]}),), fillvalue=0.0,
        cache=ChunkCache(8 << 20, 8191, 0.75), libver=("earliest", "v200"),
        chunk_offsets=np.array([[0, 0, 4096, 320], [1, 0, 4416, 320]]),
    )


def write_sample(path, n=3, close=True, rank=0, size=1, t=1000.0):
    w = TraceWriter(path, header(rank, size, t))
    w.dataset(dataset())
    for i in range(n):
        w.hyperslab_access(0, "read", (i, 0), (1, 1), (1, 1), (1, 8), 8, 32, 0.1 * i, 1e-5)
    w.access(AccessRecord(0, "write", Selection.box((0, 0), (2, 8)), 16, 64, 1.0, 2e-5))
    pts = Selection.from_config({"points": [[1, 2], [5, 3]]})
    w.access(AccessRecord(0, "read", pts, 2, 8, 1.5, 1e-6))
    w.resizes([(0, (200, 8), 2.0, 1, (), 0.0)])
    if close:
        w.close()
    else:
        w.flush()
    return w


def test_round_trip_keeps_every_field(tmp_path):
    p = tmp_path / "t.jsonl"
    write_sample(p)
    tr = load_trace(p)
    assert tr.complete and tr.header.argv == ("app.py",)
    ds = tr.datasets[0]
    assert ds == dataset()
    assert np.array_equal(ds.chunk_offsets, dataset().chunk_offsets)
    assert [a.op for a in tr.accesses] == ["read"] * 3 + ["write", "read"]
    assert tr.accesses[2].selection == Selection((2, 0), (1, 1), (1, 1), (1, 8))
    assert tr.accesses[4].selection.kind == "points"
    assert tr.accesses[4].selection.points.tolist() == [[1, 2], [5, 3]]
    assert tr.resizes[0].shape == (200, 8)


def test_selection_geometry():
    s = Selection((2, 0), (3, 1), (4, 1), (2, 5))
    assert s.shape == (6, 5) and s.nelements == 30
    assert s.dim_indices(0).tolist() == [2, 3, 6, 7, 10, 11]
    assert s.bounds() == ((2, 0), (12, 5))
    o = Selection((1, 0), (3, 1), (1, 1), (1, 4), indices=((1, 5, 9), None))
    assert o.kind == "orthogonal" and Selection.from_config(o.get_config()) == o


def test_cut_json_lines_file_is_readable_up_to_its_last_whole_line(tmp_path):
    p = tmp_path / "t.jsonl"
    write_sample(p)
    lines = p.read_text().splitlines(keepends=True)
    assert lines[-1].startswith('{"t":"end"')
    p.write_text("".join(lines[:-1]) + '{"t":"a","ds":0,"op":"re')  # a file cut in the middle of a line
    with pytest.raises(TraceError, match=r"t\.jsonl:9: .*truncated last line"):
        load_trace(p)
    tr = load_trace(p, allow_truncated=True)
    assert not tr.complete and len(tr.accesses) == 5


def _resize_line(lines, tail):
    (i,) = [i for i, line in enumerate(lines) if line.startswith('{"t":"r"')]
    assert i == 7
    lines[i] = lines[i][:-1] + tail


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda L: L.__setitem__(0, L[0].replace('"schema":1', '"schema":99')), r":1: unknown schema version 99"),
        (lambda L: L.__setitem__(2, L[2].replace('"op":"read"', '"op":"erase"')), r":3: field 'op'"),
        (lambda L: L.__setitem__(2, L[2].replace('"n":8,', '')), r":3: missing field 'n'"),
        (lambda L: L.__setitem__(2, L[2].replace('"ds":0', '"ds":"0"')), r":3: field 'ds' has wrong type str"),
        (lambda L: L.__setitem__(2, L[2].replace('"ds":0', '"ds":7')), r":3: access refers to unknown dataset id 7"),
        (lambda L: L.__setitem__(1, L[1].replace('"shape":[100,8]', '"shape":[100,"8"]')), r":2: field 'shape'"),
        (lambda L: L.__setitem__(1, L[1].replace('"library":"hdf5"', '"library":"netcdf"')), r":2: field 'library'"),
        (lambda L: L.__setitem__(3, "{not json"), r":4: not valid JSON"),
        (lambda L: L.pop(0), r":1: first record must be the header"),
        (lambda L: L.pop(), r"no end record"),
        (lambda L: L.insert(1, L[0]), r":2: a second header line for rank 0"),
        (lambda L: _resize_line(L, ',"rep":0,"step":[1,0],"t_step":0.1}'), r":8: field 'rep' must be at least 1"),
        (lambda L: _resize_line(L, ',"rep":3,"step":[1],"t_step":0.1}'), r":8: field 'step' must have 2 values"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, mutate, message):
    p = tmp_path / "t.jsonl"
    write_sample(p)
    lines = p.read_text().splitlines()
    mutate(lines)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=message) as err:
        load_trace(p)
    assert str(err.value).startswith(str(p)) and "\n" not in str(err.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(TraceError, match="cannot read trace"):
        load_trace(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("")
    with pytest.raises(TraceError, match="empty trace"):
        load_trace(tmp_path / "e.jsonl")


def test_a_json_lines_trace_is_written_columnar_while_live_and_exported_at_close(tmp_path):
    p = tmp_path / "t.jsonl"
    w = TraceWriter(p, header())
    w.dataset(dataset())
    for i in range(1000):
        w.hyperslab_access(0, "read", (i, 0), (1, 1), (1, 1), (1, 8), 8, 32, float(i), 0.0)
    w.flush()
    live = tmp_path / "t.jsonl.live"
    assert not p.exists() and (live / "_meta.jsonl").is_file()
    killed = load_trace(p, allow_truncated=True)  # what a process killed now leaves
    assert not killed.complete and len(killed.accesses) == 1000
    w.close()
    assert not live.exists()
    tr = load_trace(p)
    assert tr.complete and [a.t_start for a in tr.accesses] == [float(i) for i in range(1000)]


def test_merge_unifies_datasets_and_keeps_ranks(tmp_path):
    traces = []
    for r in range(3):
        p = tmp_path / f"t{r}.jsonl"
        write_sample(p, n=2, rank=r, size=3, t=1000.0 + r)
        traces.append(load_trace(p))
    m = merge_traces(traces)
    assert len(m.datasets) == 1 and m.nprocs == 3
    assert sorted({a.rank for a in m.accesses}) == [0, 1, 2]
    assert [a.t_start for a in m.accesses] == sorted(a.t_start for a in m.accesses)
    out = tmp_path / "merged.jsonl"
    write_trace(m, out)
    back = load_trace(out)
    assert back.nprocs == 3 and [h.rank for h in back.headers] == [0, 1, 2]
    assert sorted(a.rank for a in back.accesses) == sorted(a.rank for a in m.accesses)
    assert sorted(r.rank for r in back.resizes) == [0, 1, 2]
    assert json.loads(out.read_text().splitlines()[0])["size"] == 3


@pytest.mark.parametrize("name", ["t.jsonl", "t.parquet"])
def test_resize_lines_read_back_as_recorded(tmp_path, name):
    """Resize lines are formatted by hand (``resize_lines``, not json.dumps): numpy values, ranks and runs read
    back."""
    w = TraceWriter(tmp_path / name, header(rank=2, size=4))
    w.dataset(dataset())
    recs = [ResizeRecord(0, (np.int64(150), 8), np.float64(1.25), rank=2), ResizeRecord(0, (200, 8), 1e-7, rank=2),
            ResizeRecord(0, (201, 8), 2.0, rank=2, rep=4, step=(2, 0), t_step=np.float64(0.25))]  # an append run
    w.resizes([(r.dataset, r.shape, r.t_start, r.rep, r.step, r.t_step) for r in recs])
    w.close()
    got = load_trace(tmp_path / name).resizes
    assert got == recs and all(type(v) is int for r in got for v in r.shape)
    assert [(r.shape, r.t_start, r.rep) for r in got[2].expanded()] == [
        ((201, 8), 2.0, 1), ((203, 8), 2.25, 1), ((205, 8), 2.5, 1), ((207, 8), 2.75, 1)]
    assert got[2].last_shape == (207, 8)


def test_a_zero_chunk_loads_only_along_an_empty_axis(tmp_path):
    """zarr allows chunks of 0 along an axis of extent 0 (its own test_zero_sized_chunks): such a trace loads;
    a 0 along a non-empty axis is refused, naming the field."""
    zarr = pytest.importorskip("zarr")
    import advisor

    with advisor.trace(tmp_path / "t.parquet"):
        a = zarr.create_array(store=str(tmp_path / "z.zarr"), shape=(0, 2, 3), chunks=(0, 2, 3), dtype="f4")
        a[...]
    (ds,) = load_trace(tmp_path / "t.parquet").datasets.values()
    assert ds.shape == (0, 2, 3) and ds.chunks == (0, 2, 3)
    with pytest.raises(RecordError, match="'chunks'"):
        DatasetRecord.from_config({**ds.get_config(), "shape": [4, 2, 3]})
