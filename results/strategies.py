"""What ships beside stock IREE, by the strategy records: tuning/strategies/*.json in, docs/results_strategies.md out.

    bazel run //tools:report                     # writes docs/results_strategies.md (and the rest)
    bazel build //models:zoo_stock_perf && \
        bazel run //tools:report -- --collect riscv_stock   # bazel-bin -> docs/data/stock_iree_riscv.json

Every `strategy = "auto"` pipeline target's committed strategy record (the manifest's
`strategy_choice`, choice.choose) holds the static code model's cycles for one call of the model of
each candidate build: tuned (IREE's code emission with the project's target flags and the chosen
tiles; on the host, uncalibrated, IREE's own tiles), data tiling, microkernels and directconv,
which is stock IREE (the device flags alone: triple, CPU, features, ABI; codegen/compile_test.py
`test_directconv_is_stock_iree`), and on RISC-V the memory-aware cycles of the two builds measured
when the code model preferred another than tuned. This report puts what ships beside tuned and
beside stock IREE, per model and per split (calibration / held-out, models/BUILD.bazel). The
figures are the code model's, not time.

With `docs/data/stock_iree_riscv.json` (`--collect`), it also puts the measured memory-aware
cycles (qemu counts, llvm-mca, the simulated caches; perf.measure) of what each riscv pipeline
ships beside those of the stock IREE build, each for the exact executables of that build: the
tuned build's and stock IREE's `riscv_perf`, or, for another shipped build, the measurement its
strategy choice made of it (the record's `measured`, or a "measured" choice's candidates).
With `docs/data/host_timings.json` (`bazel run //tools:host_timings`), it also puts the host
time of what ships beside stock IREE, interleaved rounds with their 95% intervals.
"""

from __future__ import annotations

import json

from common.files import read_json
import math
from pathlib import Path

from common import stats
from common.perf_schema import PerfIndexError, load_perf_index
from common.targets import STOCK_IREE_STRATEGY, TUNED
from choice.records import RecordError, load_strategy_record

STOCK = STOCK_IREE_STRATEGY  # the device flags alone: what plain iree-compile gets
OUT = Path("docs/results_strategies.md")
RECORDS = Path("tuning/strategies")
MEASURED = Path("docs/data/stock_iree_riscv.json")
HOST_TIMED = Path("docs/data/host_timings.json")  # bench/host_timings.py


class ResultsError(RuntimeError):
    pass


def splits_of(infos: list[Path]) -> dict[str, str]:
    """Pipeline -> its split, from the zoo's <pipeline>_pipeline_info.json files."""
    out = {}
    for path in infos:
        # An empty file was "Expecting value: line 1 column 1", one without `split` "'split'":
        # neither named the file (issue 62).
        try:
            text = path.read_text()
            info = json.loads(text)
        except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
            why = "an empty file" if not text.strip() else f"not JSON ({err})"
            raise ResultsError(f"{path}: not a pipeline info: {why}") from None
        missing = [k for k in ("name", "split") if not isinstance(info, dict) or not isinstance(info.get(k), str)]
        if missing:
            raise ResultsError(f"{path}: not a pipeline info: no '{missing[0]}'")
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
    report = read_json(perf_json, "report data", kind=dict)
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
        index = bin_models / f"{pipeline}_riscv_stock_perf_index.json"
        if not index.is_file():  # said in the data and the doc, never guessed
            out[pipeline] = {"ships": ships, "not_measured": f"{index.name} not built"}
            continue
        try:  # riscv_perf's outputs through their PerfInfo (perf_index), not by name
            by_build = load_perf_index(index, bin_models.parent)
        except PerfIndexError as err:
            raise ResultsError(str(err)) from None
        perfs = [by_build.get(TUNED), by_build.get(STOCK)]
        if any(p is None or not p.is_file() for p in perfs):
            raise ResultsError(f"{index}: no measurement of the tuned or the stock IREE build")
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
            "collected_by": "bazel run //tools:report -- --collect riscv_stock", "pipelines": out}


SPLITS = ("calibration", "held_out")


def riscv_by_split(data: dict, splits: dict[str, str]) -> dict[str, dict]:
    """split -> its measured riscv pipelines' count, geomean ships / stock IREE and tuned / stock
    IREE (memory-aware cycles), and the pipelines whose shipped build is slower than stock."""
    rows = {p: r for p, r in sorted(data["pipelines"].items()) if "not_measured" not in r}
    out = {}
    for split in SPLITS:
        group = {p: r for p, r in rows.items() if splits.get(p) == split}
        stock = {p: r["stock_iree_memory_aware_cycles"] for p, r in group.items()}
        out[split] = {"models": len(group),
                      "ships": _geomean([r["ships_memory_aware_cycles"] / stock[p] for p, r in group.items()]),
                      "tuned": _geomean([r["tuned_memory_aware_cycles"] / stock[p] for p, r in group.items()]),
                      "slower": [p for p, r in group.items() if r["ships_memory_aware_cycles"] > stock[p]]}
    return out


def host_by_split(data: dict, splits: dict[str, str]) -> dict[str, dict]:
    """split -> its timed pipelines' count, geomean ships / stock IREE and project IREE / stock IREE
    (median seconds), and the pipelines whose shipped build is slower (`host_verdict`)."""
    out = {}
    for split in SPLITS:
        group = {p: r for p, r in sorted(data["pipelines"].items()) if splits.get(p) == split}
        sec = {p: r["seconds"] for p, r in group.items()}
        out[split] = {"models": len(group),
                      "ships": _geomean([r["ships_over_stock"]["median"] for r in group.values()]),
                      "project": _geomean([s["project_iree"]["median"] / s["stock_iree"]["median"] for s in sec.values()]),
                      "slower": [p for p, r in group.items() if host_verdict(r["ships_over_stock"]) == "slower"]}
    return out


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
    for split, g in riscv_by_split(data, splits).items():
        lines.append(f"| {split} | {g['models']} | {_fmt(g['ships'])} | {', '.join(g['slower']) or 'none'} | "
                     f"{_fmt(g['tuned'])} |")
    if missing:
        lines += ["", "Not measured: " + "; ".join(f"{p} ({why})" for p, why in sorted(missing.items())) + "."]
    return lines + [""]


def host_lines(data: dict, splits: dict[str, str]) -> list[str]:
    """The host timings (bench/host_timings.py): what ships beside stock IREE in seconds."""
    rows = data["pipelines"]
    commits = sorted({r["commit"][:12] for r in rows.values()})
    envs = sorted({f"{r['environment']['cpu']}, {r['environment']['cores']} cores, IREE runtime "
                   f"{r['environment']['iree_runtime']}" for r in rows.values()})
    lines = ["## host, measured", "",
             "Seconds per call of the model on its golden inputs (HAL `local-task`), the three builds",
             "interleaved in carryover-balanced rounds in one process, from `docs/data/host_timings.json`",
             f"(`bazel run //tools:host_timings`; commit {', '.join(commits)}; {'; '.join(envs)}). Wall time on",
             "that machine, which may run other work: the interval is the distribution-free 95% interval of the median of",
             "the per-round ratios; `slower` / `faster` only when it excludes 1. Project IREE is IREE's own",
             "tiles with the project's flags (im2col).", "",
             "| model | split | ships | rounds | ships, median ms (IQR) | project IREE / stock | stock IREE, median ms | ships / stock IREE (95%) | verdict |",
             "|---|---|---|---:|---|---:|---:|---|---|"]
    for p in sorted(rows, key=lambda p: (splits.get(p, "?"), p)):
        r = rows[p]
        sec = r["seconds"]
        ratio = r["ships_over_stock"]
        lo, hi = ratio["ci95"]
        ms = {v: s["median"] * 1e3 for v, s in sec.items()}
        iqr = f"{sec['ships']['q1'] * 1e3:.3g}-{sec['ships']['q3'] * 1e3:.3g}"
        lines.append(f"| {p} | {splits.get(p, '?')} | {r['ships']} | {r['rounds']} | {ms['ships']:.3g} ({iqr}) | "
                     f"{ms['project_iree'] / ms['stock_iree']:.2f}x | {ms['stock_iree']:.3g} | "
                     f"{ratio['median']:.2f}x ({lo:.2f}-{hi:.2f}) | {host_verdict(ratio)} |")
    lines += ["", "| split | models | geomean ships / stock IREE | ships slower than stock IREE | geomean project IREE / stock IREE |",
              "|---|---|---|---|---|"]
    for split, g in host_by_split(data, splits).items():
        lines.append(f"| {split} | {g['models']} | {_fmt(g['ships'])} | {', '.join(g['slower']) or 'none'} | "
                     f"{_fmt(g['project'])} |")
    missing = sorted(p for p in splits if p not in rows)
    if missing:
        lines += ["", "Not timed: " + ", ".join(missing) + "."]
    return lines + [""]


def host_verdict(ratio: dict) -> str:
    """`slower` / `faster` when the 95% interval of the median ships/stock ratio excludes 1."""
    return stats.interval_verdict(*ratio["ci95"])


def render(rows: list[dict], splits: dict[str, str], measured: dict | None = None,
           host: dict | None = None) -> str:
    lines = [
        "# What ships beside stock IREE (strategy records)",
        "",
        "Generated by `bazel run //tools:report` from `tuning/strategies/*.json` (the committed",
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
    if host is not None:
        lines += host_lines(host, splits)
    lines += [
        "A build the code model priced above stock IREE ships when the choice kept tuned within its",
        "5% margin (`HOST_CODE_MARGIN`) or, on RISC-V, when the measurement confirming the other build",
        "found it slower. `-`: a candidate the code model could not cost (the record says why).",
        "",
    ]
    return "\n".join(lines)


def documents(root: Path, splits: dict[str, str]) -> dict[Path, str]:
    """docs/results_strategies.md from the committed records and data under the workspace `root`."""
    measured = read_json(root / MEASURED, "report data", kind=dict) if (root / MEASURED).is_file() else None
    host = read_json(root / HOST_TIMED, "report data", kind=dict) if (root / HOST_TIMED).is_file() else None
    return {OUT: render(load(root / RECORDS, splits), splits, measured, host)}


def collected(bin_root: Path, splits: dict[str, str]) -> dict[Path, str]:
    """docs/data/stock_iree_riscv.json from the riscv measurements under `bin_root` (bazel-bin)."""
    data = collect(bin_root / "models", list(splits))
    return {MEASURED: json.dumps(data, indent=1, sort_keys=True) + "\n"}
