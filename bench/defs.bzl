"""`hardware_sweep`: one model built and measured for N accelerator variants, and a report."""

load("//analysis:defs.bzl", "accelerator_target", "hardware_variant", "zigzag_analysis")
load("//common:providers.bzl", "AnalysisInfo", "CompiledModuleInfo", "PerfInfo")
load("//codegen:defs.bzl", "iree_compile")
load("//perf:defs.bzl", "measured_choice", "perf_of", "riscv_perf")

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

_sweep_report = rule(
    implementation = _sweep_report_impl,
    _skylark_testable = True,  # //perf:sweep_perf_info_test reads its actions' inputs
    attrs = {
        "model_name": attr.string(mandatory = True),
        "variant_names": attr.string_list(mandatory = True),
        "hardware": attr.label_list(mandatory = True, allow_files = [".yaml"]),
        "analyses": attr.label_list(mandatory = True, providers = [AnalysisInfo]),
        "compiled": attr.label_list(mandatory = True, providers = [CompiledModuleInfo]),
        "perf": attr.label_list(mandatory = True, providers = [PerfInfo]),
        "_tool": attr.label(default = "//bench:sweep", executable = True, cfg = "exec"),
    },
)

def _variant_label(name, variant):
    return "%s_%s" % (name, variant)

def hardware_sweep(name, module, model_name, base, variants, riscv_target = "//common:riscv64_rvv", require_model_cycles = False, **kwargs):
    """Builds and measures `module` for each accelerator variant; report <name>.sweep.{md,json,png}.

    Each variant is one line: a name and the `--set KEY=VALUE` changes to `base`
    (analysis/hardware_variant.py; the register file and the core model follow from the VLEN).
    Per variant, `<name>_<variant>_hardware` (the description), `_target` (the riscv IREE target
    derived from it), `_predicted_analysis`, `_analysis` (the measured choice among its candidates
    on the variant's core model; the predicted choice where no core model has the VLEN),
    `_compiled` (its report, with every applied config proven
    landed, feeds the sweep report) and `_perf` (instructions, and model cycles where LLVM has a
    core model of that VLEN) are their own cached actions, so editing one variant's
    line reruns only that variant's chain and the report; the import is shared.

        hardware_sweep(
            name = "resnet_sweep",
            module = ":resnet18_import",
            model_name = "resnet18",
            base = "//analysis:hardware/riscv_rvv.yaml",
            variants = {
                "vlen128_l1_32k": [],
                "vlen256_l1_32k": ["compute.vector_bits=256"],
            },
        )

    Args:
      name: prefix of the generated targets and the report's name.
      module: the model's mlir_import target.
      model_name: the model's name (for the report).
      base: the accelerator description the variants change.
      variants: {variant name: [KEY=VALUE, ...]}, in report order (the first is the reference
        for "dispatches with other tiles").
      riscv_target: the riscv IREE target (ISA, flags) the variants' targets are derived from.
      require_model_cycles: refuse (in the measurement, with the reason) a variant whose VLEN
        no LLVM core model has, instead of measuring it in instructions only.
      **kwargs: forwarded to every generated rule (tags, visibility, ...).
    """
    if not variants:
        fail("hardware_sweep(%s): `variants` is empty" % name)
    names = list(variants)
    for variant in names:
        if not variant or "/" in variant:
            fail("hardware_sweep(%s): bad variant name %r" % (name, variant))
        prefix = _variant_label(name, variant)
        hardware_variant(
            name = prefix + "_hardware",
            base = base,
            set = variants[variant],
            variant_name = variant,
            **kwargs
        )
        accelerator_target(
            name = prefix + "_target",
            base = riscv_target,
            hardware = ":%s_hardware" % prefix,
            **kwargs
        )
        zigzag_analysis(
            name = prefix + "_predicted_analysis",
            module = module,
            hardware = ":%s_hardware.yaml" % prefix,
            target = ":%s_target" % prefix,
            **kwargs
        )

        # Tiles chosen by measured model cycles on the variant's core, as model_pipeline does;
        # a VLEN without a core model keeps the predicted choice (measured_choice empty).
        measured_choice(
            name = prefix + "_analysis",
            analysis = ":%s_predicted_analysis" % prefix,
            allow_no_core_model = not require_model_cycles,
            **kwargs
        )
        iree_compile(
            name = prefix + "_compiled",
            module = module,
            analysis = ":%s_analysis" % prefix,
            target = ":%s_target" % prefix,
            **kwargs
        )
        riscv_perf(
            name = prefix + "_perf",
            compiled = ":%s_compiled" % prefix,
            hardware = [":%s_hardware" % prefix],
            counts_only_ok = not require_model_cycles,
            **kwargs
        )
    _sweep_report(
        name = name,
        model_name = model_name,
        variant_names = names,
        hardware = [":%s_hardware" % _variant_label(name, v) for v in names],
        analyses = [":%s_analysis" % _variant_label(name, v) for v in names],
        compiled = [":%s_compiled" % _variant_label(name, v) for v in names],
        perf = [":%s_perf" % _variant_label(name, v) for v in names],
        **kwargs
    )
