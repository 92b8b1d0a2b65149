"""analysis CLI: every dispatch's root op -> candidate tiles -> one cost model -> choice -> analysis.json.

    python -m analysis.analyze --module X.mlirbc --target common/targets/riscv64_rvv.yaml \\
        --hardware analysis/hardware/riscv_rvv.yaml \\
        --calibration analysis/calibration/riscv_rvv.json --model-name resnet18 --out analysis.json

Per dispatch: IREE's own default (read from its lowering_config) and the generators the op
kind registry (common/op_kinds.py) names propose complete tile sets; ZigZag runs once per
distinct op of the kinds it maps; the cost model (analysis/cost_model.py, coefficients from
the calibration) prices every candidate; the cheapest is compiled when it is predicted at
least the calibration's margin cheaper than IREE's default, else IREE's default is kept.

Progress goes to stderr; one summary line to stdout. Bad input: one line on stderr, exit 2
(SIGINT/SIGTERM/SIGHUP: one line, 128 + the signal).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import signal
import sys
import time
from math import prod
from pathlib import Path

from pydantic import ValidationError

from analysis import candidates as cands
from analysis import cost_model, roofline, zigzag_cost, zigzag_results
from common import op_kinds
from analysis import dispatches as dsp
from common import hardware as hwmod
from common.analysis_schema import (LEVEL_ROLES, Analysis, AnalysisOptions, Candidate, Cost,
                                    Dispatch, Loop, Operand, Summary)
from common.calibration_schema import Calibration
from common.core_models import core_model
from common.errors import OneLineErrors, validation_error_where
from common.files import InputError, check_input, check_outputs, sha256_file, write_together
from common.targets import TargetError, load_target
from common.scratch import scratch_directory


def _progress(total: int, desc: str, show: bool | None):
    """A tqdm bar on stderr: shown when `show`, or (None) when stderr is a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False,
                disable=not (sys.stderr.isatty() if show is None else show))


def _zigzag_job(args) -> tuple[str, dict | None, str | None]:
    """(signature, ZigZag's result or None, failure or None) for one distinct op."""
    sig, layer, acc, mapping, nloops, lpf_limit, lpf_merge, dump_root = args
    try:
        return sig, zigzag_cost.run(layer, Path(acc), Path(mapping), nloops, lpf_limit, lpf_merge,
                                    Path(dump_root)), None
    except zigzag_cost.ZigZagFailed as err:
        return sig, None, f"ZigZag failed: {err}"


def _worker_init() -> None:
    # Workers die at once on the SIGTERM Pool.terminate() sends, whatever the parent's handler
    # is. (A handler raising SystemExit instead once left an idle worker alive, its exception
    # lost, and Pool.join waited on it forever.) Their ZigZag dump directories are under the
    # analysis' temporary directory, removed after the workers are joined. SIGINT and SIGHUP
    # reach the whole process group (Ctrl-C, a closed terminal): the analysis ends the workers;
    # a worker running the inherited handler printed its own traceback.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _run_zigzag(jobs_in: list[tuple], jobs: int, show_progress: bool | None) -> list[tuple]:
    """ZigZag on every job, in `jobs` forked workers. On any exception or signal here the
    workers are terminated, not waited for (a ZigZag run can take a minute)."""
    bar = _progress(len(jobs_in), "zigzag", show_progress)
    try:
        if jobs <= 1 or len(jobs_in) <= 1:
            out = []
            for a in jobs_in:
                out.append(_zigzag_job(a))
                bar.update(1)
            return out
        pool = multiprocessing.get_context("fork").Pool(min(jobs, len(jobs_in)), _worker_init)
        try:
            out = []
            for r in pool.imap_unordered(_zigzag_job, jobs_in):
                out.append(r)
                bar.update(1)
            pool.close()
            return out
        finally:
            pool.terminate()
            pool.join()
    finally:
        bar.close()


def _candidates(ctx: cands.Context) -> tuple[list[cands.Proposal], str]:
    """IREE's default first, then every registered generator's proposals (deduplicated by
    tiles, first name kept); and the registry's note on the kind."""
    entry = op_kinds.op_kind(ctx.info.kind)
    props = []
    if ctx.default is not None:
        props.append(cands.Proposal("iree-default", "iree-default",
                                    cands.finalize(ctx, ctx.default),
                                    f"IREE's own lowering_config ({ctx.info.pipeline_name})"))
    for gen in entry.generators:
        props += cands.GENERATORS[gen](ctx)
    kept: dict[tuple, int] = {}
    out: list[cands.Proposal] = []
    for p in props:
        key = tuple(tuple(p.tiles[r]) for r in LEVEL_ROLES)
        if key in kept:  # same tiles as an earlier candidate: one entry, both names said
            first = out[kept[key]]
            out[kept[key]] = dataclasses.replace(
                first, reason=f"{first.reason} (also proposed as {p.name})")
            continue
        kept[key] = len(out)
        out.append(p)
    return out, entry.why


def _not_configurable(info: dsp.DispatchInfo) -> str | None:
    """Why codegen cannot write tiles for this dispatch (None when it can)."""
    nest = info.nest
    if not info.root_op:
        return "no op with tiling levels in IREE's configuration: nothing for codegen to configure"
    if nest.on_buffers:
        return (f"root {info.root_op} ({info.kind}) works on buffers (memref copy between "
                "bindings, IREE's buffer-ops pipeline): left to IREE")
    if info.root_op.startswith("linalg.softmax") or not info.root_op.startswith("linalg."):
        return (f"root {info.root_op} is not a linalg structured op: codegen cannot read its "
                "loops from indexing maps")
    if not nest.loops or any(b <= 0 for _, b, _ in nest.loops):
        return "root op has no static iteration domain"
    return None


def _decide(info: dsp.DispatchInfo, hw, zz: dict | None, zz_err: str | None,
            calibration: Calibration | None) -> dict:
    """Candidates -> one cost model -> choice, for one dispatch (fields of its Dispatch)."""
    blocked = _not_configurable(info)
    if blocked is not None:
        rl = roofline.cost(info.nest, hw) if info.nest.loops else None
        return dict(provenance="iree-default", reason=blocked, tiles=None,
                    cost=Cost(**rl) if rl else None, zigzag=None, candidates=[], chosen=None)
    bounds = [b for _, b, _ in info.nest.loops]
    kinds = [k for _, _, k in info.nest.loops]
    default = cands.iree_default_tiles(info.default_levels, bounds, kinds)
    ctx = cands.Context(info, hw, zz, zz_err, default)
    proposals, why = _candidates(ctx)
    coefficients = calibration.coefficients_for(info.kind) if calibration \
        else cost_model.UNCALIBRATED
    model = f"tile-cost:{calibration.hardware}" if calibration else "tile-cost:uncalibrated"
    priced = []
    for p in proposals:
        feats = cost_model.features(info.nest, p.tiles, hw)
        priced.append(Candidate(name=p.name, generator=p.generator, tiles=p.tiles, features=feats,
                                predicted_cycles=cost_model.predict(feats, coefficients),
                                reason=p.reason))
    priced.sort(key=lambda c: (c.predicted_cycles, c.name != "iree-default", c.name))
    by_name = {c.name: c for c in priced}
    base = by_name.get("iree-default")
    best = priced[0]
    calib_note = ""
    if base is None:
        chosen = best
        why_chosen = "IREE's lowering_config could not be read as tiles; cheapest candidate"
    elif calibration is None:
        # Unit coefficients predict nothing measured: no candidate is known to beat IREE.
        chosen = base
        why_chosen = "IREE's default kept: the cost model is uncalibrated for this hardware"
        calib_note = f" (uncalibrated prediction's best: {best.name})"
    elif best.name == "iree-default" or not cost_model.replaces_default(
            best.predicted_cycles, base.predicted_cycles, calibration.choice_margin):
        chosen = base
        why_chosen = (f"no candidate is predicted at least {calibration.choice_margin:.0%} "
                      "cheaper than IREE's default (best other: "
                      f"{next((c.name for c in priced if c is not base), 'none')})")
    else:
        chosen = best
        why_chosen = (f"predicted {base.predicted_cycles / best.predicted_cycles:.2f}x cheaper "
                      "than IREE's default")
    reason = f"{info.kind}: {why}; {len(priced)} candidates; chose {chosen.name}: {why_chosen}" \
        f"{calib_note}"
    if zz_err:
        reason += f"; {zz_err}"
    applied = chosen.name != "iree-default"
    macs = prod(bounds)
    if zz is not None:
        # Beside ZigZag's own energy (its per-lane registers, no instruction or static term), the
        # same prediction priced as a measurement is (perf/memory_model.py): what reports compare.
        zz = {**zz, "energy_on_measured_terms_pj": zigzag_cost.energy_on_measured_terms(zz, hw, macs)}
    ideal = macs / hw.macs_per_cycle
    cost = Cost(latency_cycles=chosen.predicted_cycles, model=model,
                mac_utilization=float(f"{min(1.0, ideal / chosen.predicted_cycles):.6g}")
                if chosen.predicted_cycles > 0 else None,
                energy_pj=zz["energy_on_measured_terms_pj"] if zz is not None and chosen.generator == "zigzag" else None)
    return dict(provenance=chosen.generator, reason=reason,
                tiles=chosen.tiles if applied else None,
                cost=cost, zigzag=zz, candidates=priced, chosen=chosen.name)


def load_calibration(path: Path) -> Calibration:
    try:
        cal = Calibration.model_validate_json(path.read_text())
    except OSError as err:
        raise dsp.AnalysisInputError(f"{path}: cannot read calibration: {err.strerror}") from None
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise dsp.AnalysisInputError(f"{path}: bad calibration: {where}: {why}") from None
    unknown_kinds = sorted(set(cal.kind_coefficients) - set(op_kinds.REGISTRY))
    if unknown_kinds:
        raise dsp.AnalysisInputError(f"{path}: coefficients for unknown op kind "
                                     f"'{unknown_kinds[0]}' (known: {', '.join(op_kinds.REGISTRY)})")
    for where, coefficients in [("coefficients", cal.coefficients)] + \
            [(f"kind_coefficients.{k}", c) for k, c in sorted(cal.kind_coefficients.items())]:
        missing = sorted(set(cost_model.FEATURES) - set(coefficients))
        extra = sorted(set(coefficients) - set(cost_model.FEATURES))
        if missing or extra:
            raise dsp.AnalysisInputError(
                f"{path}: calibration {where} do not match the cost model's features "
                f"(missing {missing}, unknown {extra}): recalibrate with //tools:calibrate")
        if any(v < 0 for v in coefficients.values()):
            raise dsp.AnalysisInputError(f"{path}: negative calibration coefficient in {where}")
    return cal


def analyze(module: Path, target_path: Path, hw_path: Path, model_name: str, jobs: int,
            calibration_path: Path | None = None, options: AnalysisOptions = AnalysisOptions(),
            show_progress: bool | None = None, recorded: dict[str, dict] | None = None,
            zigzag_log: zigzag_results.ZigZagLog | None = None) -> tuple[Analysis, float]:
    """The analysis and its seconds. ZigZag runs whose key is in `recorded` (committed results,
    analysis/zigzag_results.py) are replayed, the others run; `zigzag_log` (if given) gets every
    entry used and the keys that ran."""
    start = time.monotonic()
    recorded = recorded or {}
    zigzag_log = zigzag_log if zigzag_log is not None else zigzag_results.ZigZagLog()
    target = load_target(target_path)
    hw = hwmod.load_hardware(hw_path)
    calibration = load_calibration(calibration_path) if calibration_path else None
    if calibration is not None and calibration.hardware != hw.name:
        raise dsp.AnalysisInputError(
            f"{calibration_path}: calibration is for hardware '{calibration.hardware}', not "
            f"'{hw.name}'")
    isa = target.triple.split("-", 1)[0]
    if hw.model_core is not None and core_model(hw.model_core).isa != isa:
        # The tiles would be for one machine's lanes and caches, the code for another's.
        raise dsp.AnalysisInputError(
            f"{target_path}: target {target.name} emits {isa} code, but hardware {hw.name} "
            f"({hw_path}) is a {core_model(hw.model_core).isa} core ({hw.model_core})")
    if target.vector_bits != hw.compute.vector_bits:
        # Lanes, IREE's +zvl<N>b and qemu's vlen must be one number: accelerator_target derives it.
        raise dsp.AnalysisInputError(
            f"{target_path}: target {target.name} has vector_bits {target.vector_bits} but hardware "
            f"{hw.name} has {hw.compute.vector_bits}: " + (
                "derive the target from the hardware description (python -m "
                "analysis.accelerator_target / accelerator_target in analysis/defs.bzl)"
                if target.is_riscv else "the analysis' lanes would not be the code's"))
    with scratch_directory("analysis_") as tmp:
        tmp = Path(tmp)
        if show_progress or (show_progress is None and sys.stderr.isatty()):
            # Progress only where someone watches: a failing run's stderr is its one error line.
            print(f"analysis: compiling {module.name} to executable configurations", file=sys.stderr)
        configurations = dsp.compile_to_executable_configurations(target.compile_input(module), target.compile_flags(),
                                                                  tmp, target_path)
        infos = dsp.read_dispatches(configurations)
        if not infos:
            raise dsp.AnalysisInputError(
                f"{module}: no dispatches: IREE compiles nothing of this module (empty, or its "
                "results are constants), so there is nothing to analyse")
        acc, mapping = hwmod.write_zigzag_inputs(hw, tmp / "zigzag")
        zigzag_log.hardware = hw.name
        by_sig: dict[str, dsp.DispatchInfo] = {}
        for info in infos:
            by_sig.setdefault(info.signature(), info)
        zz_results: dict[str, dict] = {}
        zz_errors: dict[str, str] = {}
        jobs_in = []
        keys: dict[str, str] = {}  # signature -> its ZigZag run's key (analysis/zigzag_results.py)
        accelerator_yaml, mapping_yaml = acc.read_text(), mapping.read_text()
        for sig in sorted(by_sig):
            info = by_sig[sig]
            if not op_kinds.op_kind(info.kind).zigzag or _not_configurable(info):
                continue
            if not options.zigzag:
                zz_errors[sig] = "ZigZag not run (--no-zigzag)"
                continue
            try:
                layer = zigzag_cost.to_layer(info.kind, info.nest)
            except zigzag_cost.NotExpressible as err:
                zz_errors[sig] = f"not a ZigZag layer: {err}"
                continue
            keys[sig] = zigzag_results.job_key(layer, accelerator_yaml, mapping_yaml, len(info.nest.loops),
                                               options.zigzag_lpf_limit, options.zigzag_lpf_merge)
            if keys[sig] not in recorded:
                jobs_in.append((sig, layer, str(acc), str(mapping), len(info.nest.loops),
                                options.zigzag_lpf_limit, options.zigzag_lpf_merge, str(tmp)))
        ran = []
        for sig, result, failure in _run_zigzag(jobs_in, jobs, show_progress):
            entry = {"result": zigzag_results.normalized(result)}
            if failure is not None:
                entry["failure"] = failure.replace(str(tmp), "<tmp>")
            zigzag_log.entries[keys[sig]] = entry
            ran.append(keys[sig])
        zigzag_log.live = sorted(ran)
        for sig in sorted(keys):
            entry = zigzag_log.entries.setdefault(keys[sig], recorded.get(keys[sig]))
            result, failure = entry.get("result"), entry.get("failure")
            if result is not None:
                zz_results[sig] = result
                continue
            if not options.allow_zigzag_failure:
                names = [i.name for i in infos if i.signature() == sig]
                raise dsp.AnalysisInputError(
                    f"dispatch {names[0]}{f' (and {len(names) - 1} more)' if len(names) > 1 else ''}"
                    f": {failure} (--allow-zigzag-failure prices it without ZigZag's candidate)")
            zz_errors[sig] = failure
    out = []
    for info in infos:
        sig = info.signature()
        decided = _decide(info, hw, zz_results.get(sig), zz_errors.get(sig), calibration)
        out.append(Dispatch(
            name=info.name, executable=info.executable, root_op=info.root_op, kind=info.kind,
            loops=[Loop(name=n, bound=b, kind=k) for n, b, k in info.nest.loops],
            operands=[Operand(role=r, indexing_map=m, element_type=e, shape=list(s))
                      for r, m, e, s in info.nest.operands],
            signature=sig, **decided))
    summary = Summary.of(out, distinct_ops=len(by_sig))
    result = Analysis(model=model_name, target=target.name, hardware=hw.name,
                      hardware_sha256=sha256_file(hw_path), vector_lanes_f32=hw.lanes_f32,
                      calibration=calibration_path.name if calibration_path else None,
                      calibration_sha256=sha256_file(calibration_path) if calibration_path else None,
                      options=options, dispatches=out, summary=summary)
    return result, time.monotonic() - start


def to_json(analysis: Analysis) -> str:
    return json.dumps(analysis.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.analyze", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True, type=Path, help="MLIR (bytecode or text), linalg")
    p.add_argument("--target", required=True, type=Path, help="common/targets/*.yaml")
    p.add_argument("--hardware", required=True, type=Path, help="analysis/hardware/*.yaml")
    p.add_argument("--model-name", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--calibration", type=Path,
                   help="analysis/calibration/<hardware>.json (cost model coefficients); "
                        "without it the cost model runs uncalibrated and says so")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="ZigZag processes (default: min(2, cores)); does not change the output")
    defaults = AnalysisOptions()
    p.add_argument("--zigzag-lpf-limit", type=int, default=defaults.zigzag_lpf_limit,
                   help="LOMA's loop prime factor limit (recorded in analysis.json)")
    p.add_argument("--zigzag-lpf-merge", choices=zigzag_cost.LPF_MERGE_MODES,
                   default=defaults.zigzag_lpf_merge,
                   help="which prime factors LOMA merges to reach the limit: 'largest' (ours) "
                        "or 'smallest' (ZigZag's own); recorded in analysis.json")
    p.add_argument("--allow-zigzag-failure", action="store_true",
                   help="price a dispatch ZigZag fails on without ZigZag's candidate (recorded, "
                        "with the failure in its reason) instead of stopping")
    p.add_argument("--zigzag", action=argparse.BooleanOptionalAction, default=defaults.zigzag,
                   help="--no-zigzag: no ZigZag candidates (recorded in analysis.json); for an analysis "
                        "that keeps IREE's defaults anyway, where they would only be evaluation")
    p.add_argument("--zigzag-results", type=Path, nargs="*", default=[],
                   help="analysis/zigzag_results/*.json: recorded ZigZag runs, replayed where their key matches")
    p.add_argument("--zigzag-log", type=Path,
                   help="writes every ZigZag entry used, and which ran here (analysis/zigzag_results.py)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    args = p.parse_args(argv)
    # SIGINT/SIGTERM/SIGHUP unwind like Ctrl-C (common/errors.py): workers terminated, temporary
    # directories removed, one line.
    with OneLineErrors("analysis", args.module, (hwmod.HardwareError, TargetError, dsp.AnalysisInputError,
                                                 zigzag_results.ZigZagResultsError)) as cli:
        check_outputs({"--out": args.out}, {"--module": args.module, "--target": args.target,
                                            "--hardware": args.hardware, "--calibration": args.calibration})
        try:  # a directory or a device was "not found" (issue 80)
            check_input(args.module, "module file")
        except InputError as err:
            raise dsp.AnalysisInputError(str(err)) from None
        # Both ran on as if valid (issue 62 probe): --jobs 0 or -2, and an empty name recorded as the model's.
        if args.jobs < 1:
            raise dsp.AnalysisInputError(f"--jobs {args.jobs}: a number of ZigZag processes is at least 1")
        if not args.model_name.strip():
            raise dsp.AnalysisInputError("--model-name: a model name is not empty")
        if not args.model_name.isprintable():
            # A newline or tab was recorded as the model's name, breaking every one-line message and
            # Markdown heading that names the model (issue 62, own probe).
            raise dsp.AnalysisInputError(f"--model-name {args.model_name!r}: a model name is printable text "
                                         "(no newline, tab or other control character)")
        try:
            options = AnalysisOptions(zigzag_lpf_limit=args.zigzag_lpf_limit,
                                      zigzag_lpf_merge=args.zigzag_lpf_merge,
                                      allow_zigzag_failure=args.allow_zigzag_failure,
                                      zigzag=args.zigzag)
        except ValidationError as err:
            where, why = validation_error_where(err)
            raise dsp.AnalysisInputError(f"option {where}: {why}") from None
        recorded = zigzag_results.load(args.zigzag_results)
        zigzag_log = zigzag_results.ZigZagLog()
        result, seconds = analyze(args.module, args.target, args.hardware, args.model_name,
                                  args.jobs, args.calibration, options, args.progress, recorded, zigzag_log)
        outputs = {args.out: to_json(result)}
        if args.zigzag_log is not None:
            outputs[args.zigzag_log] = zigzag_log.text()
        write_together(outputs)
    if cli.failed:
        return 2 if cli.exit_code == 1 else cli.exit_code
    s = result.summary
    print(f"analysis {args.model_name}: {s.dispatches} dispatches, {s.distinct_ops} distinct ops, "
          f"{s.candidates} candidates; chosen: {s.zigzag} zigzag, {s.analytical} analytical, "
          f"{s.search} search, {s.iree_default} IREE default; ZigZag: {len(zigzag_log.entries) - len(zigzag_log.live)} "
          f"replayed, {len(zigzag_log.live)} run; {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
