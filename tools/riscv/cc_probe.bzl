"""`cc_probe`: compiles and links `srcs` with the riscv64 C toolchain through cc_common (the
calls cc_binary makes) in a Starlark rule. Bazel 4 gives analysis tests the actions of
`_skylark_testable` Starlark rules only (not cc_binary's), and only in the test's own
configuration: the probe stays there and takes the C toolchain as the riscv64 configuration
resolves it, so //tools/riscv's tool input tests see the CppCompile and CppLink actions that
toolchain makes."""

load(":transition.bzl", "RiscvCcToolchainInfo", "riscv64_transition")

_ProbedToolchainInfo = provider(fields = {"all_files": "the C toolchain's all_files (depset)"})

def _cc_probe_impl(ctx):
    toolchain = ctx.attr._riscv64_cc_toolchain[0][RiscvCcToolchainInfo].cc
    features = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    _, outputs = cc_common.compile(
        name = ctx.label.name,
        actions = ctx.actions,
        feature_configuration = features,
        cc_toolchain = toolchain,
        srcs = [f for f in ctx.files.srcs if not f.path.endswith(".h")],
        private_hdrs = [f for f in ctx.files.srcs if f.path.endswith(".h")],
    )
    linked = cc_common.link(
        name = ctx.label.name,
        actions = ctx.actions,
        feature_configuration = features,
        cc_toolchain = toolchain,
        compilation_outputs = outputs,
    )
    return [
        DefaultInfo(files = depset([linked.executable])),
        _ProbedToolchainInfo(all_files = toolchain.all_files),
    ]

cc_probe = rule(
    implementation = _cc_probe_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".c", ".h"], mandatory = True),
        # The C toolchain as the riscv64 configuration resolves it (//tools/riscv's), while
        # this rule and its actions stay in the test's configuration.
        "_riscv64_cc_toolchain": attr.label(
            default = "//tools/riscv:resolved_cc_toolchain",
            cfg = riscv64_transition,
        ),
        "_whitelist_function_transition": attr.label(
            default = "@bazel_tools//tools/whitelists/function_transition_whitelist",
        ),
    },
    fragments = ["cpp"],
    _skylark_testable = True,  # the tool input tests read its actions' inputs
)

def _toolchain_inputs_test_impl(ctx):
    probe = ctx.attr.probe
    errors = []
    toolchain_files = {f.path: True for f in probe[_ProbedToolchainInfo].all_files.to_list()}
    missing = [f.path for f in ctx.files.tools if f.path not in toolchain_files]
    if missing:
        errors.append("the riscv64 C toolchain's files lack %d of the tools: %s" % (len(missing), ", ".join(missing[:10])))
    actions = [a for a in probe[Actions].by_file.values() if a.mnemonic == ctx.attr.mnemonic]
    if not actions:
        errors.append("%s has no %s action" % (probe.label, ctx.attr.mnemonic))
    for action in {",".join(sorted([o.path for o in a.outputs.to_list()])): a for a in actions}.values():
        inputs = [f.path for f in action.inputs.to_list()]
        if ctx.attr.middleman not in [p.split("/")[-1] for p in inputs if "/internal/_middlemen/" in p]:
            errors.append("%s's %s action has no input %s (the toolchain's files): its inputs are %s" % (
                probe.label,
                ctx.attr.mnemonic,
                ctx.attr.middleman,
                ", ".join(inputs),
            ))
    return [AnalysisTestResultInfo(success = not errors, message = "\n".join(errors) or "ok")]

riscv64_toolchain_inputs_test = rule(
    implementation = _toolchain_inputs_test_impl,
    doc = """Every file of `tools` is one of the riscv64 C toolchain's files, and `probe`'s
`mnemonic` actions take those files as an input. Bazel 4 hands a C action its toolchain's
files as one middleman artifact (named after the cc_toolchain's files filegroup, here
`middleman`), which Starlark cannot expand: the test checks that the toolchain's all_files
holds every tool file and that each action has that middleman among its inputs. At execution
the middleman expands to the files (each in the sandbox, each digest in the action's key:
another pin is another key).""",
    analysis_test = True,
    attrs = {
        "probe": attr.label(mandatory = True, providers = [_ProbedToolchainInfo]),
        "mnemonic": attr.string(mandatory = True),
        "middleman": attr.string(mandatory = True, doc = "the middleman's file name, e.g. tools_Sriscv_Ctoolchain_Ufiles"),
        "tools": attr.label_list(mandatory = True, allow_files = True),
    },
)
