"""The start-up hook that makes new Python interpreters of a traced run trace themselves: ``ioadvisor-follow.pth``
in site-packages (instrumentation/follow.py), run by ``site`` at every start-up of this environment's interpreter,
a no-op unless ``partsdir.ENV`` is set."""
from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from .partsdir import ENV

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


_hook_state: dict[str, str | None] = {}


def ensure_startup_hook() -> str | None:
    """Write the .pth start-up hook into this interpreter's site-packages if it is not there.

    Returns None when the hook is in place, else why not (new interpreters are then not followed).
    """
    if "result" in _hook_state:
        return _hook_state["result"]
    target = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
    result = None
    try:
        if not target.exists() or target.read_text() != PTH_LINE:
            tmp = target.with_name(f".{PTH_NAME}.{os.getpid()}")
            tmp.write_text(PTH_LINE)
            os.replace(tmp, target)  # another process may write it at the same time: all-or-nothing
    except OSError as exc:
        result = f"cannot write the start-up hook {target} ({exc.strerror or exc})"
    _hook_state["result"] = result
    return result


__all__ = ["PTH_LINE", "PTH_NAME", "ensure_startup_hook"]
