"""The C hook (instrumentation/hotpath/hotpath.c) records exactly what the Python hooks record, over a program of many
kinds of selection (programs/selection_mix.py), whatever it keeps of the last dataset between calls."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from instrumentation import hooks_h5py

PROGRAM = Path(__file__).parent / "programs" / "selection_mix.py"


@pytest.mark.skipif(hooks_h5py._hotpath is None, reason="no C compiler built instrumentation._hotpath")
def test_c_hook_records_what_the_python_hooks_record(tmp_path):
    got = {}
    for impl in ("c", "python"):
        run = subprocess.run([sys.executable, str(PROGRAM), str(tmp_path / impl), impl], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        got[impl] = json.loads(run.stdout)
    c, py = got["c"], got["python"]
    assert c["hooks"] == ["Hook", "Hook"] and py["hooks"] == ["function", "function"]
    assert c["out"] == py["out"]  # what the program computed and raised
    assert c["failed"] == py["failed"] and c["failed"][0] >= 5 and c["errors"] == py["errors"] == [0, 0]
    for trace in ("trace1", "trace2"):
        assert c[trace]["datasets"] == py[trace]["datasets"]
        assert c[trace]["resizes"] == py[trace]["resizes"]
        assert c[trace]["folded"] == py[trace]["folded"]  # the rows as written, runs folded
        assert c[trace]["accesses"] == py[trace]["accesses"]
    assert len(c["trace1"]["accesses"]) > 80 and len(c["trace2"]["accesses"]) == 4
    # the extent seen after changes: g grew to 8 then 10 rows, shrank to 3, then grew untraced to 12
    ids = {path: i for i, path, *_ in c["trace1"]["datasets"]}
    g_reads = [a["sel"]["start"][0] for a in c["trace1"]["accesses"] if a["ds"] == ids["/g"] and a["op"] == "read"]
    assert g_reads[:6] == [1, 3, 7, 6, 9, 2]
    assert c["trace2"]["accesses"][0]["sel"]["start"] == [11, 0]
