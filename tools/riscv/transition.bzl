"""`riscv64_binary`: builds a cc_binary with the riscv64 toolchain.

A Starlark transition switches the dependency to `--cpu=riscv64` with this
folder's cc_toolchain_suite, so `bazel build //...` and `bazel test //...`
produce the riscv64 binary next to the host one without any extra flags.
"""

# The options that build for riscv64 (also perf/tool_inputs_test.bzl's riscv64 analysis tests).
RISCV64_SETTINGS = {
    "//command_line_option:cpu": "riscv64",
    "//command_line_option:crosstool_top": "//tools/riscv:toolchain",
}

def _riscv64_transition_impl(settings, attr):
    return RISCV64_SETTINGS

riscv64_transition = transition(
    implementation = _riscv64_transition_impl,
    inputs = [],
    outputs = RISCV64_SETTINGS.keys(),
)

def _riscv64_binary_impl(ctx):
    src = ctx.attr.binary[0][DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = src)
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

riscv64_binary = rule(
    implementation = _riscv64_binary_impl,
    doc = "The `binary` target built for riscv64 Linux (run it under @qemu_user_backport//:qemu-riscv64).",
    attrs = {
        "binary": attr.label(mandatory = True, cfg = riscv64_transition),
        "_whitelist_function_transition": attr.label(
            default = "@bazel_tools//tools/whitelists/function_transition_whitelist",
        ),
    },
)
