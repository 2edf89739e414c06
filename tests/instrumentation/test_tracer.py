"""The tracer itself: patch lifetime, scope (nesting, threads, imports), failure containment, killed runs."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import h5py
import numpy as np
import pytest
import zarr
from h5py._hl import dataset as h5dataset
from h5py._hl import group as h5group
from zarr.core import array as zarray

import advisor
from instrumentation import hooks_h5py, load_trace
from instrumentation.columnar import ColumnarTraceWriter
from instrumentation.tracefile import TraceError
from instrumentation import hub
from instrumentation import tracer as tracer_module
from instrumentation.tracer import HUB, Tracer

PATCHED = [(h5dataset.Dataset, a) for a in ("__getitem__", "__setitem__", "read_direct", "write_direct", "resize",
                                            "refresh")] + \
          [(h5group.Group, "create_dataset"), (h5group.Group, "__setitem__")] + \
          [(zarray, "_get_selection"), (zarray, "_set_selection"), (zarray, "_resize"),
           (zarray.AsyncArray, "_save_metadata")]


def snapshot():
    return {(owner, attr): vars(owner).get(attr, "<absent>") for owner, attr in PATCHED}, \
        [set(vars(owner)) for owner, _ in PATCHED], list(sys.meta_path)


@pytest.fixture
def ds(tmp_path):
    with h5py.File(tmp_path / "d.h5", "w") as f:
        yield f.create_dataset("x", data=np.arange(100.0).reshape(10, 10), chunks=(5, 5))


def test_patches_installed_then_restored_exactly(tmp_path, ds):
    before = snapshot()
    with advisor.trace(tmp_path / "t.jsonl"):
        assert all(vars(owner).get(attr) is not before[0][(owner, attr)] for owner, attr in PATCHED)
        assert not HUB._flusher is None
    assert snapshot() == before
    assert HUB.active == () and HUB._flusher is None


def test_restored_after_exception_and_trace_complete(tmp_path, ds):
    before = snapshot()
    with pytest.raises(ZeroDivisionError):
        with advisor.trace(tmp_path / "t.jsonl") as t:
            ds[0:2]
            1 / 0
    assert snapshot() == before
    tr = t.load()
    assert tr.complete and len(tr.accesses) == 1


def test_header_and_temporary_path(ds):
    with advisor.trace() as t:
        ds[0]
        with pytest.raises(RuntimeError):
            t.load()
    try:
        assert t.path.name.startswith("ioadvisor-") and t.path.suffix == ".parquet" and t.path.is_dir()
        tr = t.load()
        h = tr.header
        assert (h.rank, h.size, h.pid) == (0, 1, os.getpid())
        assert {"python", "numpy", "h5py", "hdf5", "zarr", "numcodecs"} <= set(h.versions)
        assert h.versions["hdf5"] == h5py.version.hdf5_version
        assert abs(h.t_origin_unix - time.time()) < 60
    finally:
        shutil.rmtree(t.path)
    with pytest.raises(RuntimeError):
        t.__enter__()  # single use


def test_nested_tracers_each_get_their_span(tmp_path, ds):
    before = snapshot()
    with advisor.trace(tmp_path / "outer.jsonl") as outer:
        ds[0]
        with advisor.trace(tmp_path / "inner.jsonl") as inner:
            ds[1]
        assert snapshot()[0] != before[0]  # still patched for the outer tracer
        ds[2]
    assert snapshot() == before
    rows = lambda t: [a.selection.start[0] for a in t.load().accesses]  # noqa: E731
    assert rows(outer) == [0, 1, 2] and rows(inner) == [1]
    o, i = outer.load(), inner.load()
    assert o.accesses[1].t_start > i.accesses[0].t_start  # each has its own clock origin


def test_threads_all_recorded_by_every_active_tracer(tmp_path, ds):
    barrier = threading.Barrier(2)
    tracers = {}

    def worker(k):
        with advisor.trace(tmp_path / f"w{k}.jsonl") as t:
            tracers[k] = t
            barrier.wait()
            for i in range(50):
                ds[k, i % 10]
            barrier.wait()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(2):
        tr = tracers[k].load()
        rows = [a.selection.start[0] for a in tr.accesses]
        assert sorted(rows) == [0] * 50 + [1] * 50  # both threads' reads, in both traces
    assert HUB.active == ()


def test_zarr_io_thread_is_recorded(tmp_path):
    z = zarr.create_array(store={}, shape=(10,), chunks=(5,), dtype="i4")
    with advisor.trace(tmp_path / "z.jsonl") as t:
        z[0:5] = 1
        results = []
        th = threading.Thread(target=lambda: results.append(z[2:4]))
        th.start()
        th.join()
    assert len(t.load().accesses) == 2


def test_recording_error_goes_to_trace_and_one_stderr_line_never_an_exception(tmp_path, ds, monkeypatch, capfd):
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(hooks_h5py, "normalize", broken)  # the record of an index list
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under pytest's filterwarnings = error
        with advisor.trace(tmp_path / "t.jsonl") as t:
            out = ds[[2, 3], 1]
    np.testing.assert_array_equal(out, [21.0, 31.0])
    trace = t.load()
    assert t.record_errors == 1 and trace.accesses == []
    assert len(trace.missed) == 1 and "1 access(es) could not be recorded" in trace.missed[0]
    assert "boom" in trace.missed[0]
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("ioadvisor: trace ") and "boom" in err[0]


def test_no_warning_when_all_is_well(tmp_path, ds):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with advisor.trace(tmp_path / "t.jsonl"):
            ds[0]


def run_python(code, tmp_path, **kw):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, **kw)


def test_libraries_imported_after_enter(tmp_path):
    code = f"""
        import sys
        import advisor
        assert "h5py" not in sys.modules and "zarr" not in sys.modules
        with advisor.trace({str(tmp_path / 'late.jsonl')!r}) as t:
            import h5py, zarr, numpy as np
            with h5py.File("late.h5", "w") as f:
                f.create_dataset("x", data=np.arange(6))[1:3]
            z = zarr.create_array(store={{}}, shape=(4,), chunks=(2,), dtype="i1")
            z[0:2] = 1
        finder_left = [f for f in sys.meta_path if type(f).__name__ == "_ImportHook"]
        print(len(t.load().accesses), len(finder_left), type(h5py.Dataset.__dict__["__getitem__"]).__name__)
    """
    out = run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "0", "cython_function_or_method"]


def test_killed_process_leaves_a_readable_prefix(tmp_path):
    path = tmp_path / "killed.jsonl"
    code = f"""
        import time, h5py, numpy as np, advisor
        f = h5py.File("k.h5", "w")
        ds = f.create_dataset("x", data=np.zeros((1000, 10)))
        with advisor.trace({str(path)!r}):
            for i in range(300):
                ds[i]
            time.sleep(1.0)
            print("ready", flush=True)
            while True:
                ds[0:2]
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        from instrumentation.columnar import count_accesses, part_files
        from instrumentation.tracedir import live_path

        live, deadline = live_path(path), time.monotonic() + 30
        # the reads reach the disk with the writer's next batch (a second after the first access, or later on a
        # loaded machine: the first batch loads Arrow while the program spins)
        while (not part_files(live) or count_accesses(live)[2] < 300) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with pytest.raises(TraceError, match="no end record|truncated"):
        load_trace(path)
    tr = load_trace(path, allow_truncated=True)
    assert not tr.complete
    assert len(tr.accesses) >= 300
    assert [a.selection.start[0] for a in tr.accesses[:300]] == list(range(300))


def test_tracer_is_a_context_manager_class():
    t = advisor.trace("x.jsonl")
    assert isinstance(t, Tracer) and t.path is None


def test_tracer_left_open_is_closed_at_interpreter_exit(tmp_path):
    path = tmp_path / "open.jsonl"
    code = f"""
        import h5py, numpy as np, advisor
        f = h5py.File("o.h5", "w")
        ds = f.create_dataset("x", data=np.zeros(10))
        advisor.trace({str(path)!r}).__enter__()
        ds[3:5]
    """
    out = run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    tr = load_trace(path)
    assert tr.complete and [a.selection.start for a in tr.accesses][-1] == (3,)


def test_repeated_index_is_renormalized_when_the_extent_changes(tmp_path):
    # Tracer._drain reuses the previous line head while the index repeats: a resize must not reuse it
    with h5py.File(tmp_path / "r.h5", "w") as f:
        d = f.create_dataset("x", shape=(4,), maxshape=(None,), dtype="f4")
        with advisor.trace(tmp_path / "r.jsonl") as t:
            d[:]
            d[:]
            d.resize((6,))
            d[:]
            d[1:3]
            d[1:3]
            d[1:3, ...]
    blocks = [(a.selection.start, a.selection.block, a.nbytes) for a in t.load().accesses]
    assert blocks == [((0,), (4,), 16), ((0,), (4,), 16), ((0,), (6,), 24)] + [((1,), (2,), 8)] * 3


def test_a_full_recorder_is_written_by_the_recording_thread(tmp_path, ds, monkeypatch):
    """Memory stays bounded when the flusher does not run: past MAX_PENDING records the thread that records
    writes them itself, in C as in Python, and no access is lost."""
    from instrumentation.selection import SIMPLE_INDEX_TYPES

    limit = hooks_h5py.MAX_PENDING
    monkeypatch.setattr(hub, "FLUSH_INTERVAL", 1000.0)
    monkeypatch.setattr(tracer_module, "MAX_PENDING", 50)
    monkeypatch.setattr(hooks_h5py, "MAX_PENDING", 50)
    if tracer_module._hotpath is not None:
        tracer_module._hotpath.configure(hooks_h5py._by_obj, SIMPLE_INDEX_TYPES, hooks_h5py._drain_full_recorders, 50)
    pending = []
    try:
        with advisor.trace(tmp_path / "t.parquet") as t:
            for i in range(500):
                ds[i % 10, 1:3]
                pending.append(len(t._recorder))
            for i in range(500):
                ds[[i % 9, 9]]  # an index list: recorded in Python
                pending.append(len(t._recorder))
    finally:
        if tracer_module._hotpath is not None:
            tracer_module._hotpath.configure(hooks_h5py._by_obj, SIMPLE_INDEX_TYPES, hooks_h5py._drain_full_recorders,
                                             limit)
    assert max(pending) <= 52 and t.load().n_access == 1000


def test_an_append_loop_is_recorded_as_arrays_and_written_in_one_batch(tmp_path, monkeypatch):
    # a camera's loop (regret's w07): resize, then ds[i] = frame. The flusher handled each write alone between
    # two resizes, and each took it about 100 us with the GIL held: the program's calls ran 30% slower, and the
    # trace's own durations with them. The C hooks record both as arrays (only the first resize, of a dataset
    # not yet numbered, goes through Python); the resizes go ahead of the accesses, which stay one batch, and fold
    # into one run as the writes do
    batches, python_rows = [], []
    writer = ColumnarTraceWriter
    monkeypatch.setattr(writer, "access_columns", lambda self, cols, f=writer.access_columns: (
        batches.append(cols.n_access), f(self, cols)))
    monkeypatch.setattr(writer, "hyperslab_rows", lambda self, rows, f=writer.hyperslab_rows: (
        python_rows.extend(rows), f(self, rows)))
    frame = np.arange(12, dtype="f4").reshape(3, 4)
    with h5py.File(tmp_path / "a.h5", "w") as f:
        d = f.create_dataset("x", shape=(0, 3, 4), maxshape=(None, 3, 4), dtype="f4", chunks=(8, 3, 4))
        with advisor.trace(tmp_path / "a.parquet") as t:
            for i in range(40):
                d.resize(i + 1, axis=0)
                d[i] = frame + i
            d[-1]
            np.testing.assert_array_equal(d[39], frame + 39)
    trace = t.load()
    assert batches == [42] and python_rows == []
    (run,) = trace.resizes  # one record: the first resize (in Python) and the 39 of the C hook, folded
    assert (run.rep, run.step) == (40, (1, 0, 0))
    assert [r.shape for r in run.expanded()] == [(i + 1, 3, 4) for i in range(40)]
    assert [(a.op, a.selection.start, a.selection.block) for a in trace.accesses] == \
        [("write", (i, 0, 0), (1, 3, 4)) for i in range(40)] + [("read", (39, 0, 0), (1, 3, 4))] * 2
