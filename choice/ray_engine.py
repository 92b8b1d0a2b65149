"""Measuring on a Ray cluster (issue 61): `choice.tune --ray-address ADDRESS` runs every qemu run
its measurements make (perf.measure's unit of work: one dispatch on one description under one
buffer placement, the bulk of a measured choice's time) as a Ray task on any node of the
cluster, instead of in a local thread pool.

- The figures are the same: a task runs exactly the function a local thread runs
  (`perf.measure._run_dispatch`) on the same files, and perf.measure assembles the results in
  its own order, so a record tuned on a cluster is byte for byte a serial run's
  (//tuning:ray_cluster_test).
- Every node is checked before any task runs: each computes the toolchain fingerprint a record
  is keyed by (`choice.records.tool_versions`: iree-base-compiler, @llvm19, qemu, its plugin,
  the riscv64 runner, the measurement version) and its Python environment, and a node whose
  fingerprint is not the driver's is refused, named, with the component that differs.
- A task lost with its worker or its node is run again elsewhere (`MAX_RETRIES`); an error the
  task raises itself (a dispatch that fails under qemu) is the measurement's answer and is not.
- `--ray-address local` starts a Ray instance of this machine's own (one CPU per core, no
  dashboard, its files in a temporary directory removed at the end): what `//tools:tune` does by
  default; any other address joins that cluster.
- A cluster that cannot be used is said in one line naming `--ray-address` (issue 80): nothing
  listening or no answer is found by a TCP connect before Ray is asked (Ray retried a closed port
  for minutes and logged every try), anything else that is not a Ray head by one bounded try of
  Ray's own (its log kept off the terminal); a head that stops answering mid-run ends the run in
  one line before Ray's driver would exit natively; SIGTERM ends it as Ctrl-C does (the CLI's
  handler, common/errors.py's OneLineErrors, is put back after Ray's init replaced it).
- Nodes must see the files at the paths the driver sees: a task's arguments are paths (the
  runner, the executable, the binding files). One machine (the test's two localhost nodes) or
  a shared checkout, output base and scratch directory on several.

Builds never use this: they replay records inside Bazel's sandbox. Ray is for refreshing
records and for sweeps, as TVM tunes offline and builds from its logs.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from common.errors import first_line
from common.processes import fd2_into

MAX_RETRIES = 3  # a task whose worker or node died runs again, at most this often
LOCAL = "local"  # --ray-address: a Ray instance of this machine's own, started and stopped here
REACH_TIMEOUT_S = 3.0  # the TCP connect to a head before Ray is asked: no answer in this is none
# A run's head is checked this often (a TCP connect); one not answering for HEAD_LOST_S ends the
# run, well before Ray's driver exits natively (RAY_gcs_rpc_server_reconnect_timeout_s, 60 s).
HEAD_CHECK_S = 2.0
HEAD_LOST_S = 15.0


class RayEngineError(RuntimeError):
    """The cluster cannot be used; the message names the node or the reason."""


def toolchain(llvm_bin: Path, qemu: Path, plugin: Path, runner: Path) -> dict[str, str]:
    """What a node measures with: the tools a record's key names, and the Python environment
    (its directory is named by the lock's digest) and version."""
    from choice.records import tool_versions

    return {**tool_versions(Path(llvm_bin), Path(qemu), Path(plugin), Path(runner)),
            "python_environment": Path(sys.prefix).name, "python": sys.version.split()[0]}


def choice_tune_command(inputs: dict, files: dict[str, Path], out: Path, address: str,
                        run_cache: Path | None = None, record: Path | None = None) -> list[str]:
    """The choice.tune command a measured choice runs (choice:defs.bzl `choice_inputs`' JSON
    `inputs`, its `files` resolved to paths) with every qemu run on the cluster at `address`;
    its record, analysis and table go to `out`/record.json, analysis.json, tune.md. `-P`: the
    modules (and the runfiles they find their tools in) are the caller's sys.path's, never the
    working directory's. `run_cache`: the refresh's directory of qemu runs (perf/run_cache.py).
    `record`: the committed record, replayed (nothing run, the same bytes written) when its key is
    the tree's; without it every candidate is measured."""
    return [sys.executable, "-P", "-m", "choice.tune", "--module", str(files["module"]),
            "--target", str(files["target"]), "--analysis", str(files["analysis"]),
            "--hardware", str(files["hardware"]), "--model-name", inputs["model_name"],
            "--llvm-bin", str(Path(files["llvm_mca"]).parent), "--runner", str(files["runner"]),
            "--plugin", str(files["plugin"]), "--qemu", str(files["qemu"]),
            "--candidates", str(inputs["candidates"]), "--code-ranked", str(inputs["code_ranked"]),
            "--placements", str(inputs["placements"]), "--record-name", inputs["record_name"],
            "--record-out", str(out / "record.json"), "--refresh-target", inputs["refresh_target"],
            *(["--record", str(record)] if record is not None else ["--records-ignored"]),
            "--out", str(out / "analysis.json"), "--out-md", str(out / "tune.md"),
            "--ray-address", address] + (["--allow-no-core-model"] if inputs.get("allow_no_core_model") else []) + (
            ["--run-cache", str(run_cache)] if run_cache is not None else [])


def differences(node: dict[str, str], driver: dict[str, str]) -> list[str]:
    """Each component where a node's toolchain differs from the driver's, one phrase each."""
    return [f"{k} {node.get(k)} (driver: {driver.get(k)})" for k in sorted(set(node) | set(driver))
            if node.get(k) != driver.get(k)]


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a `--ray-address` HOST:PORT ([v6]:PORT, a `ray://` prefix allowed), or None
    for anything else (left to Ray, which names what it does not take)."""
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.removeprefix("[").removesuffix("]"), int(port)


def unreachable(host: str, port: int, timeout_s: float = REACH_TIMEOUT_S) -> str | None:
    """Why nothing answers a TCP connect to host:port in `timeout_s`, or None when something does."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return "nothing listening (connection refused)"
    except socket.timeout:
        return f"no answer in {timeout_s:g} s (unroutable, or dropped by a firewall)"
    except socket.gaierror as err:
        return f"cannot resolve {host} ({err.strerror})"
    except OSError as err:
        return f"cannot connect ({err.strerror or err})"


@contextlib.contextmanager
def _environ(**changes: str | None) -> Iterator[None]:
    """os.environ with `changes` (None: removed) for the block, as it was afterwards."""
    before = {k: os.environ.get(k) for k in changes}
    for k, v in changes.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _native_stderr_kept(kept: list[str]) -> Iterator[None]:
    """File descriptor 2 into `kept` (its lines) for the block: Ray's native code logs there, past
    sys.stderr. Only around what starts no process (joining, shutting down): a process started
    meanwhile would keep writing to the file."""
    with tempfile.TemporaryFile() as f:
        try:
            with fd2_into(f):
                yield
        finally:
            f.seek(0)
            kept.extend(f.read().decode(errors="replace").splitlines())


def _ray_says(lines: list[str]) -> str:
    """Ray's last native log line without its "[time level pid tid] file.cc:N: " prefix."""
    for line in reversed(lines):
        said = re.sub(r"^\[[^]]*\]\s*[\w./-]+:\d+:\s*", "", line).strip()
        if said:
            return said
    return ""


class RayExecutor:
    """`submit(fn, *args)` runs fn(*args) as a Ray task and returns a concurrent.futures.Future,
    so perf.measure's `as_completed` loop is the same for threads and for the cluster. A task's
    own exception reaches the caller as itself (Ray's wrapper, with its remote traceback, is
    removed: the message is what a local run would say); a task Ray lost (its worker or node
    gone past MAX_RETRIES, its object lost) is a RayEngineError naming `--ray-address`. With
    `head` (the GCS's host and port), a thread checks the head is still there: when it has not
    answered for HEAD_LOST_S every waiting future fails with a RayEngineError (Ray itself would
    wait on, then end the process natively)."""

    def __init__(self, ray_module, temp_dir: str | None = None, address: str = "",
                 head: tuple[str, int] | None = None):
        self._ray = ray_module
        self._remote: dict[Callable, Any] = {}
        self._temp_dir = temp_dir  # a local instance's files, removed at shutdown
        self._address = address
        self._lock = threading.Lock()
        self._waiting: set[concurrent.futures.Future] = set()
        self._lost: str | None = None  # why the cluster is gone, once it is
        self._stop = threading.Event()
        if head is not None:
            threading.Thread(target=self._watch_head, args=head, daemon=True, name="ray-head-check").start()

    def submit(self, fn: Callable, *args) -> concurrent.futures.Future:
        done: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._lost is not None:
                done.set_exception(RayEngineError(self._lost))
                return done
            self._waiting.add(done)
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(fn).options(num_cpus=1, max_retries=MAX_RETRIES)

        def settle(ray_future: concurrent.futures.Future) -> None:
            with self._lock:
                if done not in self._waiting:  # failed already: the head was lost
                    return
                self._waiting.discard(done)
            err = ray_future.exception()
            if err is None:
                done.set_result(ray_future.result())
                return
            cause = getattr(err, "cause", None)
            if isinstance(err, self._ray.exceptions.RayError) and not isinstance(
                    err, self._ray.exceptions.RayTaskError):
                # Ray's own failure, not the task's: the cluster is the culprit.
                done.set_exception(RayEngineError(f"--ray-address {self._address}: a task was lost: "
                                                  f"{type(err).__name__}: {first_line(err)}"))
                return
            done.set_exception(cause if isinstance(cause, BaseException) else err)

        remote.remote(*args).future().add_done_callback(settle)
        return done

    def _watch_head(self, host: str, port: int) -> None:
        answered = time.monotonic()
        while not self._stop.wait(HEAD_CHECK_S):
            why = unreachable(host, port, min(HEAD_CHECK_S, REACH_TIMEOUT_S))
            if why is None:
                answered = time.monotonic()
            elif time.monotonic() - answered >= HEAD_LOST_S:
                self._lose(f"--ray-address {self._address}: the Ray head at {host}:{port} has not answered "
                           f"for {HEAD_LOST_S:g} s: {why}")
                return

    def _lose(self, why: str) -> None:
        with self._lock:
            self._lost = why
            waiting, self._waiting = self._waiting, set()
        for f in waiting:
            f.set_exception(RayEngineError(why))

    def shutdown(self) -> None:
        self._stop.set()
        with self._lock:
            abandoned = self._lost is not None or bool(self._waiting)
        # Tasks still running are abandoned (an interrupt, a lost head, an error): Ray's driver
        # logs each it can no longer report ("Failed to push error to driver"), natively.
        with _native_stderr_kept([]) if abandoned else contextlib.nullcontext():
            self._ray.shutdown()
        if self._temp_dir:
            shutil.rmtree(self._temp_dir, ignore_errors=True)


def connect(address: str, llvm_bin: Path, qemu: Path, plugin: Path, runner: Path) -> RayExecutor:
    """Joins the cluster at `address` (host:port of its head, as `ray start --head` prints it), or
    with LOCAL starts one of this machine's own, and checks every alive node's toolchain against
    this process's; raises RayEngineError naming a node that differs, or when the cluster cannot
    be reached or started (one line: `--ray-address ADDRESS: why`)."""
    temp_dir = None
    head = host_port(address) if address != LOCAL else None
    if head is not None:
        why = unreachable(*head)
        if why is not None:
            raise RayEngineError(f"--ray-address {address}: {why}")
    if address == LOCAL:
        # Ray's unix sockets live in its temporary directory: a short path of its own. A new
        # local instance turns token authentication on and writes a token to ~/.ray/auth_token,
        # which every later `ray start` on the machine then reads (a second node started without
        # it was refused): this instance listens on loopback only, without a token, and leaves
        # nothing in HOME. Set before Ray is imported, which reads its configuration once.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        os.environ["RAY_AUTH_MODE"] = "disabled"
        temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        # A local instance was asked for: RAY_ADDRESS (which ray.init reads when given no address,
        # and joined that cluster instead) is not in the environment while it starts, nor in the
        # environment of the processes it starts; "local" is Ray's own word for a new instance.
        where = {"address": "local", "num_cpus": os.cpu_count(), "include_dashboard": False,
                 "_temp_dir": temp_dir, "_node_ip_address": "127.0.0.1"}
        environ: dict[str, str | None] = {"RAY_ADDRESS": None}
    else:
        where = {"address": address}
        # One try of Ray's GCS connect, not 20 (each up to ~40 s against something that is not a
        # Ray head, each logged): whatever listens there was answering a moment ago. Read when
        # ray.init runs; the user's own setting is kept.
        environ = {"RAY_gcs_server_port_wait_time_s": os.environ.get("RAY_gcs_server_port_wait_time_s", "1")}
    # Ray's init puts its own SIGTERM handler in (a sys.exit, or a local node's drain): the CLI's
    # (common/errors.py's OneLineErrors: one line, children killed, temporaries removed) is put
    # back. A process without a handler of its own keeps Ray's.
    own_sigterm = (signal.getsignal(signal.SIGTERM)
                   if threading.current_thread() is threading.main_thread() else None)
    kept: list[str] = []  # Ray's native log lines while joining
    with _environ(**environ):
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        mine = toolchain(llvm_bin, qemu, plugin, runner)
        try:
            with _native_stderr_kept(kept) if temp_dir is None else contextlib.nullcontext():
                context = ray.init(**where, logging_level=logging.ERROR, log_to_driver=False, configure_logging=True)
        except Exception as err:  # noqa: BLE001 (whatever Ray's init raises, the cluster is the culprit)
            if temp_dir:
                shutil.rmtree(temp_dir, ignore_errors=True)
            said = _ray_says(kept)  # why its one try failed, when Ray logged it
            raise RayEngineError(f"--ray-address {address}: no Ray cluster to {'start' if temp_dir else 'join'} "
                                 f"({first_line(err)}{'; ' + first_line(said, 200) if said else ''})") from None
        finally:
            if callable(own_sigterm):
                signal.signal(signal.SIGTERM, own_sigterm)
    sys.stderr.write("".join(f"{line}\n" for line in kept))  # joined: what Ray said is not hidden
    gcs = host_port(context.address_info.get("gcs_address") or "") if temp_dir else head
    executor = RayExecutor(ray, temp_dir, address, gcs)
    try:
        nodes = _check_nodes(ray, NodeAffinitySchedulingStrategy, mine, llvm_bin, qemu, plugin, runner)
    except BaseException:  # a refused node, or SIGTERM meanwhile: Ray stopped, its files removed
        executor.shutdown()
        raise
    print(f"choice.tune: Ray cluster at {address}: {nodes} nodes, "
          f"{int(ray.cluster_resources().get('CPU', 0))} CPUs, every toolchain the driver's", file=sys.stderr)
    return executor


def _check_nodes(ray, affinity, mine: dict[str, str], llvm_bin: Path, qemu: Path, plugin: Path,
                 runner: Path) -> int:
    """The number of alive nodes, each checked; raises RayEngineError naming one whose toolchain
    is not `mine`, or that cannot compute it."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    check = ray.remote(toolchain)
    refs = {n["NodeID"]: check.options(num_cpus=0, max_retries=MAX_RETRIES,
                                       scheduling_strategy=affinity(n["NodeID"], soft=False))
            .remote(llvm_bin, qemu, plugin, runner) for n in nodes}
    for node in nodes:
        try:
            theirs = ray.get(refs[node["NodeID"]])
        except Exception as err:  # noqa: BLE001 (a node that cannot even compute it is refused)
            raise RayEngineError(f"node {node['NodeManagerAddress']} ({node['NodeID'][:8]}): cannot check its "
                                 f"toolchain: {str(getattr(err, 'cause', err) or err).splitlines()[0]}") from None
        differ = differences(theirs, mine)
        if differ:
            raise RayEngineError(f"node {node['NodeManagerAddress']} ({node['NodeID'][:8]}): its toolchain is not "
                                 f"the driver's, refused: {'; '.join(differ)}")
    return len(nodes)


# Loopback nodes: 100 MB of object store each (the tasks pass paths, not data), no usage stats.
LOOPBACK_NODE_FLAGS = ("--disable-usage-stats", "--object-store-memory=100000000", "--node-ip-address=127.0.0.1")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackCluster:
    """A Ray cluster of `cpus` nodes on this machine's loopback (the first the head), for the
    cluster test and the scaling benchmark: each node a `ray start --block` in a process group
    of its own, so `kill_node` is a real node loss and `stop()` ends these nodes alone. (`ray stop`
    ends every Ray on the machine: a sweep measuring on its own local instance beside this
    cluster was killed by it.)"""

    def __init__(self, cpus: tuple[int, ...] = (1, 1), env: dict[str, str] | None = None, timeout_s: float = 60):
        import subprocess

        # Ray's unix sockets live under the temporary directory: Bazel's TEST_TMPDIR is too long.
        # Authentication off on these loopback-only nodes, whatever ~/.ray holds (a token file
        # there, which a local ray.init writes, turned it on for the head and not for the second).
        self.tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        self.env = {**(env if env is not None else os.environ), "RAY_USAGE_STATS_ENABLED": "0",
                    "RAY_AUTH_MODE": "disabled"}
        port = _free_port()
        self.address = f"127.0.0.1:{port}"
        self.nodes: list[subprocess.Popen] = []
        try:
            for i, n in enumerate(cpus):
                where = (["--head", f"--port={port}", f"--temp-dir={self.tmp}", "--include-dashboard=false"]
                         if i == 0 else [f"--address={self.address}"])
                self.nodes.append(subprocess.Popen(
                    [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", *where, f"--num-cpus={n}",
                     *LOOPBACK_NODE_FLAGS], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True))
                self._wait(i + 1, timeout_s)
        except BaseException:
            self.stop()
            raise

    def _wait(self, count: int, timeout_s: float) -> None:
        import time

        deadline = time.monotonic() + timeout_s
        while self.alive() < count:
            exited = [i for i, p in enumerate(self.nodes) if p.poll() is not None]
            if exited:
                raise RayEngineError(f"{self.address}: node {exited[0]}'s `ray start` exited "
                                     f"({self.nodes[exited[0]].returncode})")
            if time.monotonic() > deadline:
                raise RayEngineError(f"{self.address}: {count} nodes never joined in {timeout_s:.0f} s")
            time.sleep(1)

    def alive(self) -> int:
        """The alive nodes `ray status` counts at this cluster's head (0: no head answers)."""
        import subprocess

        out = subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "status", f"--address={self.address}"],
                             env=self.env, capture_output=True, text=True, timeout=120)
        return out.stdout.count("node_") if out.returncode == 0 else 0

    def kill_node(self, index: int) -> None:
        """SIGKILL to node `index`'s process group: its raylet, its workers and their tasks die at once."""
        import signal

        os.killpg(self.nodes[index].pid, signal.SIGKILL)
        self.nodes[index].wait()

    def stop(self) -> None:
        """Ends these nodes (the head last) and removes their files; other Ray instances are left alone."""
        import signal

        for p in reversed(self.nodes):
            if p.poll() is None:
                # SIGKILL, as `ray stop --force` would, to this node's group alone: on SIGTERM the
                # GCS server and `ray start --block` itself lingered for more than 20 s.
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for pid in self.leftovers():  # a process that left the node's group (a worker, say)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Processes still running from this cluster: any whose command line names its directory."""
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if self.tmp.encode() in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:
                    pass
        return found
