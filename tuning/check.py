"""The tuning records' checks (//tuning:records_test, //tuning:reproduce_test).

    python -m tuning.check keys --committed tuning/records/*.json --built <choice>.record.json...
    python -m tuning.check reproduce --committed R --replayed <hit>.{analysis.json,tune.md,record.json} \\
        --measured <measured>.{analysis.json,tune.md,record.json}
    python -m tuning.check strategies --committed tuning/strategies/*.json \\
        --recorded-bzl tuning/strategies/recorded.bzl --built <pipeline>_<target>.strategy_record.json...
    python -m tuning.check agree --committed R --replayed <hit>.{analysis.json,tune.md,record.json} \\
        --perf <pipeline>_perf.perf.json

`keys`: every pipeline's record is committed and its key is the tree's (the key each build of the
riscv measured choice computed, in its <name>.record.json), its figures match the figures_sha256
the measuring tool wrote (a figure edited by hand fails, formatting kept or not), and no committed
record is an orphan.
A build whose record is stale measures, so its record differs from the committed one: the check
says which key components differ and the command that refreshes it.

`strategies`: the same for the strategy records of `strategy = "auto"` choices (every built
choice's record is committed with the tree's key and its choice matches its choice_sha256, and the
build replayed it), and recorded.bzl is what the committed records generate, line by line.

`reproduce`: one pipeline measured again here reproduces its committed record byte for byte, and
the replayed build's outputs equal the measured build's. A difference is listed figure by figure
(value recorded vs measured, in parts per million), never rounded away.

`agree`: one source for every figure. The perf report of the build that replays a record (the
same executables the choice measured for its chosen candidates) gives each dispatch the figures
the record holds for the candidate chosen: model cycles, memory-aware cycles, energy and traffic,
to the last digit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import BaseModel, ValidationError

from common.analysis_schema import Analysis
from common.errors import OneLineErrors, validation_error_where
from common.perf_schema import PerfReport
from common.tuning_schema import StrategyKey, TuningRecord
from choice.rounds import Measured
from choice.records import (RecordError, dump_record, dump_strategy_record, key_differences, load_record,
                          load_strategy_record, strategy_key_differences)
from tuning.strategy_records import recorded_bzl, recorded_choices

BUILT_SUFFIX = "_analysis.record.json"  # <pipeline>_analysis.record.json: models/defs.bzl's choice


def _read(path: Path, what: str) -> str:
    """The text of `path`, or RecordError naming it: a missing perf report or a recorded.bzl that
    is not text ended in a traceback (issue 62)."""
    try:
        return path.read_text()
    except UnicodeDecodeError as err:
        raise RecordError(f"{path}: not {what}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise RecordError(f"{path}: cannot read {what}: {err.strerror}") from None


def _load(path: Path, model: type[BaseModel], what: str) -> BaseModel:
    """`path` validated as `model`, or RecordError naming it and the field (a perf report of
    another schema was a 46-line pydantic traceback)."""
    try:
        return model.model_validate_json(_read(path, what))
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise RecordError(f"{path}: not {what}: field '{where}': {why}") from None


def _record_files(committed: list[Path], what: str) -> dict[str, Path]:
    """{record name: file} of --committed, or RecordError naming one that is no file (a directory
    given for its files was reported as an orphan to delete)."""
    for path in committed:
        if not path.is_file():
            raise RecordError(f"{path}: not a {what} file ({'a directory' if path.is_dir() else 'missing'}): "
                              f"--committed takes the files themselves, e.g. tuning/records/*.json")
    return {p.stem: p for p in committed}


def check_keys(committed: list[Path], built: list[Path]) -> list[str]:
    """Problems, one line each (empty: every record matches its tree)."""
    problems = []
    records = _record_files(committed, "tuning record")
    # A choice's outputs come together (analysis, markdown, record): its record is the one read.
    built_by_name = {p.name.removesuffix(BUILT_SUFFIX): p for p in built if p.name.endswith(BUILT_SUFFIX)}
    if not built_by_name:
        raise RecordError(f"no <pipeline>{BUILT_SUFFIX} among --built: nothing to check the records against")
    for name, path in sorted(built_by_name.items()):
        tree = load_record(path)
        if name not in records:
            problems.append(f"{name}: no tuning record committed (its build measures); `{tree.refresh}` writes it")
            continue
        try:
            record = load_record(records[name])  # its figures checked against its figures_sha256
        except RecordError as err:
            problems.append(str(err))
            continue
        if record.pipeline != name:
            problems.append(f"{records[name]}: the record of '{record.pipeline}', not of '{name}'")
            continue
        diffs = key_differences(record.key, tree.key)
        if diffs:
            problems.append(f"{records[name]}: stale, its key is not the tree's: {'; '.join(diffs)}; `{tree.refresh}` refreshes it")
            continue
        text = records[name].read_text()
        if text != dump_record(record):
            problems.append(f"{records[name]}: not as `{tree.refresh}` writes it (edited by hand?)")
        elif path.read_text() != text:
            # Same key, yet the build did not replay it: it lacks or has extra figures.
            problems.append(f"{records[name]}: its key matches but the build measured instead of "
                            f"replaying it (figures missing or extra); `{tree.refresh}` refreshes it")
    for name in sorted(set(records) - set(built_by_name)):
        problems.append(f"{records[name]}: no pipeline has this record (an orphan): delete it")
    return problems


STRATEGY_SUFFIX = ".strategy_record.json"  # <pipeline>_<target>.strategy_record.json: choice:code_strategy_choice


def _matching_record(name: str, records: dict[str, Path], tree: StrategyKey, refresh: str,
                     problems: list[str]):
    """The committed strategy record of `name` when there is one, it is sealed and its key is
    `tree`; else None, with the problem appended (missing, refused, or stale, naming `refresh`)."""
    if name not in records:
        problems.append(f"{name}: no strategy record committed (its build measures every candidate); "
                        f"`{refresh}` writes it")
        return None
    try:
        record = load_strategy_record(records[name])  # its choice checked against its choice_sha256
    except RecordError as err:
        problems.append(str(err))
        return None
    diffs = strategy_key_differences(record.key, tree)
    if diffs:
        problems.append(f"{records[name]}: stale, its key is not the tree's: {'; '.join(diffs)}; "
                        f"`{refresh}` refreshes it")
        return None
    return record


def check_strategies(committed: list[Path], built: list[Path], bzl: Path) -> list[str]:
    """Problems with the strategy records, one line each (empty: they match the tree)."""
    problems = []
    records = _record_files(committed, "strategy record")
    built_by_name = {p.name.removesuffix(STRATEGY_SUFFIX): p for p in built if p.name.endswith(STRATEGY_SUFFIX)}
    if not built_by_name:
        raise RecordError(f"no <pipeline>_<target>{STRATEGY_SUFFIX} among --built: nothing to check against")
    for name, path in sorted(built_by_name.items()):
        tree = load_strategy_record(path)
        record = _matching_record(name, records, tree.key, tree.refresh, problems)
        if record is None:
            continue
        if records[name].read_text() != dump_strategy_record(record):
            problems.append(f"{records[name]}: not as `{tree.refresh}` writes it (edited by hand?)")
        elif path.read_text() != records[name].read_text():
            problems.append(f"{records[name]}: its key matches but the build did not replay it; "
                            f"`{tree.refresh}` refreshes it")
    for name in sorted(set(records) - set(built_by_name)):
        problems.append(f"{records[name]}: no pipeline has this strategy record (an orphan): delete it")
    return _recorded_bzl_problems(committed, records, bzl, problems)


def _recorded_bzl_problems(committed: list[Path], records: dict[str, Path], bzl: Path, problems: list[str]) -> list[str]:
    """`problems` and, after them, how recorded.bzl differs from what the committed records generate."""
    text = _read(bzl, "recorded.bzl")
    try:
        expected = recorded_bzl(committed)
    except RecordError as err:  # a record refused above: recorded.bzl cannot be generated
        if not any(str(err) == p for p in problems):
            problems.append(str(err))
        return problems
    if text != expected:
        # The lines that disagree with their records, when some do: what a build would compile.
        try:
            found = recorded_choices(text)
        except RecordError as err:
            return problems + [f"{bzl}: {str(err).removeprefix('recorded.bzl: ')}"]
        lines = [f"{bzl}: {name} ships {found[name]!r}, but its record {records[name]} chose {build!r}; "
                 "`bazel run //tools:tune` rewrites it with the records"
                 for name, build in sorted(recorded_choices(expected).items())
                 if name in found and found[name] != build]
        problems += lines or [f"{bzl}: not what the committed strategy records generate (`bazel run //tools:tune` "
                              "rewrites it with them)"]
    return problems


def _figures(record: TuningRecord) -> dict[str, object]:
    """Flat "dispatch / candidate / figure" -> value."""
    out: dict[str, object] = {}
    for d, cands in record.results.items():
        for c, r in cands.items():
            for field, value in r.model_dump(exclude_none=True).items():
                if field == "measured":
                    for f, v in value.items():
                        if f == "traffic_bytes":
                            out.update({f"{d} / {c} / traffic_bytes.{lv}": b for lv, b in v.items()})
                        else:
                            out[f"{d} / {c} / {f}"] = v
                else:
                    out[f"{d} / {c} / {field}"] = value
    return out


def figure_differences(recorded: TuningRecord, measured: TuningRecord) -> list[str]:
    a, b = _figures(recorded), _figures(measured)
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if x == y:
            continue
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x:
            out.append(f"{k}: {x} recorded, {y} measured ({(y - x) / x * 1e6:+.1f} ppm)")
        else:
            out.append(f"{k}: {x!r} recorded, {y!r} measured")
    return out


OUTPUT_SUFFIXES = (".analysis.json", ".tune.md", ".record.json")  # a measured choice's outputs


def _by_suffix(files: list[Path], what: str) -> dict[str, Path]:
    out = {s: [f for f in files if f.name.endswith(s)] for s in OUTPUT_SUFFIXES}
    for suffix, found in out.items():
        if len(found) != 1:
            raise RecordError(f"{what}: {len(found)} files ending {suffix} (a measured choice's outputs have one)")
    return {s: f[0] for s, f in out.items()}


def check_reproduce(committed: Path, replayed_files: list[Path], measured_files: list[Path]) -> list[str]:
    hit, fresh = _by_suffix(replayed_files, "--replayed"), _by_suffix(measured_files, "--measured")
    replayed, measured = hit[".record.json"], fresh[".record.json"]
    pairs = [(hit[s], fresh[s]) for s in OUTPUT_SUFFIXES[:2]]
    problems = []
    record, again = load_record(committed), load_record(measured)
    diffs = key_differences(record.key, again.key)
    if diffs:
        return [f"{committed}: stale ({'; '.join(diffs)}): nothing to reproduce; `{record.refresh}` refreshes it"]
    if replayed.read_text() != committed.read_text():
        problems.append(f"{replayed}: the build did not replay {committed}")
    if measured.read_text() != committed.read_text():
        figs = figure_differences(record, again)
        problems.append(f"{committed}: measured again, {len(figs)} figures differ:")
        problems += [f"  {f}" for f in figs]
    for hit, fresh in pairs:
        if hit.read_bytes() != fresh.read_bytes():
            problems.append(f"{hit.name} (replayed) and {fresh.name} (measured) differ")
    return problems


def check_agree(committed: Path, replayed_files: list[Path], perf_json: Path) -> tuple[list[str], int]:
    """(problems, dispatches compared): the perf report's figures of each dispatch whose chosen
    candidate the record measured, against the record's."""
    hit = _by_suffix(replayed_files, "--replayed")
    record = load_record(committed)
    if _read(hit[".record.json"], "a tuning record") != _read(committed, "a tuning record"):
        return [f"{hit['.record.json']}: the build did not replay {committed}"], 0
    analysis = _load(hit[".analysis.json"], Analysis, "an analysis")
    report = _load(perf_json, PerfReport, "a perf report")
    runs = [r for r in report.runs if r.hardware == record.key.hardware]
    if len(runs) != 1:
        return [f"{perf_json}: no run on {record.key.hardware}, the record's hardware"], 0
    chosen = {d.name: d.chosen for d in analysis.dispatches}
    problems, compared = [], 0
    for d in runs[0].dispatches:
        result = record.results.get(d.name, {}).get(chosen.get(d.name) or "")
        if result is None or result.measured is None:
            continue  # no choice was measured for it (a shortlist of one)
        m, compared = result.measured, compared + 1
        ours = Measured.of(d)  # the report's dispatch as the choice records a measurement
        for field in ("model_cycles", "memory_aware_cycles", "energy_pj", "traffic_bytes"):
            value = getattr(ours, field) if ours is not None else None
            if getattr(m, field) != value:
                problems.append(f"{d.name} ({chosen[d.name]}): {field} {getattr(m, field)} in {committed.name}, "
                                f"{value} in {perf_json.name}")
    if not compared:
        problems.append(f"{perf_json}: no dispatch's chosen candidate is measured in {committed}")
    return problems, compared


KEY_SUFFIX = ".strategy_key.json"  # <pipeline>_<target>.strategy_key.json: its output group strategy_key


def check_strategy_keys(committed: list[Path], built: list[Path], bzl: Path) -> list[str]:
    """`strategies` without the builds: every strategy choice's key (computed from its candidates'
    targets and analyses, nothing compiled) is its committed record's, so no build of the tree
    measures; the records are sealed, none is an orphan, and recorded.bzl is what they generate."""
    problems = []
    records = _record_files(committed, "strategy record")
    keys = {p.name.removesuffix(KEY_SUFFIX): p for p in built if p.name.endswith(KEY_SUFFIX)}
    if not keys:
        raise RecordError(f"no <pipeline>_<target>{KEY_SUFFIX} among --built: nothing to check against")
    for name, path in sorted(keys.items()):
        tree = _load(path, StrategyKey, "a strategy key")
        record = _matching_record(name, records, tree, f"bazel run //tools:tune -- //models:{name}", problems)
        if record is None:
            continue
        if records[name].read_text() != dump_strategy_record(record):
            problems.append(f"{records[name]}: not as `{record.refresh}` writes it (edited by hand?)")
    for name in sorted(set(records) - set(keys)):
        problems.append(f"{records[name]}: no pipeline has this strategy record (an orphan): delete it")
    return _recorded_bzl_problems(committed, records, bzl, problems)


def _check(a: argparse.Namespace) -> tuple[list[str], str]:
    """(problems, the line that says all is well) of the subcommand `a.what`."""
    if a.what == "keys":
        problems = check_keys(a.committed, a.built)
        ok = f"{len(a.built)} pipelines' tuning records match the tree"
    elif a.what == "strategies":
        problems = check_strategies(a.committed, a.built, a.recorded_bzl)
        ok = (f"{len([b for b in a.built if b.name.endswith(STRATEGY_SUFFIX)])} strategy choices' records "
              "match the tree and recorded.bzl")
    elif a.what == "strategy-keys":
        problems = check_strategy_keys(a.committed, a.built, a.recorded_bzl)
        ok = (f"{len([b for b in a.built if b.name.endswith(KEY_SUFFIX)])} strategy choices' keys are their "
              "committed records' (no build measures) and recorded.bzl is what the records generate")
    elif a.what == "agree":
        reports = [f for f in a.perf if f.name.endswith(".perf.json")]
        if len(reports) != 1:
            raise RecordError(f"--perf: {len(reports)} files ending .perf.json (a perf report has one)")
        a.perf = reports[0]
        problems, compared = check_agree(a.committed, a.replayed, a.perf)
        ok = f"{a.perf.name}: {compared} dispatches' figures equal {a.committed.name}'s for their chosen candidates"
    else:
        problems = check_reproduce(a.committed, a.replayed, a.measured)
        ok = f"{a.committed}: measured again, reproduced byte for byte; replayed outputs equal measured"
    return problems, ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tuning.check", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    k = sub.add_parser("keys")
    k.add_argument("--committed", nargs="*", type=Path, default=[])
    k.add_argument("--built", nargs="+", type=Path, required=True)
    st = sub.add_parser("strategies")
    st.add_argument("--committed", nargs="*", type=Path, default=[])
    st.add_argument("--recorded-bzl", type=Path, required=True)
    st.add_argument("--built", nargs="+", type=Path, required=True)
    sk = sub.add_parser("strategy-keys")
    sk.add_argument("--committed", nargs="*", type=Path, default=[])
    sk.add_argument("--recorded-bzl", type=Path, required=True)
    sk.add_argument("--built", nargs="+", type=Path, required=True)
    r = sub.add_parser("reproduce")
    r.add_argument("--committed", type=Path, required=True)
    r.add_argument("--replayed", nargs=3, type=Path, required=True,
                   help="the outputs of the build that replays the record (analysis, markdown, record)")
    r.add_argument("--measured", nargs=3, type=Path, required=True,
                   help="the same outputs of the build that measures")
    ag = sub.add_parser("agree")
    ag.add_argument("--committed", type=Path, required=True)
    ag.add_argument("--replayed", nargs=3, type=Path, required=True,
                    help="the outputs of the build that replays the record (analysis, markdown, record)")
    ag.add_argument("--perf", nargs="+", type=Path, required=True,
                    help="the perf report of that build (its .perf.json; other files given are ignored)")
    a = p.parse_args(argv)
    # One line, never a traceback: an error this tool does not expect names the subcommand.
    with OneLineErrors("tuning.check", a.what, (RecordError,)) as cli:
        problems, ok = _check(a)
    if cli.failed:
        return cli.exit_code
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(ok)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
