"""The ``ioadvisor`` entry point (advisor/entry.py): ``ioadvisor run`` of a native program starts it before the
CLI's parser and the launcher's heavier half are imported; every other command line goes to advisor/cli.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from instrumentation import preload
from instrumentation.tracefile import load_trace

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(preload.library() is None, reason="the libhdf5 interposer was not built")

PROBE = textwrap.dedent("""
    import sys
    before = set(sys.modules)
    import instrumentation.nativestart as ns
    seen = {}
    spawn = ns.spawn
    def probe(argv):
        seen["imported"] = sorted(set(sys.modules) - before)
        return spawn(argv)
    ns.spawn = probe
    from advisor.entry import run_native
    argv, sys.argv[1:] = sys.argv[1:], []  # not the command itself: the status comes back (no os._exit)
    status = run_native(argv)
    import json
    print(json.dumps({"status": status, **seen}))
""")
HEAVY = {"argparse", "pathlib", "re", "json", "subprocess", "threading", "dataclasses", "typing", "numpy",
         "pyarrow", "sysconfig", "advisor.cli", "advisor.commands.run", "instrumentation.launch",
         "instrumentation.records", "instrumentation.tracedir"}
"""What a native program's start does not wait for (benchmarks/speed/tracing_overhead.py, fixed cost)."""


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return env


def _probe(tmp_path, *argv):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    res = subprocess.run([sys.executable, str(probe), *argv], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=_env())
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.splitlines()[-1])


@pytest.mark.parametrize("output", ["t.parquet", "t.jsonl"])
def test_a_native_program_starts_before_the_parser_and_the_launchers_heavy_half(tmp_path, output):
    seen = _probe(tmp_path, "run", "-o", output, "--", "/bin/sh", "-c", "exit 3")
    assert seen["status"] == 3 and "imported" in seen  # started by run_native (the probe saw the spawn)
    assert not HEAVY & set(seen["imported"]), HEAVY & set(seen["imported"])
    trace = load_trace(tmp_path / output)
    assert trace.complete and preload.CAPTURE_LEVEL in trace.header.capture
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["probe.py", output])  # no parts directory left


def test_an_earlier_trace_is_replaced_with_force_and_anything_else_is_the_clis(tmp_path):
    (tmp_path / "t.parquet").mkdir()
    (tmp_path / "t.parquet" / "_meta.jsonl").write_text("earlier\n")
    (tmp_path / "t.parquet" / "part-000000.parquet").write_text("earlier\n")
    seen = _probe(tmp_path, "run", "--force", "--output=t.parquet", "/bin/sh", "-c", "exit 0")
    assert seen["status"] == 0 and "imported" in seen
    assert load_trace(tmp_path / "t.parquet").complete
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine\n")  # not a trace: tracedir.prepare refuses it, says why
    for argv in (["run", "--force", "-o", "d", "--", "/bin/true"],  # not surely an earlier trace
                 ["run", "-o", "t.parquet", "--", "/bin/true"],  # exists, no --force
                 ["run", "--substitute", "a=b", "--", "/bin/true"],  # another option
                 ["run", "--", sys.executable, "-c", "pass"],  # a Python program
                 ["run", "--", str(tmp_path / "missing")],  # no such program
                 ["trace", "show", "t.parquet"]):
        assert _probe(tmp_path, *argv) == {"status": None}, argv
    assert (tmp_path / "d" / "notes.txt").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "probe.py", "t.parquet"]


def test_the_command_reports_the_programs_ending_as_a_shell_does(tmp_path):
    res = subprocess.run([sys.executable, "-m", "advisor", "run", "-o", "t.parquet", "--", "/bin/sh", "-c",
                          "echo out; echo err >&2; kill -TERM $$"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=_env())
    assert res.returncode == 128 + 15 and res.stdout == "out\n" and res.stderr.startswith("err\n")
    assert "ioadvisor: trace" in res.stderr and load_trace(tmp_path / "t.parquet").complete
    res = subprocess.run([sys.executable, "-m", "advisor", "run", "-o", "t.parquet", "--", "/bin/true"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=_env())
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "exists" in res.stderr  # the CLI's one line
