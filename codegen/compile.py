"""Annotated compile: IREE with the analysis' tiles injected as each dispatch's lowering_config.

Route (reaches every dispatch, convolutions included):
  1. iree-compile --compile-to=executable-configurations   (IREE picks its defaults)
  2. rewrite the root op's lowering_config of each analysed dispatch (IREE Python bindings)
  3. iree-compile --compile-from=executable-sources on the rewritten IR -> vmfb, dumping
     the configurations codegen actually used. IREE's strategy selection keeps a
     lowering_config/translation_info that is already present, so this compiles exactly
     the rewritten configs; `--compile-from=executable-configurations` compiles the same
     configs but skips the phase that writes `--iree-hal-dump-executable-configurations-to`
     (measured with IREE 3.13: no dump at all), so it could not prove anything.
  4. check every applied config landed exactly; fail otherwise.

Without --analysis the module is compiled with IREE's own tiles (the same target flags).

The one entry point: `compile_module(module, CompileOptions, out) -> Build`. The CLI below,
choice's candidates, perf's rounds, the dispatch tests' references and check_dispatches all
compile through it; a failure is common.iree_tools.CompileError, keeping IREE's diagnostics.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import shutil
import sys
from pathlib import Path

from pydantic import ValidationError

from common.analysis_schema import Analysis
from common.build import Build, CompileOptions
from common.codegen_report import CodegenReport
from common.errors import OneLineErrors, first_line, validation_error_where
from common.files import InputError, check_input, check_new_directory, check_outputs, read_json_text, sha256_file, write_together
from common.iree_tools import CompileError, IreeCompileError, executable_configurations, iree_compile
from common.module_rewrites import RewriteError
from common.targets import IreeTarget, TargetError, load_target
from common.scratch import scratch_directory


TARGETS_IR = "targets.mlir"  # run_codegen(targets_ir=True): the executable-targets IR
CODE_LLVM_IR = ".optimized.ll"  # run_codegen(intermediates=True): per executable, beside its .s
# Written by iree-compile into the work directory when a pass fails (kept by --keep-temps).
REPRODUCER = "reproducer.mlir"


def load_analysis(path: Path) -> Analysis:
    try:
        return Analysis.model_validate_json(read_json_text(path, "analysis file", "malformed analysis"))
    except InputError as err:  # not found, not a file, not UTF-8, not JSON, a key given twice
        raise CompileError(str(err)) from None
    except ValidationError as err:  # also JSON syntax: pydantic reports it at the top level
        where, why = validation_error_where(err)
        raise CompileError(f"{path}: malformed analysis at '{where}': {why}") from None
    except ValueError as err:  # not UTF-8
        raise CompileError(f"{path}: malformed analysis: {first_line(err)}") from None


def check_analysis_fits(analysis: Analysis, target: IreeTarget, path: Path) -> None:
    if analysis.target != target.name:
        raise CompileError(f"{path}: analysis was made for target '{analysis.target}', "
                           f"but the compile target is '{target.name}'")
    lanes = target.vector_bits // 32
    if analysis.vector_lanes_f32 != lanes:
        raise CompileError(f"{path}: analysis assumes {analysis.vector_lanes_f32} f32 lanes, "
                           f"target '{target.name}' has {lanes}")


def apply_analysis(module, analysis: Analysis | None, lanes: int,
                   allow_untuned_dispatches: bool = False) -> list[dict]:
    """Rewrites the live configurations module; returns the report's per-dispatch entries.

    A dispatch the analysis does not cover, or covers for another executable or loop nest, is
    an error naming it, unless `allow_untuned_dispatches`: then it keeps IREE's default and its
    report entry says why."""
    from codegen import configs

    ctx = module.context
    found = configs.dispatches(module)
    by_name = {d.name: d for d in found}
    wanted = {d.name: d for d in analysis.dispatches} if analysis else {}
    missing = sorted(set(wanted) - set(by_name))
    if missing:
        raise CompileError(f"analysis dispatch '{missing[0]}' is not a dispatch of this module "
                           f"({len(missing)} missing): analysis made for another module or other flags")
    entries = []
    for d in found:
        entry = {
            "name": d.name, "executable": d.executable, "root_op": d.root_op_name,
            "pipeline": d.pipeline, "loops": [{"bound": l.bound, "kind": l.kind} for l in d.loops],
        }
        a = wanted.get(d.name)
        mismatch = None
        if analysis is None:
            entry.update(status="default", provenance="iree-default", reason="untuned build: no analysis")
        elif a is None:
            mismatch = "not in the analysis"
        elif a.executable != d.executable:
            mismatch = f"analysis executable '{a.executable}' != '{d.executable}'"
        elif not d.loops and a.tiles is None:
            # A root codegen cannot configure (no indexing maps even generalised:
            # iree_linalg_ext.scan) has no loops here, and the analysis, which gives it a
            # parallel domain to price, keeps IREE's default: nothing is applied either way.
            if a.root_op != d.root_op_name:
                mismatch = f"root op mismatch: analysis {a.root_op} vs {d.root_op_name}"
        elif [(l.bound, l.kind) for l in a.loops] != [(l.bound, l.kind) for l in d.loops]:
            mismatch = (f"loop mismatch: analysis {[(l.bound, l.kind) for l in a.loops]} vs root op "
                        f"{[(l.bound, l.kind) for l in d.loops]}")
        if mismatch is not None:
            if not allow_untuned_dispatches:
                raise CompileError(f"dispatch '{d.name}': {mismatch}: analysis made for another "
                                   "module or other flags (--allow-untuned-dispatches keeps IREE's "
                                   "default for it)")
            entry.update(status="default", provenance="iree-default",
                         reason=f"{mismatch}: IREE default kept (--allow-untuned-dispatches)")
        elif analysis is None:
            pass
        elif a.provenance == "iree-default" or a.tiles is None:
            entry.update(status="default", provenance="iree-default", reason=a.reason)
        else:
            tiles, notes = configs.pipeline_adjust(d, dict(a.tiles), lanes)
            levels = configs.map_levels(tiles, d.loops)
            attr = configs.config_attr(levels, ctx)
            d.root.attributes["lowering_config"] = attr
            others = []
            for op in d.others:
                sub = configs.other_op_config(d, op, levels)
                if sub is None:
                    del op.attributes["lowering_config"]
                    others.append({"op": op.name, "config": "dropped"})
                else:
                    op.attributes["lowering_config"] = configs.config_attr(sub, ctx)
                    others.append({"op": op.name, "config": sub})
            entry.update(status="applied", provenance=a.provenance, reason=a.reason,
                         analysis_tiles=a.tiles, adjustments=notes, applied=levels,
                         applied_attr=str(attr), other_ops=others)
        entries.append(entry)
    return entries


@dataclasses.dataclass
class TunedSources:
    """The rewritten executable-configurations IR of a module (steps 1-2)."""

    path: Path  # <workdir>/tuned.mlir: compile it with `flags` + --compile-from=executable-sources
    flags: list[str]  # the iree-compile flags of every phase (the target's own, nothing else)
    entries: list[dict]  # per-dispatch report entries (status, applied levels, ...)
    target: IreeTarget
    analysis: Analysis | None
    reproducer: bool = False  # a failing pass writes <workdir>/reproducer.mlir


def tuned_sources(module: Path, analysis: Path | Analysis | None, target: Path | IreeTarget, workdir: Path,
                  allow_untuned_dispatches: bool = False, reproducer: bool = False) -> TunedSources:
    """Steps 1-2 of the compile: IREE's configurations with the analysis' tiles written in.

    Writes <workdir>/cfg.mlir (IREE's defaults) and <workdir>/tuned.mlir (rewritten).
    The one compile path: IREE's default build (`analysis` None), a tuned build and every
    strategy's build differ only in the configs written here and in the target's own flags.
    Compiling tuned.mlir with `.flags` and `--compile-from=executable-sources` is exactly
    what compile_module does; `check_landed` then proves the configs were used.
    `reproducer=True` makes a failing pass write <workdir>/reproducer.mlir (costs a copy of the
    IR up front, so only for --keep-temps).
    """
    from iree.compiler import ir

    from codegen import configs

    module = Path(module)
    try:  # a directory or a device was "not found" (issue 80)
        check_input(module, "module file")
    except InputError as err:
        raise CompileError(str(err)) from None
    target_name = f"target '{target.name}'" if isinstance(target, IreeTarget) else str(target)
    if not isinstance(target, IreeTarget):
        try:
            target = load_target(Path(target))
        except TargetError as err:
            raise CompileError(str(err)) from None
    if analysis is not None and not isinstance(analysis, Analysis):
        path = Path(analysis)
        analysis = load_analysis(path)
        check_analysis_fits(analysis, target, path)
    elif analysis is not None:
        check_analysis_fits(analysis, target, Path(f"<analysis of {analysis.model}>"))
    flags = target.compile_flags()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    repro = [f"--mlir-pass-pipeline-crash-reproducer={workdir / REPRODUCER}"] if reproducer else []
    try:
        compiled_module = target.compile_input(module)  # the module, or its rewrite for the strategy
    except RewriteError as err:
        raise CompileError(str(err)) from None
    try:
        result = executable_configurations(compiled_module, [*flags, *repro], workdir / "cfg.mlir",
                                           "configurations")
    except IreeCompileError as err:
        # Flags iree-compile refuses (an unknown cpu or flag) are the target's fault, not the module's.
        raise CompileError(f"{target_name}: {err}" if err.of_flags else str(err), err.diagnostics) from None
    unknown = result.unknown_cpu_features()
    if unknown:
        # iree-compile only warns, and the build would silently be for another CPU.
        raise CompileError(f"{target_name}: cpu_features {', '.join(unknown)}: not a feature LLVM "
                           f"knows for {target.triple}")
    if result.unknown_cpus():
        raise CompileError(f"{target_name}: cpu {result.unknown_cpus()[0]}: not a processor LLVM knows "
                           f"for {target.triple}")
    ctx = ir.Context()
    mod = configs.parse((workdir / "cfg.mlir").read_text(), ctx)
    entries = apply_analysis(mod, analysis, target.vector_bits // 32, allow_untuned_dispatches)
    (workdir / "tuned.mlir").write_text(configs.strip_text(mod))
    return TunedSources(workdir / "tuned.mlir", flags, entries, target, analysis, reproducer)


def check_landed(entries: list[dict], dump_dir: Path, ctx=None) -> None:
    """Fills each entry's landed_* fields from a `--iree-hal-dump-executable-configurations-to`
    directory; raises CompileError when a config codegen wrote (the root op's, and each other
    configured op's that was not dropped) is not exactly what codegen used."""
    from iree.compiler import ir

    from codegen import configs

    ctx = ctx or ir.Context()
    used = configs.dumped_configs(dump_dir, ctx)
    bad = []
    for e in entries:
        got = used.get(e["name"])
        e["landed_config"] = str(got[1]) if got and got[1] is not None else None
        e["landed_pipeline"] = got[2] if got else None
        if e["status"] != "applied":
            continue
        e["landed"] = bool(got and got[1] is not None and got[1] == configs.config_attr(e["applied"], ctx))
        if not e["landed"]:
            bad.append((e["name"], f"codegen used {got[1] if got else None}"))
            continue
        # Other configured ops (the accumulator's fill, a fused consumer), matched in order by
        # op name. One IREE still configures must carry exactly what codegen wrote; one IREE
        # rewrote away or left unconfigured (the root's config then drives it) is recorded.
        remaining = list(got[3])
        for other in e.get("other_ops", []):
            if other["config"] == "dropped":
                continue
            want = configs.config_attr(other["config"], ctx)
            hit = next((i for i, (name, _) in enumerate(remaining) if name == other["op"]), None)
            if hit is None:
                other["landed"] = "not configured in what codegen used"
                continue
            if remaining[hit][1] != want:
                bad.append((e["name"], f"{other['op']}: codegen used {remaining[hit][1]}"))
                break
            other["landed"] = True
            remaining.pop(hit)
    if bad:
        raise CompileError(f"config did not land for {len(bad)} dispatch(es), first '{bad[0][0]}': "
                           f"{bad[0][1]}")


def run_codegen(tuned: TunedSources, targets_ir: bool = False, intermediates: bool = False) -> Path:
    """Step 3: compiles <workdir>/tuned.mlir to <workdir>/out.vmfb and, from the same
    invocation, each executable the vmfb embeds into <workdir>/bin (`executables`); returns the
    configurations dump dir <workdir>/dump (what codegen actually used, for `check_landed`).

    `targets_ir`: the compile runs in two halves, the first ending at executable-targets and
    written to <workdir>/targets.mlir, whose host program holds every dispatch's materialized
    workgroup count (what check_dispatches and the code model read), so nobody compiles the
    dispatches a second time to get it; it keeps the locations, so the libraries are the bytes
    one call emits. `intermediates`: IREE's per-executable LLVM IR and assembly in
    <workdir>/inter (the code model's input). The product compile keeps one call: it needs no
    host IR and would print and parse all of it."""
    workdir = tuned.path.parent
    # Relative paths from inside the work dir: IREE records source file names in
    # the vmfb's debug info, which must not depend on where the build ran.
    configured = ["--iree-hal-dump-executable-configurations-to=dump"]
    if tuned.reproducer:
        configured += [f"--mlir-pass-pipeline-crash-reproducer={REPRODUCER}"]
    emitted = ["--iree-hal-dump-executable-binaries-to=bin"]
    if intermediates:
        emitted += ["--iree-hal-dump-executable-intermediates-to=inter"]
    if not targets_ir:
        iree_compile([tuned.path.name, *tuned.flags, "--compile-from=executable-sources", *configured, *emitted,
                  "-o", "out.vmfb"], "codegen", cwd=workdir)
        return workdir / "dump"
    iree_compile([tuned.path.name, *tuned.flags, "--compile-from=executable-sources",
              "--compile-to=executable-targets", "--mlir-print-debuginfo", *configured, "-o", TARGETS_IR],
             "codegen", cwd=workdir)
    iree_compile([TARGETS_IR, *tuned.flags, "--compile-from=executable-targets", *emitted, "-o", "out.vmfb"],
             "codegen", cwd=workdir)
    return workdir / "dump"


def executables(workdir: Path) -> dict[str, bytes]:
    """The executables `run_codegen` dumped (file name -> bytes), each checked to be inside the
    vmfb it wrote: the bytes a runner loads are the bytes the vmfb ships."""
    vmfb = (workdir / "out.vmfb").read_bytes()
    found = {p.name: p.read_bytes() for p in sorted((workdir / "bin").iterdir())}
    if not found:
        raise CompileError("IREE dumped no executable binaries")
    for name, data in found.items():
        if data not in vmfb:
            raise CompileError(f"{name}: the dumped executable is not the one embedded in the vmfb")
    return found


def executables_sha256(found: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(found.items())}


def dumped_configs_text(dump_dir: Path, ctx=None) -> str:
    """The --out-configs text: every dumped configuration, location-free, in name order."""
    from iree.compiler import ir

    from codegen import configs

    ctx = ctx or ir.Context()
    return "\n".join(f"// ---- {p.name}\n" + configs.strip_text(configs.parse(p.read_text(), ctx))
                     for p in sorted(Path(dump_dir).glob("*.mlir")))


def compile_module(module: Path, options: CompileOptions, out: Path | Build) -> Build:
    """The one compile path: IREE with `options.analysis`' tiles written in (IREE's defaults
    without one), every config proven to have landed. Writes the build all or nothing, into the
    directory `out` under Build.in_directory's names or at the paths of the Build `out` (whose
    options must be `options`), and returns it. Raises CompileError (IREE's diagnostics in
    `.diagnostics` when iree-compile refused).

    `options.keep_temps`: on failure, the work directory (IREE's configurations, the rewritten IR,
    the reproducer of a failing pass) and IREE's full diagnostics are kept there, and the error
    says so. It must be new or empty (checked before compiling): nothing of anyone else's is
    overwritten or deleted there."""
    if isinstance(out, Build):
        if out.options != options:
            raise ValueError(f"compile_module: the build's options {out.options} are not {options}")
        if out.report is None or out.configs is None:
            raise ValueError("compile_module: a build to write names its report and configs files")
        build = out
    else:
        Path(out).mkdir(parents=True, exist_ok=True)
        build = Build.in_directory(Path(out), options)
    if options.keep_temps is not None:
        check_new_directory(options.keep_temps, "--keep-temps")
    with scratch_directory("codegen.") as tmp:
        try:
            _compile_in(Path(tmp), Path(module), build)
        except CompileError as err:
            keep_temps = options.keep_temps
            if keep_temps is None:
                raise
            keep_temps = Path(keep_temps)
            shutil.copytree(tmp, keep_temps, dirs_exist_ok=True)  # new or empty: nothing replaced
            if err.diagnostics:
                (keep_temps / "diagnostics.txt").write_text(err.diagnostics)
            raise CompileError(f"{err} (work directory and IREE's diagnostics kept in {keep_temps})",
                               err.diagnostics) from None
    return build


def _compile_in(tmp: Path, module: Path, build: Build) -> None:
    from iree.compiler import ir

    options = build.options
    # tuned_sources checks the module, loads the target and the analysis and checks they fit.
    tuned = tuned_sources(module, options.analysis, options.target, tmp,
                          allow_untuned_dispatches=options.allow_untuned_dispatches,
                          reproducer=options.keep_temps is not None)
    target, analysis, flags, entries = tuned.target, tuned.analysis, tuned.flags, tuned.entries
    lanes = target.vector_bits // 32

    # Both halves of one compile give the vmfb of a single call, byte for byte (checked on
    # mlp_batch32, 2026-11-29): the layout reads the first half's host program.
    dump = run_codegen(tuned, targets_ir=options.code or options.layout, intermediates=options.code)
    shipped = executables(tmp)

    # Proof: what codegen used must be exactly what was written.
    ctx = ir.Context()
    check_landed(entries, dump, ctx)
    dumped_text = dumped_configs_text(dump, ctx)

    report = {
        "target": target.name, "triple": target.triple, "cpu": target.cpu,
        "cpu_features": list(target.cpu_features), "vector_lanes_f32": lanes,
        "compile_flags": flags, "strategy": target.strategy, "tuned": analysis is not None,
        "model": analysis.model if analysis else None,
        "hardware": analysis.hardware if analysis else None,
        "inputs_sha256": {"module": sha256_file(module), "target": sha256_file(options.target),
                          **({"analysis": sha256_file(options.analysis)} if options.analysis else {}),
                          **({"hardware": analysis.hardware_sha256} if analysis else {})},
        "summary": {"dispatches": len(entries),
                    "applied": sum(e["status"] == "applied" for e in entries),
                    "default": sum(e["status"] == "default" for e in entries),
                    "adjusted": sum(bool(e.get("adjustments")) for e in entries)},
        "dispatches": entries,
        "options": {"allow_untuned_dispatches": options.allow_untuned_dispatches},
    }
    vmfb_bytes = (tmp / "out.vmfb").read_bytes()
    # The manifest checks the vmfb it packages is the one this report describes.
    report["vmfb_sha256"] = hashlib.sha256(vmfb_bytes).hexdigest()
    report["executables_sha256"] = executables_sha256(shipped)
    layout_text = _layout_text(module, target, tuned, tmp, shipped) if options.layout else None
    if layout_text is not None:
        # perf measures the vmfb the way its layout says: a layout edited to match shrunk bindings was
        # measured with garbage figures (issue 80 probe), so the report vouches for the layout too.
        report["layout_sha256"] = hashlib.sha256(layout_text.encode()).hexdigest()
    CodegenReport.model_validate(report)  # what runtime, perf and bench read back
    outputs = {build.configs: dumped_text,
               build.report: json.dumps(report, indent=1, sort_keys=True) + "\n",
               build.vmfb: vmfb_bytes}
    if build.binaries is not None:
        outputs.update({build.binaries / name: data for name, data in shipped.items()})
    if layout_text is not None:
        outputs[build.layout] = layout_text
    if build.code is not None:
        outputs[build.code / TARGETS_IR] = (tmp / TARGETS_IR).read_bytes()
        outputs.update({build.code / p.name: p.read_bytes() for p in sorted((tmp / "inter").iterdir())
                        if p.name.endswith((CODE_LLVM_IR, ".s"))})
    write_together(outputs)


@functools.lru_cache(maxsize=2)
def dispatch_infos(module: str, module_sha256: str, flags: tuple[str, ...]) -> dict:
    """Each dispatch's root op as the analysis reads it (analysis.dispatches.DispatchInfo by
    name), from IREE's own configurations of the module: read once per process (choice.tune
    compiles one module a few times; ResNet-18's take 3 s to read). The bytes are in the key."""
    from analysis import dispatches as dsp

    with scratch_directory("codegen_infos_") as tmp:
        configs = dsp.compile_to_executable_configurations(Path(module), list(flags), Path(tmp))
        return {i.name: i for i in dsp.read_dispatches(configs)}


# A data-tiled build's operands are packed: _read_compiled reads their layout from the executable sources.
DATA_TILING_FLAG = "--iree-opt-data-tiling"


def _read_compiled(module: Path, target: IreeTarget, tuned, shipped: dict[str, bytes]) -> "CompiledTarget":
    """The dispatches of the compile `run_codegen(tuned, targets_ir=True)` made in `tuned`'s work
    directory, read from its own IR: the executable-targets IR's host program, the subspans of
    tuned.mlir, and for a data-tiled build each operand's encoding from the executable sources
    (one more iree-compile, to executable sources only: tuned.mlir is bufferized, its subspans
    hold the packed storage, not the layout). `shipped`: the executables it dumped."""
    from codegen.layout import CompiledTarget

    wd = tuned.path.parent
    compiled = CompiledTarget(target, (wd / TARGETS_IR).read_text(), [wd / "bin" / n for n in shipped],
                              [tuned.path], executables_sha256(shipped))
    if DATA_TILING_FLAG in tuned.flags:
        iree_compile([str(target.compile_input(module)), *tuned.flags, "--compile-to=executable-sources", "-o",
                      str(wd / "sources.mlir")], "executable sources")
        compiled.read_encodings(wd / "sources.mlir")
    return compiled


def _layout_text(module: Path, target: IreeTarget, tuned: TunedSources, tmp: Path, shipped: dict[str, bytes]) -> str:
    """The dispatch layout of the compile in `tmp` (its executable-targets IR and tuned IR)."""
    from analysis.dispatches import AnalysisInputError
    from codegen import layout as lay
    from common.dispatch_layout import dump_layout

    compiled = _read_compiled(module, target, tuned, shipped)
    compiled_module = target.compile_input(module)  # rewritten for its strategy, as compiled above
    try:
        infos = dispatch_infos(str(compiled_module), sha256_file(compiled_module), tuple(target.compile_flags()))
    except AnalysisInputError as err:
        raise CompileError(str(err)) from None
    return dump_layout(lay.module_layout(compiled, infos))


def write_failure_record(err: CompileError, module: Path, build: Build) -> None:
    """The outputs of a build IREE refused: a report saying why (`failed`) and what it was built
    from, an empty vmfb and configs (and layout), empty binaries and code directories; consumers
    read the report first."""
    options = build.options
    target = load_target(options.target)
    report = {"failed": first_line(err), "target": target.name, "triple": target.triple,
              "strategy": target.strategy, "vmfb_sha256": hashlib.sha256(b"").hexdigest(),
              "tuned": options.analysis is not None,
              "inputs_sha256": {"module": sha256_file(module), "target": sha256_file(options.target),
                                **({"analysis": sha256_file(options.analysis)} if options.analysis else {})}}
    CodegenReport.model_validate(report)
    outputs = {build.vmfb: b"", build.report: json.dumps(report, indent=1, sort_keys=True) + "\n"}
    if build.configs is not None:
        outputs[build.configs] = ""
    if build.layout is not None:  # no dispatches: readers read the report first
        outputs[build.layout] = ""
    write_together(outputs)
    for directory in (build.binaries, build.code):
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)


def module_problem(module: Path) -> str | None:
    """Why `module` is no model to compile, or None. Asked only after iree-compile failed, so that
    an empty, truncated or function-less module is named as the culprit instead of IREE's pass
    ("outer module does not contain a vm.module op", "attempting to parse 598 bytes")."""
    data = module.read_bytes()
    if not data.strip():
        return "empty module file"
    from iree.compiler import ir

    try:
        mod = ir.Module.parse(data if module.suffix == ".mlirbc" else data.decode(), ir.Context())
    except Exception as err:  # noqa: BLE001 - MLIR raises a generic error
        return f"not a readable MLIR module ({first_line(err)})"
    for op in mod.body.operations:
        op = op.operation
        if op.name not in ("func.func", "util.func") or len(op.regions[0].blocks) == 0:
            continue
        if "sym_visibility" not in op.attributes or ir.StringAttr(op.attributes["sym_visibility"]).value == "public":
            return None
    return "no public function with a body: nothing to compile"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m codegen.compile", description=__doc__.splitlines()[0])
    p.add_argument("--module", required=True, type=Path, help="linalg MLIR (.mlirbc or text)")
    p.add_argument("--analysis", type=Path, help="analysis.json; omit for an untuned (IREE default) build")
    p.add_argument("--target", required=True, type=Path, help="common/targets/<name>.yaml")
    p.add_argument("--out-vmfb", required=True, type=Path)
    p.add_argument("--out-configs", required=True, type=Path)
    p.add_argument("--out-report", required=True, type=Path)
    p.add_argument("--out-binaries", type=Path,
                   help="also write the executables the vmfb embeds (IREE's embedded ELF, which the "
                        "hal_runner loads), dumped by the same invocation, into DIR")
    p.add_argument("--out-code", type=Path, metavar="DIR",
                   help="also write the executable-targets IR and IREE's LLVM IR and assembly of each "
                        "executable (what perf.code_model prices)")
    p.add_argument("--out-layout", type=Path,
                   help="also write the dispatch layout read from this compile (common/dispatch_layout.py): "
                        "what perf and the dispatch tests need to run each dispatch of the vmfb")
    p.add_argument("--allow-untuned-dispatches", action="store_true",
                   help="keep IREE's default for a dispatch the analysis does not cover or covers "
                        "for another loop nest (recorded in the report) instead of failing")
    p.add_argument("--keep-temps", type=Path, metavar="DIR",
                   help="on failure keep the work directory, IREE's full diagnostics and the "
                        "reproducer of a failing pass in DIR")
    p.add_argument("--record-failure", action="store_true",
                   help="when IREE cannot compile the build, say so in the report (`failed`), leave "
                        "the vmfb and configs empty and exit 0: for a build that is one candidate "
                        "of a choice (choice.choose leaves it out; runtime.manifest refuses it)")
    a = p.parse_args(argv)
    with OneLineErrors("codegen.compile: error", a.module, (CompileError,)) as cli:
        check_outputs({"--out-vmfb": a.out_vmfb, "--out-configs": a.out_configs, "--out-report": a.out_report,
                       "--out-binaries": a.out_binaries, "--out-code": a.out_code, "--out-layout": a.out_layout,
                       "--keep-temps": a.keep_temps},
                      {"--module": a.module, "--target": a.target, "--analysis": a.analysis})
        options = CompileOptions(a.target, a.analysis, layout=a.out_layout is not None, code=a.out_code is not None,
                                 binaries=a.out_binaries is not None,
                                 allow_untuned_dispatches=a.allow_untuned_dispatches, keep_temps=a.keep_temps)
        build = Build(options, a.out_vmfb, a.out_report, a.out_configs, a.out_layout, a.out_code, a.out_binaries)
        try:
            r = compile_module(a.module, options, build).read_report()
        except CompileError as err:
            # A candidate build (--record-failure) records whatever iree-compile refused, as before.
            problem = module_problem(a.module) if err.diagnostics and not a.record_failure else None
            if problem is not None:
                kept = f" (IREE's diagnostics kept in {a.keep_temps})" if a.keep_temps else ""
                raise CompileError(f"{a.module}: {problem}{kept}") from None
            if not (a.record_failure and err.diagnostics):  # only IREE's own refusals are recorded
                raise
            write_failure_record(err, a.module, build)
            print(f"codegen.compile: {a.out_vmfb.name}: IREE cannot compile this build (recorded in "
                  f"{a.out_report.name}): {first_line(err)}")
            return 0
    if cli.failed:
        return cli.exit_code
    s = r["summary"]
    print(f"{a.out_vmfb.name}: {s['dispatches']} dispatches, {s['applied']} configs applied and landed "
          f"({s['adjusted']} adjusted), {s['default']} IREE default")
    return 0


if __name__ == "__main__":
    sys.exit(main())
