"""Features whose packages are optional extras of the install (``pip install 'ioadvisor[plots]'``): the core
commands work without them, and a feature that needs one says so in one line naming the extra. The checks live
in ``instrumentation.extras`` (the models use them too)."""
from __future__ import annotations

from instrumentation.extras import EXTRAS, MissingExtra, require

__all__ = ["EXTRAS", "MissingExtra", "require"]
