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
  ranking the measurement reproduces of itself. No model can be confirmed above it.
Nothing is fitted; the code model has no coefficients.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from bench.calibrate import prepare_dispatches
from bench.code_cost_eval import DEFAULT, MIN_CANDIDATES, EvalError, forced, load_measurements, mean_text
from bench.core import balanced_orders, cpu_model, progress, time_dispatch
from bench.run_bench import out_path
from bench.stats import geomean, kendall_tau, summary
from codegen import compile as cg
from common.errors import first_line
from common.files import atomic_write

ROUNDS = 30
# iree-benchmark-module's minimum time per sample: 10 dispatches a batch, repeated for 30 ms.
MIN_TIME_S = 0.03


class _Point(BaseModel):
    model_config = ConfigDict(extra="ignore")
    candidate: str
    code: float


class _Ranked(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    dispatch: str
    kind: str
    split: str
    points: list[_Point]


def load_code_costs(path: Path) -> list[_Ranked]:
    try:
        return [_Ranked.model_validate(r) for r in json.loads(path.read_text())]
    except (OSError, ValueError, ValidationError) as err:
        raise EvalError(f"{path}: not a code_cost_eval result: {first_line(str(err))}") from None


def build_candidates(ranked: list[_Ranked], measurements, zoo: Path, target: Path, work: Path
                     ) -> dict[tuple[str, str], dict[str, dict]]:
    """(model, dispatch) -> candidate -> bench.prepare's entry (vmfb, function) for it."""
    wanted = {(r.model, r.dispatch): {p.candidate for p in r.points} for r in ranked}
    rows = defaultdict(lambda: defaultdict(list))
    for row in measurements.rows:
        if row.candidate in wanted.get((row.model, row.dispatch), ()):
            rows[row.model][row.dispatch].append(row)
    built: dict[tuple[str, str], dict[str, dict]] = defaultdict(dict)
    for model, dispatches in sorted(rows.items()):
        analysis = cg.load_analysis(zoo / "models" / f"{model}_host_analysis.analysis.json")
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


def time_interleaved(built: dict[tuple[str, str], dict[str, dict]], rounds: int
                     ) -> dict[tuple[str, str], dict[str, list[float]]]:
    """Seconds per dispatch of every candidate, `rounds` samples each; per round each dispatch's
    candidates run back to back in a carryover-balanced order."""
    times = {key: {c: [] for c in cands} for key, cands in built.items()}
    bar = progress(total=rounds * sum(len(c) for c in built.values()), desc="candidate timings")
    for r in range(rounds):
        for key, cands in sorted(built.items()):
            names = sorted(cands)
            orders = balanced_orders(len(names))
            for k in orders[r % len(orders)]:
                entry = cands[names[k]]
                times[key][names[k]].append(time_dispatch(entry["vmfb"], entry["function"], "local-task",
                                                          10, MIN_TIME_S))
                bar.update(1)
    bar.close()
    return times


def rank(ranked: list[_Ranked], measurements, times: dict[tuple[str, str], dict[str, list[float]]]
         ) -> list[dict]:
    stored = {(r.model, r.dispatch, r.candidate): r.measured_cycles for r in measurements.rows}
    results = []
    for r in ranked:
        samples = times.get((r.model, r.dispatch), {})
        points = [p for p in r.points if len(samples.get(p.candidate, ())) >= 2]
        if len(points) < MIN_CANDIDATES or not any(p.candidate == DEFAULT for p in points):
            continue
        median = {p.candidate: statistics.median(samples[p.candidate]) for p in points}
        even = [statistics.median(samples[p.candidate][0::2]) for p in points]
        odd = [statistics.median(samples[p.candidate][1::2]) for p in points]
        spread = [summary(samples[p.candidate])["iqr_rel"] for p in points]
        code = [p.code for p in points]
        cheapest = min(points, key=lambda p: p.code).candidate
        results.append({
            "model": r.model, "dispatch": r.dispatch, "kind": r.kind, "split": r.split,
            "candidates": len(points),
            "tau_code_retimed": kendall_tau(code, [median[p.candidate] for p in points]),
            "tau_code_stored": kendall_tau(code, [stored[(r.model, r.dispatch, p.candidate)] for p in points]),
            "tau_stored_retimed": kendall_tau([stored[(r.model, r.dispatch, p.candidate)] for p in points],
                                              [median[p.candidate] for p in points]),
            "tau_split_half": kendall_tau(even, odd),
            "median_iqr_rel": statistics.median(spread),
            "default_us": median[DEFAULT] * 1e6,
            "code_choice_over_default": median[cheapest] / median[DEFAULT],
            "best_over_default": min(median.values()) / median[DEFAULT],
            "points": [{"candidate": p.candidate, "code": p.code, "median_s": median[p.candidate],
                        "samples_s": samples[p.candidate]} for p in points],
        })
    return results


def markdown(results: list[dict], hardware: str, rounds: int, cpu: str) -> str:
    lines = [f"# Host ranking, re-timed interleaved ({hardware}; timed on {cpu})", "",
             "Generated by `bench/host_ranking.py`. Every candidate of the dispatches the code model was "
             f"ranked on (>= {MIN_CANDIDATES} candidates) timed {rounds} rounds interleaved "
             "(carryover-balanced), medians. Mean Kendall tau over dispatches: *code vs re-timed*: the code "
             "model's static cycles against the medians; *code vs stored*: against the calibration's single "
             "measurement (what host.code_cost.md reports); *stored vs re-timed*: the calibration's "
             "measurement against the medians; *split-half*: even rounds' medians against odd rounds' "
             "(the measurement against itself). *spread*: median over candidates of the interquartile "
             "range over the median.", "",
             "| split | dispatch size | dispatches | code vs re-timed | code vs stored | stored vs re-timed | "
             "split-half | spread | code choice / default | best / default |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    sizes = (("all", 0.0, float("inf")), ("default < 20 us", 0.0, 20.0), ("default >= 20 us", 20.0, float("inf")))
    for split in ("calibration", "held_out"):
        for label, lo, hi in sizes:
            sel = [r for r in results if r["split"] == split and lo <= r["default_us"] < hi]
            if not sel:
                continue
            lines.append(
                f"| {split} | {label} | {len(sel)} | {mean_text([r['tau_code_retimed'] for r in sel])} | "
                f"{mean_text([r['tau_code_stored'] for r in sel])} | {mean_text([r['tau_stored_retimed'] for r in sel])} | "
                f"{mean_text([r['tau_split_half'] for r in sel])} | "
                f"{statistics.median(r['median_iqr_rel'] for r in sel):.2f} | "
                f"{geomean([r['code_choice_over_default'] for r in sel]):.3f} | "
                f"{geomean([r['best_over_default'] for r in sel]):.3f} |")
    lines += ["", "## Per dispatch", "",
              "| split | model | dispatch | candidates | default us | code vs re-timed | split-half | spread |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in sorted(results, key=lambda r: (r["split"], r["model"], r["dispatch"])):
        lines.append(f"| {r['split']} | {r['model']} | {r['dispatch']} | {r['candidates']} | "
                     f"{r['default_us']:.1f} | {_fmt(r['tau_code_retimed'])} | {_fmt(r['tau_split_half'])} | "
                     f"{r['median_iqr_rel']:.2f} |")
    return "\n".join(lines) + "\n"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoo", type=Path, required=True, help="bazel-bin of a built zoo (models/*_host_analysis...)")
    p.add_argument("--measurements", type=Path, default=Path("analysis/calibration/host.measurements.json"))
    p.add_argument("--code-cost", type=Path, default=Path("analysis/calibration/host.code_cost.json"))
    p.add_argument("--target", type=Path, default=Path("common/targets/host.yaml"))
    p.add_argument("--split", choices=("calibration", "held_out"), help="only this split's models")
    p.add_argument("--models", help="comma-separated: only these models")
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--out-json", type=Path, default=Path("analysis/calibration/host.ranking.json"))
    p.add_argument("--out-md", type=Path, default=Path("analysis/calibration/host.ranking.md"))
    a = p.parse_args(argv)
    # `tools/bazel run` starts in the runfiles tree: the paths are the user's (the defaults the
    # workspace's, when run from its root).
    a.zoo, a.measurements, a.code_cost, a.target, a.out_json, a.out_md = (
        out_path(x) for x in (a.zoo, a.measurements, a.code_cost, a.target, a.out_json, a.out_md))
    if a.rounds < 2:
        p.error("--rounds must be at least 2 (the split-half tau needs both halves)")
    try:
        measurements = load_measurements(a.measurements)
        ranked = [r for r in load_code_costs(a.code_cost)
                  if len(r.points) >= MIN_CANDIDATES and (a.split is None or r.split == a.split)
                  and (a.models is None or r.model in a.models.split(","))]
        if not ranked:
            raise EvalError(f"{a.code_cost}: no dispatch with >= {MIN_CANDIDATES} candidates to rank")
        with tempfile.TemporaryDirectory(prefix="host_ranking_") as tmp:
            built = build_candidates(ranked, measurements, a.zoo, a.target, Path(tmp))
            results = rank(ranked, measurements, time_interleaved(built, a.rounds))
    except (EvalError, cg.CompileError, RuntimeError) as err:
        print(f"host_ranking: error: {first_line(str(err))}", file=sys.stderr)
        return 1
    atomic_write(a.out_json, json.dumps(results, indent=1) + "\n")
    atomic_write(a.out_md, markdown(results, measurements.hardware, a.rounds, cpu_model() or "unknown CPU"))
    print(f"host_ranking: {len(results)} dispatches; wrote {a.out_md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
