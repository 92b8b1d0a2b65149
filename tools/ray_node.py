"""Starts a Ray node for measured choices on a cluster (issue 61; choice/ray_engine.py), with this
project's Python environment and modules, in the foreground until interrupted:

    tools/bazel run //tools:ray_node -- --head --port=6379 --node-ip-address=HOST   # the head
    tools/bazel run //tools:ray_node -- --address=HEAD:6379 --node-ip-address=HOST  # every other node
    tools/bazel run //tools:tune -- all --ray-address HEAD:6379                      # then measure

Every argument goes to `ray start --block`. A node must run the same checkout, built, at the same
path as the driver (a task's arguments are paths); choice.tune checks each node's toolchain
against its own before measuring and refuses one that differs.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "RAY_USAGE_STATS_ENABLED": "0"}
    os.execve(sys.executable, [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", *args], env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
