"""Help texts (issue #31, "Help texts"): every argument says what it is, usage lines show every option, and
the words match what the tool does."""
import argparse

import pytest

from advisor.cli import COMMANDS, build_parser, main


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_argument_has_help(command):
    top = build_parser(command)
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    missing = [f"{p.prog}: {a.dest}" for p in _parsers(sub) for a in p._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert not missing


@pytest.mark.parametrize("command", ["predict", "verify", "advise"])
def test_trace_argument_names_both_formats(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "columnar directory or JSON Lines" in out


def test_run_usage_shows_force(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "[--force]" in capsys.readouterr().out.splitlines()[0]


def test_layout_keys_explained(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "w0 in [0, 1]" in out and "filtered=0|1" in out


def test_verify_checks_its_arguments_before_announcing_work(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "none.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "rebuilding" not in err and len(err.strip().splitlines()) == 1


def test_objective_is_named_as_the_user_asked():
    from advisor.search import Objective

    assert Objective("time", None, None).describe().startswith("time")
    assert Objective("size", 2.0, None).describe().startswith("size")
