"""Does ZigZag's cost model rank a dispatch's candidates as the memory-aware measurement does?

    tools/bazel run //bench:zigzag_ranking -- --analysis ...   (or, from the workspace root:)
    python -m bench.zigzag_ranking --analysis bazel-bin/models/se_net_riscv_analysis.analysis.json \\
        [--analysis ...] --out-json zigzag_ranking.json

Reads measured-choice analyses (schema 6: every shortlisted candidate carries
`measured_memory_aware_cycles`). For each dispatch with >= 3 measured candidates whose root op
is a ZigZag layer (analysis.zigzag_cost.to_layer), each measured candidate's tiles are priced
by ZigZag's cost model with the temporal mapping forced to those tiles
(analysis.zigzag_cost.evaluate_tiles; `--mode forced`: the tiles' levels as given; `allocated`:
the tiles' loop order, levels cut by ZigZag's own allocator), and Spearman's rho between that
latency and the measured memory-aware cycles is taken per dispatch (per op), then the median and
mean per split (calibration / held_out, from `<model>_pipeline_info.json` beside the analysis).
The same for the analysis' own `predicted_cycles` (the tile cost model) as the baseline, and for
the code model's `code_model_cycles` where recorded.

Self-checks recorded in the output: ZigZag's own mapping's tiles (level_tiles of Dispatch.zigzag,
with its spatial unrolling and loop order) priced by evaluate_tiles, over ZigZag's own latency;
and the `zigzag` candidate (the legalised tiles that were compiled) over the same.

ZigZag results are cached in memory by (signature, mode, tiles); only measured candidates are
priced (0.3-4 s each). Nothing is fitted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from math import prod
from pathlib import Path

from common import hardware as hwmod
from analysis import zigzag_cost
from analysis.zigzag_pricer import Pricer, nest_from_json
from bench.run_bench import out_path
from common.stats import spearman
from common.errors import NamedError, OneLineErrors
from common.files import atomic_write, check_outputs, sha256_file

SCHEMA = 6
HARDWARE_DIR = Path(__file__).resolve().parent.parent / "analysis" / "hardware"
MIN_CANDIDATES = 3
TARGET_RHO = 0.7


class RankingInputError(NamedError, ValueError):
    """An analysis the ranking cannot read; the message names it."""


# ------------------------------------------------------------------------------ the ranking

def _summary(rhos: list[float | None]) -> dict:
    defined = [r for r in rhos if r is not None]
    return {
        "dispatches": len(rhos),
        "defined": len(defined),
        "median": round(statistics.median(defined), 4) if defined else None,
        "mean": round(statistics.fmean(defined), 4) if defined else None,
        "at_least_target": sum(r >= TARGET_RHO for r in defined),
    }


def _split_of(analysis: Path, model: str) -> str:
    """The model's split from `<name>_pipeline_info.json` beside the analysis, `<name>` the
    analysis file's prefix (`resnet` of resnet_riscv_analysis.analysis.json, whose model is
    resnet18), else the model's name; "unknown" without one."""
    for name in (analysis.name.split("_riscv_analysis")[0], model):
        info = analysis.parent / f"{name}_pipeline_info.json"
        if info.exists():
            return json.loads(info.read_text()).get("split", "unknown")
    return "unknown"


def rank_analysis(path: Path, modes: list[str], pricer_for, log) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RankingInputError(f"{path}: cannot read: {err}") from None
    if data.get("schema_version") != SCHEMA:
        raise RankingInputError(f"{path}: schema_version {data.get('schema_version')}, expected {SCHEMA}")
    if not data.get("measured_choice"):
        raise RankingInputError(f"{path}: no measured choice (a *_riscv_analysis, not a predicted one)")
    model, split = data["model"], _split_of(path, data["model"])
    hw_path = HARDWARE_DIR / f"{data['hardware']}.yaml"
    if sha256_file(hw_path) != data["hardware_sha256"]:
        log(f"warning: {hw_path} differs from the hardware {path.name} was analysed with")
    pricer: Pricer = pricer_for(hw_path)
    rows = []
    for disp in data["dispatches"]:
        measured = [c for c in disp["candidates"] if c.get("measured_memory_aware_cycles")]
        if len(measured) < MIN_CANDIDATES:
            continue
        row = {"model": model, "split": split, "dispatch": disp["name"], "kind": disp["kind"],
               "signature": disp["signature"], "candidates": len(measured)}
        rows.append(row)
        try:
            nest = nest_from_json(disp)
            layer = zigzag_cost.to_layer(disp["kind"], nest, max_searched_loops=None)
        except (zigzag_cost.NotExpressible, ValueError) as err:
            row["skipped"] = f"not a ZigZag layer: {err}"
            continue
        n = len(nest.loops)
        kinds = [k for _, _, k in nest.loops]
        sig = disp["signature"]
        own = disp.get("zigzag")
        check = {}
        if own:
            check["zigzag_own_latency"] = own["latency_cycles"]
            lt = zigzag_cost.level_tiles(own, n, zigzag_cost.relevant_loops(nest))
            spatial = {int(d[1:]): f for lv in own["spatial_mapping"]["O"] for d, f in lv}
            order = [int(d[1:]) for d in own["loop_order"]]
            for mode in modes:
                r = pricer.price(sig, layer, n, kinds, lt, mode, order, spatial)
                check[f"own_tiles_{mode}_over_own"] = (
                    round(r["latency_cycles"] / own["latency_cycles"], 4) if isinstance(r, dict) else r)
        cands = []
        for c in measured:
            entry = {"name": c["name"], "generator": c["generator"], "tiles": c["tiles"],
                     "measured_memory_aware_cycles": c["measured_memory_aware_cycles"],
                     "measured_energy_pj": c.get("measured_energy_pj"),
                     "measured_traffic_bytes": c.get("measured_traffic_bytes"),
                     "predicted_cycles": c.get("predicted_cycles"),
                     "code_model_cycles": c.get("code_model_cycles")}
            for mode in modes:
                r = pricer.price(sig, layer, n, kinds, c["tiles"], mode)
                if isinstance(r, str):
                    entry[f"zigzag_{mode}_error"] = r
                else:
                    entry[f"zigzag_{mode}_latency"] = r["latency_cycles"]
                    entry[f"zigzag_{mode}_energy_pj"] = r["energy_pj"]
                    # Priced as the measurement's energy is (issue 77): the figure to compare.
                    entry[f"zigzag_{mode}_energy_measured_terms_pj"] = zigzag_cost.energy_on_measured_terms(
                        r, pricer.hw, prod(b for _, b, _ in nest.loops))
                    entry[f"zigzag_{mode}_traffic_bytes"] = r["traffic_bytes"]
                    if c["name"] == "zigzag" and own:
                        check[f"zigzag_candidate_{mode}_over_own"] = round(
                            r["latency_cycles"] / own["latency_cycles"], 4)
            cands.append(entry)
        row["candidates_priced"] = cands
        if check:
            row["self_check"] = check

        def rho(field: str, measured: str = "measured_memory_aware_cycles") -> float | None:
            pts = [(e[field], e[measured]) for e in cands
                   if e.get(field) is not None and e.get(measured) is not None]
            if len(pts) < MIN_CANDIDATES:
                return None
            r = spearman([x for x, _ in pts], [y for _, y in pts])
            return None if r is None else round(r, 4)

        row["spearman"] = {**{f"zigzag_{m}": rho(f"zigzag_{m}_latency") for m in modes},
                           **{f"zigzag_{m}_energy": rho(f"zigzag_{m}_energy_measured_terms_pj", "measured_energy_pj")
                              for m in modes},
                           "predicted_cycles": rho("predicted_cycles"),
                           "code_model_cycles": rho("code_model_cycles")}
        log(f"{model} {disp['name']}: " + ", ".join(f"{k} {v}" for k, v in row["spearman"].items()))
    return rows


def summarise(rows: list[dict], modes: list[str]) -> dict:
    ranked = [r for r in rows if "spearman" in r]
    out = {}
    for split in sorted({r["split"] for r in ranked}) + ["all"]:
        sel = [r for r in ranked if split in ("all", r["split"])]
        out[split] = {
            "models": sorted({r["model"] for r in sel}),
            **{field: _summary([r["spearman"][field] for r in sel])
               for field in [f"zigzag_{m}" for m in modes] + [f"zigzag_{m}_energy" for m in modes]
               + ["predicted_cycles", "code_model_cycles"]},
        }
        # the same dispatches for every field: only those ZigZag priced (a like-for-like baseline)
        for m in modes:
            both = [r for r in sel if r["spearman"][f"zigzag_{m}"] is not None]
            out[split][f"predicted_cycles_where_zigzag_{m}_defined"] = _summary(
                [r["spearman"]["predicted_cycles"] for r in both])
    # How far ZigZag's energy, priced on the measurement's terms, is from the measured energy of the
    # same tiles: per split, the ratio over every priced candidate (1.0: the same figure).
    for split in [k for k in out if k != "self_check"]:
        for m in modes:
            ratios = sorted(e[f"zigzag_{m}_energy_measured_terms_pj"] / e["measured_energy_pj"]
                            for r in ranked if split in ("all", r["split"])
                            for e in r.get("candidates_priced", [])
                            if e.get(f"zigzag_{m}_energy_measured_terms_pj") and e.get("measured_energy_pj"))
            out[split][f"zigzag_{m}_energy_over_measured"] = {
                "candidates": len(ratios),
                **({"p10": round(ratios[len(ratios) // 10], 4), "median": round(statistics.median(ratios), 4),
                    "p90": round(ratios[len(ratios) * 9 // 10], 4)} if ratios else {})}
    checks: dict[str, list[float]] = {}
    for r in rows:
        for k, v in r.get("self_check", {}).items():
            if k.endswith("_over_own") and isinstance(v, float):
                checks.setdefault(k, []).append(v)
    out["self_check"] = {k: {"n": len(v), "min": min(v), "median": statistics.median(v), "max": max(v)}
                         for k, v in sorted(checks.items())}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--analysis", type=Path, action="append", required=True,
                   help="a measured-choice analysis.json (schema 6), repeatable")
    p.add_argument("--mode", choices=(*zigzag_cost.FORCE_MODES, "both"), default="both",
                   help="how tiles become ZigZag's temporal mapping (analysis.zigzag_cost.evaluate_tiles)")
    p.add_argument("--out-json", type=Path, required=True)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    a.analysis, a.out_json = [out_path(x) for x in a.analysis], out_path(a.out_json)
    modes = list(zigzag_cost.FORCE_MODES) if a.mode == "both" else [a.mode]
    with OneLineErrors("zigzag_ranking", a.out_json, (RankingInputError,)) as cli:
        check_outputs({"--out-json": a.out_json}, {"--analysis": a.analysis})

        def log(msg: str) -> None:
            if not a.quiet:
                print(msg, file=sys.stderr, flush=True)

        with tempfile.TemporaryDirectory(prefix="zzrank_") as tmp:
            pricers: dict[Path, Pricer] = {}

            def pricer_for(hw_path: Path) -> Pricer:
                if hw_path not in pricers:
                    folder = Path(tmp) / hw_path.stem
                    hw = hwmod.load_hardware(hw_path)
                    acc, mapping = hwmod.write_zigzag_inputs(hw, folder)
                    pricers[hw_path] = Pricer(acc, mapping, Path(tmp), hw)
                return pricers[hw_path]

            rows = []
            for path in a.analysis:
                rows += rank_analysis(path, modes, pricer_for, log)
            evaluations = sum(pr.evaluations for pr in pricers.values())
            seconds = sum(pr.seconds for pr in pricers.values())
        result = {"modes": modes, "min_candidates": MIN_CANDIDATES, "target_rho": TARGET_RHO,
                  "analyses": sorted(pth.name for pth in a.analysis),
                  "summary": summarise(rows, modes), "dispatches": rows}
        atomic_write(a.out_json, json.dumps(result, indent=1, sort_keys=True) + "\n")
        s = result["summary"]
        for split, v in s.items():
            if split == "self_check":
                continue
            log(f"{split} ({', '.join(v['models'])}): " + "; ".join(
                f"{f} median {v[f]['median']} mean {v[f]['mean']} ({v[f]['defined']}/{v[f]['dispatches']}, "
                f">= {TARGET_RHO}: {v[f]['at_least_target']})"
                for f in [*(f"zigzag_{m}" for m in modes), *(f"zigzag_{m}_energy" for m in modes),
                          "predicted_cycles"]))
        log(f"self-check: {json.dumps(s['self_check'])}")
        log(f"{evaluations} ZigZag evaluations, {seconds:.0f} s")
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
