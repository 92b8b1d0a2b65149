"""A local BuildGrid remote cache (CAS + action cache) for Bazel, on loopback by default.

    bazel run //tools/cache_server -- --port 50051 [--data-dir DIR] [--host 127.0.0.1]
    bazel build --config=remote_cache //models:resnet_riscv        # in another shell

Writes a BuildGrid config (one insecure gRPC channel, disk CAS, in-memory LRU
action cache, instance "" serving action-cache, cas and bytestream) into the
data directory and runs `bgd server start` from the locked BuildGrid
environment (@buildgrid_env, tools/cache_server/requirements.lock) until
SIGINT/SIGTERM. Without --data-dir the data lives in a temporary directory that
is removed on exit; with it, the CAS persists across restarts (the LRU action
cache is in memory and starts empty).

Runs under @buildgrid_env's interpreter; standard library only besides `bgd`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PORT = 50051

CONFIG = """\
# Written by tools/cache_server/server.py; a remote cache only (no execution).
server:
  - !channel
    address: {address}
    insecure-mode: true

storages:
  - !disk-storage &cas-storage
    path: {cas}

caches:
  - !lru-action-cache &action-cache
    storage: *cas-storage
    max-cached-refs: {max_refs}
    allow-updates: true
    cache-failed-actions: false

instances:
  - name: ""
    services:
      - !action-cache
        cache: *action-cache
      - !cas
        storage: *cas-storage
      - !bytestream
        storage: *cas-storage
"""


def _json_str(s: str) -> str:
    # A YAML double-quoted scalar; JSON's escaping is a subset of YAML's.
    import json
    return json.dumps(s)


def write_config(data_dir: Path, host: str, port: int, max_refs: int) -> Path:
    cas = data_dir / "cas"
    cas.mkdir(parents=True, exist_ok=True)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    config = data_dir / "cache.yml"
    config.write_text(CONFIG.format(address=_json_str(address), cas=_json_str(str(cas)),
                                    max_refs=max_refs))
    return config


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def bgd_path() -> Path:
    """venv/bin/bgd beside the locked interpreter this runs under.

    Its shebang names the venv's absolute path, so it is run through
    sys.executable rather than directly."""
    bgd = Path(sys.executable).with_name("bgd")
    if not bgd.is_file():
        raise SystemExit(f"cache_server: {bgd}: no `bgd` beside {sys.executable}; "
                         "run through `bazel run //tools/cache_server` (the @buildgrid_env interpreter)")
    return bgd


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools/cache_server --", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"gRPC port (default {DEFAULT_PORT})")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; there is no TLS or authentication, "
                        "so anything else exposes the cache to the network)")
    p.add_argument("--data-dir", type=Path,
                   help="keep the CAS and config here (default: a temporary directory removed on exit)")
    p.add_argument("--max-cached-refs", type=int, default=100_000,
                   help="action cache entries kept in memory (LRU; default 100000)")
    p.add_argument("--startup-timeout", type=float, default=120.0,
                   help="seconds to wait for the port to accept connections (default 120)")
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        print(f"cache_server: --port {args.port}: not a TCP port", file=sys.stderr)
        return 2
    if port_open(args.host, args.port):
        print(f"cache_server: {args.host}:{args.port}: something already listens there", file=sys.stderr)
        return 2

    bgd = bgd_path()
    if args.data_dir is not None:
        # `bazel run` starts us in the runfiles tree; relative paths mean the caller's directory.
        base = Path(os.environ.get("BUILD_WORKING_DIRECTORY", "."))
        data_dir, temporary = (base / args.data_dir).resolve(), False
    else:
        data_dir, temporary = Path(tempfile.mkdtemp(prefix="bgd-cache-")), True

    child: subprocess.Popen | None = None
    stopping = False

    def stop(signum, _frame):
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)

    try:
        config = write_config(data_dir, args.host, args.port, args.max_cached_refs)
        env = dict(os.environ, HOME=str(data_dir), PYTHONNOUSERSITE="1")
        child = subprocess.Popen([sys.executable, str(bgd), "server", "start", str(config)],
                                 cwd=data_dir, env=env)
        deadline = time.monotonic() + args.startup_timeout
        while not port_open(args.host, args.port):
            if child.poll() is not None:
                print(f"cache_server: bgd exited with {child.returncode} before listening "
                      f"(config {config})", file=sys.stderr)
                return 1
            if stopping:
                break
            if time.monotonic() > deadline:
                print(f"cache_server: bgd did not listen on {args.host}:{args.port} "
                      f"within {args.startup_timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.2)
        if not stopping:
            print(f"cache_server: serving grpc://{args.host}:{args.port} (data {data_dir}); "
                  f"build with --config=remote_cache --remote_cache=grpc://{args.host}:{args.port}",
                  file=sys.stderr, flush=True)
        while child.poll() is None:
            try:
                child.wait()
            except InterruptedError:
                pass
        return 0 if stopping else (child.returncode or 1)
    finally:
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
