"""`riscv64_binary`: builds a cc_binary with the riscv64 toolchain.

A Starlark transition switches the dependency to `--platforms=//tools/riscv:riscv64_linux`
(with C toolchain resolution, which finds this folder's riscv64 toolchain), so
`bazel build //...` and `bazel test //...` produce the riscv64 binary next to the host one
without any extra flags.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

# The option that builds for riscv64 Linux (also cc_probe.bzl's): the platform. C toolchain
# resolution (.bazelrc turns it on for Bazel 4, whose transitions cannot set --incompatible_*
# options; Bazel 7's default) then picks //tools/riscv:riscv64_linux_toolchain, registered in
# WORKSPACE.
RISCV64_SETTINGS = {
    "//command_line_option:platforms": str(Label("//tools/riscv:riscv64_linux")),
}

def _riscv64_transition_impl(settings, attr):
    return RISCV64_SETTINGS

riscv64_transition = transition(
    implementation = _riscv64_transition_impl,
    inputs = [],
    outputs = RISCV64_SETTINGS.keys(),
)

RiscvCcToolchainInfo = provider(fields = {"cc": "the CcToolchainInfo the configuration resolves"})

def _resolved_cc_toolchain_impl(ctx):
    return [RiscvCcToolchainInfo(cc = find_cpp_toolchain(ctx))]

# The C toolchain as this target's configuration resolves it (through riscv64_transition:
# riscv64's). Bazel 4's @bazel_tools//tools/cpp:current_cc_toolchain answered the host's
# toolchain there (target_gnu_system_name "local"), though cc_binary got riscv64's.
resolved_cc_toolchain = rule(
    implementation = _resolved_cc_toolchain_impl,
    attrs = {"_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain")},
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)

def _riscv64_binary_impl(ctx):
    # Bazel 4's host configuration (genrule tools, cfg = "host") drops
    # --incompatible_enable_cc_toolchain_resolution, and --platforms alone then leaves the
    # host's C toolchain in place: an x86-64 binary under a riscv64 name. Refuse it.
    system = ctx.attr._cc_toolchain[0][RiscvCcToolchainInfo].cc.target_gnu_system_name
    if system != "riscv64-unknown-linux-gnu":
        fail("riscv64_binary(%s): the riscv64 configuration resolved a C toolchain for %s, not riscv64: " % (ctx.label, system) +
             "C toolchain resolution is off there (--incompatible_enable_cc_toolchain_resolution, .bazelrc; " +
             "Bazel 4's host configuration drops it): depend on this target with cfg = \"exec\" or \"target\", not \"host\"")
    src = ctx.attr.binary[0][DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = src)
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

riscv64_binary = rule(
    implementation = _riscv64_binary_impl,
    doc = "The `binary` target built for riscv64 Linux (run it under @qemu_user_backport//:qemu-riscv64).",
    attrs = {
        "binary": attr.label(mandatory = True, cfg = riscv64_transition),
        # The C toolchain `binary` is built with (checked to be riscv64's).
        "_cc_toolchain": attr.label(default = "//tools/riscv:resolved_cc_toolchain", cfg = riscv64_transition),
        "_whitelist_function_transition": attr.label(
            default = "@bazel_tools//tools/whitelists/function_transition_whitelist",
        ),
    },
)
