"""HAL runtime module: copies the vmfb and writes `<name>.manifest.json` beside it.

The manifest holds entry points (input/output shapes and dtypes, read from the input
MLIR's public func signatures through IREE's bindings), the target triple and CPU
features, per-dispatch configuration with provenance (from codegen's report) and the
sha256 of every input file. No absolute paths, no timestamps.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import vmfb_executables
from common.codegen_report import CodegenReport, ReportError, load_codegen_report
from common.errors import OneLineErrors, first_line
from common.files import InputError, check_input, check_outputs, sha256_file, write_together
from common.targets import DEFAULT_STRATEGY, TUNED, TargetError, load_target

_DTYPES = {"f32": "float32", "f16": "float16", "f64": "float64", "bf16": "bfloat16", "i64": "int64",
           "i32": "int32", "i16": "int16", "i8": "int8", "i1": "bool", "ui8": "uint8"}


class ManifestError(RuntimeError):
    pass


def shipped_build(manifest: dict) -> str:
    """The build a manifest packages: its strategy choice's, else its target's strategy (tuned
    when IREE's code emission applied the analysis' tiles; a tiled strategy's build keeps its
    strategy's name): the name perf_index keys measurements by."""
    chosen = (manifest.get("strategy_choice") or {}).get("chosen")
    if chosen is not None:
        return chosen
    strategy = manifest["target"]["strategy"]
    return TUNED if manifest.get("tuned") and strategy == DEFAULT_STRATEGY else strategy


# The sha256 a hand-written fixture analysis records for a hardware description it has no file of.
NO_FILE_SHA256 = "0" * 64


def _tensor(ty) -> dict:
    from iree.compiler import ir

    ty = ty.maybe_downcast() if hasattr(ty, "maybe_downcast") else ty
    if isinstance(ty, ir.RankedTensorType):
        shape = [None if ty.is_dynamic_dim(i) else d for i, d in enumerate(ty.shape)]
        elt = str(ty.element_type)
        return {"shape": shape, "dtype": _DTYPES.get(elt, elt)}
    return {"shape": None, "dtype": str(ty)}


def entry_points(module: Path) -> list[dict]:
    from iree.compiler import ir

    ctx = ir.Context()
    data = module.read_bytes()
    try:
        mod = ir.Module.parse(data if module.suffix == ".mlirbc" else data.decode(), ctx)
    except Exception as err:  # noqa: BLE001 - MLIR raises a generic error
        raise ManifestError(f"{module}: cannot parse MLIR: {str(err).splitlines()[0]}") from None
    out = []
    for op in mod.body.operations:
        op = op.operation
        if op.name != "func.func" or "function_type" not in op.attributes:
            continue
        if "sym_visibility" in op.attributes and ir.StringAttr(op.attributes["sym_visibility"]).value != "public":
            continue
        if len(op.regions[0].blocks) == 0:
            continue  # declaration
        ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        out.append({"name": ir.StringAttr(op.attributes["sym_name"]).value,
                    "inputs": [_tensor(t) for t in ft.inputs], "outputs": [_tensor(t) for t in ft.results]})
    return out


def check_tuning_inputs_given(rep: CodegenReport, report: Path, analysis: Path | None,
                              hardware: Path | None) -> None:
    """A tuned build's report records the analysis it was compiled with and the hardware that
    analysis was made for: packaged without them (runtime.manifest without --analysis and
    --hardware), its manifest recorded neither and was accepted (issue 62). A hand-written
    analysis made for no description file records the hardware sha256 as all zeros
    (codegen/testdata, runtime/hal_runner/testdata: AnalysisInfo.hardware None): no --hardware
    can match it, so none is asked for."""
    for flag, given, kind, what in (
            ("--analysis", analysis, "analysis", "the analysis it was compiled with"),
            ("--hardware", hardware, "hardware", "the hardware description its analysis was made for")):
        if given is None and rep.inputs_sha256.get(kind, NO_FILE_SHA256) != NO_FILE_SHA256:
            raise ManifestError(f"{report}: a tuned build (it records the sha256 of its {kind}): give {flag}, "
                                f"{what}")


def build(vmfb: Path, report: Path, module: Path, target_path: Path, analysis: Path | None,
          hardware: Path | None, out_vmfb: Path, out_manifest: Path, extra: dict | None = None,
          tuning_inputs_required: bool = False) -> dict:
    """Checks the files belong together and writes the vmfb and its manifest (with `extra`
    keys, e.g. how a later stage chose this build) all or nothing. `tuning_inputs_required`
    (runtime.manifest's CLI): a tuned build needs its analysis and hardware. choice.choose's
    memory-aware choice packages a tuned build without them (its candidates carry perf reports,
    not analyses), so it is not required there."""
    for p in (vmfb, report, module, analysis, hardware):
        if p is not None:
            try:  # a directory or a device was "not found" (issue 80)
                check_input(p, "file")
            except InputError as err:
                raise ManifestError(str(err)) from None
    try:
        target = load_target(target_path)
    except TargetError as err:
        raise ManifestError(str(err)) from None
    try:
        rep = load_codegen_report(report)
    except ReportError as err:
        raise ManifestError(str(err)) from None
    if rep.failed is not None:  # codegen.compile --record-failure
        raise ManifestError(f"{vmfb}: IREE could not compile this build: {rep.failed}")
    dispatches = [d.model_dump(include={"name", "executable", "root_op", "pipeline", "status", "provenance",
                                        "reason", "applied", "adjustments", "landed_config"})
                  for d in rep.dispatches]
    if tuning_inputs_required:
        check_tuning_inputs_given(rep, report, analysis, hardware)
    if rep.target != target.name:
        raise ManifestError(f"{report}: compiled for target '{rep.target}', manifest target is '{target.name}'")
    inputs = {"module": sha256_file(module), "vmfb": sha256_file(vmfb), "report": sha256_file(report), "target": sha256_file(target_path)}
    if analysis is not None:
        inputs["analysis"] = sha256_file(analysis)
    if hardware is not None:
        inputs["hardware"] = sha256_file(hardware)
    _check_belong_together(rep, report, inputs, vmfb, module, analysis, target_path, hardware)
    manifest = {
        "vmfb": out_vmfb.name,
        "target": {"name": target.name, "triple": target.triple, "cpu": target.cpu,
                   "cpu_features": list(target.cpu_features), "vector_bits": target.vector_bits,
                   "runnable_on_host": target.runnable_on_host, "strategy": target.strategy},
        "tuned": rep.tuned,
        "entry_points": entry_points(module),
        "dispatches": dispatches,
        # What the runtime loads, the hal_runner runs and perf/ measures (checked equal to the
        # executables read back from the vmfb itself).
        "executables_sha256": rep.executables_sha256,
        "inputs_sha256": inputs,
        **(extra or {}),
    }
    write_together({out_manifest: json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                    out_vmfb: vmfb.read_bytes()})
    return manifest


def _check_belong_together(rep: CodegenReport, report: Path, inputs: dict, vmfb: Path, module: Path,
                           analysis: Path | None, target: Path, hardware: Path | None) -> None:
    """The vmfb is the one codegen's report describes, compiled from this module for this target
    file (with this analysis, made for this hardware), and IREE's runtime can load it: a
    manifest never pairs files from two builds, nor describes a build as for another target."""
    recorded = rep.inputs_sha256
    if rep.vmfb_sha256 != inputs["vmfb"]:
        raise ManifestError(f"{vmfb}: not the vmfb {report.name} describes (sha256 differs)")
    if recorded.get("module") != inputs["module"]:
        raise ManifestError(f"{module}: not the module {report.name} was compiled from (sha256 differs)")
    if recorded.get("target") != inputs["target"]:
        raise ManifestError(f"{target}: not the target file {report.name} was compiled for (sha256 differs; "
                            f"it was compiled for {rep.triple})")
    if analysis is not None and recorded.get("analysis") != inputs["analysis"]:
        raise ManifestError(f"{analysis}: not the analysis {report.name} was compiled with (sha256 differs)")
    if hardware is not None and recorded.get("hardware") != inputs["hardware"]:
        raise ManifestError(f"{hardware}: not the hardware {report.name}'s analysis was made for "
                            + ("(sha256 differs)" if recorded.get("hardware") else "(an untuned build has none)"))
    import iree.runtime as ireert

    try:
        ireert.VmModule.copy_buffer(ireert.VmInstance(), vmfb.read_bytes())
    except Exception as err:  # noqa: BLE001 - the runtime raises a generic error
        raise ManifestError(f"{vmfb}: IREE's runtime cannot load it: {first_line(err)}") from None
    try:
        embedded = vmfb_executables.sha256_set(vmfb_executables.embedded_executables(vmfb))
    except vmfb_executables.VmfbError as err:
        raise ManifestError(str(err)) from None
    if embedded != vmfb_executables.sha256_set(rep.executables_sha256):
        raise ManifestError(f"{vmfb}: the executables it embeds are not the ones {report.name} records")


def _chosen_candidate(choice: Path, candidates: list[list[str]]) -> tuple[dict, Path, Path | None]:
    """The strategy choice `choice` records (choice.choose --out-choice), and the target file and
    analysis (None for `none`) of the candidate it chose among `candidates` (STRATEGY TARGET
    ANALYSIS)."""
    from pydantic import ValidationError

    from common.errors import validation_error_where
    from common.files import InputError, read_json_text
    from common.tuning_schema import StrategyDecision

    try:
        decision = StrategyDecision.model_validate_json(read_json_text(choice, "a strategy decision"))
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise ManifestError(f"{choice}: not a strategy decision: field '{where}': {why}") from None
    except (InputError, ValueError) as err:
        raise ManifestError(first_line(err)) from None
    given = {c[0]: c for c in candidates}
    if len(given) != len(candidates):
        raise ManifestError("--candidate: a strategy is given twice")
    if decision.chosen not in given:
        raise ManifestError(f"{choice}: chose {decision.chosen}, which is not one of the candidates "
                            f"({', '.join(given) or 'none given'})")
    _, target, analysis = given[decision.chosen]
    return decision.strategy_choice, Path(target), None if analysis == "none" else Path(analysis)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m runtime.manifest", description=__doc__.splitlines()[0])
    p.add_argument("--vmfb", required=True, type=Path)
    p.add_argument("--report", required=True, type=Path, help="codegen's report.json")
    p.add_argument("--module", required=True, type=Path, help="the input MLIR (.mlirbc)")
    p.add_argument("--target", type=Path, help="the target file it was compiled for (without --choice)")
    p.add_argument("--analysis", type=Path)
    p.add_argument("--hardware", type=Path)
    p.add_argument("--choice", type=Path,
                   help="package a strategy choice: choice.choose's decision (--vmfb and --report are its "
                        "copies of the chosen build; its target and analysis are the chosen --candidate's, "
                        "--hardware is recorded with an analysis only), recorded as the manifest's strategy_choice")
    p.add_argument("--candidate", nargs=3, action="append", default=[], metavar=("STRATEGY", "TARGET", "ANALYSIS"),
                   help="--choice: each candidate's target file and analysis (or `none`)")
    p.add_argument("--out-vmfb", required=True, type=Path)
    p.add_argument("--out-manifest", required=True, type=Path)
    a = p.parse_args(argv)
    if a.choice is None and (a.target is None or a.candidate):
        p.error("--target is required, and --candidate needs --choice")
    if a.choice is not None and (a.target is not None or a.analysis is not None or not a.candidate):
        p.error("--choice takes the chosen --candidate's target and analysis: give --candidate, not --target or --analysis")
    with OneLineErrors("runtime.manifest: error", a.vmfb, (ManifestError,)) as cli:
        check_outputs({"--out-vmfb": a.out_vmfb, "--out-manifest": a.out_manifest},
                      {"--vmfb": a.vmfb, "--report": a.report, "--module": a.module, "--target": a.target,
                       "--analysis": a.analysis, "--hardware": a.hardware, "--choice": a.choice,
                       **{f"--candidate {c[0]}": [Path(x) for x in c[1:] if x != "none"] for c in a.candidate}})
        if a.choice is None:
            build(a.vmfb, a.report, a.module, a.target, a.analysis, a.hardware, a.out_vmfb, a.out_manifest,
                  tuning_inputs_required=True)
        else:
            # A strategy choice's memory-aware candidates carry perf reports, not analyses: a tuned
            # build among them is packaged without its analysis (as build() allows).
            record, target, analysis = _chosen_candidate(a.choice, a.candidate)
            build(a.vmfb, a.report, a.module, target, analysis, a.hardware if analysis is not None else None,
                  a.out_vmfb, a.out_manifest, extra={"strategy_choice": record})
    if cli.failed:
        return cli.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
