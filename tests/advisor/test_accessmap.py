import numpy as np
import pytest

from advisor.accessmap import access_map, box_histogram, pick
from advisor.cli import main
from instrumentation.columns import AccessColumns
from instrumentation.records import READ, WRITE, AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import Trace

from test_cli_trace import write_trace_file


def _trace(ds, records):
    return Trace([TraceHeader(1, "h", 1, 0, 1, 0.0)], {ds.id: ds}, records)


def _box(ds, op, start, shape, t, itemsize=4):
    sel = Selection.box(start, shape)
    return AccessRecord(ds, op, sel, sel.nelements, itemsize * sel.nelements, t, 0.001, 0)


def test_box_histogram_matches_element_by_element_sums():
    rng = np.random.default_rng(1)
    na, nb, wa, wb = 7, 5, 6, 9
    a0 = rng.integers(0, na * wa, 300)
    a1 = np.minimum(a0 + rng.integers(1, 30, 300), na * wa)
    b0 = rng.integers(0, nb * wb, 300)
    b1 = np.minimum(b0 + rng.integers(1, 40, 300), nb * wb)
    w = rng.random(300) * 1000
    dense = np.zeros((na * wa, nb * wb))
    for i in range(300):
        dense[a0[i]:a1[i], b0[i]:b1[i]] += w[i] / ((a1[i] - a0[i]) * (b1[i] - b0[i]))
    expected = dense.reshape(na, wa, nb, wb).sum(axis=(1, 3))
    got = box_histogram(a0, a1, b0, b1, w, wa, wb, na, nb)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-6)
    assert got.sum() == pytest.approx(w.sum())


def test_map_puts_the_bytes_in_the_chunks_read_and_the_writes_apart():
    ds = DatasetRecord(0, "hdf5", "2", "/f.h5", "/x", (1000, 64), "float32", chunks=(100, 16))
    recs = [_box(0, WRITE, (0, 0), (1000, 64), 0.0)]
    recs += [_box(0, READ, (200 + 10 * i, 16), (10, 16), 1.0 + i) for i in range(10)]  # chunk row 2, column 1
    m = access_map(_trace(ds, recs))
    assert m.axes == (0, 1) and m.bin_size == (100, 16) and m.read_bytes.shape == (10, 4)
    assert m.read_bytes.sum() == pytest.approx(10 * 10 * 16 * 4)
    assert m.read_bytes[2, 1] == pytest.approx(m.read_bytes.sum())  # all of it in that one chunk
    assert m.write_bytes.sum() == pytest.approx(1000 * 64 * 4)
    np.testing.assert_allclose(m.write_bytes, 1000 * 64 * 4 / 40)  # the whole array, evenly
    # timeline: the write first, the reads after, each at its position along axis 0
    assert m.time_unit == "s" and m.timeline_axis == 0
    first_read = int(np.argmax(m.timeline_read.sum(axis=1) > 0))
    assert m.timeline_write.sum(axis=1)[0] > 0 and first_read > 0
    rows = np.flatnonzero(m.timeline_read.sum(axis=0)) * m.timeline_bin
    assert rows.min() >= 190 and rows.max() < 310


def test_runs_count_like_the_accesses_they_fold():
    ds = DatasetRecord(0, "hdf5", "2", "/f.h5", "/x", (50_000, 8), "float64", chunks=(1000, 8))
    recs = [_box(0, READ, (7 * i, 0), (5, 8), 0.01 * i, itemsize=8) for i in range(5000)]
    folded = _trace(ds, recs)
    assert folded.columns.rows < 10  # stored as runs
    unfolded = _trace(ds, AccessColumns.from_records(recs))
    a, b = access_map(folded), access_map(unfolded)
    np.testing.assert_allclose(a.read_bytes, b.read_bytes)
    np.testing.assert_allclose(a.timeline_read, b.timeline_read)
    assert a.n_access == 5000 and a.read_bytes.sum() == pytest.approx(5000 * 5 * 8 * 8)


def test_3d_shows_the_axes_the_accesses_move_along_and_says_so():
    ds = DatasetRecord(0, "zarr", "3", "/s.zarr", "v", (40, 30, 20), "float32", chunks=(10, 30, 5))
    recs = [_box(0, READ, (t, 0, x), (1, 30, 1), t + x / 100) for t in range(40) for x in range(0, 20, 3)]
    m = access_map(_trace(ds, recs))
    assert m.axes == (0, 2)
    assert "axis 0" in m.projection and "axis 2" in m.projection and "summed over axis 1" in m.projection
    assert m.read_bytes.shape == (4, 4)


def test_a_million_accesses_from_columns(tmp_path):
    # one run of 1.2M single-row reads: the map unrolls it in numpy, every byte counted
    ds = DatasetRecord(0, "hdf5", "2", "/f.h5", "/x", (1_200_000, 4), "float32", chunks=(10_000, 4))
    n = 1_200_000
    cols = AccessColumns.slabs([0], [False], (np.array([[0, 0]]), np.array([[1, 1]]), np.array([[1, 1]]),
                               np.array([[1, 4]])), [4], [16], [0.0], [12.0], 0, [2])
    from dataclasses import replace

    cols = replace(cols, rep=np.array([n]), step=np.array([[1, 0]]), t_step=np.array([1e-5]))
    m = access_map(_trace(ds, cols))
    assert m.n_access == n and m.read_bytes.sum() == pytest.approx(16 * n)
    np.testing.assert_allclose(m.read_bytes[:, 0], 16 * 10_000)  # each chunk read once, row by row


def test_pick_defaults_to_the_busiest_array_and_names_the_others_on_a_miss(tmp_path):
    trace = _trace(DatasetRecord(0, "hdf5", "2", "/f.h5", "/x", (10,), "float32"),
                   [_box(0, READ, (0,), (10,), 0.0)])
    assert pick(trace).path == "/x"
    with pytest.raises(ValueError, match=r"no dataset 'nope' \(recorded: /x\)"):
        pick(trace, "nope")


def test_trace_plot_writes_the_picture(tmp_path, capsys):
    path = write_trace_file(tmp_path / "t.jsonl")
    out = tmp_path / "map.png"
    # default: the array with the most bytes accessed (/temp: 51.8 MB written), the others named
    assert main(["trace", "plot", str(path), "-o", str(tmp_path / "t.svg")]) == 0
    assert b"<svg" in (tmp_path / "t.svg").read_bytes()[:400]
    err = capsys.readouterr().err
    assert "/d/s.zarr::/temp" in err and "other datasets: /features" in err
    assert main(["trace", "plot", str(path), "-o", str(out), "--dataset", "/features", "--chunks", "2000,32"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["trace", "plot", str(path), "-o", str(out), "--dataset", "/features", "--chunks", "5"]) == 2
    assert "--chunks 5: /d/f.h5::/features has 2 dimensions" in capsys.readouterr().err


def test_1d_picture_stacks_written_on_read_bytes():
    from matplotlib.patches import StepPatch

    from advisor.render.accessmap import figure

    ds = DatasetRecord(0, "zarr", "3", "/s.zarr", "v", (100_000,), "float64", chunks=(5000,))
    recs = [_box(0, WRITE, (0,), (100_000,), 0.0, itemsize=8)]
    recs += [_box(0, READ, (i * 997 % 90_000,), (3000,), 1 + i / 100, itemsize=8) for i in range(300)]
    m = access_map(_trace(ds, recs), recommended=(20_000,))
    assert m.read_bytes.shape == (20, 1) and m.read_bytes.sum() == pytest.approx(300 * 3000 * 8)
    fig = figure(m)
    steps = [p for p in fig.axes[0].patches if isinstance(p, StepPatch)]
    read, written = (p.get_data() for p in steps)
    np.testing.assert_allclose(read.values, m.read_bytes[:, 0])
    np.testing.assert_allclose(written.baseline, m.read_bytes[:, 0])
    np.testing.assert_allclose(written.values, m.read_bytes[:, 0] + m.write_bytes[:, 0])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "recorded chunks (5000 on these axes)" in legend and "recommended chunks (20000 on these axes)" in legend
