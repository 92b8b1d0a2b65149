"""Every CLI's error ends in one line: an expected error's own message, anything else with the
culprit and its type; SIGINT, SIGTERM and SIGHUP are one line too, with the CLI's child processes killed;
exits are not swallowed; a pydantic error is the field it names and why."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from common import processes
from common.errors import NamedError, OneLineErrors, first_line, last_line, validation_error_where


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


def test_a_header_line_is_continued_by_the_reason():
    text = "Lowering TorchFX IR failed with the following diagnostics:\n\nerror: unsupported op\nnote: x"
    assert first_line(text) == ("Lowering TorchFX IR failed with the following diagnostics: "
                                "error: unsupported op")


def test_a_named_error_prints_as_it_is(capsys):
    assert _cli(NamedError("out.json: cannot write the output: is a directory\nsecond line")) == 1
    assert capsys.readouterr().err == "tool: out.json: cannot write the output: is a directory\n"


def test_success_prints_nothing(capsys):
    assert _cli(None) == 0
    assert capsys.readouterr().err == ""


def test_exits_pass_through(capsys):
    with pytest.raises(SystemExit):
        _cli(SystemExit(3))
    assert capsys.readouterr().err == ""


def test_ctrl_c_is_one_line_and_exit_code_130(capsys):
    with OneLineErrors("tool", "model.mlirbc") as cli:
        raise KeyboardInterrupt
    assert cli.failed and cli.exit_code == 130
    assert capsys.readouterr().err == "tool: model.mlirbc: interrupted by SIGINT\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=["SIGTERM", "SIGHUP", "SIGQUIT"])
def test_a_signal_kills_children_of_every_thread_and_starts_no_more(capsys, signum):
    """A child started from a worker thread (qemu under perf.measure) dies with the CLI. SIGHUP
    (a closed terminal) killed the CLI outright, its children orphaned (issue 62)."""
    started = []

    def worker():
        started.append(True)
        try:
            processes.run(["sleep", "60"])
            processes.run(["sleep", "60"])  # after the signal: never started
        except processes.Stopped:
            started.append("stopped")

    before = signal.getsignal(signum)
    t0 = time.monotonic()
    with OneLineErrors("tool", "model.mlirbc") as cli:
        thread = threading.Thread(target=worker)
        thread.start()
        while not processes._live:
            time.sleep(0.01)
        os.kill(os.getpid(), signum)
        time.sleep(30)  # interrupted
    thread.join(10)
    assert not thread.is_alive() and started == [True, "stopped"]
    assert time.monotonic() - t0 < 20 and not processes._live
    assert cli.exit_code == 128 + signum
    assert capsys.readouterr().err == f"tool: model.mlirbc: interrupted by {signal.Signals(signum).name}\n"
    assert signal.getsignal(signum) is before  # the CLI's handlers are its own
    with OneLineErrors("tool", "model.mlirbc"):  # a later CLI in this process starts children
        assert processes.run(["true"]).returncode == 0


def test_a_signal_kills_the_whole_process_tree(capsys):
    """A child's own child (iree-compile's linker) and a child `run` had not registered yet (a
    signal between fork and registration: codegen's probe saw iree-compile outlive the CLI
    under load) die with the CLI too."""
    unregistered = subprocess.Popen(["sleep", "60"])
    grandchildren = []

    def worker():
        try:
            processes.run(["sh", "-c", "sleep 60 & wait"])
        except processes.Stopped:
            pass

    with OneLineErrors("tool", "model.mlirbc") as cli:
        thread = threading.Thread(target=worker)
        thread.start()
        while not grandchildren:
            grandchildren += [p for p in processes.descendants(os.getpid()) if p != unregistered.pid
                              and Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"sleep")]
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # interrupted
    thread.join(10)
    assert cli.exit_code == 128 + signal.SIGTERM
    assert unregistered.wait(10) == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and [p for p in grandchildren if _running(p)]:
        time.sleep(0.05)
    assert not [p for p in grandchildren if _running(p)], "the grandchild outlived the CLI"
    capsys.readouterr()


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_sighup_the_cli_was_started_ignoring_stays_ignored(capsys):
    """`nohup python -m ...`: the caller asked for the CLI to outlive its terminal."""
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with OneLineErrors("tool", "model.mlirbc") as cli:
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.2)
        assert not cli.failed and capsys.readouterr().err == ""
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


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
