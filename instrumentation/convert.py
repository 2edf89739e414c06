"""Converting a busy process's own libhdf5 records outside it: a converter process beside it.

A process's own interposer records are converted when it pauses or at its tracer's exit
(``interpose.LibraryCapture.poll``). A loop that never pauses fills PENDING_BYTES of them (about 116,000
3-D reads written whole, 420,000 alike) every 20-70 s or so; converting them inside the process, even on the tracer's flusher thread, cost
the program about 9 µs per record (1.7 µs alone: the interpreter and the cores are shared with the
program). So the first time they reach PENDING_BYTES (or MAX_SPANS h5py calls wait to be matched with
them) the process starts a converter, a Python process of its own, and from then on only sends it, at each
poll, the cutoff and the h5py calls its tracer recorded since (a libhdf5 call inside one of them is that
call: dropped). The converter reads the process's ``.acc`` file from where the process stopped, converts
as the process would (``LibraryCapture.convert``) into ``<parts dir>/<pid>.conv.parquet`` (a trace in the
part format, Parquet batches), and frees the bytes it converted (holes punched in the file: its disk use
stays about what one poll adds). At the tracer's exit the process sends its last message and waits for the
converter's end; the run's merge takes the output in as that process's accesses (``follow.merge_parts``).

The converter is not the program's child (a shell starts it and exits at once): a program's own
``os.wait()`` never reaps it, and a loop waiting for all its children does not wait for it.

One converter per tracing process, started only when needed: a run's own process, a followed child, each
MPI rank (each has its own tracer, parts directory and merge: a converter per node would have to know every
rank's directories and cutoffs, and each rank is as busy as the other). Where it cannot be used (no parts
directory: ``advisor.trace(follow=False)``; two tracers active in the process) the records are converted
in the process as before.

The converter never outlives the process: it reads its messages from a socket, and end of file before the
last message means the process is gone (killed). It then converts what the process left in its file (the
h5py calls its trace holds on disk drop their duplicates) and ends: a run's own process's trace (columnar)
receives the batches and datasets (``load_trace(..., allow_truncated=True)`` then holds every libhdf5 call
the interposer wrote); a followed process's output stays beside its part for the run's merge, which waits
for it (the converter holds ``<pid>.conv.lock`` while it works) and no longer salvages that log.
"""
from __future__ import annotations

import fcntl
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import settings
from .partsdir import CONVERTED, ENV
from .preload import LOG_DIR_VAR, library

FINISH_WAIT = settings.convert_wait()
"""Longest wait at a tracer's exit for its converter to convert the rest (at most PENDING_BYTES: seconds)."""
SEND_EVERY = 1.0
"""Seconds between messages to the converter: each one first writes the process's buffered accesses as a batch
(``written_spans``), so at the pace the trace writer keeps anyway (columnar_writer.BATCH_SECONDS)."""
_MAIN = "import sys; sys.path.insert(0, sys.argv[1]); from instrumentation.converter import main; main()"


class Converter:
    """The traced process's end of its converter (``start``, ``send`` at each poll, ``finish`` at the end)."""

    def __init__(self, pid: int, sock: socket.socket, err: Path):
        self._pid = pid  # not this process's child: killed by pid when it must end, never waited for
        self._sock = sock  # a socket, not a pipe: sent with MSG_NOSIGNAL, a dead converter raises no SIGPIPE
        self._err = err
        self._broken: str | None = None
        self._sent = time.perf_counter()  # the last message's time (the start's)

    @classmethod
    def start(cls, capture, log, tracers) -> "Converter | None":
        """A converter of ``log`` (``capture``'s own process's), from where ``capture`` stopped reading it,
        for the only active tracer; None where none can be started."""
        if len(tracers) != 1 or tracers[0].run is None or tracers[0].spans is None:
            return None
        tracer = tracers[0]
        parts = Path(tracer.parts_dir)
        held = capture.take_spans(tracer)  # popped from the tracer's queue before: written by ``written_spans`` too
        spans = held + written_spans(tracer)[0]
        env = {k: v for k, v in os.environ.items() if k not in (ENV, LOG_DIR_VAR)}
        lib = str(library())
        env["LD_PRELOAD"] = " ".join(p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p != lib)
        err = capture.log_dir / f"convert-{capture.pid}.err"
        ours, theirs = socket.socketpair()
        # its lock, taken here and held by the converter from its first instant (the descriptor is inherited): the
        # run's merge, which waits for it, never finds the log unclaimed while the converter starts up (then both
        # converted it), nor loses the converter's output
        try:
            opened = os.open(parts / f"{capture.pid}{CONVERTED}.lock", os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            ours.close()
            theirs.close()
            return None
        lock = fcntl.fcntl(opened, fcntl.F_DUPFD, 10)  # past the shell's fd 3 below
        os.close(opened)
        # started by a shell that leaves it behind and exits at once: as the program's child, a bare os.wait()
        # of the program's would reap it, and a loop waiting for all its children would wait for it. The socket
        # is its stdin and stdout (through fd 3: a background command's stdin is /dev/null before its own
        # redirections); the shell prints its pid
        detach = 'exec 3<&0; "$@" 0<&3 1>&3 3<&- & echo $!'
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            with open(err, "wb") as fh, theirs:
                shell = subprocess.run(["/bin/sh", "-c", detach, "sh", sys.executable, "-c", _MAIN,
                                        str(Path(__file__).resolve().parents[1])], stdin=theirs,
                                       stdout=subprocess.PIPE, stderr=fh, env=env, check=True, pass_fds=(lock,))
            pid = int(shell.stdout)
        except (OSError, ValueError, subprocess.CalledProcessError):
            ours.close()
            os.close(lock)
            return None
        os.close(lock)  # the converter's copy holds it now
        conv = cls(pid, ours, err)
        conv._write({"log_dir": str(capture.log_dir), "pid": capture.pid, "position": log.position(),
                     "lock_fd": lock,
                     "parts_dir": str(parts), "out": str(parts / f"{capture.pid}{CONVERTED}.parquet"),
                     "trace": None if tracer.is_part else str(tracer.own_path),
                     "header": tracer.header.get_config(), "spans": spans})
        return conv

    def _write(self, message) -> None:
        if self._broken is None:
            try:
                self._sock.sendall(pickle.dumps(message, pickle.HIGHEST_PROTOCOL), socket.MSG_NOSIGNAL)
            except OSError as exc:
                self._broken = f"{type(exc).__name__}: {exc}"

    def send(self, cutoff: float, tracer, final: bool) -> None:
        """Convert what ended before ``cutoff``, without the h5py calls ``tracer`` recorded since the last
        message (everything, when ``final``); at most every SEND_EVERY seconds but the final one."""
        now = time.perf_counter()
        if not final and now - self._sent < SEND_EVERY:
            return
        self._sent = now
        spans, later = written_spans(tracer)
        if final:  # the tracer's end: its trace is closed next, with everything recorded
            spans += [tracer.spans.popleft() for _ in range(len(tracer.spans))]
        elif later is not None:
            cutoff = min(cutoff, later)
        self._write((cutoff, spans, final))

    def finish(self) -> dict | None:
        """Wait for the converter's end: what it learnt (``hooked`` libraries, the ``position`` where it
        stopped reading), None when it failed."""
        result = None
        if self._broken is None and select.select([self._sock], [], [], FINISH_WAIT)[0]:
            with self._sock.makefile("rb") as fh:
                try:
                    result = pickle.load(fh)
                except (EOFError, pickle.UnpicklingError, OSError):
                    pass
        if result is None:
            self._kill()
        self._sock.close()
        if result is not None:
            self._err.unlink(missing_ok=True)
        return result

    def error(self) -> str:
        """Why it failed: its last line of error output."""
        try:
            lines = self._err.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else self._broken or "it ended without a word"

    def stop(self) -> None:
        """End it now (its tracer is gone without a last message)."""
        self._kill()
        self._sock.close()

    def _kill(self) -> None:
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def abandon(self) -> None:
        """In a forked child: let go of the parent's converter (its end of the socket must not keep it alive)."""
        self._sock.close()


def written_spans(tracer) -> tuple[list, float | None]:
    """The h5py calls ``tracer`` recorded, handed over once their accesses are written to its trace (or part):
    (those calls, the start of the earliest call left queued, or None).

    The converter drops a libhdf5 call inside one of them as that call's duplicate, so the call itself must
    survive the process: killed (SIGKILL: nothing more is written), the process leaves only what its trace holds
    on disk. Its buffered accesses are written first; a call recorded since (by another thread) waits for the
    next message, and so does every libhdf5 call that ended after it began (it may hold them)."""
    taken = time.perf_counter()
    tracer.drain()  # every access recorded before ``taken`` written: a batch on disk, whole (written atomically)
    queued = tracer.spans
    spans = [queued.popleft() for _ in range(len(queued))]
    later = [s for s in spans if s[2] >= taken]
    if not later:
        return spans, None
    queued.extendleft(reversed(later))
    return [s for s in spans if s[2] < taken], min(s[1] for s in later)


__all__ = ["FINISH_WAIT", "SEND_EVERY", "Converter", "written_spans"]
