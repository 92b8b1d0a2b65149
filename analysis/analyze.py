"""analysis CLI: every dispatch's root op -> loop nest -> ZigZag or analytical tiles -> analysis.json.

    python -m analysis.analyze --module X.mlirbc --target common/targets/riscv64_rvv.yaml \\
        --hardware analysis/hardware/riscv_rvv.yaml --model-name resnet18 --out analysis.json

Progress goes to stderr; one summary line to stdout. Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

from analysis import dispatches as dsp
from analysis import hardware as hwmod
from analysis import roofline, tiles, zigzag_cost
from common.analysis_schema import Analysis, Cost, Dispatch, Loop, Operand, Summary
from common.files import atomic_write, sha256_file
from common.targets import TargetError, load_target


def _progress(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False,
                disable=not sys.stderr.isatty() and os.environ.get("ANALYSIS_PROGRESS") != "1")


def _zigzag_job(args):
    layer, acc, mapping, nloops = args
    return zigzag_cost.run(layer, Path(acc), Path(mapping), nloops)


def _register_elems(hw) -> int:
    return hw.level("register").size_bytes // 4


def _decide(info: dsp.DispatchInfo, hw, zz: dict | None, zz_err: str | None):
    """(provenance, reason, tiles, loop_order, cost, zigzag) for one dispatch."""
    nest = info.nest
    bounds = [b for _, b, _ in nest.loops]
    kinds = [k for _, _, k in nest.loops]
    lanes = hw.lanes_f32
    accesses = nest.terms
    reg_elems = _register_elems(hw)
    l1 = hw.level("l1").size_bytes
    l2 = hw.level("l2").size_bytes
    rl = roofline.cost(nest, hw)
    if not info.root_op:
        return ("iree-default", "no op with tiling levels in IREE's configuration: nothing for "
                "codegen to configure", None, None, Cost(**rl) if nest.loops else None, None)
    if nest.on_buffers:
        return ("iree-default", f"root {info.root_op} ({info.kind}) works on buffers (memref "
                "copy between bindings, IREE's buffer-ops pipeline): left to IREE", None, None,
                Cost(**rl), None)
    if info.root_op.startswith("linalg.softmax") or not info.root_op.startswith("linalg."):
        return ("iree-default", f"root {info.root_op} is not a linalg structured op: codegen "
                "cannot read its loops from indexing maps", None, None, Cost(**rl), None)
    if not nest.loops or any(b <= 0 for b in bounds):
        return ("iree-default", "root op has no static iteration domain", None, None, Cost(**rl),
                None)
    if info.kind in IREE_SHAPED_KINDS:
        # ZigZag still maps the layer when it can (recorded under `zigzag` for inspection),
        # but its tiles are not applied; the cost is the roofline of IREE's own schedule.
        mapped = (f"ZigZag mapped it ({zz['latency_cycles']:.0f} cycles predicted for its own "
                  "mapping) but " if zz is not None else "")
        return ("iree-default", f"{info.kind}: {mapped}{IREE_SHAPED_KINDS[info.kind]}", None, None,
                _per_core(Cost(**rl), hw, None), zz)
    reg = tiles.register_proposal(bounds, kinds, lanes, reg_elems)
    if zz is not None:
        prop = zigzag_cost.level_tiles(zz, len(bounds), zigzag_cost.relevant_loops(nest))
        # The register tile comes from the register-file model (tiles.register_proposal):
        # ZigZag's register level is per-lane scalar registers, so its register tiles
        # (e.g. 4x8x4 or 1x128x1) say nothing about vectors and accumulators.
        prop["register"] = reg
        # The accumulators are loaded and stored once per L1 reduction tile (IREE hoists them
        # out of the reduction loop only inside a cache tile), so an L1 reduction tile of a
        # few register steps (ZigZag gives 8 = one step for 512x49x4608) turns every step
        # into an accumulator round trip: at least MIN_L1_REDUCTION_STEPS register steps.
        prop["l1"] = [max(t, min(b, MIN_L1_REDUCTION_STEPS * r)) if k == "reduction" else t
                      for t, b, r, k in zip(prop["l1"], bounds, reg, kinds)]
        # every level holds the register tile (ZigZag's per-lane register level may have left
        # an L1/L2 tile of 2 rows, which would cut the 8 accumulator rows to 2)
        prop["l1"] = [max(a, b) for a, b in zip(prop["l1"], reg)]
        prop["l2"] = [max(a, b) for a, b in zip(prop["l2"], prop["l1"])]
        # ZigZag's L1 tile as the start; grown by exact divisors to half the L1 when ZigZag left
        # it underused, so the tile amortises loop overhead (the Quidditch small-tile trap).
        prop["l1"] = tiles.grow(bounds, kinds, [max(a, b) for a, b in zip(prop["l1"], reg)],
                                accesses, l1 // 2, outer=prop["l2"]
                                if all(a <= b for a, b in zip(prop["l1"], prop["l2"])) else None)
        legal = _distribute(kinds, bounds, tiles.cap_parallel_l1(
            kinds, tiles.legalize(bounds, kinds, prop, lanes, reg_elems)), hw)
        cost = _per_core(Cost(latency_cycles=zz["latency_cycles"], energy_pj=zz["energy_pj"],
                              mac_utilization=zz["mac_utilization"], model="zigzag"),
                         hw, tiles.workgroups(bounds, kinds, legal["l2"]))
        return ("zigzag", f"{info.kind} expressed as ZigZag layer; L1/L2 tiles from ZigZag's "
                "per-level mapping, register tile from the register-file model, l2 split into "
                "per-core workgroups, legalised", legal, zz["loop_order"], cost, zz)
    legal = _distribute(kinds, bounds, tiles.cap_parallel_l1(
        kinds, tiles.analytical_tiles(bounds, kinds, accesses, lanes, reg_elems, l1, l2)), hw)
    order = [n for n, _, _ in nest.loops]
    return ("analytical", f"{zz_err}; roofline cost, cache-filling tiles", legal, order,
            _per_core(Cost(**rl), hw, tiles.workgroups(bounds, kinds, legal["l2"])), None)


MIN_L1_REDUCTION_STEPS = 16

# Kinds whose tiles are left to IREE's defaults (provenance iree-default), and why: ZigZag's
# mapping has no basis for them (a depthwise conv or pooling is a per-channel window with no
# reuse across a reduction that ZigZag could exploit; a reduction is not a ZigZag layer), and
# measured on the host bench (ResNet-18 / MobileNetV2, one run) our tiles lost to IREE's on
# every one of them: max-pool 3.3x slower, global average pool 3.5x slower, depthwise convs
# slower. IREE's defaults for these are shaped by its ConvTileAndDecompose / reduction
# heuristics (unit output-row tiles, 8-wide channel or reduction vectors) which we would
# only copy.
IREE_SHAPED_KINDS = {
    "depthwise_conv": "per-channel windowed op: no cross-channel reuse for ZigZag to map; "
                      "IREE's default tiles measured faster",
    "pooling": "windowed reduction without weights: nothing for ZigZag to map; IREE's "
               "default tiles measured faster",
    "reduction": "not a ZigZag layer and memory bound; IREE's default tiles measured faster",
}


def _distribute(kinds, bounds, legal, hw):
    return tiles.distribute(bounds, kinds, legal, hw.cores)


def _per_core(cost: Cost, hw, groups: int | None) -> Cost:
    """ZigZag and the roofline model one core running the whole op; IREE runs `groups`
    workgroups on `hw.cores` cores, so the latency is that of the busiest core:
    ceil(groups / cores) / groups of the single-core latency (None: IREE's own split,
    assumed balanced over the cores)."""
    if hw.cores <= 1:
        return cost
    share = 1 / hw.cores if groups is None else -(-groups // hw.cores) / groups
    return cost.model_copy(update={"latency_cycles": float(f"{cost.latency_cycles * share:.9g}")})


def analyze(module: Path, target_path: Path, hw_path: Path, model_name: str, jobs: int
            ) -> tuple[Analysis, float]:
    start = time.monotonic()
    target = load_target(target_path)
    hw = hwmod.load_hardware(hw_path)
    if target.is_riscv and target.vector_bits != hw.compute.vector_bits:
        # Lanes, IREE's +zvl<N>b and qemu's vlen must be one number: accelerator_target derives it.
        raise dsp.AnalysisInputError(
            f"{target_path}: target {target.name} has vector_bits {target.vector_bits} but hardware "
            f"{hw.name} has {hw.compute.vector_bits}: derive the target from the hardware description "
            f"(python -m analysis.accelerator_target / accelerator_target in analysis/defs.bzl)")
    with tempfile.TemporaryDirectory(prefix="analysis_") as tmp:
        tmp = Path(tmp)
        print(f"analysis: compiling {module.name} to executable configurations", file=sys.stderr)
        configurations = dsp.compile_to_executable_configurations(module, target.compile_flags(),
                                                                  tmp)
        infos = dsp.read_dispatches(configurations)
        acc, mapping = hwmod.write_zigzag_inputs(hw, tmp / "zigzag")
        by_sig: dict[str, dsp.DispatchInfo] = {}
        for info in infos:
            by_sig.setdefault(info.signature(), info)
        zz_results: dict[str, dict] = {}
        zz_errors: dict[str, str] = {}
        jobs_in = []
        for sig in sorted(by_sig):
            info = by_sig[sig]
            try:
                layer = zigzag_cost.to_layer(info.kind, info.nest)
                jobs_in.append((sig, (layer, str(acc), str(mapping), len(info.nest.loops))))
            except zigzag_cost.NotExpressible as err:
                zz_errors[sig] = f"not a ZigZag layer: {err}"
        bar = _progress(len(jobs_in), "zigzag")
        if jobs > 1 and len(jobs_in) > 1:
            ctx = multiprocessing.get_context("fork")
            with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
                futs = {pool.submit(_zigzag_job, a): s for s, a in jobs_in}
                for fut in concurrent.futures.as_completed(futs):
                    _collect(fut, futs[fut], zz_results, zz_errors)
                    bar.update(1)
        else:
            for sig, a in jobs_in:
                try:
                    zz_results[sig] = _zigzag_job(a)
                except Exception as err:  # ZigZag rejects the layer: fall back, say why
                    zz_errors[sig] = f"ZigZag failed: {type(err).__name__}: {err}"
                bar.update(1)
        bar.close()
    out = []
    for info in infos:
        sig = info.signature()
        prov, reason, tl, order, cost, zz = _decide(info, hw, zz_results.get(sig),
                                                    zz_errors.get(sig))
        out.append(Dispatch(
            name=info.name, executable=info.executable, root_op=info.root_op, kind=info.kind,
            loops=[Loop(name=n, bound=b, kind=k) for n, b, k in info.nest.loops],
            operands=[Operand(role=r, indexing_map=m, element_type=e, shape=list(s))
                      for r, m, e, s in info.nest.operands],
            signature=sig, provenance=prov, reason=reason, tiles=tl, loop_order=order,
            cost=cost, zigzag=zz))
    summary = Summary(
        dispatches=len(out), distinct_ops=len(by_sig),
        zigzag=sum(d.provenance == "zigzag" for d in out),
        analytical=sum(d.provenance == "analytical" for d in out),
        iree_default=sum(d.provenance == "iree-default" for d in out))
    result = Analysis(model=model_name, target=target.name, hardware=hw.name,
                      hardware_sha256=sha256_file(hw_path), vector_lanes_f32=hw.lanes_f32,
                      dispatches=out, summary=summary)
    return result, time.monotonic() - start


def _collect(fut, sig, results, errors):
    try:
        results[sig] = fut.result()
    except Exception as err:  # ZigZag rejects the layer: fall back, say why
        errors[sig] = f"ZigZag failed: {type(err).__name__}: {err}"


def to_json(analysis: Analysis) -> str:
    return json.dumps(analysis.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.analyze", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True, type=Path, help="MLIR (bytecode or text), linalg")
    p.add_argument("--target", required=True, type=Path, help="common/targets/*.yaml")
    p.add_argument("--hardware", required=True, type=Path, help="analysis/hardware/*.yaml")
    p.add_argument("--model-name", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="ZigZag processes (default: min(2, cores))")
    args = p.parse_args(argv)
    if not args.module.is_file():
        print(f"{args.module}: module file not found", file=sys.stderr)
        return 2
    try:
        result, seconds = analyze(args.module, args.target, args.hardware, args.model_name,
                                  args.jobs)
    except (hwmod.HardwareError, TargetError, dsp.AnalysisInputError) as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 2
    text = to_json(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out, text)
    s = result.summary
    print(f"analysis {args.model_name}: {s.dispatches} dispatches, {s.distinct_ops} distinct ops, "
          f"{s.zigzag} zigzag-costed, {s.analytical} analytically costed, {s.iree_default} left "
          f"default, {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
