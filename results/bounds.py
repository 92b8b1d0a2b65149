"""What ships against the hardware's bound, per dispatch, op kind and model (issue 58).

    bazel build //models:zoo_shipped_perf && \
        bazel run //tools:report -- --collect bounds   # bazel-bin -> docs/data/shipped_bounds.json
    bazel run //tools:report                           # docs/results_bounds.md (and the rest)
    python -m results.bounds check-floor DATA MANIFEST...  # //results:vector_floor_test

The bound of a dispatch (perf.memory_model.bound, in every perf report) is the fewest cycles the
described hardware allows: its MACs at the FMA peak for its element types, or its compulsory bytes
(inputs read once, outputs written once) over the slowest level's bandwidth, whichever is more.
"% of bound" is bound / memory-aware cycles: 100% is as fast as the description allows. The data
are the perf reports of exactly the build each riscv pipeline ships (its manifest says which), on
the pipeline's own core model; calibration and held-out models are reported apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from common.errors import OneLineErrors
from common.files import read_json
from common.perf_schema import PerfIndexError, PerfReport, load_perf_index
from runtime.manifest import shipped_build

OUT = Path("docs/results_bounds.md")
DATA = Path("docs/data/shipped_bounds.json")
SPLITS = ("calibration", "held_out")
# Issue 58's targets: no convolution dispatch below this vector-instruction share; every op kind
# at or above KIND_TARGET of its bound, matmuls at MATMUL_TARGET.
VECTOR_FLOOR = 0.20
KIND_TARGET = 0.30
MATMUL_TARGET = 0.80


# Convolution dispatches of what ships that stay below VECTOR_FLOOR, each with what was tried and
# what stops it (issue 58: "each miss names its dispatch, the figure, what was tried"). The floor
# check (check_floor, //results:vector_floor_test) fails on any other dispatch below the floor,
# and on an entry here that is no longer below it.
# se_net's three depthwise convs were here (6-13% vector: one strategy per model shipped its NCHW
# GEMMs tuned and its depthwise convs scalar); dwchannelslast, a lowering per op kind, ships them
# at 51-56% (docs/design.md section 8).
FLOOR_MISSES: dict[tuple[str, str], str] = {}


class BoundsError(RuntimeError):
    pass


def _is_conv(kind: str) -> bool:
    return "conv" in kind


def collect(bin_models: Path, pipelines: list[str]) -> dict:
    """Per riscv pipeline: what ships and, per dispatch of that build, its kind, calls, memory-aware
    cycles, bound and vector share, from the build's own perf report in bazel-bin."""
    out = {}
    for pipeline in sorted(pipelines):
        manifest_path = bin_models / f"{pipeline}_riscv.manifest.json"
        index = bin_models / f"{pipeline}_riscv_shipped_perf_index.json"
        if not manifest_path.is_file() or not index.is_file():
            missing = manifest_path if not manifest_path.is_file() else index
            raise BoundsError(f"{missing}: not built (tools/bazel build //models:zoo_shipped_perf)")
        ships = shipped_build(json.loads(manifest_path.read_text()))
        try:
            perf_path = load_perf_index(index, bin_models.parent).get(ships)
        except PerfIndexError as err:
            raise BoundsError(str(err)) from None
        if perf_path is None or not perf_path.is_file():
            raise BoundsError(f"{index}: no measurement of the shipped build '{ships}'")
        try:
            report = PerfReport.model_validate_json(perf_path.read_text())
        except ValueError as err:
            raise BoundsError(f"{perf_path}: not a perf report ({str(err).splitlines()[0]})") from None
        if not report.runs:
            raise BoundsError(f"{perf_path}: the shipped build '{ships}' was not measured ({report.failed})")
        run = report.runs[0]  # the pipeline's own accelerator comes first
        if run.inference_memory_aware_cycles is None:
            raise BoundsError(f"{perf_path}: no memory-aware cycles on {run.hardware} (no core model)")
        out[pipeline] = {
            "ships": ships, "hardware": run.hardware, "core": run.core,
            # What the figures are of: the floor check compares them with what the manifest ships.
            "executables_sha256": dict(report.executables_sha256),
            "memory_aware_cycles": run.inference_memory_aware_cycles,
            "bound_cycles": run.inference_bound_cycles,
            "energy_pj": round(run.inference_energy_pj or 0.0),
            "dispatches": [{
                "name": d.name, "kind": d.kind, "calls": d.calls,
                "memory_aware_cycles": d.memory.cycles if d.memory else None,
                "bound_cycles": d.bound_cycles, "bound_by": d.bound_by,
                "vector_share": round(d.vector_share, 4),
            } for d in run.dispatches if d.calls],
        }
    return {"what": "the shipped riscv build of every zoo pipeline: per dispatch, memory-aware cycles "
                    "(perf.measure) against the hardware bound (perf.memory_model.bound)",
            "collected_by": "bazel run //tools:report -- --collect bounds", "pipelines": out}


def quantized_pairs(bin_models: Path, infos: list[dict]) -> dict:
    """Per quantized pipeline (its info names a `float_reference`): how far its framework outputs
    (the golden, computed by the quantized model itself) are from its float twin's on the same
    inputs, per output: max abs error and the twin's max |output|."""
    by_name = {i["name"]: i for i in infos}
    out = {}
    for info in sorted(infos, key=lambda i: i["name"]):
        ref = info.get("float_reference")
        if not ref:
            continue
        if ref not in by_name:
            raise BoundsError(f"{info['name']}: float_reference '{ref}' is not a pipeline among --infos")
        goldens = [bin_models / f"{i['model_name']}.golden.npz" for i in (info, by_name[ref])]
        for g in goldens:
            if not g.is_file():
                raise BoundsError(f"{g}: not built (tools/bazel build //models:zoo_shipped_perf)")
        quant, flt = (np.load(g) for g in goldens)
        for key in sorted(k for k in flt.files if k.startswith("input_")):
            if key not in quant.files or not np.array_equal(quant[key], flt[key]):
                raise BoundsError(f"{goldens[0]}: {key} is not {ref}'s: the two are compared on the same inputs")
        outputs = []
        for key in sorted(k for k in flt.files if k.startswith("output_")):
            if key not in quant.files or quant[key].shape != flt[key].shape:
                raise BoundsError(f"{goldens[0]}: {key} does not match {ref}'s")
            diff = np.abs(quant[key].astype(np.float64) - flt[key].astype(np.float64))
            outputs.append({"name": key, "max_abs_error": float(diff.max(initial=0.0)),
                            "scale": float(np.abs(flt[key]).max(initial=0.0))})
        out[info["name"]] = {"float_reference": ref, "outputs": outputs}
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _share(bound: float, cycles: float) -> float | None:
    return bound / cycles if cycles else None


def by_kind(data: dict, splits: dict[str, str]) -> dict[str, dict[str, dict]]:
    """split -> op kind -> dispatches, memory-aware cycles and bound cycles (each x calls)."""
    out: dict[str, dict[str, dict]] = {s: defaultdict(lambda: {"dispatches": 0, "cycles": 0, "bound": 0})
                                       for s in SPLITS}
    for pipeline, p in data["pipelines"].items():
        for d in p["dispatches"]:
            if d["memory_aware_cycles"] is None or d["bound_cycles"] is None:
                continue
            row = out[splits[pipeline]][d["kind"]]
            row["dispatches"] += 1
            row["cycles"] += d["memory_aware_cycles"] * d["calls"]
            row["bound"] += d["bound_cycles"] * d["calls"]
    return {s: dict(kinds) for s, kinds in out.items()}


def below_floor(data: dict) -> list[dict]:
    """Convolution dispatches of what ships below VECTOR_FLOOR vector instructions, costliest first."""
    rows = []
    for pipeline, p in data["pipelines"].items():
        for d in p["dispatches"]:
            if _is_conv(d["kind"]) and d["vector_share"] < VECTOR_FLOOR:
                share = (d["memory_aware_cycles"] or 0) * d["calls"] / p["memory_aware_cycles"]
                rows.append({"pipeline": pipeline, "ships": p["ships"], **d, "model_share": share})
    return sorted(rows, key=lambda r: (-r["model_share"], r["pipeline"], r["name"]))


def check_floor(data: dict, manifests: dict[str, dict],
                misses: dict[tuple[str, str], str] | None = None) -> list[str]:
    """What breaks issue 58's vector floor in the committed data, one line each: a convolution
    dispatch below VECTOR_FLOOR that FLOOR_MISSES does not explain, an entry of FLOOR_MISSES that
    is no longer below it, or figures that are not of what ships (`manifests`: each riscv
    pipeline's manifest; its executables must be the ones measured)."""
    misses = FLOOR_MISSES if misses is None else misses
    problems = []
    pipelines = data["pipelines"]
    for pipeline in sorted(set(manifests) | set(pipelines)):
        if pipeline not in pipelines:
            problems.append(f"{pipeline}: ships, but {DATA} has no figures of it ({_REGENERATE})")
        elif pipeline not in manifests:
            problems.append(f"{pipeline}: in {DATA}, but no riscv manifest of it was given")
        elif manifests[pipeline].get("executables_sha256") != pipelines[pipeline].get("executables_sha256"):
            problems.append(f"{pipeline}: {DATA} measured other executables than the manifest ships "
                            f"({_REGENERATE})")
    below = {(r["pipeline"], r["name"]): r for r in below_floor(data)}
    for key, r in below.items():
        if key not in misses:
            problems.append(f"{key[0]} {key[1]} ({r['kind']}): {r['vector_share']:.1%} vector instructions, "
                            f"below the {VECTOR_FLOOR:.0%} floor, and FLOOR_MISSES does not say why")
    for key in sorted(set(misses) - set(below)):
        problems.append(f"{key[0]} {key[1]}: listed in FLOOR_MISSES but not below the floor in {DATA} "
                        "(remove the entry)")
    return problems


_REGENERATE = "tools/bazel build //models:zoo_shipped_perf && tools/bazel run //tools:report -- --collect bounds"


def render(data: dict, splits: dict[str, str]) -> str:
    unknown = sorted(set(data["pipelines"]) - set(splits))
    if unknown:
        raise BoundsError(f"{DATA}: pipeline '{unknown[0]}' has no pipeline info among --infos")
    lines = [
        "# What ships against the hardware's bound (issue 58)",
        "",
        "Generated by `bazel run //tools:report` from `docs/data/shipped_bounds.json` (`bazel build",
        "//models:zoo_shipped_perf && bazel run //tools:report -- --collect bounds`); do not edit. Each",
        "figure is of exactly the build each riscv pipeline ships, on its own core model (P670 for the",
        "zoo), one call of the model. The **bound** is the fewest cycles the hardware description",
        "allows: MACs at the FMA peak for the element type, or compulsory bytes (inputs read once,",
        "outputs written once) over the slowest level's bandwidth. **% of bound** = bound / memory-aware",
        "cycles. Memory-aware cycles ignore instruction fetch, TLBs and prefetchers, start every dispatch",
        "with empty caches and write its dirty lines back (docs/design.md section 9).",
        "",
        "## Per model",
        "",
        "| model | split | ships | memory-aware cycles | bound | % of bound | energy (uJ) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for pipeline, p in sorted(data["pipelines"].items(), key=lambda kv: (splits[kv[0]], kv[0])):
        lines.append(f"| {pipeline} | {splits[pipeline]} | {p['ships']} | {p['memory_aware_cycles']:,} | "
                     f"{p['bound_cycles'] or 0:,} | {_pct(_share(p['bound_cycles'] or 0, p['memory_aware_cycles']))} | "
                     f"{p['energy_pj'] / 1e6:,.2f} |")
    kinds = by_kind(data, splits)
    lines += ["", "## Per op kind", "",
              f"Targets: every op kind at >= {KIND_TARGET:.0%} of its bound, matmuls at >= {MATMUL_TARGET:.0%}.", ""]
    for split in SPLITS:
        lines += [f"### {split}", "", "| op kind | dispatches | memory-aware cycles | bound | % of bound | target met |",
                  "|---|---:|---:|---:|---:|---|"]
        for kind, k in sorted(kinds[split].items(), key=lambda kv: -kv[1]["cycles"]):
            share = _share(k["bound"], k["cycles"])
            target = MATMUL_TARGET if kind == "matmul" else KIND_TARGET
            lines.append(f"| {kind} | {k['dispatches']} | {k['cycles']:,} | {k['bound']:,} | {_pct(share)} | "
                         f"{'yes' if share is not None and share >= target else 'no'} |")
        lines.append("")
    pairs = data.get("quantized", {})
    if pairs:
        lines += ["## Quantized models beside their float twin", "",
                  "The same network, weights and inputs; memory-aware cycles and energy of what each ships, and",
                  "the quantized model's output error against the float model's (framework outputs, max abs",
                  "error over max |float output|). Below 1.00x the quantized build is cheaper.", "",
                  "| quantized | float | ships | memory-aware cycles | vs float | energy (uJ) | vs float | "
                  "output error |", "|---|---|---|---:|---:|---:|---:|---:|"]
        for name, q in sorted(pairs.items()):
            mine, theirs = data["pipelines"][name], data["pipelines"][q["float_reference"]]
            error = max((o["max_abs_error"] / o["scale"] if o["scale"] else o["max_abs_error"] for o in q["outputs"]),
                        default=0.0)
            lines.append(f"| {name} | {q['float_reference']} | {mine['ships']} / {theirs['ships']} | "
                         f"{mine['memory_aware_cycles']:,} / {theirs['memory_aware_cycles']:,} | "
                         f"{mine['memory_aware_cycles'] / theirs['memory_aware_cycles']:.2f}x | "
                         f"{mine['energy_pj'] / 1e6:,.2f} / {theirs['energy_pj'] / 1e6:,.2f} | "
                         f"{mine['energy_pj'] / theirs['energy_pj']:.2f}x | {error:.2%} |")
        lines.append("")
    floor = below_floor(data)
    lines += ["## Convolution dispatches below the vector floor", "",
              f"Target: no convolution dispatch below {VECTOR_FLOOR:.0%} vector instructions "
              f"(vector instructions and vsetvli over all executed). {len(floor)} below it:", ""]
    if floor:
        lines += ["| model | ships | dispatch | kind | vector share | % of bound | share of the model's cycles | "
                  "what was tried, what stops it |",
                  "|---|---|---|---|---:|---:|---:|---|"]
        for r in floor:
            why = FLOOR_MISSES.get((r["pipeline"], r["name"]), "not explained: //results:vector_floor_test fails")
            lines.append(f"| {r['pipeline']} | {r['ships']} | {r['name']} | {r['kind']} | {r['vector_share']:.1%} | "
                         f"{_pct(_share(r['bound_cycles'] or 0, r['memory_aware_cycles'] or 0))} | "
                         f"{r['model_share']:.1%} | {why} |")
        lines.append("")
    return "\n".join(lines)


def documents(root: Path, splits: dict[str, str]) -> dict[Path, str]:
    """docs/results_bounds.md from docs/data/shipped_bounds.json (nothing until it is collected)."""
    if not (root / DATA).is_file():
        return {}
    return {OUT: render(json.loads((root / DATA).read_text()), splits)}


def collected(bin_root: Path, splits: dict[str, str], infos: list[dict]) -> dict[Path, str]:
    """docs/data/shipped_bounds.json from the shipped builds' perf reports under `bin_root` (bazel-bin),
    with the quantized pipelines beside their float twins (`infos`: the pipeline infos' contents)."""
    data = collect(bin_root / "models", list(splits))
    data["quantized"] = quantized_pairs(bin_root / "models", infos)
    return {DATA: json.dumps(data, indent=1, sort_keys=True) + "\n"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m results.bounds",
                                description="Checks the committed shipped bounds against issue 58's vector floor.")
    sub = p.add_subparsers(dest="command", required=True)
    # argparse %-formats help: "20% vector" was a format character and `--help` a traceback.
    floor = sub.add_parser("check-floor", help="every convolution dispatch of what ships at or above "
                                               f"{VECTOR_FLOOR:.0%}% vector instructions, or explained")
    floor.add_argument("data", type=Path, help="docs/data/shipped_bounds.json")
    floor.add_argument("manifests", type=Path, nargs="+",
                       help="the riscv pipelines' manifests (<pipeline>_riscv.manifest.json; other files ignored)")
    args = p.parse_args(argv)
    manifests = {}
    # A missing, empty or malformed input is one line naming it, not a traceback.
    with OneLineErrors("check-floor", args.data, (BoundsError,)) as cli:
        for path in args.manifests:
            if path.name.endswith("_riscv.manifest.json"):
                manifests[path.name[:-len("_riscv.manifest.json")]] = read_json(path, "manifest")
        if not manifests:
            print("check-floor: no <pipeline>_riscv.manifest.json among the files given", file=sys.stderr)
            return 2
        data = read_json(args.data, "shipped bounds file")
        if not isinstance(data, dict) or not isinstance(data.get("pipelines"), dict):
            raise BoundsError(f"{args.data}: not a shipped bounds file (docs/data/shipped_bounds.json): "
                              "no mapping of pipelines")
        problems = check_floor(data, manifests)
    if cli.failed:
        return cli.exit_code
    for line in problems:
        print(line)
    print(f"{len(manifests)} pipelines, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
