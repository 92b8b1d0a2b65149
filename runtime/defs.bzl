"""`hal_module`: the compiled vmfb plus a manifest (runtime/manifest.py); `package_choice`: the
same for the build a strategy choice chose (choice/defs.bzl's rules call it: packaging is here
alone); `dispatch_reference`: the host side a shipped build's dispatch test runs against, built
ahead so the test compiles nothing."""

load("//common:providers.bzl", "CompiledModuleInfo", "IreeTargetInfo", "MlirModuleInfo")

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

def _dispatch_reference_impl(ctx):
    module = ctx.attr.module[MlirModuleInfo].mlir
    manifests = [f for f in ctx.files.shipped if f.basename.endswith(".manifest.json")]
    if len(manifests) != 1:
        fail("%s: %s has %d manifests, not one" % (ctx.label, ctx.attr.shipped.label, len(manifests)))
    outs = [ctx.actions.declare_file(ctx.label.name + ext) for ext in (".vmfb", ".layout.json", ".traced.vmfb")]
    args = ctx.actions.args()
    args.add(module)
    args.add(manifests[0])
    riscv, host = ctx.attr.riscv[IreeTargetInfo].file, ctx.attr.host[IreeTargetInfo].file
    args.add("--riscv", riscv)
    args.add("--host", host)
    targets = [riscv, host]
    for flag, pairs in (("--strategy", ctx.attr.strategies), ("--host-strategy", ctx.attr.host_strategies)):
        for target, strategy in pairs.items():
            args.add(flag, "%s=%s" % (strategy, target[IreeTargetInfo].file.path))
            targets.append(target[IreeTargetInfo].file)
    args.add("--out-vmfb", outs[0])
    args.add("--out-layout", outs[1])
    args.add("--out-traced", outs[2])
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [module, manifests[0]] + targets,
        outputs = outs,
        mnemonic = "DispatchReference",
        progress_message = "Host reference of %s's dispatch test" % ctx.attr.shipped.label.name,
    )
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(outs))]

dispatch_reference = rule(
    implementation = _dispatch_reference_impl,
    doc = """<name>.vmfb and <name>.layout.json: the host build a shipped module's dispatches are
    checked against (runtime/hal_runner/reference.py plans it from the manifest's strategy), and
    <name>.traced.vmfb, its twin with IREE's dispatch tracing (the real activations).""",
    attrs = {
        "module": attr.label(mandatory = True, providers = [MlirModuleInfo]),
        "shipped": attr.label(mandatory = True, doc = "the shipped HAL module (vmfb + manifest)"),
        "riscv": attr.label(mandatory = True, providers = [IreeTargetInfo]),
        "host": attr.label(mandatory = True, providers = [IreeTargetInfo]),
        "strategies": attr.label_keyed_string_dict(providers = [IreeTargetInfo], doc = "riscv target -> strategy"),
        "host_strategies": attr.label_keyed_string_dict(providers = [IreeTargetInfo], doc = "host target -> strategy"),
        "_tool": attr.label(default = "//runtime/hal_runner:reference", executable = True, cfg = "exec"),
    },
)
