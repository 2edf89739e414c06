"""Programs with libhdf5 linked in statically (Debian's h5cc default): the gap is named, and the link-time
wrapper (`ioadvisor link-flags`) captures them as the interposer captures a shared libhdf5. Each program's
own selection list is the ground truth."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from advisor.commands.trace import format_trace
from instrumentation import interpose, linkage
from instrumentation.patterns import summarize

from test_interpose import C_DIR, IOADVISOR, _env, elements, expected_selection, traced_run

H5CC = shutil.which("h5cc")


def build(tmp_path, source: str, *, shared: bool = False, wrapped: bool = True, name: str | None = None) -> Path:
    """``h5cc [-shlib] -o EXE SOURCE [$(ioadvisor link-flags)]``, as a user builds it."""
    if H5CC is None:
        pytest.skip("h5cc missing (apt-get install libhdf5-dev, as .ci/run does)")
    exe = tmp_path / (name or Path(source).stem)
    flags = []
    if wrapped:
        res = subprocess.run([str(IOADVISOR), "link-flags"], capture_output=True, text=True, timeout=60, env=_env())
        assert res.returncode == 0, res.stderr
        flags = res.stdout.split()
    subprocess.run([H5CC, *(["-shlib"] if shared else []), "-O1", "-o", str(exe), str(C_DIR / source), *flags],
                   check=True, timeout=120, cwd=tmp_path)
    return exe


def test_a_static_program_without_the_wrapper_is_named_in_the_header(tmp_path):
    """The issue's case: `h5cc -o gt gt.c && ioadvisor run -- ./gt` held nothing and said complete."""
    exe = build(tmp_path, "row_bands.c", wrapped=False)
    found = linkage.inspect(exe)
    assert found.static_hdf5 is not None and not found.wrapped
    res = subprocess.run([str(IOADVISOR), "run", "-o", "t.jsonl", "--", str(exe), "bands.h5"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env=_env())
    assert res.returncode == 0, res.stderr
    from instrumentation.tracefile import load_trace

    trace = load_trace(tmp_path / "t.jsonl")
    assert trace.n_access == 0
    (note,) = [m for m in trace.missed if "linked into it statically" in m]
    assert str(exe) in note and "ioadvisor link-flags" in note
    assert "is missing something: libhdf5 calls of" in res.stderr
    head = format_trace(trace, summarize(trace)).splitlines()[0]
    assert "(complete)" not in head and "incomplete" in head
    shown = subprocess.run([str(IOADVISOR), "trace", "show", "t.jsonl"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120, env=_env()).stdout
    assert "(complete)" not in shown and "linked into it statically" in shown


@pytest.mark.parametrize("source, n", [("row_bands.c", 20), ("known_accesses.c", 12)])
def test_a_static_program_with_the_wrapper_every_selection(tmp_path, source, n):
    exe = build(tmp_path, source)
    assert linkage.inspect(exe).wrapped and linkage.inspect(exe).static_hdf5
    trace, truth = traced_run(tmp_path, exe, tmp_path / "data.h5")
    assert len(truth) == n and not trace.missed
    assert [a.op for a in trace.accesses] == [t["op"] for t in truth]
    (ds,) = trace.datasets.values()
    for access, line in zip(trace.accesses, truth):
        want = expected_selection(line)
        if line["kind"] == "hyperslab":
            assert access.selection == want
        else:
            assert elements(access.selection, ds.shape) == elements(want, ds.shape)
        assert access.nbytes == 8 * access.nelements and access.duration > 0
    (lib,) = trace.header.libraries
    assert lib == f"HDF5 {linkage.inspect(exe).static_hdf5}: {exe} (linked in: link-time wrapper)"


def test_a_wrapped_program_with_a_shared_libhdf5_is_recorded_once(tmp_path):
    """Linked with -shlib as well, its calls reach the preloaded interposer too: the wrapper stays silent."""
    exe = build(tmp_path, "row_bands.c", shared=True)
    assert linkage.inspect(exe) == linkage.Linkage(None, True)
    trace, truth = traced_run(tmp_path, exe, tmp_path / "bands.h5")
    assert len(trace.accesses) == len(truth) == 20
    assert [a.selection.start for a in trace.accesses] == [tuple(t["start"]) for t in truth]
    (lib,) = trace.header.libraries
    assert "/libhdf5_serial.so" in lib and "wrapper" not in lib


def _records(log_dir: Path) -> tuple[np.ndarray, interpose.ProcessLog]:
    (acc,) = log_dir.glob("h5-*.acc")
    log = interpose.ProcessLog(log_dir, int(acc.name[3:-4]))
    return log.read(), log


def test_a_wrapped_program_outside_a_run_records_only_where_told(tmp_path):
    """Run by itself with IOADVISOR_H5_DIR it writes the interposer's files there; without it, nothing."""
    exe = build(tmp_path, "row_bands.c")
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in _env().items() if k not in ("LD_PRELOAD", interpose.LOG_DIR_VAR)}
    before = set(tmp_path.rglob("*"))
    subprocess.run([str(exe), str(tmp_path / "a.h5")], check=True, timeout=60, env=env, capture_output=True)
    assert set(tmp_path.rglob("*")) - before == {tmp_path / "a.h5"}
    subprocess.run([str(exe), str(tmp_path / "b.h5")], check=True, timeout=60, capture_output=True,
                   env={**env, interpose.LOG_DIR_VAR: str(logs)})
    rec, log = _records(logs)
    assert rec["op"].tolist() == [1] * 10 + [0] * 10
    assert rec["start"][:, 0].tolist() == list(range(0, 100, 10)) * 2
    assert log.libs[0]["linked"] and log.libs[0]["file"] == str(exe)


def test_the_wrapper_with_hdf5_1_14_multi_dataset_calls(tmp_path):
    """H5Dread_multi / H5Dwrite_multi (HDF5 >= 1.14) through the wrapper, linked against h5py's bundled
    libhdf5 (Debian's 1.10 has neither) and run without the interposer: one access per dataset."""
    import h5py

    libs = sorted(Path(h5py.__file__).parent.parent.glob("h5py.libs/libhdf5-*.so*"))
    wrapper = linkage.wrapper_object()
    if not libs or h5py.version.hdf5_version_tuple < (1, 14) or wrapper is None:
        pytest.skip("no bundled libhdf5 >= 1.14 or no wrapper to build with")
    exe = tmp_path / "multi_accesses"
    subprocess.run(["cc", "-O1", "-o", str(exe), str(C_DIR / "multi_accesses.c"), *linkage.link_flags(wrapper),
                    str(libs[0]), f"-Wl,-rpath,{libs[0].parent}"], check=True, timeout=120)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in _env().items() if k != "LD_PRELOAD"}
    res = subprocess.run([str(exe), str(tmp_path / "m.h5")], check=True, timeout=60, capture_output=True,
                         text=True, env={**env, interpose.LOG_DIR_VAR: str(logs)})
    rec, log = _records(logs)
    assert rec["op"].tolist() == [1, 1, 0, 0] and len(res.stdout.splitlines()) == 4
    paths = [log.datasets[int(i)]["path"] for i in rec["ds"]]
    assert paths == ["/a", "/b", "/a", "/b"]
    assert rec["start"][2, :2].tolist() == [2, 1] and rec["start"][3, 0] == 5


def test_inspect_tells_programs_apart(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\necho 'HDF5 library version: 1.10.8'\n")
    assert linkage.inspect(script) is None  # not a program: nothing to say
    assert linkage.inspect(tmp_path / "missing") is None
    assert linkage.inspect(sys.executable) == linkage.Linkage(None, False)
    assert linkage.static_note(sys.executable) is None


def test_link_flags_name_every_wrapped_function_and_the_object():
    if linkage.wrapper_object() is None:
        if shutil.which("cc") or shutil.which("gcc"):
            pytest.fail("the link-time wrapper was not built although a C compiler is present", pytrace=False)
        pytest.skip("no C compiler: the wrapper cannot be built here")
    res = subprocess.run([str(IOADVISOR), "link-flags"], capture_output=True, text=True, timeout=60, env=_env())
    flags = res.stdout.split()
    assert res.returncode == 0
    assert flags[:-1] == [f"-Wl,--wrap={name}" for name in linkage.WRAPPED]
    assert Path(flags[-1]) == linkage.wrapper_object()


def test_a_static_program_started_by_a_script_is_named_by_the_interposer(tmp_path):
    """`ioadvisor run` reads only the program on its command line; one a script starts is found at its exit by
    the preloaded interposer (HDF5's version string in its file): named once, while a wrapped one beside it is
    captured."""
    plain = build(tmp_path, "row_bands.c", wrapped=False, name="plain")
    wrapped = build(tmp_path, "row_bands.c", name="wrapped")
    script = tmp_path / "both.sh"
    script.write_text(f"#!/bin/sh\n{plain} a.h5 >/dev/null\n{wrapped} b.h5\n")
    script.chmod(0o755)
    trace, truth = traced_run(tmp_path, script)
    assert len(trace.accesses) == len(truth) == 20
    (note,) = trace.missed
    assert note == linkage.gap_note(str(plain), linkage.inspect(plain).static_hdf5)
    # named on the command line too, it is named once
    trace, _ = traced_run(tmp_path, plain, "c.h5", output="p.jsonl")
    assert trace.missed == (note,) or list(trace.missed) == [note]
