"""Hardware design-space sweep report: one model, N accelerator variants, predicted vs measured.

    python -m perf.sweep --model resnet18 \\
        --variant NAME HARDWARE.yaml ANALYSIS.json COMPILE_REPORT.json PERF.json ... \\
        --out-md S.sweep.md --out-json S.sweep.json --out-png S.sweep.png

Per variant (`hardware_sweep` in models/defs.bzl builds each: analysis, compile and RISC-V
measurement against that variant's description): the analysis' predicted cycles and energy of
the chosen tiles, summed over one call of the model; the measured instructions, model
cycles, memory-aware cycles and energy of one call (the cycles only where LLVM has a core model
of that VLEN; otherwise instruction counts alone, and the report says so; memory-aware cycles
and energy see the variant's own caches and DRAM); MAC utilisation of the modelled FMA peak;
how many dispatches' chosen tiles differ from the first variant's; and how well the predicted
ranking of the variants matches the measured one (Spearman). Two predictions are ranked: the
analysis' cost of the tiles it chose (its tile-cost model), and ZigZag's own: the latency and
energy of ZigZag's best mapping of every dispatch it maps (the contractions) onto the variant,
against the measured memory-aware cycles and energy of those same dispatches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common.hardware import HardwareError, load_hardware
from common import stats
from common.analysis_schema import Analysis
from common.codegen_report import load_codegen_report
from common.errors import first_line
from common.files import write_together
from common.perf_schema import PerfReport


class SweepError(RuntimeError):
    pass


def variant_row(name: str, hardware: Path, analysis_path: Path, report_path: Path,
                perf_path: Path) -> dict:
    hw = load_hardware(hardware)
    try:
        analysis = Analysis.model_validate_json(analysis_path.read_text())
        compiled = load_codegen_report(report_path).summary
        perf = PerfReport.model_validate_json(perf_path.read_text())
    except (OSError, ValueError) as err:  # pydantic's errors and ReportError are ValueErrors
        raise SweepError(f"variant {name}: {str(err).splitlines()[0]}") from None
    if compiled is None:
        raise SweepError(f"variant {name}: {report_path.name}: IREE could not compile this build")
    if analysis.hardware != hw.name:
        raise SweepError(f"variant {name}: {analysis_path.name} was made for {analysis.hardware}, "
                         f"not {hw.name}")
    run = next((r for r in perf.runs if r.hardware == hw.name), None)
    if run is None:
        raise SweepError(f"variant {name}: {perf_path.name} has no measurement on {hw.name}")
    calls = {d.name: d.calls for d in run.dispatches}
    predicted = energy = 0.0
    energy_known = True
    for d in analysis.dispatches:
        n = calls.get(d.name, 1)
        if d.cost is not None:
            predicted += d.cost.latency_cycles * n
            if d.cost.energy_pj is None:
                energy_known = False
            else:
                energy += d.cost.energy_pj * n
        else:
            energy_known = False
    macs = sum(d.macs * d.calls for d in run.dispatches)
    cycles = run.inference_model_cycles
    zigzag = zigzag_figures(analysis, run)
    return {
        "variant": name, "hardware": hw.name, "vector_bits": hw.compute.vector_bits,
        "l1_kib": hw.level("l1").size_bytes / 1024, "l2_kib": hw.level("l2").size_bytes / 1024,
        "dram_bytes_per_cycle": hw.level("dram").read_bytes_per_cycle, "cores": hw.cores,
        "peak_macs_per_cycle": hw.macs_per_cycle, "core_model": run.core,
        "predicted_cycles": predicted, "predicted_energy_pj": energy if energy_known else None,
        "calibrated": analysis.calibration is not None,
        "instructions": run.inference_instructions, "model_cycles": cycles,
        "memory_aware_cycles": run.inference_memory_aware_cycles, "energy_pj": run.inference_energy_pj,
        "mac_utilization": macs / (cycles * hw.macs_per_cycle) if cycles and macs else None,
        "tiles": {d.name: d.tiles for d in analysis.dispatches},
        "configs_applied": compiled.applied,  # each proven landed by codegen
        **zigzag,
    }


def zigzag_figures(analysis: Analysis, run) -> dict:
    """ZigZag's predicted latency and energy of one call of the model, over the dispatches it
    mapped (each x its calls), and the measured memory-aware cycles and energy of the same
    dispatches (None without a core model)."""
    perf = {d.name: d for d in run.dispatches}
    mapped = [(d.zigzag, perf[d.name]) for d in analysis.dispatches
              if d.zigzag is not None and d.name in perf and perf[d.name].calls]
    timed = all(p.memory is not None for _, p in mapped)
    return {
        "zigzag_dispatches": len(mapped),
        "zigzag_cycles": sum(z["latency_cycles"] * p.calls for z, p in mapped),
        "zigzag_energy_pj": sum(z["energy_pj"] * p.calls for z, p in mapped),
        "zigzag_measured_memory_aware_cycles":
            sum(p.memory.cycles * p.calls for _, p in mapped) if timed else None,
        "zigzag_measured_energy_pj": sum(p.memory.energy_pj * p.calls for _, p in mapped) if timed else None,
    }


def sweep(model: str, rows: list[dict]) -> dict:
    first = rows[0]["tiles"]
    for r in rows:
        r["tiles_changed"] = sum(1 for k, t in r["tiles"].items() if t != first.get(k))
    for r in rows:
        del r["tiles"]
    timed = [r for r in rows if r["model_cycles"] is not None]
    with_energy = [r for r in timed if r["predicted_energy_pj"] is not None]
    rank = {
        "predicted_vs_memory_aware_cycles": {
            "n": len(timed),
            "rho": stats.spearman([r["predicted_cycles"] for r in timed],
                                  [r["memory_aware_cycles"] for r in timed]),
        },
        "predicted_vs_measured_energy": {
            "n": len(with_energy),
            "rho": stats.spearman([r["predicted_energy_pj"] for r in with_energy],
                                  [r["energy_pj"] for r in with_energy]),
        },
        "predicted_vs_model_cycles": {
            "n": len(timed),
            "rho": stats.spearman([r["predicted_cycles"] for r in timed], [r["model_cycles"] for r in timed]),
        },
        "predicted_vs_instructions": {
            "n": len(rows),
            "rho": stats.spearman([r["predicted_cycles"] for r in rows], [r["instructions"] for r in rows]),
        },
    }
    mapped = [r for r in rows if r["zigzag_dispatches"] and r["zigzag_measured_memory_aware_cycles"] is not None]
    for name, predicted, measured in (
            ("zigzag_vs_memory_aware_cycles", "zigzag_cycles", "zigzag_measured_memory_aware_cycles"),
            ("zigzag_vs_measured_energy", "zigzag_energy_pj", "zigzag_measured_energy_pj"),
            ("zigzag_vs_model_memory_aware_cycles", "zigzag_cycles", "memory_aware_cycles")):
        rank[name] = {"n": len(mapped),
                      "rho": stats.spearman([r[predicted] for r in mapped], [r[measured] for r in mapped])}
    return {"model": model, "variants": rows, "ranking": rank}


def _m(x: float | None) -> str:
    return "-" if x is None else f"{x / 1e6:.3f}M"


def markdown(result: dict) -> str:
    rows = result["variants"]
    lines = [f"# Hardware sweep: {result['model']}", "",
             "One call of the model per accelerator variant. Predicted: the analysis' cost of the "
             "tiles it chose" + ("" if all(r["calibrated"] for r in rows) else
                                 " (uncalibrated: unit coefficients, a ranking at best)")
             + ". Measured: dynamic instructions under qemu at the variant's VLEN and llvm-mca model "
             "cycles on the LLVM core model of that VLEN; where LLVM has none, instructions only "
             "(`counts only`). Model cycles ignore caches and memory latency; memory-aware cycles "
             "and energy add the traffic through the variant's own simulated caches and DRAM "
             "(docs/design.md), so cache sizes and DRAM bandwidth show there.", "",
             f"What a variant buys: its memory-aware cycles and energy over the first variant's "
             f"({rows[0]['variant']}), each with its own tile choice.", "",
             "| variant | VLEN | L1 KiB | L2 KiB | DRAM B/cycle | peak MACs/cycle | core model | predicted cycles | "
             "predicted energy | instructions | model cycles | memory-aware cycles | energy | "
             "memory-aware cycles / first | energy / first | MAC utilisation | "
             "dispatches with other tiles | configs applied |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ref = rows[0]
    for r in rows:
        buys = [f"{r[k] / ref[k]:.3f}" if r[k] is not None and ref[k] else "-"
                for k in ("memory_aware_cycles", "energy_pj")]
        util = f"{r['mac_utilization']:.1%}" if r["mac_utilization"] is not None else "-"
        energy = f"{r['predicted_energy_pj'] / 1e6:.3f} uJ" if r["predicted_energy_pj"] is not None else "-"
        measured_energy = f"{r['energy_pj'] / 1e6:.3f} uJ" if r["energy_pj"] is not None else "-"
        lines.append(f"| {r['variant']} | {r['vector_bits']} | {r['l1_kib']:g} | {r['l2_kib']:g} | "
                     f"{r['dram_bytes_per_cycle']:g} | {r['peak_macs_per_cycle']} | "
                     f"{r['core_model'] or 'counts only'} | {_m(r['predicted_cycles'])} | {energy} | "
                     f"{_m(r['instructions'])} | {_m(r['model_cycles'])} | {_m(r['memory_aware_cycles'])} | "
                     f"{measured_energy} | {buys[0]} | {buys[1]} | {util} | {r['tiles_changed']} | "
                     f"{r['configs_applied']} |")
    rk = result["ranking"]
    fmt = lambda v: "-" if v["rho"] is None else f"{v['rho']:.2f}"
    if "zigzag_vs_memory_aware_cycles" in rk:
        lines += ["", "## ZigZag's prediction of the variants", "",
                  "ZigZag's latency and energy of its best mapping of each dispatch it maps onto the variant "
                  "(the contractions; each x its calls), beside the measured memory-aware cycles and energy "
                  "of the same dispatches as shipped (the variant's measured tile choice, not ZigZag's "
                  "mapping).", "",
                  "| variant | dispatches | ZigZag cycles | measured memory-aware cycles | ZigZag energy | "
                  "measured energy |", "|---|---:|---:|---:|---:|---:|"]
        uj = lambda v: "-" if v is None else f"{v / 1e6:.3f} uJ"
        for r in rows:
            lines.append(f"| {r['variant']} | {r['zigzag_dispatches']} | {_m(r['zigzag_cycles'])} | "
                         f"{_m(r['zigzag_measured_memory_aware_cycles'])} | {uj(r['zigzag_energy_pj'])} | "
                         f"{uj(r['zigzag_measured_energy_pj'])} |")
        lines += ["", "## ZigZag's ranking of the variants against the measured one (Spearman)", "",
                  f"- ZigZag cycles vs memory-aware cycles of the same dispatches: rho "
                  f"{fmt(rk['zigzag_vs_memory_aware_cycles'])} over {rk['zigzag_vs_memory_aware_cycles']['n']} variants",
                  f"- ZigZag energy vs measured energy of the same dispatches: rho "
                  f"{fmt(rk['zigzag_vs_measured_energy'])} over {rk['zigzag_vs_measured_energy']['n']} variants",
                  f"- ZigZag cycles vs the whole model's memory-aware cycles: rho "
                  f"{fmt(rk['zigzag_vs_model_memory_aware_cycles'])} over "
                  f"{rk['zigzag_vs_model_memory_aware_cycles']['n']} variants"]
    lines += ["", "## Predicted vs measured ranking of the variants (Spearman)", "",
              "Predicted: the analysis' tile-cost model of the tiles it chose.", "",
              f"- predicted cycles vs memory-aware cycles: rho {fmt(rk['predicted_vs_memory_aware_cycles'])} "
              f"over {rk['predicted_vs_memory_aware_cycles']['n']} variants with a core model",
              f"- predicted vs measured energy: rho {fmt(rk['predicted_vs_measured_energy'])} "
              f"over {rk['predicted_vs_measured_energy']['n']} variants",
              f"- predicted cycles vs model cycles: rho {fmt(rk['predicted_vs_model_cycles'])} "
              f"over {rk['predicted_vs_model_cycles']['n']} variants with a core model",
              f"- predicted cycles vs instructions: rho {fmt(rk['predicted_vs_instructions'])} "
              f"over {rk['predicted_vs_instructions']['n']} variants", ""]
    return "\n".join(lines)


def plot(result: dict) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["variants"]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.5))
    for ax, key, label in ((axes[0], "vector_bits", "VLEN (bits)"), (axes[1], "l1_kib", "L1 (KiB)"),
                           (axes[2], "l2_kib", "L2 (KiB)"), (axes[3], "dram_bytes_per_cycle", "DRAM (B/cycle)")):
        ax.scatter([r[key] for r in rows], [r["instructions"] for r in rows], label="instructions")
        timed = [r for r in rows if r["model_cycles"] is not None]
        ax.scatter([r[key] for r in timed], [r["model_cycles"] for r in timed], marker="x",
                   label="model cycles")
        ax.scatter([r[key] for r in timed], [r["memory_aware_cycles"] for r in timed], marker="+",
                   label="memory-aware cycles")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(label)
        ax.set_ylabel("per call of the model")
        ax.legend(fontsize=7)
    fig.suptitle(result["model"])
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perf.sweep", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--variant", nargs=5, action="append", required=True,
                   metavar=("NAME", "HARDWARE", "ANALYSIS", "COMPILE_REPORT", "PERF"))
    p.add_argument("--out-md", required=True, type=Path)
    p.add_argument("--out-json", required=True, type=Path)
    p.add_argument("--out-png", required=True, type=Path)
    a = p.parse_args(argv)
    try:
        rows = [variant_row(n, Path(h), Path(an), Path(rp), Path(pf)) for n, h, an, rp, pf in a.variant]
        result = sweep(a.model, rows)
        write_together({a.out_md: markdown(result),
                        a.out_json: json.dumps(result, indent=1, sort_keys=True) + "\n",
                        a.out_png: plot(result)})
    except (SweepError, HardwareError) as err:
        print(f"sweep: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - one line naming the culprit, never a traceback
        print(f"sweep: {a.model}: {type(err).__name__}: {first_line(err)}", file=sys.stderr)
        return 1
    print(f"sweep {a.model}: {len(rows)} variants -> {a.out_md.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
