"""Analysis-stage rules: `zigzag_analysis` (per-dispatch tiling decisions, analysis/analyze.py)
and `accelerator_target` (a riscv IREE target whose VLEN comes from an accelerator description)."""

load("//common:providers.bzl", "AnalysisInfo", "IreeTargetInfo", "MlirModuleInfo")

def _zigzag_analysis_impl(ctx):
    module = ctx.attr.module[MlirModuleInfo]
    target = ctx.attr.target[IreeTargetInfo]
    if target.hardware != None and target.hardware.path != ctx.file.hardware.path:
        fail("%s: target %s was derived from %s, but the analysis is against %s: an accelerator's VLEN has one source" % (
            ctx.label,
            ctx.attr.target.label,
            target.hardware.short_path,
            ctx.file.hardware.short_path,
        ))
    out = ctx.actions.declare_file(ctx.label.name + ".analysis.json")
    zigzag_log = ctx.actions.declare_file(ctx.label.name + ".zigzag.json")
    args = ctx.actions.args()
    args.add("--module", module.mlir)
    args.add("--target", target.file)
    args.add("--hardware", ctx.file.hardware)
    args.add("--model-name", module.model_name)
    args.add("--out", out)
    args.add("--zigzag-log", zigzag_log)
    inputs = [module.mlir, target.file, ctx.file.hardware]
    if not ctx.attr.zigzag:
        args.add("--no-zigzag")
    elif ctx.files.zigzag_results:
        # Recorded runs replayed (analysis/zigzag_results.py); not an input where ZigZag is off.
        args.add_all("--zigzag-results", ctx.files.zigzag_results)
        inputs += ctx.files.zigzag_results
    if ctx.file.calibration:
        args.add("--calibration", ctx.file.calibration)
        inputs.append(ctx.file.calibration)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs,
        outputs = [out, zigzag_log],
        mnemonic = "ZigZagAnalysis",
        progress_message = "Analysing %s for %s on %s" % (module.model_name, target.name, ctx.file.hardware.basename),
    )
    return [
        AnalysisInfo(analysis_json = out, module = module, target = target, hardware = ctx.file.hardware),
        DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out])),
        # Every ZigZag entry the analysis used and which ran here: //models:zigzag_replay_test.
        OutputGroupInfo(zigzag = depset([zigzag_log])),
    ]

_zigzag_analysis = rule(
    implementation = _zigzag_analysis_impl,
    attrs = {
        "module": attr.label(mandatory = True, providers = [MlirModuleInfo], doc = "frontend output"),
        "hardware": attr.label(mandatory = True, allow_single_file = [".yaml"], doc = "analysis/hardware/*.yaml"),
        "calibration": attr.label(allow_single_file = [".json"], doc = "analysis/calibration/<hardware>.json: the cost model's coefficients (absent: uncalibrated, said in the analysis)"),
        "target": attr.label(mandatory = True, providers = [IreeTargetInfo], doc = "//common:host, or a riscv accelerator_target (e.g. //analysis:riscv_rvv)"),
        "zigzag_results": attr.label_list(default = ["//analysis/zigzag_results:all"], allow_files = True, doc = "recorded ZigZag runs, replayed where their key matches"),
        "zigzag": attr.bool(default = True, doc = "False: no ZigZag candidates (analysis.analyze --no-zigzag), for an analysis that keeps IREE's defaults anyway"),
        "_tool": attr.label(default = "//analysis:analyze", executable = True, cfg = "exec"),
    },
    doc = "Runs the analysis stage: analysis.json with tiles per dispatch (AnalysisInfo).",
)

def zigzag_analysis(name, module, hardware, target, calibration = None, zigzag = True, **kwargs):
    """Analyses `module`'s dispatches for `target` against `hardware` (cost model coefficients
    from `calibration`); output <name>.analysis.json. `zigzag = False` leaves ZigZag out (its
    candidates would only be evaluation where the analysis keeps IREE's defaults)."""
    if not module:
        fail("zigzag_analysis(%s): `module` must be a target providing MlirModuleInfo" % name)
    if not hardware or not hardware.endswith(".yaml"):
        fail("zigzag_analysis(%s): `hardware` must be a .yaml hardware description, got %r" % (name, hardware))
    if not target:
        fail("zigzag_analysis(%s): `target` must be //common:host or a riscv accelerator_target (e.g. //analysis:riscv_rvv)" % name)
    _zigzag_analysis(name = name, module = module, hardware = hardware, target = target, calibration = calibration, zigzag = zigzag, **kwargs)

def _accelerator_target_impl(ctx):
    base = ctx.attr.base[IreeTargetInfo]
    out = ctx.actions.declare_file(ctx.label.name + ".target.yaml")
    args = ctx.actions.args()
    args.add("--base", base.file)
    args.add("--hardware", ctx.file.hardware)
    args.add("--out", out)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [base.file, ctx.file.hardware],
        outputs = [out],
        mnemonic = "AcceleratorTarget",
        progress_message = "Deriving IREE target %s from %s" % (ctx.label.name, ctx.file.hardware.basename),
    )
    return [
        IreeTargetInfo(name = ctx.label.name, file = out, hardware = ctx.file.hardware),
        DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out])),
    ]

accelerator_target = rule(
    implementation = _accelerator_target_impl,
    attrs = {
        "base": attr.label(mandatory = True, providers = [IreeTargetInfo], doc = "riscv target: ISA, CPU, flags"),
        "hardware": attr.label(mandatory = True, allow_single_file = [".yaml"], doc = "accelerator description: VLEN"),
        "_tool": attr.label(default = "//analysis:accelerator_target", executable = True, cfg = "exec"),
    },
    doc = """A riscv IREE target for one accelerator: `base`'s ISA and flags with the VLEN
(`vector_bits`, `+zvl<N>b`) of `hardware`. Analysis, codegen and perf all read this one file.""",
)

def _hardware_variant_impl(ctx):
    out = ctx.outputs.out
    args = ctx.actions.args()
    args.add("--base", ctx.file.base)
    args.add("--name", ctx.attr.variant_name or ctx.label.name)
    for setting in ctx.attr.set:
        args.add("--set", setting)
    args.add("--out", out)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [ctx.file.base],
        outputs = [out],
        mnemonic = "HardwareVariant",
        progress_message = "Accelerator variant %s of %s" % (ctx.label.name, ctx.file.base.basename),
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

hardware_variant = rule(
    implementation = _hardware_variant_impl,
    attrs = {
        "base": attr.label(mandatory = True, allow_single_file = [".yaml"], doc = "accelerator description"),
        "set": attr.string_list(doc = "KEY=VALUE changes (analysis/hardware_variant.py)"),
        "variant_name": attr.string(doc = "the description's `name` (default: the target name)"),
        "_tool": attr.label(default = "//analysis:hardware_variant", executable = True, cfg = "exec"),
    },
    # Predeclared, so `:<name>.yaml` names the file where a `.yaml` label is expected.
    outputs = {"out": "%{name}.yaml"},
    doc = """<name>.yaml: `base` with `set` applied; the register file size and `model_core`
follow from the vector length (analysis/hardware_variant.py), and the result is validated.""",
)
