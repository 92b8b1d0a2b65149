"""`iree_target`: names an IREE compile target file for the pipeline rules."""

load("//common:providers.bzl", "IreeTargetInfo")

def _iree_target_impl(ctx):
    return [
        IreeTargetInfo(name = ctx.label.name, file = ctx.file.src, hardware = None),
        DefaultInfo(files = depset([ctx.file.src])),
    ]

iree_target = rule(
    implementation = _iree_target_impl,
    attrs = {
        "src": attr.label(mandatory = True, allow_single_file = [".yaml"]),
    },
    doc = "An IREE target (triple, CPU, features, global flags) declared in a YAML file.",
)
