import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands.run import Program
from instrumentation.tracefile import load_trace

IOADVISOR = Path(sys.executable).parent / "ioadvisor"

PROBE = textwrap.dedent("""
    import json, sys
    json.dump({"argv": sys.argv, "path0": sys.path[0], "name": __name__}, open(sys.argv[1], "w"))
""")


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.parametrize("python", [[], ["python"], [sys.executable], ["python3", "-u"]])
def test_script_sees_its_own_argv_path_and_main(tmp_path, capsys, python):
    probe = script(tmp_path / "", "probe.py", PROBE)
    out = tmp_path / "seen.json"
    trace = tmp_path / "t.jsonl"
    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    assert main(["run", "-o", str(trace), "--", *python, str(probe), str(out), "-o", "x", "--flag"]) == 0
    seen = json.loads(out.read_text())
    assert seen == {"argv": [str(probe), str(out), "-o", "x", "--flag"], "path0": str(tmp_path), "name": "__main__"}
    assert (sys.argv, sys.path[0]) == (saved_argv, saved_path0)  # restored for the caller
    assert load_trace(trace).complete
    assert f"ioadvisor: trace {trace}" in capsys.readouterr().err


def test_module_mode_runs_as_main_with_cwd_on_path(tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    script(pkg, "tool.py", PROBE)
    out = tmp_path / "seen.json"
    monkeypatch.chdir(tmp_path)
    assert main(["run", "-o", "t.jsonl", "--", "python", "-m", "mypkg.tool", str(out), "a"]) == 0
    seen = json.loads(out.read_text())
    assert seen["argv"] == [str(pkg / "tool.py"), str(out), "a"]
    assert seen["path0"] == str(tmp_path) and seen["name"] == "__main__"
    assert load_trace(tmp_path / "t.jsonl").complete
    sys.modules.pop("mypkg.tool", None), sys.modules.pop("mypkg", None)


@pytest.mark.parametrize("body, status, stderr_has", [
    ("import sys; sys.exit(3)", 3, None),
    ("import sys; sys.exit(0)", 0, None),
    ("raise SystemExit", 0, None),
    ("import sys; sys.exit('bad input file')", 1, "bad input file"),
    ("def f():\n    raise ValueError('boom')\nf()", 1, "ValueError: boom"),
    ("raise KeyboardInterrupt", 130, "KeyboardInterrupt"),
])
def test_exit_status_and_traceback_as_python_gives_them(tmp_path, capsys, body, status, stderr_has):
    prog = script(tmp_path, "prog.py", body)
    trace = tmp_path / "t.jsonl"
    assert main(["run", "-o", str(trace), "--", "python", str(prog)]) == status
    err = capsys.readouterr().err
    if stderr_has:
        assert stderr_has in err
    assert load_trace(trace).complete  # the trace is closed and kept however the program ends


def test_traceback_starts_at_the_program(tmp_path, capsys):
    prog = script(tmp_path, "prog.py", "x = 1\ndef f():\n    return 1 / 0\nf()\n")
    assert main(["run", "-o", str(tmp_path / "t.jsonl"), "--", str(prog)]) == 1
    err = capsys.readouterr().err
    tb = err[err.index("Traceback"):]
    frames = [ln for ln in tb.splitlines() if ln.strip().startswith("File ")]
    assert frames and all(str(prog) in f for f in frames), tb
    assert "ZeroDivisionError: division by zero" in tb


def test_h5py_accesses_of_an_unmodified_script_are_traced(tmp_path, capsys):
    prog = script(tmp_path, "app.py", """
        import sys
        import h5py, numpy as np
        with h5py.File(sys.argv[1], "w") as f:
            d = f.create_dataset("x", shape=(100, 8), dtype="f4", chunks=(10, 8))
            for i in range(0, 100, 10):
                d[i:i + 10] = np.ones((10, 8), "f4")
            total = sum(float(d[i:i + 5].sum()) for i in range(0, 100, 5))
        sys.exit(0 if total == 800 else 1)
    """)
    trace = tmp_path / "t.jsonl"
    assert main(["run", "-o", str(trace), "--", "python", str(prog), str(tmp_path / "f.h5")]) == 0
    tr = load_trace(trace)
    (ds,) = tr.datasets.values()
    assert ds.path == "/x" and ds.shape == (100, 8) and ds.chunks == (10, 8)
    ops = [a.op for a in tr.accesses]
    assert ops.count("write") == 10 and ops.count("read") == 20
    assert "1 datasets, 30 accesses (20 reads, 10 writes)" in capsys.readouterr().err


def test_bad_program_is_a_one_line_error(tmp_path, capsys):
    assert main(["run", "--", "python", str(tmp_path / "missing.py")]) == 2
    assert "missing.py: no such script" in capsys.readouterr().err
    assert main(["run", "--", "python", "-X", "dev", "x.py"]) == 2
    assert "python option -X is not supported" in capsys.readouterr().err
    assert main(["run"]) == 2
    assert capsys.readouterr().err.startswith("ioadvisor run: error: no program given")


def test_python_c_runs_its_code_as_main_with_its_argv(tmp_path, capsys):
    out, trace = tmp_path / "seen.json", tmp_path / "t.jsonl"
    code = ("import json, sys, h5py, numpy as np\n"
            f"json.dump({{'argv': sys.argv, 'path0': sys.path[0], 'name': __name__}}, open({str(out)!r}, 'w'))\n"
            f"with h5py.File({str(tmp_path / 'f.h5')!r}, 'w') as f:\n"
            "    f.create_dataset('x', (10,), 'f8')[2:5] = 1.0\n")
    saved_main = sys.modules["__main__"]
    assert main(["run", "-o", str(trace), "--", "python", "-c", code, "a", "-b"]) == 0
    assert json.loads(out.read_text()) == {"argv": ["-c", "a", "-b"], "path0": "", "name": "__main__"}
    assert sys.modules["__main__"] is saved_main
    assert [a.op for a in load_trace(trace).accesses] == ["write"]
    assert main(["run", "-o", str(trace), "--force", "--", "python", "-c", "raise SystemExit(4)"]) == 4
    assert main(["run", "-o", str(trace), "--force", "--", "python", "-c", "1 / 0"]) == 1
    assert 'File "<string>", line 1' in capsys.readouterr().err  # python's own traceback, not ioadvisor's frames


def test_program_parse():
    assert Program.parse(["--", "python3.11", "-m", "pkg.mod", "a"]) == Program("pkg.mod", ("a",), module=True)
    assert Program.parse(["python", "-u", "-m", "m"]).unbuffered


def test_console_script_passes_exit_code_and_keeps_trace(tmp_path):
    prog = script(tmp_path, "prog.py", "print('out'); import sys; sys.exit(7)")
    res = subprocess.run([str(IOADVISOR), "run", "-o", "t.jsonl", "--", "python", str(prog)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))})
    assert res.returncode == 7, res.stderr
    assert res.stdout == "out\n"
    assert load_trace(tmp_path / "t.jsonl").complete


# --- real MPI: mpiexec -n P ioadvisor run -- python app.py ------------------------------------------------

MPI_APP = textwrap.dedent("""
    import sys
    from mpi4py import MPI
    import h5py
    import numpy as np
    import zarr

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    h5_path, zarr_path = sys.argv[1], sys.argv[2]
    with h5py.File(h5_path, "r") as f:  # each rank reads its own rows of a shared file
        d = f["x"]
        mine = d.shape[0] // size
        total = sum(float(d[i:i + 10].sum()) for i in range(rank * mine, (rank + 1) * mine, 10))
    assert total == sum(range(rank * mine, (rank + 1) * mine)) * 8, total
    z = zarr.open_array(zarr_path, mode="r+")  # ranks write disjoint chunks of one array
    for c in range(rank, z.shape[0] // 10, size):
        z[10 * c:10 * (c + 1)] = rank
    comm.Barrier()
""")


@pytest.fixture
def shared_data(tmp_path):
    import h5py
    import numpy as np
    import zarr

    h5_path, zarr_path = tmp_path / "shared.h5", tmp_path / "shared.zarr"
    with h5py.File(h5_path, "w") as f:
        f.create_dataset("x", data=np.repeat(np.arange(400, dtype="f8")[:, None], 8, axis=1), chunks=(50, 8))
    zarr.create_array(str(zarr_path), shape=(400, 8), chunks=(10, 8), dtype="i4", fill_value=-1)
    return h5_path, zarr_path


@pytest.mark.mpi
@pytest.mark.parametrize("n", [2, 4])
def test_mpiexec_ioadvisor_run_traces_each_rank_and_merges(tmp_path, shared_data, n):
    import numpy as np
    import zarr

    h5_path, zarr_path = shared_data
    app = script(tmp_path, "app.py", MPI_APP)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    res = subprocess.run([str(mpiexec), "-n", str(n), str(IOADVISOR), "run", "-o", "t.jsonl", "--",
                          "python", str(app), str(h5_path), str(zarr_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    # the program computed what it computes untraced
    z = zarr.open_array(str(zarr_path), mode="r")[:]
    assert (z[:, 0] == (np.arange(400) // 10) % n).all()
    n_chunks = 40
    for r in range(n):
        own = load_trace(tmp_path / f"t.rank{r:04d}.jsonl")
        assert (own.header.rank, own.header.size) == (r, n)
        assert sum(a.op == "read" for a in own.accesses) == 400 // n // 10
        assert sum(a.op == "write" for a in own.accesses) == len(range(r, n_chunks, n))
    merged = load_trace(tmp_path / "t.jsonl")
    assert merged.nprocs == n and len(merged.datasets) == 2
    reads = {r: 0 for r in range(n)}
    for a in merged.accesses:
        reads[a.rank] += merged.datasets[a.dataset].library == "hdf5"
    assert reads == {r: 400 // n // 10 for r in range(n)}
    writes = sorted(a.selection.start[0] // 10 for a in merged.accesses if a.op == "write")
    assert writes == list(range(n_chunks))
    assert res.stderr.count("ioadvisor: trace") == 1  # one summary, from rank 0
    assert f"{n} ranks" in res.stderr


FAILING_RANK = textwrap.dedent("""
    import sys
    from mpi4py import MPI
    import h5py
    comm = MPI.COMM_WORLD
    with h5py.File(sys.argv[1], "r") as f:
        f["x"][comm.Get_rank()]
    if comm.Get_rank() == 1:
        raise ValueError("rank 1 fails")
    if sys.argv[2] == "collective":
        comm.allreduce(1)  # rank 1 never comes: only an abort ends this job
""")


@pytest.mark.mpi
@pytest.mark.parametrize("launch, then", [(["python"], "independent"), (["python", "-m", "mpi4py"], "collective")])
def test_a_failing_rank_ends_the_job_as_it_would_untraced(tmp_path, shared_data, launch, then):
    """Rank 1 raises. Untraced, the others finish (exit 1), or mpi4py aborts a job they would wait in forever."""
    h5_path, _ = shared_data
    app = script(tmp_path, "app.py", FAILING_RANK)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    res = subprocess.run([str(mpiexec), "-n", "3", str(IOADVISOR), "run", "-o", "t.jsonl", "--",
                          *launch, str(app), str(h5_path), then],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "ValueError: rank 1 fails" in res.stderr
    assert load_trace(tmp_path / "t.rank0001.jsonl").complete  # the failed rank's trace is closed and kept
    if then == "independent":
        merged = load_trace(tmp_path / "t.jsonl")
        assert sorted(a.rank for a in merged.accesses) == [0, 1, 2]
