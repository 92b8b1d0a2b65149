"""RISC-V figures for the bench and report: tuned vs IREE default per dispatch, from the
perf stage's measurements of the tuned and IREE-default riscv builds (bench.artifacts: through
<name>_riscv_perf_index, which riscv_perf's PerfInfo wrote).

Nothing here is timed: instruction counts are exact and model cycles deterministic, so one
build gives them. The analysis' predicted latency (cycles on its hardware description) is
set against the tuned module's model cycles on the description's own core (Spearman).
"""

from __future__ import annotations

from pathlib import Path

from common import stats
from common.analysis_schema import Analysis
from common.perf_schema import PerfReport


# "Tuned loses" means by more than this: identical configs can differ by a few hundred model
# cycles (libc copies whose path depends on buffer alignment), which is not a loss.
LOSS_MARGIN = 1.01


class RiscvResultsError(ValueError):
    """The perf files do not belong together (model, cores, dispatches)."""


def _load(path: Path) -> PerfReport:
    return PerfReport.model_validate_json(path.read_text())


def results(tuned_path: Path, default_path: Path, analysis_path: Path) -> dict:
    tuned, default = _load(tuned_path), _load(default_path)
    if (tuned.variant, default.variant) != ("tuned", "iree-default"):
        raise RiscvResultsError(f"{tuned_path.name}/{default_path.name}: expected a tuned and an IREE-default "
                                f"measurement, got {tuned.variant} and {default.variant}")
    if tuned.model != default.model or tuned.module_sha256 != default.module_sha256:
        raise RiscvResultsError(f"{tuned_path.name} and {default_path.name} measure different modules")
    analysis = Analysis.model_validate_json(analysis_path.read_text())
    predicted = {d.name: d.cost.latency_cycles if d.cost else None for d in analysis.dispatches}
    cores = []
    for run in tuned.runs:
        base = default.run_for(run.core) if run.core else next(r for r in default.runs if r.hardware == run.hardware)
        by_name = {d.name: d for d in base.dispatches}
        if set(by_name) != {d.name for d in run.dispatches}:
            raise RiscvResultsError(f"{run.hardware}: tuned and default modules have different dispatches")
        rows = []
        for d in run.dispatches:
            b = by_name[d.name]
            rows.append({
                "name": d.name, "kind": d.kind, "macs": d.macs,
                "instructions": {"tuned": d.instructions, "default": b.instructions},
                "vector_share": {"tuned": d.vector_share, "default": b.vector_share},
                "model_cycles": {"tuned": d.model_cycles, "default": b.model_cycles},
                "fma_peak_share": {"tuned": d.fma_peak_share, "default": b.fma_peak_share},
                "predicted_cycles": predicted.get(d.name),
                "tuned_over_default": (d.model_cycles / b.model_cycles
                                       if d.model_cycles and b.model_cycles else None),
            })
        own = run.hardware == analysis.hardware
        pairs = [(r["predicted_cycles"], r["model_cycles"]["tuned"]) for r in rows
                 if r["predicted_cycles"] and r["model_cycles"]["tuned"]]
        cores.append({
            "hardware": run.hardware, "core": run.core, "vlen": run.vlen, "model_ignores": run.model_ignores,
            "analysed_for": own, "dispatches": rows,
            # One call of the model: each dispatch times its calls (initializers excluded).
            "instructions": {"tuned": run.inference_instructions, "default": base.inference_instructions},
            "model_cycles": {"tuned": run.inference_model_cycles, "default": base.inference_model_cycles},
            "tuned_over_default": (run.inference_model_cycles / base.inference_model_cycles
                                   if run.inference_model_cycles and base.inference_model_cycles else None),
            "losses": sorted((r["name"] for r in rows
                              if r["tuned_over_default"] is not None and r["tuned_over_default"] > LOSS_MARGIN)),
            "spearman_predicted_vs_model_cycles": {
                "n": len(pairs),
                "rho": stats.spearman([p for p, _ in pairs], [m for _, m in pairs]) if len(pairs) >= 3 else None,
            },
        })
    return {"model": tuned.model, "target": tuned.target, "tools": tuned.tools, "cores": cores}


def _m(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.2f}M"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def table(core: dict) -> tuple[list[str], list[list[str]]]:
    head = ["dispatch", "kind", "instr tuned", "instr default", "model cyc tuned", "model cyc default",
            "tuned/default", "FMA peak t|d", "predicted cyc"]
    rows = []
    for r in core["dispatches"]:
        peak = r["fma_peak_share"]
        peak_txt = "-" if peak["tuned"] is None else f"{peak['tuned']:.0%}|{peak['default']:.0%}"
        pred = r["predicted_cycles"]
        rows.append([r["name"], r["kind"], _m(r["instructions"]["tuned"]), _m(r["instructions"]["default"]),
                     _m(r["model_cycles"]["tuned"]), _m(r["model_cycles"]["default"]),
                     _ratio(r["tuned_over_default"]), peak_txt, "-" if pred is None else _m(int(pred))])
    rows.append(["**total**", "", _m(core["instructions"]["tuned"]), _m(core["instructions"]["default"]),
                 _m(core["model_cycles"]["tuned"]), _m(core["model_cycles"]["default"]),
                 _ratio(core["tuned_over_default"]), "", ""])
    return head, rows


def heading(core: dict) -> str:
    what = f"model cycles on {core['core']}" if core["core"] else "instruction counts only"
    own = " (the description the analysis tuned for)" if core["analysed_for"] else \
        " (the same binary on another core)"
    return f"{core['hardware']}: {what}, qemu vlen={core['vlen']}{own}"


def summary_lines(res: dict) -> list[str]:
    lines = []
    for core in res["cores"]:
        sp = core["spearman_predicted_vs_model_cycles"]
        rho = "-" if sp["rho"] is None else f"{sp['rho']:.3f}"
        lines.append(f"{heading(core)}: tuned/default {_ratio(core['tuned_over_default'])} in model cycles "
                     f"({_m(core['model_cycles']['tuned'])} vs {_m(core['model_cycles']['default'])}), "
                     f"instructions {_m(core['instructions']['tuned'])} vs {_m(core['instructions']['default'])}; "
                     f"tuned loses (by > {LOSS_MARGIN - 1:.0%}) on {len(core['losses'])} of {len(core['dispatches'])} dispatches; "
                     f"Spearman(predicted, model cycles) {rho} over {sp['n']}")
    return lines
