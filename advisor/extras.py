"""Features whose packages are optional extras of the install (``pip install 'ioadvisor[plots]'``): the core
commands work without them, and a feature that needs one says so in one line naming the extra."""
from __future__ import annotations

from importlib.util import find_spec

from instrumentation.errors import IoadvisorError

EXTRAS = {"matplotlib": "plots"}
"""The import name of each optional package and the extra that installs it (setup.cfg ``extras_require``)."""


class MissingExtra(IoadvisorError, ImportError):
    """An optional package is not installed; the CLI prints it as one line (exit 2)."""


def require(module: str, feature: str) -> None:
    """Raise ``MissingExtra`` when ``module`` cannot be imported; it is not imported here (no start-up cost)."""
    try:
        spec = find_spec(module)
    except (ImportError, ValueError):  # a finder that refuses it, or a module entry set to None
        spec = None
    if spec is None:
        raise MissingExtra(f"{feature} needs {module}: pip install 'ioadvisor[{EXTRAS[module]}]'")
