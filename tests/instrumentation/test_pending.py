"""A native run's pending batch (instrumentation/pendingbatch.py, pendingconvert.py): ``ioadvisor run`` of a C
program seals the interposer's logs into the trace without numpy or Arrow, and the trace's first reader converts
them into the trace the eager exit writes, once, whatever readers run at once, are killed, or cannot write."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from instrumentation import pendingconvert
from instrumentation.columnar import part_files
from instrumentation.launch import NativeRun
from instrumentation.pendingbatch import PENDING, RUN_CONFIG, waiting
from instrumentation.tracedir import META
from instrumentation.tracefile import load_trace

from test_interpose import IOADVISOR, SERIAL, _env, compile_c

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path, exe, output="t.parquet", *extra, env=(), data="known.h5"):
    return subprocess.run([str(IOADVISOR), "run", *extra, "-o", output, "--", str(exe), str(tmp_path / data)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**_env(), **dict(env)})


@pytest.fixture
def pending_trace(tmp_path):
    """(a fresh pending trace of tests/instrumentation/c/known_accesses.c, the run's result)."""
    exe = compile_c(tmp_path, "known_accesses.c", SERIAL)
    res = _run(tmp_path, exe)
    assert res.returncode == 0, res.stderr[-3000:]
    path = tmp_path / "t.parquet"
    assert waiting(path) and not part_files(path)
    return path, res


def _eager(tmp_path, pending: Path) -> Path:
    """The same logs converted by the launcher's eager way (``NativeRun`` not deferring: its watcher converts
    them as they reach the log directory, its exit the rest), with the run's clock origin: the trace an eager
    exit writes of them."""
    out = tmp_path / "eager.parquet"
    run = NativeRun(out)
    run.__enter__()
    run._deferring = False
    run._run_config = json.loads((pending / PENDING / RUN_CONFIG).read_text())["run"]
    run.program_started()
    logs = Path(run._start.logs)
    staging = Path(tempfile.mkdtemp(dir=logs.parent))  # each log appears whole, as a process's own writes do
    for f in sorted((pending / PENDING).glob("h5-*"), key=lambda f: f.suffix != ".meta"):
        shutil.copy(f, staging / f.name)
        os.replace(staging / f.name, logs / f.name)
    staging.rmdir()
    threading.Event().wait(0.2)  # the watcher's looks (WATCH_INTERVAL)
    run.__exit__(None, None, None)
    return out


@pytest.mark.parametrize("source", ["mixed_widths.c", "box_loop.c", "selection_changes.c"])
def test_other_programs_convert_as_the_eager_exit_and_are_counted_at_the_exit(tmp_path, source):
    """Records of several widths, batches of alike reads with a write, selections of every kind."""
    exe = compile_c(tmp_path, source, SERIAL)
    res = _run(tmp_path, exe, data="data.h5")
    assert res.returncode == 0, res.stderr[-3000:]
    path = tmp_path / "t.parquet"
    assert waiting(path)
    _same_as_eager(tmp_path, path, res.stderr.strip().splitlines()[-1])


def test_the_first_reader_converts_record_for_record_as_the_eager_exit(tmp_path, pending_trace):
    path, res = pending_trace
    lazy = _same_as_eager(tmp_path, path, res.stderr.strip().splitlines()[-1])
    assert lazy.n_access == 12
    head = json.loads((path / META).read_text().splitlines()[0])
    assert head["pid"] != os.getpid() and "pending" not in (path / META).read_text()
    assert load_trace(path).accesses == lazy.accesses  # read again: converted once


def _same_as_eager(tmp_path, path: Path, summary: str):
    """The pending trace at ``path`` read (converted), checked against the eager exit's conversion of the same
    logs and against the run's ``summary`` line; the trace."""
    eager = _eager(tmp_path, path)
    lazy = load_trace(path)
    assert not waiting(path) and not (path / PENDING).exists() and part_files(path)
    assert sorted(p.name for p in path.iterdir() if p.name.startswith(".")) == []
    want = load_trace(eager)
    assert lazy.complete and want.complete and lazy.n_access == want.n_access > 0
    assert lazy.datasets == want.datasets and lazy.accesses == want.accesses and lazy.resizes == want.resizes
    assert (lazy.header.missed, lazy.header.libraries) == (want.header.missed, want.header.libraries)
    # the records file after its header, and the batches' rows, are the eager exit's
    assert (path / META).read_text().splitlines()[1:] == (eager / META).read_text().splitlines()[1:]
    assert [pq.read_table(f) for f in part_files(path)] == [pq.read_table(f) for f in part_files(eager)]
    # the run's summary line counted the logs as the trace counts its records
    n_reads = sum(a.op == "read" for a in lazy.accesses)
    assert summary == (f"ioadvisor: trace {path}: {len(lazy.datasets)} datasets, {lazy.n_access} accesses "
                       f"({n_reads} reads, {lazy.n_access - n_reads} writes)")
    return lazy


def test_the_launcher_imports_neither_numpy_nor_arrow(tmp_path):
    exe = compile_c(tmp_path, "known_accesses.c", SERIAL)
    # the launcher's interpreter (the native front end's Python entry point, or the ioadvisor script) says
    res = _run(tmp_path, exe, "t.parquet", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    imported = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert "instrumentation.launch" in imported and "instrumentation.pendingbatch" in imported
    assert not {"numpy", "pyarrow", "instrumentation.interpose", "instrumentation.convertsink"} & imported
    assert load_trace(tmp_path / "t.parquet").n_access == 12


def test_concurrent_readers_convert_once(tmp_path, pending_trace, monkeypatch):
    path, _ = pending_trace
    calls = []
    convert = pendingconvert.convert

    def slow(*args):
        calls.append(args)
        threading.Event().wait(0.3)  # the other reader arrives meanwhile
        convert(*args)

    monkeypatch.setattr(pendingconvert, "convert", slow)
    traces = []
    readers = [threading.Thread(target=lambda: traces.append(load_trace(path))) for _ in range(2)]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    assert len(calls) == 1 and len(traces) == 2
    assert traces[0].accesses == traces[1].accesses and traces[0].n_access == 12


@pytest.mark.parametrize("when", ["converting", "committing"])
def test_a_reader_killed_mid_conversion_leaves_the_batch_to_the_next(tmp_path, pending_trace, when):
    path, _ = pending_trace
    reference = tmp_path / "copy.parquet"
    shutil.copytree(path, reference)
    kill_at = str(path / META) if when == "committing" else "part-000000.parquet"
    code = (f"import os, signal\nreal = os.replace\n"
            f"def deadly(src, dst, *a, **k):\n"
            f"    if str(dst).endswith({kill_at!r}):\n"
            f"        os.kill(os.getpid(), signal.SIGKILL)\n"
            f"    return real(src, dst, *a, **k)\n"
            f"os.replace = deadly\n"
            f"from instrumentation.tracefile import load_trace\nload_trace({str(path)!r})\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=_env())
    assert res.returncode == -9, res.stderr[-3000:]
    assert waiting(path)
    if when == "committing":  # its batches were moved in, the records file not yet replaced
        assert part_files(path) and "pending" in (path / META).read_text()
    trace = load_trace(path)
    assert not waiting(path) and not [p for p in path.iterdir() if p.name.startswith(".converting-")]
    assert trace.accesses == load_trace(reference).accesses and trace.n_access == 12


def test_a_read_only_trace_is_converted_for_its_reader_only(tmp_path, pending_trace, monkeypatch):
    path, _ = pending_trace
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    monkeypatch.setattr(pendingconvert.os, "access", lambda *a, **k: False)  # root ignores permissions
    trace = load_trace(path)
    assert trace.n_access == 12 and trace.source == str(path) and trace.complete
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before and waiting(path)
    monkeypatch.undo()
    assert load_trace(path).accesses == trace.accesses and not waiting(path)


def test_an_earlier_pending_trace_is_replaced_with_force(tmp_path, pending_trace):
    path, _ = pending_trace
    exe = tmp_path / "known_accesses"
    res = _run(tmp_path, exe, "t.parquet", "--force")
    assert res.returncode == 0, res.stderr[-3000:]
    assert waiting(path) and load_trace(path).n_access == 12
    res = _run(tmp_path, exe, "t.parquet")  # without --force: refused, the trace kept
    assert res.returncode == 2 and "exists" in res.stderr


def test_the_launchers_light_header_is_the_records_header(tmp_path):
    """``NativeRun`` writes the header without importing records (dataclasses): the same line, field for field."""
    from instrumentation import launch
    from instrumentation.records import CAPTURE_CALLS, SCHEMA_VERSION, TraceHeader

    assert (launch.SCHEMA, launch.CAPTURE_CALLS) == (SCHEMA_VERSION, CAPTURE_CALLS)
    run = NativeRun(tmp_path / "t.parquet")
    run.__enter__()
    run.__exit__(None, None, None)
    text = (tmp_path / "t.parquet" / META).read_text().splitlines()[0]
    line = json.loads(text)
    header = TraceHeader.from_config({k: v for k, v in line.items() if k != "t"})
    assert line == {"t": "h", **header.get_config()} and header.pid == os.getpid()
    from instrumentation.tracefile import dumps

    assert text == dumps({"t": "h", **header.get_config()})


def test_a_log_directory_on_another_file_system_is_copied_in_whole(tmp_path, monkeypatch):
    from instrumentation import pendingbatch

    logs, live = tmp_path / "logs", tmp_path / "t.parquet"
    logs.mkdir()
    live.mkdir()
    (live / META).write_text('{"t":"h"}\n')
    files = {"h5-7.acc": os.urandom(3 << 20), "h5-7.meta": b'{"t":"lib","i":0}\n'}
    for name, data in files.items():
        (logs / name).write_bytes(data)
    rename = os.rename

    def across(src, dst):
        if Path(src) == logs:
            raise OSError(18, "Invalid cross-device link")  # EXDEV
        return rename(src, dst)

    monkeypatch.setattr(pendingbatch.os, "rename", across)
    pendingbatch.seal(live, logs, {"run": {"origin": 1.5}, "missed": []}, '{"t":"pending","batch":"pending"}\n')
    assert not logs.exists() and waiting(live) and not (live / pendingbatch.SEALING).exists()
    assert {f.name: f.read_bytes() for f in (live / PENDING).glob("h5-*")} == files
    assert json.loads((live / PENDING / RUN_CONFIG).read_text())["run"] == {"origin": 1.5}
    assert (live / META).read_text().splitlines()[-1] == '{"t":"pending","batch":"pending"}'


def test_a_batch_never_sealed_leaves_a_truncated_trace(tmp_path, pending_trace):
    """The launcher killed between the records file's pending line and the batch's move: the header is read."""
    path, _ = pending_trace
    shutil.rmtree(path / PENDING)
    with pytest.raises(Exception, match="no end record"):
        load_trace(path)
    trace = load_trace(path, allow_truncated=True)
    assert not trace.complete and trace.n_access == 0
