"""docs/results.md: the project's headline results, each with the committed data it comes from.

Every figure is computed here from the same committed files the detailed documents render
(results.memory, results.strategies, peers.report), calibration and held-out models apart, and
each line links the document that shows it per model. The data files are listed with their
sha256, so the page names exactly what it was generated from.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from common.files import read_json, sha256_file
from results import memory, prediction, strategies

OUT = Path("docs/results.md")
PEERS = Path("docs/data/peers_ops.json")  # peers.report's tables (bazel run //tools:report)
PEER_MODELS = Path("docs/data/peers_models.json")
SPLITS = strategies.SPLITS


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _names(xs: list[str]) -> str:
    return ", ".join(xs) if xs else "none"


def tile_lines(data: dict) -> list[str]:
    """The measured tile choice against IREE's default tiles, and which candidate source wins."""
    geo = memory.geomean_chosen_over_default(data)
    won = memory.wins(data)
    lines = ["## Tile choice on RISC-V (memory-aware)", "",
             "The measured choice over IREE's default tiles, memory-aware cycles of the dispatches with a "
             "choice (geomean over models), and the dispatches each candidate source wins by memory-aware "
             "cycles ([results_memory.md](results_memory.md)).", "",
             "| split | measured choice / IREE default | energy | dispatches | won by ZigZag's mapping (with or without a register change) | won by IREE's default tiles |",
             "|---|---:|---:|---:|---:|---:|"]
    for split in SPLITS:
        counts = won[split]["memory-aware cycles"]
        total = sum(counts.values())
        zigzag = counts["ZigZag"] + counts["ZigZag + register/alignment"]
        g = geo.get(split, {})
        lines.append(f"| {split} | {_x(g.get('memory_aware_cycles'))} | {_x(g.get('energy_pj'))} | {total} | "
                     f"{zigzag} | {counts['IREE default']} |")
    return lines + [""]


def stock_lines(root: Path, splits: dict[str, str]) -> list[str]:
    """What ships beside stock IREE: RISC-V measured, host timed."""
    lines = ["## What ships beside stock IREE", "",
             "Stock IREE is `iree-compile` with the device flags alone. Geomean over models of what ships "
             "over stock IREE, and the models where what ships is slower "
             "([results_strategies.md](results_strategies.md)).", "",
             "| target, figure | split | models | ships / stock IREE | ships slower |",
             "|---|---|---:|---:|---|"]
    riscv_path, host_path = root / strategies.MEASURED, root / strategies.HOST_TIMED
    riscv = read_json(riscv_path, "report data", kind=dict) if riscv_path.is_file() else {"pipelines": {}}
    if riscv_path.is_file():
        for split, g in strategies.riscv_by_split(riscv, splits).items():
            lines.append(f"| riscv, memory-aware cycles | {split} | {g['models']} | {_x(g['ships'])} | "
                         f"{_names(g['slower'])} |")
    if host_path.is_file():
        for split, g in strategies.host_by_split(read_json(host_path, "report data", kind=dict), splits).items():
            lines.append(f"| host, seconds (95% interval above 1) | {split} | {g['models']} | {_x(g['ships'])} | "
                         f"{_names(g['slower'])} |")
    not_covered = sorted(p for p in splits if "not_measured" in riscv["pipelines"].get(p, {"not_measured": None}))
    if not_covered:
        lines += ["", "Not measured on riscv: " + ", ".join(not_covered) + "."]
    return lines + [""]


def prediction_lines(root: Path, splits: dict[str, str]) -> list[str]:
    """How far the analysis predicts what ships and chooses without measuring (riscv)."""
    lines = ["## Predicting what ships (RISC-V, before measuring)", "",
             "Whole-model memory-aware cycles of the shipped builds predicted per dispatch by the bound and by "
             "ZigZag (factors fitted on calibration models only; geomean error factor, 1.00 exact); ZigZag's "
             "own candidate within 5% of the measured best on GEMMs and convolutions; and the measured cost "
             "of choosing tiles without measuring, by the analysis (IREE's default everywhere) and by the code "
             "model, over the measured choice ([results_prediction.md](results_prediction.md)).", "",
             "| split | models | bound fitted error | ZigZag error | ZigZag's candidate within 5% | "
             "analysis' choice / measured | code model's choice / measured |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for split, h in prediction.headline(root, splits).items():
        lines.append(f"| {split} | {h['models']} | {h['bound_fitted_error']:.2f} | {h['zigzag_error']:.2f} | "
                     f"{h['zigzag_within_share']:.0%} | {_x(h['analysis_choice'])} | {_x(h['code_model_choice'])} |")
    return lines + [""]


def peer_lines(peers: dict) -> list[str]:
    """Per-op peers: where a library beats IREE on the same GEMM."""
    lines = ["## Peers per op (RISC-V GEMMs)", "",
             "IREE over the fastest peer library on the same GEMM (below 1: IREE is faster): the tuned "
             "build's dispatch in model cycles, and what the model ships (whatever its strategy) in "
             "memory-aware cycles ([peers.md](peers.md)).", "",
             "![Share of the FMA peak per GEMM and tool; ours over ONNX Runtime per model](peers.svg)", "",
             "| op | split | IREE ships | tuned / best peer, model cycles | as shipped / best peer, memory-aware |",
             "|---|---|---|---:|---:|"]
    for o in peers["ops"]:
        lines.append(f"| {o['model']} {o['m']}x{o['n']}x{o['k']} | {o['split']} | {o['iree_ships']} | "
                     f"{o['iree_tuned_over_best_peer_model_cycles']:.2f}x ({o['best_peer']}) | "
                     f"{o['iree_shipped_over_best_peer_memory_aware_cycles']:.2f}x "
                     f"({o['best_peer_memory_aware']}) |")
    return lines + [""]


def peer_model_lines(models: dict) -> list[str]:
    """Whole models: our shipped RISC-V build against ONNX Runtime, one inference."""
    lines = ["## Whole models against ONNX Runtime (RISC-V)", "",
             "Our shipped build over ONNX Runtime 1.21 (Debian's riscv64 build) for one inference, "
             "both checked against the framework's output ([peers.md](peers.md)).", "",
             "| split | models | ours / ORT, model cycles (geomean) | memory-aware | ORT faster on |",
             "|---|---:|---:|---:|---|"]
    for split in SPLITS:
        group = [m for m in models["models"] if m["split"] == split]
        summ = models["summary"].get(split, {})
        faster = sorted(m["model"] for m in group if m["ours_over_ort_model_cycles"] > 1)
        lines.append(f"| {split} | {len(group)} | {_x(summ.get('geomean_ours_over_ort_model_cycles'))} | "
                     f"{_x(summ.get('geomean_ours_over_ort_memory_aware_cycles'))} | {_names(faster)} |")
    return lines + [""]


def sources(root: Path) -> list[Path]:
    """The committed files this page and the documents it links are generated from."""
    data = (sorted((root / "docs" / "data").glob("*.json")) + sorted((root / "docs" / "data" / "explore").glob("*/explore.json"))
            + sorted((root / "peers" / "data").glob("*.json")))
    return [p.relative_to(root) for p in data]


def _sha256(root: Path, path: Path, pending: dict[Path, str]) -> str:
    if path in pending:  # written by this same run (peers_ops.json): the bytes it will have
        return hashlib.sha256(pending[path].encode()).hexdigest()
    return sha256_file(root / path)


def documents(root: Path, splits: dict[str, str], pending: dict[Path, str] | None = None) -> dict[Path, str]:
    """docs/results.md; `pending` are the other documents this run writes (their new text)."""
    pending = pending or {}
    lines = ["# Results", "",
             "Generated by `bazel run //tools:report` from committed data; do not edit. Cycles are model "
             "cycles (llvm-mca on the accelerator's core model, every load an L1 hit) or memory-aware "
             "cycles (plus the simulated caches and DRAM of the hardware description): neither is time. "
             "Host figures are seconds on the machine that timed them. What each figure ignores is said "
             "in the linked documents and in [design.md](design.md).", ""]
    lines += tile_lines(read_json(root / memory.DATA, "report data", kind=dict))
    lines += stock_lines(root, splits)
    lines += prediction_lines(root, splits)
    for path, render in ((PEERS, peer_lines), (PEER_MODELS, peer_model_lines)):
        text = pending.get(path) or ((root / path).read_text() if (root / path).is_file() else None)
        if text is not None:  # this run's new text, else the committed file
            lines += render(json.loads(text))
    lines += ["## Data", "", "| file | sha256 |", "|---|---|"]
    lines += [f"| `{p}` | `{_sha256(root, p, pending)[:16]}` |" for p in sources(root)]
    return {OUT: "\n".join(lines) + "\n"}
