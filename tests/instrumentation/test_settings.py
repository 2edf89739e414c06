"""instrumentation/settings.py is the one reader of IOADVISOR_* variables: no other module spells one, and each
documented variable is read by its accessor (at call time) or, where a module reads it once, at that import."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instrumentation import settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("instrumentation", "iomodel", "compression_model", "advisor")
SITECUSTOMIZE = ROOT / "advisor" / "apply" / "site" / "sitecustomize.py"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function, attribute)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    out.add(id(stmt.value))
    return out


def _names_spelled(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every non-docstring string constant (f-string parts included) naming IOADVISOR_."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "IOADVISOR_" in node.value
            and id(node) not in docs]


def test_only_settings_spells_an_ioadvisor_variable():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path in (ROOT / "instrumentation" / "settings.py", SITECUSTOMIZE):
                continue
            found += [f"{path.relative_to(ROOT)}:{line}: {text!r}" for line, text in _names_spelled(path)]
    assert not found, "read IOADVISOR_* variables through instrumentation.settings:\n" + "\n".join(found)


def test_sitecustomize_spells_only_the_substitute_variable():
    """The start-up hook runs where the project need not be importable: it spells its one name, the same."""
    assert {text for _, text in _names_spelled(SITECUSTOMIZE)} == {settings.SUBSTITUTE}


def test_every_variable_is_documented_and_has_an_accessor():
    names = {v for k, v in vars(settings).items() if k.isupper() and isinstance(v, str) and v.startswith("IOADVISOR_")}
    assert names == set(settings.VARIABLES) == set(settings.ACCESSORS)
    readme = (ROOT / "README.md").read_text()
    assert [n for n in names if f"`{n}`" not in readme] == []


# name -> (value set, what the accessor returns then, what it returns when unset)
CASES = {
    settings.CACHE: ("/x/cache", Path("/x/cache"), Path.home() / ".cache" / "ioadvisor"),
    settings.CONVERT_WAIT: ("7.5", 7.5, 120.0),
    settings.DEBUG: ("1", True, False),
    settings.FOLLOW: (os.pathsep.join(["/a", "", "/b"]), ["/a", "/b"], []),
    settings.FRONT_ARGV0: ("/venv/bin/ioadvisor", "/venv/bin/ioadvisor", None),
    settings.FRONT_STARTED: ("1\x1f2", "1\x1f2", None),
    settings.H5_DIR: ("/logs", "/logs", None),
    settings.H5_SUBSTITUTE: ("/a=/b", "/a=/b", ""),
    settings.JOBS: ("0", 1, None),
    settings.MPI_MISSING: ("3", 3.0, 60.0),
    settings.MPI_WAIT: ("4", 4.0, 600.0),
    settings.PART_WAIT: ("2", 2.0, 10.0),
    settings.PENDING_BYTES: ("1024", 1024, 16 << 20),
    settings.PROFILE: ("/p.json", Path("/p.json"), Path.home() / ".config" / "ioadvisor" / "profile.json"),
    settings.QUIET: ("1", True, False),
    settings.RESCALE: ("0", False, True),
    settings.SIGTERM_WAIT: ("0.5", 0.5, 5.0),
    settings.SUBSTITUTE: ("/a=/b", "/a=/b", ""),
    settings.TRIAGE_KEY: ("k", "k", ""),
}


@pytest.mark.parametrize("name", sorted(settings.VARIABLES))
def test_accessor_reads_its_variable_at_call_time(name, monkeypatch):
    value, when_set, when_unset = CASES[name]
    accessor = settings.ACCESSORS[name]
    monkeypatch.delenv(name, raising=False)
    assert accessor() == when_unset
    monkeypatch.setenv(name, value)
    assert accessor() == when_set


def test_empty_profile_variable_means_the_default(monkeypatch):
    monkeypatch.setenv(settings.PROFILE, "")
    assert settings.profile_path() == CASES[settings.PROFILE][2]


def test_variables_read_once_are_read_at_import():
    """The waits and the pending-records bound keep their read-once-at-import timing (a fresh interpreter)."""
    code = ("import json, instrumentation.mpi as m, instrumentation.parts as p, instrumentation.sigterm as s, "
            "instrumentation.convert as c, instrumentation.h5log as h;"
            "print(json.dumps([m.WAIT_SECONDS, m.MISSING_SECONDS, p.PART_WAIT, s.SIGTERM_WAIT, c.FINISH_WAIT, "
            "h.PENDING_BYTES]))")
    env = {**os.environ, settings.MPI_WAIT: "11", settings.MPI_MISSING: "12", settings.PART_WAIT: "13",
           settings.SIGTERM_WAIT: "14", settings.CONVERT_WAIT: "15", settings.PENDING_BYTES: "16"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [11.0, 12.0, 13.0, 14.0, 15.0, 16]
