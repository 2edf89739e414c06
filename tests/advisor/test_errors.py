"""One error base: every area's error is an ``IoadvisorError`` (and still a ``ValueError``); the CLI prints it as
one line, while anything else is a bug that keeps its traceback."""
import argparse

import pytest

from advisor import cli
from instrumentation.errors import InputError, IoadvisorError, OutputExistsError


def _areas():
    from advisor.apply.targets import ApplyError
    from advisor.verify import VerifyError
    from compression_model.error_bound import ErrorBoundError
    from compression_model.safety import FieldTooLarge
    from instrumentation.darshan_raw import DarshanError
    from instrumentation.records import RecordError
    from instrumentation.selection import SelectionError
    from instrumentation.tracefile import TraceError
    from iomodel.layout import LayoutError
    from iomodel.profile import ProfileError
    from iomodel.replay import ReplayError

    return [ApplyError, VerifyError, ErrorBoundError, FieldTooLarge, DarshanError, RecordError, SelectionError,
            TraceError, LayoutError, ProfileError, ReplayError, InputError]


@pytest.mark.parametrize("cls", _areas(), ids=lambda c: c.__name__)
def test_every_area_error_is_an_ioadvisor_error_and_a_value_error(cls):
    assert issubclass(cls, IoadvisorError) and issubclass(cls, ValueError)


def _command_raising(monkeypatch, exc):
    def build_parser(selected=None):
        p = argparse.ArgumentParser()
        p.set_defaults(func=lambda args: (_ for _ in ()).throw(exc), command="demo")
        return p

    monkeypatch.setattr(cli, "build_parser", build_parser)
    monkeypatch.delenv("IOADVISOR_DEBUG", raising=False)


def test_a_refused_overwrite_is_still_a_file_exists_error():
    assert issubclass(OutputExistsError, FileExistsError) and issubclass(OutputExistsError, IoadvisorError)


def test_an_ioadvisor_error_is_one_line(monkeypatch, capsys):
    _command_raising(monkeypatch, InputError("--top must be >= 1, got 0\nsecond line"))
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["ioadvisor demo: error: --top must be >= 1, got 0"]


@pytest.mark.parametrize("exc", [KeyError("k"), ValueError("v"), OSError("o")], ids=lambda e: type(e).__name__)
def test_anything_else_is_a_bug_with_its_traceback(monkeypatch, exc):
    _command_raising(monkeypatch, exc)
    with pytest.raises(type(exc)):
        cli.main([])


def test_asking_advice_for_an_unknown_or_ambiguous_dataset_is_bad_input():
    from advisor.results import Advice

    with pytest.raises(InputError, match="0 datasets advised"):
        Advice(()).dataset()
    with pytest.raises(InputError, match="no advice for dataset 'x'"):
        Advice(()).dataset("x")
