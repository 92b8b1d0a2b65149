"""What ships beside stock IREE, by the strategy records: tuning/strategies/*.json in, docs/results_strategies.md out.

    bazel run //tools:strategy_results          # writes docs/results_strategies.md
    bazel run //tools:strategy_results -- --check   # exit 1 if the committed file is not what the data give
    bazel build $(... <p>_riscv_perf <p>_riscv_directconv_perf <p>_riscv per pipeline) && \
        bazel run //tools:strategy_results -- --collect   # bazel-bin -> docs/data/stock_iree_riscv.json

Every `strategy = "auto"` pipeline target's committed strategy record (the manifest's
`strategy_choice`, perf.choose) holds the static code model's cycles for one call of the model of
each candidate build: tuned (IREE's code emission with the project's target flags and the chosen
tiles; on the host, uncalibrated, IREE's own tiles), data tiling, microkernels and directconv,
which is stock IREE (the device flags alone: triple, CPU, features, ABI; codegen/compile_test.py
`test_directconv_is_stock_iree`), and on RISC-V the memory-aware cycles of the two builds measured
when the code model preferred another than tuned. This report puts what ships beside tuned and
beside stock IREE, per model and per split (calibration / held-out, models/BUILD.bazel). The
figures are the code model's, not time: host time is measured by `//tools:bench`.

With `docs/data/stock_iree_riscv.json` (`--collect`), it also puts the measured memory-aware
cycles (qemu counts, llvm-mca, the simulated caches; perf.measure) of what each riscv pipeline
ships beside those of the stock IREE build, each for the exact executables of that build: the
tuned build's and stock IREE's `riscv_perf`, or, for another shipped build, the measurement its
strategy choice made of it (the record's `measured`, or a "measured" choice's candidates).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from perf.records import RecordError, load_strategy_record

STOCK = "directconv"  # the device flags alone: what plain iree-compile gets
TUNED = "tuned"
OUT = Path("docs/results_strategies.md")
RECORDS = Path("tuning/strategies")
MEASURED = Path("docs/data/stock_iree_riscv.json")


class ResultsError(RuntimeError):
    pass


def splits_of(infos: list[Path]) -> dict[str, str]:
    """Pipeline -> its split, from the zoo's <pipeline>_pipeline_info.json files."""
    out = {}
    for path in infos:
        info = json.loads(path.read_text())
        out[info["name"]] = info["split"]
    return out


def load(records_dir: Path, splits: dict[str, str]) -> list[dict]:
    """One row per strategy record: pipeline, target, split and the record's choice."""
    rows = []
    for path in sorted(records_dir.glob("*.json")):
        record = load_strategy_record(path)
        pipeline, _, target = record.pipeline.rpartition("_")
        if pipeline not in splits:
            raise ResultsError(f"{path}: no pipeline info for '{pipeline}' among --infos")
        rows.append({"pipeline": pipeline, "target": target, "split": splits[pipeline],
                     "choice": record.choice, "file": path.name})
    if not rows:
        raise ResultsError(f"{records_dir}: no strategy records")
    return rows


def _ratio(figures: dict, a: str, b: str) -> float | None:
    return figures[a] / figures[b] if a in figures and b in figures and figures[b] else None


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def _inference_cycles(perf_json: Path) -> tuple[int, str]:
    report = json.loads(perf_json.read_text())
    run = report["runs"][0]
    if run.get("inference_memory_aware_cycles") is None:
        raise ResultsError(f"{perf_json}: no memory-aware cycles (no core model)")
    return run["inference_memory_aware_cycles"], f"{run['core']} ({run['hardware']})"


def collect(bin_models: Path, pipelines: list[str]) -> dict:
    """Per riscv pipeline: what ships, and the memory-aware cycles of one call of it, of the tuned
    build and of stock IREE, from the builds' measurements in bazel-bin."""
    out = {}
    for pipeline in sorted(pipelines):
        manifest = json.loads((bin_models / f"{pipeline}_riscv.manifest.json").read_text())
        choice = manifest.get("strategy_choice") or {}
        ships = choice.get("chosen", TUNED)
        perfs = [bin_models / f"{pipeline}_riscv{s}_perf.perf.json" for s in ("", f"_{STOCK}")]
        missing = [p.name for p in perfs if not p.is_file()]
        if missing:  # said in the data and the doc, never guessed
            out[pipeline] = {"ships": ships, "not_measured": f"{missing[0]} not built"}
            continue
        tuned, core = _inference_cycles(perfs[0])
        stock, stock_core = _inference_cycles(perfs[1])
        if stock_core != core:
            raise ResultsError(f"{pipeline}: tuned measured on {core}, stock IREE on {stock_core}")
        if ships == TUNED:
            shipped, source = tuned, "riscv_perf of the tuned build"
        elif ships == STOCK:
            shipped, source = stock, "riscv_perf of the stock IREE build"
        elif ships in (choice.get("measured") or {}):
            shipped, source = choice["measured"][ships], "its strategy choice's confirming measurement"
        elif choice.get("by", "").startswith("one call of the model, memory-aware cycles"):
            shipped, source = choice["candidates"][ships], "its measured strategy choice"
        else:
            raise ResultsError(f"{pipeline}: ships {ships}, and nothing measured it")
        out[pipeline] = {"ships": ships, "core": core, "ships_memory_aware_cycles": shipped,
                         "ships_source": source, "tuned_memory_aware_cycles": tuned,
                         "stock_iree_memory_aware_cycles": stock}
    return {"what": "memory-aware cycles of one call of the model (perf.measure) on the riscv pipeline's "
                    "own core model: what ships, the tuned build, stock IREE (directconv)",
            "collected_by": "bazel run //tools:strategy_results -- --collect", "pipelines": out}


def measured_lines(data: dict, splits: dict[str, str]) -> list[str]:
    rows = data["pipelines"]
    lines = ["## riscv, measured", "",
             "Memory-aware cycles of one call of the model (qemu counts priced by llvm-mca plus the",
             "simulated caches of `riscv_rvv.yaml`; perf.measure), each for the exact executables of that",
             f"build, from `{MEASURED}` (`--collect`).", "",
             "| model | split | ships | ships / stock IREE | tuned / stock IREE | what measured the shipped build |",
             "|---|---|---|---|---|---|"]
    missing = {p: r["not_measured"] for p, r in rows.items() if "not_measured" in r}
    rows = {p: r for p, r in rows.items() if p not in missing}
    for p in sorted(rows, key=lambda p: (splits.get(p, "?"), p)):
        r = rows[p]
        stock = r["stock_iree_memory_aware_cycles"]
        lines.append(f"| {p} | {splits.get(p, '?')} | {r['ships']} | {r['ships_memory_aware_cycles'] / stock:.2f}x | "
                     f"{r['tuned_memory_aware_cycles'] / stock:.2f}x | {r['ships_source']} |")
    lines += ["", "| split | models | geomean ships / stock IREE | ships slower than stock IREE | geomean tuned / stock IREE |",
              "|---|---|---|---|---|"]
    for split in ("calibration", "held_out"):
        group = [rows[p] for p in rows if splits.get(p) == split]
        ships = [r["ships_memory_aware_cycles"] / r["stock_iree_memory_aware_cycles"] for r in group]
        tuned = [r["tuned_memory_aware_cycles"] / r["stock_iree_memory_aware_cycles"] for r in group]
        slower = [p for p in rows if splits.get(p) == split
                  and rows[p]["ships_memory_aware_cycles"] > rows[p]["stock_iree_memory_aware_cycles"]]
        lines.append(f"| {split} | {len(group)} | {_fmt(_geomean(ships))} | {', '.join(slower) if slower else 'none'} | "
                     f"{_fmt(_geomean(tuned))} |")
    if missing:
        lines += ["", "Not measured: " + "; ".join(f"{p} ({why})" for p, why in sorted(missing.items())) + "."]
    return lines + [""]


def render(rows: list[dict], splits: dict[str, str], measured: dict | None = None) -> str:
    lines = [
        "# What ships beside stock IREE (strategy records)",
        "",
        "Generated by `bazel run //tools:strategy_results` from `tuning/strategies/*.json` (the committed",
        "strategy choices, `bazel run //tools:tune` refreshes them); do not edit. Figures are the static",
        "code model's cycles for one call of the model (llvm-mca on the target's core model, weighted by",
        "trip counts): not time, and blind to caches. **Stock IREE** is the `directconv` build: the device",
        "flags alone (triple, CPU, features, ABI), what plain `iree-compile` gets. **Tuned** is IREE's code",
        "emission with the project's flags (im2col for convolutions) and the chosen tiles (RISC-V: measured",
        "tile choice; host: IREE's own tiles). A ratio below 1 means what ships is priced cheaper.",
        "",
    ]
    for target in sorted({r["target"] for r in rows}, key=lambda t: (t != "riscv", t)):
        these = [r for r in rows if r["target"] == target]
        lines += [f"## {target}", "",
                  "| model | split | ships | ships / tuned | ships / stock IREE | tuned / stock IREE | measured (memory-aware cycles) |",
                  "|---|---|---|---|---|---|---|"]
        for r in sorted(these, key=lambda r: (r["split"], r["pipeline"])):
            c = r["choice"]
            figures, chosen = c.get("candidates", {}), c["chosen"]
            confirmed = c.get("measured")
            m = ("-" if not confirmed else
                 ", ".join(f"{s} {v:,}" for s, v in confirmed.items()))
            lines.append(f"| {r['pipeline']} | {r['split']} | {chosen} | {_fmt(_ratio(figures, chosen, TUNED))} | "
                         f"{_fmt(_ratio(figures, chosen, STOCK))} | {_fmt(_ratio(figures, TUNED, STOCK))} | {m} |")
        lines += ["", "| split | models | geomean ships / stock IREE | ships priced above stock IREE | geomean tuned / stock IREE |",
                  "|---|---|---|---|---|"]
        for split in ("calibration", "held_out"):
            group = [r for r in these if r["split"] == split]
            ships = [x for r in group if (x := _ratio(r["choice"].get("candidates", {}), r["choice"]["chosen"], STOCK))]
            tuned = [x for r in group if (x := _ratio(r["choice"].get("candidates", {}), TUNED, STOCK))]
            above = [r["pipeline"] for r in group
                     if (x := _ratio(r["choice"].get("candidates", {}), r["choice"]["chosen"], STOCK)) and x > 1]
            lines.append(f"| {split} | {len(group)} | {_fmt(_geomean(ships))} | "
                         f"{', '.join(above) if above else 'none'} | {_fmt(_geomean(tuned))} |")
        lines.append("")
    if measured is not None:
        lines += measured_lines(measured, splits)
    lines += [
        "A build the code model priced above stock IREE ships when the choice kept tuned within its",
        "5% margin (`HOST_CODE_MARGIN`) or, on RISC-V, when the measurement confirming the other build",
        "found it slower. `-`: a candidate the code model could not cost (the record says why).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:strategy_results --", description=__doc__.split("\n")[0])
    p.add_argument("--infos", nargs="+", type=Path, required=True,
                   help="every <pipeline>_pipeline_info.json (//models:zoo): the models' splits")
    p.add_argument("--root", type=Path, default=None,
                   help="the workspace (default: BUILD_WORKSPACE_DIRECTORY, i.e. where `bazel run` was called)")
    p.add_argument("--check", action="store_true", help="compare with the committed file instead of writing it")
    p.add_argument("--collect", action="store_true",
                   help=f"first write {MEASURED} from the riscv measurements in the workspace's bazel-bin")
    a = p.parse_args(argv)
    root = a.root or Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."))
    try:
        splits = splits_of(a.infos)
        if a.collect:
            data = collect(root / "bazel-bin" / "models", list(splits))
            (root / MEASURED).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            print(f"strategy_results: {len(data['pipelines'])} pipelines -> {MEASURED}")
        measured = json.loads((root / MEASURED).read_text()) if (root / MEASURED).is_file() else None
        text = render(load(root / RECORDS, splits), splits, measured)
    except (ResultsError, RecordError, OSError, ValueError) as err:
        print(f"strategy_results: {str(err).splitlines()[0]}", file=sys.stderr)
        return 1
    out = root / OUT
    if a.check:
        if not out.is_file() or out.read_text() != text:
            print(f"strategy_results: {OUT} is not what {RECORDS}/*.json give: run `bazel run //tools:strategy_results`",
                  file=sys.stderr)
            return 1
        print(f"strategy_results: {OUT} regenerates byte for byte")
        return 0
    out.write_text(text)
    print(f"strategy_results: {len(text.splitlines())} lines -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
