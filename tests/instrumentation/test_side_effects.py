"""Importing the packages changes nothing in the process or on disk; a traced run leaves site-packages as it was.

Each check runs in a fresh interpreter: the test session itself has traced before."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


IMPORTS = ["advisor", "instrumentation", "instrumentation.tracer", "instrumentation.follow",
           "instrumentation.interpose", "instrumentation.launch", "instrumentation.hooks_h5py"]


def test_importing_registers_nothing_and_writes_nothing(tmp_path):
    """No fork handler, no atexit hook, no call into the C library (the loaded-libraries walker), no file written:
    until a tracer starts, importing the tracer (``advisor.trace``) is only an import."""
    code = f"""
import atexit, ctypes, json, os, sys, sysconfig
import numpy, h5py  # theirs are theirs: imported before the counting starts
site = sysconfig.get_paths()["purelib"]
before = sorted(os.listdir(site)), sorted(os.listdir("."))
calls = []
real_fork, real_exit, real_cdll = os.register_at_fork, atexit.register, ctypes.CDLL.__init__
def ours(what):  # made by this checkout's code (the standard library's random registers a fork handler)
    caller = sys._getframe(2).f_code.co_filename
    if caller.startswith({str(ROOT)!r}):
        calls.append(f"{{what}} ({{caller}})")
def fork(**kw):
    ours("register_at_fork")
    real_fork(**kw)
def exit_hook(*a, **kw):
    ours("atexit")
    return real_exit(*a, **kw)
def cdll(self, name, *a, **kw):
    ours(f"CDLL({{name}})")
    real_cdll(self, name, *a, **kw)
os.register_at_fork, atexit.register, ctypes.CDLL.__init__ = fork, exit_hook, cdll
import importlib
for name in {IMPORTS!r}:
    importlib.import_module(name)
import advisor
advisor.trace  # the lazy export: imports the tracer
after = sorted(os.listdir(site)), sorted(os.listdir("."))
print(json.dumps({{"calls": calls, "same": before == after}}))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"calls": [], "same": True}


def test_a_traced_run_leaves_site_packages_as_it_was(tmp_path):
    """The start-up hook is in site-packages while a run is (its child process is followed), and gone after it."""
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    before = sorted(os.listdir(site))
    code = ("import os, subprocess, sys, advisor\n"
            f"site = {str(site)!r}\n"
            f"with advisor.trace({str(tmp_path / 't.jsonl')!r}) as t:\n"
            "    during = sorted(os.listdir(site))\n"
            "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
            "print(len(t.load().header.processes), 'ioadvisor-follow.pth' in during)\n")
    path = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    out = subprocess.run([py, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "True"]  # followed while the run was on
    assert sorted(os.listdir(site)) == before
