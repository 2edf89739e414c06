"""Cost terms, the parallel model, predict() and the `ioadvisor predict` CLI."""
import json
from dataclasses import replace

import pytest

from advisor.cli import main
from instrumentation.records import AccessRecord, DatasetRecord, Selection, TraceHeader
from instrumentation.tracefile import Trace, write_trace
from iomodel import FEATURES, Prediction, SystemProfile, Variables, predict, term_seconds
from iomodel.cost import TERMS
from iomodel.layout import parse_layout
from iomodel.parallel import contention_factor
from iomodel.profile import save_profile

DS = DatasetRecord(0, "hdf5", "2.0", "f.h5", "/x", (4000, 64), "float32", chunks=(500, 8))


def _profile():
    # distinct powers of ten per variable so every term's sum can be checked exactly
    coefs = {v: 10.0 ** -(i + 1) for i, v in enumerate(FEATURES)}
    return SystemProfile({"hdf5": coefs, "zarr": coefs}, page_cache_bytes=1 << 34, data_servers=2, stripe_count=4)


def _trace(ranks=(0,)):
    acc = [AccessRecord(0, "read", Selection.box((r * 1000 + i * 10, 0), (10, 64)), 640, 2560, 0.0, 0.0, rank=r)
           for r in ranks for i in range(50)]
    heads = [TraceHeader(1, "h", 1, r, len(ranks), 0.0) for r in ranks]
    return Trace(heads, {0: DS}, acc, [], True, "t.jsonl")


def test_terms_are_linear_in_their_variables():
    prof = _profile()
    v = Variables(*[float(i + 1) for i in range(len(FEATURES))])
    terms = term_seconds(v, "hdf5", prof)
    for term, names in TERMS.items():
        assert terms[term] == pytest.approx(sum(prof.coefficient("hdf5", n) * getattr(v, n) for n in names))
    doubled = term_seconds(v + v, "hdf5", prof)
    assert all(doubled[t] == pytest.approx(2 * terms[t]) for t in TERMS)


def test_every_variable_belongs_to_exactly_one_term_or_is_counted_only():
    names = [n for ns in TERMS.values() for n in ns]
    assert len(names) == len(set(names)) and set(names) <= set(FEATURES)
    assert set(FEATURES) - set(names) == {"s_cache"}  # priced through the page-cache curve, x_cache


def test_predict_total_is_sum_of_terms_and_round_trips():
    p = predict(_trace(), parse_layout("current", DS), _profile())
    assert p.seconds == pytest.approx(sum(p.terms.values())) and p.seconds > 0
    assert Prediction.from_config(json.loads(json.dumps(p.get_config()))) == p
    assert p.variables.n_calls == 50


def test_write_calls_are_counted_apart_and_priced_on_top_of_every_call():
    mixed = [replace(a, op="write") if i % 5 == 0 else a for i, a in enumerate(_trace().accesses)]
    trace = Trace(_trace().headers, {0: DS}, mixed, [], True, "t.jsonl")
    prof = _profile()
    p = predict(trace, parse_layout("current", DS), prof)
    assert (p.variables.n_calls, p.variables.n_wcalls) == (50, 10)
    assert p.terms["t_call"] == pytest.approx(50 * prof.coefficient("hdf5", "n_calls")
                                              + 10 * prof.coefficient("hdf5", "n_wcalls"))
    # a profile fitted before n_wcalls prices a write call as a read call
    old = SystemProfile({"hdf5": {"n_calls": 1e-4}}, page_cache_bytes=1 << 34)
    assert predict(trace, parse_layout("current", DS), old).terms["t_call"] == pytest.approx(50e-4)


def test_contention_factor():
    assert contention_factor(1, 4) == 1.0
    assert contention_factor(5, 4) == 2.0
    with pytest.raises(ValueError):
        contention_factor(0, 1)


def test_parallel_disk_terms_scale_with_cf_and_zarr_metadata_with_p():
    prof = _profile()
    lay = parse_layout("zarr:chunks=500x8", DS)
    one = predict(_trace(), lay, prof)
    four = predict(_trace(), lay, prof, procs=4)
    cf = contention_factor(4, prof.data_servers)
    assert four.cf == cf
    assert four.terms["t_rdisk"] == pytest.approx(one.terms["t_rdisk"] * cf)
    assert four.terms["t_zopen"] == pytest.approx(one.terms["t_zopen"] * 4)
    assert four.terms["t_memcpy"] == pytest.approx(one.terms["t_memcpy"])


def test_parallel_hdf5_uses_mpiio_requests_per_run_and_slowest_rank():
    prof = _profile()
    tr = _trace(ranks=(0, 1, 2))
    mpio = replace(DS, driver="mpio", mode="r+")
    tr.datasets[0] = mpio
    p = predict(tr, parse_layout("current", mpio), prof)
    assert p.procs == 3 and len(p.per_rank_seconds) == 3
    assert p.seconds == max(p.per_rank_seconds)
    # each 10x64 box covers 8 chunks of 8 columns: 10 runs each, one MPI-IO request per run;
    # the first request of a chunk goes to the device, the rest hit the pages it brought in
    v = p.variables
    assert v.n_rdisk + v.n_cache == 50 * 8 * 10
    assert v.n_rdisk == 8


def test_parallel_hdf5_readers_keep_their_chunk_caches():
    prof = _profile()
    for ds in (replace(DS, driver="mpio", mode="r"), replace(DS, driver="sec2", mode="r"), DS):
        tr = _trace(ranks=(0, 1, 2))
        tr.datasets[0] = ds
        p = predict(tr, parse_layout("current", ds), prof)
        # whole chunks through the cache: each rank's 500 rows are one row of 8 chunks of 500x8
        assert p.variables.n_rdisk == 8 and p.variables.s_rdisk == 8 * 500 * 8 * 4


def test_cli_predict_json_and_table(tmp_path, capsys):
    tpath, ppath = tmp_path / "t.jsonl", tmp_path / "p.json"
    write_trace(_trace(), tpath)
    save_profile(_profile(), ppath)
    rc = main(["predict", str(tpath), "--layout", "hdf5:chunks=500x8", "--layout", "zarr:chunks=500x8",
               "--layout", "current", "--profile", str(ppath), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert [o["library"] for o in out] == ["hdf5", "zarr", "hdf5"]
    assert set(out[0]) == {"library", "chunks", "seconds", "terms", "variables"}
    assert out[0]["chunks"] == [500, 8] and set(out[0]["variables"]) == set(FEATURES)
    assert main(["predict", str(tpath), "--layout", "zarr:chunks=500x8", "--profile", str(ppath)]) == 0
    table = capsys.readouterr().out
    assert "zarr 500x8" in table and "t_zopen" in table


def test_cli_predict_bad_layout_is_one_line_error(tmp_path, capsys):
    tpath, ppath = tmp_path / "t.jsonl", tmp_path / "p.json"
    write_trace(_trace(), tpath)
    save_profile(_profile(), ppath)
    rc = main(["predict", str(tpath), "--layout", "hdf5:chunks=0x8", "--profile", str(ppath)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("ioadvisor predict: error:") and err.count("\n") == 1


def test_appends_grow_the_modelled_extent():
    from instrumentation.records import ResizeRecord

    ds = DatasetRecord(0, "zarr", "3", "s.zarr", "/", (0, 64), "float32", chunks=(500, 8), created=True)
    acc = [AccessRecord(0, "write", Selection.box((i * 500, 0), (500, 64)), 32000, 128000, 0.0, 0.0)
           for i in range(4)]
    tr = Trace([TraceHeader(1, "h", 1, 0, 1, 0.0)], {0: ds}, acc,
               [ResizeRecord(0, ((i + 1) * 500, 64), 0.0) for i in range(4)], True, "t")
    p = predict(tr, parse_layout("current", ds), _profile())
    assert p.layout.shape == (2000, 64)
    assert p.variables.n_wdisk == 4 * 8 and p.variables.n_rdisk + p.variables.n_cache == 0  # whole new chunks


def test_cli_predict_says_when_the_profile_was_fitted_at_other_speeds(tmp_path, capsys):
    from iomodel import probe

    tpath, ppath = tmp_path / "t.jsonl", tmp_path / "p.json"
    write_trace(_trace(), tpath)
    here = probe.current_probe()  # the one the command uses (measured once per process)
    # beyond what a rescale covers (RESCALE_LIMIT): the warning
    save_profile(replace(_profile(), probe={"page_cache_bps": here["page_cache_bps"] * 50,
                                            "disk_bps": here["disk_bps"]}), ppath)
    assert main(["predict", str(tpath), "--profile", str(ppath)]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: this machine differs from") and "page-cache reads" in err
    assert "calibrate --quick" in err and "\n" not in err
    # within it: the page-cache terms follow the probe, said once, no warning
    save_profile(replace(_profile(), probe={"page_cache_bps": here["page_cache_bps"] * 3,
                                            "disk_bps": here["disk_bps"]}), ppath)
    assert main(["predict", str(tpath), "--profile", str(ppath)]) == 0
    captured = capsys.readouterr()
    assert not captured.err and captured.out.count("page-cache read terms x3") == 1


def test_one_bad_record_never_spoils_the_others(tmp_path, capsys):
    """A record merged from arrays of other ranks (a trace written before creations started new records) made
    ``process_arrays`` raise for every other array of the trace ("inhomogeneous shape"): 190 of 204 datasets
    not advised. The bad one is left out of the others' page-cache neighbours and of the in-trace fit."""
    from instrumentation.records import ResizeRecord
    from instrumentation.tracefile import load_trace

    good = DatasetRecord(0, "hdf5", "2.0", "/d/f.h5", "/good", (1000, 64), "float32", chunks=(100, 64))
    bad = DatasetRecord(1, "hdf5", "2.0", "/d/g.h5", "/var", (5, 5, 5), "float32", chunks=(5, 5, 5))
    acc = [AccessRecord(0, "read", Selection.box((100 * i, 0), (100, 64)), 6400, 25600, 0.01 * i, 0.001)
           for i in range(10)]
    acc += [AccessRecord(1, "write", Selection.box((0, 0, 0), (5, 5, 5)), 125, 500, 0.2, 0.001)]
    trace = Trace([TraceHeader(1, "vm", 1, 0, 1, 0.0)], {0: good, 1: bad}, acc,
                  [ResizeRecord(1, (1, 11, 20), 0.1), ResizeRecord(1, (10, 1, 7, 12), 0.15)], True, "")
    path = tmp_path / "t.jsonl"
    write_trace(trace, path)
    from iomodel.predict import process_arrays

    _, others = process_arrays(load_trace(path), good)
    assert [d.path for d, _ in others] == ["/var"]
    assert main(["advise", "--no-data", str(path)]) == 0
    out = capsys.readouterr().out
    assert "/d/f.h5::/good: hdf5" in out and "not calibrated" not in out
