"""zarr's own tests under tracing (the indexing and async subset here; the whole suite: ``python tests/zarr_suite/compare.py``)."""
import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("ioadvisor_zarr_compare", Path(__file__).with_name("compare.py"))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


@pytest.mark.slow
def test_zarr_indexing_tests_same_outcomes_under_tracing_with_strict_warnings(capsys):
    status = compare.main(["-k", "test_indexing and (oindex or vindex or orthogonal or mask or coordinate or async)"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "IDENTICAL" in out and "record_errors=0" in out
