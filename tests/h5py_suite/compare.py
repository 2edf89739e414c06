"""Run h5py's own test suite with and without ``advisor.trace`` around every test; require identical outcomes.

From the repository root::

    python tests/h5py_suite/compare.py [extra pytest args...]

Exit status 0 when every test has the same outcome (passed / failed / error /
skipped) in both runs and the traced run recorded accesses with no recording
error and no unreadable trace; 1 otherwise. Prints the counts of both runs.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PLUGIN = "ioadvisor_suite_plugin"  # in HERE; tests/zarr_suite/compare.py runs zarr's suite with it too
SUMMARY = re.compile(r"^ioadvisor tracing: (.*)$", re.M)
ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed | failed | error | skipped."""
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        # parameter ids that print an object (zarr's: "<function create at 0x7f...>") differ between runs
        key = ADDRESS.sub("", f"{case.get('classname')}::{case.get('name')}")
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        # a test that fails and then errors in teardown appears once per phase: keep the worst
        kind = "error" if "error" in kinds else "failed" if "failure" in kinds else \
            "skipped" if "skipped" in kinds else "passed"
        out[key] = kind if key not in out or out[key] == "passed" else out[key]
    return out


def run_suite(traced: bool, workdir: Path, args: list[str], cwd: Path = ROOT,
              preload: str | None = None) -> tuple[dict[str, str], str]:
    """Run ``pytest args`` in ``cwd`` (its own configuration applies), with the tracing plugin when ``traced``,
    with ``preload`` as LD_PRELOAD when given."""
    junit = workdir / (("interposed.xml" if preload else "traced.xml") if traced else "plain.xml")
    cmd = [sys.executable, "-m", "pytest", *(["-p", PLUGIN] if traced else []), "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}", *args]
    path = os.pathsep.join(filter(None, [str(HERE), str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, **({"LD_PRELOAD": preload} if preload else {})}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if not junit.exists():
        sys.exit(f"pytest did not run ({'traced' if traced else 'plain'}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return outcomes(junit), proc.stdout


def main(argv: list[str]) -> int:
    """h5py's suite plain and traced; traced again with the libhdf5 interposer preloaded where it is built
    (h5py's calls are then seen at both levels and must still be recorded once, and cleanly)."""
    sys.path.insert(0, str(ROOT))
    from instrumentation import interpose  # the repository's, as the suite runs use it

    with tempfile.TemporaryDirectory(prefix="ioadvisor-h5py-compare-") as tmp:
        plain, _ = run_suite(False, Path(tmp), ["--pyargs", "h5py", *argv])
        traced, stdout = run_suite(True, Path(tmp), ["--pyargs", "h5py", *argv])
        status = report(plain, traced, stdout)
        if interpose.library() is not None:
            print("with the libhdf5 interposer preloaded:")
            preload = interpose.child_environment("", os.environ)["LD_PRELOAD"]
            interposed, stdout = run_suite(True, Path(tmp), ["--pyargs", "h5py", *argv], preload=preload)
            status |= report(plain, interposed, stdout)
    return status


def report(plain: dict[str, str], traced: dict[str, str], stdout: str) -> int:
    """Print both runs' counts and every difference; 0 when outcomes are identical and tracing was clean."""
    counts = {name: Counter(res.values()) for name, res in (("plain", plain), ("traced", traced))}
    for name, c in counts.items():
        print(f"{name:7s} " + " ".join(f"{k}={c.get(k, 0)}" for k in ("passed", "failed", "error", "skipped")))
    m = SUMMARY.search(stdout)
    stats = dict(kv.split("=") for kv in m.group(1).split()) if m else {}
    print("traced run:", m.group(1) if m else "no tracing summary (plugin not loaded?)")
    ok = True
    differ = sorted(k for k in set(plain) | set(traced) if plain.get(k) != traced.get(k))
    for k in differ:
        print(f"  outcome differs: {k}: plain={plain.get(k)} traced={traced.get(k)}")
        ok = False
    if not stats or int(stats["record_errors"]) or int(stats["bad_traces"]) or not int(stats["accesses"]):
        print("  tracing did not record cleanly")
        for line in re.findall(r"^ioadvisor tracing: trace not loaded: .*$", stdout, re.M):
            print("  " + line)
        ok = False
    # a module skipped at collection has a junit entry but runs no test
    if int(stats.get("tests", 0)) + int(stats.get("skipped_modules", 0)) != len(traced):
        print(f"  {stats.get('tests')} tests traced (+{stats.get('skipped_modules')} modules skipped), {len(traced)} ran")
        ok = False
    print("IDENTICAL" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
