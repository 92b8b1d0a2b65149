"""Refreshes committed tuning and strategy records by measuring: `bazel run //tools:tune -- <target>...`.

    bazel run //tools:tune -- //models:mlp_batch32_riscv     # one pipeline target's records
    bazel run //tools:tune -- //models:resnet_host
    bazel run //tools:tune -- all                             # every one's
    bazel run //tools:tune -- all --ray-address HOST:PORT     # tile records measured on a Ray cluster
    bazel run //tools:tune -- all --in-build                  # measured by the build's own action
    bazel run //tools:tune -- //models:resnet_memory_sweep --stale-only --run-cache ~/.cache/tune_runs

For each pipeline target //P:N (N = <pipeline>_<target>): if it has a measured tile choice, builds
//P:N_choice_inputs and runs the choice.tune command //P:N_measured_analysis runs (records
ignored: every shortlisted candidate compiled and run under qemu) outside Bazel, from the execution
root, every qemu run a task on a Ray instance of this machine's own (the default, `--ray-address
local`) or on the cluster at `--ray-address` (choice/ray_engine.py), and copies its record into
tuning/records/N.json (with `--in-build`, builds //P:N_measured_analysis instead and copies the
record it wrote: the same bytes); then, if its build is a `strategy = "auto"`
choice, builds //P:N_strategy_refresh (every strategy compiled and priced, riscv confirmed under
qemu) and copies its record into tuning/strategies/N.json, and rewrites
tuning/strategies/recorded.bzl from the committed strategy records. Tiles first: the tuned build a
strategy choice compares is compiled with the refreshed tile choice. A pipeline that ships a tiled
strategy (common/targets.py TILED_STRATEGIES) has that strategy's own tile choice too,
//P:N_<strategy>_measured_analysis, recorded as tuning/records/N_<strategy>.json; when the
strategy records change which one ships, its tiles are measured and that strategy choice made
again, and the tile record of a strategy no longer shipped is deleted. A record is never written
by hand: review its diff (which figures moved, which key component changed) and commit it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from common.errors import OneLineErrors
from common.files import atomic_write
from common.scratch import scratch_directory
from common.targets import TILED_STRATEGIES
from choice.ray_engine import LOCAL, choice_tune_command
from choice.records import RecordError, dump_record, dump_strategy_record, load_record, load_strategy_record
from tuning.strategy_records import recorded_bzl

RECORDS_DIR = Path("tuning/records")
SWEEP_RECORDS_DIR = RECORDS_DIR / "sweeps"  # hardware_sweep variants' records (models/defs.bzl)
# models/defs.bzl tags a hardware_sweep variant's measuring targets `sweep`: `all` means the zoo's
# pipelines, a sweep's label its variants, and their records go to SWEEP_RECORDS_DIR.
SWEEP_TAGGED = "attr(tags, '[\\[ ]sweep[,\\]]', {})"
STRATEGIES_DIR = Path("tuning/strategies")
MEASURED_SUFFIX = "_measured_analysis"  # models/defs.bzl: the choice measured whatever the records say
STRATEGY_SUFFIX = "_strategy_refresh"  # models/defs.bzl: the strategy choice, every candidate built
CHOICE_INPUTS_SUFFIX = "_choice_inputs"  # models/defs.bzl: what the measured choice hands choice.tune
_LABEL = re.compile(r"^//([A-Za-z0-9_/.-]*):([A-Za-z0-9_.-]+)$")


class RefreshError(RuntimeError):
    """A target cannot be refreshed; the message names it."""


def record_targets(workspace: Path, bazel: list[str], targets: list[str]) -> list[tuple[str, str, str]]:
    """(package, pipeline target name, measuring suffix) of every record of `targets`; `all`: of
    every pipeline target of the zoo; a hardware_sweep's label: of each of its variants (bazel
    query for the measuring targets)."""
    scopes = [("all", "//...", ".*")] if targets == ["all"] else []
    for target in targets if targets != ["all"] else []:
        m = _LABEL.match(target)
        if m is None:
            shown = target if target.isprintable() else repr(target)  # an escape sequence printed raw (issue 80)
            raise RefreshError(f"{shown}: not a pipeline target's label (//models:<pipeline>_<target>) or `all`")
        scopes.append((target, f"//{m.group(1)}:all", re.escape(m.group(2))))
    pairs = []
    for target, scope, name in scopes:
        # A pipeline target's own choices, and the tile choice of the tiled strategy it ships.
        tiled = "|".join(TILED_STRATEGIES)
        query = f"attr(name, '^{name}((_({tiled}))?{MEASURED_SUFFIX}|{STRATEGY_SUFFIX})$', {scope})"
        if target == "all":
            query += " except " + SWEEP_TAGGED.format(scope)
        found = _measuring_targets(workspace, bazel, target, query)
        if not found and target != "all":  # a sweep: its variants' measured choices
            found = _measuring_targets(workspace, bazel, target, SWEEP_TAGGED.format(
                f"attr(name, '^{name}_.+{MEASURED_SUFFIX}$', {scope})"))
        if not found and target != "all":
            exists = subprocess.run(bazel + ["query", "--output=label", target], cwd=workspace,
                                    capture_output=True, text=True)
            if exists.returncode != 0:
                said = next((line.split("ERROR: ", 1)[1] for line in exists.stderr.splitlines() if "ERROR: " in line),
                            "no message")
                raise RefreshError(f"{target}: no such target (bazel query: {said})")
        if not found:
            raise RefreshError(f"{target}: has neither a measured tile choice nor a strategy choice to record")
        pairs += found
    # Tile records first: the strategy choices compile the tuned build from them.
    return sorted(set(pairs), key=lambda p: (p[2] != MEASURED_SUFFIX, p[0], p[1]))


def _measuring_targets(workspace: Path, bazel: list[str], target: str, query: str) -> list[tuple[str, str, str]]:
    out = subprocess.run(bazel + ["query", "--output=label", query], cwd=workspace, capture_output=True, text=True)
    if out.returncode != 0:
        raise RefreshError(f"bazel query for {target}'s measuring targets failed: "
                           f"{out.stderr.strip().splitlines()[-1:]}")
    found = []
    for line in out.stdout.split():
        lm = _LABEL.match(line)
        suffix = MEASURED_SUFFIX if line.endswith(MEASURED_SUFFIX) else STRATEGY_SUFFIX
        found.append((lm.group(1), lm.group(2).removesuffix(suffix), suffix))
    return found


def _sweep_variants(workspace: Path, bazel: list[str], pairs: list[tuple[str, str]]) -> set[str]:
    """The record names among `pairs` (package, name) that are hardware_sweep variants'."""
    labels = " + ".join(f"//{pkg}:{name}{MEASURED_SUFFIX}" for pkg, name in pairs)
    return {name for _, name, _ in _measuring_targets(workspace, bazel, "the sweeps", SWEEP_TAGGED.format(labels))}


def _build(workspace: Path, bazel: list[str], labels: list[str]) -> None:
    print(f"tune: measuring {len(labels)} choice(s): {' '.join(labels)}", file=sys.stderr)
    # `bazel run` has released the server by now: a nested build is an ordinary one.
    if subprocess.run(bazel + ["build"] + labels, cwd=workspace).returncode != 0:
        raise RefreshError(f"bazel build {' '.join(labels)} failed (see above)")


def _execution_root(workspace: Path, bazel: list[str]) -> Path:
    out = subprocess.run(bazel + ["info", "execution_root"], cwd=workspace, capture_output=True, text=True)
    if out.returncode != 0:
        raise RefreshError(f"bazel info execution_root failed: {out.stderr.strip().splitlines()[-1:]}")
    return Path(out.stdout.strip())


def _tune_on_ray(inputs_json: Path, execroot: Path, address: str, out: Path, run_cache: Path,
                 record: Path | None = None) -> Path:
    """Runs the measured choice `inputs_json` describes (choice:defs.bzl choice_inputs: what
    measured_choice runs) from the execution root with --ray-address, writing into `out`;
    returns the record it wrote. `run_cache`: this refresh's qemu runs, shared by its choices
    (perf/run_cache.py). `record`: the committed one, replayed if its key is the tree's."""
    i = json.loads(inputs_json.read_text())
    files = {k: execroot / v["path"] for k, v in i["files"].items()}
    where = "a Ray instance of this machine's own" if address == LOCAL else f"the Ray cluster at {address}"
    print(f"tune: measuring {i['record_name']} on {where}", file=sys.stderr)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    if subprocess.run(choice_tune_command(i, files, out, address, run_cache, record), cwd=execroot, env=env).returncode != 0:
        raise RefreshError(f"choice.tune for {i['record_name']} on {address} failed (see above)")
    return out / "record.json"


def _commit(dest: Path, text: str, what: str) -> bool:
    """Writes `text` to `dest` unless it holds it already; whether it wrote."""
    old = dest.read_text() if dest.is_file() else None
    if old == text:
        print(f"tune: {dest.parent.name}/{dest.name}: unchanged")
        return False
    atomic_write(dest, text)
    print(f"tune: {dest.parent.name}/{dest.name}: {'written' if old is None else 'refreshed'} ({what})")
    return True


def _refresh(workspace: Path, bazel: list[str], found: list[tuple[str, str, str]], kinds: tuple[str, ...],
             ray_address: str | None, stale_only: bool = False, run_cache: Path | None = None) -> bool:
    """Measures and commits the records of `found` (record_targets' triples) of `kinds`; whether
    tuning/strategies/recorded.bzl changed. On Ray, the tile choices share one directory of qemu
    runs (perf/run_cache.py): a sweep's variants that differ only in how they price a run's
    counts (DRAM bandwidth) run it once. `stale_only`: a record whose key is the tree's is kept
    (replayed, the same bytes): an interrupted refresh resumes where it stopped. `run_cache`: the
    directory of qemu runs to share, kept across refreshes (a resumed sweep's DRAM-8 variant still
    finds its DRAM-2 twin's runs); default, a scratch directory of this refresh."""
    bin_dir = workspace / "bazel-bin"
    recorded_changed = False
    if run_cache is not None:
        run_cache.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(str(run_cache)) if run_cache is not None else scratch_directory("tune_runs_")) as runs:
        for suffix in kinds:
            pairs = [(pkg, name) for pkg, name, s in found if s == suffix]
            if not pairs:
                continue
            sweeps = _sweep_variants(workspace, bazel, pairs) if suffix == MEASURED_SUFFIX else set()
            if suffix == MEASURED_SUFFIX and ray_address:
                _build(workspace, bazel, [f"//{pkg}:{name}{CHOICE_INPUTS_SUFFIX}" for pkg, name in pairs])
                execroot = _execution_root(workspace, bazel)
            elif suffix == STRATEGY_SUFFIX and stale_only:  # the shipped choice: replayed where its key matches
                _build(workspace, bazel, [f"//{pkg}:{name}" for pkg, name in pairs])
            else:
                _build(workspace, bazel, [f"//{pkg}:{name}{suffix}" for pkg, name in pairs])
            for pkg, name in pairs:
                if suffix == MEASURED_SUFFIX:
                    records_dir = SWEEP_RECORDS_DIR if name in sweeps else RECORDS_DIR
                    committed = workspace / records_dir / f"{name}.json"
                    if ray_address:
                        with scratch_directory("tune_ray_") as tmp:
                            record = load_record(_tune_on_ray(
                                bin_dir / pkg / f"{name}{CHOICE_INPUTS_SUFFIX}.json", execroot, ray_address,
                                Path(tmp), Path(runs), committed if stale_only and committed.is_file() else None))
                    else:
                        record = load_record(bin_dir / pkg / f"{name}{suffix}.record.json")  # validated first
                    measured = sum(r.measured is not None for c in record.results.values() for r in c.values())
                    _commit(committed, dump_record(record),
                            f"{len(record.results)} dispatches, {measured} candidates measured")
                else:
                    built = f"{name}.strategy_record.json" if stale_only else f"{name}{suffix}.strategy_record.json"
                    strategy = load_strategy_record(bin_dir / pkg / built)
                    _commit(workspace / STRATEGIES_DIR / f"{name}.json", dump_strategy_record(strategy),
                            f"chose {strategy.choice['chosen']}")
            if suffix == STRATEGY_SUFFIX:
                committed = sorted((workspace / STRATEGIES_DIR).glob("*.json"))
                recorded_changed = _commit(workspace / STRATEGIES_DIR / "recorded.bzl", recorded_bzl(committed),
                                           f"{len(committed)} strategy records")
    return recorded_changed


def _strategy_tile_owner(name: str, pipelines: set[str]) -> str | None:
    """The pipeline target (<pipeline>_<target>) whose tiled strategy's own tile choice `name`
    records (<pipeline>_<target>_<strategy>, models/defs.bzl strategy_tile_names), if any."""
    owners = [p for p in pipelines if name.startswith(p + "_") and name.removeprefix(p + "_") in TILED_STRATEGIES]
    return max(owners, key=len) if owners else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:tune --", description=__doc__.split("\n")[0])
    p.add_argument("targets", nargs="+", help="//models:<pipeline>_<target> ..., or `all`")
    p.add_argument("--only", choices=("tiles", "strategies"),
                   help="refresh only the tile (tuning/records) or only the strategy (tuning/strategies) records")
    p.add_argument("--bazel", default="tools/bazel", help="the Bazel entry point, relative to the workspace")
    p.add_argument("--ray-address", metavar="HOST:PORT", default="local",
                   help="measure the tile records' candidates on the Ray cluster whose head is here, or "
                        "`local` (the default): on a Ray instance of this machine's own (choice/ray_engine.py); "
                        "the strategy records are measured by the build")
    p.add_argument("--in-build", action="store_true",
                   help="measure the tile records in the build's own measured-choice actions, without Ray")
    p.add_argument("--stale-only", action="store_true",
                   help="keep every record whose key is the tree's (replayed, nothing measured) and measure the "
                        "others: resumes an interrupted refresh (e.g. a sweep's, variant by variant)")
    p.add_argument("--run-cache", type=Path, metavar="DIR",
                   help="keep the tile choices' qemu runs in DIR across refreshes (perf/run_cache.py: a run is "
                        "keyed by every file and figure it depends on), so a resumed sweep still shares its "
                        "variants' runs; default: a scratch directory of this refresh")
    a = p.parse_args(argv)
    if a.in_build and a.run_cache is not None:
        p.error("--run-cache holds the runs of Ray's path; the build's own choices share none")
    if a.in_build:
        a.ray_address = None
    if a.in_build and a.stale_only:
        p.error("--stale-only replays committed tile records on Ray's path; the build's own choice "
                "already replays them (build //<package>:<name>_analysis)")
    with OneLineErrors("tune", " ".join(a.targets), (RefreshError, RecordError)) as cli:
        ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        if not ws:
            raise RefreshError("BUILD_WORKSPACE_DIRECTORY is not set: run me with `bazel run //tools:tune -- ...`")
        workspace = Path(ws)
        bazel = [str(workspace / a.bazel)]
        if not (os.path.isfile(bazel[0]) and os.access(bazel[0], os.X_OK)):  # was a FileNotFoundError blamed on the targets
            raise RefreshError(f"--bazel {a.bazel}: {bazel[0]} is not an executable file (the Bazel entry point, "
                               "relative to the workspace)")
        if a.run_cache is not None:  # relative to where `bazel run` was started, not to the runfiles
            a.run_cache = Path(os.environ.get("BUILD_WORKING_DIRECTORY", ".")) / a.run_cache.expanduser()
            if a.run_cache.exists() and not a.run_cache.is_dir():
                raise RefreshError(f"--run-cache {a.run_cache}: exists and is not a directory")
        found = record_targets(workspace, bazel, a.targets)
        kinds = {"tiles": (MEASURED_SUFFIX,), "strategies": (STRATEGY_SUFFIX,)}.get(a.only, (MEASURED_SUFFIX, STRATEGY_SUFFIX))
        changed = _refresh(workspace, bazel, found, kinds, a.ray_address, a.stale_only, a.run_cache)
        # A strategy choice that now records a tiled strategy (TILED_STRATEGIES) makes its own
        # tile choice appear: measure it, then that pipeline's strategy choice again (its
        # candidate is now the tiled build). Twice at most: a choice that keeps moving is a bug.
        for _ in range(2):
            if not changed or a.only is not None:
                break
            again = record_targets(workspace, bazel, a.targets)
            new = [t for t in again if t not in found]
            found = sorted(set(found) | set(again), key=lambda t: (t[2] != MEASURED_SUFFIX, t[0], t[1]))
            pipelines = {name for _, name, s in again if s == STRATEGY_SUFFIX}
            owners = {_strategy_tile_owner(name, pipelines) for _, name, s in new if s == MEASURED_SUFFIX}
            if not new:
                break
            print(f"tune: the strategy records now ship {len(new)} tiled strategies' builds: measuring their tiles",
                  file=sys.stderr)
            changed = _refresh(workspace, bazel, [t for t in new if t[2] == MEASURED_SUFFIX] + [
                t for t in again if t[2] == STRATEGY_SUFFIX and t[1] in owners], kinds, a.ray_address, a.stale_only,
                a.run_cache)
        if a.only != "strategies":
            # The tile records of tiled strategies no refreshed pipeline ships any more.
            final = record_targets(workspace, bazel, a.targets)
            keep = {name for _, name, s in final if s == MEASURED_SUFFIX}
            pipelines = {name for _, name, s in final if s == STRATEGY_SUFFIX}
            for record in sorted((workspace / RECORDS_DIR).glob("*.json")):
                if record.stem not in keep and _strategy_tile_owner(record.stem, pipelines) is not None:
                    record.unlink()
                    print(f"tune: {RECORDS_DIR.name}/{record.name}: deleted (its pipeline ships another strategy)")
    return cli.exit_code if cli.failed else 0


if __name__ == "__main__":
    sys.exit(main())
