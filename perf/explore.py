"""Explores accelerator variants for one model: ZigZag prices every variant, qemu measures the best few.

    bazel run //tools:explore -- resnet space.yaml [--out DIR] [--jobs 2] [--measure-top 3]
    python -m perf.explore --build mlp --index zoo_explore_index.json --space space.yaml --out DIR

space.yaml names the axes: each is a `--set` key of analysis.hardware_variant and its values. A
variant is one combination of them, applied to the accelerator the model's build was made for:

    axes:
      l1.size_bytes: [16384, 32768, 65536]
      l2.size_bytes: [262144, 524288, 1048576]
      dram.read_bytes_per_cycle: [2, 4, 8]
    measure_top: 3        # optional (--measure-top overrides it)

Each variant is priced on the model's tuned riscv build, the tiles its analysis chose as compiled.
Each dispatch ZigZag can map is priced by ZigZag's cost model on those tiles: the loop order is kept,
and ZigZag's allocator cuts the levels on the variant's capacities (analysis.zigzag_cost `allocated`
mode). Its cycles and energy are priced on the measurement's terms with the L1's traffic the vector
core's on those tiles (analysis.zigzag_pricer.on_vector_core), not ZigZag's per-lane registers'.
Every other dispatch (copies, im2col,
reductions, or tiles ZigZag's allocator refuses) is priced by its bound on the variant
(perf.memory_model.bound). For energy it gets its compulsory bytes through every level, its MACs and
static energy over those cycles: a lower bound. A dispatch counts once per call. SRAM bytes are the
variant's register file and caches. The report marks the Pareto front on (cycles, energy, SRAM bytes).

The `measure_top` variants with the fewest predicted cycles whose VLEN is the build's are then measured.
perf.measure runs the build's own vmfb under qemu, once per variant, with the variant's caches
simulated. The report gives ZigZag's error on them and Spearman's rho. `--reuse-measured` takes the
figures of a previous report instead, once one of its variants measures again to the same figures
(re-pricing a space measures one variant, not all).

What it ignores: a variant's own tile choice (the build is the one the base accelerator's choice
made; a hardware_sweep re-chooses tiles per variant), and VLEN changes in the measurement (a
different VLEN needs another build: such variants are priced, never measured). Variants are priced
by `--jobs` local processes, or with `--ray-address HOST:PORT` (or `local`) as Ray tasks on a
cluster, one per ZigZag accelerator (choice/ray_engine.py checks every node's toolchain first).

Writes <out>/explore.json (every variant), explore.md (Pareto front, top variants, measured) and
explore.png; bad input is one line naming it, with nothing written.
"""

from __future__ import annotations

import argparse
import atexit
import concurrent.futures
import contextlib
import itertools
import json
import math
import os
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Iterator

import numpy as np
import yaml
from tqdm import tqdm

from analysis import hardware_variant, zigzag_cost
from analysis.zigzag_pricer import (Pricer, latency_on_measured_terms, nest_from_json, on_vector_core,
                                     vector_core_l1_bytes)
from choice.ray_engine import RayEngineError
from common import hardware as hwmod
from common.dispatch_layout import load_layout
from common.errors import NamedError, OneLineErrors
from common.files import InputError, check_input, check_outputs, read_json, sha256_file, write_together
from common.stats import spearman
from common.yaml_model import bounded_safe_load
from perf import memory_model as mem

SCHEMA = 1
MODE = "allocated"
# What ranks the variants (`predicted_cycles`): the vector core's L1 traffic and ZigZag's cache and
# DRAM traffic priced on the measurement's terms (analysis.zigzag_pricer.on_vector_core), ZigZag's
# own traffic on those terms (latency_on_measured_terms), or ZigZag's own latency. Chosen on the
# calibration models' oracle runs (docs/results_prediction.md; 24 variants each, every one measured),
# pairwise accuracy on cycles: ResNet-18 0.82 / 0.81 / 0.61, MobileNetV2 0.97 / 0.94 / 0.87.
LATENCIES = {"vector-core": "vector_core_cycles", "measured-terms": "measured_terms_cycles",
             "zigzag": "zigzag_cycles"}
DEFAULT_LATENCY = "vector-core"
DEFAULT_TOP = 3
MAX_VARIANTS = 100_000


class ExploreError(NamedError, ValueError):
    """An input the explorer cannot use; the message names it."""


@dataclass(frozen=True)
class DispatchSpec:
    """What pricing one dispatch on a variant needs (picklable for the worker processes)."""
    name: str
    kind: str
    calls: int
    macs: int
    element_bits: int
    read_bytes: int
    write_bytes: int
    zigzag: tuple | None  # (signature, layer, nloops, kinds, tiles, order) or None: priced by its bound
    l1_bytes: tuple[int, int] | None = None  # the vector core's L1 loads and stores (with `zigzag`)


# ----------------------------------------------------------------------------- inputs

def load_space(path: Path) -> tuple[dict[str, list], int | None]:
    try:
        check_input(path, "space file")  # a FIFO blocked the read forever (issue 80), a device never ended
        data = bounded_safe_load(path.read_text())
    except InputError as err:
        raise ExploreError(str(err)) from None
    except FileNotFoundError:
        raise ExploreError(f"{path}: space file not found") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ExploreError(f"{path}: not a space file: {str(err).splitlines()[0]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("axes"), dict) or not data["axes"]:
        raise ExploreError(f"{path}: expected a mapping with 'axes' (KEY: [values, ...])")
    unknown = set(data) - {"axes", "measure_top"}
    if unknown:
        raise ExploreError(f"{path}: unknown field(s) {', '.join(sorted(unknown))} (axes, measure_top)")
    axes = {}
    for key, values in data["axes"].items():
        if not isinstance(values, list) or not values:
            raise ExploreError(f"{path}: axis {key}: expected a non-empty list of values")
        if len(set(map(str, values))) != len(values):
            raise ExploreError(f"{path}: axis {key}: a value is given twice")
        linked = str(key).split(LINK)
        if len(linked) > 1 and not all(isinstance(v, list) and len(v) == len(linked) for v in values):
            raise ExploreError(f"{path}: axis {key}: a linked axis takes lists of {len(linked)} values, "
                               f"one per key (e.g. [{', '.join(['...'] * len(linked))}])")
        axes[str(key)] = values
    top = data.get("measure_top")
    if top == "all":
        top = MAX_VARIANTS
    elif top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 0):
        raise ExploreError(f"{path}: measure_top: expected a whole number >= 0 or 'all', not {top!r}")
    count = prod(len(v) for v in axes.values())
    if count > MAX_VARIANTS:
        raise ExploreError(f"{path}: {count:,} variants; at most {MAX_VARIANTS:,}")
    return axes, top


# A linked axis (`l1.size_bytes+l2.size_bytes: [[16384, 540672], ...]`) moves several keys together:
# variants of equal SRAM budget, or of equal cost, are one axis, not a product.
LINK = "+"


def _settings(key: str, value) -> list[str]:
    """The `--set` strings of one axis value (several for a linked axis)."""
    keys = key.split(LINK)
    values = value if len(keys) > 1 else [value]
    return [f"{k}={v}" for k, v in zip(keys, values)]


def axis_value(value) -> str:
    """One value of an axis as a row's `values` shows it (a linked axis' values joined by LINK)."""
    return LINK.join(map(str, value)) if isinstance(value, list) else str(value)


def axis_values(axes: dict[str, list], settings: list[str]) -> list[str]:
    """A variant's value on each axis, a linked axis' values joined by LINK."""
    given = dict(s.split("=", 1) for s in settings)
    return [LINK.join(given[k] for k in key.split(LINK)) for key in axes]


def variants(base: dict, axes: dict[str, list], where: Path) -> list[tuple[str, list[str], hwmod.Hardware, dict]]:
    """(name, settings, description, its YAML mapping) per combination, validated like any description."""
    out = []
    keys = list(axes)
    with tempfile.TemporaryDirectory(prefix="explore_hw_") as tmp:
        for i, values in enumerate(itertools.product(*(axes[k] for k in keys))):
            name = f"v{i:05d}"
            settings = [s for k, v in zip(keys, values) for s in _settings(k, v)]
            try:
                data = hardware_variant.apply(base, name, settings)
            except hardware_variant.VariantError as err:
                raise ExploreError(f"{where}: {err}") from None
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(yaml.safe_dump(data, sort_keys=False))
            try:
                hw = hwmod.load_hardware(path)
            except hwmod.HardwareError as err:
                raise ExploreError(f"{where}: variant {', '.join(settings)}: "
                                   f"{str(err).split(': ', 1)[-1]}") from None
            out.append((name, settings, hw, data))
    return out


def dispatch_specs(analysis: dict, layout_path: Path) -> list[DispatchSpec]:
    """Every dispatch one call of the model runs, with what ZigZag needs where it can map it."""
    layout = load_layout(layout_path)
    by_name = {d["name"]: d for d in analysis["dispatches"]}
    specs = []
    for name, d in sorted(layout.dispatches.items()):
        if not d.calls:
            continue
        read = sum(s.nbytes for s in d.subspans if s.access in ("readonly", "readwrite"))
        write = sum(s.nbytes for s in d.subspans if s.access in ("writeonly", "readwrite"))
        zz = l1_bytes = None
        disp = by_name.get(name)
        if disp is not None:
            chosen = next((c for c in disp.get("candidates", []) if c["name"] == disp.get("chosen")), {})
            tiles = disp.get("tiles") or chosen.get("tiles")
            try:
                nest = nest_from_json(disp)
                layer = zigzag_cost.to_layer(disp["kind"], nest, max_searched_loops=None)
                l1_bytes = vector_core_l1_bytes(nest, tiles) if tiles else None
            except (zigzag_cost.NotExpressible, ValueError):
                layer = l1_bytes = None
            if layer is not None and tiles:
                n = len(nest.loops)
                zz = (disp["signature"], layer, n, [k for _, _, k in nest.loops], tiles, list(range(n)))
        specs.append(DispatchSpec(name, d.kind or "unknown", d.calls, d.macs, d.mac_element_bits, read, write, zz,
                                  l1_bytes))
    return specs


# ----------------------------------------------------------------------------- pricing

def bound_energy(hw: hwmod.Hardware, spec: DispatchSpec, cycles: int) -> float:
    """Compulsory bytes read and written once through every cache and DRAM, MACs, static energy."""
    energy = spec.macs * hw.compute.mac_energy_pj + cycles * hw.compute.static_energy_pj_per_cycle
    for level in hw.memory:
        if level.role == "register":
            continue
        per_access = level.access_bits / 8
        energy += spec.read_bytes / per_access * level.read_energy_pj
        energy += spec.write_bytes / per_access * level.write_energy_pj
    return energy


# Fields that change no ZigZag result of a forced temporal mapping: energies (ZigZag's allocator
# places tiles by capacity, its latency counts no energy; the energy is priced here from its
# traffic, analysis.zigzag_cost.energy_on_measured_terms) and names. Variants that differ only in
# them share ZigZag's runs, so energy axes cost nothing.
_ENERGY_FIELDS = ("mac_energy_pj", "instruction_energy_pj", "static_energy_pj_per_cycle",
                  "read_energy_pj", "write_energy_pj")
# Per worker process: ZigZag inputs and results by the fields that decide them.
_PRICERS: dict[str, Pricer] = {}
_WORK: list[Path] = []
# The directory ZigZag's inputs go under, the explorer's own (removed when pricing ends): each
# worker process made its own in $TMPDIR and an atexit handler, which a pool's worker never runs,
# was to remove it, so every run left one per worker behind (issue 80's probe).
_WORK_ROOT: list[Path] = []


def _use_work_root(root: str | Path) -> None:
    """This process prices under `root` from now on (a pool's initializer; the explorer itself)."""
    _WORK_ROOT[:] = [Path(root)]
    _PRICERS.clear()
    _WORK.clear()


@contextlib.contextmanager
def _scratch_pricing() -> Iterator[None]:
    """This process prices in a scratch directory of its own, removed with every ZigZag input and
    cached result when the block ends (the serial explorer; a Ray task, whose worker process outlives
    it and runs no atexit)."""
    with tempfile.TemporaryDirectory(prefix="explore_zz_") as work:
        _use_work_root(work)
        try:
            yield
        finally:
            _WORK_ROOT.clear()
            _PRICERS.clear()
            _WORK.clear()


def zigzag_key(hw: hwmod.Hardware) -> str:
    """The description without what cannot change a ZigZag result (names, energies)."""
    data = json.loads(hw.model_dump_json())
    data.pop("name", None)
    data.pop("description", None)
    for field in _ENERGY_FIELDS:
        data["compute"].pop(field, None)
        for level in data["memory"]:
            level.pop(field, None)
    return json.dumps(data, sort_keys=True)


# The share of a cache's capacity ZigZag's allocator may fill (its capacity in the ZigZag inputs the
# explorer writes; the bandwidths, lines and latencies that price the traffic stay the variant's).
# ZigZag counts a tile as held when its bytes fit; the simulated caches lose lines earlier: 64-byte
# lines around strided tiles, sets shared by several operands' tiles (conflicts), LRU order. Chosen
# on the calibration models' oracle runs alone (docs/design.md section 10), pairwise accuracy on
# cycles, ResNet-18 / MobileNetV2, at a share of 1.0: 0.82 / 0.97, 0.75: 0.84 / 0.95, 0.6: 0.85 / 0.96,
# 0.5: 0.89 / 0.97, 0.35: 0.79 / 0.93.
CACHE_CAPACITY_SHARE = 0.5


def allocator_view(hw: hwmod.Hardware) -> hwmod.Hardware:
    """`hw` with each cache's capacity the share ZigZag's allocator may fill (CACHE_CAPACITY_SHARE)."""
    # model_copy(update=...) does not validate: a share of a cache need not be a whole number of sets
    return hw.model_copy(update={"memory": [
        m.model_copy(update={"size_bytes": int(m.size_bytes * CACHE_CAPACITY_SHARE)})
        if m.role in hwmod.CACHE_ROLES else m for m in hw.memory]})


def _pricer(hw: hwmod.Hardware) -> Pricer:
    key = zigzag_key(hw)
    if key not in _PRICERS:
        if not _WORK:
            work = Path(tempfile.mkdtemp(prefix="explore_zz_", dir=_WORK_ROOT[0] if _WORK_ROOT else None))
            if not _WORK_ROOT:
                atexit.register(shutil.rmtree, work, True)
            _WORK.append(work)
        folder = _WORK[0] / f"hw{len(_PRICERS)}"
        acc, mapping = hwmod.write_zigzag_inputs(allocator_view(hw), folder)
        _PRICERS[key] = Pricer(acc, mapping, _WORK[0], hw)
    return _PRICERS[key]


def price_variant(hw: hwmod.Hardware, specs: list[DispatchSpec]) -> dict:
    """One variant: predicted cycles and energy of one call of the model, per dispatch how."""
    pricer = _pricer(hw)
    cycles = energy = measured_terms = vector_core = 0.0
    by_zigzag = refused = 0
    for spec in specs:
        result = None
        if spec.zigzag is not None:
            sig, layer, n, kinds, tiles, order = spec.zigzag
            result = pricer.price(sig, layer, n, kinds, tiles, MODE, order)
            if isinstance(result, str):  # the allocator cannot place these tiles on this variant
                refused += 1
                result = None
        if result is not None:
            c = result["latency_cycles"]
            t = latency_on_measured_terms(result, hw, spec.macs)
            core = on_vector_core(result, hw, spec.macs, spec.l1_bytes)
            v = core["latency_cycles"]
            e = zigzag_cost.energy_on_measured_terms(core, hw, spec.macs) or 0.0
            by_zigzag += 1
        else:
            c, _ = mem.bound(hw, spec.macs, spec.element_bits, spec.read_bytes, spec.write_bytes)
            t = v = c
            e = bound_energy(hw, spec, c)
        cycles += spec.calls * c
        measured_terms += spec.calls * t
        vector_core += spec.calls * v
        energy += spec.calls * e
    sram = sum(m.size_bytes // m.shared_by_cores for m in hw.memory if m.role != "dram")
    return {"zigzag_cycles": round(cycles), "measured_terms_cycles": round(measured_terms),
            "vector_core_cycles": round(vector_core),
            "predicted_energy_pj": round(energy), "sram_bytes": sram,
            "dispatches_by_zigzag": by_zigzag, "dispatches_refused_by_zigzag": refused}


def _price_job(args: tuple) -> tuple[str, dict]:
    name, hw_json, specs = args
    return name, price_variant(hwmod.Hardware.model_validate_json(hw_json), specs)


def _price_group(jobs: list[tuple]) -> list[tuple[str, dict]]:
    """Variants sharing one ZigZag accelerator (a Ray task), priced in a scratch directory of its own."""
    with _scratch_pricing():
        return [_price_job(job) for job in jobs]


def price_on_ray(address: str, build: dict, groups: list[list[tuple]], log) -> dict[str, dict]:
    """Every variant priced as Ray tasks on the cluster at `address` (`local`: one of this machine's
    own), one task per ZigZag accelerator. The cluster is joined as choice.tune joins it
    (choice.ray_engine.connect: every node's toolchain and Python environment must be the driver's,
    so a node prices with the same ZigZag); the figures are a local run's."""
    from choice import ray_engine
    from perf import mca

    llvm = mca.runfiles_llvm_bin()
    if llvm is None:
        raise ExploreError(f"--ray-address {address}: @llvm19 is not in the runfiles, and every node's "
                           "toolchain is checked against it (run `bazel run //tools:explore`)")
    executor = ray_engine.connect(address, llvm, Path(build["qemu"]), Path(build["plugin"]), Path(build["runner"]))
    priced: dict[str, dict] = {}
    try:
        log(f"explore: {len(groups)} Ray tasks, one per ZigZag accelerator")
        futures = [executor.submit(_price_group, group) for group in groups]
        for future in tqdm(concurrent.futures.as_completed(futures), total=len(futures), desc="pricing on Ray",
                           unit="accelerator", disable=None):
            for name, row in future.result():
                priced[name] = row
    finally:
        executor.shutdown()
    return priced


def pareto(rows: list[dict], keys: tuple[str, ...] = ("predicted_cycles", "predicted_energy_pj", "sram_bytes")) -> set[str]:
    """Names of the rows no other row beats or ties on every key while beating on one."""
    front = set()
    ordered = sorted(rows, key=lambda r: tuple(r[k] for k in keys))
    kept: list[dict] = []
    for r in ordered:
        if not any(all(o[k] <= r[k] for k in keys) and any(o[k] < r[k] for k in keys) for o in kept):
            kept.append(r)
            front.add(r["variant"])
    return front


# ----------------------------------------------------------------------------- measuring the top

def measure(build: dict, chosen: list[tuple[str, dict]], work: Path, jobs: int) -> dict[str, dict]:
    """perf.measure on the build's own vmfb, once per chosen variant: memory-aware cycles and energy."""
    from common.perf_schema import PerfReport
    from perf import measure as perf_measure
    from perf import mca

    paths = []
    for name, data in chosen:
        path = work / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        paths.append(path)
    argv = ["--module", build["module"], "--target", build["target"], "--runner", build["runner"],
            "--plugin", build["plugin"], "--qemu", build["qemu"], "--model-name", build["model_name"],
            "--compiled-report", build["report"], "--vmfb", build["vmfb"], "--layout", build["layout"],
            "--analysis", build["analysis"], "--jobs", str(jobs),
            "--out-json", str(work / "measured.perf.json"), "--out-md", str(work / "measured.perf.md")]
    llvm = mca.runfiles_llvm_bin()
    if llvm is not None:
        argv += ["--llvm-bin", str(llvm)]
    for path in paths:
        argv += ["--hardware", str(path)]
    if perf_measure.main(argv) != 0:
        raise ExploreError(f"{build['vmfb']}: measuring the top variants failed (perf.measure above)")
    report = PerfReport.model_validate_json((work / "measured.perf.json").read_text())
    return {run.hardware: {"memory_aware_cycles": run.inference_memory_aware_cycles,
                           "energy_pj": round(run.inference_energy_pj or 0.0)} for run in report.runs}


# ----------------------------------------------------------------------------- the report

# A measured difference smaller than this share is not a difference (the placement spread of a
# whole model is below 0.5%: docs/data/placement_spread.md).
MEASURED_DIFFERENCE = 0.01
BOOTSTRAP = 1000


def naive_key(hw: dict) -> tuple[float, ...]:
    """"Bigger is better" (issue 77): more L2, then more L1, then more DRAM bandwidth ranks first."""
    levels = {m["role"]: m for m in hw["memory"]}
    return (-levels["l2"]["size_bytes"], -levels["l1"]["size_bytes"], -levels["dram"]["read_bytes_per_cycle"])


def _axes_of(hw: dict) -> tuple[float, float, float]:
    levels = {m["role"]: m for m in hw["memory"]}
    return (levels["l1"]["size_bytes"], levels["l2"]["size_bytes"], levels["dram"]["read_bytes_per_cycle"])


def pairwise(items: list[dict], field: str, measured: str) -> dict:
    """Pairwise accuracy of `field` (lower: better) and of the naive order against `measured`, over
    the pairs whose measured figures differ by more than MEASURED_DIFFERENCE, all of them and the
    trade-offs alone (neither variant has at least the other's L1, L2 and DRAM bandwidth); 95%
    intervals by resampling the variants (seeded)."""
    def pairs_of(sel: list[dict]) -> list[tuple[dict, dict]]:
        out = []
        for i, a in enumerate(sel):
            for b in sel[i + 1:]:
                ma, mb = a[measured], b[measured]
                if abs(ma - mb) > MEASURED_DIFFERENCE * min(ma, mb):
                    out.append((a, b))
        return out

    def accuracy(pairs: list[tuple[dict, dict]], score) -> float | None:
        if not pairs:
            return None
        right = 0.0
        for a, b in pairs:
            sa, sb = score(a), score(b)
            if sa == sb:
                right += 0.5  # a tie is a coin toss
            else:
                right += (sa < sb) == (a[measured] < b[measured])
        return right / len(pairs)

    def trade_off(a: dict, b: dict) -> bool:
        xa, xb = _axes_of(a["hw"]), _axes_of(b["hw"])
        return not (all(u >= v for u, v in zip(xa, xb)) or all(u <= v for u, v in zip(xa, xb)))

    scores = {"zigzag": lambda r: r[field], "naive": lambda r: naive_key(r["hw"])}
    rng = np.random.default_rng(77)
    out = {"variants": len(items)}
    for subset in ("all", "trade_offs"):
        pick = (lambda ps: ps) if subset == "all" else (lambda ps: [p for p in ps if trade_off(*p)])
        pairs = pick(pairs_of(items))
        entry = {"pairs": len(pairs)}
        for name, score in scores.items():
            acc = accuracy(pairs, score)
            samples = []
            if acc is not None and len(items) >= 3:
                for _ in range(BOOTSTRAP):
                    sample = [items[i] for i in rng.integers(0, len(items), len(items))]
                    a = accuracy([p for p in pick(pairs_of(sample)) if p[0] is not p[1]], score)
                    if a is not None:
                        samples.append(a)
            entry[name] = {"accuracy": acc,
                           "ci95": [float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5))]
                           if samples else None}
        out[subset] = entry
    out["spearman"] = spearman([r[field] for r in items], [r[measured] for r in items])
    keys = [naive_key(r["hw"]) for r in items]
    order = sorted(set(keys))
    out["naive_spearman"] = spearman([order.index(k) for k in keys], [r[measured] for r in items])
    return out


def format_accuracy(entry: dict) -> str:
    """A pairwise accuracy of `pairwise` with its 95% interval, as the reports print it."""
    if entry["accuracy"] is None:
        return "-"
    ci = entry["ci95"]
    return f"{entry['accuracy']:.2f}" + (f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci else "")


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def render(result: dict) -> str:
    rows = result["variants"]
    keys = list(result["axes"])
    how = "on Ray" if result["jobs"] == "ray" else f"with {result['jobs']} processes"
    lines = [f"# Accelerator exploration: {result['model']} on {result['base']}", "",
             f"{len(rows):,} variants of {result['base']} (axes: {', '.join(keys)}), priced by ZigZag on the "
             f"tuned build's tiles (`{MODE}` mode; cycles: {result['latency']}) and by the bound elsewhere, in "
             f"{result['seconds']:.0f} s "
             f"{how} ({result['distinct_zigzag_inputs']:,} distinct ZigZag accelerators: "
             f"variants differing only in energies share ZigZag's runs). Predictions, not measurements, except the "
             "last table.", "",
             "## Pareto front (predicted cycles, energy, SRAM bytes)", "",
             "| variant | " + " | ".join(keys) + " | predicted cycles | predicted energy (uJ) | SRAM (KiB) |",
             "|---|" + "---|" * len(keys) + "---:|---:|---:|"]
    front = sorted((r for r in rows if r["pareto"]), key=lambda r: r["predicted_cycles"])
    for r in front[:40]:
        lines.append(f"| {r['variant']} | " + " | ".join(str(v) for v in r["values"]) +
                     f" | {r['predicted_cycles']:,} | {r['predicted_energy_pj'] / 1e6:,.1f} | {r['sram_bytes'] / 1024:,.0f} |")
    if len(front) > 40:
        lines.append(f"\n({len(front) - 40} more on the front: explore.json)")
    measured = [r for r in rows if r.get("measured")]
    lines += ["", "## Measured (qemu, the build's own vmfb, each variant's caches simulated)", ""]
    if measured:
        lines += ["| variant | " + " | ".join(keys) + " | predicted cycles | measured memory-aware cycles | "
                  "predicted / measured | predicted energy / measured |", "|---|" + "---|" * len(keys) + "---:|---:|---:|---:|"]
        for r in sorted(measured, key=lambda r: r["predicted_cycles"]):
            m = r["measured"]
            lines.append(f"| {r['variant']} | " + " | ".join(str(v) for v in r["values"]) +
                         f" | {r['predicted_cycles']:,} | {m['memory_aware_cycles']:,} | "
                         f"{r['predicted_cycles'] / m['memory_aware_cycles']:.2f} | "
                         f"{r['predicted_energy_pj'] / m['energy_pj']:.2f} |")
        rho = result.get("measured_spearman")
        lines += ["", f"Spearman's rho of predicted against measured cycles over these variants: "
                      f"{'undefined (fewer than 3, or constant)' if rho is None else f'{rho:.2f}'}."]
        if result.get("validation"):
            lines += ["", "## ZigZag as the oracle, beside \"bigger is better\"", "",
                      f"Over the measured variants: which of two is faster (spends less energy)? Pairs whose measured "
                      f"figures differ by more than {MEASURED_DIFFERENCE:.0%}; trade-offs are the pairs where neither "
                      "has at least the other's L1, L2 and DRAM bandwidth. \"Bigger is better\" orders by L2, then "
                      "L1, then DRAM bandwidth. 95% intervals: the variants resampled "
                      f"{BOOTSTRAP} times.", "",
                      "| figure | pairs | ZigZag pairwise accuracy | naive | trade-off pairs | ZigZag on trade-offs "
                      "| naive on trade-offs | Spearman ZigZag | Spearman naive |",
                      "|---|---:|---|---|---:|---|---|---:|---:|"]
            for fig, v in result["validation"].items():
                a, t = v["all"], v["trade_offs"]
                lines.append(f"| {fig} | {a['pairs']} | {format_accuracy(a['zigzag'])} | {format_accuracy(a['naive'])} | {t['pairs']} | "
                             f"{format_accuracy(t['zigzag'])} | {format_accuracy(t['naive'])} | {_f(v['spearman'])} | {_f(v['naive_spearman'])} |")
    else:
        lines.append(result.get("not_measured", "none"))
    return "\n".join(lines) + "\n"


def plot(result: dict) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({"svg.hashsalt": "riscv-ml-toolchain"})
        import matplotlib.pyplot as plt

        rows = result["variants"]
        fig, ax = plt.subplots(figsize=(7, 5))
        sc = ax.scatter([r["predicted_cycles"] for r in rows], [r["predicted_energy_pj"] / 1e6 for r in rows],
                        c=[r["sram_bytes"] / 1024 for r in rows], s=8, cmap="viridis")
        front = [r for r in rows if r["pareto"]]
        ax.scatter([r["predicted_cycles"] for r in front], [r["predicted_energy_pj"] / 1e6 for r in front],
                   facecolors="none", edgecolors="red", s=40, label="Pareto front")
        meas = [r for r in rows if r.get("measured")]
        if meas:
            ax.scatter([r["measured"]["memory_aware_cycles"] for r in meas],
                       [r["measured"]["energy_pj"] / 1e6 for r in meas], marker="x", color="black",
                       label="measured (qemu)")
        fig.colorbar(sc, label="SRAM (KiB)")
        ax.set_xlabel("cycles, one call of the model")
        ax.set_ylabel("energy (uJ)")
        ax.set_title(f"{result['model']}: {len(rows):,} variants of {result['base']}", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
        plt.close(fig)
        return buf.getvalue()


# ----------------------------------------------------------------------------- CLI

def reusable_measurements(path: Path, model: str, base: str) -> dict[tuple[str, ...], dict]:
    """A previous report's measured figures by the variant's settings; it must be of the same model
    and base accelerator (whether the build and the tools are still the same is checked by measuring
    one of them again: explore's `reuse`)."""
    old = read_json(path, "explore report", kind=dict)
    if old.get("schema_version") != SCHEMA or not isinstance(old.get("variants"), list):
        raise ExploreError(f"--reuse-measured {path}: not an explore report of schema {SCHEMA}")
    if (old.get("model"), old.get("base")) != (model, base):
        raise ExploreError(f"--reuse-measured {path}: explores {old.get('model')} on {old.get('base')}, "
                           f"not {model} on {base}")
    return {tuple(r["settings"]): r["measured"] for r in old["variants"] if r.get("measured")}


def explore(build: dict, space: Path, top: int | None, jobs: int, log, latency: str = DEFAULT_LATENCY,
            reuse: Path | None = None, ray_address: str | None = None) -> dict:
    import time

    axes, space_top = load_space(space)
    top = space_top if top is None else top
    top = DEFAULT_TOP if top is None else top
    analysis = read_json(build["analysis"], "analysis", kind=dict)
    base_path = Path(build["hardware"])
    base = bounded_safe_load(base_path.read_text())
    base_hw = hwmod.load_hardware(base_path)
    specs = dispatch_specs(analysis, Path(build["layout"]))
    found = variants(base, axes, space)
    log(f"explore: {len(found):,} variants of {base_hw.name}, {len(specs)} dispatches "
        f"({sum(s.zigzag is not None for s in specs)} ZigZag layers)")
    start = time.monotonic()
    priced: dict[str, dict] = {}
    # Consecutive jobs sharing ZigZag's inputs go to one worker in one chunk (its runs are reused).
    key_of = {name: zigzag_key(hw) for name, _, hw, _ in found}  # the ZigZag accelerator each prices on
    found_sorted = sorted(found, key=lambda f: (key_of[f[0]], f[0]))
    jobs_args = [(name, hw.model_dump_json(), specs) for name, _, hw, _ in found_sorted]
    distinct = len(set(key_of.values()))
    if ray_address is not None:
        groups = [list(g) for _, g in itertools.groupby(jobs_args, key=lambda job: key_of[job[0]])]
        priced = price_on_ray(ray_address, build, groups, log)
    elif jobs <= 1:
        with _scratch_pricing():
            for job in tqdm(jobs_args, desc="pricing", unit="variant", disable=None):
                name, row = _price_job(job)
                priced[name] = row
    else:
        with tempfile.TemporaryDirectory(prefix="explore_zz_") as work_root:
            chunk = max(1, math.ceil(len(jobs_args) / (jobs * 8)))
            with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, initializer=_use_work_root,
                                                        initargs=(work_root,)) as pool:
                for name, row in tqdm(pool.map(_price_job, jobs_args, chunksize=chunk), total=len(jobs_args),
                                      desc="pricing", unit="variant", disable=None):
                    priced[name] = row
    seconds = time.monotonic() - start
    for row in priced.values():
        row["predicted_cycles"] = row[LATENCIES[latency]]
    rows = [{"variant": name, "settings": settings, "values": axis_values(axes, settings),
             **priced[name]} for name, settings, _, _ in found]
    front = pareto(rows)
    for r in rows:
        r["pareto"] = r["variant"] in front
    result = {"schema_version": SCHEMA, "model": build["model_name"], "base": base_hw.name, "axes": axes,
              "mode": MODE, "latency": latency, "jobs": "ray" if ray_address is not None else jobs,
              "seconds": round(seconds, 1), "variants": rows, "distinct_zigzag_inputs": distinct}
    # The best `top` of the build's VLEN, one per ZigZag accelerator: variants that differ only in
    # energies run the same and would measure the same cycles (the least energy of them stands in).
    same_vlen = sorted(((name, data, key_of[name]) for name, _, hw, data in found
                        if hw.compute.vector_bits == base_hw.compute.vector_bits),
                       key=lambda x: (priced[x[0]]["predicted_cycles"], priced[x[0]]["predicted_energy_pj"], x[0]))
    seen: set[str] = set()
    chosen = []
    for name, data, key in same_vlen:
        if key not in seen and len(chosen) < top:
            seen.add(key)
            chosen.append((name, data))
    if top and chosen:
        # A previous report's figures stand for the same variants when one of them, drawn by the
        # build's bytes, measures again to the same cycles and energy: a changed build, tool or base
        # description would move it (a figure depends on the whole executable, docs/design.md).
        settings_of = {name: tuple(settings) for name, settings, _, _ in found}
        old = reusable_measurements(reuse, build["model_name"], base_hw.name) if reuse is not None else {}
        reused = {name: old[settings_of[name]] for name, _ in chosen if settings_of[name] in old}
        check = [random.Random(sha256_file(build["vmfb"])).choice(sorted(reused))] if reused else []
        to_measure = [(n, d) for n, d in chosen if n not in reused or n in check]
        log(f"explore: measuring {len(to_measure)} variants under qemu ({', '.join(n for n, _ in to_measure)})"
            + (f"; {len(reused) - len(check)} reused from {reuse}" if reused else ""))
        with tempfile.TemporaryDirectory(prefix="explore_measure_") as work:
            measured = measure(build, to_measure, Path(work), jobs)
        for name in check:
            if measured.get(name) != reused[name]:
                raise ExploreError(f"--reuse-measured {reuse}: {name} ({', '.join(settings_of[name])}) measures "
                                   f"{measured.get(name)} now, the report says {reused[name]}: measure all again")
        if reused:
            result["measured_reused"] = {"from": Path(reuse).name, "variants": len(reused),
                                         "measured_again_equal": check}
        measured = {**reused, **measured}
        by_name = {r["variant"]: r for r in rows}
        for name, _ in chosen:
            if name not in measured:
                raise ExploreError(f"{build['vmfb']}: perf.measure reported no run on {name}")
            by_name[name]["measured"] = measured[name]
        pts = [(by_name[n]["predicted_cycles"], by_name[n]["measured"]["memory_aware_cycles"]) for n, _ in chosen]
        result["measured_spearman"] = spearman([p for p, _ in pts], [m for _, m in pts])
        if len(chosen) >= 3:  # ZigZag as the co-design oracle, beside "bigger is better" (issue 77 item 5)
            items = [{**by_name[n], "hw": data, "measured_cycles": by_name[n]["measured"]["memory_aware_cycles"],
                      "measured_energy": by_name[n]["measured"]["energy_pj"]} for n, data in chosen]
            result["validation"] = {
                "cycles, ZigZag's latency": pairwise(items, "zigzag_cycles", "measured_cycles"),
                "cycles, ZigZag's traffic on the measurement's terms": pairwise(items, "measured_terms_cycles",
                                                                               "measured_cycles"),
                "cycles, the vector core's L1 traffic and ZigZag's cache and DRAM traffic on the measurement's "
                "terms": pairwise(items, "vector_core_cycles", "measured_cycles"),
                "energy": pairwise(items, "predicted_energy_pj", "measured_energy")}
    else:
        result["not_measured"] = ("none: measure_top is 0" if not top else
                                  f"none: no variant has the build's VLEN ({base_hw.compute.vector_bits})")
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:explore --", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", help="a zoo pipeline (resnet, mlp, ...): its tuned riscv build is explored")
    p.add_argument("space", type=Path, help="the space file (axes: KEY: [values])")
    p.add_argument("--index", type=Path, required=True, help="the zoo's explore index (//models:zoo_explore_index)")
    p.add_argument("--out", type=Path, default=None, help="report directory (default: explore_<build>)")
    p.add_argument("--measure-top", type=int, default=None, help=f"variants to measure (default: the space's, else {DEFAULT_TOP})")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="pricing processes")
    p.add_argument("--latency", choices=tuple(LATENCIES), default=DEFAULT_LATENCY,
                   help="what ranks the variants: the vector core's L1 and ZigZag's cache and DRAM traffic on "
                        "the measurement's terms, ZigZag's traffic on those terms, or ZigZag's own latency")
    p.add_argument("--ray-address", metavar="HOST:PORT", default=None,
                   help="price the variants as tasks on the Ray cluster whose head is here, or `local`: on a Ray "
                        "instance of this machine's own (choice/ray_engine.py; the measured variants run locally)")
    p.add_argument("--reuse-measured", type=Path, default=None, metavar="EXPLORE_JSON",
                   help="a previous report of the same build: its measured variants are reused once one of "
                        "them, measured again, matches (a re-pricing measures one variant, not all)")
    a = p.parse_args(argv)
    root = Path(os.environ.get("BUILD_WORKING_DIRECTORY", "."))
    space = a.space if a.space.is_absolute() else root / a.space
    out = a.out or Path(f"explore_{a.build}")
    out = out if out.is_absolute() else root / out
    with OneLineErrors("explore", out, (ExploreError, hwmod.HardwareError, RayEngineError)) as cli:
        if a.measure_top is not None and a.measure_top < 0:
            raise ExploreError(f"--measure-top {a.measure_top}: expected a whole number >= 0")
        if a.jobs < 1:
            raise ExploreError(f"--jobs {a.jobs}: expected at least 1")
        index = read_json(a.index, "explore index", kind=dict)
        if a.build not in index.get("builds", {}):
            shown = a.build if a.build.isprintable() else repr(a.build)  # an escape sequence printed raw
            raise ExploreError(f"{shown}: not a pipeline of the zoo (one of {', '.join(sorted(index.get('builds', {})))})")
        # The index holds paths relative to the runfiles' workspace directory, where it is `index`.
        base_dir = a.index.absolute().parents[len(Path(index["index"]).parts) - 1]
        build = {k: (str(base_dir / v) if k != "model_name" else v) for k, v in index["builds"][a.build].items()}
        build.update({k: str(base_dir / v) for k, v in index["tools"].items()})
        for key, path in build.items():  # a missing one was blamed on --out (issue 80)
            if key != "model_name":
                try:
                    check_input(path, key)
                except InputError as err:
                    raise ExploreError(f"{a.index}: the {key} it names: {err}") from None
        if os.path.lexists(out) and not out.is_dir():  # found only after pricing, as a FileExistsError
            raise ExploreError(f"--out {out}: exists and is not a directory")
        check_outputs({"--out": [out / "explore.json", out / "explore.md", out / "explore.png"]})
        reuse = None
        if a.reuse_measured is not None:
            reuse = a.reuse_measured if a.reuse_measured.is_absolute() else root / a.reuse_measured
            try:
                check_input(reuse, "--reuse-measured")
            except InputError as err:
                raise ExploreError(str(err)) from None
        result = explore(build, space, a.measure_top, a.jobs,
                         lambda msg: print(msg, file=sys.stderr, flush=True), a.latency, reuse, a.ray_address)
        documents = {out / "explore.json": json.dumps(result, indent=1, sort_keys=True) + "\n",
                     out / "explore.md": render(result), out / "explore.png": plot(result)}
        created = not os.path.lexists(out)
        try:
            out.mkdir(parents=True, exist_ok=True)
            write_together(documents)
        except BaseException:  # a full disk left the empty --out it had made (issue 80's probe)
            if created:
                with contextlib.suppress(OSError):
                    out.rmdir()
            raise
        front = sum(r["pareto"] for r in result["variants"])
        print(f"explore: {len(result['variants']):,} variants in {result['seconds']:.0f} s, {front} on the "
              f"Pareto front -> {out}/explore.md")
    return cli.exit_code


if __name__ == "__main__":
    sys.exit(main())
