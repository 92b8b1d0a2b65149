"""Every CLI's error ends in one line: an expected error's own message, anything else with the
culprit and its type; interrupts are not swallowed; a pydantic error is the field it names and why."""

import sys

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from common.errors import OneLineErrors, last_line, validation_error_where


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


class _Inner(BaseModel):
    size: int

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive")
        return v


class _Outer(BaseModel):
    levels: list[_Inner]


def _error(data) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        _Outer.model_validate_json(data) if isinstance(data, str) else _Outer.model_validate(data)
    return info.value


def test_names_the_nested_field():
    assert validation_error_where(_error({"levels": [{"size": 1}, {"size": "x"}]}))[0] == "levels.1.size"


def test_a_validators_own_text_loses_pydantics_prefix():
    assert validation_error_where(_error({"levels": [{"size": -1}]})) == ("levels.0.size", "must be positive")


def test_json_syntax_is_at_the_top_level():
    where, why = validation_error_where(_error("{not json"))
    assert where == "(top level)" and "JSON" in why


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
