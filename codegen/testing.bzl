"""Test-only rules wrapping checked-in fixtures in the stage providers (until frontend/analysis land)."""

load("//common:providers.bzl", "AnalysisInfo", "IreeTargetInfo", "MlirModuleInfo")

def _fixture_module_impl(ctx):
    return [
        MlirModuleInfo(mlir = ctx.file.mlir, golden = ctx.file.golden, model_name = ctx.label.name, framework = "torch"),
        DefaultInfo(files = depset([ctx.file.mlir])),
    ]

fixture_module = rule(
    implementation = _fixture_module_impl,
    attrs = {
        "mlir": attr.label(mandatory = True, allow_single_file = True),
        "golden": attr.label(allow_single_file = True),
    },
)

def _fixture_analysis_impl(ctx):
    return [
        AnalysisInfo(
            analysis_json = ctx.file.json,
            module = ctx.attr.module[MlirModuleInfo],
            target = ctx.attr.target[IreeTargetInfo],
            hardware = None,
        ),
        DefaultInfo(files = depset([ctx.file.json])),
    ]

fixture_analysis = rule(
    implementation = _fixture_analysis_impl,
    attrs = {
        "json": attr.label(mandatory = True, allow_single_file = True),
        "module": attr.label(mandatory = True, providers = [MlirModuleInfo]),
        "target": attr.label(mandatory = True, providers = [IreeTargetInfo]),
    },
)
