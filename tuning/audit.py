"""Audits the committed records against the decision code and a fresh measurement (issue 80).

    tools/bazel run //tools:audit --                      # sample seeded by the workspace's HEAD
    tools/bazel run //tools:audit -- --seed 17 --tile-dispatches 3 --strategy-figures 3

A record's seal (choice/records.py) only proves that the file is as a tool wrote it: anyone can
re-seal a forged record with the project's own `dump_record`, and the records checks then say it
matches the tree. What ships must follow from measurements, so this tool checks what records
claim against what decides and what measures:

1. Every strategy record's choice (`chosen`, its reason, what was confirmed) is re-derived from
   the figures the record claims, through the decision code that made it
   (choice.choose.decide_by_code, confirm_by_measurement). A choice that does not follow from its
   own figures is refused. Nothing is measured; every record is checked.
2. `--tile-dispatches` K dispatches of the tile records, sampled by the seed among those whose
   choice was measured (half uniformly, half weighted by the cycles the choice puts at stake): every measured candidate of each (model and memory-aware cycles, energy,
   traffic) is compiled and run under qemu as the measured choice runs it
   (choice.rounds.MeasureRound, no run cache: the runs are fresh), and every figure must be the
   record's exactly (the measurement is deterministic: //tuning:reproduce_test). Whichever
   figure a forger moved to change a dispatch's choice is among them.
3. `--strategy-figures` S figures of the strategy records, sampled by the seed: a `measured` one
   (one call of a whole build under qemu: that build's perf report, which Bazel builds from the
   build itself) or a code-model one (the build's code priced again by perf.code_model).

The seed defaults to the workspace's HEAD commit, so every commit audits another sample and, over
commits, every record; CI (.ci/run) runs it. A record the sample finds wrong fails the run with one
line per figure naming the record, the dispatch or build, the figure, what the record claims and
what was measured, and the command that refreshes the record.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import types
from pathlib import Path

from common.errors import OneLineErrors, first_line
from common.files import InputError, read_json_text
from common.analysis_schema import Analysis
from common.perf_schema import PerfReport
from common.scratch import scratch_directory
from common.targets import DEFAULT_STRATEGY, TUNED
from common.tuning_schema import StrategyRecord, TuningRecord
from perf import mca
from choice.choose import ChoiceError, Measured as BuildMeasured, confirm_by_measurement, decide_by_code
from choice.records import RecordError, load_record, load_strategy_record
from choice import records
from choice.tune import DEFAULT, forced_analysis, round_assignments, round_todo, shortlist, with_code_results

RECORDS_DIR = Path("tuning/records")
STRATEGIES_DIR = Path("tuning/strategies")
PACKAGE = "models"  # the zoo's package: //models:<record name>_choice_inputs, its builds' perf and compiles
TILE_FIELDS = ("model_cycles", "memory_aware_cycles", "energy_pj", "traffic_bytes")
_BY = re.compile(r"code-model cycles on (?P<core>\S+) \((?P<hardware>[^)]+)\)$")


class AuditError(RuntimeError):
    """The audit cannot run (a record unreadable, a build failing); the message names it."""


def build_suffix(strategy: str) -> str:
    """What follows <pipeline>_<target> in the names of a strategy's build (models/defs.bzl
    _build_suffix): the tuned build has none, IREE's default is `_iree_default`."""
    return {TUNED: "", DEFAULT_STRATEGY: "_iree_default"}.get(strategy, "_" + strategy)


def tile_claims(records: dict[str, TuningRecord]) -> list[tuple[str, str]]:
    """(record, dispatch) of every dispatch whose choice the tile records decided by measuring
    (two or more candidates measured), sorted."""
    return sorted((name, d) for name, r in records.items() for d, results in r.results.items()
                  if sum(result.measured is not None for result in results.values()) >= 2)


def strategy_claims(records: dict[str, StrategyRecord]) -> list[tuple[str, str, str]]:
    """(record, "measured" | "code", strategy) of every figure the strategy records claim, sorted."""
    return sorted([(name, "measured", s) for name, r in records.items() for s in r.choice.get("measured", {})]
                  + [(name, "code", s) for name, r in records.items() for s in r.choice.get("candidates", {})])


def sample(claims: list, k: int, seed: str) -> list:
    """`k` of `claims` (all when fewer), the same for the same seed and claims."""
    return sorted(random.Random(seed).sample(claims, min(k, len(claims))))


def stakes(records: dict[str, TuningRecord], claims: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """What each (record, dispatch) choice puts at stake: the memory-aware cycles of its IREE default
    as measured (the largest measured candidate's where the default has none)."""
    out = {}
    for name, d in claims:
        results = records[name].results[d]
        default = results.get(DEFAULT)
        figures = [r.measured.memory_aware_cycles for r in results.values() if r.measured is not None]
        out[(name, d)] = float(default.measured.memory_aware_cycles if default is not None
                               and default.measured is not None else max(figures))
    return out


def tile_sample(records: dict[str, TuningRecord], k: int, seed: str) -> list[tuple[str, str]]:
    """`k` measured tile choices: half uniformly (so that, over commits, every one is audited), half
    weighted by what it puts at stake (`stakes`: a forged figure of a big dispatch moves the most
    cycles, so it is found sooner), by the weighted sampling of Efraimidis and Spirakis."""
    claims = tile_claims(records)
    uniform = sample(claims, (k + 1) // 2, f"tiles:{seed}")
    rest = [c for c in claims if c not in uniform]
    weight = stakes(records, rest)
    rng = random.Random(f"stakes:{seed}")
    keyed = sorted(rest, key=lambda c: rng.random() ** (1.0 / max(weight[c], 1.0)), reverse=True)
    return sorted(uniform + keyed[:k // 2])


def rederived_choice(record: StrategyRecord) -> dict:
    """The choice the decision code makes from the figures `record` claims: its code-model
    figures through decide_by_code, then (a confirmed choice) its measured ones through
    confirm_by_measurement. Equal to the record's `choice` unless the figures or the choice
    were edited."""
    choice = record.choice
    m = _BY.search(choice.get("by", ""))
    if m is None:
        raise AuditError(f"{record.pipeline}: choice.by {choice.get('by')!r} names no core: not a code-model choice")
    order = [c.strategy for c in record.key.candidates]
    chosen, derived = decide_by_code(dict(choice.get("candidates", {})), dict(choice.get("excluded", {})), order,
                                     m["core"], m["hardware"], choice.get("margin", 0.0))
    if not record.key.confirmed:
        return derived
    cycles, energy = choice.get("measured", {}), choice.get("measured_energy_pj", {})

    def measure(strategy: str) -> BuildMeasured:
        if strategy not in cycles or strategy not in energy:
            raise ChoiceError(f"{strategy}: no measured figure in the record")
        return BuildMeasured(cycles[strategy], energy[strategy])

    confirm_by_measurement(chosen, derived, {s: s for s in order}, lambda: DEFAULT_STRATEGY, measure)
    return derived


def choice_problems(record: StrategyRecord, path: Path) -> list[str]:
    """One line per field of `record`'s choice that does not follow from its own figures."""
    try:
        derived = rederived_choice(record)
    except ChoiceError as err:
        return [f"{path}: its choice cannot be re-derived from its figures ({first_line(err)}); "
                f"`{record.refresh}` refreshes it"]
    return [f"{path}: choice.{k} is {record.choice.get(k)!r} but its figures give {derived.get(k)!r}; "
            f"`{record.refresh}` refreshes it"
            for k in sorted(set(record.choice) | set(derived)) if record.choice.get(k) != derived.get(k)]


def tile_problems(record: TuningRecord, path: Path, dispatch: str, candidate: str, measured) -> list[str]:
    """One line per figure of (dispatch, candidate) the fresh `measured` (choice.rounds.Measured,
    None: nothing measured) does not reproduce."""
    claimed = record.results[dispatch][candidate].measured
    where = f"{path}: {dispatch} {candidate}"
    if measured is None:
        return [f"{where}: not measured again (no model cycles); `{record.refresh}` refreshes it"]
    return [f"{where}: {f} {getattr(claimed, f)} in the record, {getattr(measured, f)} measured; "
            f"`{record.refresh}` refreshes it" for f in TILE_FIELDS if getattr(claimed, f) != getattr(measured, f)]


def _bazel(workspace: Path, bazel: list[str], *args: str) -> str:
    out = subprocess.run(bazel + list(args), cwd=workspace, capture_output=True, text=True)
    if out.returncode != 0:
        said = [line for line in out.stderr.splitlines() if "ERROR" in line][:1] or out.stderr.splitlines()[-1:]
        raise AuditError(f"bazel {' '.join(args[:2])} ... failed: {' '.join(said)}")
    return out.stdout.strip()


def _load_all(directory: Path, loader, what: str) -> dict:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise AuditError(f"{directory}: no {what} records")
    return {p.stem: loader(p) for p in paths}


def tune_rounds(analysis: Analysis, record: TuningRecord, size: int, code_ranked: int) -> list[tuple[dict, dict]]:
    """The rounds choice.tune.tune measured `record`'s figures in, as (what every dispatch was
    compiled with, the candidates measured): a dispatch's figures depend on the whole module's
    code (its buffers' and its code's addresses move with the other dispatches'), so a figure is
    reproduced only in its own round. A candidate the record says failed is left out of its round,
    as tune's bisection sets a failing candidate apart."""
    if code_ranked:
        analysis = with_code_results(analysis, *records.code_results(record))
    base = analysis.model_dump(mode="json")
    _, failed = records.measurements(record)
    choices = {d["name"] for d in base["dispatches"] if len(shortlist(d, size)) > 1} - {d for d, c in failed if c == DEFAULT}
    seen: set[tuple[str, str]] = set()
    rounds = []
    for j, assign in enumerate(round_assignments(base, size)):
        todo = {d: c for d, c in round_todo(assign, j, choices, seen).items() if (d, c) not in failed}
        seen |= set(todo.items())
        if todo:
            rounds.append(({**{d: DEFAULT for d in assign}, **todo}, todo))
    return rounds


def measure_claims(name: str, record: TuningRecord, inputs: dict, files: dict[str, Path],
                   pairs: list[tuple[str, str]], jobs: int) -> tuple[list[str], int]:
    """(problems, figures compared): each (dispatch, candidate) of `record` measured again as the
    measured choice `inputs` (choice:defs.bzl choice_inputs, its `files` resolved) measured it: in
    its own round (tune_rounds), one compile per round."""
    from choice.rounds import MeasureRound  # compiles and runs: only when a figure is measured

    mca.use_llvm_bin(Path(files["llvm_mca"]).parent)  # the measured choice's own (choice.tune --llvm-bin)
    analysis = Analysis.model_validate_json(read_json_text(files["analysis"], "an analysis"))
    rounds = tune_rounds(analysis, record, record.key.candidates_per_dispatch, record.key.code_ranked)
    base = analysis.model_dump(mode="json")
    wanted = set(pairs)
    problems, compared = [], 0
    with scratch_directory("audit_") as work:
        measure_round = MeasureRound(files["module"], files["target"], files["hardware"], files["runner"],
                                     files["plugin"], files["qemu"], inputs["model_name"], jobs, Path(work))
        for j, (assign, todo) in enumerate(rounds):
            group = {d: c for d, c in todo.items() if (d, c) in wanted}
            if not group:
                continue
            wanted -= set(group.items())
            print(f"audit: measuring {name} (round {j}): {', '.join(f'{d} {c}' for d, c in sorted(group.items()))}",
                  file=sys.stderr)
            measured = measure_round(forced_analysis(base, assign, "audit of the committed record"), set(group),
                                     f"audit{j}")
            for d, c in sorted(group.items()):
                found = tile_problems(record, RECORDS_DIR / f"{name}.json", d, c, measured.get(d))
                problems += found
                compared += 1
                print(f"audit: {name} {d} {c}: " + ("DIFFERS" if found else "every figure equal"))
    problems += [f"{RECORDS_DIR / f'{name}.json'}: {d} {c}: measured in no round of the choice the tree makes; "
                 f"`{record.refresh}` refreshes it" for d, c in sorted(wanted)]
    return problems, compared


def audit_tiles(workspace: Path, bazel: list[str], records: dict[str, TuningRecord],
                picks: list[tuple[str, str]], jobs: int) -> tuple[list[str], int]:
    """(problems, figures compared): every measured candidate of each picked (record, dispatch)
    measured again: whichever figure a forger moved to change what ships, it is among them."""
    names = sorted({name for name, _ in picks})
    _bazel(workspace, bazel, "build", *[f"//{PACKAGE}:{name}_choice_inputs" for name in names])
    execroot = Path(_bazel(workspace, bazel, "info", "execution_root"))
    problems, compared = [], 0
    for name in names:
        inputs = json.loads((workspace / "bazel-bin" / PACKAGE / f"{name}_choice_inputs.json").read_text())
        files = {k: execroot / v["path"] for k, v in inputs["files"].items()}
        pairs = [(d, c) for n, d in picks if n == name
                 for c, result in records[name].results[d].items() if result.measured is not None]
        found, n = measure_claims(name, records[name], inputs, files, pairs, jobs)
        problems, compared = problems + found, compared + n
    return problems, compared


def strategy_figure(record: StrategyRecord, kind: str, strategy: str, bin_dir: Path) -> dict[str, int]:
    """The figures of `strategy`'s build as its record's choice holds them, from the build in
    `bin_dir`: `measured` (and its energy) from the build's perf report, `code` (`candidates`)
    from its code priced again."""
    stem = f"{record.pipeline}{build_suffix(strategy)}"
    if kind == "measured":
        perf = bin_dir / f"{stem}_perf.perf.json"
        report = PerfReport.model_validate_json(read_json_text(perf, "a perf report"))
        runs = [r for r in report.runs if r.hardware == record.key.hardware]
        if len(runs) != 1 or runs[0].inference_memory_aware_cycles is None or runs[0].inference_energy_pj is None:
            raise AuditError(f"{perf}: no memory-aware run on {record.key.hardware}, the record's hardware")
        return {"measured": round(runs[0].inference_memory_aware_cycles),
                "measured_energy_pj": round(runs[0].inference_energy_pj)}
    from perf.code_model.cost import code_call_cycles  # prices code: only when a figure is audited
    from codegen.compile import TARGETS_IR

    code = bin_dir / f"{stem}_compiled.code"
    built = json.loads(read_json_text(bin_dir / f"{stem}_compiled.report.json", "a compile report"))
    # The build's own report says what it was compiled for (triple, cpu and its features).
    target = types.SimpleNamespace(triple=built["triple"], cpu=built["cpu"], cpu_features=built["cpu_features"])
    with scratch_directory("audit_code_") as work:
        costed = code_call_cycles(code / TARGETS_IR, code, target, _BY.search(record.choice["by"])["core"], Path(work))
    if costed.errors:
        raise AuditError(f"{code}: {len(costed.errors)} dispatch(es) not costable, yet the record priced it")
    return {"candidates": round(costed.model_cycles())}


def strategy_figure_problems(record: StrategyRecord, path: Path, strategy: str, got: dict[str, int]) -> list[str]:
    """One line per figure of `strategy` in `record`'s choice that is not `got`'s."""
    return [f"{path}: {strategy}'s {field} {record.choice[field][strategy]} in the record, {value} measured; "
            f"`{record.refresh}` refreshes it" for field, value in got.items()
            if record.choice[field][strategy] != value]


def audit_strategy_figures(workspace: Path, bazel: list[str], records: dict[str, StrategyRecord],
                           picks: list[tuple[str, str, str]]) -> tuple[list[str], int]:
    """(problems, figures compared): each picked `measured` figure from its build's perf report,
    each `code` figure from its build's code priced again (both built by Bazel from the build)."""
    _bazel(workspace, bazel, "build", *[f"//{PACKAGE}:{name}{build_suffix(s)}_"
                                        f"{'perf' if kind == 'measured' else 'compiled'}" for name, kind, s in picks])
    problems = []
    for name, kind, strategy in picks:
        got = strategy_figure(records[name], kind, strategy, workspace / "bazel-bin" / PACKAGE)
        found = strategy_figure_problems(records[name], STRATEGIES_DIR / f"{name}.json", strategy, got)
        problems += found
        print(f"audit: {name} {strategy} ({kind}): " + ("DIFFERS" if found else "equal"))
    return problems, len(picks)


def _head(workspace: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True)
    if out.returncode != 0:
        raise AuditError(f"{workspace}: not a git checkout (git rev-parse HEAD: {first_line(out.stderr)}): give --seed")
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:audit --", description=__doc__.split("\n")[0])
    p.add_argument("--seed", help="what the sample is drawn by (default: the workspace's HEAD commit)")
    p.add_argument("--tile-dispatches", type=int, default=2,
                   help="tile-record dispatches whose every measured candidate is measured again (default 2)")
    p.add_argument("--strategy-figures", type=int, default=2,
                   help="strategy-record figures measured or priced again (default 2)")
    p.add_argument("--jobs", type=int, default=2, help="qemu processes at once")
    p.add_argument("--bazel", default="tools/bazel", help="the Bazel entry point, relative to the workspace")
    mca.add_llvm_bin_argument(p, required=False, default=mca.runfiles_llvm_bin())  # code figures
    a = p.parse_args(argv)
    if a.tile_dispatches < 0 or a.strategy_figures < 0 or a.jobs < 1:
        p.error("--tile-dispatches and --strategy-figures must be >= 0, --jobs >= 1")
    with OneLineErrors("audit", "the committed records", (AuditError, RecordError, InputError, ChoiceError)) as cli:
        ws = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        if not ws:
            raise AuditError("BUILD_WORKSPACE_DIRECTORY is not set: run me with `bazel run //tools:audit -- ...`")
        workspace = Path(ws)
        bazel = [str(workspace / a.bazel)]
        mca.use_llvm_bin(a.llvm_bin)
        seed = a.seed if a.seed is not None else _head(workspace)
        tiles = _load_all(workspace / RECORDS_DIR, load_record, "tile")
        strategies = _load_all(workspace / STRATEGIES_DIR, load_strategy_record, "strategy")
        problems = [line for name, r in strategies.items() for line in choice_problems(r, STRATEGIES_DIR / f"{name}.json")]
        print(f"audit: {len(strategies)} strategy records' choices re-derived from their figures: "
              f"{'all follow' if not problems else f'{len(problems)} fields do not'}")
        tile_picks = tile_sample(tiles, a.tile_dispatches, seed)
        claims = strategy_claims(strategies)
        measured = [c for c in claims if c[1] == "measured"]
        code = [c for c in claims if c[1] == "code" and c[2] in
                {x.strategy for x in strategies[c[0]].key.candidates}]
        # Half the strategy figures from measurements, half from code prices (seeded apart).
        strategy_picks = (sample(measured, (a.strategy_figures + 1) // 2, f"measured:{seed}")
                          + sample(code, a.strategy_figures // 2, f"code:{seed}"))
        print(f"audit: seed {seed}: {len(tile_picks)} of {len(tile_claims(tiles))} measured tile choices, "
              f"{len(strategy_picks)} of {len(measured) + len(code)} strategy figures")
        found, tile_n = audit_tiles(workspace, bazel, tiles, tile_picks, a.jobs) if tile_picks else ([], 0)
        problems += found
        found, strategy_n = (audit_strategy_figures(workspace, bazel, strategies, strategy_picks)
                             if strategy_picks else ([], 0))
        problems += found
        for line in problems:
            print(f"audit: {line}", file=sys.stderr)
        if problems:
            raise AuditError(f"{len(problems)} claims of the committed records are not what decides or measures "
                             "(above)")
        print(f"audit: PASSED: {len(strategies)} strategy choices follow from their figures; {tile_n} tile and "
              f"{strategy_n} strategy figures measured again equal their records'")
    return cli.exit_code if cli.failed else 0


if __name__ == "__main__":
    sys.exit(main())
