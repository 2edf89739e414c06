"""Run a command on a pseudo-terminal, as a user types it: what it showed and when (progress bars are drawn
only on a terminal). Used by benchmarks/speed/ux_speed.py and tests/advisor/test_progress.py."""
from __future__ import annotations

import os
import pty
import re
import select
import time
from dataclasses import dataclass

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""Terminal control sequences (colours, cursor moves), taken out of the text shown."""


@dataclass(frozen=True)
class TerminalRun:
    seconds: float
    """Wall seconds until the command exited."""
    first_output: float | None
    """Seconds until it showed anything (None: nothing)."""
    watched: float | None
    """Seconds until the ``watch`` text was shown (None: never)."""
    text: str
    """All it showed, control sequences taken out."""
    returncode: int


def on_terminal(argv: list[str], env: dict | None = None, watch: bytes = b"",
                timeout: float | None = None) -> TerminalRun:
    """Run ``argv`` (an executable's path first) with stdout and stderr on a pseudo-terminal; ``env``: its whole
    environment (default: this process's). Reading stops after ``timeout`` seconds, then the command is waited for."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout and stderr are the terminal
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.execv(argv[0], argv)
    first, seen, out = None, None, b""
    while timeout is None or time.perf_counter() - t0 < timeout:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if not ready:
            continue
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            break
        if not data:
            break
        first = time.perf_counter() - t0 if first is None else first
        out += data
        if watch and seen is None and watch in out:
            seen = time.perf_counter() - t0
    _, status = os.waitpid(pid, 0)
    return TerminalRun(time.perf_counter() - t0, first, seen, ANSI.sub("", out.decode("utf-8", "replace")),
                       os.waitstatus_to_exitcode(status))
