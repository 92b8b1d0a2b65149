"""`hal_module`: the compiled vmfb plus a manifest (runtime/manifest.py); `package_choice`: the
same for the build a strategy choice chose (choice/defs.bzl's rules call it: packaging is here
alone)."""

load("//common:providers.bzl", "CompiledModuleInfo", "MlirModuleInfo")

def _hal_module_impl(ctx):
    compiled = ctx.attr.compiled[CompiledModuleInfo]
    if MlirModuleInfo not in ctx.attr.compiled:
        fail("%s: %s does not carry the MlirModuleInfo it was compiled from" % (ctx.label, ctx.attr.compiled.label))
    module = ctx.attr.compiled[MlirModuleInfo]
    vmfb = ctx.actions.declare_file(ctx.label.name + ".vmfb")
    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest.json")
    args = ctx.actions.args()
    args.add("--vmfb", compiled.vmfb)
    args.add("--report", compiled.report)
    args.add("--module", module.mlir)
    args.add("--target", compiled.target.file)
    inputs = [compiled.vmfb, compiled.report, module.mlir, compiled.target.file]
    if compiled.analysis != None:
        args.add("--analysis", compiled.analysis.analysis_json)
        inputs.append(compiled.analysis.analysis_json)
        if compiled.analysis.hardware != None:
            args.add("--hardware", compiled.analysis.hardware)
            inputs.append(compiled.analysis.hardware)
    args.add("--out-vmfb", vmfb)
    args.add("--out-manifest", manifest)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs,
        outputs = [vmfb, manifest],
        mnemonic = "HalModule",
        progress_message = "HAL module %s" % ctx.label.name,
    )
    return [DefaultInfo(files = depset([vmfb, manifest]), runfiles = ctx.runfiles([vmfb, manifest])), compiled]

_hal_module = rule(
    implementation = _hal_module_impl,
    attrs = {
        "compiled": attr.label(mandatory = True, providers = [CompiledModuleInfo]),
        "_tool": attr.label(default = "//runtime:manifest", executable = True, cfg = "exec"),
    },
)

def hal_module(name, compiled, **kwargs):
    """<name>.vmfb (a copy of `compiled`'s) and <name>.manifest.json beside it."""
    _hal_module(name = name, compiled = compiled, **kwargs)

def package_choice(ctx, tool, decision, chosen_vmfb, chosen_report, module, candidates, hardware = None):
    """Packages what a strategy choice decided (choice.choose's `decision`, with its copies
    `chosen_vmfb` and `chosen_report` of the chosen build) as <name>.vmfb + <name>.manifest.json:
    runtime.manifest --choice, `tool` its binary. `candidates`: [(strategy, target file, analysis
    file or None)] of every candidate; `hardware`: recorded with an analysis. Returns the two files."""
    vmfb = ctx.actions.declare_file(ctx.label.name + ".vmfb")
    manifest = ctx.actions.declare_file(ctx.label.name + ".manifest.json")
    args = ctx.actions.args()
    args.add("--choice", decision)
    args.add("--vmfb", chosen_vmfb)
    args.add("--report", chosen_report)
    args.add("--module", module)
    inputs = [decision, chosen_vmfb, chosen_report, module]
    for strategy, target, analysis in candidates:
        args.add_all("--candidate", [strategy, target, analysis or "none"])
        inputs += [target] + ([analysis] if analysis else [])
    if hardware:
        args.add("--hardware", hardware)
        inputs.append(hardware)
    args.add("--out-vmfb", vmfb)
    args.add("--out-manifest", manifest)
    ctx.actions.run(
        executable = tool,
        arguments = [args],
        inputs = inputs,
        outputs = [vmfb, manifest],
        mnemonic = "PackageChoice",
        progress_message = "HAL module %s (the chosen build)" % ctx.label.name,
    )
    return [vmfb, manifest]
