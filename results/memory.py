"""The memory-aware measurement's results: committed data in, docs/results_memory.md out.

    bazel build //models:zoo_measured_choices && \
        bazel run //tools:report -- --collect memory   # bazel-bin -> docs/data/measured_choices.json
    bazel run //tools:report                           # docs/data/ -> docs/results_memory.md (and the rest)

`collect` reads what `bazel build //models:zoo_measured_choices` built into the workspace's
bazel-bin (every pipeline's riscv measured choice and its predicted analysis) and keeps, per dispatch with a choice, each
measured candidate's figures and ZigZag's prediction for its own mapping. `render` writes, from that committed file alone:
1. how often each candidate source wins, by the analysis' prediction, by model cycles (every
   load an L1 hit) and by memory-aware cycles (the simulated caches), calibration and held-out
   models apart;
2. ZigZag judged by the simulation: for every matmul and convolution dispatch whose ZigZag
   mapping was compiled and run, ZigZag's predicted bytes per memory level against the
   simulated bytes of the compiled code, and its predicted latency against the memory-aware
   cycles;
3. per model, the measured choice over IREE's default in memory-aware cycles and energy;
and, from `docs/data/zigzag_ranking.json` (bench.zigzag_ranking) when present, how well ZigZag's
cost model applied to each measured candidate's tiles ranks them; from
`docs/data/zigzag_traffic.json` (bench.zigzag_traffic), ZigZag's bytes with the write-allocate
fills of the description's caches; from `docs/data/<sweep>.sweep.json`, the memory sweeps.
"""

from __future__ import annotations

import json

from common.files import read_json
from collections import Counter, defaultdict
from pathlib import Path

from common.op_kinds import MAC_KINDS
from common import stats
from choice.records import load_record

DATA = Path("docs/data/measured_choices.json")
# bench.zigzag_ranking's output over the same analyses (ZigZag's cost model applied to every
# measured candidate's tiles), if committed.
RANKING = Path("docs/data/zigzag_ranking.json")
OUT = Path("docs/results_memory.md")
# bench.zigzag_traffic's output (ZigZag's bytes per level with and without write-allocate fills,
# per operand from ZigZag itself), if committed.
TRAFFIC = Path("docs/data/zigzag_traffic.json")
# Memory sweeps (hardware_sweep over cache sizes and DRAM bandwidth, perf.sweep's JSON), one
# file per sweep target: models/<name>.sweep.json -> docs/data/<name>.sweep.json.
SWEEPS = ("transformer_memory_sweep", "resnet_memory_sweep", "mobilenet_v2_memory_sweep")
DEFAULT = "iree-default"
ZIGZAG = "zigzag"
CONTRACTIONS = MAC_KINDS  # the op kinds with multiply-accumulates (common/op_kinds.py)
LEVELS = ("l1d", "l2", "dram")  # the shipped accelerators' cache levels and DRAM, by name
SPLITS = ("calibration", "held_out")


def source(name: str, generator: str) -> str:
    """The candidate source a win is counted for, by the candidate's name (analysis/candidates.py:
    `<base>+<change>` is a base candidate's cache tiles with another register tile or alignment)."""
    base, _, change = name.partition("+")
    if base == DEFAULT:
        return "IREE default" if not change else "default + register/alignment"
    if base == ZIGZAG:
        return "ZigZag" if not change else "ZigZag + register/alignment"
    if base == "analytical":
        return "analytical"
    return "search" if generator == "search" else generator


SOURCES = ("IREE default", "default + register/alignment", "ZigZag", "ZigZag + register/alignment",
           "search", "analytical", "tie (equal best figures)")


def collect(root: Path) -> dict:
    from common.analysis_schema import Analysis
    from common.pipeline_info import zoo_infos

    models = {}
    for info in sorted(zoo_infos([root]), key=lambda i: i.name):
        measured_path = _find(root, f"models/{info.name}_riscv_analysis.analysis.json")
        predicted_path = _find(root, f"models/{info.name}_riscv_predicted_analysis.analysis.json")
        measured = Analysis.model_validate_json(measured_path.read_text())
        predicted = {d.name: d for d in Analysis.model_validate_json(predicted_path.read_text()).dispatches}
        dispatches = []
        for d in measured.dispatches:
            cands = [c for c in d.candidates if c.measured_memory_aware_cycles is not None]
            if len(cands) < 2:
                continue
            pred = predicted[d.name]
            zz = d.zigzag or {}
            dispatches.append({
                "name": d.name, "kind": d.kind, "chosen": d.chosen,
                "predicted_choice": pred.chosen,
                "zigzag": {"latency_cycles": zz.get("latency_cycles"), "energy_pj": zz.get("energy_pj"),
                           "traffic_bytes": zz.get("traffic_bytes")} if zz else None,
                "candidates": [{"name": c.name, "generator": c.generator,
                                "model_cycles": c.measured_model_cycles,
                                "memory_aware_cycles": c.measured_memory_aware_cycles,
                                "energy_pj": c.measured_energy_pj,
                                "traffic_bytes": c.measured_traffic_bytes,
                                "placement_memory_aware_cycles": c.measured_placement_memory_aware_cycles}
                               for c in cands]})
        models[info.name] = {"split": info.split, "hardware": measured.hardware,
                             "core": measured.measured_choice.core, "dispatches": dispatches}
    return {"what": "per riscv measured choice of the zoo, the candidates measured (choice/tune.py)",
            "produced_by": "bazel run //tools:report -- --collect memory", "models": models}


def collect_sweeps(root: Path) -> dict[str, dict]:
    """The memory sweeps built under `root` (`bazel build //models:<sweep>`), by name."""
    out = {}
    for name in SWEEPS:
        for base in (root, root / "bazel-bin"):
            path = base / f"models/{name}.sweep.json"
            if path.is_file():
                out[name] = read_json(path, "report data", kind=dict)
                break
    return out


def sweep_lines(sweeps: dict[str, dict]) -> list[str]:
    """Section 4: each committed memory sweep, as perf.sweep reports it."""
    from perf import sweep

    lines = ["", "## 4. Sweeps that see memory", "",
             "Each variant of the accelerator (L1, L2 and DRAM bandwidth changed, VLEN 128) gets its own "
             "analysis and measured tile choice (`hardware_sweep`, models/defs.bzl); committed from "
             "`models/<sweep>.sweep.json`.", ""]
    for name, result in sorted(sweeps.items()):
        body = sweep.markdown(result).replace("# Hardware sweep:", f"### {name}:", 1)
        lines += [("##" + line) if line.startswith("## ") else line for line in body.splitlines()]
        lines += ["", *resource_lines(result["variants"]), ""]
    return lines


# A memory sweep's axes: the variant field, its unit, how the table names it.
RESOURCES = (("l1_kib", "KiB", "L1"), ("l2_kib", "KiB", "L2"), ("dram_bytes_per_cycle", "B/cycle", "DRAM bandwidth"))


def resource_lines(variants: list[dict]) -> list[str]:
    """What each resource buys: for every pair of variants that differ in that resource alone
    (each with its own tile choice), the larger one's memory-aware cycles and energy over the
    smaller one's; geometric mean and range over the pairs."""
    out = ["#### What each resource buys", "",
           "Variants that differ in one resource alone, each with its own measured tile choice: the "
           "larger resource's memory-aware cycles and energy over the smaller one's (geometric mean "
           "over the pairs, range in brackets; below 1 is a gain).", "",
           "| resource | from | to | pairs | memory-aware cycles | energy |", "|---|---:|---:|---:|---:|---:|"]
    for field, unit, label in RESOURCES:
        values = sorted({v[field] for v in variants})
        others = [f for f, _, _ in RESOURCES if f != field]
        for small, large in zip(values, values[1:]):
            pairs = [(a, b) for a in variants for b in variants
                     if a[field] == small and b[field] == large and all(a[o] == b[o] for o in others)
                     and a["memory_aware_cycles"] and b["memory_aware_cycles"]]
            if not pairs:
                continue
            cycles = [b["memory_aware_cycles"] / a["memory_aware_cycles"] for a, b in pairs]
            energy = [b["energy_pj"] / a["energy_pj"] for a, b in pairs]
            cell = lambda r: f"{stats.geomean(r):.3f} [{min(r):.3f}, {max(r):.3f}]"
            out.append(f"| {label} | {small:g} {unit} | {large:g} {unit} | {len(pairs)} | {cell(cycles)} | {cell(energy)} |")
    return out


def _find(root: Path, rel: str) -> Path:
    for base in (root, root / "bazel-bin"):
        if (base / rel).is_file():
            return base / rel
    raise FileNotFoundError(f"{rel} not found under {root} (build //models:zoo_measured_choices)")


def _generator(d: dict, name: str) -> str:
    if name == DEFAULT:
        return "iree-default"
    for c in d["candidates"]:
        if c["name"] == name:
            return c["generator"]
    # The predicted choice need not have been measured: its generator is in its name.
    return name.split("+")[0] if name.split("+")[0] in ("zigzag", "search", "analytical") else "iree-default"


TIE = "tie (equal best figures)"


def _winner(candidates: list[dict], figure: str) -> str | None:
    """The one candidate with the fewest `figure`, or None when several share it (a tie)."""
    best = min(c[figure] for c in candidates)
    names = [c["name"] for c in candidates if c[figure] == best]
    return names[0] if len(names) == 1 else None


def wins(data: dict) -> dict[str, dict[str, Counter]]:
    """split -> rule -> source -> dispatches won; a tie counts as a tie, for no source."""
    out: dict[str, dict[str, Counter]] = {s: defaultdict(Counter) for s in SPLITS}
    for m in data["models"].values():
        for d in m["dispatches"]:
            for rule, name in (("predicted", d["predicted_choice"]),
                               ("model cycles", _winner(d["candidates"], "model_cycles")),
                               ("memory-aware cycles", _winner(d["candidates"], "memory_aware_cycles"))):
                out[m["split"]][rule][TIE if name is None else source(name, _generator(d, name))] += 1
    return out


def switches(data: dict) -> dict[str, Counter]:
    """split -> how each dispatch's measured choice ended: switched beyond the placement spread,
    kept within it (a candidate beat IREE's default at placement 0 only), or default best."""
    out: dict[str, Counter] = {s: Counter() for s in SPLITS}
    for m in data["models"].values():
        for d in m["dispatches"]:
            default = next((c for c in d["candidates"] if c["name"] == DEFAULT), None)
            best = min(c["memory_aware_cycles"] for c in d["candidates"])
            if d["chosen"] not in (None, DEFAULT):
                out[m["split"]]["switched beyond the placement spread"] += 1
            elif default is not None and best < default["memory_aware_cycles"]:
                out[m["split"]]["kept: the win is within the placement spread"] += 1
            else:
                out[m["split"]]["kept: IREE's default is best (or tied)"] += 1
    return out


def zigzag_rows(data: dict) -> list[dict]:
    """Per dispatch whose ZigZag mapping was measured: predicted / simulated per level."""
    rows = []
    for model, m in data["models"].items():
        for d in m["dispatches"]:
            zz = d["zigzag"]
            measured = next((c for c in d["candidates"] if c["name"] == ZIGZAG), None)
            if d["kind"] not in CONTRACTIONS or not zz or not zz["traffic_bytes"] or measured is None:
                continue
            ratios = {lv: zz["traffic_bytes"][lv] / measured["traffic_bytes"][lv]
                      for lv in LEVELS if zz["traffic_bytes"].get(lv) and measured["traffic_bytes"].get(lv)}
            rows.append({"model": model, "split": m["split"], "dispatch": d["name"], "ratios": ratios,
                         "predicted_latency": zz["latency_cycles"],
                         "memory_aware_cycles": measured["memory_aware_cycles"],
                         "predicted_energy": zz["energy_pj"], "energy": measured["energy_pj"]})
    return rows


# What predicts the compiled ZigZag candidate's simulated bytes, per level: ZigZag's own mapping
# (what it proposed), its cost model on the tiles as compiled (after our translation into
# lowering_config), and on those tiles' loop order with its own allocator.
PREDICTORS = (("own", "its own mapping"), ("zigzag_forced_traffic_bytes", "the compiled tiles, forced"),
              ("zigzag_allocated_traffic_bytes", "the compiled tiles, its allocator"))


def attribution_lines(rows: list[dict], ranking: dict) -> list[str]:
    """Where ZigZag's traffic prediction is lost: if ZigZag's model applied to the compiled tiles
    came much closer to the simulation than its own mapping, the translation would be at fault."""
    priced = {(d["model"], d["dispatch"]): c for d in ranking["dispatches"]
              for c in d.get("candidates_priced", []) if c["name"] == ZIGZAG}
    lines = ["", "Where the prediction is lost: ZigZag's bytes per level for the compiled ZigZag candidate, "
             "predicted from its own mapping (the table above), and by ZigZag's cost model applied to the "
             "tiles as compiled (our translation into `lowering_config`: register tile from the register "
             "model, legalised, per-core workgroups; bench.zigzag_ranking), forced level by level or cut "
             "by its allocator. Same dispatches, within 1.5x of the simulation:", "",
             "| split | level | dispatches | " + " | ".join(label for _, label in PREDICTORS) + " |",
             "|---|---|---:|" + "---:|" * len(PREDICTORS)]
    for split in SPLITS:
        for lv in LEVELS:
            sel = [(r, priced[(r["model"], r["dispatch"])]) for r in rows
                   if r["split"] == split and (r["model"], r["dispatch"]) in priced
                   and all((c.get(k) or {}).get(lv) for k, _ in PREDICTORS[1:] for c in [priced[(r["model"], r["dispatch"])]])
                   and lv in r["ratios"]]
            if not sel:
                continue
            cells = []
            for key, _ in PREDICTORS:
                ratios = [r["ratios"][lv] if key == "own" else c[key][lv] / c["measured_traffic_bytes"][lv]
                          for r, c in sel]
                within = sum(1 / 1.5 <= x <= 1.5 for x in ratios)
                cells.append(f"{within / len(ratios):.0%} (median {sorted(ratios)[len(ratios) // 2]:.2f})")
            lines.append(f"| {split} | {lv} | {len(sel)} | " + " | ".join(cells) + " |")
    return lines


TRAFFIC_COLUMNS = (("own_mapping", "zigzag", "own mapping"),
                   ("own_mapping", "zigzag_write_allocate", "own mapping + write-allocate fills"),
                   ("compiled_tiles", "zigzag", "compiled tiles"),
                   ("compiled_tiles", "zigzag_write_allocate", "compiled tiles + write-allocate fills"))


def write_allocate_lines(traffic: dict) -> list[str]:
    """ZigZag's bytes per level over the simulation's, as ZigZag counts them and with the fills
    the description's write-back (write-allocate) caches make (bench.zigzag_traffic)."""
    rows = [r for r in traffic["dispatches"] if "error" not in r]
    failed = len(traffic["dispatches"]) - len(rows)
    lines = ["", "ZigZag writes outputs into a memory level without reading them; the accelerator's write-back "
             "caches allocate on a write miss, so the level behind serves each output line once more "
             "(analysis.zigzag_cost.write_allocate_fills, from ZigZag's own per-operand counts; bench.zigzag_traffic). "
             f"Within 1.5x of the simulation (median predicted / simulated), {len(rows)} matmul and convolution "
             "dispatches" + (f" ({failed} ZigZag could not price left out)" if failed else "") + ":", "",
             "| split | level | dispatches | " + " | ".join(label for *_, label in TRAFFIC_COLUMNS) + " |",
             "|---|---|---:|" + "---:|" * len(TRAFFIC_COLUMNS)]
    for split in SPLITS:
        for lv in LEVELS:
            sel = [r for r in rows if r["split"] == split and r["simulated"].get(lv)
                   and all(lv in r[where][what] for where, what, _ in TRAFFIC_COLUMNS)]
            if not sel:
                continue
            cells = []
            for where, what, _ in TRAFFIC_COLUMNS:
                ratios = sorted(r[where][what][lv] / r["simulated"][lv] for r in sel)
                within = sum(1 / 1.5 <= x <= 1.5 for x in ratios)
                cells.append(f"{within / len(ratios):.0%} ({ratios[len(ratios) // 2]:.2f})")
            lines.append(f"| {split} | {lv} | {len(sel)} | " + " | ".join(cells) + " |")
    return lines


def ranking_lines(ranking: dict) -> list[str]:
    """The per-op ranking agreement (Spearman over each dispatch's measured candidates)."""
    s = ranking["summary"]
    fields = [("zigzag_forced", "ZigZag, tiles forced"), ("zigzag_allocated", "ZigZag, its allocator"),
              ("predicted_cycles", "analysis' tile cost model"), ("code_model_cycles", "static code model")]
    lines = ["", "Spearman between each predictor and the memory-aware cycles over each dispatch's measured "
             "candidates (bench.zigzag_ranking; ZigZag's cost model applied to every candidate's tiles). "
             "Median and mean over dispatches; `>= 0.7`: dispatches at issue 46's target.", "",
             "| split | predictor | dispatches ranked | median | mean | >= 0.7 |", "|---|---|---:|---:|---:|---:|"]
    for split in SPLITS:
        if split not in s:
            continue
        for key, label in fields:
            v = s[split].get(key)
            if not v or not v["defined"]:
                continue
            lines.append(f"| {split} | {label} | {v['defined']} | {v['median']:.2f} | {v['mean']:.2f} | "
                         f"{v['at_least_target']} |")
    energy = [(split, m) for split in SPLITS if split in s for m in ("forced", "allocated")
              if s[split].get(f"zigzag_{m}_energy")]
    if energy:
        lines += ["", "ZigZag's energy of the same tiles priced on the measurement's terms (MACs, instructions, "
                  "static energy per cycle, cache and DRAM reads and writes; "
                  "analysis.zigzag_cost.energy_on_measured_terms) against the measured energy: Spearman over "
                  "each dispatch's candidates, and the ratio ZigZag / measured over every candidate "
                  "(10th percentile, median, 90th).", "",
                  "| split | tiles | dispatches ranked | median rho | mean rho | >= 0.7 | candidates | ratio p10 | "
                  "ratio median | ratio p90 |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for split, m in energy:
            v, r = s[split][f"zigzag_{m}_energy"], s[split].get(f"zigzag_{m}_energy_over_measured", {})
            if not v["defined"]:
                continue
            ratio = (f"{r['p10']:.2f} | {r['median']:.2f} | {r['p90']:.2f}" if r.get("candidates")
                     else "- | - | -")
            lines.append(f"| {split} | {m} | {v['defined']} | {v['median']:.2f} | {v['mean']:.2f} | "
                         f"{v['at_least_target']} | {r.get('candidates', 0)} | {ratio} |")
    return lines


def chosen_over_default(data: dict) -> list[tuple[str, dict, dict[str, float]]]:
    """(model, its data, measured choice / IREE default per figure), summed over the dispatches
    with a choice, each once; models without one are left out."""
    out = []
    for model, m in sorted(data["models"].items()):
        sums = {k: [0.0, 0.0] for k in ("model_cycles", "memory_aware_cycles", "energy_pj")}
        for d in m["dispatches"]:
            by = {c["name"]: c for c in d["candidates"]}
            if d["chosen"] not in by:
                continue
            for k in sums:
                sums[k][0] += by[d["chosen"]][k]
                sums[k][1] += by[DEFAULT][k]
        if sums["memory_aware_cycles"][1]:
            out.append((model, m, {k: v[0] / v[1] for k, v in sums.items()}))
    return out


def geomean_chosen_over_default(data: dict) -> dict[str, dict[str, float]]:
    """split -> geomean over its models of `chosen_over_default`'s memory-aware and energy ratios."""
    out = {}
    for split in SPLITS:
        rows = [r for _, m, r in chosen_over_default(data) if m["split"] == split]
        if rows:
            out[split] = {k: stats.geomean([r[k] for r in rows]) for k in ("memory_aware_cycles", "energy_pj")}
    return out


def render(data: dict, ranking: dict | None = None, sweeps: dict[str, dict] | None = None,
           traffic: dict | None = None) -> str:
    lines = ["# Memory-aware results", "",
             f"Generated by `bazel run //tools:report` from `{DATA}` (written by "
             "`bazel run //tools:report -- --collect memory` from the zoo's RISC-V measured choices). "
             "Every figure is measured on the module's own accelerator (`riscv_rvv`: SiFive P670 core "
             "model, 32 KiB L1, 512 KiB L2, 4 B/cycle DRAM); model cycles assume every load hits L1, "
             "memory-aware cycles add the simulated cache and DRAM traffic (docs/design.md). Neither is "
             "time.", "",
             "## 1. Which candidate source wins", "",
             "Dispatches with a measured choice; the winner by the analysis' prediction (its own choice, "
             "before measurement), by model cycles and by memory-aware cycles among the same measured "
             "shortlist. `default + register/alignment` is IREE's default tiles with a register tile or "
             "alignment change.", ""]
    w = wins(data)
    for split in SPLITS:
        total = sum(w[split]["memory-aware cycles"].values())
        lines += [f"**{split.replace('_', '-')} models** ({total} dispatches)", "",
                  "| source | predicted | model cycles | memory-aware cycles |", "|---|---:|---:|---:|"]
        for s in SOURCES:
            lines.append(f"| {s} | {w[split]['predicted'][s]} | {w[split]['model cycles'][s]} | "
                         f"{w[split]['memory-aware cycles'][s]} |")
        lines.append("")
    lines += ["What the measured choice did with those wins: a candidate replaces IREE's default only "
              "when its worst buffer placement beats the default's best (choice/tune.py `beyond_spread`, "
              "4 placements).", "", "| split | outcome | dispatches |", "|---|---|---:|"]
    for split, outcomes in switches(data).items():
        for outcome, n in sorted(outcomes.items()):
            lines.append(f"| {split.replace('_', '-')} | {outcome} | {n} |")
    lines.append("")
    rows = zigzag_rows(data)
    lines += ["## 2. ZigZag judged by the simulation", "",
              "Every matmul and convolution dispatch whose ZigZag mapping was compiled and run (the "
              "measured choice always runs it): ZigZag's predicted bytes served by each memory level "
              "(to the level above, and taken from it) over the simulated bytes of the compiled code.",
              "", "| split | level | dispatches | median predicted / simulated | within 1.5x |",
              "|---|---|---:|---:|---:|"]
    for split in SPLITS:
        for lv in LEVELS:
            rs = sorted(r["ratios"][lv] for r in rows if r["split"] == split and lv in r["ratios"])
            if not rs:
                continue
            within = sum(1 / 1.5 <= x <= 1.5 for x in rs)
            lines.append(f"| {split} | {lv} | {len(rs)} | {rs[len(rs) // 2]:.2f} | "
                         f"{within} ({within / len(rs):.0%}) |")
    lines += ["", "ZigZag's predicted latency of its own mapping against the memory-aware cycles of that "
              "mapping as compiled, across dispatches (Spearman; ZigZag's cost model is not applied to "
              "the other candidates' tiles here, so this is not a ranking of candidates within an op):", ""]
    for split in SPLITS:
        sel = [r for r in rows if r["split"] == split]
        rho = stats.spearman([r["predicted_latency"] for r in sel], [r["memory_aware_cycles"] for r in sel]) \
            if len(sel) >= 3 else None
        lines.append(f"- {split}: {len(sel)} dispatches, Spearman "
                     + (f"{rho:.2f}" if rho is not None else "n/a (fewer than 3)"))
    if ranking is not None:
        lines += attribution_lines(rows, ranking)
    if traffic is not None:
        lines += write_allocate_lines(traffic)
    if ranking is not None:
        lines += ranking_lines(ranking)
    lines += ["", "| model | split | dispatch | " + " | ".join(f"{lv} pred/sim" for lv in LEVELS)
              + " | ZigZag latency | memory-aware cycles |",
              "|---|---|---|" + "---:|" * (len(LEVELS) + 2)]
    for r in rows:
        cells = " | ".join(f"{r['ratios'][lv]:.2f}" if lv in r["ratios"] else "-" for lv in LEVELS)
        lines.append(f"| {r['model']} | {r['split']} | {r['dispatch']} | {cells} | "
                     f"{r['predicted_latency']:,.0f} | {r['memory_aware_cycles']:,} |")
    lines += ["", "## 3. Measured choice over IREE's default, per model", "",
              "Summed over the dispatches with a choice, each once; the measured choice as built by "
              "`<name>_riscv_analysis` (the shipped build may be another strategy).", "",
              "| model | split | dispatches | model cycles | memory-aware cycles | energy |",
              "|---|---|---:|---:|---:|---:|"]
    for model, m, r in chosen_over_default(data):
        lines.append(f"| {model} | {m['split']} | {len(m['dispatches'])} | {r['model_cycles']:.3f} | "
                     f"{r['memory_aware_cycles']:.3f} | {r['energy_pj']:.3f} |")
    for split, g in geomean_chosen_over_default(data).items():
        lines.append(f"| **geomean** | {split} | | | **{g['memory_aware_cycles']:.3f}** | **{g['energy_pj']:.3f}** |")
    if sweeps:
        lines += sweep_lines(sweeps)
    return "\n".join(lines) + "\n"


def committed_sweeps(workspace: Path) -> dict[str, dict]:
    paths = [workspace / DATA.parent / f"{name}.sweep.json" for name in SWEEPS]
    return {p.name.removesuffix(".sweep.json"): read_json(p, "report data", kind=dict) for p in paths if p.is_file()}


RECORDS = Path("tuning/records")
REFRESH = "tools/bazel build //models:zoo_measured_choices && tools/bazel run //tools:report -- --collect memory"


def record_differences(data: dict, root: Path) -> list[str]:
    """Where `data` (measured_choices.json) is not what the committed tuning records say: every
    measured candidate's figures must be its record's (one source for every figure)."""
    out = []
    for model, m in sorted(data["models"].items()):
        path = root / RECORDS / f"{model}_riscv.json"
        if not path.is_file():
            out.append(f"{model}: no committed record {path.relative_to(root)}")
            continue
        results = load_record(path).results  # the record as every reader takes it: its hash checked
        for d in m["dispatches"]:
            for c in d["candidates"]:
                result = results.get(d["name"], {}).get(c["name"])
                measured = result.measured.model_dump() if result and result.measured else None
                if measured is None:
                    out.append(f"{model} {d['name']} {c['name']}: not measured in its record")
                    continue
                for figure in ("model_cycles", "memory_aware_cycles", "energy_pj", "traffic_bytes",
                               "placement_memory_aware_cycles"):
                    if c.get(figure) != measured.get(figure):
                        out.append(f"{model} {d['name']} {c['name']}: {figure} {c.get(figure)} here, "
                                   f"{measured.get(figure)} in its record")
    return out


def documents(root: Path) -> dict[Path, str]:
    """docs/results_memory.md from the committed data under the workspace `root`, which must be
    what the committed tuning records say."""
    data = read_json(root / DATA, "report data", kind=dict)
    drift = record_differences(data, root)
    if drift:
        raise ValueError(f"{DATA}: {len(drift)} figures differ from {RECORDS}/ (first: {drift[0]}): {REFRESH}")
    ranking = read_json(root / RANKING, "report data", kind=dict) if (root / RANKING).is_file() else None
    traffic = read_json(root / TRAFFIC, "report data", kind=dict) if (root / TRAFFIC).is_file() else None
    return {OUT: render(data, ranking, committed_sweeps(root), traffic)}


def collected(bin_root: Path) -> dict[Path, str]:
    """The data files `collect` refreshes from the zoo's outputs under `bin_root` (bazel-bin)."""
    data = collect(bin_root)
    out = {DATA: json.dumps(data, indent=1, sort_keys=True) + "\n"}
    for name, result in collect_sweeps(bin_root).items():
        out[DATA.parent / f"{name}.sweep.json"] = json.dumps(result, indent=1, sort_keys=True) + "\n"
    return out
