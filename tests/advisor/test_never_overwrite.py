"""An existing trace (or rank part) is never replaced unless the user says so."""
import subprocess
import sys
from pathlib import Path

import pytest

import advisor
from instrumentation.errors import OutputExistsError

IOADVISOR = Path(sys.executable).parent / "ioadvisor"


def test_run_refuses_before_the_program_starts_and_force_replaces(tmp_path):
    trace = tmp_path / "keep.jsonl"
    trace.write_text("137 lines of a ten-hour run\n")
    marker = tmp_path / "ran"
    app = tmp_path / "app.py"
    app.write_text(f"open({str(marker)!r}, 'w').close()\n")
    cmd = [str(IOADVISOR), "run", "-o", str(trace), "--", sys.executable, str(app)]
    refused = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and not marker.exists()
    assert refused.stderr.count("\n") == 1 and "exists" in refused.stderr and "--force" in refused.stderr
    assert trace.read_text() == "137 lines of a ten-hour run\n"
    forced = subprocess.run(cmd[:2] + ["--force"] + cmd[2:], capture_output=True, text=True, timeout=120)
    assert forced.returncode == 0 and marker.exists()
    assert trace.read_text().startswith('{"t":"h"')


def test_api_refuses_unless_overwrite(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("old\n")
    with pytest.raises(OutputExistsError, match="not replacing"):
        with advisor.trace(path):
            pass
    assert path.read_text() == "old\n"
    with advisor.trace(path, overwrite=True) as t:
        pass
    assert t.load().complete


def test_a_rank_part_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("PMI_RANK", "1")  # rank 1 of 2, as mpiexec's launcher tells it
    monkeypatch.setenv("PMI_SIZE", "2")
    part = tmp_path / "t.rank0001.jsonl"
    part.write_text("rank 1 of an earlier run\n")
    with pytest.raises(OutputExistsError, match="t.rank0001.jsonl exists"):
        advisor.trace(tmp_path / "t.jsonl").__enter__()
    assert part.read_text() == "rank 1 of an earlier run\n"
