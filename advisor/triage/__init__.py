"""Center-wide triage of a Darshan archive: which applications lose the most I/O time a change would recover.

    from advisor.triage import TriageOptions, triage
    result = triage(["/archive/darshan/2026"], TriageOptions(out="summary.parquet"))

Per log (``logrow``), on dask.distributed (``run``), incrementally into a month-partitioned Parquet dataset
(``store``), aggregated per application (``apps``), with an HTML page (``html``).
"""
from .apps import aggregate
from .logrow import RowOptions, summarize
from .run import TriageOptions, TriageResult, triage
from .store import LOG_SCHEMA, apps_path, discover, load

__all__ = ["LOG_SCHEMA", "RowOptions", "TriageOptions", "TriageResult", "aggregate", "apps_path", "discover",
           "load", "summarize", "triage"]
