"""ZigZag's prediction of what ships and ZigZag as a candidate, beside the measurement (issue 77).

    tools/bazel build //models:zoo_measured_choices //models:zoo_tuning_records
    tools/bazel run //tools:report -- --collect prediction     (or, from the workspace root:)
    python -m results.shipped_prediction --bounds docs/data/shipped_bounds.json \\
        --models bazel-bin/models --out-json docs/data/shipped_prediction.json

Two collections, both from builds and analyses already measured (nothing runs under qemu here):

1. **The shipped builds, priced.** For every dispatch of every zoo pipeline's shipped riscv build
   (docs/data/shipped_bounds.json: its measured memory-aware cycles and its bound), ZigZag's
   latency and energy (on the measurement's terms) of the tiles that ship, forced level by level
   (analysis.zigzag_cost.evaluate_tiles), where the dispatch is a ZigZag layer of an analysed module:
   a pipeline shipping `tuned` or a tiled strategy (common.targets.TILED_STRATEGIES) compiles the
   tiles of its analysis (`<p>_riscv_analysis` or `<p>_riscv_<strategy>_analysis`). Dispatches ZigZag
   cannot price say why; results.prediction prices them by their bound and fits the rest.
2. **ZigZag as a candidate.** Per GEMM and convolution dispatch of every measured-choice analysis
   (riscv and riscv512, tuned and tiled strategies): the measured memory-aware cycles of ZigZag's own
   candidate, of the measured best and of IREE's default; and per dispatch of every predicted
   analysis, the measured cycles of the candidate it chose without measuring (from its measured twin)
   beside the measured choice's.

Nothing is fitted here (results.prediction fits on the calibration split only).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from math import prod
from pathlib import Path

from analysis import zigzag_cost
from analysis.zigzag_pricer import Pricer, latency_on_measured_terms, nest_from_json
from common import hardware as hwmod
from common.errors import NamedError, OneLineErrors
from common.files import atomic_write, check_outputs, read_json, sha256_file
from common.op_kinds import MAC_KINDS
from common.targets import TILED_STRATEGIES, TUNED

SCHEMA = 1
HARDWARE_DIR = Path(__file__).resolve().parent.parent / "analysis" / "hardware"
ANALYSIS_SCHEMA = 6
MODE = "forced"  # the tiles' levels as compiled (zigzag_ranking's `allocated` re-cuts them)


class PredictionInputError(NamedError, ValueError):
    """An input the collection cannot read or that is not built; the message names it."""


def _analysis(path: Path) -> dict:
    data = read_json(path, "analysis", kind=dict)
    if not isinstance(data, dict) or data.get("schema_version") != ANALYSIS_SCHEMA:
        raise PredictionInputError(f"{path}: not an analysis of schema {ANALYSIS_SCHEMA}")
    return data


def _split(models: Path, pipeline: str) -> str:
    info = models / f"{pipeline}_pipeline_info.json"
    if not info.is_file():
        raise PredictionInputError(f"{info}: not built (tools/bazel build //models:zoo)")
    return read_json(info, "pipeline info", kind=dict)["split"]


def shipped_analysis(models: Path, pipeline: str, strategy: str) -> Path | None:
    """The analysis whose tiles the shipped build compiled, or None (a packed strategy: IREE's tiles)."""
    if strategy == TUNED:
        return models / f"{pipeline}_riscv_analysis.analysis.json"
    if strategy in TILED_STRATEGIES:
        return models / f"{pipeline}_riscv_{strategy}_analysis.analysis.json"
    return None


def price_shipped(bounds: dict, models: Path, pricer_for, log) -> dict[str, dict]:
    out = {}
    for pipeline, shipped in sorted(bounds["pipelines"].items()):
        strategy = shipped["ships"]
        path = shipped_analysis(models, pipeline, strategy)
        entry: dict = {"ships": strategy, "split": _split(models, pipeline), "hardware": shipped["hardware"]}
        out[pipeline] = entry
        if path is None:
            entry["not_priced"] = (f"ships {strategy}, a packed strategy: IREE chooses its tiles and packs "
                                   "the operands, no analysis describes them")
            continue
        if not path.is_file():
            raise PredictionInputError(f"{path}: not built (tools/bazel build //models:{path.name.split('.')[0]})")
        data = _analysis(path)
        if data["hardware"] != shipped["hardware"]:
            raise PredictionInputError(f"{path}: analysed for {data['hardware']}, ships on {shipped['hardware']}")
        hw_path = HARDWARE_DIR / f"{data['hardware']}.yaml"
        if sha256_file(hw_path) != data["hardware_sha256"]:
            raise PredictionInputError(f"{path}: analysed with another {hw_path} (rebuild it)")
        pricer: Pricer = pricer_for(hw_path)
        entry["analysis"] = path.name
        by_name = {d["name"]: d for d in data["dispatches"]}
        priced = {}
        for d in shipped["dispatches"]:
            disp = by_name.get(d["name"])
            if disp is None:
                priced[d["name"]] = {"not_priced": f"not a dispatch of {path.name}"}
                continue
            try:
                nest = nest_from_json(disp)
                layer = zigzag_cost.to_layer(disp["kind"], nest, max_searched_loops=None)
            except (zigzag_cost.NotExpressible, ValueError) as err:
                priced[d["name"]] = {"not_priced": f"not a ZigZag layer: {str(err).splitlines()[0]}"}
                continue
            chosen = next((c for c in disp["candidates"] if c["name"] == disp["chosen"]), {})
            # IREE's default ships its own tiles: the analysis reads them as its `iree-default` candidate's.
            tiles = disp.get("tiles") or chosen.get("tiles")
            if not tiles:
                priced[d["name"]] = {"not_priced": "no tiles in the analysis"}
                continue
            n, kinds = len(nest.loops), [k for _, _, k in nest.loops]
            macs = prod(b for _, b, _ in nest.loops)
            r = pricer.price(disp["signature"], layer, n, kinds, tiles, MODE)
            if isinstance(r, str):
                priced[d["name"]] = {"not_priced": r}
                continue
            priced[d["name"]] = {
                "chosen": disp["chosen"], "tiles": tiles, "macs": macs,
                "zigzag_latency_cycles": round(r["latency_cycles"]),
                "zigzag_measured_terms_cycles": round(latency_on_measured_terms(r, pricer.hw, macs)),
                "zigzag_energy_measured_terms_pj": round(zigzag_cost.energy_on_measured_terms(r, pricer.hw, macs)),
                "zigzag_own_optimum_latency_cycles": round(disp["zigzag"]["latency_cycles"]) if disp.get("zigzag") else None,
                # The energy the choice measured for these tiles (its own build of the dispatch, not
                # the shipped executable: the shipped build's perf keeps energy per model only).
                "choice_measured_energy_pj": chosen.get("measured_energy_pj"),
                "choice_measured_memory_aware_cycles": chosen.get("measured_memory_aware_cycles"),
            }
        entry["dispatches"] = priced
        n_priced = sum("zigzag_latency_cycles" in v for v in priced.values())
        log(f"{pipeline} ({strategy}): {n_priced} of {len(priced)} dispatches priced by ZigZag")
    return out


def _measured(c: dict) -> int | None:
    return c.get("measured_memory_aware_cycles")


def zigzag_as_candidate(models: Path, pipelines: list[str]) -> list[dict]:
    """Per contraction dispatch of every measured analysis: ZigZag's candidate against the measured."""
    rows = []
    for pipeline in sorted(pipelines):
        split = _split(models, pipeline)
        for target in ("riscv", "riscv512"):
            paths = [models / f"{pipeline}_{target}_analysis.analysis.json"]
            paths += [models / f"{pipeline}_{target}_{s}_analysis.analysis.json" for s in TILED_STRATEGIES]
            for path in paths:
                if not path.is_file():
                    if path == paths[0]:
                        raise PredictionInputError(f"{path}: not built (tools/bazel build //models:zoo_measured_choices)")
                    continue
                data = _analysis(path)
                for disp in data["dispatches"]:
                    if disp["kind"] not in MAC_KINDS:
                        continue
                    measured = {c["name"]: _measured(c) for c in disp["candidates"] if _measured(c)}
                    if not measured:
                        continue
                    best = min(measured, key=measured.get)
                    zz = next((c for c in disp["candidates"] if c["generator"] == "zigzag"), None)
                    rows.append({
                        "pipeline": pipeline, "split": split, "target": target, "analysis": path.name,
                        "dispatch": disp["name"], "kind": disp["kind"],
                        "zigzag_candidate": zz["name"] if zz else None,
                        "zigzag_measured": _measured(zz) if zz else None,
                        # ZigZag's mapping with a register-tile or alignment change (`zigzag+...`)
                        "zigzag_family_measured": min((v for k, v in measured.items() if k.startswith("zigzag")),
                                                      default=None),
                        "best": best, "best_measured": measured[best],
                        "default_measured": measured.get("iree-default"),
                        "chosen": disp["chosen"], "chosen_measured": measured.get(disp["chosen"]),
                    })
    return rows


def analysis_own_choice(models: Path, pipelines: list[str]) -> list[dict]:
    """Per dispatch of every predicted analysis (no measurement): the measured cycles of its choice
    (from the measured analysis of the same module) beside the measured choice's."""
    rows = []
    for pipeline in sorted(pipelines):
        split = _split(models, pipeline)
        for target in ("riscv", "riscv512"):
            predicted = models / f"{pipeline}_{target}_predicted_analysis.analysis.json"
            measured_path = models / f"{pipeline}_{target}_analysis.analysis.json"
            for path in (predicted, measured_path):
                if not path.is_file():
                    raise PredictionInputError(f"{path}: not built (tools/bazel build //models:zoo_measured_choices)")
            measured = {d["name"]: d for d in _analysis(measured_path)["dispatches"]}
            for disp in _analysis(predicted)["dispatches"]:
                twin = measured.get(disp["name"])
                if twin is None or not disp.get("chosen"):
                    continue
                cycles = {c["name"]: _measured(c) for c in twin["candidates"] if _measured(c)}
                if twin["chosen"] not in cycles:
                    continue  # a dispatch the measured choice did not measure (IREE's default kept)
                measured_cands = [c for c in twin["candidates"] if _measured(c)]

                def measured_argmin(field: str) -> int | None:
                    # What trusting one model over the measured shortlist would have shipped.
                    priced = [c for c in measured_cands if c.get(field) is not None]
                    return _measured(min(priced, key=lambda c: (c[field], c["name"]))) if priced else None

                rows.append({
                    "pipeline": pipeline, "split": split, "target": target, "dispatch": disp["name"],
                    "kind": disp["kind"], "predicted_choice": disp["chosen"],
                    "by_tile_model_measured": measured_argmin("predicted_cycles"),
                    "by_code_model_measured": measured_argmin("code_model_cycles"),
                    "predicted_choice_generator": next((c["generator"] for c in disp["candidates"]
                                                        if c["name"] == disp["chosen"]), None),
                    "predicted_choice_measured": cycles.get(disp["chosen"]),
                    "measured_choice": twin["chosen"], "measured_choice_measured": cycles[twin["chosen"]],
                })
    return rows


def collected(bounds_path: Path, models: Path, log=lambda msg: None) -> str:
    """docs/data/shipped_prediction.json's text, from the shipped bounds and the analyses in `models`."""
    bounds = read_json(bounds_path, "shipped bounds", kind=dict)
    if not isinstance(bounds, dict) or not isinstance(bounds.get("pipelines"), dict):
        raise PredictionInputError(f"{bounds_path}: not a shipped bounds file (docs/data/shipped_bounds.json)")
    with tempfile.TemporaryDirectory(prefix="zzship_") as tmp:
        pricers: dict[Path, Pricer] = {}

        def pricer_for(hw_path: Path) -> Pricer:
            if hw_path not in pricers:
                hw = hwmod.load_hardware(hw_path)
                acc, mapping = hwmod.write_zigzag_inputs(hw, Path(tmp) / hw_path.stem)
                pricers[hw_path] = Pricer(acc, mapping, Path(tmp), hw)
            return pricers[hw_path]

        shipped = price_shipped(bounds, models, pricer_for, log)
        log(f"{sum(pr.evaluations for pr in pricers.values())} ZigZag evaluations, "
            f"{sum(pr.seconds for pr in pricers.values()):.0f} s")
    pipelines = sorted(bounds["pipelines"])
    result = {
        "schema_version": SCHEMA, "mode": MODE,
        "collected_by": "bazel run //tools:report -- --collect prediction (results.shipped_prediction)",
        "bounds_sha256": sha256_file(bounds_path),
        "shipped": shipped,
        "zigzag_candidate": zigzag_as_candidate(models, pipelines),
        "analysis_choice": analysis_own_choice(models, pipelines),
    }
    return json.dumps(result, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bounds", type=Path, required=True, help="docs/data/shipped_bounds.json")
    p.add_argument("--models", type=Path, required=True, help="bazel-bin/models (analyses, pipeline infos)")
    p.add_argument("--out-json", type=Path, required=True)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    with OneLineErrors("shipped_prediction", a.out_json, (PredictionInputError,)) as cli:
        check_outputs({"--out-json": a.out_json}, {"--bounds": [a.bounds]})

        def log(msg: str) -> None:
            if not a.quiet:
                print(msg, file=sys.stderr, flush=True)

        atomic_write(a.out_json, collected(a.bounds, a.models, log))
        log(f"-> {a.out_json}")
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
