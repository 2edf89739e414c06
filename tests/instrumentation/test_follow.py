"""Child processes are traced: pools (fork, spawn, forkserver), executors, dask, distributed, DataLoader, subprocess.

Each program (tests/instrumentation/programs/workers.py) writes the rows it read
itself, the ground truth; its trace must hold exactly those reads, one part per
worker process with its pid and parent pid, and say what it knows it missed.
"""
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pytest

import advisor
from advisor.commands.trace import format_trace
from instrumentation.columns import compact_runs
from instrumentation.follow import PTH_NAME
from instrumentation.opens import cut_at
from instrumentation.patterns import summarize
from instrumentation.tracefile import load_trace

PROGRAM = Path(__file__).with_name("programs") / "workers.py"
ROOT = Path(__file__).resolve().parents[2]
ROWS = 200


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("follow") / "rows.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(ROWS * 4.0).reshape(ROWS, 4), chunks=(50, 4))
    return path


def child_env(**extra) -> dict:
    """This environment (with whatever it says about tracing) and this checkout importable, plus ``extra``."""
    return {**os.environ, **extra,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def run_program(tmp_path, data, kind, *, cli=False, rows=ROWS, trace_name="t.parquet"):
    trace, rows_out = tmp_path / trace_name, tmp_path / "rows.json"
    env = child_env(WORKERS_ROWS=str(rows))
    if cli:
        cmd = [sys.executable, "-m", "advisor", "run", "-o", str(trace), "--", "python", str(PROGRAM), kind,
               str(data), str(rows_out)]
    else:
        cmd = [sys.executable, str(PROGRAM), kind, str(data), str(rows_out), str(trace)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load_trace(trace), json.loads(rows_out.read_text()), proc


def assert_every_read_traced(trace, rows):
    starts = Counter(a.selection.start[0] for a in trace.accesses if a.op == "read")
    assert starts == Counter(rows)
    assert all(a.selection.block == (1, 4) and a.selection.count == (1, 1) for a in trace.accesses)


def assert_process_tree(trace, min_workers):
    procs = trace.header.processes
    me = procs[0]
    assert me.pid == trace.header.pid and me.ppid == trace.header.ppid
    pids = {p.pid for p in procs}
    assert len(pids) == len(procs)
    # every process descends from the run's process
    parent = {p.pid: p.ppid for p in procs}
    for p in procs[1:]:
        seen, q = set(), p.pid
        while q != me.pid:
            assert q in parent and q not in seen, f"{p} not under {me.pid}"
            seen.add(q)
            q = parent[q]
    readers = [p for p in procs[1:] if p.accesses]
    assert len(readers) >= min_workers
    assert sum(p.accesses for p in procs) == len(trace.accesses)
    # each access names its process (its index in ``processes``), whatever the trace's format
    assert Counter(a.process for a in trace.accesses) == {i: p.accesses for i, p in enumerate(procs) if p.accesses}
    assert not trace.missed
    assert "child processes" in trace.header.capture


@pytest.mark.parametrize("kind", ["fork", "spawn", "forkserver", "executor"])
def test_pool_workers_reads_all_traced(tmp_path, data, kind):
    trace, rows, _ = run_program(tmp_path, data, kind)
    assert_every_read_traced(trace, rows)
    assert_process_tree(trace, 1)
    assert not list(tmp_path.glob("*.parts-*")), "parts left behind"


@pytest.mark.parametrize("kind", ["fork", "spawn"])
def test_pool_workers_reads_all_traced_json_lines(tmp_path, data, kind):
    trace, rows, _ = run_program(tmp_path, data, kind, trace_name="t.jsonl")
    assert_every_read_traced(trace, rows)
    assert_process_tree(trace, 1)
    assert not list(tmp_path.glob("*.parts-*")), "parts left behind"


def _read_rows(data, rows):
    with h5py.File(data, "r") as f:
        for i in rows:
            f["x"][i]
        f["x"][i:i + 2, 1:3]  # a second selection shape


def _forked_reads(path, data, rows=((1, 2), (3,), (4, 5, 6))):
    """A traced block whose forked workers read ``rows`` (one tuple per worker); the parent reads row 0."""
    import multiprocessing as mp

    with h5py.File(data, "r") as f, advisor.trace(path) as t:
        f["x"][0]
        workers = [mp.get_context("fork").Process(target=_read_rows, args=(data, mine)) for mine in rows]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return t


def test_columnar_merge_moves_batches_and_loads_as_the_full_merge(tmp_path, data, monkeypatch):
    """The parts' Parquet batches are moved into the trace, not rewritten, their raw batches (``write_raw``)
    converted into one, and the trace loads as the merge that reads and rewrites every access
    (``merge_traces``) gives."""
    import shutil

    from instrumentation import columnar, parts, partsdir, rawparts
    from instrumentation.tracefile import merge_traces

    copies, moved = {}, []
    real_merge, real_adopt = parts.merge_parts, rawparts.adopt_batches

    def merge_parts(path, parts_dir, since_ns):  # keep the inputs of the merge for the reference
        parts.wait_for_parts(parts_dir, since_ns)
        copies["own"] = shutil.copytree(path, tmp_path / "own.parquet")
        copies["parts"] = [shutil.copytree(p, tmp_path / "parts" / p.name) for p in partsdir.part_paths(parts_dir)]
        return real_merge(path, parts_dir, since_ns)

    def adopt_batches(path, batches, procs=None, closes=None):
        moved.extend((b, b.stat().st_ino) for b in batches)
        real_adopt(path, batches, procs, closes)

    monkeypatch.setattr(parts, "merge_parts", merge_parts)
    monkeypatch.setattr(rawparts, "adopt_batches", adopt_batches)
    t = _forked_reads(tmp_path / "t.parquet", data)
    trace = t.load()
    assert len(copies["parts"]) == 3 and moved
    raw = [b for b, _ in moved if b.suffix == ".npy"]
    assert len(raw) == 3  # the forked children wrote no Parquet
    inodes = {f.stat().st_ino for f in columnar.part_files(t.path)}
    assert {ino for b, ino in moved if b.suffix != ".npy"} <= inodes  # the same files, renamed
    # the trace's own batch, the raw ones in one per process (a batch holds one process's accesses)
    assert len(inodes) == len(moved) - len(raw) + 1 + 3

    def part(path):  # a part with its raw batches as Parquet (their runs folded, as the writer folds: not across
        opens = []  # a close of its process, opens.cut_at), as a reader takes it
        columnar.read_meta(path, True, opens)
        closes = sorted(o.t_start for o in opens if o.event == "close")
        for n, f in enumerate(columnar.batch_files(path)):
            if f.suffix == ".npy":
                columnar.write_table(columnar.to_table(compact_runs(cut_at(columnar.read_raw(f), closes))),
                                     f.with_name(f"part-{n:06d}.parquet"))
                f.unlink()
        return load_trace(path)

    reference = merge_traces([load_trace(copies["own"]), *(part(p) for p in copies["parts"])])
    assert trace.datasets == reference.datasets and trace.resizes == reference.resizes
    assert trace.header.processes[0].pid == os.getpid() and len(trace.header.processes) == 4
    assert not trace.missed and trace.complete

    def rows(tr):
        cols = tr.columns.expanded()
        return sorted(zip(cols.t0.tolist(), cols.ds.tolist(), cols.rank.tolist(), cols.write.tolist(),
                          map(tuple, cols.start.tolist()), map(tuple, cols.count.tolist()),
                          map(tuple, cols.block.tolist()), cols.nbytes.tolist()))
    assert rows(trace) == rows(reference)
    assert sorted(a.selection.start[0] for a in trace.accesses if a.selection.count == (1, 1)
                  and a.selection.block == (1, 4)) == [0, 1, 2, 3, 4, 5, 6]
    # the rows each process read, told apart by the access's process (0: the run's own)
    by_process = {}
    for a in trace.accesses:
        if a.selection.block == (1, 4):
            by_process.setdefault(a.process, set()).add(a.selection.start[0])
    assert by_process[0] == {0} and sorted(map(sorted, by_process.values())) == [[0], [1, 2], [3], [4, 5, 6]]
    assert trace.columns.proc.max() == 3
    assert len(trace.datasets) == 1  # one id for the dataset every process read


def test_sigkill_mid_merge_leaves_a_readable_trace_that_says_so(tmp_path, data):
    """A process killed while it moves its children's batches in leaves a trace that loads and says the
    merge was interrupted (never "complete")."""
    import signal

    from instrumentation.follow import MERGING

    code = ("import os, signal, sys, h5py, advisor\n"
            "from instrumentation import rawparts\n"
            "real = rawparts.adopt_batches\n"
            "def adopt(path, batches, procs=None, closes=None):\n"
            "    real(path, batches[:1], procs[:1], closes)\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "rawparts.adopt_batches = adopt\n"
            f"f = h5py.File({str(data)!r}, 'r')\n"
            "with advisor.trace(sys.argv[1]):\n"
            "    f['x'][0]\n"
            "    pids = []\n"
            "    for i in (1, 2):\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            f['x'][i]\n"
            "            os._exit(0)\n"
            "        pids.append(pid)\n"
            "    for pid in pids:\n"
            "        os.waitpid(pid, 0)\n")
    env = child_env()
    path = tmp_path / "t.parquet"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    trace = load_trace(path)
    assert MERGING in trace.missed
    assert 1 <= len(trace.accesses) <= 3 and 0 in [a.selection.start[0] for a in trace.accesses]
    assert "complete)" not in format_trace(trace, summarize(trace)).splitlines()[0]


def test_sigterm_while_a_child_creates_its_part_still_closes_it(tmp_path):
    """A pool terminated while a worker is still starting: SIGTERM right after the worker's part file
    is created (before its handler exists) must still close the part, never leave it "lost"."""
    import signal

    from instrumentation.follow import RunInfo

    parts = tmp_path / "t.parquet.parts-0"
    parts.mkdir()
    RunInfo(0.0, 0.0, 0, 1).save(parts)
    code = ("import os, signal, sys\n"
            "from instrumentation import follow, tracer\n"
            "real = tracer.TraceWriter\n"
            "def writer(path, header):\n"
            "    w = real(path, header)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    return w\n"
            "tracer.TraceWriter = writer\n"
            "os.environ[follow.ENV] = sys.argv[1]\n"  # here, not at start-up: the .pth hook would start it first
            "follow.start_part()\n"
            "import time; time.sleep(30)\n")
    env = child_env()
    proc = subprocess.run([sys.executable, "-c", code, str(parts)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    (part,) = parts.glob("*.parquet")
    assert load_trace(part).complete


def test_forkserver_outliving_its_run_starts_workers_that_end(tmp_path, data):
    """multiprocessing's forkserver is started by the first run that needs one and serves every later run of the
    process (pytest runs a test suite's pools that way). A worker it forks for the second run must end, although
    the first run's parts directory, where the forkserver's own part lived, is gone: it deadlocked at its exit
    (its libhdf5 log directory could not be made there, and the fork hook left the tracer's lock taken)."""
    code = ("import multiprocessing as mp, sys, h5py, advisor\n"
            "def read(i):\n"
            "    with h5py.File(sys.argv[1], 'r') as f:\n"
            "        return float(f['x'][i, 0])\n"
            "if __name__ == '__main__':\n"
            "    ctx = mp.get_context('forkserver')\n"
            "    for name in ('a.parquet', 'b.parquet'):\n"
            "        with advisor.trace(sys.argv[2] + '/' + name), ctx.Pool(1) as pool:\n"
            "            print(pool.map(read, [1, 2]))\n")
    prog = tmp_path / "two_runs.py"  # a file: forkserver workers import the functions of __main__ from it
    prog.write_text(code)
    proc = subprocess.run([sys.executable, str(prog), str(data), str(tmp_path)], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["[4.0, 8.0]", "[4.0, 8.0]"]
    assert len([a for a in load_trace(tmp_path / "a.parquet").accesses if a.op == "read"]) == 2


def test_subprocess_python_traced(tmp_path, data):
    trace, rows, _ = run_program(tmp_path, data, "subprocess", rows=30)
    assert_every_read_traced(trace, rows)
    assert_process_tree(trace, 1)


@pytest.mark.slow
def test_dask_processes_scheduler(tmp_path, data):
    trace, rows, _ = run_program(tmp_path, data, "dask", rows=21)
    assert_every_read_traced(trace, rows)
    assert_process_tree(trace, 1)


@pytest.mark.slow
def test_dask_distributed_local_cluster(tmp_path, data):
    trace, rows, _ = run_program(tmp_path, data, "distributed", rows=50)
    assert_every_read_traced(trace, rows)
    assert_process_tree(trace, 1)


@pytest.mark.slow
def test_torch_dataloader_two_workers_under_ioadvisor_run(tmp_path, data):
    trace, rows, proc = run_program(tmp_path, data, "torch2", cli=True)
    assert_every_read_traced(trace, rows)
    assert_process_tree(trace, 2)
    assert f"{ROWS} accesses" in proc.stderr


def test_child_killed_is_reported_missed_not_complete(tmp_path, data, capsys):
    trace, rows, proc = run_program(tmp_path, data, "killed")
    assert_every_read_traced(trace, rows)  # flushed before it died
    (child,) = trace.header.processes[1:]
    assert child.state == "lost" and child.accesses == 5
    assert len(trace.missed) == 1 and f"process {child.pid}" in trace.missed[0]
    err = [line for line in proc.stderr.splitlines() if line.startswith("ioadvisor:")]
    assert len(err) == 1 and "missing" in err[0]
    text = format_trace(trace, summarize(trace))
    assert "complete)" not in text.splitlines()[0] and "lost" in text and trace.missed[0] in text


def test_forked_child_never_writes_its_parents_file(tmp_path, data):
    path = tmp_path / "t.jsonl"
    with h5py.File(data, "r") as f, advisor.trace(path) as t:
        x = f["x"]
        x[0]
        pid = os.fork()
        if pid == 0:  # the child leaves the with-block too: it closes its own part, not the parent's file
            x[1]
            x[2]
        else:
            x[3]
            _, status = os.waitpid(pid, 0)
    if pid == 0:
        os._exit(0)
    assert os.waitstatus_to_exitcode(status) == 0
    trace = t.load()
    by_pid = {p.pid: p for p in trace.header.processes}
    assert by_pid[os.getpid()].accesses == 2 and by_pid[pid].accesses == 2 and by_pid[pid].state == "exited"
    assert sorted(a.selection.start[0] for a in trace.accesses) == [0, 1, 2, 3]
    assert not trace.missed


def test_no_follow_leaves_environment_and_children_alone(tmp_path, data):
    before = dict(os.environ)
    with advisor.trace(tmp_path / "t.jsonl", follow=False) as t:
        assert dict(os.environ) == before
    assert t.load().header.capture == ("h5py calls", "zarr calls")
    with advisor.trace(tmp_path / "u.jsonl"):
        assert "IOADVISOR_FOLLOW" in os.environ
    assert dict(os.environ) == before


@pytest.mark.parametrize("packages", ["own", "system"])
def test_startup_hook_in_a_fresh_venv(tmp_path, packages):
    """A venv that never saw a trace gets the hook for its first trace; its children are then traced.

    "system": a ``--system-site-packages`` venv whose numpy is in the base interpreter's
    site-packages, which site processes after the venv's own .pth files.
    """
    import sysconfig

    venv = tmp_path / "venv"
    if packages == "system":
        base = Path(sys.base_prefix) / "bin" / "python3"
        if subprocess.run([base, "-c", "import numpy"], capture_output=True).returncode:
            pytest.skip("the base interpreter has no numpy of its own")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                       check=True)
        path = str(ROOT)
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        # this environment's packages stand in for the fresh venv's own installs (before site runs, as they would be)
        path = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    py = venv / "bin" / "python"
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert not (Path(site) / PTH_NAME).exists()
    code = ("import subprocess, sys, advisor\n"
            f"with advisor.trace({str(tmp_path / 't.jsonl')!r}) as t:\n"
            "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
            "print(len(t.load().header.processes))\n")
    out = subprocess.run([py, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert not (Path(site) / PTH_NAME).exists()  # only while a run is: site-packages as it was
    assert out.stdout.strip() == "2" and "not traced" not in out.stderr


def test_unwritable_startup_hook_is_a_capture_level_not_a_miss(tmp_path, data, monkeypatch):
    from instrumentation import startup

    monkeypatch.setattr(startup, "_hook_state", {"result": "cannot write the start-up hook X (Read-only file system)"})
    with h5py.File(data, "r") as f, advisor.trace(tmp_path / "t.jsonl") as t:
        f["x"][0]
        pid = os.fork()
        if pid == 0:
            f["x"][1]
            os._exit(0)  # a bare fork child leaving without cleanup: its part is not closed
        os.waitpid(pid, 0)
    trace = t.load()
    assert trace.header.capture[-1].startswith("forked child processes (new interpreters not followed: ")
    assert sorted(a.selection.start[0] for a in trace.accesses) in ([0], [0, 1])
    (child,) = [p for p in trace.header.processes if p.pid == pid]
    assert child.state == "lost" and len(trace.missed) == 1  # the only miss is the child's unclosed part


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_program_output_and_exit_status_unchanged_with_workers(tmp_path, data, method):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import multiprocessing as mp, sys, h5py\n"
        "def row(i):\n"
        f"    with h5py.File({str(data)!r}, 'r') as f:\n"
        "        return float(f['x'][i][0])\n"
        "if __name__ == '__main__':\n"
        f"    with mp.get_context({method!r}).Pool(2) as pool:\n"
        "        print(sum(pool.map(row, range(20))))\n"
        "    print('bye', file=sys.stderr)\n"
        "    sys.exit(3)\n")
    env = child_env()
    plain = subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=120)
    traced = subprocess.run([sys.executable, "-m", "advisor", "run", "-o", str(tmp_path / "t.jsonl"), "--",
                             "python", str(prog)], env=env, capture_output=True, text=True, timeout=120)
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout) == (3, "760.0\n")
    err = traced.stderr.splitlines()
    assert err[0] == "bye" and err[1].startswith("ioadvisor: trace ") and len(err) == 2
    assert len(load_trace(tmp_path / "t.jsonl").accesses) == 20


def test_the_resource_tracker_is_not_followed(tmp_path):
    """multiprocessing's resource tracker (spawn, forkserver) ends only once the program's exit closes its pipe, so
    its part could land between the run's merge and the parts directory's removal: CI saw the directory left behind
    and the trace saying its children's parts were left unmerged. A helper that never touches an array is not
    followed; any other new interpreter of the run is."""
    from instrumentation.follow import ENV, RunInfo, ensure_startup_hook

    assert ensure_startup_hook() is None
    parts = tmp_path / "t.parquet.parts-0"
    parts.mkdir()
    RunInfo(0.0, 0.0, 0, 1).save(parts)
    env = child_env(**{ENV: str(parts)})
    active = "from instrumentation.tracer import HUB; print(len(HUB.active))"
    for code, traced in ((f"from multiprocessing.resource_tracker import main\n{active}", "0"), (active, "1")):
        proc = subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True, text=True,
                              timeout=60)
        assert (proc.returncode, proc.stdout.strip()) == (0, traced), proc.stderr


def test_sigterm_mid_flush_still_ends_the_child(tmp_path, data):
    """SIGTERM (``Pool.terminate``) lands while a followed child's main thread is flushing a tracer.

    The close must not wait on the drain lock the interrupted flush holds: the child ends
    by SIGTERM within the bounded close, or a pool waiting for it hangs for ever.
    """
    import signal
    import time

    code = ("import sys, h5py, advisor\n"
            f"x = h5py.File({str(data)!r}, 'r')['x']\n"
            "with advisor.trace(sys.argv[1]) as t:\n"
            "    x[0]; t.flush(); print('ready', flush=True)\n"
            "    while True:\n"  # most of each turn is spent inside flush, holding its lock
            "        for i in range(20):\n"
            "            x[i]\n"
            "        t.flush()\n")
    with advisor.trace(tmp_path / "t.jsonl") as t:
        env = child_env(IOADVISOR_SIGTERM_WAIT="2")  # os.environ now says "follow me"
        children = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / f"own{k}.jsonl")], env=env,
                                     stdout=subprocess.PIPE, text=True) for k in range(6)]
        for child in children:
            assert child.stdout.readline() == "ready\n"
        for k, child in enumerate(children):
            time.sleep(0.05 * k)
            child.send_signal(signal.SIGTERM)
        hung = []
        for child in children:
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                hung.append(child.pid)
                child.kill()
                child.wait()
            child.stdout.close()
    assert not hung, f"children {hung} outlived SIGTERM"
    assert all(child.returncode == -signal.SIGTERM for child in children)
    assert {p.pid for p in t.load().header.processes[1:]} == {child.pid for child in children}


def test_sigterm_while_a_hook_is_installed_closes_the_part(tmp_path):
    """SIGTERM lands while the child's main thread holds the tracer's lock, as it does while a library
    imported now is hooked (the spawn pool worker still importing h5py when ``Pool.terminate`` comes).
    That thread never resumes: the close must not wait for the lock, and the part is closed, not lost."""
    import signal
    import time

    code = ("import time\n"
            "from instrumentation.tracer import HUB\n"
            "with HUB.lock:\n"
            "    print('ready', flush=True)\n"
            "    time.sleep(60)\n")
    with advisor.trace(tmp_path / "t.parquet") as t:
        env = child_env(IOADVISOR_SIGTERM_WAIT="30")  # os.environ now says "follow me"
        child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "ready\n"
        sent = time.monotonic()
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(60)
        finally:
            child.kill()
            child.stdout.close()
        took = time.monotonic() - sent
    assert child.returncode == -signal.SIGTERM
    assert took < 10, f"the close waited {took:.1f} s for the lock the interrupted thread holds"
    (part,) = t.load().header.processes[1:]
    assert part.state == "exited" and not t.load().missed


def test_sigterm_taken_by_another_thread_still_ends_the_child(tmp_path):
    """A SIGTERM whose handler the main thread never gets to run (it is blocked in a lock wait
    and the signal was taken elsewhere: the way a pool worker parked on the queue lock missed it
    under load) ends a followed child as it ends an untraced one."""
    import signal

    code = ("import signal, sys, threading, time\n"
            "held = threading.Lock(); held.acquire()\n"
            "other = threading.Thread(target=time.sleep, args=(60,), daemon=True); other.start()\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), signal.pthread_kill(other.ident, signal.SIGTERM)),"
            " daemon=True).start()\n"
            "held.acquire()\n")  # the main thread waits for ever; only SIGTERM ends the program
    env = child_env()
    plain = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
    with advisor.trace(tmp_path / "t.jsonl") as t:
        env["IOADVISOR_FOLLOW"] = os.environ["IOADVISOR_FOLLOW"]
        try:
            traced = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the traced child outlived its SIGTERM")
    assert plain.returncode == traced.returncode == -signal.SIGTERM
    (child,) = t.load().header.processes[1:]
    assert child.state == "exited"


def test_sigterm_taken_by_another_thread_still_ends_a_forkserver_child(tmp_path):
    """As above, in a forkserver child: it starts with the server's wakeup fd, which the server
    removes before the child runs; the SIGTERM watcher must still be in place."""
    import signal

    prog = tmp_path / "prog.py"
    prog.write_text(
        "import multiprocessing as mp, signal, sys, threading, time, advisor\n"
        "def body():\n"
        "    held = threading.Lock(); held.acquire()\n"
        "    other = threading.Thread(target=time.sleep, args=(60,), daemon=True); other.start()\n"
        "    threading.Thread(target=lambda: (time.sleep(0.3), signal.pthread_kill(other.ident, signal.SIGTERM)),"
        " daemon=True).start()\n"
        "    held.acquire()\n"  # only SIGTERM ends it
        "if __name__ == '__main__':\n"
        "    with advisor.trace(sys.argv[1]) as t:\n"
        "        p = mp.get_context('forkserver').Process(target=body)\n"
        "        p.start(); p.join(30)\n"
        "        print(p.exitcode, p.pid, flush=True)\n"
        "        if p.exitcode is None:\n"
        "            p.kill(); p.join()\n")
    env = child_env()
    out = subprocess.run([sys.executable, str(prog), str(tmp_path / "t.parquet")], env=env, capture_output=True,
                         text=True, timeout=120)
    code, pid = out.stdout.split()
    assert code == str(-signal.SIGTERM), "the traced forkserver child outlived its SIGTERM"
    (child,) = [p for p in load_trace(tmp_path / "t.parquet").header.processes if p.pid == int(pid)]
    assert child.state == "exited"


def test_a_child_that_touches_no_array_imports_no_tracer_and_still_has_its_part(tmp_path):
    """A followed process that never imports numpy or an array library pays none of the tracer's imports (its part
    is idle: instrumentation/idlepart.py), and its part is in the trace, closed, as any process's."""
    code = "import sys; print(sorted(m for m in ('numpy', 'instrumentation.tracer', 'pyarrow') if m in sys.modules))"
    with advisor.trace(tmp_path / "t.parquet") as t:
        child = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True,
                               timeout=60)
    assert (child.returncode, child.stdout, child.stderr) == (0, "[]\n", "")
    procs = t.load().header.processes
    assert len(procs) == 2 and procs[1].ppid == os.getpid() and procs[1].state == "exited"
    assert procs[1].argv[-1] == code and not t.load().missed


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_child_that_imports_h5py_late_is_traced_from_then_on(tmp_path, data, suffix):
    """The idle part gives way to the tracer's when the process imports h5py (numpy inside it first): every access
    after that is in the child's part, on the same path."""
    code = ("import sys, time\n"
            "time.sleep(0.3)\n"  # idle for a while: touched, not taken for lost
            "import h5py\n"
            f"with h5py.File({str(data)!r}, 'r') as f:\n"
            "    print(sum(float(f['x'][i, 0]) for i in range(5)))\n")
    with advisor.trace(tmp_path / f"t{suffix}") as t:
        child = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True,
                               timeout=60)
    assert (child.returncode, child.stdout, child.stderr) == (0, "40.0\n", "")
    trace = t.load()
    (part,) = trace.header.processes[1:]
    assert part.state == "exited" and part.accesses == 5 == len(trace.accesses) and not trace.missed


def test_a_forked_child_of_an_idle_process_has_its_own_part(tmp_path, data):
    """An idle process's fork children (multiprocessing's fork: they end with os._exit) start idle parts of their
    own, closed at the end of their ``Process._bootstrap``; one that reads is traced."""
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import multiprocessing as mp, sys\n"
        "def idle():\n"
        "    pass\n"
        "def reads():\n"
        "    import h5py\n"
        f"    with h5py.File({str(data)!r}, 'r') as f:\n"
        "        f['x'][0:2]\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('fork')\n"
        "    for target in (idle, reads):\n"
        "        p = ctx.Process(target=target); p.start(); p.join()\n"
        "        print(p.pid, p.exitcode)\n")
    with advisor.trace(tmp_path / "t.parquet") as t:
        out = subprocess.run([sys.executable, str(prog)], env=child_env(), capture_output=True, text=True,
                             timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    (idle_pid, code1), (reads_pid, code2) = (line.split() for line in out.stdout.splitlines())
    assert code1 == code2 == "0"
    trace = t.load()
    by_pid = {p.pid: p for p in trace.header.processes}
    assert by_pid[int(idle_pid)].state == by_pid[int(reads_pid)].state == "exited"
    assert by_pid[int(idle_pid)].accesses == 0 and by_pid[int(reads_pid)].accesses == 1
    assert len(trace.header.processes) == 4 and not trace.missed


def test_idle_parts_wake_on_every_hooked_library_and_write_the_schema():
    from instrumentation import idlepart
    from instrumentation.hub import HOOKS
    from instrumentation.records import SCHEMA_VERSION
    from instrumentation.tracedir import META

    assert set(HOOKS) - {"multiprocessing.process"} <= set(idlepart.WAKE)
    assert (idlepart.SCHEMA, idlepart.META) == (SCHEMA_VERSION, META)


def test_a_part_whose_close_fails_says_so(capfd):
    """SIGTERM's and the exit's close of parts (instrumentation/sigterm.py) never swallows a failure: the part gets
    the note where it can take it, and stderr says it."""
    from instrumentation import sigterm

    notes = []

    class Failing:
        def __exit__(self, *exc):
            raise OSError(28, "No space left on device")

        def note_failed_close(self, why):
            notes.append(why)

    pending = [Failing()]
    sigterm.close_with(lambda: tuple(pending))
    try:
        sigterm.close_all()
    finally:
        pending.clear()
    assert notes == ["closing its part at the end of the process failed: OSError: [Errno 28] No space left on device"]
    assert f"ioadvisor: process {os.getpid()}: {notes[0]}" in capfd.readouterr().err


def test_closing_a_part_imports_nothing(tmp_path, data):
    """SIGTERM's close of a part runs in a thread of its own while the thread it interrupted may hold an import
    lock (a pool worker still importing when ``Pool.terminate`` comes): an import in the close would wait for it
    until SIGTERM_WAIT ends the process, its part lost ("ended without closing its part")."""
    code = ("import sys, h5py\n"
            f"x = h5py.File({str(data)!r})['x']; [x[i] for i in range(3)]\n"
            "from instrumentation import sigterm\n"
            "before = set(sys.modules)\n"
            "sigterm.close_all()\n"  # the close SIGTERM's thread runs, records still queued
            "print(sorted(set(sys.modules) - before))\n")
    with advisor.trace(tmp_path / "t.parquet") as t:
        child = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True,
                               timeout=60)
    assert (child.returncode, child.stdout, child.stderr) == (0, "[]\n", "")
    (part,) = t.load().header.processes[1:]
    assert part.state == "exited" and part.accesses == 3
