#!/usr/bin/env python3
"""The slowest actions and tests of the last Bazel command, from its JSON trace profile, so growth
is seen in every CI log (issue 76: the cold test grew from 547 s to 3,925 s unnoticed).

    python3 tools/ci/slowest.py "$(tools/bazel info output_base)/command.profile.gz" [--top 10]

Reads only what Bazel 4.2 writes by default (--generate_json_trace_profile): events of category
"action processing", one per executed action (cache hits execute nothing and are not listed).
Standard library only: CI runs it outside the project's Python environment.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path


def actions(profile: Path) -> list[tuple[float, str]]:
    """(seconds, description) of every executed action, slowest first."""
    opener = gzip.open if profile.suffix == ".gz" else open
    with opener(profile, "rt") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    out = [(e["dur"] / 1e6, e.get("name", "?")) for e in events
           if e.get("cat") == "action processing" and e.get("ph") == "X" and e.get("dur")]
    return sorted(out, key=lambda a: -a[0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("profile", type=Path)
    p.add_argument("--top", type=int, default=10)
    a = p.parse_args(argv)
    try:
        found = actions(a.profile)
    except (OSError, ValueError, KeyError, EOFError) as err:
        print(f"slowest: {a.profile}: not a Bazel JSON trace profile ({err})", file=sys.stderr)
        return 2
    tests = [x for x in found if x[1].startswith("Testing ")]
    others = [x for x in found if not x[1].startswith("Testing ")]
    total = sum(s for s, _ in found)
    print(f"slowest: {len(found)} actions executed, {total:.0f} s of action time "
          f"({sum(s for s, _ in tests):.0f} s in {len(tests)} tests)")
    for title, rows in (("tests", tests), ("other actions", others)):
        print(f"slowest {min(a.top, len(rows))} {title}:")
        for seconds, name in rows[:a.top]:
            print(f"  {seconds:7.1f} s  {name[:110]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
