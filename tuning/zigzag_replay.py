"""Recorded ZigZag runs replay in every zoo analysis (//tuning:zigzag_replay_test), and the tool
that records the missing ones (//tuning:record_zigzag). analysis/zigzag_results.py says how a run
is keyed and replayed.

    python -m tuning.zigzag_replay check LOG...                 # every entry replayed, none run
    python -m tuning.zigzag_replay record --results-dir DIR LOG...
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from analysis import zigzag_results

RESULTS_DIR = Path("analysis/zigzag_results")
RECORD_COMMAND = "tools/bazel run //tuning:record_zigzag"


def check(logs: list[Path]) -> int:
    """0 if no analysis ran ZigZag (all replayed); else one line per analysis that did."""
    live = used = 0
    for path in logs:
        data = zigzag_results.read_log(path)
        used += len(data["entries"])
        if data["live"]:
            live += len(data["live"])
            print(f"{path.name}: {len(data['live'])} of {len(data['entries'])} ZigZag runs not recorded "
                  f"({data['hardware']}), ran in the build")
    if live:
        print(f"{live} ZigZag runs were not replayed: `{RECORD_COMMAND}` records them "
              f"({RESULTS_DIR}/), then commit")
        return 1
    print(f"{len(logs)} analyses replayed all {used} of their ZigZag runs from {RESULTS_DIR}/")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tuning.zigzag_replay", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check")
    c.add_argument("logs", nargs="+", type=Path)
    r = sub.add_parser("record")
    r.add_argument("--results-dir", type=Path,
                   help=f"default: {RESULTS_DIR} of the workspace `bazel run` was started in")
    r.add_argument("logs", nargs="+", type=Path)
    args = p.parse_args(argv)
    logs = [path for path in args.logs if path.name.endswith(".zigzag.json")]
    try:
        if args.command == "check":
            return check(logs)
        results_dir = args.results_dir
        if results_dir is None:
            workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
            if not workspace:
                print("tuning.zigzag_replay record: no --results-dir and not under `bazel run`", file=sys.stderr)
                return 2
            results_dir = Path(workspace) / RESULTS_DIR
        # Every zoo analysis' log is given: a run none of them used is of a description or
        # workload since changed, and is dropped.
        changed = zigzag_results.merge(results_dir, logs, prune=True)
        for name, (added, removed) in changed.items():
            print(f"{results_dir / name}: {added} ZigZag runs added, {removed} no analysis used removed")
        if not changed:
            print(f"{len(logs)} analyses: every ZigZag run already recorded in {results_dir}")
        return 0
    except zigzag_results.ZigZagResultsError as err:
        print(f"tuning.zigzag_replay: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
