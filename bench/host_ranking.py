"""Re-times the host calibration's candidates interleaved, to see how much of the code model's
poor host ranking is the measurement's.

    tools/bazel run //bench:host_ranking -- --zoo $(tools/bazel info bazel-bin) --split held_out

The host calibration (bench.calibrate) timed each candidate in its own round, 3 samples of
iree-benchmark-module each, minutes apart from the dispatch's other candidates; most zoo
dispatches take 5-50 us, where one sample's interquartile range is 20-50% of its median. This
rebuilds every candidate of the dispatches `bench.code_cost_eval` ranked (>= 5 candidates; the
same per-dispatch benchmark modules the calibration timed: bench.prepare on the calibration
round's forced analysis), times them interleaved (a carryover-balanced order per round,
>= 30 rounds) and reports per dispatch:
- tau between the code model's static cycles (read from `<hardware>.code_cost.json`, not
  recomputed) and the re-timed medians, and against the calibration's own single measurement;
- the split-half tau: the medians of the even rounds against those of the odd rounds, the
  ranking the measurement reproduces of itself. No model can be confirmed above it;
- the same taus on paired ratios: each candidate's time over IREE's default's in the same
  round, median over rounds, which cancels a drift of the machine's speed between rounds.
Nothing is fitted, unless asked: `--fit FEATURE` chooses the weight of one tile-model feature
added to the code model's cycles on the calibration split's paired ratios alone, reports both
splits' tau at it, and `--out-calibration` writes it as the code-model calibration the host's
code-model tile choice reads (choice.tune --code-calibration).

`--device local-sync` times every workgroup inline on one thread: the summed work of all
workgroups, which is what the code model prices (it has no term for the 2 worker threads of
`local-task`, the default and what a deployed module runs), without the thread pool's wake-ups,
which on 5-50 us dispatches are much of local-task's spread.

The code model prices a named core (`bench.code_cost_eval --core`), and the timings are of
whatever machine runs this: `--code-cost` may be given once per core priced (the first file
chooses the dispatches), and the report names the machine timed with the core LLVM takes it
for, so a ranking can be read against the core that actually ran. `--timings` re-ranks the
samples of an earlier run's JSON (same machine, no rebuild, no timing) against other code
costs; given several times, the runs (one machine and device) are pooled. `--retest` ranks an
earlier run's medians and paired ratios against these: the test-retest tau, how far one run of
the measurement reproduces the next.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from analysis.cost_model import FEATURES
from bench import text
from bench.calibrate import prepare_dispatches
from bench.code_cost_eval import DEFAULT, MIN_CANDIDATES, EvalError, forced, load_measurements, mean_text
from bench.core import balanced_orders, cpu_model, llvm_host_cpu, progress, time_dispatch
from bench.run_bench import out_path
from common.stats import geomean, kendall_tau, summary
from codegen import compile as cg
from common.errors import first_line
from common.calibration_schema import CodeModelCalibration
from common.files import write_together
from perf import mca

ROUNDS = 30
# iree-benchmark-module's minimum time per sample: 10 dispatches a batch, repeated for 30 ms.
MIN_TIME_S = 0.03


class _Point(BaseModel):
    model_config = ConfigDict(extra="ignore")
    candidate: str
    code: float


class _Ranked(BaseModel):
    """One dispatch of a bench.code_cost_eval result."""
    model_config = ConfigDict(extra="ignore")
    model: str
    dispatch: str
    kind: str
    split: str
    core: str
    points: list[_Point]


@dataclass
class Priced:
    """A dispatch's candidates with the code model's cycles on each core priced."""
    model: str
    dispatch: str
    kind: str
    split: str
    code: dict[str, dict[str, float]]  # candidate -> core -> static cycles


def load_code_costs(paths: list[Path]) -> tuple[list[str], list[Priced]]:
    """The cores priced, in the order given, and every dispatch of the first file with the
    candidates every file costed."""
    cores, files = [], []
    for path in paths:
        try:
            rows = [_Ranked.model_validate(r) for r in json.loads(path.read_text())]
        except (OSError, ValueError, ValidationError) as err:
            raise EvalError(f"{path}: not a code_cost_eval result: {first_line(str(err))}") from None
        core = {r.core for r in rows}
        if len(core) != 1:
            raise EvalError(f"{path}: prices {len(core)} cores ({', '.join(sorted(core))}), not one")
        if (c := core.pop()) in cores:
            raise EvalError(f"{path}: core {c} given twice")
        cores.append(c)
        files.append({(r.model, r.dispatch): r for r in rows})
    priced = []
    for (model, dispatch), first in files[0].items():
        by_file = [f.get((model, dispatch)) for f in files]
        code = {p.candidate: {} for p in first.points}
        for core, r in zip(cores, by_file):
            for p in r.points if r else ():
                if p.candidate in code:
                    code[p.candidate][core] = p.code
        code = {c: v for c, v in code.items() if len(v) == len(cores)}
        priced.append(Priced(model, dispatch, first.kind, first.split, code))
    return cores, priced


class _TimedPoint(BaseModel):
    model_config = ConfigDict(extra="ignore")
    candidate: str
    median_s: float
    samples_s: list[float]


class _TimedDispatch(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    dispatch: str
    points: list[_TimedPoint]


class _Machine(BaseModel):
    cpu: str | None
    llvm_host_cpu: str | None


class _Timings(BaseModel):
    """What --timings reads of an earlier run's JSON."""
    model_config = ConfigDict(extra="ignore")
    timed_on: _Machine
    rounds: int
    # Runs before the option was added all timed local-task.
    device: str = "local-task"
    dispatches: list[_TimedDispatch]


def load_timings(paths: list[Path]) -> tuple[_Machine, int, str, dict[tuple[str, str], dict[str, list[float]]]]:
    """(machine, rounds, device, (model, dispatch) -> candidate -> samples) of earlier runs'
    JSON; several runs of one machine and device pool their samples (rounds add up)."""
    runs = []
    for path in paths:
        try:
            runs.append((path, _Timings.model_validate_json(path.read_text())))
        except (OSError, ValueError) as err:
            raise EvalError(f"{path}: not a host_ranking result: {first_line(str(err))}") from None
    first_path, first = runs[0]
    times: dict[tuple[str, str], dict[str, list[float]]] = {}
    for path, t in runs:
        if (t.timed_on, t.device) != (first.timed_on, first.device):
            raise EvalError(f"{path}: timed on {t.timed_on.cpu} ({t.timed_on.llvm_host_cpu}), {t.device}; "
                            f"{first_path} on {first.timed_on.cpu} ({first.timed_on.llvm_host_cpu}), "
                            f"{first.device}: samples of different machines or devices are not pooled")
        for d in t.dispatches:
            for p in d.points:
                times.setdefault((d.model, d.dispatch), {}).setdefault(p.candidate, []).extend(p.samples_s)
    return first.timed_on, sum(t.rounds for _, t in runs), first.device, times


def load_earlier_medians(path: Path) -> tuple[dict[tuple[str, str], dict[str, float]],
                                               dict[tuple[str, str], dict[str, float]]]:
    """(medians, paired ratios): (model, dispatch) -> candidate -> median seconds, and ->
    `paired_ratios` where its samples allow, of an earlier host_ranking run (its JSON, or the
    bare list of dispatches host_ranking wrote before it recorded the machine)."""
    try:
        data = json.loads(path.read_text())
        rows = TypeAdapter(list[_TimedDispatch]).validate_python(
            data["dispatches"] if isinstance(data, dict) else data)
    except (OSError, ValueError, KeyError) as err:
        raise EvalError(f"{path}: not a host_ranking result: {first_line(str(err))}") from None
    medians = {(d.model, d.dispatch): {p.candidate: p.median_s for p in d.points} for d in rows}
    paired = {(d.model, d.dispatch): ratios for d in rows
              if (ratios := paired_ratios({p.candidate: p.samples_s for p in d.points})) is not None}
    return medians, paired


def add_retest(results: list[dict], earlier: tuple[dict[tuple[str, str], dict[str, float]],
                                                  dict[tuple[str, str], dict[str, float]]]) -> None:
    """Sets each result's `tau_retest` and `tau_retest_paired`: its medians (paired ratios)
    against the earlier run's, over the candidates both timed (None below MIN_CANDIDATES)."""
    for field, value, by_dispatch in (("tau_retest", "median_s", earlier[0]),
                                      ("tau_retest_paired", "paired_ratio", earlier[1])):
        for r in results:
            before = by_dispatch.get((r["model"], r["dispatch"]), {})
            both = [p for p in r["points"] if p["candidate"] in before and p.get(value) is not None]
            r[field] = kendall_tau([before[p["candidate"]] for p in both], [p[value] for p in both]
                                   ) if len(both) >= MIN_CANDIDATES else None


def build_candidates(ranked: list[Priced], measurements, zoo: Path, target: Path, work: Path
                     ) -> dict[tuple[str, str], dict[str, dict]]:
    """(model, dispatch) -> candidate -> bench.prepare's entry (vmfb, function) for it."""
    wanted = {(r.model, r.dispatch): set(r.code) for r in ranked}
    rows = defaultdict(lambda: defaultdict(list))
    for row in measurements.rows:
        if row.candidate in wanted.get((row.model, row.dispatch), ()):
            rows[row.model][row.dispatch].append(row)
    built: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for model, dispatches in sorted(rows.items()):
        # With ZigZag's candidates (the shipped host analysis, uncalibrated, leaves them out).
        analysis = cg.load_analysis(zoo / "models" / f"{model}_host_predicted_analysis.analysis.json")
        module = zoo / "models" / f"{analysis.model}.mlirbc"
        for j in range(max(len(v) for v in dispatches.values())):
            assign = {name: v[j] for name, v in dispatches.items() if j < len(v)}
            round_dir = work / model / f"round{j}"
            round_dir.mkdir(parents=True, exist_ok=True)
            path = round_dir / "analysis.json"
            path.write_text(forced(analysis, assign).model_dump_json(indent=1))
            prep = prepare_dispatches(module, target, path, round_dir / "bench", f"{model} round {j}")
            for name, row in assign.items():
                if name in prep:
                    built[(model, name)][row.candidate] = prep[name]
        print(f"host_ranking: {model}: {len(dispatches)} dispatches built", file=sys.stderr)
    return built


def time_interleaved(built: dict[tuple[str, str], dict[str, dict]], rounds: int, device: str
                     ) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Seconds per dispatch of every candidate on HAL `device`, `rounds` samples each; per round
    each dispatch's candidates run back to back in a carryover-balanced order."""
    times = {key: {c: [] for c in cands} for key, cands in built.items()}
    bar = progress(total=rounds * sum(len(c) for c in built.values()), desc="candidate timings")
    for r in range(rounds):
        for key, cands in sorted(built.items()):
            names = sorted(cands)
            orders = balanced_orders(len(names))
            for k in orders[r % len(orders)]:
                entry = cands[names[k]]
                times[key][names[k]].append(time_dispatch(entry["vmfb"], entry["function"], device, 10,
                                                          MIN_TIME_S))
                bar.update(1)
    bar.close()
    return times


def paired_ratios(samples: dict[str, list[float]], rounds: range | None = None) -> dict[str, float] | None:
    """Candidate -> median over rounds of its time over IREE's default's in the same round, or
    None when the candidates' samples are not one per round alike. The candidates of a dispatch
    run back to back within a round, while rounds are a minute apart: a machine whose speed
    drifts (a VM's neighbours) moves a whole round, which the ratio cancels and a plain median
    does not."""
    base = samples.get(DEFAULT, [])
    if not base or any(len(v) != len(base) for v in samples.values()):
        return None
    picked = rounds if rounds is not None else range(len(base))
    return {c: statistics.median(v[r] / base[r] for r in picked) for c, v in samples.items()}


def rank(ranked: list[Priced], measurements, times: dict[tuple[str, str], dict[str, list[float]]]
         ) -> list[dict]:
    stored = {(r.model, r.dispatch, r.candidate): r.measured_cycles for r in measurements.rows}
    results = []
    for r in ranked:
        samples = times.get((r.model, r.dispatch), {})
        names = [c for c in r.code if len(samples.get(c, ())) >= 2]
        if len(names) < MIN_CANDIDATES or DEFAULT not in names:
            continue
        cores = list(r.code[names[0]])
        median = {c: statistics.median(samples[c]) for c in names}
        retimed = [median[c] for c in names]
        kept = [stored[(r.model, r.dispatch, c)] for c in names]
        even = [statistics.median(samples[c][0::2]) for c in names]
        odd = [statistics.median(samples[c][1::2]) for c in names]
        code = {core: [r.code[c][core] for c in names] for core in cores}
        cheapest = {core: min(names, key=lambda c: r.code[c][core]) for core in cores}
        chosen = {c: samples[c] for c in names}
        paired = paired_ratios(chosen)
        rounds = len(chosen[DEFAULT])
        halves = (paired_ratios(chosen, range(0, rounds, 2)), paired_ratios(chosen, range(1, rounds, 2)))
        results.append({
            "model": r.model, "dispatch": r.dispatch, "kind": r.kind, "split": r.split,
            "candidates": len(names),
            "tau_code_retimed": {core: kendall_tau(code[core], retimed) for core in cores},
            "tau_code_stored": {core: kendall_tau(code[core], kept) for core in cores},
            "tau_stored_retimed": kendall_tau(kept, retimed),
            "tau_split_half": kendall_tau(even, odd),
            "tau_code_paired": {core: kendall_tau(code[core], [paired[c] for c in names]) if paired else None
                                for core in cores},
            "tau_split_half_paired": kendall_tau([halves[0][c] for c in names], [halves[1][c] for c in names])
            if paired and rounds >= 2 else None,
            "median_iqr_rel": statistics.median(summary(samples[c])["iqr_rel"] for c in names),
            "default_us": median[DEFAULT] * 1e6,
            "code_choice_over_default": {core: median[cheapest[core]] / median[DEFAULT] for core in cores},
            "best_over_default": min(retimed) / median[DEFAULT],
            "points": [{"candidate": c, "code": r.code[c], "median_s": median[c],
                        "paired_ratio": paired[c] if paired else None, "samples_s": samples[c]}
                       for c in names],
        })
    return results


# The weights --fit tries, in cycles per unit of the feature (a vector load, ...); 0: none.
FIT_WEIGHTS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return statistics.mean(kept) if kept else None


def fit_feature(results: list[dict], features: dict[tuple[str, str, str], dict[str, float]], feature: str,
                cores: list[str]) -> dict[str, dict]:
    """Per core priced: the weight w of FIT_WEIGHTS for which `code + w x feature` (a tile-model
    feature of the candidate) ranks the calibration split's paired ratios best, mean tau over its
    dispatches (ties: the smaller w), and the mean tau of each split at that w and at w = 0. The
    held-out split never takes part in choosing w."""
    def taus(core: str, weight: float, split: str) -> list[float | None]:
        out = []
        for r in results:
            if r["split"] != split:
                continue
            points = [p for p in r["points"] if p.get("paired_ratio") is not None
                      and feature in features.get((r["model"], r["dispatch"], p["candidate"]), {})]
            if len(points) < MIN_CANDIDATES:
                continue
            out.append(kendall_tau(
                [p["code"][core] + weight * features[(r["model"], r["dispatch"], p["candidate"])][feature]
                 for p in points], [p["paired_ratio"] for p in points]))
        return out

    fitted = {}
    for core in cores:
        score = {w: _mean(taus(core, w, "calibration")) for w in FIT_WEIGHTS}
        if all(v is None for v in score.values()):
            raise EvalError(f"--fit {feature}: no calibration dispatch has {MIN_CANDIDATES} candidates "
                            "with that feature and paired timings")
        best = max(FIT_WEIGHTS, key=lambda w: (score[w] if score[w] is not None else -2.0, -w))
        fitted[core] = {"feature": feature, "weight": best, **{
            f"tau_{split}{suffix}": _mean(taus(core, w, split))
            for split in ("calibration", "held_out") for suffix, w in (("", best), ("_unweighted", 0.0))}}
    return fitted


def calibration_json(fitted: dict[str, dict], hardware: str, rounds: int, device: str, machine: _Machine) -> str:
    """The fit as a CodeModelCalibration (what choice.tune --code-calibration reads)."""
    [feature] = {f["feature"] for f in fitted.values()}
    cal = CodeModelCalibration(
        hardware=hardware, feature=feature,
        cycles_per_unit={core: f["weight"] for core, f in fitted.items()},
        fitted_on=(f"bench.host_ranking --fit {feature}: the calibration split's dispatches, paired ratios of "
                   f"{rounds} interleaved rounds ({device}, {machine.cpu or 'unknown CPU'}); the held-out split "
                   "evaluated only"),
        tau={core: {f"{split}{suffix}": f[f"tau_{split}{suffix}"] for split in ("calibration", "held_out")
                    for suffix in ("", "_unweighted")} for core, f in fitted.items()})
    return cal.model_dump_json(indent=1) + "\n"


def fit_markdown(fitted: dict[str, dict]) -> list[str]:
    lines = ["", "## Calibrated: code + w x one tile-model feature", "",
             f"The weight w of {', '.join(f'{w:g}' for w in FIT_WEIGHTS)} whose prices rank the calibration "
             "split's paired ratios best (mean Kendall tau); the held-out split is only evaluated at it.", "",
             "| core | feature | w | calibration: code / calibrated | held-out: code / calibrated |",
             "|---|---|---:|---:|---:|"]
    for core, f in fitted.items():
        lines.append(f"| {core} | {f['feature']} | {f['weight']:g} | {text.f(f['tau_calibration_unweighted'])} / "
                     f"{text.f(f['tau_calibration'])} | {text.f(f['tau_held_out_unweighted'])} / "
                     f"{text.f(f['tau_held_out'])} |")
    return lines


def _groups(results: list[dict]):
    """(split, size label, its results) for each split and size of IREE's default's time, the
    rows of the summary tables; empty groups left out."""
    sizes = (("all", 0.0, float("inf")), ("default < 20 us", 0.0, 20.0), ("default >= 20 us", 20.0, float("inf")))
    for split in ("calibration", "held_out"):
        for label, lo, hi in sizes:
            sel = [r for r in results if r["split"] == split and lo <= r["default_us"] < hi]
            if sel:
                yield split, label, sel


def markdown(results: list[dict], hardware: str, cores: list[str], rounds: int, machine: _Machine,
             device: str, fitted: dict[str, dict] | None = None) -> str:
    timed_on = (f"{machine.cpu or 'unknown CPU'}, which LLVM takes for {machine.llvm_host_cpu or 'an unknown core'}"
                f", HAL device {device}")
    per_core = lambda title: "".join(f" {title.format(core=c)} |" for c in cores)  # noqa: E731
    retest = any("tau_retest" in r for r in results)
    lines = [f"# Host ranking, re-timed interleaved ({hardware}; timed on {timed_on})", "",
             "Generated by `bench/host_ranking.py`. Every candidate of the dispatches the code model was "
             f"ranked on (>= {MIN_CANDIDATES} candidates) timed {rounds} rounds interleaved "
             "(carryover-balanced), medians. Mean Kendall tau over dispatches: *code (core) vs re-timed*: the "
             "code model's static cycles priced on that core against the medians; *vs stored*: against the "
             "calibration's single measurement (what host.code_cost.md reports; it may have been timed on "
             "another machine); *stored vs re-timed*: the calibration's measurement against the medians; "
             "*split-half*: even rounds' medians against odd rounds' (the measurement against itself). "
             "*test-retest* (with --retest): these medians against an earlier run's. "
             "*spread*: median over candidates of the interquartile range over the median. *choice / "
             "default*: geomean over dispatches of the re-timed median of the candidate the code model "
             "prices cheapest over IREE's default's.", "",
             "| split | dispatch size | dispatches |" + per_core("code ({core}) vs re-timed")
             + per_core("code ({core}) vs stored") + " stored vs re-timed | split-half |"
             + (" test-retest |" if retest else "") + " spread |"
             + per_core("{core} choice / default") + " best / default |",
             "|---|---|---:|" + "---:|" * (3 * len(cores) + 4 + retest)]
    for split, label, sel in _groups(results):
        lines.append(
            f"| {split} | {label} | {len(sel)} |"
            + "".join(f" {mean_text([r['tau_code_retimed'][c] for r in sel])} |" for c in cores)
            + "".join(f" {mean_text([r['tau_code_stored'][c] for r in sel])} |" for c in cores)
            + f" {mean_text([r['tau_stored_retimed'] for r in sel])} |"
            f" {mean_text([r['tau_split_half'] for r in sel])} |"
            + (f" {mean_text([r.get('tau_retest') for r in sel])} |" if retest else "")
            + f" {statistics.median(r['median_iqr_rel'] for r in sel):.2f} |"
            + "".join(f" {geomean([r['code_choice_over_default'][c] for r in sel]):.3f} |" for c in cores)
            + f" {geomean([r['best_over_default'] for r in sel]):.3f} |")
    lines += ["", "## Paired with IREE's default", "",
              "Each candidate's time over IREE's default's in the same round, median over rounds (a "
              "dispatch's candidates run back to back in a round; rounds are about a minute apart, and "
              "a drift of the machine's speed between them moves every candidate of a round alike, which "
              "the ratio cancels). Mean Kendall tau over dispatches, as above.", "",
              "| split | dispatch size | dispatches |" + per_core("code ({core}) vs paired")
              + " split-half, paired |" + (" test-retest, paired |" if retest else ""),
              "|---|---|---:|" + "---:|" * (len(cores) + 1 + retest)]
    for split, label, sel in _groups(results):
        lines.append(
            f"| {split} | {label} | {len(sel)} |"
            + "".join(f" {mean_text([r['tau_code_paired'][c] for r in sel])} |" for c in cores)
            + f" {mean_text([r['tau_split_half_paired'] for r in sel])} |"
            + (f" {mean_text([r.get('tau_retest_paired') for r in sel])} |" if retest else ""))
    lines += ["", "## Per dispatch", "",
              "| split | model | dispatch | candidates | default us |" + per_core("code ({core}) vs re-timed")
              + " split-half | spread |" + per_core("code ({core}) vs paired") + " split-half, paired |",
              "|---|---|---|---:|---:|" + "---:|" * (2 * len(cores) + 3)]
    for r in sorted(results, key=lambda r: (r["split"], r["model"], r["dispatch"])):
        lines.append(f"| {r['split']} | {r['model']} | {r['dispatch']} | {r['candidates']} | "
                     f"{r['default_us']:.1f} |" + "".join(f" {text.f(r['tau_code_retimed'][c])} |" for c in cores)
                     + f" {text.f(r['tau_split_half'])} | {r['median_iqr_rel']:.2f} |"
                     + "".join(f" {text.f(r['tau_code_paired'][c])} |" for c in cores)
                     + f" {text.f(r['tau_split_half_paired'])} |")
    if fitted:
        at = lines.index("## Per dispatch") - 1
        lines[at:at] = fit_markdown(fitted)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoo", type=Path, help="bazel-bin of a built zoo (models/*_host_predicted_analysis...); "
                   "not with --timings")
    p.add_argument("--measurements", type=Path, default=Path("docs/data/calibration/host.measurements.json"))
    p.add_argument("--code-cost", type=Path, action="append",
                   help="a bench.code_cost_eval result, once per core priced (default: "
                   "docs/data/calibration/host.code_cost.json); the first chooses the dispatches")
    p.add_argument("--timings", type=Path, action="append", help="rank the samples of this earlier host_ranking JSON "
                   "(repeatable: runs of one machine and device pooled) "
                   "instead of building and timing")
    p.add_argument("--retest", type=Path, help="an earlier host_ranking JSON: rank its medians (and "
                   "paired ratios) against these (the test-retest tau)")
    p.add_argument("--fit", choices=FEATURES, help="calibrate: the weight of this tile-model feature "
                   "(from --measurements) added to the code model's cycles that best ranks the calibration "
                   "split's paired ratios, and both splits' tau at it")
    p.add_argument("--out-calibration", type=Path, help="with --fit: write the fitted weights as a "
                   "code-model calibration (analysis/calibration/<hardware>.code_model.json, read by "
                   "choice.tune --code-calibration)")
    p.add_argument("--target", type=Path, default=Path("common/targets/host.yaml"))
    p.add_argument("--split", choices=("calibration", "held_out"), help="only this split's models")
    p.add_argument("--models", help="comma-separated: only these models")
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--device", choices=("local-task", "local-sync"), default="local-task",
                   help="HAL device timed: local-task (the runtime's worker threads, as deployed) or "
                   "local-sync (every workgroup inline on one thread: the summed work the code model "
                   "prices, without the thread pool's wake-ups)")
    p.add_argument("--out-json", type=Path, default=Path("docs/data/calibration/host.ranking.json"))
    p.add_argument("--out-md", type=Path, default=Path("docs/data/calibration/host.ranking.md"))
    mca.add_llvm_bin_argument(p, required=False, default=mca.runfiles_llvm_bin())  # llc: the host's LLVM core name
    a = p.parse_args(argv)
    mca.use_llvm_bin(a.llvm_bin)
    if (a.zoo is None) == (a.timings is None):
        p.error("give exactly one of --zoo (build and time) and --timings (rank earlier samples)")
    if a.out_calibration and not a.fit:
        p.error("--out-calibration writes what --fit fitted: give --fit FEATURE")
    if a.rounds < 2:
        p.error("--rounds must be at least 2 (the split-half tau needs both halves)")
    # `tools/bazel run` starts in the runfiles tree: the paths are the user's (the defaults the
    # workspace's, when run from its root).
    code_costs = [out_path(x) for x in a.code_cost or [Path("docs/data/calibration/host.code_cost.json")]]
    a.measurements, a.target, a.out_json, a.out_md = (
        out_path(x) for x in (a.measurements, a.target, a.out_json, a.out_md))
    try:
        measurements = load_measurements(a.measurements)
        cores, priced = load_code_costs(code_costs)
        ranked = [r for r in priced
                  if len(r.code) >= MIN_CANDIDATES and (a.split is None or r.split == a.split)
                  and (a.models is None or r.model in a.models.split(","))]
        if not ranked:
            raise EvalError(f"{code_costs[0]}: no dispatch with >= {MIN_CANDIDATES} candidates to rank")
        if a.timings:
            machine, rounds, device, times = load_timings([out_path(x) for x in a.timings])
        else:
            machine, rounds, device = _Machine(cpu=cpu_model(), llvm_host_cpu=llvm_host_cpu()), a.rounds, a.device
            with tempfile.TemporaryDirectory(prefix="host_ranking_") as tmp:
                built = build_candidates(ranked, measurements, out_path(a.zoo), a.target, Path(tmp))
                times = time_interleaved(built, rounds, device)
        results = rank(ranked, measurements, times)
        if a.retest:
            add_retest(results, load_earlier_medians(out_path(a.retest)))
        fitted = None
        if a.fit:
            features = {(r.model, r.dispatch, r.candidate): r.features for r in measurements.rows}
            fitted = fit_feature(results, features, a.fit, cores)
    except (EvalError, cg.CompileError, RuntimeError) as err:
        print(f"host_ranking: error: {first_line(str(err))}", file=sys.stderr)
        return 1
    record = {"hardware": measurements.hardware, "timed_on": machine.model_dump(), "rounds": rounds,
              "device": device, "cores": cores, **({"fit": fitted} if fitted else {}),
              "dispatches": results}
    outputs = {a.out_json: json.dumps(record, indent=1) + "\n",
               a.out_md: markdown(results, measurements.hardware, cores, rounds, machine, device, fitted)}
    if a.out_calibration:
        outputs[out_path(a.out_calibration)] = calibration_json(fitted, measurements.hardware, rounds, device, machine)
    write_together(outputs)
    print(f"host_ranking: {len(results)} dispatches; wrote {a.out_md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
