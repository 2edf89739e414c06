"""``ioadvisor run`` of a program that is not Python (instrumentation/launch.py): the launcher loads numpy and
Arrow only when the program recorded something, and the trace is whole when the command returns."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from instrumentation import interpose
from instrumentation.tracefile import load_trace

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(interpose.library() is None, reason="the libhdf5 interposer was not built")


def _run(tmp_path, output, *command, importtime=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *flags, "-m", "advisor", "run", "-o", output, "--", *command],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("output", ["t.parquet", "t.jsonl"])
def test_a_program_that_records_nothing_costs_no_numpy_nor_arrow(tmp_path, output):
    res = _run(tmp_path, output, "/bin/sh", "-c", "echo hello; exit 5", importtime=True)
    assert res.returncode == 5 and res.stdout == "hello\n"
    imported = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert "instrumentation.launch" in imported
    assert not {"numpy", "pyarrow", "instrumentation.tracer", "advisor.api"} & imported
    trace = load_trace(tmp_path / output)
    assert trace.complete and not trace.accesses and not trace.datasets
    assert interpose.CAPTURE_LEVEL in trace.header.capture and "child processes" in trace.header.capture
    assert sorted(p.name for p in tmp_path.iterdir()) == [output]  # no parts directory left


def test_the_program_starts_before_the_launchers_heavy_imports(tmp_path):
    """What a native program's start waits for is the launcher's light half: the trace's header (dataclasses),
    numpy and Arrow are imported beside the program, once it runs."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import json, sys
        import advisor.commands.run as run
        HEAVY = ("dataclasses", "numpy", "pyarrow", "tempfile", "instrumentation.records", "instrumentation.parts")
        seen = {}
        execute = run.Program.execute
        def probe(self, started=None):
            seen["imported"] = [m for m in HEAVY if m in sys.modules]
            return execute(self, started)
        run.Program.execute = probe
        from advisor.cli import main
        status = main(["run", "-o", "t.parquet", "--", "/bin/sh", "-c", "exit 3"])
        print(json.dumps({"status": status, **seen}))
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    res = subprocess.run([sys.executable, str(probe)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.splitlines()[-1]) == {"status": 3, "imported": []}
    assert load_trace(tmp_path / "t.parquet").complete


@pytest.mark.parametrize("output", ["t.parquet", "t.jsonl"])
def test_a_followed_python_child_of_a_shell_script_is_merged(tmp_path, output):
    child = tmp_path / "child.py"
    child.write_text(textwrap.dedent(f"""
        import h5py, numpy as np
        with h5py.File({str(tmp_path / 'f.h5')!r}, "w") as f:
            ds = f.create_dataset("x", (100, 4), "f4")
            for i in range(10):
                ds[i * 10:(i + 1) * 10] = np.ones((10, 4), "f4")
            ds[0:5, 1:3]
    """))
    res = _run(tmp_path, output, "/bin/sh", "-c", f"{sys.executable} {child}")
    assert res.returncode == 0, res.stderr[-3000:]
    trace = load_trace(tmp_path / output)
    assert trace.complete and not trace.missed
    assert [a.op for a in trace.accesses] == ["write"] * 10 + ["read"]
    assert len(trace.header.processes) == 2 and trace.header.processes[1].accesses == 11
    assert not list(tmp_path.glob("*.parts-*"))


def test_an_existing_trace_is_refused_with_the_projects_error(tmp_path):
    from instrumentation.errors import OutputExistsError
    from instrumentation.launch import NativeRun

    (tmp_path / "t.jsonl").write_text("earlier\n")
    with pytest.raises(OutputExistsError, match="not replacing"):
        NativeRun(tmp_path / "t.jsonl").__enter__()
    assert (tmp_path / "t.jsonl").read_text() == "earlier\n"
    res = _run(tmp_path, "t.jsonl", "/bin/sh", "-c", "exit 0")  # the CLI: one line, exit 2
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "exists" in res.stderr


def _nice_of(tid: int) -> int:
    with open(f"/proc/self/task/{tid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[16])  # field 19 of stat: nice


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_the_watcher_converts_below_the_program_and_at_its_priority_once_it_ended(tmp_path):
    """While the program runs the watcher yields to it (WATCH_NICE, never above the launcher's own nice); once
    it ended, what the watcher still does is the exit the user waits for."""
    import threading

    from instrumentation import launch

    gate = threading.Event()
    run = launch.NativeRun(tmp_path / "t.parquet")
    run._anything = lambda: gate.wait() and False  # keeps the watcher busy until released
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with run:
        run.program_started()
        for _ in range(200):  # the watcher sets its own priority as it starts
            if _nice_of(run._watcher.native_id) == max(launch.WATCH_NICE, own):
                break
            threading.Event().wait(0.01)
        assert _nice_of(run._watcher.native_id) == max(launch.WATCH_NICE, own)
        threading.Timer(0.2, gate.set).start()
        if os.geteuid() == 0 or own >= launch.WATCH_NICE:  # lowering a nice value takes privilege
            run._hurry_watcher()
            assert _nice_of(run._watcher.native_id) == own
    assert load_trace(tmp_path / "t.parquet").complete
