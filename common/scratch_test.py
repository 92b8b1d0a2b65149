"""common/scratch.py: a run's scratch directory goes with it, and one a killed run left is
removed by the next run, never one a live run holds or a directory that is not a scratch one."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.scratch import remove_stale, scratch_directory

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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
