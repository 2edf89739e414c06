"""``ioadvisor apply``: rewrite the traced data into the advised layout, safely, in bounded memory, verified.

    from advisor.apply import ApplyOptions, apply
    result = apply("run.jsonl", ApplyOptions(out="out.zarr", max_memory=512 << 20))
    print(result.table())

Modules: ``targets`` (what to write: library and layouts from the advice or ``--layout``), ``plan`` (block
plans in bounded memory, one or two passes), ``structure`` (groups, arrays, attributes, dimensions),
``copy`` (one block: read, write, read back, compare), ``check`` (the comparison), ``journal`` (resume after
a kill), ``pipeline`` (the run: temporary name, journal, rename), ``result`` (the summary).
"""
from .pipeline import ApplyOptions, apply
from .result import ApplyResult, ArraySummary
from .targets import ApplyError, ArrayLayout

__all__ = ["ApplyOptions", "ApplyResult", "ArraySummary", "ApplyError", "ArrayLayout", "apply"]
