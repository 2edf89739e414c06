"""Packages that are optional extras of the install (setup.cfg ``extras_require``): the core commands work
without them, and a feature that needs one says so in one line naming the extra (``pip install
'ioadvisor[hdf5-filters]'``). In the lowest package so that the models can say it too."""
from __future__ import annotations

from importlib.util import find_spec

from instrumentation.errors import IoadvisorError

EXTRAS = {"matplotlib": "plots", "hdf5plugin": "hdf5-filters", "mpi4py": "mpi"}
"""The import name of each optional package and the extra that installs it (setup.cfg ``extras_require``)."""


class MissingExtra(IoadvisorError, ImportError):
    """An optional package is not installed; the CLI prints it as one line (exit 2)."""


def installed(module: str) -> bool:
    """Can ``module`` be imported? It is not imported here (no start-up cost)."""
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a module entry set to None
        return False


def missing(module: str, feature: str) -> MissingExtra:
    """The error saying that ``feature`` needs ``module`` and which extra installs it."""
    return MissingExtra(f"{feature} needs {module}: pip install 'ioadvisor[{EXTRAS[module]}]'")


def require(module: str, feature: str) -> None:
    """Raise ``MissingExtra`` when ``module`` cannot be imported; it is not imported here (no start-up cost)."""
    if not installed(module):
        raise missing(module, feature)
