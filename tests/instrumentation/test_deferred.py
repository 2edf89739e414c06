"""``instrumentation.deferred.defer``: a library's module-level import of a deferred module does not load it; its
first use does, whole (attributes and submodules). What the log reader server does with pydarshan and pandas."""
import subprocess
import sys
import textwrap

import pytest

from instrumentation.deferred import defer


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pydarshan_reads_numpy_records_without_loading_pandas_which_loads_on_first_use(darshan_examples):
    log = darshan_examples / "ior_hdf5_example.darshan"
    out = _run(f"""
        import sys
        from instrumentation.deferred import defer
        assert defer("pandas")
        import darshan
        r = darshan.DarshanReport({str(log)!r}, read_all=False)
        r.mod_read_all_records("POSIX", dtype="numpy")
        r.mod_read_all_dxt_records("DXT_POSIX", dtype="numpy")
        before = "pandas.core.frame" in sys.modules
        df = r.records["POSIX"].to_df()["counters"]  # pydarshan's pandas path: the real pandas, loaded now
        import pandas as pd
        import pandas.io.parquet
        print(before, type(df).__name__, isinstance(df, pd.DataFrame), len(df) > 0, "pandas.core.frame" in sys.modules)
    """)
    assert out == "False DataFrame True True True"


def test_nothing_is_deferred_that_is_imported_already_or_missing():
    assert not defer("pytest")  # imported here
    assert not defer("no_such_module_here")
    assert "no_such_module_here" not in sys.modules
    assert pytest is sys.modules["pytest"]
