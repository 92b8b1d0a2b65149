"""Writes a Markdown report with per-dispatch tables and plots for a model's host benchmark.

    bazel run //tools:model_report -- <model> [--out DIR] [--results bench.json] [bench options]

Runs the bench (or reads a `//tools:bench -- <model> --json FILE` results file) and writes
report.md, predicted_vs_measured.png, tuned_vs_default.png and results.json into
$BUILD_WORKING_DIRECTORY/reports/<model>/ (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bench import core, riscv, text
from bench.artifacts import ArtifactError
from bench.run_bench import add_args, out_path, run_from_args, write_json


def _save(fig, path: Path) -> None:
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight", metadata={"Software": None})
    os.replace(tmp, path)


def plots(res: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res.get("dispatches") or []
    written = []
    costed = [r for r in rows if r["predicted_s"]]
    if costed:
        fig, ax = plt.subplots(figsize=(7, 6))
        colors = {"zigzag": "tab:blue", "analytical": "tab:orange", "search": "tab:green", "iree-default": "tab:gray"}
        for prov, c in colors.items():
            sel = [r for r in costed if r["provenance"] == prov]
            if not sel:
                continue
            xs = [r["predicted_s"] * 1e6 for r in sel]
            ys = [r["tuned"]["median"] * 1e6 for r in sel]
            lo = [r["tuned"]["median"] * 1e6 - r["tuned"]["q1"] * 1e6 for r in sel]
            hi = [r["tuned"]["q3"] * 1e6 - r["tuned"]["median"] * 1e6 for r in sel]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=c, label=prov, alpha=0.8, ms=5, capsize=2)
            for r, x, y in zip(sel, xs, ys):
                ax.annotate(r["name"].split("dispatch_")[-1].split("_")[0], (x, y), fontsize=6, alpha=0.7,
                            xytext=(3, 3), textcoords="offset points")
        allv = [r["predicted_s"] * 1e6 for r in costed] + [r["tuned"]["median"] * 1e6 for r in costed]
        lo, hi = min(allv) / 2, max(allv) * 2
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="measured = predicted")
        k = res["summary"].get("geomean_measured_over_predicted_all")
        if k:
            ax.plot([lo, hi], [lo * k, hi * k], ":", color="tab:red", lw=0.8, label=f"x{k:.1f} (geomean ratio)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"predicted latency [us] (cost.latency_cycles at {res['hardware']['clock_ghz']} GHz)")
        ax.set_ylabel("measured tuned dispatch time [us] (median, IQR)")
        sz = res["summary"]["spearman_zigzag"]["spearman"]
        sa = res["summary"]["spearman_all_costed"]["spearman"]
        ax.set_title(f"{res['model']} host: predicted vs measured\nSpearman ZigZag {text.f(sz, '.2f')}, all {text.f(sa, '.2f')}")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        _save(fig, out / "predicted_vs_measured.png")
        plt.close(fig)
        written.append("predicted_vs_measured.png")
    if rows:
        fig, ax = plt.subplots(figsize=(max(7, 0.32 * len(rows) + 2), 5))
        xs = range(len(rows))
        w = 0.4
        for off, v, c in ((-w / 2, "tuned", "tab:blue"), (w / 2, "default", "tab:gray")):
            med = [r[v]["median"] * 1e6 for r in rows]
            err = [[r[v]["median"] * 1e6 - r[v]["q1"] * 1e6 for r in rows], [r[v]["q3"] * 1e6 - r[v]["median"] * 1e6 for r in rows]]
            ax.bar([x + off for x in xs], med, w, yerr=err, color=c, label=v if v == "tuned" else "IREE default", capsize=1.5)
        ax.set_yscale("log")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"{i} {text.short_op(r)[:10]}\n{r['shape']}" for i, r in enumerate(rows)], rotation=90, fontsize=6)
        ax.set_ylabel("time per dispatch [us] (median, IQR)")
        ax.set_title(f"{res['model']} host: tuned vs IREE default per dispatch "
                     f"(geomean default/tuned {text.f(res['summary']['geomean_speedup_all'], '.2f')})")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        _save(fig, out / "tuned_vs_default.png")
        plt.close(fig)
        written.append("tuned_vs_default.png")
    own = [c for c in (res.get("riscv") or {}).get("cores", []) if c["analysed_for"] and c["core"]]
    if own:
        core = own[0]
        pts = [(r["predicted_cycles"], r["model_cycles"]["tuned"], r["kind"]) for r in core["dispatches"]
               if r["predicted_cycles"] and r["model_cycles"]["tuned"]]
        if pts:
            fig, ax = plt.subplots(figsize=(7, 6))
            for kind in sorted({k for _, _, k in pts}):
                ax.scatter([p for p, _, k in pts if k == kind], [m for _, m, k in pts if k == kind], label=kind, s=18)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(f"analysis predicted cycles ({core['hardware']})")
            ax.set_ylabel(f"model cycles on {core['core']} (tuned module)")
            ax.set_title(f"{res['model']}: RISC-V predicted vs model cycles per dispatch")
            ax.legend(fontsize=7)
            _save(fig, out / "riscv_predicted_vs_model_cycles.png")
            plt.close(fig)
            written.append("riscv_predicted_vs_model_cycles.png")
    return written


def markdown(res: dict, images: list[str]) -> str:
    m = res["model"]
    st = res["settings"]
    lines = [f"# Host benchmark: {m} ({res['model_name']}, {res['framework']})", "",
             f"Hardware description: `{res['hardware']['name']}` ({res['hardware']['clock_ghz']} GHz, "
             f"{res['hardware']['cores']} cores, peak {res['hardware']['peak_f32_macs_per_cycle_per_core']} f32 MAC/cycle/core). "
             f"Settings: {st['reps']} end-to-end reps after {st['warmup']} warm-up, {st['dispatch_rounds']} dispatch rounds on "
             f"`{st['dispatch_device']}` (batch {st['dispatch_batch']}). Variants interleaved in one process; "
             f"spread is IQR/median. The machine is shared: treat differences within the spread as noise.", "",
             "## End to end", "", "```", *text.e2e_lines(res), "```", ""]
    if res.get("dispatches"):
        lines += ["## Summary", "", *[f"- {l}" if not l.startswith("  ") else f"  - {l.strip()}" for l in text.summary_lines(res)], ""]
        lines += ["## Per dispatch", "",
                  "Time per dispatch (median); `def/tuned` > 1 means tuned is faster; `meas/pred` = measured tuned time "
                  "over the analysis' predicted latency; `MAC/cyc t|d` = achieved f32 MACs per cycle (tuned|default) at the "
                  "description's clock; `calls` = dispatch sites in the program. Config levels: D=distribution, "
                  "Cp/Cr=cache parallel/reduction, Vp/Vr=vector parallel/reduction.", ""]
        lines += text.md_table(*text.dispatch_table_rows(res))
        lines += ["", "### Analysis decisions", "", "| # | dispatch | loops | provenance | analysis tiles (register / l1 / l2) | adjustments | reason |",
                  "|---|---|---|---|---|---|---|"]
        for i, r in enumerate(res["dispatches"]):
            tl = r.get("analysis_tiles") or {}
            tiles = " / ".join(str(tl.get(k, "-")).replace(" ", "") for k in ("register", "l1", "l2")) if tl else "-"
            lines.append(f"| {i} | {r['name']} | {' '.join(r['loops'])} | {r['provenance']} | {tiles} | "
                         f"{'; '.join(map(str, r.get('adjustments') or [])) or '-'} | "
                         f"{(r['reason'] or '').replace('|', '/')} |")
        lines.append("")
    if res.get("riscv"):
        rv = res["riscv"]
        lines += ["## RISC-V (instruction counts and model cycles)", "",
                  f"Every dispatch of the tuned and of the IREE-default riscv module run whole under qemu "
                  f"({rv['tools']['qemu']}) with the project's TCG plugin; each executed basic block costed by "
                  f"{rv['tools']['llvm-mca']} on the named core model and weighted by its count. Model cycles "
                  f"are not time: {rv['cores'][0]['model_ignores']}. `tuned/default` < 1 means tuned is better; "
                  f"`FMA peak t|d` = MACs / (model cycles x the description's f32 MACs per cycle); "
                  f"`predicted cyc` = the analysis' latency for its hardware description.", ""]
        lines += [f"- {l}" for l in riscv.summary_lines(rv)] + [""]
        for c in rv["cores"]:
            lines += [f"### {riscv.heading(c)}", ""]
            lines += text.md_table(*riscv.table(c))
            lines.append("")
    for img in images:
        lines += [f"![{img}]({img})", ""]
    env = res["environment"]
    lines += ["## Environment", "", "```", json.dumps(env, indent=1, sort_keys=True), "```", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="model_report", description=__doc__.splitlines()[0])
    add_args(p)
    p.add_argument("--out", type=Path, help="output directory (default $BUILD_WORKING_DIRECTORY/reports/<model>)")
    p.add_argument("--results", type=Path, help="use this bench results JSON instead of running the bench")
    a = p.parse_args(argv)
    try:
        if a.results:
            res = json.loads(out_path(a.results).read_text())
            if res.get("model") != a.model:
                raise core.BenchError(f"{a.results}: results are for model '{res.get('model')}', not '{a.model}'")
        else:
            res = run_from_args(a)
    except (ArtifactError, core.BenchError, OSError, ValueError) as err:
        print(f"report: error: {err}", file=sys.stderr)
        return 1
    out = out_path(a.out) if a.out else out_path(Path("reports") / a.model)
    out.mkdir(parents=True, exist_ok=True)
    images = plots(res, out)
    write_json(out / "results.json", res)
    md = out / "report.md"
    tmp = md.with_name(".report.md.tmp")
    tmp.write_text(markdown(res, images))
    os.replace(tmp, md)
    print(text.text_report(res))
    print(f"report written to {md} ({', '.join(images + ['results.json'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
