"""The conversion of a trace directory's pending batch (instrumentation/pendingbatch.py) by the trace's first
reader: ``load_trace`` and the trace merge call ``settle`` before reading a directory that holds one.

The conversion is the launcher's own exit (instrumentation/launch.py, ``NativeRun._finish``): a
``ConvertedSink`` with the run's header and clock origin, fed by ``LibraryCapture.poll(final=True)`` over the
sealed logs, closed with what is known to be missing and the libhdf5 copies hooked. So the trace is record for
record the one an eager exit writes (tests/instrumentation/test_pending.py).

Readers agree through an exclusive ``flock`` on the batch's directory: the first converts, the others wait and
find the trace converted. The conversion is written into a new directory inside the trace (``CONVERTING``),
then its batches are moved in and its records file replaces the trace's (the step that ends the conversion),
and the batch is removed last: a reader killed at any point leaves the batch, which the next reader converts
again, from the start. Where the trace directory cannot be written (read-only, another user's), the reader
converts into a temporary directory of its own, reads that, and leaves the trace as it is.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import tempfile
from pathlib import Path

from .pendingbatch import CONVERTING, PENDING, RUN_CONFIG, remove_tree, waiting
from .tracedir import META, PART, PARTS, RAW

READ_ONLY = (errno.EACCES, errno.EPERM, errno.EROFS)
"""Why a trace directory cannot take the conversion in place: it is then converted for this reader only."""


def settle(path: str | os.PathLike) -> str | None:
    """Finish the conversion of the pending batch of the trace directory ``path``, if it holds one: in place
    (None), or, where ``path`` cannot be written, into a new temporary directory, returned: the caller reads
    the trace there and removes its parent (``os.path.dirname``)."""
    pending = os.path.join(path, PENDING)
    try:
        fd = os.open(pending, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a reader converting: wait for it, then find nothing to do
        if not waiting(path):
            return None
        try:
            if not os.access(path, os.W_OK):
                raise PermissionError(errno.EACCES, "not writable", str(path))
            for entry in os.scandir(path):  # a killed reader's conversion
                if entry.name.startswith(CONVERTING):
                    remove_tree(entry.path)
            work = os.path.join(path, f"{CONVERTING}{os.getpid()}-{os.urandom(4).hex()}")
            os.mkdir(work)
        except OSError as exc:
            if exc.errno not in READ_ONLY:
                raise
            work = tempfile.mkdtemp(prefix="ioadvisor-pending-")
            try:
                convert(path, work)
            except BaseException:
                remove_tree(work)
                raise
            return os.path.join(work, "trace")
        convert(path, work)
        _commit(Path(path), Path(work))
        return None
    finally:
        os.close(fd)


def convert(path: str | os.PathLike, work: str | os.PathLike) -> None:
    """The trace directory ``path``'s pending batch converted into ``<work>/trace`` (a whole trace), its
    dataset registry in ``<work>/parts``."""
    from . import columnar
    from .convertsink import ConvertedSink
    from .header import TraceHeader
    from .interpose import LibraryCapture
    from .runinfo import RunInfo

    pending = Path(path) / PENDING
    with open(pending / RUN_CONFIG, encoding="utf-8") as fh:
        config = json.load(fh)
    with open(Path(path) / META, "rb") as fh:
        first = json.loads(fh.readline())
    first.pop("t", None)
    header = TraceHeader.from_config(first)
    parts = Path(work) / "parts"
    parts.mkdir()
    columnar.load_arrow()
    sink = ConvertedSink(Path(work) / "trace", str(parts), RunInfo.from_config(config["run"]), header)
    capture = LibraryCapture(pending, None, pid=header.pid)  # as the launcher read them: header.pid is its own
    missed = list(config.get("missed") or ())
    try:
        capture.poll([sink], final=True)
        sink.drain()
    except Exception as exc:  # noqa: BLE001 - a torn log must not cost the trace (as the launcher's exit)
        missed.append(f"the program's libhdf5 records could not all be converted: {type(exc).__name__}: {exc}")
    missed += [m for m in capture.lost() if m not in missed]
    sink.close(tuple(missed), capture.libraries(), gather=True)


def _commit(path: Path, work: Path) -> None:
    """The conversion in ``work`` becomes the trace at ``path``: batches moved in, the records file replaced
    (from then on the trace is whole), the pending batch and ``work`` removed."""
    out = work / "trace"
    for f in path.iterdir():  # batches of an earlier reader killed before its records file replaced the trace's
        if PART.match(f.name) or PARTS.match(f.name) or RAW.match(f.name) or f.name.endswith(".tmp"):
            f.unlink()
    for f in out.iterdir():
        if f.name != META:
            os.rename(f, path / f.name)
    os.replace(out / META, path / META)
    remove_tree(path / PENDING)
    remove_tree(work)


def settled_copy_done(where: str) -> None:
    """Remove a temporary conversion ``settle`` returned (its files may stay mapped by what was read)."""
    remove_tree(os.path.dirname(where))


__all__ = ["READ_ONLY", "convert", "settle", "settled_copy_done"]
