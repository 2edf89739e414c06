"""pytest plugin: run every test of the session inside ``advisor.trace``.

Usage, with this directory on PYTHONPATH (the plugin is imported by a module name
that no project's own ``tests`` package can shadow)::

    PYTHONPATH=tests/h5py_suite python -m pytest -p ioadvisor_suite_plugin --pyargs h5py

Each test (setup, call and teardown) gets its own tracer writing a trace file
in a temporary directory; the file is loaded back (so a trace that does not
validate is counted) and deleted. The terminal summary says how many tests were
traced, how many accesses were recorded and how many recording errors or
unreadable traces there were; ``compare.py`` requires those to be zero.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

import advisor
from instrumentation.tracefile import TraceError, load_trace

_STATS = {"tests": 0, "accesses": 0, "datasets": 0, "record_errors": 0, "bad_traces": 0, "skipped_modules": 0}
_DIR: dict[str, Path] = {}
_BAD: list[str] = []
"""The tests whose trace did not load, with why (the first few are shown in the summary)."""
SUMMARY_PREFIX = "ioadvisor tracing:"


def pytest_configure(config):
    _DIR["path"] = Path(tempfile.mkdtemp(prefix="ioadvisor-suite-"))


def pytest_unconfigure(config):
    shutil.rmtree(_DIR.pop("path", ""), ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = _DIR["path"] / "test.parquet"
    tracer = advisor.trace(path, overwrite=True)  # one trace (the default, columnar), reused test after test
    with tracer:
        result = yield
    _STATS["tests"] += 1
    _STATS["record_errors"] += tracer.record_errors
    try:
        trace = load_trace(path)
        _STATS["accesses"] += trace.n_access
        _STATS["datasets"] += len(trace.datasets)
    except TraceError as exc:
        _STATS["bad_traces"] += 1
        _BAD.append(f"{item.nodeid}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    shutil.rmtree(path, ignore_errors=True)
    return result


def pytest_collectreport(report):
    if report.skipped:
        _STATS["skipped_modules"] += 1


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(SUMMARY_PREFIX + " " + " ".join(f"{k}={v}" for k, v in _STATS.items()))
    for line in _BAD[:5]:
        terminalreporter.write_line(f"ioadvisor tracing: trace not loaded: {line}")
