"""Calibrates the analysis' cost model for one hardware description against measurements.

    tools/bazel run //tools:calibrate -- riscv_rvv        # or: host
    python -m bench.calibrate --hardware analysis/hardware/riscv_rvv.yaml --target T.yaml ...

For every model of the zoo (models/*_pipeline_info.json): the analysis lists each dispatch's
candidates (IREE's default first); in round j every dispatch is compiled with its j-th
candidate (IREE's default, then the others in the uncalibrated model's order), so R compiles
measure up to R candidates of every dispatch. Measured per dispatch:
- riscv hardware (it names a RISC-V llvm-mca `model_core`): model cycles on that core (perf/);
- the host: iree-benchmark-module time of the dispatch's own benchmark module x clock.
Only `calibration` models are fitted (non-negative least squares on relative error, numpy):
once on all their measurements, and once per op kind with at least MIN_ROWS_PER_KIND of them
(that kind's coefficients); the choice margin is picked by leave-one-model-out
cross-validation on them; `held_out` models are measured and reported, never fitted. For riscv
hardware the candidates the build's measured choice already ran (choice/tune.py, every zoo
model) are added (`--measured-choices`). Writes
analysis/calibration/<hardware>.json (coefficients, read by the analysis) and
<hardware>.measurements.json (every measured candidate with its features, the fit's and the
held-out's Kendall tau per dispatch).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import stats
from common.hardware import HardwareError
from bench.artifacts import PipelineInfo, zoo
from common.calibration_schema import Calibration, FitQuality, coefficients_for
from common.files import atomic_write, sha256_file
from choice.tune import forced_analysis, round_assignments

ROUNDS = 6
# The measurements and evaluation behind a calibration: evidence, not build inputs.
EVIDENCE = Path("docs/data/calibration")
# A candidate replaces IREE's default only when predicted at least `margin` cheaper; the margin
# is the one of these that gives the lowest measured cost over the calibration dispatches,
# cross-validated by model (choose_margin; ties: the larger margin, the more conservative rule).
MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 0.9)
MIN_CANDIDATES_FOR_TAU = 5
# An op kind gets coefficients of its own from this many calibration measurements (two per
# coefficient); fewer, and it is priced by the coefficients fitted on every kind together.
MIN_ROWS_PER_KIND = 30


class CalibrationError(RuntimeError):
    pass


def _run(cmd: list[str], what: str) -> None:
    from bench.core import child_env

    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines() or ["(no output)"]
        raise CalibrationError(f"{what}: {lines[-1]}")


def prepare_dispatches(module: Path, target: Path, analysis: Path, work: Path, what: str) -> dict:
    """dispatch -> bench.prepare's benchmark module (vmfb, function) of `module` compiled with
    `analysis`; run in its own process (IREE's MLIR libraries)."""
    _run([sys.executable, "-m", "bench.prepare", "--module", str(module), "--target", str(target),
          "--analysis", str(analysis), "--work", str(work), "--variants", "tuned"], f"{what}: bench.prepare")
    return json.loads((work / "prepare.json").read_text())["tuned"]["dispatches"]


class Measurer:
    def __init__(self, hardware: Path, target: Path, runner: Path | None, plugin: Path | None,
                 work: Path, qemu: Path | None = None, llvm_bin: Path | None = None):
        from common.hardware import load_hardware

        self.hardware, self.target, self.runner, self.plugin, self.work = \
            hardware, target, runner, plugin, work
        self.qemu, self.llvm_bin = qemu, llvm_bin
        from common.core_models import RISCV, core_model

        hw = load_hardware(hardware)
        # A RISC-V core model: candidates are measured in its model cycles under qemu. Any other
        # hardware (the host, whose model_core prices its code statically) is timed.
        riscv = hw.model_core is not None and core_model(hw.model_core).isa == RISCV
        self.core = hw.model_core if riscv else None
        self.clock_hz = hw.clock_ghz * 1e9
        if self.core and (runner is None or plugin is None or qemu is None or llvm_bin is None):
            raise CalibrationError(f"{hardware}: riscv hardware needs --runner, --plugin, --qemu and --llvm-bin")

    @property
    def measure(self) -> str:
        return "riscv-model-cycles" if self.core else "host-time"

    def __call__(self, info: PipelineInfo, mlirbc: Path, analysis: Path, tag: str
                 ) -> dict[str, float]:
        """dispatch -> measured cycles for the module compiled with `analysis`."""
        out = self.work / f"{info.name}.{tag}"
        if self.core:
            _run([sys.executable, "-m", "codegen.compile", "--module", str(mlirbc), "--target", str(self.target),
                  "--analysis", str(analysis), "--out-vmfb", f"{out}.vmfb", "--out-configs", f"{out}.configs.mlir",
                  "--out-report", f"{out}.report.json", "--out-layout", f"{out}.layout.json"],
                 f"{info.name} {tag}: codegen.compile")
            _run([sys.executable, "-m", "perf.measure", "--vmfb", f"{out}.vmfb", "--layout", f"{out}.layout.json",
                  "--compiled-report", f"{out}.report.json",
                  "--module", str(mlirbc), "--target",
                  str(self.target), "--analysis", str(analysis), "--hardware", str(self.hardware),
                  "--runner", str(self.runner), "--plugin", str(self.plugin), "--qemu", str(self.qemu),
                  "--llvm-bin", str(self.llvm_bin), "--model-name", info.model_name, "--out-json", f"{out}.perf.json", "--out-md", f"{out}.perf.md"],
                 f"{info.name} {tag}: perf.measure")
            from common.perf_schema import PerfReport

            report = PerfReport.model_validate_json(Path(f"{out}.perf.json").read_text())
            return {d.name: float(d.model_cycles) for d in report.run_for(self.core).dispatches
                    if d.model_cycles is not None}
        from bench.core import time_dispatch

        prep = prepare_dispatches(mlirbc, self.target, analysis, Path(f"{out}.bench"),
                                  f"{info.name} {tag}")
        result = {}
        for name, d in sorted(prep.items()):
            times = [time_dispatch(d["vmfb"], d["function"], "local-task", 10, 0.05)
                     for _ in range(3)]
            result[name] = statistics.median(times) * self.clock_hz
        return result


def uncalibrated_analysis(info: PipelineInfo, mlirbc: Path, measurer: Measurer, out: Path) -> dict:
    """The model's analysis without a calibration: every candidate with its features."""
    _run([sys.executable, "-m", "analysis.analyze", "--module", str(mlirbc), "--target",
          str(measurer.target), "--hardware", str(measurer.hardware), "--model-name",
          info.model_name, "--out", str(out)], f"{info.name}: analysis")
    return json.loads(out.read_text())


def measure_model(info: PipelineInfo, mlirbc: Path, measurer: Measurer, rounds: int,
                  work: Path) -> list[dict]:
    analysis = uncalibrated_analysis(info, mlirbc, measurer, work / f"{info.name}.analysis.json")
    by_name = {d["name"]: d for d in analysis["dispatches"]}
    rows, done = [], set()
    for j, assign in enumerate(round_assignments(analysis, rounds)):
        todo = {d: c for d, c in assign.items() if (d, c) not in done}
        if not todo:
            break
        path = work / f"{info.name}.round{j}.analysis.json"
        path.write_text(json.dumps(forced_analysis(analysis, assign, "calibration round"), indent=1))
        try:
            measured = measurer(info, mlirbc, path, f"round{j}")
        except CalibrationError as err:
            # One failed measurement (e.g. qemu 7.2 aborting in its translator) loses this
            # round's candidates only; said here, and absent from the measurements.
            print(f"calibrate: {info.name} round {j} not measured: {err}", file=sys.stderr)
            continue
        print(f"calibrate: {info.name} round {j}: {len(todo)} new candidates measured",
              file=sys.stderr)
        for disp, cand_name in sorted(todo.items()):
            if disp not in measured:
                continue
            cand = next(c for c in by_name[disp]["candidates"] if c["name"] == cand_name)
            done.add((disp, cand_name))
            rows.append({"model": info.name, "split": info.split, "dispatch": disp,
                         "kind": by_name[disp]["kind"], "candidate": cand_name,
                         "tiles": cand["tiles"], "features": cand["features"],
                         "measured_cycles": measured[disp]})
    return rows


def measured_choice_rows(infos: list[PipelineInfo], zoo_root: Path, hw_name: str, core: str
                         ) -> list[dict]:
    """The candidates the build's measured choice already ran (choice/tune.py records each
    shortlisted candidate's model cycles in models/<pipeline>_riscv_analysis.analysis.json):
    rows like measure_model's, without measuring again. Only analyses measured on this
    hardware and core are read; a missing one is an error naming it."""
    from codegen.compile import CompileError, load_analysis

    rows = []
    for info in infos:
        path = zoo_root / "models" / f"{info.name}_riscv_analysis.analysis.json"
        try:
            analysis = load_analysis(path)
        except CompileError as err:
            raise CalibrationError(f"{err} (measured choices come from "
                                   "//models:zoo_measured_choices)") from None
        mc = analysis.measured_choice
        if mc is None or mc.hardware != hw_name or mc.core != core:
            raise CalibrationError(f"{path}: not a measured choice on {hw_name} ({core})")
        for d in analysis.dispatches:
            for c in d.candidates:
                if c.measured_model_cycles:
                    rows.append({"model": info.name, "split": info.split, "dispatch": d.name,
                                 "kind": d.kind, "candidate": c.name, "tiles": c.tiles,
                                 "features": c.features, "source": "measured-choice",
                                 "measured_cycles": float(c.measured_model_cycles)})
    return rows


def merge_rows(measured: list[dict], harvested: list[dict]) -> list[dict]:
    """`measured` plus the `harvested` rows of candidates (same model, dispatch and tiles) it
    does not have: one row per candidate, the calibration's own measurement first."""
    def key(r: dict) -> tuple:
        return r["model"], r["dispatch"], json.dumps(r["tiles"], sort_keys=True)

    have = {key(r) for r in measured}
    return measured + [r for r in harvested if key(r) not in have]


def refresh_features(rows: list[dict], infos: list[PipelineInfo], zoo_root: Path,
                     measurer: Measurer, work: Path) -> list[dict]:
    """Stored measurements with features recomputed by today's cost model: the analysis is
    rerun and each row matched to the candidate with the same tiles (rows whose tiles no
    candidate has any more are dropped, and counted)."""
    out, dropped = [], 0
    by_model = {i.name: i for i in infos}
    for model in sorted({r["model"] for r in rows}):
        info = by_model[model]
        analysis = uncalibrated_analysis(info, zoo_root / "models" / f"{info.model_name}.mlirbc",
                                         measurer, work / f"{model}.refresh.analysis.json")
        feats = {(d["name"], json.dumps(c["tiles"], sort_keys=True)): c["features"]
                 for d in analysis["dispatches"] for c in d["candidates"]}
        for r in rows:
            if r["model"] != model:
                continue
            f = feats.get((r["dispatch"], json.dumps(r["tiles"], sort_keys=True)))
            if f is None:
                dropped += 1
                continue
            out.append(dict(r, features=f))
    if dropped:
        print(f"calibrate: {dropped} stored measurements match no current candidate: dropped",
              file=sys.stderr)
    return out


@dataclasses.dataclass(frozen=True)
class Fitted:
    """Coefficients fitted on every row (`pooled`) and, per op kind with at least
    MIN_ROWS_PER_KIND rows, on that kind's rows alone (`by_kind`)."""
    pooled: dict[str, float]
    by_kind: dict[str, dict[str, float]]

    def for_kind(self, kind: str) -> dict[str, float]:
        return coefficients_for(kind, self.pooled, self.by_kind)


def fit(rows: list[dict]) -> Fitted:
    """fit_coefficients() on all `rows`, and on each op kind's rows when it has enough."""
    per_kind: dict[str, list[dict]] = {}
    for r in rows:
        if r["measured_cycles"] > 0:
            per_kind.setdefault(r["kind"], []).append(r)
    return Fitted(pooled=fit_coefficients(rows),
                  by_kind={k: fit_coefficients(rs) for k, rs in sorted(per_kind.items())
                           if len(rs) >= MIN_ROWS_PER_KIND})


def fit_coefficients(rows: list[dict]) -> dict[str, float]:
    """Coefficients >= 0 (numpy NNLS) minimising, together, the relative error of each
    prediction sum(c_f x feature_f) and the error of each candidate's predicted cost relative
    to IREE's default on the same dispatch (what the choice depends on):
        (pred_c - pred_default x measured_c / measured_default) / measured_c  -> 0."""
    import numpy as np

    from analysis.cost_model import FEATURES

    usable = [r for r in rows if r["measured_cycles"] > 0]
    if len(usable) < len(FEATURES):
        raise CalibrationError(f"{len(usable)} measurements: too few to fit {len(FEATURES)} "
                               "coefficients")
    lines = [[r["features"][f] / r["measured_cycles"] for f in FEATURES] for r in usable]
    targets = [1.0] * len(lines)
    defaults = {(r["model"], r["dispatch"]): r for r in usable if r["candidate"] == "iree-default"}
    for r in usable:
        d = defaults.get((r["model"], r["dispatch"]))
        if d is None or r is d:
            continue
        ratio = r["measured_cycles"] / d["measured_cycles"]
        lines.append([(r["features"][f] - d["features"][f] * ratio) / r["measured_cycles"]
                      for f in FEATURES])
        targets.append(0.0)
    a = np.array(lines)
    # Scale columns to unit norm so the active-set solver is well conditioned.
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    x = stats.nnls(a / norms, np.array(targets)) / norms
    return {f: float(f"{v:.6g}") for f, v in zip(FEATURES, x)}


def _folds(rows: list[dict]) -> list[tuple[Fitted, list[dict]]]:
    """Leave one model out: per calibration model, the coefficients fitted without it and
    (copies of) its rows."""
    models = sorted({r["model"] for r in rows})
    if len(models) < 2:
        raise CalibrationError("cross-validation needs at least two calibration models")
    return [(fit([r for r in rows if r["model"] != m]), [dict(r) for r in rows if r["model"] == m])
            for m in models]


def cross_validate(folds: list[tuple[Fitted, list[dict]]], margin: float) -> list[dict]:
    """Per calibration dispatch, evaluate() with a cost model that never saw its model."""
    return [d for fitted, test in folds for d in evaluate(test, fitted, margin)["dispatches"]]


def summed_by_model(dispatches: list[dict]) -> dict[str, float]:
    """Per model: measured cycles of the chosen candidates over IREE's defaults, summed over
    its dispatches measured with both (the model's own speed-up, not a per-dispatch mean)."""
    out = {}
    for model in sorted({d["model"] for d in dispatches}):
        both = [d for d in dispatches if d["model"] == model and d["default_measured"]]
        if both:
            out[model] = sum(d["chosen_measured"] for d in both) / \
                sum(d["default_measured"] for d in both)
    return out


def choose_margin(folds: list[tuple[Fitted, list[dict]]]) -> float:
    """The margin of MARGINS under which the calibration model that loses most, cross-validated
    (cross_validate: each model priced by a fit without it), loses least; then the lowest
    geomean of measured chosen/default over the dispatches; ties go to the larger margin.
    "Never regress" is judged per model on models the fit has not seen: an in-sample choice,
    or a mean over dispatches, would let one mispredicted op kind slow a whole model down."""
    best = None
    for margin in MARGINS:
        cv = cross_validate(folds, margin)
        worst = max(summed_by_model(cv).values(), default=1.0)
        score = (round(worst, 4), _geomean_chosen(cv) or 1.0)
        if best is None or score <= best[0]:
            best = (score, margin)
    return best[1]


def evaluate(rows: list[dict], fitted: Fitted, margin: float) -> dict:
    """Per dispatch: Kendall tau of predicted vs measured over its candidates, and what the
    calibrated choice rule would have picked vs IREE's default (measured)."""
    from analysis.cost_model import predict, replaces_default

    per: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        r["predicted_cycles"] = predict(r["features"], fitted.for_kind(r["kind"]))
        per.setdefault((r["model"], r["dispatch"]), []).append(r)
    out = []
    for (model, disp), rs in sorted(per.items()):
        default = next((r for r in rs if r["candidate"] == "iree-default"), None)
        best = min(rs, key=lambda r: r["predicted_cycles"])
        pick = best if default is None or replaces_default(
            best["predicted_cycles"], default["predicted_cycles"], margin) else default
        out.append({
            "model": model, "split": rs[0]["split"], "dispatch": disp, "kind": rs[0]["kind"],
            "candidates": len(rs),
            "kendall_tau": stats.kendall_tau([r["predicted_cycles"] for r in rs],
                                             [r["measured_cycles"] for r in rs])
            if len(rs) >= 2 else None,
            "chosen": pick["candidate"],
            "chosen_over_default_measured": pick["measured_cycles"] / default["measured_cycles"]
            if default and default["measured_cycles"] > 0 else None,
            "best_measured": min(rs, key=lambda r: r["measured_cycles"])["candidate"],
            "chosen_measured": pick["measured_cycles"],
            "default_measured": default["measured_cycles"] if default else None,
        })
    return {"margin": margin, "dispatches": out}


def _taus(dispatches: list[dict]) -> list[float]:
    """Kendall tau of the dispatches with enough measured candidates for it to mean much."""
    return [d["kendall_tau"] for d in dispatches
            if d["candidates"] >= MIN_CANDIDATES_FOR_TAU and d["kendall_tau"] is not None]


def _chosen_ratios(dispatches: list[dict]) -> list[float]:
    return [d["chosen_over_default_measured"] for d in dispatches
            if d["chosen_over_default_measured"]]


def _mean_tau(dispatches: list[dict]) -> float | None:
    taus = _taus(dispatches)
    return float(f"{statistics.mean(taus):.4g}") if taus else None


def _geomean_chosen(dispatches: list[dict]) -> float | None:
    ratios = _chosen_ratios(dispatches)
    return float(f"{stats.geomean(ratios):.4g}") if ratios else None


def _quality(rows: list[dict], ev: dict, cv: list[dict]) -> FitQuality:
    errs = [abs(r["predicted_cycles"] / r["measured_cycles"] - 1) for r in rows
            if r["measured_cycles"] > 0]
    return FitQuality(rows=len(rows), dispatches=len(ev["dispatches"]),
                      median_abs_relative_error=float(f"{statistics.median(errs):.4g}") if errs else 0.0,
                      mean_kendall_tau=_mean_tau(ev["dispatches"]),
                      cross_validated_kendall_tau=_mean_tau(cv),
                      cross_validated_chosen_over_default=_geomean_chosen(cv))


def _bazel_defaults(hardware: str) -> list[str]:
    """`bazel run //tools:calibrate -- <hardware>`: every input from the binary's runfiles,
    the calibration written into the workspace's analysis/calibration/."""
    from bench.artifacts import workspace_roots

    root = next((r for r in workspace_roots() if (r / "analysis" / "hardware").is_dir()), None)
    if root is None:
        raise CalibrationError("no analysis/hardware/ in the runfiles: run through bazel run //tools:calibrate")
    hw = root / "analysis" / "hardware" / f"{hardware}.yaml"
    if not hw.is_file():
        known = sorted(f.stem for f in (root / "analysis" / "hardware").glob("*.yaml"))
        raise CalibrationError(f"unknown hardware '{hardware}' (known: {', '.join(known)})")
    target = root / "common" / "targets" / "host.yaml" if hardware == "host" else \
        root / "analysis" / f"{hardware}.target.yaml"
    workspace = Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."))
    # riscv: the candidates the build's measured choice ran are fitted on too.
    harvest = [] if hardware == "host" else ["--measured-choices"]
    return harvest + ["--hardware", str(hw), "--target", str(target), "--zoo", str(root),
            "--out-dir", str(workspace / "analysis" / "calibration"),
            "--evidence-dir", str(workspace / EVIDENCE),
            "--runner", str(root / "runtime" / "hal_runner" / "hal_runner_riscv64"),
            "--plugin", str(root / "perf" / "libinsn_classes.so"),
            "--qemu", str(root / "tools" / "qemu" / "qemu-riscv64"),
            "--llvm-bin", str(root.parent / "llvm19")]


def markdown(cal: Calibration, ev: dict) -> str:
    """The calibration's summary: coefficients, and per dispatch the candidates' Kendall tau
    and what the calibrated rule picks vs IREE's default (measured), the two sets apart."""
    kinds = sorted(cal.kind_coefficients)
    unit = "model cycles on " + cal.core_model if cal.core_model else "host cycles (time x clock)"
    lines = [f"# Cost-model calibration: {cal.hardware} ({unit})", "",
             f"Fitted on: {', '.join(cal.fitted_on)} ({cal.fit.rows} measured candidates). "
             f"Median |relative error| {cal.fit.median_abs_relative_error:.3f}; choice margin "
             f"{cal.choice_margin:.0%}.", "",
             "Cycles per unit of each feature: fitted on every kind (pricing the kinds without "
             f"a column) and on each kind with at least {cal.min_rows_per_kind} measurements.", "",
             "| " + " | ".join(["feature", "every kind", *kinds]) + " |",
             "|---|---|" + "---|" * len(kinds)]
    lines += ["| " + " | ".join([f, f"{v:.4g}", *(f"{cal.kind_coefficients[k][f]:.4g}"
                                                for k in kinds)]) + " |"
              for f, v in sorted(cal.coefficients.items())]
    lines += ["", "Cross-validated on the calibration set (each model priced by a fit without "
              f"it): mean Kendall tau {cal.fit.cross_validated_kendall_tau}, geomean measured "
              f"chosen/IREE default {cal.fit.cross_validated_chosen_over_default}.",
              "", "## per model (measured chosen/IREE default, geomean over its measured "
              "dispatches; calibration models in-sample)", "",
              "| model | split | dispatches | switched | chosen/default (geomean) | "
              "chosen/default (summed cycles) | worst dispatch |",
              "|---|---|---|---|---|---|---|"]
    summed_per_model = summed_by_model(ev["dispatches"])
    for model in sorted({d["model"] for d in ev["dispatches"]}):
        sel = [d for d in ev["dispatches"] if d["model"] == model]
        ratios = _chosen_ratios(sel)
        summed = summed_per_model.get(model, 1.0)
        lines.append(f"| {model} | {sel[0]['split']} | {len(sel)} | "
                     f"{sum(d['chosen'] != 'iree-default' for d in sel)} | "
                     f"{stats.geomean(ratios) or 1:.3f} | {summed:.3f} | "
                     f"{max(ratios, default=1):.3f} |")
    for split in ("calibration", "held_out"):
        sel = [d for d in ev["dispatches"] if d["split"] == split]
        if not sel:
            continue
        taus, ratios = _taus(sel), _chosen_ratios(sel)
        lines += ["", f"## {split} dispatches", "",
                  f"Mean Kendall tau over dispatches with >= {MIN_CANDIDATES_FOR_TAU} measured "
                  f"candidates: {statistics.mean(taus):.3f} (n = {len(taus)}). " if taus else
                  "No dispatch with enough measured candidates for tau. ",
                  f"Geomean measured chosen/IREE default: {stats.geomean(ratios) or 1:.3f}.", "",
                  "| model | dispatch | kind | candidates | tau | chosen | chosen/default (measured) | best measured |",
                  "|---|---|---|---|---|---|---|---|"]
        for d in sel:
            tau = "-" if d["kendall_tau"] is None else f"{d['kendall_tau']:.2f}"
            r = "-" if d["chosen_over_default_measured"] is None else f"{d['chosen_over_default_measured']:.3f}"
            lines.append(f"| {d['model']} | {d['dispatch']} | {d['kind']} | {d['candidates']} | {tau} | "
                         f"{d['chosen']} | {r} | {d['best_measured']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-"):
        try:
            argv = _bazel_defaults(argv[0]) + argv[1:]
        except CalibrationError as err:
            print(f"calibrate: {err}", file=sys.stderr)
            return 1
    p = argparse.ArgumentParser(prog="python -m bench.calibrate", description=__doc__.splitlines()[0])
    p.add_argument("--hardware", required=True, type=Path)
    p.add_argument("--target", required=True, type=Path, help="IREE target file for that hardware")
    p.add_argument("--zoo", required=True, type=Path, help="directory with models/*_pipeline_info.json and imports")
    p.add_argument("--out-dir", required=True, type=Path,
                   help="where the coefficients go, a build input (analysis/calibration)")
    p.add_argument("--evidence-dir", type=Path, default=EVIDENCE,
                   help=f"where the measurements and the evaluation report go (default {EVIDENCE})")
    p.add_argument("--runner", type=Path, help="riscv64 hal_runner (riscv hardware)")
    p.add_argument("--plugin", type=Path, help="libinsn_classes.so (riscv hardware)")
    p.add_argument("--qemu", type=Path, help="qemu-riscv64 that loads it, //tools/qemu (riscv hardware)")
    p.add_argument("--llvm-bin", type=Path, help="LLVM 19's tools, @llvm19 (riscv hardware)")
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--models", help="comma-separated pipeline names (default: the whole zoo)")
    p.add_argument("--reuse-measurements", action="store_true",
                   help="refit from the existing <hardware>.measurements.json, measure nothing")
    p.add_argument("--merge", action="store_true",
                   help="keep the existing measurements of models not measured now")
    p.add_argument("--measured-choices", action="store_true",
                   help="also fit on the candidates the build's measured choice ran "
                        "(models/<pipeline>_riscv_analysis.analysis.json under --zoo; riscv)")
    a = p.parse_args(argv)
    try:
        from common.hardware import load_hardware

        hw_name = load_hardware(a.hardware).name
        meas_path = a.evidence_dir / f"{a.hardware.stem}.measurements.json"
        with tempfile.TemporaryDirectory(prefix="calibrate.") as tmp:
            measurer = Measurer(a.hardware, a.target, a.runner, a.plugin, Path(tmp), a.qemu, a.llvm_bin)
            if a.reuse_measurements:
                rows = refresh_features(json.loads(meas_path.read_text())["rows"], zoo(a.zoo),
                                        a.zoo, measurer, Path(tmp))
            else:
                infos = zoo(a.zoo)
                if a.models:
                    want = a.models.split(",")
                    unknown = sorted(set(want) - {i.name for i in infos})
                    if unknown:
                        raise CalibrationError(f"unknown model '{unknown[0]}'")
                    infos = [i for i in infos if i.name in want]
                rows = []
                for info in infos:
                    mlirbc = a.zoo / "models" / f"{info.model_name}.mlirbc"
                    rows += measure_model(info, mlirbc, measurer, a.rounds, Path(tmp))
                if a.merge and meas_path.exists():
                    measured_now = {i.name for i in infos}
                    rows += [r for r in json.loads(meas_path.read_text())["rows"]
                             if r["model"] not in measured_now]
            if a.measured_choices:
                if not measurer.core:
                    raise CalibrationError("--measured-choices: only riscv hardware has a "
                                           "measured choice (model cycles)")
                # Features as the build's analysis computed them: the same cost model code.
                rows = merge_rows(rows, measured_choice_rows(zoo(a.zoo), a.zoo, hw_name,
                                                             measurer.core))
        def write_measurements(**extra) -> None:
            atomic_write(meas_path, json.dumps({"hardware": hw_name, "measure": measurer.measure,
                                                "core_model": measurer.core, "rows": rows,
                                                **extra}, indent=1, sort_keys=True) + "\n")

        a.out_dir.mkdir(parents=True, exist_ok=True)
        a.evidence_dir.mkdir(parents=True, exist_ok=True)
        if not a.reuse_measurements:
            # Measurements are the slow, irreplaceable part: on disk before anything can fail.
            write_measurements()
        fitted = [r for r in rows if r["split"] == "calibration"]
        model_fit = fit(fitted)
        folds = _folds(fitted)
        margin = choose_margin(folds)
        cv = cross_validate(folds, margin)
        ev = evaluate(rows, model_fit, margin)
        ev["cross_validated"] = cv
        quality = _quality(fitted, {"dispatches": [d for d in ev["dispatches"]
                                                   if d["split"] == "calibration"]}, cv)
        cal = Calibration(hardware=hw_name, hardware_sha256=sha256_file(a.hardware),
                          measure=measurer.measure, core_model=measurer.core,
                          coefficients=model_fit.pooled,
                          kind_coefficients=model_fit.by_kind,
                          min_rows_per_kind=MIN_ROWS_PER_KIND, choice_margin=margin,
                          fitted_on=sorted({r["model"] for r in fitted}), fit=quality)
        write_measurements(evaluation=ev)
        atomic_write(a.out_dir / f"{a.hardware.stem}.json",
                     json.dumps(cal.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
        atomic_write(a.evidence_dir / f"{a.hardware.stem}.md", markdown(cal, ev))
    except (CalibrationError, HardwareError, OSError) as err:
        print(f"calibrate: {err}", file=sys.stderr)
        return 1
    except KeyError as err:
        print(f"calibrate: a stored row lacks field {err} (measured by an older cost model? "
              "measure again without --reuse-measurements)", file=sys.stderr)
        return 1
    held = [d for d in ev["dispatches"] if d["split"] == "held_out"]
    print(f"calibrate {hw_name}: {len(rows)} measurements, fitted on {len(fitted)} "
          f"(median |rel err| {quality.median_abs_relative_error:.3f}, mean tau "
          f"{quality.mean_kendall_tau}); held-out dispatches: {len(held)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
