"""perf_info_test: riscv_perf returns a PerfInfo that consumers can rely on instead of file names.

An analysis test (nothing is built or run): `target_under_test`, a riscv_perf target, must
return PerfInfo whose perf_json / perf_md are the outputs of its RiscvPerf action (and all of
its DefaultInfo), whose `compiled` is `compiled`'s build and whose `hardware` is `hardware`, in
order. With `consumer`, that target's `consumer_mnemonic` action must read the perf_json it
got through the provider.
"""

load("//common:providers.bzl", "CompiledModuleInfo", "PerfInfo")

def _perf_info_test_impl(ctx):
    target = ctx.attr.target_under_test
    label = target.label
    errors = []
    if PerfInfo not in target:
        errors.append("%s returns no PerfInfo" % label)
    else:
        perf = target[PerfInfo]
        outputs = {}
        for action in target[Actions].by_file.values():
            if action.mnemonic == "RiscvPerf":
                outputs.update({f.path: True for f in action.outputs.to_list()})
        for field, suffix in (("perf_json", ".perf.json"), ("perf_md", ".perf.md")):
            f = getattr(perf, field)
            if not f.basename.endswith(suffix):
                errors.append("%s: PerfInfo.%s is %s, not a %s file" % (label, field, f.path, suffix))
            if f.path not in outputs:
                errors.append("%s: PerfInfo.%s (%s) is not an output of its RiscvPerf action" % (label, field, f.path))
        default = sorted([f.path for f in target[DefaultInfo].files.to_list()])
        if default != sorted([perf.perf_json.path, perf.perf_md.path]):
            errors.append("%s: DefaultInfo files %s are not PerfInfo's perf_json and perf_md" % (label, default))
        want = ctx.attr.compiled[CompiledModuleInfo]
        if perf.compiled.vmfb != want.vmfb or perf.compiled.report != want.report:
            errors.append("%s: PerfInfo.compiled is %s, not %s's build" % (label, perf.compiled.vmfb.path, ctx.attr.compiled.label))
        got_hw = [f.path for f in perf.hardware]
        want_hw = [f.path for f in ctx.files.hardware]
        if got_hw != want_hw:
            errors.append("%s: PerfInfo.hardware is %s, expected %s" % (label, got_hw, want_hw))
        if ctx.attr.consumer:
            consumer = ctx.attr.consumer
            actions = [a for a in consumer[Actions].by_file.values() if a.mnemonic == ctx.attr.consumer_mnemonic]
            if not actions:
                errors.append("%s has no %s action" % (consumer.label, ctx.attr.consumer_mnemonic))
            for action in actions:
                if perf.perf_json.path not in [f.path for f in action.inputs.to_list()]:
                    errors.append("%s's %s action does not read %s" % (consumer.label, action.mnemonic, perf.perf_json.path))
    return [AnalysisTestResultInfo(success = not errors, message = "\n".join(errors) or "ok")]

perf_info_test = rule(
    implementation = _perf_info_test_impl,
    analysis_test = True,
    attrs = {
        "target_under_test": attr.label(mandatory = True, doc = "a riscv_perf target"),
        "compiled": attr.label(mandatory = True, providers = [CompiledModuleInfo], doc = "the build it measures"),
        "hardware": attr.label_list(mandatory = True, allow_files = [".yaml"], doc = "the descriptions it measures on, in order"),
        "consumer": attr.label(doc = "a target whose action reads the measurement (a _skylark_testable rule)"),
        "consumer_mnemonic": attr.string(doc = "that action's mnemonic"),
    },
)
