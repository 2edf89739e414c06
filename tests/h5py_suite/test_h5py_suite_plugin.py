"""h5py's own tests under tracing (a subset here; the whole suite: ``python tests/h5py_suite/compare.py``)."""
import compare  # pytest puts this directory (no __init__.py) on sys.path


def test_h5py_getitem_tests_same_outcomes_under_tracing(capsys):
    status = compare.main(["-k", "getitem or Getitem or TestReadDirectly or TestWriteDirectly"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "IDENTICAL" in out and "record_errors=0" in out
