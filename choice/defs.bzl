"""The choices made from measurements and the code model: each riscv dispatch's tiles
(`measured_choice`, by memory-aware cycles under qemu; `code_choice`, by the static code model)
and each pipeline target's build (`strategy_choice`, measured; `code_strategy_choice`, priced, on
riscv confirmed by measurement), replayed from the committed records in tuning/ where they match.
The Python they run is choice/tune.py and choice/choose.py; what they measure with is //perf."""

load("//common:providers.bzl", "AnalysisInfo", "CompiledModuleInfo", "IreeTargetInfo", "MlirModuleInfo", "PerfInfo")
load("//perf:defs.bzl", "LLVM_ATTRS", "llvm_dir", "perf_of")
load("//runtime:defs.bzl", "package_choice")

# Shortlist per riscv dispatch for the measured choice (choice/tune.py): IREE's default and the
# 2 other candidates the code model prices cheapest. Each is one more compile of the model and
# a qemu run of every dispatch it changes (for ResNet-18 about 40 s of a 324 s choice).
# Replaying the calibration models' own choices made with 4 (2026-11-26; a subset of what was
# measured, so exact): 3 picks the same candidates on all 7 calibration models.
MEASURED_CANDIDATES = 3

# Buffer placements a riscv switch from IREE's default is judged over (choice/tune.py
# beyond_spread): a candidate that beats the default at placement 0 is run with it under
# placements 1..3 too and is taken only when its worst placement beats the default's best.
# Chosen on the calibration models' placement spread (docs/data/placement_spread.md, 8
# placements of mlp, se_net and conv1d_audio, 2026-11-28: every dispatch's range is below 1.1%
# of its figure; placements 0..3 already show >= 80% of the 8-placement range on 31 of 37
# dispatches, and the 6 others move by 0.33% or less); each extra placement is two more qemu
# runs per switched dispatch.
MEASURED_PLACEMENTS = 4

# Candidates per riscv dispatch the code model (perf/code_model/) costs statically before the
# shortlist is made: IREE's default and the 5 best predicted others; the shortlist takes the
# cheapest of them. Each is one more compile of the model, no qemu run (for ResNet-18 about
# 20 s). Replayed as above, 6 instead of 8 changes one calibration model's choice: conv1d_audio
# at most 0.814x of IREE's default cycles instead of 0.787x (its best candidate is 8th by
# prediction); 7 loses the same. Chosen for CI time (README, CI).
CODE_RANKED = 6

StaleRecordsInfo = provider(
    doc = "What a keyed choice does when no committed record matches its key (//choice:stale_records).",
    fields = {"fail": "True: fail, naming the refresh command (`bazel test`); False: measure (`bazel build`)"},
)

def _stale_records_policy_impl(ctx):
    return [StaleRecordsInfo(fail = ctx.attr.fail)]

# //choice:stale_records: `fail` under --define=stale_records=fail, which .bazelrc sets for `bazel
# test`, so a stale or missing record fails the test path in seconds instead of measuring there
# (issue 76); `bazel build` still measures what no record holds.
stale_records_policy = rule(
    implementation = _stale_records_policy_impl,
    attrs = {"fail": attr.bool(mandatory = True)},
)

def _stale_record_fails(ctx):
    return ctx.attr._stale_records[StaleRecordsInfo].fail

def _run_tune(ctx, how, md_suffix, mnemonic, progress_message, inputs = [], outputs = [], execution_requirements = {}):
    """Runs choice.tune on ctx.attr.analysis with `how` (its choice's own flags) and returns the
    refined analysis' providers (AnalysisInfo, like the analysis it refines)."""
    analysis = ctx.attr.analysis[AnalysisInfo]
    out = ctx.actions.declare_file(ctx.label.name + ".analysis.json")
    out_md = ctx.actions.declare_file(ctx.label.name + md_suffix)
    args = ctx.actions.args()
    args.add("--module", analysis.module.mlir)
    args.add("--target", analysis.target.file)
    args.add("--analysis", analysis.analysis_json)
    args.add("--hardware", analysis.hardware)
    args.add("--model-name", analysis.module.model_name)
    llvm_bin, llvm_files = llvm_dir(ctx)
    args.add("--llvm-bin", llvm_bin)
    args.add_all(how)
    args.add("--out", out)
    args.add("--out-md", out_md)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = [analysis.module.mlir, analysis.target.file, analysis.analysis_json, analysis.hardware] + inputs + llvm_files,
        outputs = [out, out_md] + outputs,
        execution_requirements = execution_requirements,
        mnemonic = mnemonic,
        progress_message = progress_message % analysis.module.model_name,
    )
    return [
        AnalysisInfo(analysis_json = out, module = analysis.module, target = analysis.target, hardware = analysis.hardware),
        DefaultInfo(files = depset([out, out_md] + outputs), runfiles = ctx.runfiles(files = [out, out_md] + outputs)),
    ]

def _measured_choice_impl(ctx):
    target = ctx.attr.analysis[AnalysisInfo].target
    if target.hardware == None:
        fail("%s: %s was analysed for %s, which is not derived from an accelerator description (accelerator_target)" % (
            ctx.label,
            ctx.attr.analysis.label,
            target.name,
        ))
    how = ["--runner", ctx.file._runner.path, "--plugin", ctx.file._plugin.path, "--qemu", ctx.file._qemu.path,
           "--candidates", str(ctx.attr.candidates), "--code-ranked", str(ctx.attr.code_ranked),
           "--placements", str(ctx.attr.placements)]
    if ctx.attr.allow_no_core_model:
        how.append("--allow-no-core-model")
    inputs = [ctx.file._runner, ctx.file._plugin, ctx.file._qemu]
    outputs = []
    replayed = ""
    if ctx.attr.record_name:
        # Only this pipeline's record is an input: another's refresh does not rerun this choice.
        record = [f for f in ctx.files.records if f.basename == ctx.attr.record_name + ".json"]
        if len(record) > 1:
            fail("%s: %d records named %s.json among `records`" % (ctx.label, len(record), ctx.attr.record_name))
        record_out = ctx.actions.declare_file(ctx.label.name + ".record.json")
        outputs.append(record_out)
        how += [
            "--record-name",
            ctx.attr.record_name,
            "--record-out",
            record_out.path,
            "--refresh-target",
            "//%s:%s" % (ctx.label.package, ctx.attr.record_name),
        ]
        if record:
            how += ["--record", record[0].path]
            inputs += record
            replayed = ", or replayed from " + record[0].short_path
        if ctx.attr.records and _stale_record_fails(ctx):
            how.append("--stale-record-fails")
    elif ctx.attr.records:
        fail("%s: `records` without `record_name`" % ctx.label)
    # A choice keyed but given no records measures to make one (//tools:tune, the reproduce
    # test): never from a cache, or "measured again" would be a copy of the first measurement.
    # Given `records` that hold none of its (a sweep before its first refresh), it is an
    # ordinary measured choice, cached like any action.
    requirements = {}
    if ctx.attr.record_name and not ctx.attr.records:
        requirements = {"no-cache": "1"}
        how.append("--records-ignored")
    return _run_tune(
        ctx,
        how,
        ".tune.md",
        "MeasuredChoice",
        "Choosing %%s's tiles by RISC-V memory-aware cycles (%d candidates per dispatch%s)" % (ctx.attr.candidates, replayed),
        inputs = inputs,
        outputs = outputs,
        execution_requirements = requirements,
    )

measured_choice = rule(
    implementation = _measured_choice_impl,
    _skylark_testable = True,  # //choice:*_tool_inputs_test reads its actions' inputs
    attrs = dict({
        "analysis": attr.label(mandatory = True, providers = [AnalysisInfo], doc = "a zigzag_analysis for a riscv accelerator_target"),
        "candidates": attr.int(default = MEASURED_CANDIDATES, doc = "shortlist per dispatch: IREE's default and the best ranked others"),
        "code_ranked": attr.int(default = CODE_RANKED, doc = "candidates per dispatch costed by the code model to rank the shortlist (0: the prediction ranks it)"),
        "placements": attr.int(default = MEASURED_PLACEMENTS, doc = "buffer placements a switch from IREE's default must win under, every one"),
        "allow_no_core_model": attr.bool(default = False, doc = "a description without a core model keeps the predicted choice (a sweep's VLEN 256)"),
        "record_name": attr.string(doc = "the choice's tuning record, <record_name>.json (e.g. mlp_batch32_riscv): when set, the choice is keyed (choice/records.py), replayed from that file of `records` when its key matches, else measured, and its record written as <name>.record.json"),
        "records": attr.label_list(allow_files = True, doc = "committed tuning records (//tuning/records:all); only <record_name>.json is read"),
        "_tool": attr.label(default = "//choice:tune", executable = True, cfg = "exec"),
        "_runner": attr.label(default = "//runtime/hal_runner:hal_runner_riscv64", allow_single_file = True),
        "_plugin": attr.label(default = "//perf:libinsn_classes.so", allow_single_file = True, cfg = "exec"),
        # qemu-riscv64 10.0.2 built with plugins from the pinned source (the plugin loads into it).
        "_stale_records": attr.label(default = "//choice:stale_records", providers = [StaleRecordsInfo]),
        "_qemu": attr.label(default = "//tools/qemu:qemu-riscv64", allow_single_file = True, cfg = "exec"),
    }, **LLVM_ATTRS),
    doc = """<name>.analysis.json (AnalysisInfo, like the analysis it refines) + <name>.tune.md: each
dispatch's tiles chosen, among IREE's default and the candidates the code model (perf/code_model/)
costs cheapest among the analysis' best predicted (and ZigZag's own mapping), by measured memory-aware cycles on the accelerator's core model and caches (choice/tune.py); never a candidate measured
slower than IREE's default. Every shortlisted candidate's prediction and measurement is recorded.""",
)

# With model_pipeline's host_tiles = "code", the host's tiles are chosen by the code model alone
# (choice/tune.py --by code-model): host time is wall time, which a build cannot measure
# reproducibly. IREE's default and the 3 best predicted others are costed; all of them were
# among the candidates the host calibration timed, so the choice could be replayed on those
# timings.
HOST_CODE_RANKED = 4

# How much cheaper by the code model a host candidate must be to replace IREE's own choice:
# a tile candidate IREE's default tiles (code_choice), a strategy the tuned build
# (code_strategy_choice). Tiles: replayed on the calibration models' 30-round per-dispatch
# timings (docs/data/calibration/host.ranking.json, znver3 prices), 5% chose best of
# 0/5/10/15/20% (0.737x of IREE's default summed per model, geomean; no model slower).
# Strategies: the same 5% since 2026-11-26 (before: none), after repricing on znver3 turned
# near-ties into switches (se_net 0.99x, measured 0.94-1.08x; dilated_grouped_cnn, a held-out
# model, 1.00x, measured 1.06-1.10x slower); README says so. The riscv strategy choice
# (model_pipeline's strategy = "auto", since 2026-11-27) takes the same margin unchanged: it was
# not tuned on riscv prices.
HOST_CODE_MARGIN = "0.05"

def _choice_inputs_impl(ctx):
    analysis = ctx.attr.analysis[AnalysisInfo]
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    files = {
        "module": analysis.module.mlir,
        "target": analysis.target.file,
        "analysis": analysis.analysis_json,
        "hardware": analysis.hardware,
        "runner": ctx.file._runner,
        "plugin": ctx.file._plugin,
        "qemu": ctx.file._qemu,
        "llvm_mca": ctx.file._llvm_mca,  # --llvm-bin is its directory
    }
    ctx.actions.write(out, json.encode(dict(
        # `path`: from the execution root (the refresh runs there); `short_path`: in runfiles.
        files = {k: {"path": f.path, "short_path": f.short_path} for k, f in files.items()},
        model_name = analysis.module.model_name,
        candidates = MEASURED_CANDIDATES,
        code_ranked = CODE_RANKED,
        placements = MEASURED_PLACEMENTS,
        record_name = ctx.attr.record_name,
        refresh_target = "//%s:%s" % (ctx.attr.analysis.label.package, ctx.attr.record_name),  # the pipeline's package
        allow_no_core_model = ctx.attr.allow_no_core_model,
    )))
    return [DefaultInfo(files = depset([out] + files.values() + ctx.files._llvm),
                        runfiles = ctx.runfiles(files = [out] + files.values() + ctx.files._llvm))]

choice_inputs = rule(
    implementation = _choice_inputs_impl,
    attrs = dict({
        "analysis": attr.label(mandatory = True, providers = [AnalysisInfo]),
        "record_name": attr.string(mandatory = True, doc = "the tuning record the choice writes, e.g. mlp_batch32_riscv"),
        "allow_no_core_model": attr.bool(default = False, doc = "as measured_choice's"),
        "_runner": attr.label(default = "//runtime/hal_runner:hal_runner_riscv64", allow_single_file = True),
        "_plugin": attr.label(default = "//perf:libinsn_classes.so", allow_single_file = True, cfg = "exec"),
        "_qemu": attr.label(default = "//tools/qemu:qemu-riscv64", allow_single_file = True, cfg = "exec"),
    }, **LLVM_ATTRS),
    doc = """<name>.json: what `measured_choice` hands choice.tune for `analysis` (every file, by its
execution-root and its runfiles path; the model name; the shortlist, code-ranked and placement
defaults; the record's name and refresh target), the files built beside it: for what runs the
measured choice outside a build action (`tools/bazel run //tools:tune -- --ray-address`, and
//tuning:ray_cluster_test).""",
)

def _code_choice_impl(ctx):
    how = ["--by", "code-model", "--margin", ctx.attr.margin, "--code-ranked", str(ctx.attr.code_ranked)]
    inputs = []
    if ctx.file.code_calibration:
        how += ["--code-calibration", ctx.file.code_calibration.path]
        inputs.append(ctx.file.code_calibration)
    return _run_tune(
        ctx,
        how,
        ".choice.md",
        "CodeChoice",
        "Choosing %%s's tiles by %s (%d candidates per dispatch)" % (
            "calibrated code-model prices" if ctx.file.code_calibration else "code-model cycles",
            ctx.attr.code_ranked,
        ),
        inputs = inputs,
    )

code_choice = rule(
    implementation = _code_choice_impl,
    _skylark_testable = True,  # //choice:*_tool_inputs_test reads its actions' inputs
    attrs = dict({
        "analysis": attr.label(mandatory = True, providers = [AnalysisInfo], doc = "a zigzag_analysis whose hardware names a model_core"),
        "code_calibration": attr.label(allow_single_file = [".json"], doc = "a code-model calibration of the analysis' hardware (analysis/calibration/<hardware>.code_model.json, bench.host_ranking --fit): its term is added to every candidate's code-model cycles"),
        "code_ranked": attr.int(default = HOST_CODE_RANKED, doc = "candidates per dispatch costed: IREE's default and the best predicted others"),
        "margin": attr.string(default = HOST_CODE_MARGIN, doc = "a candidate replaces IREE's default only below (1 - margin) x its code-model cycles"),
        "_tool": attr.label(default = "//choice:tune", executable = True, cfg = "exec"),
    }, **LLVM_ATTRS),
    doc = """<name>.analysis.json (AnalysisInfo, like the analysis it refines) + <name>.choice.md: each
dispatch's tiles chosen by the static code model (perf/code_model/) on the description's core
model among IREE's default and the best predicted others (choice/tune.py --by code-model); IREE's
default kept unless a candidate is `margin` cheaper. Every costed candidate is recorded.""",
)

def _one_module(ctx, compiled_targets):
    """The MlirModuleInfo every candidate build was compiled from; fail() naming one that differs."""
    module = compiled_targets[0][MlirModuleInfo]
    for compiled_target in compiled_targets[1:]:
        this_module = compiled_target[MlirModuleInfo]
        if this_module.mlir != module.mlir:
            fail("%s: %s compiles %s, not %s: candidates are builds of one module" % (
                ctx.label,
                compiled_target.label,
                this_module.mlir.short_path,
                module.mlir.short_path,
            ))
    return module

def _package_choice(ctx, args, inputs, module, mnemonic, progress_message, candidates, hardware = None, extra_outputs = [], output_groups = {}):
    """Runs choice.choose with `args` (the candidates and how to choose): its decision
    (<name>.choice.json, with a copy of the chosen build) is packaged by runtime/ as <name>.vmfb
    + <name>.manifest.json (runtime/defs.bzl package_choice; `candidates` and `hardware` as it
    takes them). Outputs those and `extra_outputs` (named in `args`); the decision and its copy
of the chosen build are the output group `decision`."""
    decision = ctx.actions.declare_file(ctx.label.name + ".choice.json")
    chosen_vmfb = ctx.actions.declare_file(ctx.label.name + ".chosen.vmfb")
    chosen_report = ctx.actions.declare_file(ctx.label.name + ".chosen.report.json")
    args.add("--module", module.mlir)
    args.add("--out-choice", decision)
    args.add("--out-chosen-vmfb", chosen_vmfb)
    args.add("--out-chosen-report", chosen_report)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs + [module.mlir],
        outputs = [decision, chosen_vmfb, chosen_report] + extra_outputs,
        mnemonic = mnemonic,
        progress_message = progress_message,
    )
    vmfb, manifest = package_choice(ctx, ctx.executable._packager, decision, chosen_vmfb, chosen_report,
                                    module.mlir, candidates, hardware)
    return [
        DefaultInfo(files = depset([vmfb, manifest] + extra_outputs), runfiles = ctx.runfiles(files = [vmfb, manifest])),
        OutputGroupInfo(decision = depset([decision, chosen_vmfb, chosen_report]), **output_groups),
    ]

def _strategy_choice_impl(ctx):
    if len(ctx.attr.strategies) != len(ctx.attr.compiled) or len(ctx.attr.compiled) != len(ctx.attr.perf):
        fail("%s: `strategies`, `compiled` and `perf` must have one entry per candidate" % ctx.label)
    module = _one_module(ctx, ctx.attr.compiled)
    args = ctx.actions.args()
    inputs = []
    candidates = []
    for strategy, compiled_target, perf_target in zip(ctx.attr.strategies, ctx.attr.compiled, ctx.attr.perf):
        compiled = compiled_target[CompiledModuleInfo]
        perf_json = perf_of(ctx.label, perf_target, compiled_target).perf_json
        args.add_all("--candidate", [strategy, compiled.vmfb, compiled.report, compiled.target.file, perf_json])
        inputs += [compiled.vmfb, compiled.report, compiled.target.file, perf_json]
        candidates.append((strategy, compiled.target.file, None))  # packaged without analyses
    return _package_choice(
        ctx,
        args,
        inputs,
        module,
        "StrategyChoice",
        "Choosing %s's strategy by RISC-V memory-aware cycles (%s)" % (module.model_name, ", ".join(ctx.attr.strategies)),
        candidates,
    )

strategy_choice = rule(
    implementation = _strategy_choice_impl,
    _skylark_testable = True,  # //perf:*_perf_info_test reads its actions' inputs
    attrs = {
        "strategies": attr.string_list(mandatory = True),
        "compiled": attr.label_list(mandatory = True, providers = [CompiledModuleInfo, MlirModuleInfo]),
        "perf": attr.label_list(mandatory = True, providers = [PerfInfo]),
        "_tool": attr.label(default = "//choice:choose", executable = True, cfg = "exec"),
        "_packager": attr.label(default = "//runtime:manifest", executable = True, cfg = "exec"),
    },
    doc = """<name>.vmfb + <name>.manifest.json: of builds of one module under several lowering
strategies (`strategies[i]` compiled as `compiled[i]`, measured by riscv_perf `perf[i]`), the one
with the fewest memory-aware cycles for one call of the model on the first measured core; every
candidate's figure and the reason are in the manifest (`strategy_choice`).""",
)


def _code_cycles_args(ctx):
    """(args, inputs) every choice.choose run of a code_strategy_choice starts with: priced by the
    code model on the description's core, with its margin and LLVM 19's tools."""
    args = ctx.actions.args()
    args.add("--by", "code-cycles")
    args.add("--margin", ctx.attr.margin)
    args.add("--hardware", ctx.file.hardware)
    llvm_bin, llvm_files = llvm_dir(ctx)
    args.add("--llvm-bin", llvm_bin)
    return args, [ctx.file.hardware] + llvm_files

def _code_strategy_choice_impl(ctx):
    compiled_strategies = ctx.attr.compiled_strategies or ctx.attr.strategies
    if len(compiled_strategies) != len(ctx.attr.compiled):
        fail("%s: `compiled_strategies` must name the strategy of each of `compiled`" % ctx.label)
    built = dict(zip(compiled_strategies, ctx.attr.compiled))
    unbuilt = {strategy: target for target, strategy in ctx.attr.unbuilt_targets.items()}
    for strategy in ctx.attr.strategies:
        if (strategy in built) == (strategy in unbuilt):
            fail("%s: candidate %s must be in exactly one of `compiled` and `unbuilt_targets`" % (ctx.label, strategy))
    extra = sorted([s for s in list(built) + list(unbuilt) if s not in ctx.attr.strategies])
    if extra:
        fail("%s: %s is not one of `strategies`" % (ctx.label, extra[0]))
    if ctx.attr.strategies[0] not in built:
        fail("%s: the baseline %s must be built (`compiled`)" % (ctx.label, ctx.attr.strategies[0]))
    if unbuilt and not ctx.file.record:
        fail("%s: candidates without a build (`unbuilt_targets`) need the `record` that chose another" % ctx.label)
    module = _one_module(ctx, ctx.attr.compiled)
    args, inputs = _code_cycles_args(ctx)
    candidates = []
    for strategy in ctx.attr.strategies:
        if strategy in unbuilt:
            # Compiled by choice.choose with the target's IREE defaults if the record is stale.
            target_file = unbuilt[strategy][IreeTargetInfo].file
            args.add_all("--candidate", [strategy, "none", "none", target_file, "none"])
            inputs.append(target_file)
            candidates.append((strategy, target_file, None))
            continue
        compiled = built[strategy][CompiledModuleInfo]
        analysis = compiled.analysis.analysis_json if compiled.analysis != None else None
        args.add_all("--candidate", [strategy, compiled.vmfb, compiled.report, compiled.target.file, analysis or "none"])
        inputs += [compiled.vmfb, compiled.report, compiled.target.file] + ([analysis] if analysis else [])
        candidates.append((strategy, compiled.target.file, analysis))
        if compiled.code != None:  # costed as built; otherwise choice.choose compiles it again
            args.add_all("--code", [strategy, compiled.code.path])
            inputs.append(compiled.code)
    if ctx.attr.confirm:
        args.add_all("--confirm", [ctx.file.hardware, ctx.file._runner, ctx.file._plugin, module.model_name])
        args.add("--qemu", ctx.file._qemu)
        inputs += [ctx.file._runner, ctx.file._plugin, ctx.file._qemu]
        # What is measured is each candidate's own compile: the vmfb that ships if it is chosen.
        for strategy in ctx.attr.strategies:
            if strategy in built:
                compiled = built[strategy][CompiledModuleInfo]
                if compiled.layout == None:
                    fail("%s: confirm measures %s's build, whose target has no accelerator (no layout)" % (ctx.label, strategy))
                args.add_all("--layout", [strategy, compiled.layout])
                inputs.append(compiled.layout)
        if ctx.attr.default_compiled:
            default = ctx.attr.default_compiled[CompiledModuleInfo]
            if default.layout == None:
                fail("%s: `default_compiled` has no layout: not an accelerator's build" % ctx.label)
            args.add_all("--default-build", [default.vmfb, default.report, default.layout])
            inputs += [default.vmfb, default.report, default.layout]
    elif ctx.attr.default_compiled:
        fail("%s: `default_compiled` is what `confirm` measures" % ctx.label)
    outputs = []
    output_groups = {}
    if ctx.attr.record_name:
        output_groups["strategy_key"] = depset([_strategy_key(ctx, module, candidates)])
        record_out = ctx.actions.declare_file(ctx.label.name + ".strategy_record.json")
        args.add("--record-name", ctx.attr.record_name)
        args.add("--refresh-target", ctx.attr.refresh_target)
        args.add("--record-out", record_out)
        outputs.append(record_out)
        if ctx.file.record:
            args.add("--record", ctx.file.record)
            inputs.append(ctx.file.record)
        elif ctx.attr.records_ignored:
            args.add("--records-ignored")
        if not ctx.attr.records_ignored and _stale_record_fails(ctx):
            args.add("--stale-record-fails")
    return _package_choice(
        ctx,
        args,
        inputs,
        module,
        "CodeStrategyChoice",
        "Choosing %s's strategy by the code model on %s (%s%s)" % (
            module.model_name,
            ctx.file.hardware.basename,
            ", ".join(ctx.attr.strategies),
            "; record " + ctx.file.record.basename if ctx.file.record else "",
        ),
        candidates,
        # The manifest records the hardware of the build's analysis: an untuned build has none.
        hardware = ctx.file.hardware,
        extra_outputs = outputs,
        output_groups = output_groups,
    )

def _strategy_key(ctx, module, candidates):
    """<name>.strategy_key.json, the key the choice is replayed by (choice.choose --out-key), from the
    candidates' targets and analyses alone: the output group `strategy_key`, which
    //tuning:strategy_keys_test checks every committed record against without compiling a build."""
    key = ctx.actions.declare_file(ctx.label.name + ".strategy_key.json")
    args, inputs = _code_cycles_args(ctx)
    inputs.append(module.mlir)
    for strategy, target_file, analysis in candidates:
        args.add_all("--candidate", [strategy, "none", "none", target_file, analysis or "none"])
        inputs += [target_file] + ([analysis] if analysis else [])
    if ctx.attr.confirm:
        args.add_all("--confirm", [ctx.file.hardware, ctx.file._runner, ctx.file._plugin, module.model_name])
        args.add("--qemu", ctx.file._qemu)
        inputs += [ctx.file._runner, ctx.file._plugin, ctx.file._qemu]
    args.add("--record-name", ctx.attr.record_name)
    args.add("--refresh-target", ctx.attr.refresh_target)
    args.add("--module", module.mlir)
    args.add("--out-key", key)
    ctx.actions.run(
        executable = ctx.executable._tool,
        arguments = [args],
        inputs = inputs,
        outputs = [key],
        mnemonic = "StrategyKey",
        progress_message = "Keying %s's strategy choice on %s" % (module.model_name, ctx.file.hardware.basename),
    )
    return key

_code_strategy_choice = rule(
    implementation = _code_strategy_choice_impl,
    _skylark_testable = True,  # //choice:*_tool_inputs_test reads its actions' inputs
    attrs = dict({
        "strategies": attr.string_list(mandatory = True),
        "compiled": attr.label_list(mandatory = True, providers = [CompiledModuleInfo, MlirModuleInfo]),
        "compiled_strategies": attr.string_list(doc = "the strategy of each of `compiled` (default: `strategies`)"),
        "unbuilt_targets": attr.label_keyed_string_dict(providers = [IreeTargetInfo], doc = "target -> candidate not built here (the record chose another); compiled by choice.choose, IREE defaults, only if the record is stale"),
        "hardware": attr.label(mandatory = True, allow_single_file = [".yaml"]),
        "margin": attr.string(default = HOST_CODE_MARGIN, doc = "another strategy replaces the first only below (1 - margin) x its code-model cycles"),
        "confirm": attr.bool(default = False, doc = "riscv: keep another strategy only if also measured faster than the first (perf.measure on `hardware`)"),
        "default_compiled": attr.label(providers = [CompiledModuleInfo], doc = "confirm: IREE's defaults for the first candidate's target, the energy reference (without it, compiled by the choice when a stale record needs it)"),
        "record_name": attr.string(doc = "<pipeline>_<target>: key the choice; writes <name>.strategy_record.json"),
        "refresh_target": attr.string(doc = "the label //tools:tune refreshes the record with"),
        "records_ignored": attr.bool(doc = "no `record` on purpose: the choice that makes the record"),
        "record": attr.label(allow_single_file = [".json"], doc = "the committed strategy record (tuning/strategies/<record_name>.json), replayed when its key matches"),
        "_tool": attr.label(default = "//choice:choose", executable = True, cfg = "exec"),
        "_packager": attr.label(default = "//runtime:manifest", executable = True, cfg = "exec"),
        "_runner": attr.label(default = "//runtime/hal_runner:hal_runner_riscv64", allow_single_file = True),
        "_plugin": attr.label(default = "//perf:libinsn_classes.so", allow_single_file = True, cfg = "exec"),
        # qemu-riscv64 10.0.2 built with plugins from the pinned source (the plugin loads into it).
        "_stale_records": attr.label(default = "//choice:stale_records", providers = [StaleRecordsInfo]),
        "_qemu": attr.label(default = "//tools/qemu:qemu-riscv64", allow_single_file = True, cfg = "exec"),
    }, **LLVM_ATTRS),
)

def code_strategy_choice(name, strategies, compiled, hardware, confirm = False, default_compiled = None, record = None, record_name = None, unbuilt_targets = {}, records_ignored = False, **kwargs):
    """<name>.vmfb + <name>.manifest.json: of builds of one module under several lowering
    strategies, the one with the fewest cycles for one call of the model by the static code
    model (perf/code_model/) on `hardware`'s `model_core`; no run of the code. A build the code
    model cannot cost whole is left out (recorded); when that is the first (the baseline), the
    baseline is kept. Every candidate's figure and the reason are recorded in the manifest
    (`strategy_choice`).

    Args:
      name: target name.
      strategies: candidate names, the baseline first (ties go to the earlier).
      compiled: strategy -> its iree_compile target, all of one module and instruction set:
        every candidate's, or (with `record`) at least the baseline's and the recorded choice's.
      hardware: the description whose `model_core` prices the code.
      confirm: (riscv) when the code model prefers another build to the baseline, measure both
        (perf.measure of each build's own vmfb: qemu counts, model cycles on `hardware`'s core
        model) and keep the other only if it is measured faster.
      default_compiled: (confirm) the iree_compile of IREE's defaults for the baseline's target,
        measured as the energy reference; without it (a replayed record, which measures nothing),
        a stale record's choice compiles it itself.
      record: the committed strategy record (tuning/strategies/<record_name>.json): when its key
        is the tree's the choice is replayed from it; otherwise every candidate is measured,
        the missing builds compiled by the choice itself, and it says so.
      record_name: <pipeline>_<target>: key the choice and write <name>.strategy_record.json
        (what `bazel run //tools:tune -- //<package>:<record_name>` commits).
      unbuilt_targets: strategy -> its IREE target, for each candidate not in `compiled`
        (compiled with the target's defaults only when the record is stale).
      records_ignored: no `record` on purpose (the choice //tools:tune makes a record from).
      **kwargs: forwarded to the rule (tags, visibility, ...).
    """
    if type(compiled) != type({}):
        fail("code_strategy_choice(%s): `compiled` maps each strategy to its iree_compile target" % name)
    if len(strategies) < 2:
        fail("code_strategy_choice(%s): needs at least two candidates, got %s" % (name, strategies))
    unknown = [s for s in compiled if s not in strategies]
    if unknown:
        fail("code_strategy_choice(%s): compiled[%r] is not one of `strategies`" % (name, unknown[0]))
    missing = [s for s in strategies if s not in compiled]
    if missing and not record:
        fail("code_strategy_choice(%s): no build of %s, and no `record` to replay" % (name, missing[0]))
    if sorted(missing) != sorted(unbuilt_targets):
        fail("code_strategy_choice(%s): `unbuilt_targets` must name exactly the candidates not compiled (%s)" % (name, missing))
    ordered = [s for s in strategies if s in compiled]
    _code_strategy_choice(
        name = name,
        strategies = strategies,
        compiled = [compiled[s] for s in ordered],
        compiled_strategies = ordered,
        unbuilt_targets = {target: strategy for strategy, target in unbuilt_targets.items()},
        hardware = hardware,
        confirm = confirm,
        default_compiled = default_compiled,
        record = record,
        record_name = record_name,
        records_ignored = records_ignored,
        refresh_target = "//%s:%s" % (native.package_name(), record_name) if record_name else None,
        **kwargs
    )
