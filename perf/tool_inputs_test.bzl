"""tool_inputs_test: the pinned tools an action runs are among that action's inputs.

An analysis test (nothing is built or run): it reads the actions of `target_under_test` with
the given `mnemonic` and fails naming every file of `tools` (in the exec configuration, as the
perf rules take them) that one of them does not list as an input. A tool file that is an input
is part of the action's key (Bazel hashes each input's digest into it), so a different pin of
that tool (another @llvm19 .deb, another qemu build) is another action key: a remote cache
cannot hand one tool's measurement to a build with another.
"""

def _tool_inputs_test_impl(ctx):
    target = ctx.attr.target_under_test
    actions = [a for a in target[Actions].by_file.values() if a.mnemonic == ctx.attr.mnemonic]
    errors = []
    if not actions:
        errors.append("%s has no %s action" % (target.label, ctx.attr.mnemonic))
    seen = {}
    for action in actions:
        key = ",".join(sorted([f.path for f in action.outputs.to_list()]))
        if key in seen:
            continue
        seen[key] = True
        inputs = {f.path: True for f in action.inputs.to_list()}
        missing = [f.path for f in ctx.files.tools if f.path not in inputs]
        if missing:
            errors.append("%s's %s action (%s) lacks these tool inputs: %s" % (
                target.label,
                ctx.attr.mnemonic,
                key,
                ", ".join(missing),
            ))
    return [AnalysisTestResultInfo(success = not errors, message = "\n".join(errors) or "ok")]

tool_inputs_test = rule(
    implementation = _tool_inputs_test_impl,
    analysis_test = True,
    attrs = {
        "target_under_test": attr.label(mandatory = True),
        "mnemonic": attr.string(mandatory = True),
        "tools": attr.label_list(mandatory = True, allow_files = True, cfg = "exec"),
    },
)
