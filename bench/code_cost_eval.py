"""How well the code-level cost model (perf/code_model/) ranks measured candidates.

    tools/bazel run //bench:code_cost_eval -- --zoo $(tools/bazel info bazel-bin)

Reads the calibration's measured candidates (docs/data/calibration/<hardware>.measurements.json:
each candidate config of a zoo dispatch with its model cycles on the accelerator's core),
compiles every model once per round with each dispatch forced to its round's candidate (as
choice.tune does), costs the code statically (perf.code_model: no run) and reports, per split,
the Kendall tau between static and measured cycles within each dispatch, next to the tau of
the tile-level prediction stored with the measurement, and what choosing the statically
cheapest candidate would have measured against IREE's default. Nothing is fitted: the code
model has no coefficients, so calibration and held-out models are evaluated alike.
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

from analysis.cost_model import replaces_default
from common.hardware import HardwareError, load_hardware
from bench.calibrate import summed_by_model
from bench.run_bench import out_path
from common.stats import geomean, kendall_tau
from codegen import compile as cg
from common.analysis_schema import Analysis
from common.errors import first_line
from common.files import atomic_write
from common.targets import TargetError, load_target
from perf import mca
from choice.rounds import module_call_cycles
from perf.code_model.errors import CodeCostError

DEFAULT = "iree-default"
MIN_CANDIDATES = 5  # issue 14: tau over dispatches with at least 5 candidates
# Margins of the per-model table: a dispatch takes the code model's cheapest candidate only when
# it is predicted at least this much cheaper than IREE's default (the rule a build would use).
MARGINS = (0.0, 0.1, 0.2, 0.3)


class _Row(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    dispatch: str
    candidate: str
    split: str
    kind: str
    tiles: dict[str, list[int]] | None
    measured_cycles: float | None
    predicted_cycles: float | None = None  # the calibrated tile-level prediction, once fitted
    features: dict[str, float] = {}  # the tile model's features of the candidate (analysis.cost_model)


class _Measurements(BaseModel):
    model_config = ConfigDict(extra="ignore")
    hardware: str
    core_model: str | None
    rows: list[_Row]


class EvalError(RuntimeError):
    pass


def load_measurements(path: Path) -> _Measurements:
    """A calibration's measured candidates; EvalError naming the file and the first bad field."""
    try:
        return _Measurements.model_validate_json(path.read_text())
    except OSError as err:
        raise EvalError(f"{path}: cannot read: {err.strerror}") from None
    except ValidationError as err:
        raise EvalError(f"{path}: malformed: {first_line(str(err))}") from None


def forced(analysis: Analysis, assign: dict[str, _Row]) -> Analysis:
    """The analysis with each assigned dispatch compiled with that row's tiles (others: IREE's)."""
    data = analysis.model_dump(mode="json")
    data["measured_choice"] = None
    for d in data["dispatches"]:
        row = assign.get(d["name"])
        if row is None or row.candidate == DEFAULT:
            d["tiles"], d["chosen"], d["provenance"] = None, DEFAULT, DEFAULT
        else:
            # codegen applies tiles only under a provenance other than IREE's default.
            generator = next((c["generator"] for c in d["candidates"] if c["name"] == row.candidate), "search")
            d["tiles"], d["chosen"] = row.tiles, row.candidate
            d["provenance"] = "search" if generator == DEFAULT else generator
    return Analysis.model_validate(data)


def static_costs(module: Path, analysis: Analysis, assign: dict[str, _Row], target: Path, core: str,
                 work: Path) -> tuple[dict[str, float], set[str]]:
    """(dispatch -> static model cycles (all workgroups) of the round's candidates, the
    dispatches costed on llc-19's code because IREE's loops did not line up)."""
    # Compiled as choice.tune's code-model rounds compile one: from files.
    work.mkdir(parents=True, exist_ok=True)
    analysis_file = work / "forced.analysis.json"
    analysis_file.write_text(forced(analysis, assign).model_dump_json(indent=1))
    costed = module_call_cycles(module, analysis_file, target, core, work)
    per_call, llc_code = costed.cycles, costed.llc_code
    for name, why in costed.errors.items():
        if name in assign:
            print(f"code_cost_eval: {name} ({assign[name].candidate}): not costed: {why}", file=sys.stderr)
    return ({name: per_call[name] for name in assign if name in per_call}, llc_code & assign.keys())


def evaluate(measurements: _Measurements, zoo: Path, target: Path, core: str, work: Path,
             models: set[str] | None = None, pipeline: str = "riscv") -> list[dict]:
    """Per dispatch: its measured candidates with their static cycles; `pipeline` names the
    zoo's analyses the candidates come from (`<model>_riscv_analysis`, `<model>_host_predicted_analysis`)."""
    by_model: dict[str, dict[str, list[_Row]]] = defaultdict(lambda: defaultdict(list))
    for row in measurements.rows:
        if row.measured_cycles and (models is None or row.model in models):
            by_model[row.model][row.dispatch].append(row)
    # The host's shipped analysis (uncalibrated) has no ZigZag candidates: its predicted one has.
    suffix = "_host_predicted_analysis.analysis.json" if pipeline == "host" else f"_{pipeline}_analysis.analysis.json"
    results = []
    for model, dispatches in sorted(by_model.items()):
        path = zoo / "models" / f"{model}{suffix}"
        if not path.is_file():
            raise EvalError(f"{path}: missing (build the zoo first)")
        analysis = cg.load_analysis(path)
        module = zoo / "models" / f"{analysis.model}.mlirbc"
        static: dict[tuple[str, int], float] = {}
        on_llc_code: set[tuple[str, int]] = set()
        for j in range(max(len(rows) for rows in dispatches.values())):
            assign = {name: rows[j] for name, rows in dispatches.items() if j < len(rows)}
            try:
                costs, llc_code = static_costs(module, analysis, assign, target, core, work / model / f"round{j}")
            except (cg.CompileError, CodeCostError) as err:
                print(f"code_cost_eval: {model} round {j}: {first_line(str(err))}", file=sys.stderr)
                continue
            static.update({(name, j): cost for name, cost in costs.items()})
            on_llc_code |= {(name, j) for name in llc_code}
        for name, rows in sorted(dispatches.items()):
            points = [(static[(name, j)], r) for j, r in enumerate(rows) if (name, j) in static]
            if len(points) < 3 or not any(r.candidate == DEFAULT for _, r in points):
                continue
            default = next(r for _, r in points if r.candidate == DEFAULT)
            cheapest = min(points, key=lambda p: p[0])[1]
            # The tile-level columns need every candidate's calibrated prediction.
            tiled = all(r.predicted_cycles is not None for _, r in points)
            results.append({
                "model": model, "dispatch": name, "kind": rows[0].kind, "split": rows[0].split,
                "core": core, "candidates": len(points),
                "on_llc_code": sum(1 for j in range(len(rows)) if (name, j) in on_llc_code),
                "tau_code": kendall_tau([s for s, _ in points], [r.measured_cycles for _, r in points]),
                "tau_tiles": kendall_tau([r.predicted_cycles for _, r in points],
                                         [r.measured_cycles for _, r in points]) if tiled else None,
                "code_choice_over_default": cheapest.measured_cycles / default.measured_cycles,
                "tiles_choice_over_default": min((r for _, r in points), key=lambda r: r.predicted_cycles
                                                 ).measured_cycles / default.measured_cycles if tiled else None,
                "best_over_default": min(r.measured_cycles for _, r in points) / default.measured_cycles,
                "points": [{"candidate": r.candidate, "code": s, "tiles": r.predicted_cycles,
                            "measured": r.measured_cycles} for s, r in points],
            })
        print(f"code_cost_eval: {model}: {sum(1 for r in results if r['model'] == model)} dispatches", file=sys.stderr)
    return results


def mean_text(values: list[float | None]) -> str:
    kept = [v for v in values if v is not None]
    return f"{statistics.mean(kept):.2f}" if kept else "-"


def _geomean(values: list[float | None]) -> str:
    return f"{geomean(values):.3f}" if values and None not in values else "-"


def _default(result: dict) -> dict:
    return next(p for p in result["points"] if p["candidate"] == DEFAULT)


def _summed_by_model(results: list[dict], pick) -> dict[tuple[str, str], float]:
    """(split, model) -> calibrate.summed_by_model with each dispatch on `pick(result)` (a
    point): measured cycles summed over the model's dispatches, over IREE's defaults summed."""
    split = {r["model"]: r["split"] for r in results}
    ratios = summed_by_model([{"model": r["model"], "chosen_measured": pick(r)["measured"],
                               "default_measured": _default(r)["measured"]} for r in results])
    return dict(sorted(((split[model], model), ratio) for model, ratio in ratios.items()))


def summed_choice_by_model(results: list[dict], margin: float) -> dict[tuple[str, str], float]:
    """_summed_by_model with each dispatch on the code model's cheapest candidate when the
    analysis' choice rule (cost_model.replaces_default) takes it over IREE's default."""
    def pick(r: dict) -> dict:
        default, cheapest = _default(r), min(r["points"], key=lambda p: p["code"])
        return cheapest if replaces_default(cheapest["code"], default["code"], margin) else default

    return _summed_by_model(results, pick)


def _margin_table(results: list[dict]) -> list[str]:
    by_margin = {m: summed_choice_by_model(results, m) for m in MARGINS}
    best = _summed_by_model(results, lambda r: min(r["points"], key=lambda p: p["measured"]))
    lines = ["", "## Per model: the code model's choice with a margin", "",
             "Measured cycles of the model's evaluated dispatches, each with the code model's cheapest "
             "candidate when it is predicted at least the margin cheaper than IREE's default (else the "
             "default), summed, over IREE's defaults summed; *best*: the least measured candidate of each "
             "(an optimistic bound: the minimum of noisy measurements).", "",
             "| split | model | " + " | ".join(f"margin {m:.0%}" for m in MARGINS) + " | best |",
             "|---|---|" + "---:|" * (len(MARGINS) + 1)]
    for key in best:
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(f"{by_margin[m][key]:.3f}" for m in MARGINS)
                     + f" | {best[key]:.3f} |")
    for split in ("calibration", "held_out"):
        keys = [k for k in best if k[0] == split]
        if keys:
            lines.append(f"| {split} | **geomean** / worst | " + " | ".join(
                f"{geomean([by_margin[m][k] for k in keys]):.3f} / {max(by_margin[m][k] for k in keys):.3f}"
                for m in MARGINS) + f" | {geomean([best[k] for k in keys]):.3f} |")
    return lines


def markdown(results: list[dict], measurements: _Measurements, core: str) -> str:
    lines = [f"# Code-level cost model vs measurement ({measurements.hardware}, {core})", "",
             "Generated by `bench/code_cost_eval.py` from the calibration's measured candidates. "
             "Kendall tau per dispatch between predicted and measured model cycles of its candidates, "
             "mean over dispatches; *code*: perf/code_model/ (static: IREE's LLVM IR, scalar-evolution "
             "trip counts, llvm-mca per block; nothing fitted); *tiles*: the tile-level prediction "
             "stored with each measurement (the calibrated fit: in-sample on calibration models). "
             "*choice / default*: geomean over dispatches of the measured cycles of the candidate each "
             "model predicts cheapest, over IREE's default's.", "",
             "| split | candidates per dispatch | dispatches | tau, code | tau, tiles | code choice / default | "
             "tiles choice / default | best measured / default |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for split in ("calibration", "held_out"):
        for least in (MIN_CANDIDATES, 3):
            sel = [r for r in results if r["split"] == split and r["candidates"] >= least]
            if not sel:
                continue
            lines.append(f"| {split} | >= {least} | {len(sel)} | {mean_text([r['tau_code'] for r in sel])} | "
                         f"{mean_text([r['tau_tiles'] for r in sel])} | "
                         f"{geomean([r['code_choice_over_default'] for r in sel]):.3f} | "
                         f"{_geomean([r['tiles_choice_over_default'] for r in sel])} | "
                         f"{geomean([r['best_over_default'] for r in sel]):.3f} |")
    costed = sum(r["candidates"] for r in results)
    lines += ["", f"{sum(r['on_llc_code'] for r in results)} of the {costed} candidates evaluated were costed on "
              "llc-19's code (IREE's loops did not line up with it); the others on IREE's own code.",
              "", "## Per op kind (all splits, >= 3 candidates)", "",
              "| kind | dispatches | tau, code | tau, tiles |", "|---|---:|---:|---:|"]
    kinds = sorted({r["kind"] for r in results})
    for kind in kinds:
        sel = [r for r in results if r["kind"] == kind]
        lines.append(f"| {kind} | {len(sel)} | {mean_text([r['tau_code'] for r in sel])} | "
                     f"{mean_text([r['tau_tiles'] for r in sel])} |")
    lines += _margin_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zoo", type=Path, required=True, help="bazel-bin of a built zoo (models/*_riscv_analysis...)")
    p.add_argument("--measurements", type=Path, default=Path("docs/data/calibration/riscv_rvv.measurements.json"))
    p.add_argument("--hardware", type=Path, default=Path("analysis/hardware/riscv_rvv.yaml"))
    p.add_argument("--target", type=Path, help="the riscv target of the zoo's analyses "
                   "(default: <zoo>/analysis/<hardware>.target.yaml)")
    p.add_argument("--out-md", type=Path, default=Path("docs/data/calibration/riscv_rvv.code_cost.md"))
    p.add_argument("--out-json", type=Path, default=Path("docs/data/calibration/riscv_rvv.code_cost.json"),
                   help="every evaluated dispatch with its candidates' code-model and measured cycles")
    p.add_argument("--models", help="comma-separated: only these models' measurements")
    p.add_argument("--pipeline", default="riscv", choices=["riscv", "host"],
                   help="whose analyses the measured candidates are of (default riscv)")
    p.add_argument("--core", help="llvm-mca core model (default: the hardware's model_core; "
                   "the host's measurements need the build machine's x86 core, e.g. sapphirerapids)")
    mca.add_llvm_bin_argument(p, default=mca.runfiles_llvm_bin())
    a = p.parse_args(argv)
    mca.use_llvm_bin(a.llvm_bin)
    # `tools/bazel run` starts in the runfiles tree: the paths are the user's (the defaults the
    # workspace's, when run from its root).
    a.zoo, a.measurements, a.hardware, a.out_md, a.out_json = (
        out_path(x) for x in (a.zoo, a.measurements, a.hardware, a.out_md, a.out_json))
    a.target = a.target and out_path(a.target)
    try:
        measurements = load_measurements(a.measurements)
        hardware = load_hardware(a.hardware)
        core = a.core or hardware.model_core
        if not core:
            raise EvalError(f"{a.hardware}: no model_core and no --core (the code model needs a core model)")
        target = a.target or a.zoo / "analysis" / f"{a.hardware.stem}.target.yaml"
        load_target(target)  # refused here, in one line, not in every round
        with tempfile.TemporaryDirectory(prefix="code_cost_eval.") as tmp:
            models = set(a.models.split(",")) if a.models else None
            results = evaluate(measurements, a.zoo, target, core, Path(tmp), models, a.pipeline)
        text = markdown(results, measurements, core)
    except FileNotFoundError as err:
        print(f"code_cost_eval: {err.filename}: not found", file=sys.stderr)
        return 1
    except (EvalError, HardwareError, TargetError, cg.CompileError, CodeCostError) as err:
        print(f"code_cost_eval: {first_line(str(err))}", file=sys.stderr)
        return 1
    atomic_write(a.out_md, text)
    if a.out_json:
        atomic_write(a.out_json, json.dumps(results, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
