"""Darshan import: the pydarshan wheel's example logs, darshan-parser text, a known h5py program's counters."""
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest

import advisor
from instrumentation.darshan import (
    DarshanError,
    H5DCounters,
    counters_of_trace,
    import_darshan,
    parse_shapes,
    parse_text,
    read_log,
    split_reads_writes,
    to_parser_text,
)
from instrumentation.errors import OutputExistsError
from instrumentation.records import READ, WRITE, ImportedFact, TraceHeader
from instrumentation.tracefile import load_trace

darshan = pytest.importorskip("darshan")
LOGS = Path(darshan.__file__).parent / "examples" / "example_logs"
IOR = LOGS / "ior_hdf5_example.darshan"
MACSIO = next(LOGS.glob("shane_macsio_*.darshan"))
IOR_KEY = "/global/cscratch1/sd/ssnyder/test123.h5::/Dataset-0000.0000"
MACSIO_KEY = "/tmp/test/macsio_hdf5_000.h5::/constant"


def shapes_by_op(trace, ds_id):
    return Counter((a.op, a.selection.shape) for a in trace.accesses_of(ds_id))


def test_ior_log_every_transfer_and_dxt_placement(tmp_path):
    summary = import_darshan(IOR, tmp_path / "ior.jsonl")
    tr = load_trace(summary.trace)
    assert tr.header.synthetic and tr.nprocs == 4
    (ds,) = tr.datasets.values()
    assert ds.key == IOR_KEY and ds.shape == (524288,) and ds.itemsize == 8 and ds.chunks is None
    assert ds.driver == "mpio"
    # ranks 1-3 hold H5D records: 4 writes and 4 reads of 32768 elements each (one merged access shape)
    assert shapes_by_op(tr, ds.id) == {(WRITE, (32768,)): 12, (READ, (32768,)): 12}
    assert {a.rank for a in tr.accesses} == {1, 2, 3}
    missing = [f for f in tr.header.facts if f.fact == "missing records"]  # rank 0 wrote too (DXT) but has no H5D
    assert len(missing) == 1 and "ranks [0]" in missing[0].detail
    # DXT file offsets (base 2048) pin each rank's transfers: rank r writes elements r*131072 + i*32768
    for rank in (1, 2, 3):
        for op in (READ, WRITE):
            starts = sorted(a.selection.start[0] for a in tr.accesses if a.rank == rank and a.op == op)
            assert starts == [rank * 131072 + i * 32768 for i in range(4)]
    placement = [f for f in tr.header.facts if f.fact == "placement"]
    assert placement and "DXT" in placement[0].detail
    split = [f for f in tr.header.facts if f.fact == "read/write split"]
    assert split and not any(f.guessed for f in split)  # 4 reads + 4 writes of one size: only one split fits
    # the H5D write timer is kept: DXT durations of rank 1 sum to its H5D_F_WRITE_TIME
    w1 = sum(a.duration for a in tr.accesses if a.rank == 1 and a.op == WRITE)
    assert w1 == pytest.approx(0.1526442, rel=0.01)


def test_macsio_shared_collective_3d_record(tmp_path):
    tr = load_trace(import_darshan(MACSIO, tmp_path / "m.jsonl").trace)
    (ds,) = tr.datasets.values()
    assert ds.key == MACSIO_KEY and ds.itemsize == 8 and ds.chunks is None
    # LENGTH_D5/D4/D3 = 31/31/24: C order (31, 31, 24); the rest of NPOINTS (1660608) goes on the first dimension
    assert ds.shape == (2232, 31, 24)
    shape_fact = next(f for f in tr.header.facts if f.dataset == ds.key and f.fact == "shape")
    assert shape_fact.guessed
    ops = shapes_by_op(tr, ds.id)
    assert ops[(WRITE, (31, 31, 24))] == 72 and sum(ops.values()) == 80  # 8 zero-byte writes outside the shapes
    assert sum(a.nbytes for a in tr.accesses) == 13284864
    assert {a.rank for a in tr.accesses} == set(range(16))  # a shared record: spread over all ranks
    assert any(f.fact == "MPI-IO" and "collective" in f.detail and not f.guessed for f in tr.header.facts)
    # traced time: the shared record sums H5D_F_WRITE_TIME over ranks
    assert sum(a.duration for a in tr.accesses) == pytest.approx(28.68915, rel=1e-4)


def test_an_existing_trace_is_kept(tmp_path):
    out = tmp_path / "t.jsonl"
    out.write_text("earlier\n")
    with pytest.raises(OutputExistsError, match="not replacing"):
        import_darshan(IOR, out)
    assert out.read_text() == "earlier\n"
    assert load_trace(import_darshan(IOR, out, overwrite=True).trace).header.synthetic


def test_shape_option_replaces_the_guess_and_is_checked(tmp_path):
    tr = load_trace(import_darshan(MACSIO, tmp_path / "m.jsonl", shapes={"/constant": (72, 31, 744)}).trace)
    (ds,) = tr.datasets.values()
    assert ds.shape == (72, 31, 744)
    assert not next(f for f in tr.header.facts if f.fact == "shape").guessed
    with pytest.raises(DarshanError, match="3-D fixed dataspace of 1660608 points"):
        import_darshan(MACSIO, tmp_path / "x.jsonl", shapes={"/constant": (10, 10, 10)})
    with pytest.raises(DarshanError, match="no such dataset"):
        import_darshan(MACSIO, tmp_path / "x.jsonl", shapes={"/nope": (2,)})
    with pytest.raises(DarshanError, match="expected DATASET=AxB"):
        parse_shapes(["/constant=12xA"])


def test_parser_text_imports_like_the_binary_log(tmp_path):
    for log in (IOR, MACSIO):
        text = tmp_path / (log.stem + ".txt")
        text.write_text(to_parser_text(str(log)))
        from_text = parse_text(str(text))
        from_binary = read_log(log, dxt=False)
        # darshan-parser prints timers with 6 decimals (%f): everything else is exact
        assert [rounded(r) for r in from_text.h5d] == [rounded(r) for r in from_binary.h5d]
        assert from_text.nprocs == from_binary.nprocs
        a = load_trace(import_darshan(text, tmp_path / "a.jsonl", overwrite=True).trace)
        b = load_trace(import_darshan(log, tmp_path / "b.jsonl", dxt=False, overwrite=True).trace)
        assert a.datasets == b.datasets
        assert [(x.op, x.selection, x.nbytes, x.rank) for x in a.accesses] == \
            [(x.op, x.selection, x.nbytes, x.rank) for x in b.accesses]
        assert sum(x.duration for x in a.accesses) == pytest.approx(sum(x.duration for x in b.accesses), rel=1e-4)


def rounded(rec):
    return replace(rec, read_time=round(rec.read_time, 6), write_time=round(rec.write_time, 6),
                   read_span=tuple(round(t, 6) for t in rec.read_span),
                   write_span=tuple(round(t, 6) for t in rec.write_span))


def test_bad_logs_get_one_line_errors(tmp_path):
    raw = IOR.read_bytes()
    cases = {
        "truncated.darshan": raw[:2000],
        "garbage.darshan": bytes(range(256)) * 8,
        "empty.darshan": b"",
        "bad.txt": b"# darshan log version: 3.21\n# nprocs: 4\nH5D\t1\t2\tH5D_READS\n",
        "noh5d.txt": b"# darshan log version: 3.21\n# nprocs: 4\nPOSIX\t-1\t2\tPOSIX_READS\t3\t/f\t/\text4\n",
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(DarshanError) as exc:
            import_darshan(path, tmp_path / "out.jsonl")
        msg = str(exc.value)
        assert "\n" not in msg and str(path) in msg, msg
    with pytest.raises(DarshanError, match="without --enable-hdf5-mod"):
        import_darshan(LOGS / "dxt.darshan", tmp_path / "out.jsonl")
    with pytest.raises(DarshanError, match="bad.txt:3: not a darshan-parser counter line"):
        import_darshan(tmp_path / "bad.txt", tmp_path / "out.jsonl")


def counters(**kw):
    c = {"H5D_DATASPACE_NDIMS": 2, "H5D_DATASPACE_NPOINTS": 6000, "H5D_DATATYPE_SIZE": 8}
    c.update(kw)
    return H5DCounters.from_counters("/f.h5:/d", 0, c)


def test_read_write_split_from_ops_bytes_and_histogram():
    # 10 writes of (10, 60) rows and 4 reads of (25, 60): two shapes of different size, one split fits
    rec = counters(H5D_READS=4, H5D_WRITES=10, H5D_BYTES_READ=4 * 12000, H5D_BYTES_WRITTEN=10 * 4800,
                   H5D_ACCESS1_ACCESS=4800, H5D_ACCESS1_LENGTH_D5=10, H5D_ACCESS1_LENGTH_D4=60, H5D_ACCESS1_COUNT=10,
                   H5D_ACCESS2_ACCESS=12000, H5D_ACCESS2_LENGTH_D5=25, H5D_ACCESS2_LENGTH_D4=60, H5D_ACCESS2_COUNT=4)
    assert [s.length for s in rec.shapes] == [(10, 60), (25, 60)]
    assert split_reads_writes(rec) == ([0, 4], True)
    # 2 reads and 2 writes of one shape, 1 read and 1 write of another with equal byte totals: not unique
    rec = counters(H5D_READS=3, H5D_WRITES=3, H5D_BYTES_READ=3 * 800, H5D_BYTES_WRITTEN=3 * 800,
                   H5D_ACCESS1_ACCESS=800, H5D_ACCESS1_LENGTH_D5=1, H5D_ACCESS1_LENGTH_D4=100, H5D_ACCESS1_COUNT=4,
                   H5D_ACCESS2_ACCESS=800, H5D_ACCESS2_LENGTH_D5=100, H5D_ACCESS2_LENGTH_D4=1, H5D_ACCESS2_COUNT=2)
    reads, unique = split_reads_writes(rec)
    assert sum(reads) == 3 and reads == [2, 1] and unique  # equal byte sizes: the counters see one split


def known_program(path):
    """A program with the access kinds Darshan summarizes: chunked 2-D row writes and block reads, a 3-D chunked
    dataset written in slabs and read by columns, a contiguous 1-D dataset read whole and in strided pieces."""
    with h5py.File(path, "w") as f:
        a = f.create_dataset("grid", shape=(100, 60), dtype="f4", chunks=(25, 20))
        for i in range(10):
            a[10 * i:10 * (i + 1)] = np.full((10, 60), i, "f4")
        for i in range(4):
            a[25 * i:25 * (i + 1)]
        b = f.create_dataset("cube", shape=(8, 30, 40), dtype="f8", chunks=(2, 10, 40))
        for t in range(8):
            b[t] = np.zeros((30, 40))
        for j in range(5):
            b[:, :, j]
        h = f.create_dataset("hyper", shape=(2, 2, 2, 2, 2, 3), dtype="f4", chunks=(1, 2, 2, 2, 2, 3))
        for i in range(2):  # Darshan keeps five dimensions: the sixth comes back from the bytes
            h[i] = np.ones((2, 2, 2, 2, 3), "f4")
        fr = f.create_dataset("frames", shape=(0, 4, 5), maxshape=(None, 4, 5), dtype="f4", chunks=(1, 4, 5))
        for i in range(6):  # appends: Darshan's NPOINTS is the size at open (0)
            fr.resize(i + 1, axis=0)
            fr[i] = np.full((4, 5), i, "f4")
        c = f.create_dataset("line", data=np.arange(4000, dtype="i2"))
        c[...]
        for k in range(3):
            c[k * 1000:(k + 1) * 1000:2]


def geometry(trace, ds_id):
    return Counter((a.op, a.selection.count, a.selection.stride, a.selection.block) for a in trace.accesses_of(ds_id))


def test_known_program_round_trip(tmp_path):
    h5 = tmp_path / "known.h5"
    with advisor.trace(tmp_path / "real.jsonl") as t:
        known_program(h5)
    real = t.load()
    log = counters_of_trace(real)
    for reach in (True, False):
        tr = load_trace(import_darshan(log, tmp_path / f"imported{reach}.jsonl", reach_files=reach).trace)
        assert tr.header.synthetic
        by_key = {d.key: d for d in tr.datasets.values()}
        for ds in real.datasets.values():
            got = by_key[ds.key]
            assert got.chunks == ds.chunks and got.itemsize == ds.itemsize
            assert geometry(tr, got.id) == geometry(real, ds.id), ds.key
            if reach:  # the file is still there: its shape and dtype
                assert got.shape == real.extent(ds.id) and got.dtype == ds.dtype
        grown = by_key[f"{h5}::/frames"]
        assert grown.shape == real.extent(real.dataset_by_key(grown.key).id) == (6, 4, 5)
        guessed = {(f.dataset.rsplit("::", 1)[1], f.fact) for f in tr.header.facts if f.guessed}
        assert (("/grid", "shape") in guessed) is not reach and ("/line", "shape") not in guessed


def test_header_facts_round_trip():
    h = TraceHeader(1, "darshan", 0, 0, 4, 0.0, synthetic=True,
                    facts=(ImportedFact("/f::/d", "shape", "(10, 4) guessed"), ImportedFact("", "source", "x", False)))
    assert TraceHeader.from_config(h.get_config()) == h
    assert h.guessed("/f::/d") == (h.facts[0],) and h.guessed("/g::/e") == ()
    plain = TraceHeader(1, "vm", 1, 0, 1, 0.0)
    assert "synthetic" not in plain.get_config() and not TraceHeader.from_config(plain.get_config()).synthetic


KNOWN_C = {  # tests/instrumentation/darshan_known.c: path -> (shape, chunks, itemsize, {(op, selection shape): n})
    "/grid": ((100, 60), (25, 20), 4, {(WRITE, (10, 60)): 10, (READ, (25, 60)): 4}),
    "/cube": ((8, 30, 40), (2, 10, 40), 8, {(WRITE, (1, 30, 40)): 8, (READ, (8, 30, 1)): 5}),
    "/line": ((4000,), None, 2, {(WRITE, (4000,)): 1, (READ, (4000,)): 1, (READ, (500,)): 3}),
    "/pts": ((50, 50), (10, 10), 4, {(WRITE, (50, 50)): 1, (READ, (1, 7)): 6}),  # 6 point reads of 7 points
}


@pytest.mark.skipif(not os.environ.get("IOADVISOR_DARSHAN_KNOWN_LOG"),
                    reason="needs a Darshan log of darshan_known.c (darshan-runtime with --enable-hdf5-mod)")
def test_log_of_the_known_c_program(tmp_path):
    log = os.environ["IOADVISOR_DARSHAN_KNOWN_LOG"]
    # the file may be gone: only /pts (point reads, no regular access shape) needs its shape given
    tr = load_trace(import_darshan(log, tmp_path / "k.jsonl", reach_files=False, shapes={"/pts": (50, 50)}).trace)
    assert {d.path for d in tr.datasets.values()} == set(KNOWN_C)
    for ds in tr.datasets.values():
        shape, chunks, itemsize, ops = KNOWN_C[ds.path]
        assert ds.chunks == chunks and ds.itemsize == itemsize, ds.path
        assert shapes_by_op(tr, ds.id) == ops, ds.path
        assert ds.shape == shape, ds.path
    strided = [a.selection for a in tr.accesses if a.selection.shape == (500,)]
    assert {(s.count, s.stride, s.block) for s in strided} == {((500,), (2,), (1,))}


def test_scalar_imported_and_every_record_accounted_for(scalar_log, tmp_path):
    summary = import_darshan(scalar_log, tmp_path / "s.jsonl")
    tr = load_trace(summary.trace)
    (scalar,) = [d for d in tr.datasets.values() if d.path == "/step"]
    assert scalar.shape == () and scalar.itemsize == 4
    (acc,) = tr.accesses_of(scalar.id)
    assert acc.op == WRITE and acc.nbytes == 4 and acc.selection.shape == ()
    assert summary.skipped == (("/global/cscratch1/sd/ssnyder/test123.h5:/unused",
                                "opened, never read or written (no H5Dread/H5Dwrite in the log): nothing to import"),)
    names = {r.name for r in read_log(scalar_log).h5d}
    assert len(summary.datasets) + len(summary.skipped) == len(names) == 3
    adv = advisor.advise(tr, read_data=False)
    assert [(n.path, n.reason) for n in adv.not_advised] == [("/step", "scalar: nothing to chunk")]


def test_macsio_time_on_moving_writes_within_each_ranks_span(tmp_path):
    log = read_log(MACSIO)
    (rec,) = log.h5d
    for shapes in (None, {"/constant": (72, 31, 744)}):
        tr = load_trace(import_darshan(log, tmp_path / "m.jsonl", shapes=shapes, overwrite=True).trace)
        accs = list(tr.accesses)
        assert sum(a.duration for a in accs if a.nbytes == 0) == 0  # 8 zero-byte writes hold no time
        per_rank = Counter()
        for a in accs:
            per_rank[a.rank] += a.duration
        assert max(per_rank.values()) <= rec.write_span[1] - rec.write_span[0] + 1e-9
        moving = [a.selection.start for a in accs if a.nbytes]
        assert len(set(moving)) == len(moving) == 72  # every tile on its own start


def test_extreme_counters_name_the_file(tmp_path):
    text = to_parser_text(str(IOR)).replace("H5D_WRITES\t4\t", "H5D_WRITES\t900000000000000\t")
    path = tmp_path / "extreme.txt"
    path.write_text(text)
    with pytest.raises(DarshanError, match=r"extreme.txt: its H5D records count .* beyond the 2,000,000"):
        import_darshan(path, tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()
