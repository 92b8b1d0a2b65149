"""An analysis-time test that an mlir_import target provides a complete MlirModuleInfo."""

load("//common:providers.bzl", "MlirModuleInfo")

def _mlir_module_info_test_impl(ctx):
    info = ctx.attr.module[MlirModuleInfo]
    problems = []
    if info.mlir.basename != ctx.attr.expected_model_name + ".mlirbc":
        problems.append("mlir is %s" % info.mlir.basename)
    if info.golden.basename != ctx.attr.expected_model_name + ".golden.npz":
        problems.append("golden is %s" % info.golden.basename)
    if info.model_name != ctx.attr.expected_model_name:
        problems.append("model_name is %r" % info.model_name)
    if info.framework != ctx.attr.expected_framework:
        problems.append("framework is %r" % info.framework)
    if problems:
        fail("%s: MlirModuleInfo of %s: %s" % (ctx.label, ctx.attr.module.label, "; ".join(problems)))
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(script, "#!/bin/sh\nexit 0\n", is_executable = True)
    return [DefaultInfo(executable = script)]

mlir_module_info_test = rule(
    implementation = _mlir_module_info_test_impl,
    attrs = {
        "module": attr.label(mandatory = True, providers = [MlirModuleInfo]),
        "expected_model_name": attr.string(mandatory = True),
        "expected_framework": attr.string(mandatory = True),
    },
    test = True,
    doc = "Fails at analysis time unless `module` provides the expected MlirModuleInfo.",
)
