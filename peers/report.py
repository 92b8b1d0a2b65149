"""Per-op table of the peers beside IREE: share of the core model's FMA peak, from committed data.

    tools/bazel run //peers:report        (or, from the workspace root: python -m peers.report)

Reads
- peers/data/gemm_measured.json: the peers' measurements (tools/bazel run //peers:measure);
- tuning/records/<model>_riscv.json: IREE's measured candidates per dispatch, committed and
  keyed to the tree (choice/tune.py measured them: the same plugin, llvm-mca core and memory model
  on analysis/hardware/riscv_rvv.yaml); `iree-default` is IREE's own tiles, `iree-tuned` the chosen
  candidate (fewest memory-aware cycles, ties to IREE's default: choice.tune.decide), what the
  tuned build runs;
- docs/data/shipped_bounds.json: `iree-shipped`, the memory-aware cycles per call of the
  dispatches the model's shipped build runs the GEMM as (peers/shapes.py `shipped`), whatever
  strategy it ships (tools/bazel run //tools:report -- --collect bounds);
- docs/data/measured_choices.json: which candidate each measured choice kept, and each model's split;
- peers/data/iree_gemm_measured.json: IREE's build of each shape as a GEMM alone, per strategy
  (tools/bazel run //peers:iree_gemm): codegen, data tiling, mmt4d microkernels, with and without
  the packing dispatches a standalone call runs;
and writes docs/data/peers_ops.json and docs/peers.md (generated; do not edit). Nothing is
measured here. Share of FMA peak = M*N*K / (cycles x the description's MACs per cycle).

Milestone 2, whole models, from
- peers/data/onnxrt_measured.json: each exported zoo model through ONNX Runtime under qemu
  (tools/bazel run //peers:measure_onnxrt): one Run's model and memory-aware cycles, numerics
  against the golden, the kernels ORT ran;
- peers/data/iree_models_measured.json: one inference of what each riscv pipeline ships, from
  that build's perf report (tools/bazel run //peers:collect_ours);
writes docs/data/peers_models.json and the per-model section of docs/peers.md.

Convolutions (issue 58), from
- peers/data/conv_measured.json: the autovectorizer's and XNNPACK's convolution on the zoo's
  convolutions (peers/conv_shapes.py; tools/bazel run //peers:measure_conv);
- docs/data/shipped_bounds.json: the memory-aware cycles of the dispatches IREE runs each
  convolution as in what its model ships (tools/bazel run //tools:report -- --collect bounds);
writes docs/data/peers_convs.json and the per-op convolution section of docs/peers.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path

from common.errors import OneLineErrors
from common.files import InputError, read_json, sha256_file, write_together
from common.targets import DEFAULT_STRATEGY, PACKED_STRATEGIES
from peers.iree_gemm import STRATEGIES
from peers.conv_shapes import CONV_SHAPES
from peers.shapes import SHAPES

MEASURED = Path("peers/data/gemm_measured.json")
IREE_ALONE = Path("peers/data/iree_gemm_measured.json")
CHOICES = Path("docs/data/measured_choices.json")
RECORDS = Path("tuning/records")
OUT_JSON = Path("docs/data/peers_ops.json")
ORT_MEASURED = Path("peers/data/onnxrt_measured.json")
OURS_MODELS = Path("peers/data/iree_models_measured.json")
OUT_MODELS_JSON = Path("docs/data/peers_models.json")
CONV_MEASURED = Path("peers/data/conv_measured.json")
SHIPPED_BOUNDS = Path("docs/data/shipped_bounds.json")
OUT_CONVS_JSON = Path("docs/data/peers_convs.json")
CONV_PEERS = ("autovec", "xnnpack")
CONV_LABELS = {"autovec": "naive C + clang-19 autovec", "xnnpack": "XNNPACK convolution operator"}
SPLITS = ("calibration", "held_out")
OUT_MD = Path("docs/peers.md")
HARDWARE = "riscv_rvv"  # IREE's per-dispatch figures are committed for this description only
PEERS = ("autovec", "openblas", "blis", "xnnpack", "eigen")
IREE = ("iree-default", "iree-tuned")  # from the tile records: model and memory-aware cycles
SHIPPED = "iree-shipped"  # from the shipped build's perf report: memory-aware cycles only
# IREE's build of the GEMM alone, per strategy (peers/iree_gemm.py), and with run-time packing.
ALONE_OF = {s: "iree-codegen-alone" if s == DEFAULT_STRATEGY else f"iree-{s}" for s in STRATEGIES}
PACKED_OF = {s: f"iree-{s}+packing" for s in STRATEGIES if s in PACKED_STRATEGIES}
ALONE = tuple(ALONE_OF.values())
PACKED = tuple(PACKED_OF.values())
LABELS = {"autovec": "naive C + clang-19 autovec", "openblas": "OpenBLAS sgemm", "blis": "BLIS sgemm",
          "xnnpack": "XNNPACK operator", "eigen": "Eigen 3.4 product",
          "iree-default": "IREE codegen, zoo dispatch (its tiles)",
          "iree-tuned": "IREE tuned, zoo dispatch (our tiles)",
          SHIPPED: "IREE as shipped (its strategy)",
          "iree-codegen-alone": "IREE codegen, GEMM alone", "iree-datatiling": "IREE data tiling (mmt4d dispatch)",
          "iree-ukernels": "IREE mmt4d ukernels (mmt4d dispatch)",
          "iree-datatiling+packing": "IREE data tiling + run-time packing",
          "iree-ukernels+packing": "IREE ukernels + run-time packing"}


class ReportError(RuntimeError):
    """Committed data missing or inconsistent; the message names the file."""


def _load(path: Path) -> dict:
    # Strictly, as results/ reads its data (common.files.read_json): NaN, a key given twice, a
    # file not UTF-8 or not an object (a list was a traceback: issue 80) named in one line.
    try:
        return read_json(path, "peers data", kind=dict)
    except InputError as err:
        raise ReportError(str(err)) from None


def _chosen_by_record(results: dict) -> str:
    """choice.tune.decide's rule on a tuning record: fewest memory-aware cycles among the measured
    candidates, ties to IREE's default (then record order)."""
    names = [n for n, c in results.items() if c.get("measured")]
    names.sort(key=lambda n: (n != "iree-default"))
    return min(names, key=lambda n: (results[n]["measured"]["memory_aware_cycles"], names.index(n)))


def _figures(macs: int, peak: int, model_cycles: int, memory_cycles: int) -> dict:
    return {"model_cycles": model_cycles, "memory_aware_cycles": memory_cycles,
            "fma_peak_share": round(macs / (model_cycles * peak), 4),
            "memory_aware_fma_peak_share": round(macs / (memory_cycles * peak), 4)}


def _peer_tools(s, runs: dict, peak: int, hardware: str) -> dict:
    tools = {}
    for tool in PEERS:
        r = runs.get((s.key, tool))
        if r is None:
            raise ReportError(f"{MEASURED}: no {tool} run of {s.key} on {hardware}")
        if (r["m"], r["n"], r["k"], r["trans_b"]) != (s.m, s.n, s.k, s.trans_b):
            raise ReportError(f"{MEASURED}: {tool} {s.key} measured another shape than peers/shapes.py")
        tools[tool] = {**_figures(s.macs, peak, r["model_cycles"], r["memory"]["cycles"]),
                       "bound": r["memory"]["bound"], "vector_share": r["vector_share"],
                       "instructions": r["instructions"], "vector_fma": r["vector_fma"],
                       "vector_fp": r["classes"]["vector_fp"], "info": r["info"],
                       "unpriced_fences": r.get("unpriced_fences", 0)}
    return tools


def _alone_tools(s, run: dict, peak: int, hardware: str) -> dict:
    tools = {}
    strategies = run["results"].get(s.key)
    if strategies is None or set(strategies) != set(STRATEGIES):
        raise ReportError(f"{IREE_ALONE}: no {', '.join(STRATEGIES)} runs of {s.key} on {hardware}")
    for strategy, tool in ALONE_OF.items():
        e = strategies[strategy]
        tools[tool] = {**_figures(s.macs, peak, e["gemm_model_cycles"], e["gemm_memory_aware_cycles"]),
                       "dispatch": e["gemm_dispatch"]}
    for strategy, tool in PACKED_OF.items():
        e = strategies[strategy]
        tools[tool] = {**_figures(s.macs, peak, e["total_model_cycles"], e["total_memory_aware_cycles"]),
                       "dispatches": [d["name"] for d in e["dispatches"]]}
    return tools


def _other_core(measured: dict, alone_runs: dict, name: str) -> dict:
    """Peers and IREE's GEMM alone on another description (no zoo figures are committed there)."""
    h = measured["hardware"][name]
    runs = {(r["shape"], r["tool"]): r for r in measured["results"] if r["hardware"] == name}
    ops = []
    for s in SHAPES:
        tools = {**_peer_tools(s, runs, h["peak_macs_per_cycle"], name),
                 **_alone_tools(s, alone_runs[name], h["peak_macs_per_cycle"], name)}
        best_peer = min(PEERS, key=lambda t: tools[t]["model_cycles"])
        best_iree = min(ALONE, key=lambda t: tools[t]["model_cycles"])
        ops.append({"shape": s.key, "model": s.model, "split": s.split, "m": s.m, "n": s.n, "k": s.k,
                    "layout": s.layout, "macs": s.macs, "tools": tools, "best_peer": best_peer,
                    "best_iree": best_iree, "best_iree_over_best_peer_model_cycles": round(
                        tools[best_iree]["model_cycles"] / tools[best_peer]["model_cycles"], 3)})
    return {"core": h["core"], "vlen": h["vlen"], "peak_macs_per_cycle": h["peak_macs_per_cycle"], "ops": ops}


def _shipped_dispatches(root: Path, bounds: dict, model: str, names: tuple[str, ...], core: str,
                        named_in: str) -> tuple[dict, list[dict]]:
    """`model`'s shipped build in shipped_bounds.json and its dispatches `names`, refused when the
    build was measured on another core or no longer runs one of them (a refresh that changes what
    ships renames dispatches: no table may silently compare another one)."""
    if not names:
        raise ReportError(f"{named_in}: {model}: no shipped dispatch named")
    pipeline = bounds["pipelines"].get(model)
    if pipeline is None:
        raise ReportError(f"{root / SHIPPED_BOUNDS}: no shipped build of {model}")
    if pipeline["core"] != core:
        raise ReportError(f"{root / SHIPPED_BOUNDS}: {model} measured on {pipeline['core']}, the peers on {core}")
    by_name = {d["name"]: d for d in pipeline["dispatches"]}
    missing = [d for d in names if d not in by_name]
    if missing:
        raise ReportError(f"{root / SHIPPED_BOUNDS}: {model} ships no dispatch {missing[0]} ({named_in} names it)")
    return pipeline, [by_name[d] for d in names]


def build(root: Path) -> dict:
    measured = _load(root / MEASURED)
    choices = _load(root / CHOICES)
    alone = _load(root / IREE_ALONE)
    bounds = _load(root / SHIPPED_BOUNDS)
    hw = measured.get("hardware", {}).get(HARDWARE)
    if hw is None:
        raise ReportError(f"{MEASURED}: no runs on {HARDWARE}")
    alone_runs = alone.get("runs", {})
    for name, h in measured["hardware"].items():
        if name not in alone_runs:
            raise ReportError(f"{IREE_ALONE}: no run on {name}, which the peers were measured on")
        if alone_runs[name]["hardware_sha256"] != h["sha256"]:
            raise ReportError(f"{IREE_ALONE}: measured on another {name}.yaml than the peers")
    peak = hw["peak_macs_per_cycle"]
    runs = {(r["shape"], r["tool"]): r for r in measured["results"] if r["hardware"] == HARDWARE}
    ops, notes = [], []
    records_used = {}
    for s in SHAPES:
        model = choices["models"].get(s.model)
        if model is None:
            raise ReportError(f"{CHOICES}: no measured choice of {s.model}")
        if model["split"] != s.split:
            raise ReportError(f"peers/shapes.py: {s.model} is {model['split']} in {CHOICES}, not {s.split}")
        if model["core"] != hw["core"]:
            raise ReportError(f"{CHOICES}: {s.model} measured on {model['core']}, the peers on {hw['core']}")
        record_path = RECORDS / f"{s.model}_riscv.json"
        record = _load(root / record_path)
        records_used[str(record_path)] = sha256_file(root / record_path)
        if record["key"]["hardware_sha256"] != hw["sha256"]:
            raise ReportError(f"{record_path}: measured on another {HARDWARE}.yaml than the peers "
                              f"(sha256 {record['key']['hardware_sha256'][:12]} vs {hw['sha256'][:12]})")
        results = record["results"].get(s.dispatch)
        if results is None:
            raise ReportError(f"{record_path}: no dispatch {s.dispatch}")
        choice = next((d for d in model["dispatches"] if d["name"] == s.dispatch), None)
        chosen = _chosen_by_record(results)
        if choice is not None and choice["chosen"] != chosen:
            notes.append(f"{s.key}: {CHOICES} says {choice['chosen']} was chosen; the tuning record's figures "
                         f"(refreshed since) choose {chosen}; the record is used")
        tools = _peer_tools(s, runs, peak, HARDWARE)
        for tool, name in (("iree-default", "iree-default"), ("iree-tuned", chosen)):
            m = results[name]["measured"]
            tools[tool] = {**_figures(s.macs, peak, m["model_cycles"], m["memory_aware_cycles"]), "candidate": name}
        pipeline, shipped = _shipped_dispatches(root, bounds, s.model, s.shipped, hw["core"], "peers/shapes.py")
        shipped_cycles = sum(d["memory_aware_cycles"] for d in shipped)
        tools[SHIPPED] = {"memory_aware_cycles": shipped_cycles,
                          "memory_aware_fma_peak_share": round(s.macs / (shipped_cycles * peak), 4),
                          "strategy": pipeline["ships"], "dispatches": list(s.shipped)}
        tools.update(_alone_tools(s, alone_runs[HARDWARE], peak, HARDWARE))
        best_peer = min(PEERS, key=lambda t: tools[t]["model_cycles"])
        best_peer_memory = min(PEERS, key=lambda t: tools[t]["memory_aware_cycles"])
        ops.append({"shape": s.key, "model": s.model, "split": s.split, "dispatch": s.dispatch, "what": s.what,
                    "m": s.m, "n": s.n, "k": s.k, "layout": s.layout, "macs": s.macs, "iree_fused": s.iree_fused,
                    "iree_ships": pipeline["ships"], "tools": tools, "best_peer": best_peer,
                    "best_peer_memory_aware": best_peer_memory,
                    # The same GEMM built alone vs inside the zoo with IREE's default tiles: equal up to
                    # the fused consumers and the model's constant weights.
                    "iree_alone_over_zoo_default_model_cycles": round(
                        tools["iree-codegen-alone"]["model_cycles"] / tools["iree-default"]["model_cycles"], 3),
                    "iree_tuned_over_best_peer_model_cycles": round(
                        tools["iree-tuned"]["model_cycles"] / tools[best_peer]["model_cycles"], 3),
                    "iree_shipped_over_best_peer_memory_aware_cycles": round(
                        shipped_cycles / tools[best_peer_memory]["memory_aware_cycles"], 3)})
    summary = {}
    for split in ("calibration", "held_out"):
        chosen_ops = [o for o in ops if o["split"] == split]
        summary[split] = ({t: round(math.exp(sum(math.log(o["tools"][t]["fma_peak_share"]) for o in chosen_ops)
                                            / len(chosen_ops)), 4) for t in PEERS + IREE + ALONE + PACKED}
                          if chosen_ops else {})
    return {
        "what": "per-op share of the core model's FMA peak: peers' f32 GEMMs vs IREE's dispatches of the same "
                "shapes (peers/report.py)",
        "produced_by": "tools/bazel run //peers:report",
        "hardware": HARDWARE, "core": hw["core"], "vlen": hw["vlen"], "peak_macs_per_cycle": peak,
        "model_ignores": measured["model_ignores"], "memory_model_ignores": measured["memory_model_ignores"],
        "sources": {str(MEASURED): sha256_file(root / MEASURED), str(IREE_ALONE): sha256_file(root / IREE_ALONE),
                    str(CHOICES): sha256_file(root / CHOICES), str(SHIPPED_BOUNDS): sha256_file(root / SHIPPED_BOUNDS),
                    **records_used},
        "packages": measured.get("packages", []), "tools": measured.get("tools", {}),
        "summary_geomean_fma_peak_share": summary, "ops": ops,
        "other_cores": {name: _other_core(measured, alone_runs, name)
                        for name in measured["hardware"] if name != HARDWARE},
        "notes": notes,
    }


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def build_models(root: Path) -> dict:
    """Milestone 2: per zoo model, one inference of our shipped build over one ONNX Runtime Run,
    on the same description; every figure from the committed measurements, checked to agree."""
    ort = _load(root / ORT_MEASURED)
    ours = _load(root / OURS_MODELS)
    choices = _load(root / CHOICES)
    hw = ort.get("hardware", {}).get(HARDWARE)
    if hw is None:
        raise ReportError(f"{ORT_MEASURED}: no runs on {HARDWARE}")
    runs = {r["model"]: r for r in ort["results"] if r["hardware"] == HARDWARE}
    shipped = ours.get("pipelines", {})
    for name in ort["models"]:
        if name not in shipped:
            raise ReportError(f"{OURS_MODELS}: no measurement of what {name} ships (tools/bazel run //peers:collect_ours)")
    for name in shipped:
        if name not in ort["models"]:
            raise ReportError(f"{ORT_MEASURED}: no ONNX Runtime run of {name}, whose shipped build is in {OURS_MODELS}")
    if not ort["models"]:
        raise ReportError(f"{ORT_MEASURED}: no models")
    rows = []
    for name, m in ort["models"].items():
        r = runs.get(name)
        if r is None:
            raise ReportError(f"{ORT_MEASURED}: no ONNX Runtime run of {name} on {HARDWARE}")
        model = choices["models"].get(name)
        if model is None:
            raise ReportError(f"{CHOICES}: no model {name}")
        if model["split"] != m["split"]:
            raise ReportError(f"{ORT_MEASURED}: {name} is {m['split']} there, {model['split']} in {CHOICES}")
        s = shipped[name]
        o = s["runs"].get(HARDWARE)
        if o is None:
            raise ReportError(f"{OURS_MODELS}: {name}'s shipped build has no run on {HARDWARE}")
        if o["hardware_sha256"] != hw["sha256"]:
            raise ReportError(f"{OURS_MODELS}: {name} measured on another {HARDWARE}.yaml than ONNX Runtime "
                              f"(sha256 {o['hardware_sha256'][:12]} vs {hw['sha256'][:12]})")
        if o["core"] != hw["core"]:
            raise ReportError(f"{OURS_MODELS}: {name} priced on {o['core']}, ONNX Runtime on {hw['core']}")
        worst = 0.0
        for e in r["outputs"]:
            if not e["max_abs_error"] <= ort["tolerance"] * e["golden_max"]:
                raise ReportError(f"{ORT_MEASURED}: {name} output_{e['output']} is off the golden beyond the "
                                  f"tolerance: no figure of a wrong result")
            worst = max(worst, e["max_abs_error"] / e["golden_max"])
        macs, peak = o["inference_macs"], hw["peak_macs_per_cycle"]
        ours_fig = {"model_cycles": o["inference_model_cycles"], "memory_aware_cycles": o["inference_memory_aware_cycles"],
                    "instructions": o["inference_instructions"], "vector_share": o["inference_vector_share"],
                    "dispatch_calls": o["dispatch_calls"],
                    "costliest_dispatches": [
                        {"name": d["name"], "kind": d["kind"], "calls": d["calls"],
                         "share_of_model_cycles": round(d["model_cycles"] * d["calls"] / o["inference_model_cycles"], 4),
                         "fma_peak_share": round(d["macs"] / (d["model_cycles"] * peak), 4) if d["model_cycles"] else 0.0,
                         "vector_share": d["vector_share"]}
                        for d in o["per_dispatch"][:3]],
                    "fma_peak_share": round(macs / (o["inference_model_cycles"] * peak), 4),
                    "ships": s["ships"], "perf_report": s["perf_report"], "perf_report_sha256": s["perf_report_sha256"]}
        ort_fig = {"model_cycles": r["model_cycles"], "memory_aware_cycles": r["memory"]["cycles"],
                   "instructions": r["instructions"], "vector_share": r["vector_share"],
                   "fma_peak_share": round(macs / (r["model_cycles"] * peak), 4), "bound": r["memory"]["bound"],
                   "unpriced_fences": r["unpriced_fences"], "max_error_of_output_scale": float(f"{worst:.3g}"),
                   "ops": m["ops"], "providers": m["providers"]}
        rows.append({"model": name, "split": m["split"], "macs": macs, "ours": ours_fig, "onnxruntime": ort_fig,
                     "ours_over_ort_model_cycles": round(ours_fig["model_cycles"] / ort_fig["model_cycles"], 3),
                     "ours_over_ort_memory_aware_cycles": round(
                         ours_fig["memory_aware_cycles"] / ort_fig["memory_aware_cycles"], 3)})
    rows.sort(key=lambda row: (SPLITS.index(row["split"]), row["model"]))
    summary = {}
    for split in SPLITS:
        group = [row for row in rows if row["split"] == split]
        if group:
            summary[split] = {
                "models": len(group),
                "geomean_ours_over_ort_model_cycles": round(_geomean([g["ours_over_ort_model_cycles"] for g in group]), 3),
                "geomean_ours_over_ort_memory_aware_cycles": round(
                    _geomean([g["ours_over_ort_memory_aware_cycles"] for g in group]), 3)}
    versions = {r["info"].get("version") for r in runs.values()}
    if len(versions) != 1:
        raise ReportError(f"{ORT_MEASURED}: ONNX Runtime versions {sorted(map(str, versions))} in one measurement")
    return {
        "what": "whole zoo models: one inference of our shipped RISC-V build over one ONNX Runtime Run, on the same "
                "core model and memory model (peers/report.py)",
        "produced_by": "tools/bazel run //peers:report",
        "hardware": HARDWARE, "core": hw["core"], "vlen": hw["vlen"], "peak_macs_per_cycle": hw["peak_macs_per_cycle"],
        "model_ignores": ort["model_ignores"], "memory_model_ignores": ort["memory_model_ignores"],
        "tolerance": ort["tolerance"],
        "onnxruntime": {"version": versions.pop(), "arch": ort["onnxruntime_arch"],
                        "packages": [p for p in ort["packages"] if "onnx" in p]},
        "sources": {str(ORT_MEASURED): sha256_file(root / ORT_MEASURED), str(OURS_MODELS): sha256_file(root / OURS_MODELS),
                    str(CHOICES): sha256_file(root / CHOICES)},
        "summary": summary, "models": rows,
        "not_compared": sorted(set(choices["models"]) - {row["model"] for row in rows}),
    }


def _mem_note(o: dict, r: dict) -> str:
    return (f"{o['memory_aware_cycles'] / o['model_cycles']:.2f}x its model cycles over {o['dispatch_calls']} "
            f"dispatch calls, each priced from empty caches (ORT's one Run: "
            f"{r['memory_aware_cycles'] / r['model_cycles']:.2f}x)")


def _span(xs: list[float]) -> str:
    lo, hi = _pct(min(xs)), _pct(max(xs))
    return lo if lo == hi else f"{lo} to {hi}"


def _ops(ops: dict) -> str:
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in ops.items())


def _cycles(n: int) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k"


ORT_TARGET_GEOMEAN = 0.5  # issue 58: ours / ONNX Runtime <= 1.0 on every exported model, geomean <= 0.5


def _ort_target_lines(data: dict) -> list[str]:
    """Issue 58's whole-model targets against ORT, per split and yardstick, and for a missed
    geomean the models above it with what their figures say stops them."""
    worst = max(data["models"], key=lambda row: row["ours_over_ort_memory_aware_cycles"])
    every = "holds" if worst["ours_over_ort_memory_aware_cycles"] <= 1 and all(
        row["ours_over_ort_model_cycles"] <= 1 for row in data["models"]) else "misses"
    lines = [f"Issue 58's targets: ours / ORT at most 1.00x on every model ({every}: at most "
             f"{max(row['ours_over_ort_model_cycles'] for row in data['models']):.2f}x in model cycles, "
             f"{worst['ours_over_ort_memory_aware_cycles']:.2f}x memory-aware, {worst['model']}), and a geomean "
             f"at most {ORT_TARGET_GEOMEAN:.2f}x: "
             + "; ".join(f"{split} {s['geomean_ours_over_ort_model_cycles']:.2f}x model cycles, "
                         f"{s['geomean_ours_over_ort_memory_aware_cycles']:.2f}x memory-aware "
                         f"({'holds' if s['geomean_ours_over_ort_memory_aware_cycles'] <= ORT_TARGET_GEOMEAN else 'misses'})"
                         for split, s in data["summary"].items()) + "."]
    for split, s in data["summary"].items():
        if s["geomean_ours_over_ort_memory_aware_cycles"] <= ORT_TARGET_GEOMEAN:
            continue
        above = sorted((row for row in data["models"] if row["split"] == split
                        and row["ours_over_ort_memory_aware_cycles"] > ORT_TARGET_GEOMEAN),
                       key=lambda row: -row["ours_over_ort_memory_aware_cycles"])
        lines += ["", f"The {split} geomean misses in memory-aware cycles only. Its models above "
                  f"{ORT_TARGET_GEOMEAN:.2f}x: " + "; ".join(
                      f"{row['model']} {row['ours_over_ort_memory_aware_cycles']:.2f}x (ships {row['ours']['ships']}; "
                      f"ours is {_mem_note(row['ours'], row['onnxruntime'])}; costliest `"
                      f"{row['ours']['costliest_dispatches'][0]['name']}`, "
                      f"{_pct(row['ours']['costliest_dispatches'][0]['share_of_model_cycles'])} of our cycles)"
                      for row in above)
                  + ". What stops it: where our memory-aware cycles are far above our model cycles and ORT's are "
                  "not, the yardstick prices every one of our dispatch calls from empty caches and ORT's Run warm "
                  "across its nodes, so a model of many small dispatches pays a cold start per call, which fewer, "
                  "larger dispatches (fusion) would close and no choice here makes; otherwise the costliest "
                  "dispatch named (the per-op table above and docs/results_bounds.md say what stops each op "
                  "kind). Tried: every strategy for the whole model (the strategy choice) and every dispatch's "
                  "tile choice."]
    return lines


def models_markdown(data: dict) -> list[str]:
    arch = data["onnxruntime"]["arch"]
    has_v = any(re.fullmatch(r"v\d+p\d+", part) for part in arch.split("_"))  # e.g. ..._c2p0_v1p0_...
    out = ["## Whole models against ONNX Runtime (milestone 2)", "",
           f"Each zoo model below is exported to ONNX from the same PyTorch definition and seeds its pipeline imports "
           f"(peers/export_onnx.py, torch's TorchScript exporter, a build action) and run through ONNX Runtime "
           f"{data['onnxruntime']['version']} (Debian trixie riscv64: "
           + ", ".join(f"`{p}`" for p in data["onnxruntime"]["packages"])
           + ") by a C harness on its C API (peers/harness/onnxrt_model.c): one intra-op and one inter-op thread, "
           "sequential execution, ORT's default graph optimizations and CPU execution provider, one untimed Run "
           "(arena allocation, weight prepacking), then one Run between the window markers, under the plugin qemu at "
           f"VLEN {data['vlen']}. Its outputs are checked against the framework golden of the pipeline's import "
           f"(largest error at most {data['tolerance']:g} of the output's largest magnitude). Ours is one inference "
           "of the build each riscv pipeline ships (its manifest's strategy choice), from that build's perf report: "
           "every dispatch of one call measured under the same plugin and counted as many times as the call runs it; "
           "dispatches that only run at initialisation (packing constant weights) are left out, as ORT's prepacking "
           "is. Both are priced by the same code (perf/mca.py, perf/memory_model.py) on "
           f"`{data['hardware']}` (llvm-mca's `{data['core']}`, {data['peak_macs_per_cycle']} f32 MACs per cycle).", "",
           "Not alike: ours counts the dispatches only (not IREE's VM and HAL runtime around them), each dispatch "
           "starting with empty caches; ORT's window is its whole `Run` (graph executor, per-node dispatch and "
           "allocation planning included), with empty caches at the start of the Run only. Alike, and worth "
           "knowing: llvm-mca prices every executed block as a steady-state loop of itself, every load an L1 hit "
           "and no branch mispredicted; priced so, ORT's scalar code runs at up to "
           f"{max(row['onnxruntime']['instructions'] / row['onnxruntime']['model_cycles'] for row in data['models']):.2f}"
           " instructions per model cycle on this wide core (ours: up to "
           f"{max(row['ours']['instructions'] / row['ours']['model_cycles'] for row in data['models']):.2f}).", "",
           "| model | split | ours ships | ours model cycles | ORT model cycles | ours / ORT | ours memory-aware | "
           "ORT memory-aware | ours / ORT | FMA-peak share ours / ORT | ORT max error (of output scale) |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for row in data["models"]:
        o, r = row["ours"], row["onnxruntime"]
        out.append(f"| {row['model']} | {row['split']} | {o['ships']} | {_cycles(o['model_cycles'])} | "
                   f"{_cycles(r['model_cycles'])} | {row['ours_over_ort_model_cycles']:.2f}x | "
                   f"{_cycles(o['memory_aware_cycles'])} | {_cycles(r['memory_aware_cycles'])} | "
                   f"{row['ours_over_ort_memory_aware_cycles']:.2f}x | {_pct(o['fma_peak_share'])} / "
                   f"{_pct(r['fma_peak_share'])} | {r['max_error_of_output_scale']:.1e} |")
    out += ["", "ours / ORT below 1: our shipped build takes fewer cycles for one inference. FMA-peak share: the "
            "model's MACs (from our perf report) over cycles x the core's peak. Zoo models not compared here "
            "(peers/onnx_models.bzl lists the exported ones; only torch models are exported): "
            + (", ".join(data["not_compared"]) or "none") + ".", "",
            "| split | models | geomean ours / ORT, model cycles | geomean ours / ORT, memory-aware cycles |",
            "|---|---:|---:|---:|"]
    for split, s in data["summary"].items():
        out.append(f"| {split} | {s['models']} | {s['geomean_ours_over_ort_model_cycles']:.2f}x | "
                   f"{s['geomean_ours_over_ort_memory_aware_cycles']:.2f}x |")
    out += ["", *_ort_target_lines(data)]
    faster = [row for row in data["models"]
              if row["ours_over_ort_model_cycles"] > 1 or row["ours_over_ort_memory_aware_cycles"] > 1]
    out += ["", "### Where ONNX Runtime is faster", ""]
    if not faster:
        closest = max(data["models"], key=lambda row: row["ours_over_ort_memory_aware_cycles"])
        o, r = closest["ours"], closest["onnxruntime"]
        out.append(f"Nowhere, in model cycles or memory-aware cycles. Closest: {closest['model']} "
                   f"({closest['ours_over_ort_memory_aware_cycles']:.2f}x memory-aware, "
                   f"{closest['ours_over_ort_model_cycles']:.2f}x model cycles): ORT's scalar code executes "
                   f"{r['instructions'] / o['instructions']:.1f}x our instructions at "
                   f"{r['instructions'] / r['model_cycles']:.2f} per model cycle (ours "
                   f"{o['instructions'] / o['model_cycles']:.2f}), and only {_pct(o['vector_share'])} of ours are "
                   f"vector instructions. In memory-aware cycles ours is {_mem_note(o, r)}. The next target is there.")
    for row in faster:
        o, r = row["ours"], row["onnxruntime"]
        where = "; ".join(f"`{d['name']}` ({d['kind']}, {_pct(d['share_of_model_cycles'])} of our cycles, "
                          f"{_pct(d['fma_peak_share'])} of the FMA peak, {_pct(d['vector_share'])} vector)"
                          for d in o["costliest_dispatches"])
        out.append(f"- {row['model']} ({row['split']}): ours / ORT {row['ours_over_ort_model_cycles']:.2f}x model "
                   f"cycles, {row['ours_over_ort_memory_aware_cycles']:.2f}x memory-aware. Where: ours spends its "
                   f"cycles in {where}; the whole model reaches {_pct(o['fma_peak_share'])} of the peak in ours, "
                   f"{_pct(r['fma_peak_share'])} in ORT's Run with no vector instruction at all "
                   f"({_ops(r['ops'])}). Why: ORT's scalar code issues {r['instructions'] / r['model_cycles']:.2f} "
                   f"instructions per model cycle on this core and needs {r['instructions'] / o['instructions']:.2f}x "
                   f"our instructions, while our costliest dispatches reach only "
                   f"{_span([d['fma_peak_share'] for d in o['costliest_dispatches']])} of the peak "
                   f"({_span([d['vector_share'] for d in o['costliest_dispatches']])} vector). These dispatches "
                   "are the next target.")
    out += ["", "### What ONNX Runtime ran", "",
            f"`libonnxruntime.so.1.21` is built for `{arch}`: "
            + ("the V extension is in it." if has_v else
               "no V extension, so not one RVV instruction is in the library: every kernel ORT runs on riscv64, "
               "MLAS's GEMM and convolution included, is scalar code (the measured vector share of each Run below).")
            + " Ops per model are the nodes of ORT's optimized graph (after its fusions: FusedConv, QuickGelu, "
            "FusedMatMul, ...), from a separate profiled run; every node ran on the CPU execution provider unless "
            "the column says otherwise.", "",
            "| model | ORT vector share | ours vector share | ORT / ours instructions | ORT bound | ORT unpriced fences "
            "| ORT's nodes (op x count) |", "|---|---:|---:|---:|---|---:|---|"]
    for row in data["models"]:
        o, r = row["ours"], row["onnxruntime"]
        providers = "" if r["providers"] == ["CPUExecutionProvider"] else f" ({', '.join(r['providers'])})"
        out.append(f"| {row['model']} | {_pct(r['vector_share'])} | {_pct(o['vector_share'])} | "
                   f"{r['instructions'] / o['instructions']:.1f}x | {r['bound']} | {r['unpriced_fences']} | "
                   f"{_ops(r['ops'])}{providers} |")
    out += ["", "Unpriced fences: `fence` / `fence.tso` executed in ORT's Run (its and its libraries' "
            "synchronisation), which llvm-mca 19 cannot schedule on this core, left out of the price and counted "
            "(peers/run.py).", ""]
    return out


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _per_fma(macs: int, vector_fma: int) -> str:
    return f"{macs / vector_fma:.1f}" if vector_fma else "- (none)"


def markdown(data: dict, models: dict, convs: dict) -> str:
    cols = PEERS + IREE + ALONE
    out = ["<!-- Generated by `tools/bazel run //peers:report` from committed data; do not edit. -->",
           "# Peers on the same RISC-V yardstick (issue 50)", "",
           "Per-op GEMM against OpenBLAS, BLIS, XNNPACK, Eigen and the autovectorizer (milestones 1 and 3, "
           "first), per-op convolution against XNNPACK and the autovectorizer "
           "([below](#per-op-convolution-issue-58)), then whole models against ONNX Runtime (milestone 2, "
           "[below](#whole-models-against-onnx-runtime-milestone-2)).", "",
           "## Per-op GEMM (milestone 1)", "",
           f"Each f32 GEMM below is one matmul dispatch of a zoo model. The peers run it in a small C harness "
           f"(peers/harness/) under the plugin qemu at VLEN {data['vlen']}; IREE's figures are the committed "
           f"tuning records of the same dispatches (tuning/records/: IREE's default tiles and the tuned build's "
           f"chosen ones), with the model's fused consumers; what the model ships, whatever its strategy, from "
           f"the shipped build's perf report (docs/data/shipped_bounds.json, memory-aware cycles only); and "
           f"IREE's build of the same GEMM alone per strategy (peers/iree_gemm.py: codegen, data tiling, mmt4d "
           f"microkernels; default configurations). All are priced by the same code "
           f"(perf/mca.py, perf/memory_model.py) on `{data['hardware']}`: model cycles on llvm-mca's "
           f"`{data['core']}`, whose FMA peak is {data['peak_macs_per_cycle']} f32 MACs per cycle. "
           f"A cell is M*N*K / (cycles x peak). Model cycles ignore {data['model_ignores']}; memory-aware "
           f"cycles add a simulation of the description's caches and ignore {data['memory_model_ignores']}.", "",
           "Peers: " + "; ".join(f"`{p}`" for p in data["packages"]) + ".", "",
           "### Share of the FMA peak, model cycles", "",
           "| op (model, split) | M x N x K | B layout | IREE also fuses | " + " | ".join(LABELS[c] for c in cols)
           + " | IREE ships | tuned / best peer |",
           "|---|---|---|---|" + "---:|" * len(cols) + "---|---:|"]
    for o in data["ops"]:
        t = o["tools"]
        out.append(f"| {o['what']} ({o['model']}, {o['split']}) | {o['m']}x{o['n']}x{o['k']} | "
                   f"{'[N][K]' if 'B[N][K]' in o['layout'] else '[K][N]'} | {o['iree_fused'] or '-'} | "
                   + " | ".join(_pct(t[c]["fma_peak_share"]) for c in cols)
                   + f" | {o['iree_ships']} | {o['iree_tuned_over_best_peer_model_cycles']:.2f}x ({o['best_peer']}) |")
    out += ["", "Tuned / best peer: the tuned build's dispatch's model cycles over the fastest peer's (below 1: "
            "IREE is faster). A model that ships another strategy runs the GEMM otherwise; its figure is in "
            "the memory-aware table below, the project's yardstick. IREE's zoo dispatches also run the fused consumers named in their column; the peers and "
            "the GEMM-alone builds do not. The data-tiled columns are the mmt4d dispatch alone, on operands "
            "already packed (in a model the weights are packed once, ahead of time; the activations are not); "
            "the libraries pack inside their sgemm call. XNNPACK runs the fully-connected operator for B[N][K] "
            "(a linear layer's constant weights, packed when the operator is created, outside the measured call, "
            "as TFLite does) and the batch-matmul operator with a dynamic B for B[K][N] (an im2col image, packed "
            "inside every run); peers/harness/xnnpack_gemm.c.", "",
            "### Data tiling with the packing a standalone call runs, model cycles", "",
            "| op | OpenBLAS sgemm | " + " | ".join(LABELS[c] for c in PACKED) + " |",
            "|---|---:|" + "---:|" * len(PACKED)]
    for o in data["ops"]:
        t = o["tools"]
        out.append(f"| {o['model']} {o['m']}x{o['n']}x{o['k']} | {_pct(t['openblas']['fma_peak_share'])} | "
                   + " | ".join(_pct(t[c]["fma_peak_share"]) for c in PACKED) + " |")
    out += ["", "The mmt4d dispatch plus the dispatches that pack A and B, every dispatch IREE compiles the "
            "standalone GEMM to (listed per op in docs/data/peers_ops.json).", "",
            "### Share of the FMA peak, memory-aware cycles", "",
            "| op | " + " | ".join(LABELS[c] for c in cols + (SHIPPED,)) + " | bound (peers) | shipped / best peer |",
            "|---|" + "---:|" * (len(cols) + 1) + "---|---:|"]
    for o in data["ops"]:
        t = o["tools"]
        out.append(f"| {o['model']} {o['m']}x{o['n']}x{o['k']} | "
                   + " | ".join(_pct(t[c]["memory_aware_fma_peak_share"]) for c in cols)
                   + f" | {_pct(t[SHIPPED]['memory_aware_fma_peak_share'])} ({o['iree_ships']})"
                   + " | " + ", ".join(f"{p}: {t[p]['bound']}" for p in PEERS)
                   + f" | {o['iree_shipped_over_best_peer_memory_aware_cycles']:.2f}x ({o['best_peer_memory_aware']}) |")
    packing = [o for o in data["ops"] if len(o["tools"][SHIPPED]["dispatches"]) > 1]
    out += ["", "IREE as shipped: the memory-aware cycles per call of the dispatches the shipped build runs the "
            "GEMM as, summed (peers/shapes.py names them; docs/data/shipped_bounds.json). Where the shipped "
            "strategy packs, that is the GEMM dispatch and the dispatch packing its activations every call "
            + "(" + "; ".join(f"{o['model']}: {', '.join(o['tools'][SHIPPED]['dispatches'])}" for o in packing)
            + "); the constant weights are packed once, at initialisation, and not counted, as XNNPACK's "
            "fully-connected operator packs them when it is created. Shipped / best peer: over the peer with the "
            "fewest memory-aware cycles (below 1: IREE is faster)."]
    out += ["", "IREE codegen, GEMM alone over the zoo dispatch with the same (default) tiles, model cycles: "
            + "; ".join(f"{o['model']} {o['iree_alone_over_zoo_default_model_cycles']:.3f}"
                        + (f" (zoo fuses {o['iree_fused']})" if o["iree_fused"] else "") for o in data["ops"]) + "."]
    out += ["", "### Where a peer is faster than IREE as shipped (memory-aware cycles)", ""]
    slower = [o for o in data["ops"] if o["iree_shipped_over_best_peer_memory_aware_cycles"] > 1]
    if not slower:
        out.append("Nowhere: on every op IREE as shipped takes no more memory-aware cycles than the fastest peer.")
    for o in slower:
        t = o["tools"]
        best = o["best_peer_memory_aware"]
        peer = t[best]["memory_aware_cycles"]
        beat = [LABELS[c] for c in ALONE if t[c]["memory_aware_cycles"] < peer]
        out.append(f"- {o['model']} {o['m']}x{o['n']}x{o['k']} (ships {o['iree_ships']}; B "
                   f"{'[N][K]' if 'B[N][K]' in o['layout'] else '[K][N]'}"
                   f"{', IREE also fuses ' + o['iree_fused'] if o['iree_fused'] else ''}): {LABELS[best]} "
                   f"takes {1 / o['iree_shipped_over_best_peer_memory_aware_cycles']:.0%} of the shipped dispatches' "
                   f"memory-aware cycles"
                   + (" (its weights packed when the operator was created, outside the measured call); "
                      if best == "xnnpack" and "B[N][K]" in o["layout"] else "; ")
                   + (f"IREE's GEMM alone beats it with: {', '.join(beat)}." if beat
                      else "none of IREE's GEMM-alone builds beats it."))
    out += ["", "### Geometric mean of the share (model cycles), by split", "",
            "| split | " + " | ".join(LABELS[c] for c in cols) + " |", "|---|" + "---:|" * len(cols)]
    for split, row in data["summary_geomean_fma_peak_share"].items():
        if row:
            out.append(f"| {split} | " + " | ".join(_pct(row[c]) for c in cols) + " |")
    out += ["", "### What each library ran", "",
            "| op | " + " | ".join(f"{LABELS[p]}: vector share" for p in PEERS) + " | OpenBLAS core | BLIS config | "
            "unpriced fences (OpenBLAS) | XNNPACK operator | XNNPACK MACs per vector FMA | Eigen's SIMD | "
            "Eigen vector FMAs | Eigen MACs per vector FP op |", "|---|" + "---:|" * len(PEERS) + "---|---|---:|---|---:|---|---:|---:|"]
    for o in data["ops"]:
        t = o["tools"]
        out.append(f"| {o['model']} {o['m']}x{o['n']}x{o['k']} | "
                   + " | ".join(_pct(t[p]["vector_share"]) for p in PEERS)
                   + f" | {t['openblas']['info'].get('corename', '?')} | {t['blis']['info'].get('arch', '?')} | "
                   f"{t['openblas']['unpriced_fences']} | {t['xnnpack']['info'].get('operator', '?').split(' ')[0]} | "
                   f"{_per_fma(o['macs'], t['xnnpack']['vector_fma'])} | {t['eigen']['info'].get('simd', '?')} | "
                   f"{t['eigen']['vector_fma']:,} | {_per_fma(o['macs'], t['eigen']['vector_fp'])} |")
    out += ["", "Vector share: vector and vset instructions over all executed in the measured call (0%: scalar "
            "code). Unpriced fences: `fence` instructions llvm-mca 19 cannot schedule on this core, left out of "
            "the price (peers/run.py). XNNPACK does not say which microkernel it picked; the trixie riscv64 build "
            "(built for rv64gcv, its ELF attributes say `v1p0`) enables its RVV kernels when AT_HWCAP has V, which "
            "qemu reports (`hwcap_v` in each run's info). M*N*K over the vector FMAs executed is the MACs one vector "
            "FMA did on average, and it names the kernel: XNNPACK's RVV f32 GEMM microkernels (`1x4v` and `7x4v` "
            "in libxnnpack-dev's libmicrokernels-prod.a) are 4 x VLEN/32 columns wide (LMUL 4), and the counts "
            "fit `7x4v` exactly: 16 x M / (7 x ceil(M/7)) at VLEN 128 where N is a multiple of 16 (mlp, M = 4: "
            "9.1, the tile's 7 rows computed for 4), less again where N is ragged. Eigen 3.4 "
            "has no RISC-V vector packet math (`Eigen::SimdInstructionSetsInUse()` says None): its packets are "
            "scalars, and the vector code it ran is clang-19's: the SLP vectorizer turned the GEBP micro-kernel's "
            "4 scalar columns into 4-lane vectors, a `vfmul.vv` and a `vfadd.vv` per 4 MACs (2 MACs per vector "
            "FP op, no vector FMA: Eigen's scalar multiply-add is a separate multiply and add, which clang does "
            "not fuse without -ffp-contract=fast). Those vectors are 4 lanes whatever the VLEN, so Eigen's share "
            "of the peak falls by the VLEN ratio on a wider core.", ""]
    for name, core in data["other_cores"].items():
        cols2 = PEERS + ALONE + PACKED
        out += [f"### On `{name}` ({core['core']}, VLEN {core['vlen']}, {core['peak_macs_per_cycle']} f32 MACs per "
                "cycle): the peers and IREE's GEMM alone, model cycles", "",
                "No zoo dispatch of this description is committed per dispatch; IREE's columns are the GEMM "
                f"built alone for VLEN {core['vlen']} (peers/iree_gemm.py). The autovectorized harness is the "
                "same binary as above (vector-length agnostic code).", "",
                "| op | " + " | ".join(LABELS[c] for c in cols2) + " | best IREE / best peer | OpenBLAS core |",
                "|---|" + "---:|" * len(cols2) + "---:|---|"]
        for o in core["ops"]:
            t = o["tools"]
            out.append(f"| {o['model']} {o['m']}x{o['n']}x{o['k']} ({o['split']}) | "
                       + " | ".join(_pct(t[c]["fma_peak_share"]) for c in cols2)
                       + f" | {o['best_iree_over_best_peer_model_cycles']:.2f}x ({LABELS[o['best_iree']]} / "
                       f"{o['best_peer']}) | {t['openblas']['info'].get('corename', '?')} |")
        out.append("")
    if data["notes"]:
        out += ["### Notes", ""] + [f"- {n}" for n in data["notes"]] + [""]
    out += convs_markdown(convs)
    out += models_markdown(models)
    return "\n".join(out)


def build_convs(root: Path) -> dict:
    """Per convolution of peers/conv_shapes.py: each peer's model and memory-aware figures on
    riscv_rvv, and IREE's as shipped (its dispatches' memory-aware cycles per call, summed)."""
    measured = _load(root / CONV_MEASURED)
    bounds = _load(root / SHIPPED_BOUNDS)
    hw = measured["hardware"].get(HARDWARE)
    if hw is None:
        raise ReportError(f"{root / CONV_MEASURED}: no runs on {HARDWARE}")
    peak = hw["peak_macs_per_cycle"]
    runs = {(r["shape"], r["tool"]): r for r in measured["results"] if r["hardware"] == HARDWARE}
    ops = []
    for s in CONV_SHAPES:
        pipeline, shipped = _shipped_dispatches(root, bounds, s.model, s.dispatches, hw["core"],
                                                f"peers/conv_shapes.py, for {s.key},")
        iree_cycles = sum(d["memory_aware_cycles"] for d in shipped)
        tools = {}
        for tool in CONV_PEERS:
            r = runs.get((s.key, tool))
            if r is None:
                raise ReportError(f"{root / CONV_MEASURED}: no {tool} run of {s.key} on {HARDWARE}")
            if r["macs"] != s.macs:
                raise ReportError(f"{root / CONV_MEASURED}: {tool} on {s.key} has {r['macs']} MACs, "
                                  f"peers/conv_shapes.py {s.macs}")
            tools[tool] = {"model_cycles": r["model_cycles"], "memory_aware_cycles": r["memory"]["cycles"],
                           "fma_peak_share": round(s.macs / (r["model_cycles"] * peak), 6),
                           "memory_aware_fma_peak_share": round(s.macs / (r["memory"]["cycles"] * peak), 6),
                           "vector_share": r["vector_share"], "info": r["info"]}
        tools["iree-shipped"] = {"memory_aware_cycles": iree_cycles,
                                 "memory_aware_fma_peak_share": round(s.macs / (iree_cycles * peak), 6),
                                 "vector_share": round(sum(d["vector_share"] for d in shipped) / len(shipped), 4)}
        ops.append({"key": s.key, "model": s.model, "split": s.split, "what": s.what, "dims": s.dims,
                    "macs": s.macs, "depthwise": s.depthwise, "iree_ships": pipeline["ships"],
                    "iree_dispatches": list(s.dispatches), "tools": tools,
                    "shipped_over_xnnpack": round(iree_cycles / tools["xnnpack"]["memory_aware_cycles"], 4)})
    return {"format": 1, "produced_by": "tools/bazel run //peers:report",
            "hardware": HARDWARE, "core": hw["core"], "vlen": hw["vlen"], "peak_macs_per_cycle": peak,
            "model_ignores": measured["model_ignores"], "memory_model_ignores": measured["memory_model_ignores"],
            "ops": ops}


def convs_markdown(data: dict) -> list[str]:
    out = ["## Per-op convolution (issue 58)", "",
           f"Each f32 convolution below is one convolution of a zoo model. The peers run it NHWC in a C harness "
           f"(peers/harness/conv_main.c) under the plugin qemu at VLEN {data['vlen']}: the direct loops a user "
           f"writes, through clang-19's autovectorizer, and XNNPACK's convolution operator (its filter packed when "
           f"the operator is created, outside the measured call). IREE's figure is what the model ships: the "
           f"memory-aware cycles per call of the dispatches it runs the convolution as, in that build's perf "
           f"report (docs/data/shipped_bounds.json), summed (an im2col copy and its GEMM, or one convolution "
           f"dispatch; the transposes a channels-last rewrite puts around it are not counted). All are priced "
           f"by the same code on `{data['hardware']}` (`{data['core']}`, {data['peak_macs_per_cycle']} f32 MACs "
           f"per cycle); a cell is MACs / (cycles x peak).", "",
           "| convolution (model, split) | shape | IREE ships | " + " | ".join(
               f"{CONV_LABELS[t]}: model / memory-aware" for t in CONV_PEERS)
           + " | IREE as shipped: memory-aware | shipped / XNNPACK (memory-aware) |",
           "|---|---|---|" + "---:|" * (len(CONV_PEERS) + 2)]
    for o in data["ops"]:
        t = o["tools"]
        out.append(f"| {o['what']} ({o['model']}, {o['split']}) | {o['dims']} | {o['iree_ships']} | "
                   + " | ".join(f"{_pct(t[c]['fma_peak_share'])} / {_pct(t[c]['memory_aware_fma_peak_share'])}"
                                for c in CONV_PEERS)
                   + f" | {_pct(t['iree-shipped']['memory_aware_fma_peak_share'])} | {o['shipped_over_xnnpack']:.2f}x |")
    scalar = [o for o in data["ops"] if o["depthwise"] and o["tools"]["xnnpack"]["vector_share"] < 0.01]
    out += ["", "Shipped / XNNPACK below 1: IREE's shipped dispatches take fewer memory-aware cycles. "
            "Vector share (vector and vset instructions over all executed): "
            + "; ".join(f"{o['model']} {o['dims']}: autovec {_pct(o['tools']['autovec']['vector_share'])}, "
                        f"XNNPACK {_pct(o['tools']['xnnpack']['vector_share'])}, IREE "
                        f"{_pct(o['tools']['iree-shipped']['vector_share'])}" for o in data["ops"]) + "."]
    if scalar:
        out += ["", f"XNNPACK ran {len(scalar)} of its {sum(o['depthwise'] for o in data['ops'])} depthwise "
                "convolutions here in scalar code (vector share below 1%), its regular convolutions and GEMMs "
                "in RVV code: its depthwise figures are of scalar microkernels."]
    return out + [""]


def documents(root: Path) -> dict[Path, str]:
    """The per-op and per-model tables and docs/peers.md (workspace-relative path -> text) from
    the committed data under `root`; also rendered by `bazel run //tools:report`."""
    data = build(root)
    models = build_models(root)
    convs = build_convs(root)
    return {OUT_JSON: json.dumps(data, indent=1) + "\n", OUT_MODELS_JSON: json.dumps(models, indent=1) + "\n",
            OUT_CONVS_JSON: json.dumps(convs, indent=1) + "\n", OUT_MD: markdown(data, models, convs)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peers.report", description=__doc__.split("\n")[0])
    p.add_argument("--root", type=Path, default=None,
                   help="workspace root (default: $BUILD_WORKSPACE_DIRECTORY under bazel run, else .)")
    args = p.parse_args(argv)
    root = args.root or Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."))
    with OneLineErrors("peers.report", root / MEASURED, (ReportError,)) as cli:
        docs = documents(root)
        write_together({root / path: text for path, text in docs.items()})
    if cli.failed:
        return cli.exit_code
    print(f"peers.report: {', '.join(str(p) for p in docs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
