"""A measured choice on a real two-node Ray cluster on localhost (issue 61).

Both nodes are started with `ray start` (the head, and a second node joining it), on loopback
only, with one CPU each and a short temporary directory of their own (choice.ray_engine.LoopbackCluster:
each node a process group of its own); each test stops them, and them alone.
`choice.tune --ray-address` then measures mlp_batch32's choice with every qemu run a Ray task,
and its record must be the committed one byte for byte (what a serial refresh writes); so must
`--ray-address local`'s, `//tools:tune`'s default (a Ray instance of the test's own). The
second test kills the second node (its `ray start --block` process group) once the first
tasks have run: the tasks it held run again on the head, and the record is still the same.

    python tuning/ray_cluster_test.py CHOICE_INPUTS.json COMMITTED_RECORD

CHOICE_INPUTS.json is choice:defs.bzl `choice_inputs`' (what measured_choice hands choice.tune).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from choice.ray_engine import LoopbackCluster

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree
ARGS = sys.argv[1:3]
TIMEOUT = 600  # a choice of three dispatches: about 30 s serial on two cores, plus Ray's start


def _env() -> dict[str, str]:
    # The workers import the project's modules (perf.measure) as this process does.
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


@pytest.fixture
def cluster():
    c = LoopbackCluster((1, 1), env=_env())
    try:
        yield c
    finally:
        c.stop()
    assert not c.leftovers(), "the cluster's processes outlived stop()"


def _runfile(short_path: str) -> Path:
    # An external repository's file (@llvm19) is ../<repo>/... from the workspace's runfiles.
    return (ROOT / short_path).absolute()


INPUTS = json.loads((ROOT / ARGS[0]).read_text()) if ARGS else {}
FILES = {k: _runfile(v["short_path"]) for k, v in INPUTS.get("files", {}).items()}


def _tune(cluster: LoopbackCluster, out: Path) -> subprocess.Popen:
    from choice.ray_engine import choice_tune_command

    cmd = choice_tune_command(INPUTS, FILES, out, cluster.address)
    return subprocess.Popen(cmd, cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _committed() -> str:
    return Path(ARGS[1]).read_text()


def _assert_committed(record: Path) -> None:
    got, want = record.read_text(), _committed()
    if got != want:
        import difflib

        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "committed",
                                                 "on the cluster", n=1))[:60])
        pytest.fail(f"the record measured on the cluster is not the committed one:\n{diff}")


def test_a_two_node_cluster_tunes_the_committed_record(cluster, tmp_path):
    proc = _tune(cluster, tmp_path)
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, stderr
    assert "2 nodes" in stderr and "every toolchain the driver's" in stderr, stderr
    _assert_committed(tmp_path / "record.json")


def test_a_node_lost_mid_run_still_completes(cluster, tmp_path):
    proc = _tune(cluster, tmp_path)
    # Let measuring start (the toolchain check and round 0's compile come first), then kill the
    # second node while it holds tasks: Ray runs them again on the head.
    deadline = time.monotonic() + TIMEOUT
    while not list(Path(tempfile.gettempdir()).glob("perf_*/d000/counts_*.txt")) and proc.poll() is None:
        assert time.monotonic() < deadline, "no qemu run ever finished"
        time.sleep(0.5)
    assert proc.poll() is None, f"the choice ended before a node could be lost: {proc.communicate()[1]}"
    cluster.kill_node(1)
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, stderr
    _assert_committed(tmp_path / "record.json")


def test_a_local_instance_tunes_the_committed_record(tmp_path):
    """`//tools:tune`'s default: a Ray instance of this machine's own, started and stopped by the
    choice, leaving no Ray process or file behind."""
    from choice.ray_engine import LOCAL, choice_tune_command

    env = _env()
    before = set(Path("/tmp").glob("ray*"))
    token_before = (Path.home() / ".ray" / "auth_token").exists()
    proc = subprocess.run(choice_tune_command(INPUTS, FILES, tmp_path, LOCAL), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert "Ray cluster at local: 1 nodes" in proc.stderr and "every toolchain the driver's" in proc.stderr, proc.stderr
    _assert_committed(tmp_path / "record.json")
    assert set(Path("/tmp").glob("ray*")) <= before, "the local instance left its files"
    assert not (Path.home() / ".ray" / "auth_token").exists() or token_before, \
        "the local instance wrote a token to ~/.ray/auth_token, which later `ray start`s read"


def test_a_refresh_that_resumes_keeps_a_record_whose_key_matches(tmp_path):
    """`//tools:tune --stale-only`: given the committed record (key the tree's), the choice is
    replayed: nothing measured, no Ray instance started, the record written byte for byte."""
    from choice.ray_engine import LOCAL, choice_tune_command

    env = _env()
    before = set(Path("/tmp").glob("ray*"))
    proc = subprocess.run(choice_tune_command(INPUTS, FILES, tmp_path, LOCAL, record=Path(ARGS[1])), cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert "replayed" in proc.stdout and "Ray cluster" not in proc.stderr, proc.stdout + proc.stderr
    _assert_committed(tmp_path / "record.json")
    assert set(Path("/tmp").glob("ray*")) <= before


def test_stopping_a_cluster_leaves_other_ray_instances_alone():
    """`ray stop` would end every Ray on the machine (a sweep measuring beside this test died of
    it): a loopback cluster ends its own nodes alone."""
    bystander = LoopbackCluster((1,), env=_env())
    try:
        ours = LoopbackCluster((1,), env=_env())
        ours.stop()
        assert all(n.poll() is not None for n in ours.nodes) and not ours.leftovers()
        assert bystander.alive() == 1, "stopping one cluster ended another"
    finally:
        bystander.stop()


def test_a_node_with_another_toolchain_is_refused(tmp_path):
    """The driver's toolchain is checked on every node: a runner that is not the nodes' is named."""
    other = tmp_path / "hal_runner_riscv64"
    other.write_bytes(FILES["runner"].read_bytes() + b"\0")
    other.chmod(0o755)
    from choice import ray_engine

    llvm_bin = FILES["llvm_mca"].parent
    theirs = ray_engine.toolchain(llvm_bin, FILES["qemu"], FILES["plugin"], FILES["runner"])
    mine = ray_engine.toolchain(llvm_bin, FILES["qemu"], FILES["plugin"], other)
    assert ray_engine.differences(theirs, mine) == [
        f"hal_runner_riscv64 {theirs['hal_runner_riscv64']} (driver: {mine['hal_runner_riscv64']})"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
