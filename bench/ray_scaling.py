"""Wall time of one measured choice against Ray workers (issue 61, docs: what a cluster buys).

    tools/bazel run //bench:ray_scaling -- --rounds 3 \\
        --out-json docs/data/ray_scaling.json --out-md docs/data/ray_scaling.md

Runs the measured choice `choice_inputs` describes (mlp_batch32's, as //tuning:ray_cluster_test)
the way `//tools:tune` does (choice.ray_engine.choice_tune_command) under each configuration:
local threads without Ray (the build's own measured choice, `--jobs 2`), and Ray clusters started
with `ray start` on loopback: one node of 1 CPU, one node of 2 CPUs, two nodes of 1 CPU each.
Configurations are interleaved round by round; the table gives each one's median wall time, its
range, and the speed-up over one Ray worker. Every run's record must be byte for byte the first
one's (the engine changes where runs happen, never the figures); a difference fails.

What it ignores: this machine has 2 cores, so no configuration here has more than 2 workers,
and the two "nodes" share them; a real cluster adds network transfers of nothing but paths
(the files are shared) and scales with its cores until the shortlist's qemu runs per round,
which bound the parallelism of a choice, are all running.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from choice.ray_engine import choice_tune_command
from common.errors import OneLineErrors
from common.files import write_together

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree
NODE_FLAGS = ["--disable-usage-stats", "--object-store-memory=100000000", "--node-ip-address=127.0.0.1"]
TIMEOUT = 900
# (name, CPUs of each node; none: local threads without Ray)
CONFIGS = (("threads, no Ray (--jobs 2)", ()), ("Ray, 1 node x 1 CPU", (1,)),
           ("Ray, 1 node x 2 CPUs", (2,)), ("Ray, 2 nodes x 1 CPU", (1, 1)))


class ScalingError(RuntimeError):
    """A run failed or measured other figures; the message says which."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Cluster:
    """Nodes of `cpus` CPUs each on loopback (the first the head), stopped by `stop()`."""

    def __init__(self, cpus: tuple[int, ...], env: dict):
        self.tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's sockets need a short path
        self.env = env
        self.address = f"127.0.0.1:{_free_port()}"
        self.blocked: list[subprocess.Popen] = []
        self._ray("start", "--head", f"--port={self.address.split(':')[1]}", f"--temp-dir={self.tmp}",
                  "--include-dashboard=false", f"--num-cpus={cpus[0]}", *NODE_FLAGS)
        for n in cpus[1:]:
            self.blocked.append(subprocess.Popen(
                [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", f"--address={self.address}",
                 f"--num-cpus={n}", *NODE_FLAGS], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        deadline = time.monotonic() + 60
        while self._nodes() < len(cpus):
            if time.monotonic() > deadline:
                self.stop()
                raise ScalingError(f"{len(cpus)} Ray nodes never joined at {self.address}")
            time.sleep(1)

    def _ray(self, *args: str) -> subprocess.CompletedProcess:
        out = subprocess.run([sys.executable, "-m", "ray.scripts.scripts", *args], env=self.env,
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0 and args[0] == "start":
            raise ScalingError(f"ray {args[0]} failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
        return out

    def _nodes(self) -> int:
        out = self._ray("status", f"--address={self.address}")
        return out.stdout.count("node_") if out.returncode == 0 else 0

    def stop(self) -> None:
        for p in self.blocked:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
        self._ray("stop", "--force")
        shutil.rmtree(self.tmp, ignore_errors=True)


def _run(inputs: dict, files: dict[str, Path], cpus: tuple[int, ...], out: Path) -> float:
    """Wall seconds of one measured choice under `cpus` (see CONFIGS), its record in `out`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    cluster = _Cluster(cpus, env) if cpus else None
    try:
        cmd = choice_tune_command(inputs, files, out, cluster.address if cluster else "local")
        if cluster is None:  # the build's own path: no --ray-address, local threads
            i = cmd.index("--ray-address")
            cmd = cmd[:i] + cmd[i + 2:] + ["--jobs", "2"]
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        seconds = time.monotonic() - start
    finally:
        if cluster is not None:
            cluster.stop()
    if proc.returncode != 0:
        raise ScalingError(f"choice.tune under {cpus or 'threads'} failed: "
                           f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return seconds


def markdown(result: dict) -> str:
    lines = ["# Measured choice: wall time against Ray workers", "",
             f"Generated by `tools/bazel run //bench:ray_scaling` (bench/ray_scaling.py): "
             f"{result['choice']}'s measured choice ({result['qemu_runs']}), {result['rounds']} interleaved rounds "
             f"on a machine of {result['cores']} cores; every run's record byte for byte the first's.", "",
             "| configuration | workers | median wall s | range s | speed-up over 1 Ray worker |",
             "|---|---:|---:|---:|---:|"]
    base = next(r["median_s"] for r in result["configs"] if r["workers"] == 1 and r["ray"])
    for r in result["configs"]:
        lines.append(f"| {r['name']} | {r['workers']} | {r['median_s']:.1f} | {min(r['seconds']):.1f}-"
                     f"{max(r['seconds']):.1f} | {base / r['median_s']:.2f}x |")
    lines += ["", "This machine has 2 cores: no configuration has more than 2 workers, and two nodes here "
              "share them. Each Ray configuration includes starting its nodes' workers for the choice "
              "(not the nodes themselves).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //bench:ray_scaling --", description=__doc__.split("\n")[0])
    p.add_argument("choice_inputs", type=Path, help="choice:defs.bzl choice_inputs' JSON (its runfiles path)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out-json", type=Path, required=True, help="relative to the workspace")
    p.add_argument("--out-md", type=Path, required=True, help="relative to the workspace")
    a = p.parse_args(argv)
    with OneLineErrors("ray_scaling", a.choice_inputs, (ScalingError,)) as cli:
        ws = Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."))
        inputs = json.loads((ROOT / a.choice_inputs).read_text())
        files = {k: (ROOT / v["short_path"]).absolute() for k, v in inputs["files"].items()}
        seconds: dict[str, list[float]] = {name: [] for name, _ in CONFIGS}
        first = None
        with tempfile.TemporaryDirectory(prefix="ray_scaling_") as tmp:
            for r in range(a.rounds):
                for name, cpus in CONFIGS:
                    out = Path(tmp) / f"r{r}_{len(seconds[name])}_{len(cpus)}_{sum(cpus)}"
                    out.mkdir()
                    seconds[name].append(_run(inputs, files, cpus, out))
                    record = (out / "record.json").read_text()
                    if first is None:
                        first = record
                    elif record != first:
                        raise ScalingError(f"{name}, round {r}: its record differs from the first run's")
                    print(f"ray_scaling: round {r}: {name}: {seconds[name][-1]:.1f} s", file=sys.stderr)
            measured = sum(v.get("measured") is not None for c in json.loads(first)["results"].values()
                           for v in c.values())
        result = {"choice": inputs["record_name"], "rounds": a.rounds, "cores": os.cpu_count(),
                  "qemu_runs": f"{measured} candidates measured",
                  "configs": [{"name": name, "ray": bool(cpus), "workers": sum(cpus) if cpus else 2,
                               "median_s": round(statistics.median(seconds[name]), 2),
                               "seconds": [round(s, 2) for s in seconds[name]]} for name, cpus in CONFIGS]}
        write_together({ws / a.out_json: json.dumps(result, indent=1) + "\n", ws / a.out_md: markdown(result)})
    return cli.exit_code if cli.failed else 0


if __name__ == "__main__":
    sys.exit(main())
