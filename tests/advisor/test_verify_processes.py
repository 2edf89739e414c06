"""advisor.verify replays a multi-process program's reads one process per traced process, each with its own chunk
cache, those that ran at the same time together."""
import json
import multiprocessing as mp
from dataclasses import replace

import h5py
import numpy as np
import pytest

import advisor
from advisor.verify import VerifyResult, current_choice, synthetic, verify, verify_choices
from advisor.verify_measure import overlapped_seconds, process_groups
from instrumentation.records import AccessRecord, Selection
from instrumentation.tracefile import Trace, load_trace
from iomodel.predict import pick_dataset

CHUNK_ROWS = 2048
"""Two gzip'd chunks of (2048, 128) float32: 1 MiB each, decoded whole at every load."""


def _alternating_chunk_reads(tmp_path):
    """The trace of reading one row at a time from two gzip'd chunks in turn (one process)."""
    data = synthetic((2 * CHUNK_ROWS, 128), "f4", seed=8)
    with h5py.File(tmp_path / "c.h5", "w") as f:
        f.create_dataset("x", data=data, chunks=(CHUNK_ROWS, 128), compression="gzip")
    path = tmp_path / "t.jsonl"
    with advisor.trace(path):
        with h5py.File(tmp_path / "c.h5", "r") as f:
            x = f["x"]
            for i in range(0, 200, 2):
                x[i]
                x[CHUNK_ROWS + i]
    return load_trace(path)


def test_each_process_replays_with_its_own_chunk_cache(tmp_path):
    """Two processes each reading rows of its own chunk, in turn, through a cache that holds one chunk: replayed in
    one process the reads evict each other's chunk (200 decodes of 1 MiB); replayed as they ran, each process loads
    its chunk once."""
    trace = _alternating_chunk_reads(tmp_path)
    ds = pick_dataset(trace, "x")
    one_chunk = current_choice(ds)
    one_chunk = replace(one_chunk, layout=replace(one_chunk.layout, rdcc_nbytes=3 << 19))  # 1.5 MiB: one chunk
    accesses = [replace(a, process=int(a.selection.start[0] >= CHUNK_ROWS)) for a in trace.accesses]
    split = Trace(trace.headers, trace.datasets, accesses, trace.resizes, source="two workers")
    serial = verify_choices(trace, ds, [one_chunk], tmp_path / "serial")[0]
    apart = verify_choices(split, ds, [one_chunk], tmp_path / "apart")[0]
    assert serial.process_groups == () and not serial.parallel
    assert apart.process_groups == (2,) and apart.parallel
    assert serial.max_error == 0.0 and apart.max_error == 0.0
    assert apart.measured_seconds * 5 < serial.measured_seconds, (apart.measured_seconds, serial.measured_seconds)


def test_every_replay_of_a_read_trace_runs_in_a_new_process(tmp_path, monkeypatch):
    """A run of the program starts a new process, whose memory its reads touch for the first time inside their
    calls; a process that replayed before finds those pages mapped (r04's recipe layout replayed 1.1-1.3x faster
    so). Every replay of a one-process read trace, every layout and repeat, runs in a process of its own."""
    from advisor.verify_pool import ReplayPool

    seen, real_run = [], ReplayPool.run

    def run(pool, *args, **kwargs):
        out = real_run(pool, *args, **kwargs)
        seen.append(tuple(p.pid for p in pool.procs))
        return out

    monkeypatch.setattr(ReplayPool, "run", run)
    trace = _alternating_chunk_reads(tmp_path)
    ds = pick_dataset(trace, "x")
    cur = current_choice(ds)
    other = replace(cur, label="rows", layout=replace(cur.layout, chunks=(256, 128)))
    rows = verify_choices(trace, ds, [cur, other], tmp_path / "work", repeat=3)
    assert [len(r.measured_all) for r in rows] == [3, 3] and all(r.max_error == 0.0 for r in rows)
    assert not rows[0].parallel and rows[0].process_groups == ()
    assert len(seen) == 6 and len(set(seen)) == 6, seen


def _access(t, dt, rank=0, process=0):
    sel = Selection.box((0, 0), (1, 1))
    return AccessRecord(0, "read", sel, 1, 4, t, dt, rank=rank, process=process)


def test_processes_group_as_they_overlapped():
    # main reads first; workers 1 and 2 overlap; worker 3 overlaps 2 only (one group through 2); then main again
    acc = [_access(0.0, 1.0), _access(2.0, 1.0, process=1), _access(2.5, 2.0, process=2),
           _access(4.0, 1.0, process=3), _access(3.0, 0.1, process=1)]
    assert process_groups(acc) == [[(0, 0)], [(0, 1), (0, 2), (0, 3)]]
    # MPI ranks run at once whatever their clocks say
    ranks = [_access(0.0, 1.0, rank=0), _access(5.0, 1.0, rank=1)]
    assert process_groups(ranks) == [[(0, 0), (1, 0)]]
    assert process_groups([_access(0.0, 1.0)]) == [[(0, 0)]]


def test_the_time_of_processes_replayed_at_once_is_their_calls_as_they_overlapped():
    """Two workers that took turns (calls of 1 s, 1 s apart, the second worker 1 s behind) kept exactly one call
    going: replayed at 0.5 s a call, their calls on the traced timelines no longer touch (3 s inside a call); in step,
    they overlap whole (1.5 s). The slowest worker alone would say 1.5 s in both cases."""
    def worker(process, offset):
        return [_access(offset + 2.0 * i, 1.0, process=process) for i in range(3)]

    half = np.full(3, 0.5)
    turns = [worker(0, 0.0), worker(1, 1.0)]
    assert overlapped_seconds([(0, 0), (0, 1)], turns, [half, half]) == pytest.approx(3.0)
    assert overlapped_seconds([(0, 0), (0, 1)], turns, [np.full(3, 1.0)] * 2) == pytest.approx(6.0)
    in_step = [worker(0, 0.0), worker(1, 0.0)]
    assert overlapped_seconds([(0, 0), (0, 1)], in_step, [half, half]) == pytest.approx(1.5)
    # a call replayed slower than traced pushes the worker's later calls back (the gaps stay the program's): A
    # [0, 2], [3, 3.5], [4.5, 5]; B [0, 0.5], [1.5, 2], [3, 3.5] inside them
    assert overlapped_seconds([(0, 0), (0, 1)], in_step, [np.array([2.0, 0.5, 0.5]), half]) == pytest.approx(3.0)
    # MPI ranks: each rank's own time, the slowest rank's counts
    assert overlapped_seconds([(0, 0), (1, 0)], turns, [half, np.full(3, 0.7)]) == pytest.approx(2.1)


def _worker(path, lo, barrier):
    with h5py.File(path, "r") as f:
        x = f["x"]
        for half in (0, 50):
            barrier.wait(30)  # both workers read at the same time, as a DataLoader's do: their spans overlap
            for i in range(lo + half, lo + half + 50, 2):
                x[i]


def test_a_traced_program_with_forked_workers_replays_them_concurrently(tmp_path):
    data = tmp_path / "d.h5"
    with h5py.File(data, "w") as f:
        f.create_dataset("x", data=synthetic((400, 64), "f4", seed=9), chunks=(50, 64), compression="gzip")
    ctx = mp.get_context("fork")
    with advisor.trace(tmp_path / "t.parquet") as t:
        with h5py.File(data, "r") as f:
            f["x"][0:10]  # the main process reads before the workers start
        barrier = ctx.Barrier(2)
        workers = [ctx.Process(target=_worker, args=(data, lo, barrier)) for lo in (0, 200)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert [w.exitcode for w in workers] == [0, 0]
    trace = t.load()
    assert len(trace.header.processes) == 3
    res = verify(trace, top=0, workdir=tmp_path / "work")
    row = res.rows[0]
    assert row.process_groups == (1, 2) and row.parallel
    assert row.max_error == 0.0 and row.measured_seconds > 0
    assert "3 processes replayed" in res.table() and "1, then 2 at once" in res.table()
    assert VerifyResult.from_config(json.loads(json.dumps(res.get_config()))) == res


def test_results_without_the_field_read_back(tmp_path):
    trace = _alternating_chunk_reads(tmp_path)
    ds = pick_dataset(trace, "x")
    row = verify_choices(trace, ds, [current_choice(ds)], tmp_path / "w")[0]
    for groups in [(), (2,), (1, 2)]:
        config = replace(row, process_groups=groups).get_config()
        assert type(row).from_config(config).process_groups == groups
    del config["process_groups"]  # a result written before the field existed
    assert type(row).from_config(config).process_groups == ()
