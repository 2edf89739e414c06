import json

import pytest

from advisor.cli import main
from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, Filter, Selection, TraceHeader
from instrumentation.tracefile import TraceWriter, load_trace


def box_access(ds, op, start, shape, itemsize=4, rank=0, dt=0.001):
    sel = Selection.box(start, shape)
    return AccessRecord(ds, op, sel, sel.nelements, itemsize * sel.nelements, 0.0, dt, rank)


def write_trace_file(path, rank=0, size=1, n_rows=190, n_cols=4):
    w = TraceWriter(path, TraceHeader(1, "vm", 1, rank, size, 0.0))
    w.dataset(DatasetRecord(0, "hdf5", "2.0.0", "/d/f.h5", "/features", (200_000, 32), "float32",
                            chunks=(25_000, 1)))
    w.dataset(DatasetRecord(1, "zarr", "3.1.6", "/d/s.zarr", "/temp", (100, 180, 360), "float64",
                            chunks=(1, 180, 360), shards=(10, 180, 360), filters=(Filter("zstd"),)))
    for i in range(n_rows):
        w.access(box_access(0, READ, (1000 * i, 0), (1000, 32), rank=rank))
    for j in range(n_cols):
        w.access(box_access(0, READ, (0, j), (200_000, 1), rank=rank))
    for t in range(100):
        w.access(box_access(1, WRITE, (t, 0, 0), (1, 180, 360), itemsize=8, rank=rank))
    w.access(box_access(1, READ, (0, 50, 60), (100, 1, 1), itemsize=8, rank=rank))
    w.close()
    return path


def test_show_summarises_datasets_and_patterns(tmp_path, capsys):
    path = write_trace_file(tmp_path / "t.jsonl")
    assert main(["trace", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 datasets, 295 accesses (195 reads, 100 writes)" in out
    assert "hdf5 /d/f.h5::/features" in out and "chunks (25000, 1)" in out
    assert "mixed: rows 98% (1000x32), columns 2% (200000x1)" in out
    assert "rows (1x180x360)" in out and "columns (100x1x1)" in out
    assert "51.8 MB" in out  # 100 writes of 180 x 360 float64


def test_show_json(tmp_path, capsys):
    path = write_trace_file(tmp_path / "t.jsonl", n_cols=0)
    assert main(["trace", "show", "--json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    feats, temp = doc["datasets"]
    assert feats["reads"]["kind"] == "rows" and feats["n_reads"] == 190
    assert feats["reads"]["classes"][0]["shape"] == [1000, 32]
    assert feats["bytes_read"] == 190 * 1000 * 32 * 4
    assert temp["writes"]["kind"] == "rows" and temp["filters"] == ["zstd"] and temp["shards"] == [10, 180, 360]


@pytest.mark.parametrize("damage, line", [
    (lambda text: text[: len(text) // 2], None),  # cut mid-line: a killed process
    (lambda text: text.replace('"op":"read"', '"op":"peek"', 1), 4),
    (lambda text: text.replace('"schema":1', '"schema":99'), 1),
])
def test_bad_trace_is_one_line_error_with_file_and_line(tmp_path, capsys, damage, line):
    good = write_trace_file(tmp_path / "t.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(damage(good.read_text()))
    assert main(["trace", "show", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("ioadvisor trace: error: ")
    n_lines = len(bad.read_text().splitlines())
    assert f"{bad}:{line or n_lines}:" in err


def test_truncated_trace_shows_its_prefix_on_request(tmp_path, capsys):
    good = write_trace_file(tmp_path / "t.jsonl")
    bad = tmp_path / "cut.jsonl"
    bad.write_text(good.read_text()[:3000])
    assert main(["trace", "show", "--allow-truncated", str(bad)]) == 0
    out = capsys.readouterr().out
    assert "truncated: prefix only" in out and "rows" in out


def test_merge_rank_files(tmp_path, capsys):
    paths = [write_trace_file(tmp_path / f"t.rank{r:04d}.jsonl", rank=r, size=3, n_rows=10 * (r + 1))
             for r in range(3)]
    out = tmp_path / "merged.jsonl"
    assert main(["trace", "merge", "-o", str(out), *map(str, paths)]) == 0
    merged = load_trace(out)
    assert merged.nprocs == 3 and len(merged.datasets) == 2
    reads_of_rows = {r: sum(1 for a in merged.accesses if a.rank == r and a.selection.shape == (1000, 32))
                     for r in range(3)}
    assert reads_of_rows == {0: 10, 1: 20, 2: 30}
    assert main(["trace", "show", str(out)]) == 0
    assert "ranks 0-2" in capsys.readouterr().out


def test_merge_refuses_a_corrupt_input(tmp_path, capsys):
    good = write_trace_file(tmp_path / "a.jsonl")
    bad = tmp_path / "b.jsonl"
    bad.write_text("not json\n")
    assert main(["trace", "merge", "-o", str(tmp_path / "m.jsonl"), str(good), str(bad)]) == 2
    assert f"{bad}:1:" in capsys.readouterr().err
    assert not (tmp_path / "m.jsonl").exists()
