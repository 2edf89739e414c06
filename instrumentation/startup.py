"""The start-up hook that makes new Python interpreters of a traced run trace themselves: ``ioadvisor-follow.pth``
in site-packages (instrumentation/follow.py), run by ``site`` at every start-up of this environment's interpreter,
a no-op unless ``partsdir.ENV`` is set.

It is there only while a traced run is: each process that traces (a run's tracer, a followed process's part,
``ioadvisor run``) holds it from its start (``ensure_startup_hook``) to its end (``release_startup_hook``), as a
file named ``HOST-PID`` in ``ioadvisor-follow.runs/`` beside it; the last to let go removes both, under a lock,
so that site-packages is as it was. A holder that died without letting go (SIGKILL) holds nothing: its file is
removed by the next one to let go (a holder on another host, site-packages being shared, is taken as alive).
"""
from __future__ import annotations

import fcntl
import os
import sys

from .partsdir import ENV

# os.path, not pathlib: a native run's launcher holds the hook before its program starts, with the standard
# library's lightest modules only (instrumentation/nativestart.py)

PTH_NAME = "ioadvisor-follow.pth"
_PTH_CODE = """\
import sys
def start():
    try:
        import instrumentation.follow as follow
        follow.start_part()
    except ImportError as exc:
        return exc
failed = start()
if failed is not None:
    class Retry:  # the tracer's own imports (numpy) may be in a site directory processed later
        def find_spec(self, name, path=None, target=None):
            if name == "sitecustomize":  # site imports it once every .pth file was processed
                sys.meta_path.remove(self)
                again = start()
                if again is not None:
                    print(f"ioadvisor: process {os.getpid()} not traced: {again}", file=sys.stderr)
            return None
    sys.meta_path.insert(0, Retry())
"""
# executed by site at every start-up of this environment's interpreter; a no-op without the variable
PTH_LINE = f"import os; exec({_PTH_CODE!r}, {{'os': os}}) if os.environ.get({ENV!r}) else None\n"


HOLDERS = "ioadvisor-follow.runs"
"""The directory beside the hook naming the processes that hold it."""
_hook_state: dict[str, str | None] = {}  # "result": why the hook cannot be written (not tried again)
_held = {"pid": 0, "count": 0}  # this process's holds (nested tracers); a forked child starts with none


class _Locked:
    """The holders' directory, locked (``flock``) for the time of a change."""

    def __init__(self, holders: str):
        os.makedirs(holders, exist_ok=True)
        self._fd = os.open(holders, os.O_RDONLY)

    def __enter__(self):
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self._fd)  # releases the lock
        return False


def _host() -> str:
    return os.uname().nodename  # = socket.gethostname(), without importing socket (a traced run's start-up)


def _me() -> str:
    return f"{_host()}-{os.getpid()}"


def _alive(holder: str) -> bool:
    host, _, pid = holder.rpartition("-")
    if host != _host() or not pid.isdigit():
        return True  # another host's process (site-packages on a shared file system): not known here
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def site_packages() -> str:
    """This interpreter's site-packages (sysconfig's ``purelib``), where the hook goes. In a virtual environment
    that is its scheme's ``{prefix}/lib/pythonX.Y/site-packages``, told without sysconfig: its first
    ``get_paths()`` loads the build's configuration, about 10 ms of a native run's start. Elsewhere sysconfig
    says (a Debian system Python patches its scheme)."""
    if sys.prefix != sys.base_prefix and os.name == "posix":
        return os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    import sysconfig

    return sysconfig.get_paths()["purelib"]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def ensure_startup_hook() -> str | None:
    """Hold the .pth start-up hook in this interpreter's site-packages (written if it is not there) until
    ``release_startup_hook``.

    Returns None when the hook is in place, else why not (new interpreters are then not followed).
    """
    if _hook_state.get("result"):
        return _hook_state["result"]
    if _held["pid"] != os.getpid():
        _held.update(pid=os.getpid(), count=0)
    site = site_packages()
    target = os.path.join(site, PTH_NAME)
    try:
        with _Locked(os.path.join(site, HOLDERS)):
            os.close(os.open(os.path.join(site, HOLDERS, _me()), os.O_WRONLY | os.O_CREAT, 0o666))  # touch
            if _read(target) != PTH_LINE:
                tmp = os.path.join(site, f".{PTH_NAME}.{os.getpid()}")
                with open(tmp, "w", encoding="utf-8") as fh:
                    fh.write(PTH_LINE)
                os.replace(tmp, target)  # all-or-nothing for a process starting now
    except OSError as exc:
        _hook_state["result"] = f"cannot write the start-up hook {target} ({exc.strerror or exc})"
        return _hook_state["result"]
    _held["count"] += 1
    return None


def adopt_startup_hook() -> None:
    """This process holds the hook already: its holder file (HOST-PID) was made before an exec by the native
    front end (instrumentation/frontend/ioadvisor.c), which wrote the hook as ``ensure_startup_hook`` does."""
    if _held["pid"] != os.getpid():
        _held.update(pid=os.getpid(), count=0)
    _held["count"] += 1


def release_startup_hook() -> None:
    """Let go of the hook (``ensure_startup_hook``); the last holder removes it."""
    if _held["pid"] != os.getpid() or not _held["count"]:
        return
    _held["count"] -= 1
    if _held["count"]:
        return
    site = site_packages()
    holders = os.path.join(site, HOLDERS)
    try:
        with _Locked(holders):
            _unlink(os.path.join(holders, _me()))
            others = [h for h in os.listdir(holders) if not h.startswith(".")]
            if any(_alive(h) for h in others):
                return
            _unlink(os.path.join(site, PTH_NAME))
            for h in others:
                _unlink(os.path.join(holders, h))
            os.rmdir(holders)
    except OSError:
        pass  # left for the next holder to remove


__all__ = ["HOLDERS", "PTH_LINE", "PTH_NAME", "adopt_startup_hook", "ensure_startup_hook", "release_startup_hook",
           "site_packages"]
