"""Progress bars: shown on a terminal from the first second, quiet otherwise."""
import os
import re
import subprocess
import sys

import numba
import pytest

from advisor import progress
from benchmarks.helpers.terminal import on_terminal

from test_cli_trace import write_trace_file

IOADVISOR = os.path.join(os.path.dirname(sys.executable), "ioadvisor")


def run_on_terminal(args, timeout=300.0) -> tuple[float | None, str, int]:
    """Run ``ioadvisor ARGS`` on a pseudo-terminal: (seconds to its first output, the text shown, exit code)."""
    env = {k: v for k, v in os.environ.items() if k != "IOADVISOR_QUIET"}
    run = on_terminal([IOADVISOR, *args], {**env, "COLUMNS": "120"}, timeout=timeout)
    return run.first_output, run.text, run.returncode


def test_advise_on_a_terminal_shows_a_bar_with_eta_from_the_first_second(tmp_path):
    trace = write_trace_file(tmp_path / "t.jsonl", n_rows=4000)  # a search long enough to be drawn mid-way
    first, text, rc = run_on_terminal(["advise", str(trace), "--no-data", "--dataset", "/features"])
    assert rc == 0, text[-2000:]
    assert first is not None and first < 1.0 + 1.0  # (the interpreter's start-up, then the bar; +1 s: shared cores)
    spinner = tuple("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
    frames = re.split(r"[\r\n]", text)
    bars = [line for line in frames if line.lstrip().startswith(spinner)]
    assert bars and all("advise" in b for b in bars[:1])
    # the search's bar counts layouts with an ETA; a fast search may be drawn only once more, done (no spinner)
    assert any(re.search(r"layouts for /features .* \d+/\d+ .*ETA( \d+:\d\d:\d\d)?\s*$", b)
               for b in frames if "━" in b)
    assert "Verdict" in text or "verdict" in text


def test_quiet_or_not_a_terminal_shows_no_bar(tmp_path):
    trace = write_trace_file(tmp_path / "t.jsonl")
    _, text, rc = run_on_terminal(["trace", "show", str(trace), "--quiet"])
    assert rc == 0 and "━" not in text and "trace show" not in text.split("\n")[0]
    piped = subprocess.run([IOADVISOR, "trace", "show", str(trace)], capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == "" and "━" not in piped.stdout
    assert not progress.configure(False)  # pytest's captured streams are no terminal


def test_tasks_nest_on_one_display_and_do_nothing_when_off(monkeypatch):
    monkeypatch.setattr(progress, "_tty", lambda stream: True)
    monkeypatch.delenv("IOADVISOR_QUIET", raising=False)
    assert progress.configure(False)
    try:
        with progress.task("outer") as outer:
            assert progress.current() is outer
            outer.add_total(3)
            with progress.task("inner", total=2) as inner:
                assert progress.current() is inner
                inner.advance()
                shown = {t.description: (t.completed, t.total) for t in progress._state["progress"].tasks}
                assert shown == {"outer": (0, 3), "inner": (1, 2)}
            outer.advance(3)
        assert progress._state["progress"] is None and progress.current() is progress.NO_TASK
        monkeypatch.setenv("IOADVISOR_QUIET", "1")
        assert not progress.configure(False)
        with progress.task("x") as t:
            assert t is progress.NO_TASK
    finally:
        progress.configure(True)


def test_first_run_compile_shows_its_reason(monkeypatch):
    """A kernel without an on-disk cache compiles under a bar named for the first run."""
    monkeypatch.setattr(progress, "_tty", lambda stream: True)
    monkeypatch.delenv("IOADVISOR_QUIET", raising=False)

    @numba.njit(cache=False)
    def kernel(x):
        return x * 2 + 1

    import iomodel

    monkeypatch.setattr(iomodel, "uncached_kernels", lambda: [kernel])
    monkeypatch.setattr(iomodel, "kernels", lambda: [kernel])  # all of them uncached: a fresh install
    seen = []
    real_task = progress.task

    def spy(description, total=None):
        seen.append((description, total))
        return real_task(description, total)

    monkeypatch.setattr(progress, "task", spy)
    progress.configure(False)
    try:
        with progress.compiling():
            assert seen == [(progress.COMPILE_REASON, 1)]  # shown from the start, before any compile
            assert kernel(20) == 41
    finally:
        progress.configure(True)
    assert seen == [(progress.COMPILE_REASON, 1)]
    # one uncached kernel of many (a path this run never takes): no bar unless it compiles
    seen.clear()
    monkeypatch.setattr(iomodel, "kernels", lambda: [kernel] * 10)
    progress.configure(False)
    try:
        with progress.compiling():
            assert kernel(1) == 3  # compiled already: no compile event
    finally:
        progress.configure(True)
    assert seen == []
    assert "first run" in progress.COMPILE_REASON and "cached" in progress.COMPILE_REASON


def test_uncached_kernels_lists_the_models_kernels_without_a_cache(tmp_path):
    # an empty numba cache directory: every kernel is uncached; inlined helpers are never listed
    code = ("import iomodel; ks = iomodel.uncached_kernels(); "
            "print(len(ks), all(k.targetoptions.get('inline') != 'always' for k in ks), "
            "sorted(k.py_func.__name__ for k in ks)[:3])")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    n, inline_free, _ = out.stdout.split(" ", 2)
    assert out.returncode == 0 and int(n) >= 10 and inline_free == "True", out.stderr[-500:]


@pytest.mark.parametrize("command", ["advise", "verify", "calibrate", "compression", "predict", "demo"])
def test_long_commands_take_quiet(command, capsys):
    from advisor.cli import build_parser

    args = build_parser(command).parse_args([command, "x"] if command not in ("calibrate", "demo") else [command])
    assert args.quiet is False
