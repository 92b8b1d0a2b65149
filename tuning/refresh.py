"""Refreshes committed tuning records by measuring: `bazel run //tools:tune -- <target>...`.

    bazel run //tools:tune -- //models:mlp_batch32_riscv     # one pipeline's record
    bazel run //tools:tune -- all                             # every pipeline's

For each pipeline target //P:N (N = <pipeline>_riscv), builds //P:N_measured_analysis (the riscv
measured choice with records ignored: every shortlisted candidate compiled and run under qemu)
and copies its record into tuning/records/N.json of the workspace. A record is never written by
hand: review its diff (which figures moved, which key component changed) and commit it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from common.errors import OneLineErrors
from common.files import atomic_write
from perf.records import RecordError, dump_record, load_record

RECORDS_DIR = Path("tuning/records")
MEASURED_SUFFIX = "_measured_analysis"  # models/defs.bzl: the choice measured whatever the records say
_LABEL = re.compile(r"^//([A-Za-z0-9_/.-]*):([A-Za-z0-9_.-]+)$")


class RefreshError(RuntimeError):
    """A target cannot be refreshed; the message names it."""


def record_targets(workspace: Path, bazel: list[str], targets: list[str]) -> list[tuple[str, str]]:
    """(package, pipeline record name) per target; `all`: every measured choice that has a record
    name (bazel query)."""
    if targets == ["all"]:
        out = subprocess.run(bazel + ["query", "--output=label", f"attr(name, '.*{MEASURED_SUFFIX}$', //...)"],
                             cwd=workspace, capture_output=True, text=True)
        if out.returncode != 0:
            raise RefreshError(f"bazel query for the measured choices failed: {out.stderr.strip().splitlines()[-1:]}")
        targets = [line.removesuffix(MEASURED_SUFFIX) for line in out.stdout.split()]
    pairs = []
    for target in targets:
        m = _LABEL.match(target)
        if m is None:
            raise RefreshError(f"{target}: not a pipeline target's label (//models:<pipeline>_riscv) or `all`")
        pairs.append((m.group(1), m.group(2)))
    return pairs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:tune --", description=__doc__.split("\n")[0])
    p.add_argument("targets", nargs="+", help="//models:<pipeline>_riscv ..., or `all`")
    p.add_argument("--bazel", default="tools/bazel", help="the Bazel entry point, relative to the workspace")
    a = p.parse_args(argv)
    with OneLineErrors("tune", " ".join(a.targets), (RefreshError, RecordError)) as cli:
        ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        if not ws:
            raise RefreshError("BUILD_WORKSPACE_DIRECTORY is not set: run me with `bazel run //tools:tune -- ...`")
        workspace = Path(ws)
        bazel = [str(workspace / a.bazel)]
        pairs = record_targets(workspace, bazel, a.targets)
        labels = [f"//{pkg}:{name}{MEASURED_SUFFIX}" for pkg, name in pairs]
        print(f"tune: measuring {len(labels)} choice(s): {' '.join(labels)}", file=sys.stderr)
        # `bazel run` has released the server by now: a nested build is an ordinary one.
        if subprocess.run(bazel + ["build"] + labels, cwd=workspace).returncode != 0:
            raise RefreshError(f"bazel build {' '.join(labels)} failed (see above)")
        bin_dir = workspace / "bazel-bin"
        for (pkg, name), label in zip(pairs, labels):
            built = bin_dir / pkg / f"{name}{MEASURED_SUFFIX}.record.json"
            record = load_record(built)  # validated before it replaces a committed one
            text = dump_record(record)
            dest = workspace / RECORDS_DIR / f"{name}.json"
            old = dest.read_text() if dest.is_file() else None
            if old == text:
                print(f"tune: {RECORDS_DIR / dest.name}: unchanged")
                continue
            atomic_write(dest, text)
            measured = sum(r.measured is not None for c in record.results.values() for r in c.values())
            print(f"tune: {RECORDS_DIR / dest.name}: {'written' if old is None else 'refreshed'} "
                  f"({len(record.results)} dispatches, {measured} candidates measured)")
    return cli.exit_code if cli.failed else 0


if __name__ == "__main__":
    sys.exit(main())
