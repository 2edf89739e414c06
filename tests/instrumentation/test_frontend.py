"""The ``ioadvisor`` command's native front end (instrumentation/frontend/ioadvisor.c): ``ioadvisor run`` of a
native serial program starts it before any interpreter, then the Python entry point (``ioadvisor-python``) goes
on as advisor/entry.py's ``run_native`` after its spawn; the trace is the one the Python entry point writes, and
every other command line is the Python entry point's, unchanged."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from instrumentation import nativestart, preload, startup
from instrumentation.pendingbatch import waiting
from instrumentation.tracedir import META
from instrumentation.tracefile import load_trace

from test_interpose import SERIAL, _env, compile_c

BIN = Path(sys.executable).parent
FRONT = BIN / "ioadvisor"
PYTHON_ENTRY = BIN / "ioadvisor-python"


def _native() -> bool:
    with open(FRONT, "rb") as fh:
        return fh.read(4) == b"\x7fELF"


pytestmark = pytest.mark.skipif(preload.library() is None, reason="the libhdf5 interposer was not built")
if not _native() and (shutil.which("cc") or shutil.which("gcc")):
    # where a compiler exists the install must have built it (setup.py): a Python copy is then a failure
    pytest.fail("the ioadvisor command is not the native front end although a C compiler is present",
                pytrace=False)

PARENT = textwrap.dedent(r"""
    #include <stdio.h>
    #include <stdlib.h>
    #include <unistd.h>
    /* this program's pid, its parent's, whether the start-up hook's holder file of its parent is there, then a
       command through the shell (argv[3]): a Python child */
    int main(int argc, char **argv) {
        char host[256] = "", holder[4096];
        gethostname(host, sizeof host);
        snprintf(holder, sizeof holder, "%s/%s-%d", argv[2], host, (int)getppid());
        FILE *out = fopen(argv[1], "w");
        fprintf(out, "%d\n%d\n%d\n", (int)getpid(), (int)getppid(), access(holder, F_OK) == 0);
        fclose(out);
        return argc > 3 ? (system(argv[3]) == 0 ? 0 : 1) : 0;
    }
""")
CHILD = "import h5py, sys; f = h5py.File(sys.argv[1], 'r'); f['grid'][0:2, 0:3]; f['grid'][5]"
ENTRY = textwrap.dedent("""\
    #!{python}
    import os, sys
    with open({log!r}, "w") as fh:  # what the front end did before this interpreter started
        fh.write(os.environ.get("IOADVISOR_FRONT_STARTED", "none"))
    from advisor.entry import main
    sys.exit(main())
""")


def _parent_program(tmp_path) -> Path:
    src = tmp_path / "parent.c"
    src.write_text(PARENT)
    exe = tmp_path / "parent"
    subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], check=True, timeout=120)
    return exe


def _run(command, tmp_path, *argv, env=None):
    return subprocess.run([str(command), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=env or _env())


def test_the_program_starts_before_any_interpreter_and_its_python_children_are_followed(tmp_path):
    """The front end (a copy, beside an entry point that notes what it was handed) has started the program when
    the interpreter starts; the start-up hook is held for the run (the front end's holder file: the same process
    as the launcher) and released after it; a Python child the program starts records into the trace."""
    import h5py
    import numpy as np

    with h5py.File(tmp_path / "d.h5", "w") as f:
        f["grid"] = np.arange(60.0).reshape(10, 6)
    exe = _parent_program(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(FRONT, bin_dir / "ioadvisor")
    (bin_dir / "ioadvisor-python").write_text(ENTRY.format(python=sys.executable, log=str(tmp_path / "handed")))
    (bin_dir / "ioadvisor-python").chmod(0o755)
    holders = os.path.join(startup.site_packages(), startup.HOLDERS)
    child = f"{sys.executable} -c \"{CHILD}\" {tmp_path / 'd.h5'}"
    res = _run(bin_dir / "ioadvisor", tmp_path, "run", "-o", "t.parquet", "--", str(exe), "seen.txt", holders, child)
    assert res.returncode == 0, res.stderr[-3000:]
    pid, ppid, held = (tmp_path / "seen.txt").read_text().splitlines()
    assert (tmp_path / "handed").read_text().split("\x1f")[0] == pid and held == "1"
    trace = load_trace(tmp_path / "t.parquet")
    assert trace.header.pid == int(ppid) and trace.complete
    assert trace.header.argv[0] == str(bin_dir / "ioadvisor")
    assert sorted(a.nelements for a in trace.accesses) == [6, 6]  # the Python child's two reads
    assert not os.path.exists(os.path.join(holders, f"{os.uname().nodename}-{ppid}"))  # let go


def test_the_trace_is_the_python_entry_points(tmp_path):
    """The same program through the front end and through the Python entry point: the same pending trace (its
    header but for the process and the clock, its converted records), the same output and summary line."""
    exe = compile_c(tmp_path, "known_accesses.c", SERIAL)
    runs = {}
    for command in (FRONT, PYTHON_ENTRY):  # in one place: the traces name the same file
        res = _run(command, tmp_path, "run", "--force", "-o", "t.parquet", "--", str(exe), "known.h5")
        assert res.returncode == 0, res.stderr[-3000:]
        assert waiting(tmp_path / "t.parquet")
        head = json.loads((tmp_path / "t.parquet" / META).read_text().splitlines()[0])
        assert head.pop("argv") == [str(command), "run", "--force", "-o", "t.parquet", "--", str(exe), "known.h5"]
        for varies in ("pid", "ppid", "t_origin_unix"):
            head.pop(varies)
        trace = load_trace(tmp_path / "t.parquet")
        runs[command.name] = (head, res.stdout, res.stderr, trace.datasets,
                              [(a.op, a.selection, a.nelements, a.nbytes) for a in trace.accesses],
                              trace.header.missed, trace.header.libraries, trace.header.capture)
    front, python = runs.values()
    assert front == python
    assert len(front[4]) == 12


@pytest.mark.parametrize("argv", [
    ["--version"],
    ["run", "--bogus", "--", "/bin/true"],  # the CLI's usage error, its program name
    ["run", "-o", "t.parquet", "--", "/bin/true"],  # exists, no --force: the CLI's one line
    ["run", "--force", "-o", "d", "--", "/bin/true"],  # not surely an earlier trace
    ["run", "--", "missing-program-xyz"],  # no such program
    ["run", "--", "./not-executable"],  # cannot be started: the front end gives up, the CLI reports it
    ["run", "-o", "s.parquet", "--", sys.executable, "-c", "print('python')"],  # a Python program
])
def test_every_other_command_line_is_the_python_entry_points(tmp_path, argv):
    results = []
    for command in (FRONT, PYTHON_ENTRY):
        where = tmp_path / command.name
        (where / "t.parquet").mkdir(parents=True)
        (where / "t.parquet" / META).write_text("earlier\n")
        (where / "d").mkdir()
        (where / "d" / "notes.txt").write_text("mine\n")
        (where / "not-executable").write_bytes(b"\x7fELF not really")
        res = _run(command, where, *argv)
        left = sorted(str(p.relative_to(where)) for p in where.rglob("*") if not p.name.startswith("part-"))
        results.append((res.returncode, res.stdout, res.stderr.replace(str(where), "W"), left,
                        (where / "t.parquet" / META).read_text()[:7]))
    assert results[0] == results[1]


def test_the_front_end_was_built_from_these_modules():
    """What the front end must agree on with the Python modules is compiled in (setup.py, front_config.h)."""
    binary = FRONT.read_bytes()
    assert startup.PTH_LINE.encode() in binary and os.path.basename(preload.library_file()).encode() in binary


def test_a_static_libhdf5_program_goes_to_python_and_says_so(tmp_path):
    """A program with libhdf5 in its own file: the front end leaves it to Python, whose notes stay."""
    fake = tmp_path / "static"
    shutil.copy("/bin/true", fake)
    with open(fake, "ab") as fh:
        fh.write(b"HDF5 library version: 1.10.8")
    results = [_run(command, tmp_path, "run", "--force", "-o", "t.parquet", "--", str(fake))
               for command in (FRONT, PYTHON_ENTRY)]
    assert [r.returncode for r in results] == [0, 0]
    assert results[0].stderr == results[1].stderr and "is missing something: libhdf5 calls of" in results[0].stderr
    assert [m for m in load_trace(tmp_path / "t.parquet").missed if "linked into it statically" in m]
    shown = _run(FRONT, tmp_path, "trace", "show", "t.parquet").stdout
    assert "(complete)" not in shown and "linked into it statically" in shown


def test_the_launcher_runs_below_the_program_until_it_ends(tmp_path):
    """The launcher's start (interpreter, imports) beside the program runs at LAUNCH_NICE (or its own, if lower);
    the program keeps the caller's priority."""
    res = _run(FRONT, tmp_path, "run", "-o", "t.parquet", "--", "/bin/sh", "-c",
               "sleep 0.5; cut -d' ' -f19 /proc/$PPID/stat; cut -d' ' -f19 /proc/$$/stat")
    assert res.returncode == 0, res.stderr[-3000:]
    launcher, program = map(int, res.stdout.split())
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert launcher == max(mine, nativestart.LAUNCH_NICE) and program == mine


def test_the_launchers_priority_comes_back_at_the_programs_end():
    """``NativeStart.program_ended``: the nice value the front end found, where the system allows it."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    probe = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os
        from instrumentation.nativestart import FIELD_SEPARATOR, NativeStart
        start, pid = NativeStart.resumed(FIELD_SEPARATOR.join(
            ["1", "t", "t", "p", "l", "1.5", "2.5", "0", "why", "{before}"]))
        os.setpriority(os.PRIO_PROCESS, 0, {before} + 3)
        start.program_ended()
        print(pid, start.run_config["origin"], start.hook_why, os.getpriority(os.PRIO_PROCESS, 0))
    """)], capture_output=True, text=True, timeout=120, env=_env())
    assert probe.returncode == 0, probe.stderr
    pid, origin, why, after = probe.stdout.split()
    assert (pid, origin, why) == ("1", "2.5", "why")
    if os.geteuid() == 0:  # else the system may not allow it: the launcher then stays below
        assert int(after) == before
