"""`iree_compile`: IREE compile with the analysis' tiles injected per dispatch (codegen/compile.py)."""

load("//common:providers.bzl", "AnalysisInfo", "CompiledModuleInfo", "IreeTargetInfo", "MlirModuleInfo")
load("//common:registries.bzl", "LOWERING_STRATEGIES")

def _iree_compile_impl(ctx):
    module = ctx.attr.module[MlirModuleInfo]
    target = ctx.attr.target[IreeTargetInfo]
    analysis = ctx.attr.analysis[AnalysisInfo] if ctx.attr.analysis else None
    if analysis == None and not ctx.attr.iree_tiles:
        fail("%s: no `analysis` given; set `iree_tiles = True` to compile with IREE's own tiles" % ctx.label)
    if analysis != None and ctx.attr.iree_tiles:
        fail("%s: `iree_tiles = True` and an `analysis` are mutually exclusive" % ctx.label)
    if analysis != None:
        if analysis.target.name != target.name or analysis.target.file != target.file:
            fail("%s: analysis %s was made for target '%s' but the compile target is '%s'" % (
                ctx.label,
                ctx.attr.analysis.label,
                analysis.target.name,
                target.name,
            ))
        if analysis.module.mlir != module.mlir:
            fail("%s: analysis %s was made for module %s, not %s" % (
                ctx.label,
                ctx.attr.analysis.label,
                analysis.module.mlir.short_path,
                module.mlir.short_path,
            ))

    vmfb = ctx.actions.declare_file(ctx.label.name + ".vmfb")
    configs = ctx.actions.declare_file(ctx.label.name + ".configs.mlir")
    report = ctx.actions.declare_file(ctx.label.name + ".report.json")
    args = ctx.actions.args()
    args.add("--module", module.mlir)
    args.add("--target", target.file)
    inputs = [module.mlir, target.file]
    if analysis != None:
        args.add("--analysis", analysis.analysis_json)
        inputs.append(analysis.analysis_json)
    args.add("--out-vmfb", vmfb)
    args.add("--out-configs", configs)
    args.add("--out-report", report)
    outputs = [vmfb, configs, report]
    code = None
    if ctx.attr.code:
        code = ctx.actions.declare_directory(ctx.label.name + ".code")
        args.add("--out-code", code.path)
        outputs.append(code)
    layout = None
    if target.hardware != None:
        # An accelerator's build: perf and the dispatch tests run its dispatches from what this
        # compile writes (common/dispatch_layout.py) instead of compiling the module again.
        layout = ctx.actions.declare_file(ctx.label.name + ".layout.json")
        args.add("--out-layout", layout)
        outputs.append(layout)
    if ctx.attr.record_failure:
        args.add("--record-failure")
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs,
        outputs = outputs,
        mnemonic = "IreeCompile",
        progress_message = "IREE compile %s for %s (%s)" % (
            module.model_name,
            target.name,
            "tuned" if analysis else "IREE defaults",
        ),
    )
    return [
        DefaultInfo(
            files = depset([vmfb, configs, report] + ([layout] if layout else [])),
            runfiles = ctx.runfiles(files = [vmfb, configs, report] + ([layout] if layout else [])),
        ),
        CompiledModuleInfo(vmfb = vmfb, configs = configs, report = report, analysis = analysis, target = target, code = code, layout = layout),
        module,
    ]

_iree_compile = rule(
    implementation = _iree_compile_impl,
    attrs = {
        "module": attr.label(mandatory = True, providers = [MlirModuleInfo]),
        "analysis": attr.label(providers = [AnalysisInfo]),
        "target": attr.label(mandatory = True, providers = [IreeTargetInfo]),
        "iree_tiles": attr.bool(default = False),
        "code": attr.bool(default = False),
        "record_failure": attr.bool(default = False),
        "_tool": attr.label(default = "//codegen:compile", executable = True, cfg = "exec"),
    },
)

def iree_compile(name, module, target, analysis = None, iree_tiles = False, code = False, record_failure = False, **kwargs):
    """Compiles `module` for `target` with `analysis`' per-dispatch tiles (or IREE's own if `iree_tiles`).

    Outputs <name>.vmfb, <name>.configs.mlir (what codegen used) and <name>.report.json; with
    `code`, also the directory <name>.code (the executable-targets IR and IREE's LLVM IR and
    assembly of each executable), which `code_strategy_choice` costs without compiling again.
    For a target derived from an accelerator description, also <name>.layout.json: what running
    each dispatch of the vmfb needs, read from this compile (perf measures the vmfb with it).
    The build fails if any applied config did not land. With `record_failure` (a build that is
    one candidate of a choice), IREE refusing the module is recorded in the report (`failed`)
    instead, with an empty vmfb: the choice leaves it out and hal_module refuses it.
    """
    _iree_compile(
        name = name,
        module = module,
        target = target,
        analysis = analysis,
        iree_tiles = iree_tiles,
        code = code,
        record_failure = record_failure,
        **kwargs
    )

def _strategy_target_impl(ctx):
    base = ctx.attr.base[IreeTargetInfo]
    out = ctx.actions.declare_file(ctx.label.name + ".target.yaml")
    args = ctx.actions.args()
    args.add("--base", base.file)
    args.add("--strategy", ctx.attr.strategy)
    args.add("--out", out)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [base.file],
        outputs = [out],
        mnemonic = "StrategyTarget",
        progress_message = "Deriving IREE target %s (%s)" % (ctx.label.name, ctx.attr.strategy),
    )
    return [
        # The accelerator (if any) is the base's: perf measures the strategy on the same hardware.
        IreeTargetInfo(name = ctx.label.name, file = out, hardware = base.hardware),
        DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out])),
    ]

strategy_target = rule(
    implementation = _strategy_target_impl,
    attrs = {
        "base": attr.label(mandatory = True, providers = [IreeTargetInfo], doc = "the target to derive from"),
        "strategy": attr.string(mandatory = True, values = list(LOWERING_STRATEGIES)),
        "_tool": attr.label(default = "//codegen:strategy_target", executable = True, cfg = "exec"),
    },
    doc = """`base` compiled with one lowering strategy (common/targets.py STRATEGY_FLAGS):
IREE's direct code emission, data tiling with emitted code, data tiling with IREE's mmt4d
microkernels, or direct code emission with convolutions not rewritten to im2col + matmul.
Codegen, the dispatch tests and perf all read the derived file.""",
)
