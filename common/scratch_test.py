"""common/scratch.py: a run's scratch directory goes with it, and one a killed run left is
removed by the next run, never one a live run holds or a directory that is not a scratch one."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common import scratch
from common.scratch import ScratchError, remove_stale, scratch_directory

HOLD = """
import sys, time
from common.scratch import scratch_directory
with scratch_directory("tune_", sys.argv[1]) as d:
    (d / "big").write_bytes(b"x" * 1000)
    print(d, flush=True)
    time.sleep(600)
"""


def _holder(parent: Path) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(parent)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return proc, Path(proc.stdout.readline().strip())


def _age(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_a_scratch_directory_is_removed_after_use(tmp_path):
    with scratch_directory("codegen.", tmp_path) as d:
        assert d.is_dir() and d.name.startswith("codegen.") and d.name.endswith(".scratch")
        (d / "f").write_text("x")
    assert list(tmp_path.iterdir()) == []


def test_what_a_killed_run_left_is_removed_by_the_next_run(tmp_path):
    proc, left = _holder(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert left.is_dir()  # SIGKILL leaves it
    _age(left)
    with scratch_directory("tune_", tmp_path) as mine:
        assert not left.exists()
        assert sorted(tmp_path.iterdir()) == [mine]


def test_a_live_runs_directory_and_other_directories_are_kept(tmp_path):
    proc, live = _holder(tmp_path)
    try:
        _age(live)
        plain = tmp_path / "tune_not_a_scratch"  # a prefix match without the mark
        plain.mkdir()
        _age(plain)
        young = tmp_path / "tune_young.scratch"  # between mkdtemp and flock
        young.mkdir()
        assert remove_stale("tune_", tmp_path) == []
        assert live.is_dir() and plain.is_dir() and young.is_dir()
        _age(young)
        assert remove_stale("tune_", tmp_path) == [young]
    finally:
        proc.kill()
        proc.wait()


def _unwritable(path: Path, monkeypatch) -> None:
    """`path` read-only; root ignores permission bits, so for root os.access says so too (as it
    does for any user on a read-only file system)."""
    path.chmod(0o555)
    if os.geteuid() == 0:
        access = os.access
        monkeypatch.setattr(scratch.os, "access",
                            lambda p, mode, **kw: False if Path(p) == path and mode & os.W_OK else access(p, mode, **kw))


@pytest.mark.parametrize("kind,why", [("missing", "does not exist"), ("file", "is not a directory"),
                                      ("read_only", "is not writable")])
def test_an_unusable_tmpdir_is_named_before_anything_is_made(tmp_path, monkeypatch, kind, why):
    """Issue 80: tempfile fell back to /tmp without a word, and iree-compile, started with that
    TMPDIR, crashed asking to "report issues". Refused up front: the variable, its value, why."""
    bad = tmp_path / "tmp"
    if kind == "file":
        bad.write_text("x")
    elif kind == "read_only":
        bad.mkdir()
        _unwritable(bad, monkeypatch)
    monkeypatch.setenv("TMPDIR", str(bad))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for parent in (None, elsewhere):  # the tools a stage starts inherit TMPDIR either way
        with pytest.raises(ScratchError) as err:
            with scratch_directory("codegen.", parent):
                pytest.fail("a scratch directory was made")
        msg = str(err.value)
        assert msg.startswith(f"TMPDIR={bad}: {why}: ") and "\n" not in msg, msg
        assert list(elsewhere.iterdir()) == []


def test_an_unusable_parent_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    with pytest.raises(ScratchError, match=f"^{tmp_path}/none: does not exist: scratch directories are made there$"):
        with scratch_directory("x_", tmp_path / "none"):
            pass


def test_a_tmpdir_with_control_characters_is_quoted(tmp_path, monkeypatch):
    """The one line stays one line, and an escape sequence in the value is shown, not obeyed."""
    bad = f"{tmp_path}/\x1b[2K\rALL CHECKS PASSED\n"
    monkeypatch.setenv("TMPDIR", bad)
    with pytest.raises(ScratchError) as err:
        with scratch_directory("x_"):
            pass
    assert str(err.value).startswith(f"TMPDIR={bad!r}: does not exist") and str(err.value).isprintable()


def test_a_cli_says_it_in_one_line(tmp_path):
    code = ("import sys\nfrom common.errors import OneLineErrors\nfrom common.scratch import scratch_directory\n"
            "with OneLineErrors('stage', 'm.mlir') as cli:\n    with scratch_directory('stage_'):\n        pass\n"
            "sys.exit(cli.exit_code)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TMPDIR": str(tmp_path / "gone")})
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"stage: TMPDIR={tmp_path / 'gone'}: does not exist: "), proc.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
