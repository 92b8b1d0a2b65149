"""`choice.tune --ray-address`'s weak answers (issue 80): an address nobody answers at, one that
is not a Ray head, RAY_ADDRESS beside `--ray-address local`, a head killed mid-run and SIGTERM
each end in one `choice.tune:` line naming the culprit and a non-zero exit, in seconds.

Each case runs a driver as choice.tune does (`connect`, tasks waited on in perf.measure's
`as_completed`, `shutdown` in a `finally`, all in common/errors.py's OneLineErrors) in a
process of its own with a timeout: Ray retried a closed port for minutes, so the old behaviour
shows as the timeout. The toolchain check is given one fingerprint for every node (the tools
themselves are //tuning:ray_cluster_test's). The Ray instances started here are the drivers'
own (`--ray-address local`: random ports, a temporary directory of their own); nothing here
stops any other. The engine's parts (the head check, Ray's lost tasks, RAY_ADDRESS, Ray's
SIGTERM handler) are tested in this process too, with Ray's init or tasks stood in for.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from choice import ray_engine

PROG = "choice.tune"
CULPRIT = "model.mlir"  # the culprit choice.tune names for an error that names none itself

# choice.tune's use of the engine, in short. argv: ADDRESS [HEAD_LOST_S]; prints "running" once
# its tasks (each a 10-minute sleep: only an interruption ends them) are submitted.
DRIVER = f"""
import concurrent.futures, sys, time
from pathlib import Path
from choice import ray_engine
from common.errors import OneLineErrors

ray_engine.toolchain = lambda *paths: {{"toolchain": "the driver's"}}
if len(sys.argv) > 2:
    ray_engine.HEAD_LOST_S = float(sys.argv[2])


def wait(seconds):
    time.sleep(seconds)


with OneLineErrors({PROG!r}, {CULPRIT!r}, (ray_engine.RayEngineError,)) as cli:
    executor = ray_engine.connect(sys.argv[1], Path("/"), Path("/"), Path("/"), Path("/"))
    try:
        futures = [executor.submit(wait, 600) for _ in range(2)]
        print("running", flush=True)
        for future in concurrent.futures.as_completed(futures):
            future.result()
    finally:
        executor.shutdown()
sys.exit(cli.exit_code)
"""


def _env(**extra: str) -> dict[str, str]:
    # The driver and Ray's workers import the project's modules as this process does.
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _driver(address: str, *more: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, address, *more], env=env or _env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _finish(proc: subprocess.Popen, timeout_s: float, what: str) -> tuple[int, list[str]]:
    """(exit code, stderr's lines) of a driver, which must end within `timeout_s`."""
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.terminate()  # a local instance's driver removes it on SIGTERM (Ray's handler, or ours)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
        pytest.fail(f"{what}: still running after {timeout_s:g} s; it said:\n{err[-3000:]}")
    return proc.returncode, err.splitlines()


def _wait_running(proc: subprocess.Popen, timeout_s: float) -> None:
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if sel.select(timeout_s) and proc.stdout.readline() == "running\n":
            return
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"the driver never ran its tasks: {proc.communicate()[1][-3000:]}")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_one_line():
    """A closed port: Ray retried it for minutes (20 tries of ~40 s), logging each."""
    address = f"127.0.0.1:{_closed_port()}"
    code, lines = _finish(_driver(address), 20, f"--ray-address {address} (closed)")
    assert (code, lines) == (1, [f"{PROG}: --ray-address {address}: nothing listening (connection refused)"])


def test_no_answer_is_one_line_in_seconds():
    """An address whose SYNs go unanswered (as an unroutable one's): a listener whose backlog is
    full, so the kernel drops the next connection attempts."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        address = "127.0.0.1:%d" % listener.getsockname()[1]
        filler.connect(listener.getsockname())
        start = time.monotonic()
        code, lines = _finish(_driver(address), 20, f"--ray-address {address} (unanswered)")
    assert (code, lines) == (1, [f"{PROG}: --ray-address {address}: no answer in "
                                 f"{ray_engine.REACH_TIMEOUT_S:g} s (unroutable, or dropped by a firewall)"])
    assert time.monotonic() - start < ray_engine.REACH_TIMEOUT_S + 10


def test_an_unroutable_address_is_one_line():
    """10.255.255.1: no answer on most networks (the TCP check says so), none where there is no
    network, and where a proxy answers every connection (this sandbox's speaks HTTP/2 and says
    404) Ray's one bounded try does; Ray logged 20 lines before its own."""
    address = "10.255.255.1:6379"
    code, lines = _finish(_driver(address), 25, f"--ray-address {address}")
    assert code == 1 and len(lines) == 1 and lines[0].startswith(f"{PROG}: --ray-address {address}: "), lines


def test_local_starts_its_own_instance_whatever_RAY_ADDRESS_says(monkeypatch):
    """ray.init without an address joins RAY_ADDRESS's cluster: `local` asked for a new one."""
    import ray

    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{_closed_port()}")
    monkeypatch.setattr(ray_engine, "toolchain", lambda *paths: {})
    seen = {}

    def init(address=None, **kwargs):
        from ray._private import services

        # What Ray makes of the call as it is made: None is "start a new instance".
        seen["joins"] = services.canonicalize_bootstrap_address(address, kwargs.get("_temp_dir"))
        seen["RAY_ADDRESS"] = os.environ.get("RAY_ADDRESS")
        raise RuntimeError("stopped here: the test starts no instance")

    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(ray_engine.RayEngineError, match=r"^--ray-address local: no Ray cluster to start"):
        ray_engine.connect(ray_engine.LOCAL, Path("/"), Path("/"), Path("/"), Path("/"))
    assert seen == {"joins": None, "RAY_ADDRESS": None}
    assert os.environ["RAY_ADDRESS"].startswith("127.0.0.1:"), "RAY_ADDRESS was not put back"


def test_ray_init_does_not_keep_its_sigterm_handler(monkeypatch):
    """ray.init puts in a SIGTERM handler of its own (sys.exit, or a local node's drain): the
    CLI's own (OneLineErrors') is what handles SIGTERM afterwards."""
    import ray

    def cli_handler(signum, frame):
        raise AssertionError("not called here")

    def init(*args, **kwargs):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # as Ray's init does
        raise RuntimeError("stopped here: the test starts no instance")

    monkeypatch.setattr(ray_engine, "toolchain", lambda *paths: {})
    monkeypatch.setattr(ray, "init", init)
    before = signal.signal(signal.SIGTERM, cli_handler)
    try:
        with pytest.raises(ray_engine.RayEngineError):
            ray_engine.connect(ray_engine.LOCAL, Path("/"), Path("/"), Path("/"), Path("/"))
        assert signal.getsignal(signal.SIGTERM) is cli_handler
    finally:
        signal.signal(signal.SIGTERM, before)


class _FakeRay:
    """What RayExecutor uses of ray: each task's future is the test's to settle."""

    def __init__(self):
        import ray.exceptions

        self.exceptions = ray.exceptions
        self.futures: list = []

    def remote(self, fn):
        fake = self

        class Remote:
            def options(self, **kwargs):
                return self

            def remote(self, *args):
                import concurrent.futures

                future = concurrent.futures.Future()
                fake.futures.append(future)
                return type("Ref", (), {"future": lambda _: future})()

        return Remote()

    def shutdown(self):
        pass


def test_a_head_that_stops_answering_fails_the_waiting_tasks(monkeypatch):
    """Ray waits 60 s for a lost head, then its driver exits natively: the tasks waited on fail
    first, with one line naming the address."""
    import concurrent.futures

    monkeypatch.setattr(ray_engine, "HEAD_CHECK_S", 0.1)
    monkeypatch.setattr(ray_engine, "HEAD_LOST_S", 0.5)
    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        host, port = head.getsockname()
        executor = ray_engine.RayExecutor(_FakeRay(), None, f"{host}:{port}", (host, port))
        future = executor.submit(time.sleep, 600)
        time.sleep(1)  # answering: nothing fails
        assert not future.done()
    try:
        with pytest.raises(ray_engine.RayEngineError) as lost:
            future.result(timeout=10)
        assert str(lost.value) == (f"--ray-address {host}:{port}: the Ray head at {host}:{port} has not answered "
                                   "for 0.5 s: nothing listening (connection refused)")
        with pytest.raises(ray_engine.RayEngineError):  # nothing more is sent to a lost cluster
            executor.submit(time.sleep, 600).result(timeout=0)
    finally:
        executor.shutdown()
    assert not concurrent.futures.wait([future], 0).not_done


def test_a_task_ray_lost_names_the_address_and_a_task_s_own_error_is_itself():
    import ray.exceptions

    fake = _FakeRay()
    executor = ray_engine.RayExecutor(fake, None, "127.0.0.1:6379")
    lost, failed = executor.submit(time.sleep, 1), executor.submit(time.sleep, 1)
    fake.futures[0].set_exception(ray.exceptions.WorkerCrashedError())
    own = ValueError("dispatch d0: qemu exited 1")
    fake.futures[1].set_exception(ray.exceptions.RayTaskError("sleep", "Traceback ...", own))
    with pytest.raises(ray_engine.RayEngineError, match=r"^--ray-address 127\.0\.0\.1:6379: a task was lost: "
                                                        r"WorkerCrashedError: \S"):
        lost.result(timeout=0)
    assert failed.exception(timeout=0) is own


def _children(pid: int) -> dict[int, str]:
    """pid -> command name of `pid`'s child processes."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if int(rest[1]) == pid:
            found[int(stat.parent.name)] = name
    return found


def test_sigterm_during_a_local_run_is_one_line():
    """`--ray-address local` (RAY_ADDRESS naming a closed port beside it, which Ray joined
    instead), SIGTERM once tasks run: Ray's init had put its own handler in (a local node's
    drain, exit 1, no line of ours)."""
    proc = _driver(ray_engine.LOCAL, env=_env(RAY_ADDRESS=f"127.0.0.1:{_closed_port()}"))
    _wait_running(proc, 90)
    proc.send_signal(signal.SIGTERM)
    code, lines = _finish(proc, 30, "SIGTERM to a local run")
    assert (code, lines[1:]) == (128 + signal.SIGTERM, [f"{PROG}: {CULPRIT}: interrupted by SIGTERM"]), lines
    assert lines[0].startswith(f"{PROG}: Ray cluster at local: 1 nodes"), lines


def test_a_head_killed_mid_run_is_one_line():
    """The head's GCS killed while tasks run (the driver's own local instance's): Ray's driver
    waited 60 s, then exited natively with its log line and none of ours."""
    proc = _driver(ray_engine.LOCAL, "4")
    _wait_running(proc, 90)
    children = _children(proc.pid)
    gcs = [pid for pid, name in children.items() if name == "gcs_server"]
    assert len(gcs) == 1, children
    # The raylet's agents outlive a node whose GCS died by a minute or two: ended here.
    agents = [pid for raylet, name in children.items() if name == "raylet" for pid in _children(raylet)]
    os.kill(gcs[0], signal.SIGKILL)
    try:
        code, lines = _finish(proc, 40, "a run whose head was killed")
    finally:
        for pid in agents:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert code == 1, lines
    assert re.fullmatch(rf"{PROG}: --ray-address local: the Ray head at [\d.]+:\d+ has not answered for 4 s: "
                        r"nothing listening \(connection refused\)", lines[-1]), lines
    # Ray's driver may log a task it could not report as the head went (one native line before
    # ours): no traceback, no other line of ours.
    assert not [line for line in lines[1:-1] if not line.startswith("[")], lines


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
