"""Every CLI's error ends in one line: an expected error's own message, anything else with the
culprit and its type; interrupts are not swallowed."""

import sys

import pytest

from common.errors import OneLineErrors, last_line


class ToolError(RuntimeError):
    pass


def _cli(raise_: BaseException | None) -> int:
    with OneLineErrors("tool", "model.mlirbc", (ToolError,)) as cli:
        if raise_ is not None:
            raise raise_
    return 1 if cli.failed else 0


def test_an_expected_error_prints_its_own_message(capsys):
    assert _cli(ToolError("model.mlirbc: no such file")) == 1
    assert capsys.readouterr().err == "tool: model.mlirbc: no such file\n"


def test_anything_else_is_one_line_naming_the_culprit_and_the_type(capsys):
    assert _cli(ValueError("bad value\n  at line 3\ntraceback...")) == 1
    assert capsys.readouterr().err == "tool: model.mlirbc: ValueError: bad value\n"


def test_a_crashed_tool_is_named_by_its_last_line():
    assert last_line("vector version is not specified\n  Assertion failed.  \n\n") == "Assertion failed."
    assert last_line("") == "(no message)"


def test_success_prints_nothing(capsys):
    assert _cli(None) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(3)])
def test_interrupts_and_exits_pass_through(interrupt, capsys):
    with pytest.raises(type(interrupt)):
        _cli(interrupt)
    assert capsys.readouterr().err == ""


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
