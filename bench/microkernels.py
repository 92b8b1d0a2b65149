"""Microkernels vs direct code emission on RISC-V: every zoo model under each lowering strategy.

    bazel run //tools:report_microkernels [-- --out DIR]

Reads, per model of the zoo, the perf stage's measurements (`<name>_riscv_<variant>_perf.perf.json`)
of five builds of the same imported module for the same target: IREE's direct codegen with its
defaults ("codegen"), with the analysis' tiles ("tuned"), data tiling with emitted code
("datatiling"), data tiling with IREE's mmt4d microkernels ("ukernels") and IREE's defaults with
convolutions not rewritten to im2col + matmul ("directconv"). Writes
`<out>/report.md` and `<out>/strategies.png`: per model and core, model cycles and instructions
of one call of the model (each dispatch times its call count; initializers, which pack constant
weights once at load, apart), per op class which strategy wins, and where the instructions go.
Model cycles are llvm-mca's on a named core model, not time (see the perf stage). On the host,
where time is the measure, the host modules of each model (IREE's codegen, the one the
pipeline ships, data tiling, microkernels, direct convolutions) are timed end to end, interleaved (`--host-rounds`,
default 30).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

from common import stats
from common.op_kinds import MAC_KINDS
from bench.artifacts import ArtifactError, perf_index, workspace_roots, zoo
from runtime.manifest import shipped_build
from common.perf_schema import PerfReport
from common.targets import DEFAULT_STRATEGY, OTHER_STRATEGIES, TUNED

# The builds measured, in table order (common/targets.py); each model's measurements are found
# through model_pipeline's <name>_riscv_strategy_perf_index (models/defs.bzl).
VARIANTS = (DEFAULT_STRATEGY, TUNED, *OTHER_STRATEGIES)
# variant name -> host HAL module of model_pipeline (`<name><suffix>.vmfb`), timed end to end.
# `<name>_host` is the build its strategies["host"] chose ("auto": the code model's cheapest of the
# tuned, data-tiled, microkernel and direct-conv builds), so it is timed as what the pipeline ships.
HOST_VARIANTS = {DEFAULT_STRATEGY: "_host_iree_default", "as built": "_host",
                 **{s: f"_host_{s}" for s in OTHER_STRATEGIES}}
# Where a dispatch's instructions go, from the perf classes (perf/counts.py).
GROUPS = {
    "vector FP (FMA)": ("vector_fp",),
    "vector load/store": ("vector_load", "vector_store"),
    "vsetvl": ("vset",),
    "vector int/perm/red": ("vector_int", "vector_red_perm"),
    "scalar": ("scalar_int", "branch", "scalar_mem", "scalar_fp", "other"),
}
MATMUL_LIKE = MAC_KINDS  # the op kinds with multiply-accumulates (common/op_kinds.py)


class ReportError(RuntimeError):
    pass


def _is_layout(d) -> bool:
    """A dispatch data tiling adds: packing/unpacking operands (IREE names them set/unset
    encoding, pack or unpack)."""
    return any(w in d.name for w in ("encod", "pack"))


def load(root: Path | None = None) -> dict[str, dict[str, PerfReport]]:
    """model -> variant -> PerfReport, for every zoo model with all VARIANTS measured."""
    out: dict[str, dict[str, PerfReport]] = {}
    roots = [root] if root else workspace_roots()
    for info in zoo(root):
        found = {}
        for r in roots:
            for base in (r, r / "bazel-bin"):
                index = base / "models" / f"{info.name}_riscv_strategy_perf_index.json"
                if not found and index.is_file():
                    perf = perf_index(index, base)
                    found = {v: PerfReport.model_validate_json(perf[v].read_text())
                             for v in VARIANTS if v in perf and perf[v].is_file()}
        refused = sorted(v for v, report in found.items() if report.failed is not None)
        if refused:
            # A strategy choice's candidate IREE could not compile: nothing to compare it by.
            print(f"report_microkernels: {info.name}: {refused[0]} not measured: IREE refused it: "
                  f"{found[refused[0]].failed.splitlines()[0]}", file=sys.stderr)
        elif len(found) == len(VARIANTS):
            out[info.name] = found
    if not out:
        raise ReportError(f"no model has all {len(VARIANTS)} strategy measurements: build "
                          "//tools:report_microkernels (it depends on them)")
    return out


def _find(name: str, roots: list[Path]) -> Path | None:
    for r in roots:
        for base in (r, r / "bazel-bin"):
            path = base / "models" / name
            if path.is_file():
                return path
    return None


def shipped_strategy(manifest: dict) -> str:
    """The build a `<name>_riscv.manifest.json` packages, chosen or fixed (runtime.manifest's
    reading: a tiled strategy's build is that strategy's)."""
    return shipped_build(manifest)


def shipped(models: list[str], root: Path | None = None) -> dict[str, dict]:
    """model -> its `<name>_riscv` manifest, for the models whose manifest is built."""
    roots = [root] if root else workspace_roots()
    found = {m: _find(f"{m}_riscv.manifest.json", roots) for m in models}
    return {m: json.loads(path.read_text()) for m, path in found.items() if path is not None}


def shipped_markdown(rows: list[dict], manifests: dict[str, dict], splits: dict[str, str]) -> list[str]:
    """What each `<name>_riscv` packages, against every strategy measured: how far the shipped
    build is from IREE's codegen, from the tuned build and from the best measured strategy."""
    lines = ["", "## What `<name>_riscv` ships", "",
             "The strategy each model's `<name>_riscv` packages (its manifest) and how it was "
             "chosen (`auto`: priced by the code model, `measured`: model cycles under qemu), "
             "its price over the tuned build's where the code model priced both, and its "
             "measured model cycles of one call over IREE's codegen, over the tuned build and "
             "over the best of the measured strategies (1.00x: the choice was the best).", "",
             "| model | split | core | ships | chosen by | priced / tuned | as built / codegen "
             "| as built / tuned | best measured | as built / best |",
             "|---|---|---|---|---|---:|---:|---:|---|---:|"]
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        manifest = manifests.get(r["model"])
        if manifest is None:
            continue
        strategy = shipped_strategy(manifest)
        choice = manifest.get("strategy_choice") or {}
        by = ("measured" if choice.get("by", "").startswith("one call of the model, model cycles")
              else "auto" if choice else "fixed")
        priced = choice.get("candidates", {})
        cycles = {n: v["cycles"] for n, v in r["variants"].items()}
        best = min(cycles, key=lambda n: (cycles[n] or float("inf")))
        split = splits.get(r["model"], "?")
        if cycles[strategy] and cycles["codegen"]:
            ratios[(split, r["core"])].append(cycles[strategy] / cycles["codegen"])
        lines.append(f"| {r['model']} | {split} | {r['core']} | {strategy} | {by} | "
                     + (_ratio(priced.get(strategy), priced.get("tuned")) if by == "auto" else "-")
                     + f" | {_ratio(cycles[strategy], cycles['codegen'])} | {_ratio(cycles[strategy], cycles['tuned'])}"
                     f" | {best} | {_ratio(cycles[strategy], cycles[best])} |")
    lines += ["", "| split | core | models | as built / codegen, geomean | worst |", "|---|---|---:|---:|---:|"]
    for (split, core), xs in sorted(ratios.items()):
        lines.append(f"| {split} | {core} | {len(xs)} | {stats.geomean(xs):.3f}x | {max(xs):.2f}x |")
    return lines


def host_times(models: list[str], rounds: int, warmup: int = 3, root: Path | None = None) -> dict:
    """model -> variant -> end-to-end seconds (stats.summary) of its host modules under each
    strategy, interleaved (bench.core.interleave); models missing a module are left out."""
    from bench.core import iree_callable, interleave, timed

    roots = [root] if root else workspace_roots()
    infos = {i.name: i for i in zoo(root)}
    out = {}
    for model in models:
        golden = _find(f"{infos[model].model_name}.golden.npz", roots)
        vmfbs = {v: _find(f"{model}{suffix}.vmfb", roots) for v, suffix in HOST_VARIANTS.items()}
        if golden is None or None in vmfbs.values():
            continue
        timers = {v: timed(iree_callable(path, golden)) for v, path in vmfbs.items()}
        times = interleave(timers, rounds, warmup, f"{model} host strategies")
        out[model] = {v: stats.summary(ts) for v, ts in times.items()}
    return out


def host_markdown(times: dict, rounds: int) -> list[str]:
    names = list(HOST_VARIANTS)
    lines = ["", "## Host (x86-64-v3), end to end", "",
             f"Median seconds of one call over {rounds} interleaved rounds (carryover-balanced "
             "orders) with the interquartile range relative to the median; ratios to IREE's codegen.", "",
             "| model | " + " | ".join(names) + " | " + " | ".join(f"{n}/codegen" for n in names[1:]) + " |",
             "|---|" + "---:|" * (2 * len(names) - 1)]
    for model, res in times.items():
        base = res["codegen"]["median"]
        lines.append(f"| {model} | " + " | ".join(
            f"{res[n]['median'] * 1e3:.3f} ms ±{res[n]['iqr_rel']:.0%}" for n in names)
            + " | " + " | ".join(f"{res[n]['median'] / base:.2f}x" for n in names[1:]) + " |")
    return lines


def summarize(reports: dict[str, dict[str, PerfReport]]) -> list[dict]:
    """One row per (model, core): per-inference cycles/instructions per variant, per op class
    cycles per variant, instruction groups per variant, layout (pack/unpack) share."""
    rows = []
    for model, variants in sorted(reports.items()):
        cores = [run.core for run in variants["codegen"].runs if run.core]
        for core in cores:
            row = {"model": model, "core": core, "variants": {}}
            for variant, rep in variants.items():
                run = rep.run_for(core)
                by_kind: dict[str, int] = defaultdict(int)
                groups: dict[str, int] = defaultdict(int)
                layout = init = 0
                for d in run.dispatches:
                    init += (d.model_cycles or 0) * d.initializer_calls
                    if d.calls == 0:
                        continue
                    cycles = (d.model_cycles or 0) * d.calls
                    if _is_layout(d):
                        layout += cycles
                        by_kind["pack/unpack"] += cycles
                    else:
                        by_kind[d.kind] += cycles
                    for g, classes in GROUPS.items():
                        groups[g] += sum(d.classes[c] for c in classes) * d.calls
                row["variants"][variant] = {
                    "cycles": run.inference_model_cycles, "instructions": run.inference_instructions,
                    "vector_fma": sum(d.vector_fma * d.calls for d in run.dispatches),
                    "by_kind": dict(by_kind), "groups": dict(groups), "layout_cycles": layout,
                    "initializer_cycles": init,
                }
            rows.append(row)
    return rows


def _m(n: float | None) -> str:
    return "-" if n is None else f"{n / 1e6:.3f}M"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if not a or not b else f"{a / b:.2f}x"


def markdown(rows: list[dict], tools: dict[str, str]) -> str:
    names = list(VARIANTS)
    lines = ["# Microkernels vs direct code emission on RISC-V", "",
             f"{len(names)} builds of each model for the same riscv target (VLEN 128, measured on each core "
             "the perf stage models): IREE's direct codegen with its defaults (`codegen`), with the "
             "analysis' tiles (`tuned`), data tiling with emitted code (`datatiling`), data tiling "
             "with IREE's mmt4d microkernels (`ukernels`), IREE's defaults with convolutions not "
             "rewritten to im2col + matmul (`directconv`). Figures are one call of the model: each "
             "dispatch's model cycles times its call count; initializers (weights packed once at "
             "load) are listed apart. Model cycles are llvm-mca's steady-state cycles on the named "
             f"core model ({tools.get('llvm-mca', '?')}), which ignore caches, memory latency and "
             "branch misses: not silicon time.", "",
             "## One call of the model", "",
             "| model | core | " + " | ".join(f"{v} cycles" for v in names)
             + " | ukernels/codegen | datatiling/codegen | ukernels/datatiling | directconv/codegen"
             " | pack/unpack share (ukernels) | init cycles (ukernels) |",
             "|---|---|" + "---:|" * (len(names) + 6)]
    for r in rows:
        v = r["variants"]
        c = {n: v[n]["cycles"] for n in names}
        share = v["ukernels"]["layout_cycles"] / c["ukernels"] if c["ukernels"] else 0
        lines.append(f"| {r['model']} | {r['core']} | " + " | ".join(_m(c[n]) for n in names)
                     + f" | {_ratio(c['ukernels'], c['codegen'])} | {_ratio(c['datatiling'], c['codegen'])}"
                     f" | {_ratio(c['ukernels'], c['datatiling'])} | {_ratio(c['directconv'], c['codegen'])}"
                     f" | {share:.1%} | "
                     f"{_m(v['ukernels']['initializer_cycles'])} |")
    lines += ["", "## Per op class: model cycles of one call, and the winner", "",
              "| model | core | op class | " + " | ".join(names) + " | winner |",
              "|---|---|---|" + "---:|" * len(names) + "---|"]
    for r in rows:
        kinds = sorted({k for n in names for k in r["variants"][n]["by_kind"]})
        for k in kinds:
            vals = {n: r["variants"][n]["by_kind"].get(k, 0) for n in names}
            present = {n: x for n, x in vals.items() if x}
            winner = min(present, key=present.get) if present else "-"
            lines.append(f"| {r['model']} | {r['core']} | {k} | "
                         + " | ".join(_m(vals[n]) if vals[n] else "-" for n in names) + f" | {winner} |")
    lines += ["", "## Where the instructions go (one call, share of the variant's instructions)", "",
              "| model | core | variant | instructions | " + " | ".join(GROUPS) + " | vector FMAs |",
              "|---|---|---|---:|" + "---:|" * (len(GROUPS) + 1)]
    for r in rows:
        for n in names:
            v = r["variants"][n]
            total = v["instructions"] or 1
            lines.append(f"| {r['model']} | {r['core']} | {n} | {_m(v['instructions'])} | "
                         + " | ".join(f"{v['groups'].get(g, 0) / total:.1%}" for g in GROUPS)
                         + f" | {_m(v['vector_fma'])} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(VARIANTS)
    labels = [f"{r['model']}\n{r['core']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows)), 4))
    width = 0.8 / len(names)
    for i, n in enumerate(names):
        ys = [r["variants"][n]["cycles"] / r["variants"]["codegen"]["cycles"]
              if r["variants"]["codegen"]["cycles"] else 0 for r in rows]
        ax.bar([x + i * width for x in range(len(rows))], ys, width, label=n)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(rows))], labels, fontsize=7, rotation=45,
                  ha="right")
    ax.set_ylabel("model cycles / IREE codegen default")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="report_microkernels", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, help="output directory (default "
                   "$BUILD_WORKING_DIRECTORY/reports/microkernels)")
    p.add_argument("--root", type=Path, help="workspace whose bazel-bin holds the measurements "
                   "(default: this binary's runfiles)")
    p.add_argument("--host-rounds", type=int, default=30,
                   help="interleaved rounds of the host timing (0: no host section)")
    a = p.parse_args(argv)
    out = a.out or Path(os.environ.get("BUILD_WORKING_DIRECTORY", ".")) / "reports" / "microkernels"
    try:
        reports = load(a.root)
        rows = summarize(reports)
        tools = next(iter(next(iter(reports.values())).values())).tools
        text = markdown(rows, tools)
        splits = {info.name: info.split for info in zoo(a.root)}
        text += "\n".join(shipped_markdown(rows, shipped(sorted(reports), a.root), splits)) + "\n"
        if a.host_rounds > 0:
            text += "\n".join(host_markdown(host_times(sorted(reports), a.host_rounds, root=a.root),
                                             a.host_rounds)) + "\n"
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(text)
        plot(rows, out / "strategies.png")
    except (ReportError, ArtifactError, OSError, KeyError) as err:
        print(f"report_microkernels: {err}", file=sys.stderr)
        return 1
    print(f"report_microkernels: {len(reports)} models -> {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
