"""RISC-V instruction counts, model cycles and memory-aware cycles of a compiled module (`riscv_perf`), where bench and the choices find them (`perf_index`, `perf_of`), and a hardware sweep's report (`sweep_report`). The choices made by these measurements are in //choice:defs.bzl."""

load("//common:providers.bzl", "AnalysisInfo", "CompiledModuleInfo", "MlirModuleInfo", "PerfInfo")

# LLVM 19's llvm-mc, llvm-mca, opt and llc (Debian bookworm's llvm-19 and the libraries it loads,
# pinned by version and SHA256: WORKSPACE's @llvm19), in the exec configuration. Every file is an
# input of the actions that run them, so the pin is part of their keys; the CLIs get the
# directory as --llvm-bin and look nothing up on PATH.
LLVM_ATTRS = {
    "_llvm": attr.label(default = "@llvm19//:all", allow_files = True, cfg = "exec"),
    "_llvm_mca": attr.label(default = "@llvm19//:llvm-mca", allow_single_file = True, cfg = "exec"),
}

def llvm_dir(ctx):
    """(the --llvm-bin directory, the files to add to the action's inputs)."""
    return ctx.file._llvm_mca.dirname, ctx.files._llvm

def _riscv_perf_impl(ctx):
    compiled = ctx.attr.compiled[CompiledModuleInfo]
    if MlirModuleInfo not in ctx.attr.compiled:
        fail("%s: %s does not carry the MlirModuleInfo it was compiled from" % (ctx.label, ctx.attr.compiled.label))
    module = ctx.attr.compiled[MlirModuleInfo]
    if compiled.target.hardware == None:
        fail("%s: %s was compiled for %s, which is not derived from an accelerator description (accelerator_target)" % (
            ctx.label,
            ctx.attr.compiled.label,
            compiled.target.name,
        ))
    out_json = ctx.actions.declare_file(ctx.label.name + ".perf.json")
    out_md = ctx.actions.declare_file(ctx.label.name + ".perf.md")
    args = ctx.actions.args()
    args.add("--module", module.mlir)
    args.add("--target", compiled.target.file)
    inputs = [module.mlir, compiled.target.file] + ctx.files.hardware
    if compiled.analysis != None:
        args.add("--analysis", compiled.analysis.analysis_json)
        inputs.append(compiled.analysis.analysis_json)
    for hw in ctx.files.hardware:
        args.add("--hardware", hw)
    args.add("--runner", ctx.file._runner)
    args.add("--plugin", ctx.file._plugin)
    args.add("--qemu", ctx.file._qemu)
    llvm_bin, llvm_files = llvm_dir(ctx)
    args.add("--llvm-bin", llvm_bin)
    args.add("--model-name", module.model_name)
    if ctx.attr.counts_only_ok:
        args.add("--allow-counts-only")
    # A build IREE refused (iree_compile's record_failure: a strategy choice's candidate) gets a
    # report saying so, which the choice leaves out, instead of failing here.
    args.add("--compiled-report", compiled.report)
    inputs.append(compiled.report)
    # The shipped bytes, run from the layout their own compile wrote: nothing is compiled here.
    args.add("--vmfb", compiled.vmfb)
    args.add("--layout", compiled.layout)
    inputs += [compiled.vmfb, compiled.layout]
    args.add("--out-json", out_json)
    args.add("--out-md", out_md)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs + [ctx.file._runner, ctx.file._plugin, ctx.file._qemu] + llvm_files,
        outputs = [out_json, out_md],
        mnemonic = "RiscvPerf",
        progress_message = "Measuring %s on RISC-V (%s): qemu instruction counts and cache simulation, llvm-mca model cycles" % (
            module.model_name,
            "tuned" if compiled.analysis != None else "IREE defaults",
        ),
    )
    return [
        DefaultInfo(files = depset([out_json, out_md]), runfiles = ctx.runfiles(files = [out_json, out_md])),
        PerfInfo(perf_json = out_json, perf_md = out_md, compiled = compiled, hardware = ctx.files.hardware),
    ]

_riscv_perf = rule(
    implementation = _riscv_perf_impl,
    _skylark_testable = True,  # //perf:*_tool_inputs_test reads its actions' inputs
    attrs = dict({
        "compiled": attr.label(mandatory = True, providers = [CompiledModuleInfo]),
        "hardware": attr.label_list(mandatory = True, allow_files = [".yaml"]),
        # Measure a description without a core model in instructions alone (a sweep's VLEN 256).
        "counts_only_ok": attr.bool(default = False),
        "_tool": attr.label(default = "//perf:measure", executable = True, cfg = "exec"),
        "_runner": attr.label(default = "//runtime/hal_runner:hal_runner_riscv64", allow_single_file = True),
        "_plugin": attr.label(default = "//perf:libinsn_classes.so", allow_single_file = True, cfg = "exec"),
        # qemu-riscv64 10.0.2 built with plugins from the pinned source (the plugin loads into it).
        "_qemu": attr.label(default = "//tools/qemu:qemu-riscv64", allow_single_file = True, cfg = "exec"),
    }, **LLVM_ATTRS),
)

def riscv_perf(name, compiled, hardware, **kwargs):
    """<name>.perf.json and <name>.perf.md (PerfInfo): every dispatch of `compiled` run whole under qemu.

    Args:
      name: target name.
      compiled: an iree_compile target for a riscv target made by accelerator_target.
      hardware: accelerator descriptions (with `model_core`) to measure on; each is one
        qemu run per dispatch at its VLEN and one llvm-mca costing on its core model.
        The module's own accelerator should come first.
      **kwargs: forwarded to the rule (tags, visibility, ...).
    """
    if not hardware:
        fail("riscv_perf(%s): `hardware` needs at least one accelerator description" % name)
    _riscv_perf(name = name, compiled = compiled, hardware = hardware, **kwargs)

def _perf_index_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    entries = {}
    files = []
    for target, build in ctx.attr.perf.items():
        if build in entries:
            fail("%s: two measurements of build '%s': %s and %s" % (ctx.label, build, entries[build]["label"], target.label))
        perf = target[PerfInfo]
        entries[build] = {"label": str(target.label), "perf_json": perf.perf_json.short_path, "perf_md": perf.perf_md.short_path}
        files += [perf.perf_json, perf.perf_md]
    ctx.actions.write(out, json.encode_indent(entries) + "\n")
    return [DefaultInfo(files = depset([out] + files), runfiles = ctx.runfiles(files = [out] + files))]

perf_index = rule(
    implementation = _perf_index_impl,
    attrs = {
        "perf": attr.label_keyed_string_dict(mandatory = True, providers = [PerfInfo], doc = "riscv_perf target -> the build it measured (e.g. tuned, codegen, ukernels)"),
    },
    doc = """<name>.json: build -> {label, perf_json, perf_md} (paths relative to the output root),
with the files themselves: what tools outside Bazel (bench) read riscv_perf's measurements
through, from the targets' PerfInfo, instead of guessing their file names.""",
)

def _shipped_perf_impl(ctx):
    md = ctx.actions.declare_file(ctx.label.name + ".perf.md")
    js = ctx.actions.declare_file(ctx.label.name + ".perf.json")
    manifests = [f for f in ctx.files.shipped if f.path.endswith(".manifest.json")]
    if len(manifests) != 1:
        fail("%s: %s must output exactly one .manifest.json" % (ctx.label, ctx.attr.shipped.label))
    index = [f for f in ctx.files.index if f.path.endswith(".json") and f.basename == ctx.attr.index.label.name + ".json"]
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = ["--manifest", manifests[0].path, "--index", index[0].path, "--root", ctx.bin_dir.path,
                     "--out-md", md.path, "--out-json", js.path],
        inputs = ctx.files.shipped + ctx.files.index,
        outputs = [md, js],
        mnemonic = "ShippedPerf",
        progress_message = "Picking the perf report of what %s ships" % ctx.attr.shipped.label.name,
    )
    return [DefaultInfo(files = depset([md, js]))]

shipped_perf = rule(
    implementation = _shipped_perf_impl,
    attrs = {
        "shipped": attr.label(mandatory = True, allow_files = True, doc = "what a pipeline ships: its vmfb and manifest"),
        "index": attr.label(mandatory = True, allow_files = True, doc = "perf_index of every build it may ship"),
        "_tool": attr.label(default = "//perf:shipped", executable = True, cfg = "exec"),
    },
    doc = """<name>.perf.{md,json}: the riscv_perf report of the build `shipped`'s manifest names,
checked to have measured the same executables (perf/shipped.py).""",
)

def perf_of(label, perf_target, compiled_target):
    """The PerfInfo of riscv_perf `perf_target`, which must have measured `compiled_target`'s
    build; fail() naming both otherwise."""
    perf = perf_target[PerfInfo]
    if perf.compiled.vmfb != compiled_target[CompiledModuleInfo].vmfb:
        fail("%s: %s measured %s, not %s" % (label, perf_target.label, perf.compiled.vmfb.short_path, compiled_target.label))
    return perf

def _sweep_report_impl(ctx):
    n = len(ctx.attr.variant_names)
    analyses = [a[AnalysisInfo].analysis_json for a in ctx.attr.analyses]
    if len(ctx.files.hardware) != n or len(analyses) != n or len(ctx.attr.perf) != n or len(ctx.attr.compiled) != n:
        fail("%s: one hardware, analysis, compiled module and perf per variant" % ctx.label)
    md = ctx.actions.declare_file(ctx.label.name + ".sweep.md")
    js = ctx.actions.declare_file(ctx.label.name + ".sweep.json")
    png = ctx.actions.declare_file(ctx.label.name + ".sweep.png")
    args = ctx.actions.args()
    args.add("--model", ctx.attr.model_name)
    inputs = []
    for name, hw, analysis, compiled, perf_target in zip(ctx.attr.variant_names, ctx.files.hardware, analyses, ctx.attr.compiled, ctx.attr.perf):
        perf_json = perf_of(ctx.label, perf_target, compiled).perf_json
        report = compiled[CompiledModuleInfo].report
        args.add_all("--variant", [name, hw, analysis, report, perf_json])
        inputs += [hw, analysis, report, perf_json]
    args.add("--out-md", md)
    args.add("--out-json", js)
    args.add("--out-png", png)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs,
        outputs = [md, js, png],
        mnemonic = "HardwareSweep",
        progress_message = "Hardware sweep report %s (%d variants)" % (ctx.label.name, len(ctx.attr.variant_names)),
    )
    return [DefaultInfo(files = depset([md, js, png]), runfiles = ctx.runfiles(files = [md, js, png]))]

sweep_report = rule(
    implementation = _sweep_report_impl,
    _skylark_testable = True,  # //perf:sweep_perf_info_test reads its actions' inputs
    attrs = {
        "model_name": attr.string(mandatory = True),
        "variant_names": attr.string_list(mandatory = True),
        "hardware": attr.label_list(mandatory = True, allow_files = [".yaml"]),
        "analyses": attr.label_list(mandatory = True, providers = [AnalysisInfo]),
        "compiled": attr.label_list(mandatory = True, providers = [CompiledModuleInfo]),
        "perf": attr.label_list(mandatory = True, providers = [PerfInfo]),
        "_tool": attr.label(default = "//perf:sweep", executable = True, cfg = "exec"),
    },
    doc = """<name>.sweep.{md,json,png}: one model's builds for N accelerator variants side by side
(models/defs.bzl `hardware_sweep`): each variant's description, measured tile choice, compile
report and measurement (PerfInfo).""",
)

def _explore_index_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    builds = {}
    files = []
    for target, pipeline in ctx.attr.builds.items():
        compiled = target[CompiledModuleInfo]
        if compiled.analysis == None or compiled.layout == None or compiled.target.hardware == None:
            fail("%s: %s is not a tuned build for an accelerator description (analysis, layout and hardware needed)" % (ctx.label, target.label))
        if pipeline in builds:
            fail("%s: pipeline %s given twice" % (ctx.label, pipeline))
        module = compiled.analysis.module
        entry = {
            "analysis": compiled.analysis.analysis_json,
            "hardware": compiled.target.hardware,
            "layout": compiled.layout,
            "module": module.mlir,
            "report": compiled.report,
            "target": compiled.target.file,
            "vmfb": compiled.vmfb,
        }
        files += entry.values()
        builds[pipeline] = dict({k: f.short_path for k, f in entry.items()}, model_name = module.model_name)
    tools = {"plugin": ctx.file._plugin, "qemu": ctx.file._qemu, "runner": ctx.file._runner}
    files += tools.values()
    ctx.actions.write(out, json.encode_indent({
        # Paths are relative to the runfiles' workspace directory, which holds this file at `index`.
        "index": out.short_path,
        "builds": builds,
        "tools": {k: f.short_path for k, f in tools.items()},
    }, indent = " ") + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out] + files))]

explore_index = rule(
    implementation = _explore_index_impl,
    doc = "<name>.json: per pipeline, the files of its tuned riscv build (vmfb, layout, report, analysis, module, target, accelerator description) and the tools that measure it, by their providers, with all of them in its runfiles (perf/explore.py, //tools:explore).",
    attrs = {
        "builds": attr.label_keyed_string_dict(mandatory = True, providers = [CompiledModuleInfo], doc = "tuned riscv build (iree_compile) -> pipeline name"),
        "_runner": attr.label(default = "//runtime/hal_runner:hal_runner_riscv64", allow_single_file = True),
        "_plugin": attr.label(default = "//perf:libinsn_classes.so", allow_single_file = True, cfg = "exec"),
        "_qemu": attr.label(default = "//tools/qemu:qemu-riscv64", allow_single_file = True, cfg = "exec"),
    },
)
