"""`model_pipeline`: one stanza per model yields the whole chain.

    model_pipeline(
        name = "resnet",            # prefix of the pipeline targets
        model_name = "resnet18",    # the import target is <model_name>_import
        model = ":resnet18",        # py_library with the factory
        module = "models.resnet18",
        framework = "torch",
    )

gives, for each pipeline target T (common/pipeline_targets.py: riscv, host):
    <name>_T_analysis   zigzag_analysis against the T hardware description; for riscv the
                        measured choice (choice/tune.py, model cycles under qemu) among the
                        candidates of <name>_riscv_predicted_analysis; for the host with
                        `host_tiles = "code"` the static code model's (choice:code_choice),
                        else, uncalibrated, IREE's defaults without running ZigZag
                        (<name>_host_predicted_analysis, `manual`, has its candidates for bench)
    <name>_T_compiled   iree_compile with the analysis' tiles
    <name>_T            <name>_T.vmfb + <name>_T.manifest.json: the build the static code
                        model prices cheapest on T's core model of tuned and the STRATEGIES
                        builds (`strategies[T]` = "auto", the default), its
                        manifest saying which and why
plus <name>_host_iree_default (IREE's defaults, same target flags) for comparison,
<name>_riscv_perf and <name>_riscv_iree_default_perf (riscv_perf: per-dispatch instruction
counts and model cycles of the tuned and the IREE-default riscv modules; `manual` by
default: measurements, built on request or by //tools:bench, not by `//...`),
and the tests <name>_pipeline_test (host numerics vs the framework golden,
configs landed, riscv HAL executables are RVV code) and
<name>_riscv_dispatch_test and <name>_riscv512_dispatch_test (every dispatch each riscv target
ships run under qemu on the model's real activations vs the host's run of it), each opt-out
(`gen_test`, `gen_dispatch_test`).

Every name is spelled once, in `pipeline_names(name, target)` and `model_names(name,
model_name)`; BUILD files that refer to a pipeline's outputs load them from here. The macro is
its parts in data-flow order: `_tiles` (analysis and choice), `_builds` (one compile per build),
`_shipped` (what <name>_<target> packages), `_measurements` (perf reports and their indexes),
then the tests; hardware_sweep reuses `_chosen_tiles` and the same names per variant.
"""

load("@rules_python//python:defs.bzl", "py_test")
load("@pypi//:requirements.bzl", "requirement")
load("//analysis:defs.bzl", "accelerator_target", "hardware_variant", "zigzag_analysis")
load("//codegen:defs.bzl", "iree_compile", "strategy_target")
load("//common:registries.bzl", "CHOICE_CANDIDATES", "DEFAULT_STRATEGY", "PIPELINE_STRATEGIES", "STOCK_IREE_STRATEGY", "STRATEGIES", "TILED_STRATEGIES", "TUNED", REGISTERED_PIPELINE_TARGETS = "PIPELINE_TARGETS")
load("//frontend:defs.bzl", "mlir_import")
load("//choice:defs.bzl", "choice_inputs", "code_choice", "code_strategy_choice", "measured_choice", "strategy_choice")
load("//perf:defs.bzl", "explore_index", "perf_index", "riscv_perf", "shipped_perf", "sweep_report")
load("//runtime:defs.bzl", "dispatch_reference", "hal_module")
load("//tuning/strategies:recorded.bzl", "RECORDED_STRATEGIES")

# The test tiers (README, which tests): "fast" is what `bazel test //...` runs (its budget: 15
# min cold on 2 cores); "slow" tests are `manual` (left out of `//...`, run when named) and
# tagged `slow`, which the slow tier selects:
#   tools/bazel query 'attr(tags, "\bslow\b", tests(//...))' | xargs tools/bazel test
# .ci/run runs both.
TEST_TIERS = {"fast": [], "slow": ["manual", "slow"]}

def _project(label):
    """A label of this project as a string that names it from any workspace: `//x:y` here,
    `@riscv_ml_toolchain//x:y` in a workspace that loads the project as a repository (a plain
    string a macro passes on resolves against the calling package's repository)."""
    return str(Label(label))

def _in_package(path):
    """`path`, a file of the calling package, relative to its repository's runfiles root."""
    package = native.package_name()
    return "%s/%s" % (package, path) if package else path

def accelerator(name, hardware, isa = "//common:riscv64_rvv", visibility = None):
    """An accelerator a model_pipeline ships for (`model_pipeline(accelerator = ":<name>")`).

    Makes <name> (the riscv IREE target: `isa`'s flags with the description's VLEN),
    <name>_hardware.yaml (the description) and <name>_<strategy> for every lowering strategy
    (STRATEGIES), which model_pipeline derives by name.

    Args:
      name: the accelerator's name.
      hardware: its description, a YAML of common/hardware.py's schema (copy
        analysis/hardware/riscv_rvv.yaml): VLEN, FMA pipes, caches, bandwidths, energies and
        `model_core`, an llvm-mca core of common/core_models.py with the same VLEN
        (sifive-p670: 128, sifive-x280: 512); other VLENs are refused by the measured choice.
      isa: the riscv target file its ISA and IREE flags come from.
      visibility: of the targets made.
    """
    accelerator_target(name = name, base = _project(isa), hardware = hardware, visibility = visibility)
    native.alias(name = name + "_hardware.yaml", actual = hardware, visibility = visibility)
    for strategy in STRATEGIES:
        strategy_target(name = "%s_%s" % (name, strategy), base = ":" + name, strategy = strategy, visibility = visibility)

# Pipeline target suffix -> (IREE target, hardware description it is tuned for, cost-model
# calibration for that hardware), from the registry (common/pipeline_targets.py).
PIPELINE_TARGETS = {
    suffix: (_project(t.iree_target), _project(t.hardware), _project(t.calibration) if t.calibration else None)
    for suffix, t in REGISTERED_PIPELINE_TARGETS.items()
}

# Lowering strategies other than the tuned direct codegen (STRATEGIES, common/targets.py), each
# with its derived target per pipeline target, named after it (//codegen:<target name>_<strategy>).
STRATEGY_TARGETS = {
    (pipeline, strategy): _project("//codegen:%s_%s" % (target.split(":")[1], strategy))
    for pipeline, (target, _hardware, _calibration) in PIPELINE_TARGETS.items()
    for strategy in STRATEGIES
}

# What `<name>_riscv` and `<name>_host` are built with (model_pipeline's `strategies`,
# per pipeline target): one strategy, or a choice among builds of the module under each:
# "auto", of tuned and STRATEGIES the fewest cycles per call by the static code model on the
# pipeline target's core model (choice:code_strategy_choice; on riscv another build than tuned is
# kept only if also measured faster than tuned); "measured" (riscv only), of tuned,
# codegen and STRATEGIES the fewest RISC-V model cycles per call, measured under qemu
# (choice:strategy_choice; every candidate runs whole under qemu, so it costs several builds'
# measurements). PIPELINE_STRATEGIES and CHOICE_CANDIDATES come from common/targets.py.

# How the host's tiles are chosen (model_pipeline's `host_tiles`).
HOST_TILE_CHOICES = ("predicted", "code")

# What host_tiles = "code" adds to each candidate's code-model cycles: one tile-model feature's
# weight, fitted on the calibration split's one-thread host timings (bench.host_ranking --fit).
HOST_CODE_CALIBRATION = _project("//analysis:calibration/host.code_model.json")

# The committed tuning records of the riscv measured choices (common/tuning_schema.py).
TUNING_RECORDS = _project("//tuning/records:all")

# The committed tuning records of hardware_sweep variants (<sweep>_<variant>.json), apart from the
# zoo's: //tuning:records_test holds every zoo pipeline to its record, while a sweep (manual, hours
# of measurement) is replayed from its records when their keys match and measured otherwise.
SWEEP_TUNING_RECORDS = _project("//tuning/records/sweeps:all")

# The committed strategy records of `strategy = "auto"` choices (tuning/strategies/recorded.bzl
# says which build each chose).
STRATEGY_RECORDS = "//tuning/strategies"

# Which set a model belongs to: the cost model is fitted on "calibration" models only;
# "held_out" models are measured, never fitted on (bench/report show the two apart).
SPLITS = ("calibration", "held_out")

def _bench_targets(host, riscv):
    """The pipeline outputs //tools:bench and //tools:model_report read, per model (model_zoo),
    from its host and riscv pipeline_names."""
    return [
        host.shipped,
        host.module[DEFAULT_STRATEGY],
        host.analysis,
        host.predicted_analysis,  # with ZigZag's candidates, which the host analysis leaves out
        host.compiled[TUNED],
        host.compiled[DEFAULT_STRATEGY],
        riscv.analysis,
        riscv.index["perf_index"],  # the tuned and IREE-default riscv_perf measurements, by their PerfInfo
    ]

def _pipeline_info_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    ctx.actions.write(out, json.encode_indent(struct(
        name = ctx.attr.pipeline,
        model_name = ctx.attr.model_name,
        module = ctx.attr.module,
        factory = ctx.attr.factory,
        framework = ctx.attr.framework,
        split = ctx.attr.split,
        float_reference = ctx.attr.float_reference or None,
    )) + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

_pipeline_info = rule(
    implementation = _pipeline_info_impl,
    attrs = {
        "pipeline": attr.string(mandatory = True),
        # The py_library with the model's module: model_zoo gathers these into <zoo>_models.
        "model": attr.label(mandatory = True, providers = [PyInfo]),
        "model_name": attr.string(mandatory = True),
        "module": attr.string(mandatory = True),
        "factory": attr.string(mandatory = True),
        "framework": attr.string(mandatory = True),
        "split": attr.string(mandatory = True, values = list(SPLITS)),
        # A quantized model's float twin (its pipeline name): results report the two side by side.
        "float_reference": attr.string(),
    },
    doc = "<name>_pipeline_info.json: what bench, report and calibrate need to know of a model_pipeline.",
)

def model_zoo(name):
    """Indexes every model_pipeline of this package (call it last in the BUILD file).

    Gives <name> (every <pipeline>_pipeline_info.json), <name>_shipped (every <pipeline>_riscv:
    the module and manifest each ships), <name>_models (a py_library of every
    pipeline's model library, for what runs the frameworks), <name>_bench_data (the infos plus
    the outputs //tools:bench reads), <name>_imports (those plus every import) and
    <name>_measured_choices (those plus every riscv measured choice): the bench,
    the report and the calibration find models here, not in a hand-kept list.
    """
    infos = [r for r in native.existing_rules().values() if r["kind"] == "_pipeline_info"]
    if not infos:
        fail("model_zoo(%s): no model_pipeline above it in %s" % (name, native.package_name()))
    labels = [":" + r["name"] for r in infos]
    imports = [":" + model_names(r["pipeline"], r["model_name"]).imported for r in infos]
    riscv = [pipeline_names(r["pipeline"], "riscv") for r in infos]
    host = [pipeline_names(r["pipeline"], "host") for r in infos]
    native.filegroup(name = name, srcs = labels)
    native.py_library(
        name = name + "_models",
        # Two pipelines may share a model library (matmul_shapes and its i8 variant).
        deps = sorted({str(r["model"]): None for r in infos}.keys()),
    )
    native.filegroup(
        name = name + "_imports",
        srcs = labels + imports,
    )
    native.filegroup(
        name = name + "_strategy_perf",
        srcs = labels + [
            # every build's riscv_perf measurement, by its PerfInfo
            ":" + n.index["strategy_perf_index"]
            for n in riscv
        ] + [
            # and the host modules of each strategy, timed by the same report
            ":" + n.module[b]
            for n in host
            for b in BUILDS
        ] + [
            # and what each pipeline ships (its manifest says which strategy)
            ":" + n.shipped
            for n in riscv
        ] + imports,
        # The strategy measurements are not part of `//...` (//tools:report_microkernels).
        tags = ["manual"],
    )
    explore_index(
        # Every riscv pipeline's tuned build with what measures it: //tools:explore's input.
        name = name + "_explore_index",
        builds = {":" + n.compiled[TUNED]: r["pipeline"] for n, r in zip(riscv, infos)},
        tags = ["manual"],
    )
    native.filegroup(
        # What each riscv pipeline ships, with its manifest (//results:vector_floor_test).
        name = name + "_shipped",
        srcs = [":" + n.shipped for n in riscv],
    )
    # What each riscv pipeline ships (its manifest says which build) beside measurements, by their
    # PerfInfo: `_stock_perf` of its tuned and stock IREE builds (`//tools:report -- --collect
    # riscv_stock`), `_shipped_perf` of every build it may ship (`-- --collect bounds`).
    for measured in ("stock_perf", "shipped_perf"):
        native.filegroup(
            name = "%s_%s" % (name, measured),
            srcs = labels + [
                ":" + target
                for n in riscv
                for target in (n.shipped, n.index[measured + "_index"])
            ],
            tags = ["manual"],
        )
    native.filegroup(
        # What ships on the host beside IREE with the project's flags and stock IREE (direct
        # convolutions: the device flags alone), with the golden inputs: //tools:host_timings.
        name = name + "_host_modules",
        srcs = labels + imports + [
            ":" + n.module[b]
            for n in host
            for b in (TUNED, DEFAULT_STRATEGY, STOCK_IREE_STRATEGY)
        ],
        tags = ["manual"],
    )
    native.filegroup(
        # The riscv measured choices: every shortlisted candidate's model cycles and memory-aware
        # figures, and the predicted analyses they refine (//tools:calibrate, //tools:report -- --collect memory).
        name = name + "_measured_choices",
        srcs = labels + [
            ":" + target
            for n in riscv
            for target in (n.analysis, n.predicted_analysis)
        ],
    )
    # Every keyed strategy choice (its record is <name>.json), not //tools:tune's measuring twins.
    recorded_strategy_choices = [
        ":" + r["name"]
        for r in native.existing_rules().values()
        if r["kind"] == "_code_strategy_choice" and r["record_name"] == r["name"]
    ]
    native.filegroup(
        # The strategy choices (replayed from strategy records where they match) with the record
        # each computed: what //tuning:strategy_records_test checks the committed records against.
        name = name + "_strategy_records",
        srcs = recorded_strategy_choices,
    )
    native.filegroup(
        # Their keys alone, computed from each candidate's target and analysis (no build compiled):
        # what //tuning:strategy_keys_test checks the committed records against in the fast tier.
        name = name + "_strategy_keys",
        srcs = recorded_strategy_choices,
        output_group = "strategy_key",
    )
    native.filegroup(
        # Every analysis' ZigZag log (what it replayed from analysis/zigzag_results/, what it ran):
        # //tuning:zigzag_replay_test and //tuning:record_zigzag. Not the sweeps' (`manual`).
        name = name + "_zigzag_logs",
        srcs = [
            ":" + r["name"]
            for r in native.existing_rules().values()
            if r["kind"] == "_zigzag_analysis" and "manual" not in (r.get("tags") or [])
        ],
        output_group = "zigzag",
    )
    native.filegroup(
        # The measured choices (replayed from tuning records where they match) with the record
        # each computed: what //tuning:records_test checks the committed records against.
        name = name + "_tuning_records",
        srcs = [
            ":" + pipeline_names(r["pipeline"], suffix).analysis
            for r in infos
            for suffix, t in REGISTERED_PIPELINE_TARGETS.items()
            if t.measured
        ] + [
            # and the tiled strategies' own choices, where a pipeline ships one
            ":" + strategy_tile_names(r["pipeline"], suffix, strategy).analysis
            for r in infos
            for suffix, t in REGISTERED_PIPELINE_TARGETS.items()
            if t.measured
            for strategy in TILED_STRATEGIES
            if native.existing_rule(strategy_tile_names(r["pipeline"], suffix, strategy).analysis)
        ],
    )
    native.filegroup(
        name = name + "_bench_data",
        srcs = labels + imports + [
            ":" + target
            for h, r in zip(host, riscv)
            for target in _bench_targets(h, r)
        ],
        # Holds every model's riscv perf reports (manual, see model_pipeline's perf_tags).
        tags = ["manual"],
    )

def _shippable_builds(strategy, recorded):
    """The builds <name>_riscv can package: a fixed strategy's, an "auto" choice's recorded one
    (beside tuned, what a stale record falls back to measuring against), else every build."""
    if strategy == "auto" and recorded:
        return [TUNED] + ([recorded] if recorded != TUNED else [])
    if strategy in ("auto", "measured"):
        return [TUNED, DEFAULT_STRATEGY] + list(STRATEGIES)
    return [strategy]

def _build_suffix(build):
    """What follows <name>_<target> in the names of a pipeline's `build` (TUNED, DEFAULT_STRATEGY
    or one of STRATEGIES): its compile is <name>_<target><suffix>_compiled."""
    return {TUNED: "", DEFAULT_STRATEGY: "_iree_default"}.get(build, "_" + build)

# Every build a pipeline target compiles: the tuned one, IREE's defaults and each strategy's.
BUILDS = [TUNED, DEFAULT_STRATEGY] + list(STRATEGIES)

# The perf indexes of a measured pipeline target (PerfInfo of its builds' riscv_perf reports).
PERF_INDEXES = ("perf_index", "strategy_perf_index", "stock_perf_index", "shipped_perf_index")

def pipeline_names(name, target):
    """The names of everything model_pipeline `name` makes for pipeline target `target`
    ("riscv", "host"): the one place they are spelled (model_zoo, the tests and the tools'
    BUILD files read them here).

    Fields: `shipped` (<name>_<target>: the vmfb and manifest), `analysis` (the tiles it
    compiles), `predicted_analysis` (the candidates), `measured_analysis` and `choice_inputs`
    (the measured choice ignoring records, and its inputs for a Ray refresh),
    `strategy_refresh` (the strategy choice ignoring records), `shipped_perf`; per build
    (BUILDS) `compiled`, `perf` and `module` (its HAL module: the tuned one's is `shipped`); per
    PERF_INDEXES `index`. A hardware_sweep's variant is a pipeline target of the sweep too, with
    its own description `hardware` and IREE target `iree_target`."""
    prefix = "%s_%s" % (name, target)
    return struct(
        shipped = prefix,
        record_name = prefix,
        analysis = prefix + "_analysis",
        predicted_analysis = prefix + "_predicted_analysis",
        measured_analysis = prefix + "_measured_analysis",
        choice_inputs = prefix + "_choice_inputs",
        strategy_refresh = prefix + "_strategy_refresh",
        shipped_perf = prefix + "_shipped_perf",
        dispatch_test = prefix + "_dispatch_test",
        dispatch_reference = prefix + "_dispatch_reference",
        compiled = {b: prefix + _build_suffix(b) + "_compiled" for b in BUILDS},
        perf = {b: prefix + _build_suffix(b) + "_perf" for b in BUILDS},
        module = {b: prefix + _build_suffix(b) for b in BUILDS},
        index = {i: "%s_%s" % (prefix, i) for i in PERF_INDEXES},
        hardware = prefix + "_hardware",
        iree_target = prefix + "_target",
    )

def strategy_tile_names(name, target, strategy):
    """The pipeline_names of `strategy`'s own tile chain on pipeline target `target` (one of
    TILED_STRATEGIES a measured target ships): <name>_<target>_<strategy>_analysis (its measured
    choice, record <name>_<target>_<strategy>.json), and its `compiled[TUNED]` is
    pipeline_names(name, target).compiled[strategy]."""
    return pipeline_names(name, "%s_%s" % (target, strategy))

def _tiled_strategy(suffix, chosen, recorded):
    """The strategy of TILED_STRATEGIES whose build <name>_<suffix> ships (a fixed one, or an "auto"
    choice's recorded one) on a measured target, compiled with tiles of its own; else None."""
    if not REGISTERED_PIPELINE_TARGETS[suffix].measured:
        return None
    strategy = recorded if chosen == "auto" else chosen
    return strategy if strategy in TILED_STRATEGIES else None

def model_names(name, model_name):
    """The per-model names of model_pipeline `name` (its import is named after `model_name`)."""
    return struct(
        info = name + "_pipeline_info",
        imported = model_name + "_import",
        module_file = model_name + ".mlirbc",
        golden_file = model_name + ".golden.npz",
        pipeline_test = name + "_pipeline_test",
    )

def _chosen_tiles(names, choice, module, hardware, target, calibration = None, choice_args = {}, **kwargs):
    """`names.predicted_analysis` (the analysis: every dispatch's candidates) and `names.analysis`
    (`choice` among them: measured_choice by memory-aware cycles under qemu, or code_choice by the
    code model): the tile chain of model_pipeline and hardware_sweep alike."""
    zigzag_analysis(
        name = names.predicted_analysis,
        module = module,
        hardware = hardware,
        calibration = calibration,
        target = target,
        **kwargs
    )
    choice(
        name = names.analysis,
        analysis = ":" + names.predicted_analysis,
        **dict(choice_args, **kwargs)
    )

def _shipped_strategies(name, strategies, host_tiles, split):
    """{pipeline target: what <name>_<target> ships}, after checking model_pipeline's arguments."""
    if not name or "/" in name:
        fail("model_pipeline: bad name %r" % name)
    if host_tiles not in HOST_TILE_CHOICES:
        fail("model_pipeline(%s): host_tiles must be one of %s, got %r" % (name, ", ".join(HOST_TILE_CHOICES), host_tiles))
    for target in strategies:
        if target not in REGISTERED_PIPELINE_TARGETS:
            fail("model_pipeline(%s): strategies: no pipeline target %r (PIPELINE_TARGETS: %s)" % (
                name,
                target,
                ", ".join(REGISTERED_PIPELINE_TARGETS),
            ))
    shipped = {target: strategies.get(target, "auto") for target in REGISTERED_PIPELINE_TARGETS}
    for target, value in shipped.items():
        if value not in PIPELINE_STRATEGIES:
            fail("model_pipeline(%s): strategies[%r] must be one of %s, got %r" % (
                name,
                target,
                ", ".join(PIPELINE_STRATEGIES),
                value,
            ))
        if value == "measured" and not REGISTERED_PIPELINE_TARGETS[target].measured:
            fail("model_pipeline(%s): strategies[%r] cannot be \"measured\": %s time is not a reproducible build input (\"auto\" prices the code)" % (name, target, target))
    if split not in SPLITS:
        fail("model_pipeline(%s): split must be one of %s, got %r" % (name, ", ".join(SPLITS), split))
    return shipped

def _pipeline_targets(name, accelerator):
    """The pipeline targets of model_pipeline `name`: the registry's, or with `accelerator` the
    host and that accelerator as the riscv one (no other measured target): struct(targets = {suffix: (IREE target, hardware, calibration)},
    strategy_targets = {(suffix, strategy): target}, perf_hardware = {suffix: [descriptions]},
    recorded_strategies = {pipeline target: recorded build})."""
    targets = dict(PIPELINE_TARGETS)
    strategy_targets = dict(STRATEGY_TARGETS)
    perf_hardware = {s: [_project(h) for h in t.perf_hardware] for s, t in REGISTERED_PIPELINE_TARGETS.items()}
    recorded_strategies = dict(RECORDED_STRATEGIES)
    if accelerator:
        targets = {s: t for s, t in targets.items() if not REGISTERED_PIPELINE_TARGETS[s].measured}
        targets["riscv"] = (accelerator, accelerator + "_hardware.yaml", None)
        for strategy in STRATEGIES:
            strategy_targets[("riscv", strategy)] = "%s_%s" % (accelerator, strategy)
        perf_hardware["riscv"] = [accelerator + "_hardware.yaml"]
        recorded_strategies.pop(pipeline_names(name, "riscv").shipped, None)
    return struct(
        targets = targets,
        strategy_targets = strategy_targets,
        perf_hardware = perf_hardware,
        recorded_strategies = recorded_strategies,
    )

def _tiles(names, imported, suffix, target, hardware, calibration, host_tiles):
    """<name>_<suffix>_analysis (the tiles the tuned build applies) and what it is chosen from."""

    # On the accelerator the candidates are measured (model cycles) rather than trusted to
    # the prediction: <name>_riscv_predicted_analysis ranks them, and <name>_riscv_analysis
    # keeps the measured fastest of IREE's default and the best predicted others
    # (choice/tune.py, MEASURED_CANDIDATES in choice/defs.bzl).
    # On the host, whose time a build cannot measure reproducibly, the code model's static
    # cycles on host.yaml's core choose when asked (host_tiles = "code"; choice/tune.py
    # --by code-model, HOST_CODE_MARGIN).
    measured = REGISTERED_PIPELINE_TARGETS[suffix].measured
    choice = measured_choice if measured else (code_choice if host_tiles == "code" else None)
    if choice:
        _chosen_tiles(
            names,
            choice,
            module = ":" + imported,
            hardware = hardware,
            calibration = calibration,
            target = target,
            choice_args = {
                # Replayed from tuning/records/<name>_<suffix>.json when its key matches.
                "records": [TUNING_RECORDS],
                "record_name": names.record_name,
            } if measured else {"code_calibration": HOST_CODE_CALIBRATION},
        )
    else:
        zigzag_analysis(
            name = names.predicted_analysis,
            module = ":" + imported,
            hardware = hardware,
            calibration = calibration,
            target = target,
            # What bench evaluates when nothing chooses from it (host_tiles = "predicted").
            tags = ["manual"],
        )

        # The analysis this build applies: uncalibrated, it keeps IREE's defaults, so
        # ZigZag's candidates (the costliest part of the analysis) would decide nothing.
        zigzag_analysis(
            name = names.analysis,
            module = ":" + imported,
            hardware = hardware,
            calibration = calibration,
            target = target,
            zigzag = calibration != None,
        )
    if measured:
        _refresh_targets(names)

def _refresh_targets(names, allow_no_core_model = False, sweep = False):
    """What `bazel run //tools:tune` refreshes a measured choice's record from. `sweep`: a
    hardware_sweep variant's, tagged so that `//tools:tune -- all` (the zoo) leaves it alone and
    its record goes to tuning/records/sweeps (tuning/refresh.py, SWEEP_TAG)."""
    tags = ["manual", "sweep"] if sweep else ["manual"]

    # The choice measured whatever the records say: what `bazel run //tools:tune` commits
    # (its <name>.record.json) and what //tuning:reproduce_test compares a record against.
    measured_choice(
        name = names.measured_analysis,
        analysis = ":" + names.predicted_analysis,
        record_name = names.record_name,
        allow_no_core_model = allow_no_core_model,
        tags = tags,
    )

    # The same choice's inputs, for `bazel run //tools:tune` on Ray (which runs it outside a
    # build action, its qemu runs Ray tasks).
    choice_inputs(
        name = names.choice_inputs,
        analysis = ":" + names.predicted_analysis,
        record_name = names.record_name,
        allow_no_core_model = allow_no_core_model,
        tags = tags,
    )

def _strategy_tiles(names, imported, target, hardware, calibration):
    """A tiled strategy's own measured tile choice: the analysis of the program as that strategy
    hands it to IREE (rewritten, without the im2col flag) and the measured choice among its
    candidates, keyed and replayed like the tuned build's."""
    _chosen_tiles(
        names,
        measured_choice,
        module = ":" + imported,
        hardware = hardware,
        calibration = calibration,
        target = target,
        choice_args = {"records": [TUNING_RECORDS], "record_name": names.record_name},
    )
    _refresh_targets(names)

def _builds(names, imported, suffix, target, chosen, strategy_targets, perf_tags, tiled = None, tiled_analysis = None):
    """One compile per build (BUILDS): the tuned one with <name>_<suffix>_analysis' tiles,
    IREE's defaults and each strategy's (`tiled` with `tiled_analysis`' tiles, the others
    IREE's)."""
    by_code = chosen == "auto"  # code_strategy_choice costs the builds' code
    iree_compile(
        name = names.compiled[TUNED],
        module = ":" + imported,
        analysis = ":" + names.analysis,
        target = target,
        code = by_code,
    )
    for other in STRATEGIES:
        iree_compile(
            name = names.compiled[other],
            module = ":" + imported,
            target = strategy_targets[(suffix, other)],
            analysis = tiled_analysis if other == tiled else None,
            iree_tiles = other != tiled,
            code = by_code,
            # One candidate of a choice: IREE refusing it (data tiling fails on some attention
            # transposes) leaves it out instead of failing <name>_host or <name>_riscv.
            record_failure = chosen in CHOICE_CANDIDATES,
            tags = ["manual"],
        )
    iree_compile(
        name = names.compiled[DEFAULT_STRATEGY],
        module = ":" + imported,
        target = target,
        iree_tiles = True,
        # Measured: only the perf report (and strategy = "measured") reads it.
        tags = perf_tags if REGISTERED_PIPELINE_TARGETS[suffix].measured else [],
    )

def _shipped(names, suffix, hardware, chosen, strategy_targets, recorded):
    """<name>_<suffix>: the HAL module and manifest of the build `chosen` names, or of the
    build a strategy choice picks."""
    measured = REGISTERED_PIPELINE_TARGETS[suffix].measured
    if chosen == "measured":
        candidates = list(CHOICE_CANDIDATES["measured"])
        strategy_choice(
            name = names.shipped,
            strategies = candidates,
            compiled = [":" + names.compiled[s] for s in candidates],
            perf = [":" + names.perf[s] for s in candidates],
        )
    elif chosen == "auto":
        candidates = list(CHOICE_CANDIDATES["auto"])
        # IREE's default build, which a measured target's confirmation compares energy with.
        default_compiled = ":" + names.compiled[DEFAULT_STRATEGY] if measured else None
        choice = dict(
            strategies = candidates,
            hardware = hardware,
            # On the accelerator a choice other than tuned is measured against it first.
            confirm = measured,
            record_name = names.record_name,
        )

        # Every candidate built and priced, whatever the records say: what `bazel run
        # //tools:tune` commits (its .strategy_record.json).
        code_strategy_choice(
            name = names.strategy_refresh,
            compiled = {s: ":" + names.compiled[s] for s in candidates},
            default_compiled = default_compiled,
            records_ignored = True,
            tags = ["manual"],
            **choice
        )
        if recorded:
            # Replayed from tuning/strategies/<pipeline_target>.json: only the baseline and
            # the recorded build are compiled (a stale record compiles the rest itself).
            given = [candidates[0]] + ([recorded] if recorded != candidates[0] else [])
            code_strategy_choice(
                name = names.shipped,
                compiled = {s: ":" + names.compiled[s] for s in given},
                unbuilt_targets = {s: strategy_targets[(suffix, s)] for s in candidates if s not in given},
                record = _project("%s:%s.json" % (STRATEGY_RECORDS, names.record_name)),
                **choice
            )
        else:
            code_strategy_choice(
                name = names.shipped,
                compiled = {s: ":" + names.compiled[s] for s in candidates},
                default_compiled = default_compiled,
                **choice
            )
    else:
        hal_module(
            name = names.shipped,
            compiled = ":" + names.compiled[chosen],
        )

def _measurements(names, perf_hardware, shippable, perf_tags):
    """A measured pipeline target's perf reports (every build under qemu; the strategies' only
    on request), the indexes bench and the report read them by, and the shipped build's."""
    for build in BUILDS:
        riscv_perf(
            name = names.perf[build],
            compiled = ":" + names.compiled[build],
            hardware = perf_hardware,
            tags = perf_tags if build in (TUNED, DEFAULT_STRATEGY) else ["manual"],
        )

    # Where bench finds the measurements (from their PerfInfo): the tuned and IREE-default
    # builds', and every build's.
    for index, builds_measured, index_tags in (
        ("perf_index", [TUNED, DEFAULT_STRATEGY], perf_tags),
        ("strategy_perf_index", BUILDS, ["manual"]),
        # tuned beside stock IREE (//tools:report -- --collect riscv_stock)
        ("stock_perf_index", [TUNED, STOCK_IREE_STRATEGY], ["manual"]),
        # every build <name>_riscv may ship (//peers:collect_ours)
        ("shipped_perf_index", shippable, ["manual"]),
    ):
        perf_index(
            name = names.index[index],
            perf = {":" + names.perf[b]: b for b in builds_measured},
            tags = index_tags,
        )

    # The perf report of what <name>_<suffix> ships (the build its manifest names).
    shipped_perf(
        name = names.shipped_perf,
        shipped = ":" + names.shipped,
        index = ":" + names.index["shipped_perf_index"],
        tags = ["manual"],
    )

def _host_modules(names):
    """Runnable here: IREE's defaults and every strategy's build as HAL modules to time."""
    hal_module(
        name = names.module[DEFAULT_STRATEGY],
        compiled = ":" + names.compiled[DEFAULT_STRATEGY],
    )
    for other in STRATEGIES:
        hal_module(
            name = names.module[other],
            compiled = ":" + names.compiled[other],
            tags = ["manual"],
        )

def _pipeline_test(model, name, model_name, shipped, test_size, tags):
    """<name>_pipeline_test: host numerics against the framework's golden, configs landed, the
    riscv executables (every measured target's) are RVV code. `shipped`: {pipeline target: what
    it ships}, the targets the pipeline builds."""
    targets = [pipeline_names(name, suffix) for suffix in shipped]
    py_test(
        name = model.pipeline_test,
        size = test_size,
        srcs = [_project("//models:pipeline_test.py")],
        main = _project("//models:pipeline_test.py"),
        # Files are found by name in the runfiles (bazel-bin layout of this package).
        args = [
            "--package=" + native.package_name(),
            "--name=" + name,
            "--model-name=" + model_name,
        ] + ["--target=%s=%s" % (suffix, value) for suffix, value in shipped.items()] + [
            "--readelf=$(rootpath @riscv64_gcc//:riscv64-linux-gnu-readelf)",
            "--objdump=$(rootpath @riscv64_gcc//:riscv64-linux-gnu-objdump)",
        ],
        data = [":" + model.imported] + [
            ":" + target
            for n in targets
            for target in (n.shipped, n.analysis, n.compiled[TUNED])
        ] + [
            ":" + pipeline_names(name, "host").module[DEFAULT_STRATEGY],
            # The pinned riscv64 readelf/objdump: the wrappers and the files they run and load.
            _project("//tools/riscv:binutils"),
            "@riscv64_gcc//:riscv64-linux-gnu-objdump",
            "@riscv64_gcc//:riscv64-linux-gnu-readelf",
        ],
        tags = tags,
        deps = [
            _project("//common"),
            _project("//runtime"),
            requirement("iree-base-runtime"),
            requirement("numpy"),
            requirement("pytest"),
        ],
    )

def _dispatch_test(model, name, suffix, riscv_target, host_target, strategy_targets, shippable, test_size, tags):
    """<name>_<suffix>_dispatch_test: every dispatch measured pipeline target `suffix` ships run
    under qemu on the model's real activations against the host's run of it. The host side is
    <name>_<suffix>_dispatch_reference, built ahead: the test compiles nothing."""
    riscv = pipeline_names(name, suffix)
    dispatch_reference(
        name = riscv.dispatch_reference,
        module = ":" + model.imported,
        shipped = ":" + riscv.shipped,
        riscv = riscv_target,
        host = host_target,
        strategies = {strategy_targets[(suffix, other)]: other for other in STRATEGIES},
        host_strategies = {strategy_targets[("host", other)]: other for other in STRATEGIES},
        tags = ["manual"],  # built by the test that reads it
    )
    py_test(
        name = riscv.dispatch_test,
        size = test_size,
        srcs = [_project("//models:riscv_dispatch_test.py")],
        main = _project("//models:riscv_dispatch_test.py"),
        args = [
            _in_package(model.module_file),
            # The import's golden inputs: each dispatch runs on the activations they produce.
            _in_package(model.golden_file),
            _in_package(riscv.shipped + ".manifest.json"),
            "--riscv=$(location %s)" % riscv_target,
            "--host=$(location %s)" % host_target,
            "--reference-build",
            _in_package(riscv.dispatch_reference + ".vmfb"),
            _in_package(riscv.dispatch_reference + ".layout.json"),
            "--traced=" + _in_package(riscv.dispatch_reference + ".traced.vmfb"),
        ] + [
            "--strategy=%s=$(location %s)" % (other, strategy_targets[(suffix, other)])
            for other in STRATEGIES
        ] + [
            "--host-strategy=%s=$(location %s)" % (other, strategy_targets[("host", other)])
            for other in STRATEGIES
        ] + [
            # The layouts of the builds <name>_<suffix> may package: the test runs the shipped
            # vmfb with the one whose executables it holds (nothing compiled for the riscv side).
            "--layout=" + _in_package(riscv.compiled[b] + ".layout.json")
            for b in shippable
        ],
        data = [
            ":" + model.imported,
            ":" + riscv.shipped,
            ":" + riscv.dispatch_reference,
            riscv_target,
            host_target,
        ] + [strategy_targets[(t, other)] for t in (suffix, "host") for other in STRATEGIES] + [
            ":" + riscv.compiled[b]
            for b in shippable
        ],
        tags = tags,
        deps = [_project("//runtime/hal_runner:check_dispatches_lib")],
    )

def model_pipeline(name, model_name, model, module, framework, split = "held_out", factory = "make_model", test_size = "medium", tags = [], perf_tags = ["manual"], strategies = {}, host_tiles = "predicted", float_reference = None, accelerator = None, gen_test = True, gen_dispatch_test = True, test_tier = "fast"):
    """Import, analyse, compile and package `model` for every pipeline target.

    Besides the tuned and the IREE-default builds, every model gets one compile per other
    lowering strategy (STRATEGIES) for each pipeline target, `<name>_<T>_<strategy>_compiled`,
    with `<name>_riscv_<strategy>_perf` and `<name>_host_<strategy>` (all `manual`: built by
    //tools:report_microkernels, not by `//...`).

    Args:
      name: prefix of the pipeline targets (e.g. "resnet" -> //models:resnet_riscv).
      model_name: the model's name; its import target is <model_name>_import.
      model: py_library holding `module`.
      module: dotted Python module with the factory.
      framework: "torch" or "tensorflow".
      split: "calibration" (the cost model may be fitted on it) or "held_out" (never; the
        default: a model no one declared for fitting is never fitted on).
      factory: function in `module` returning (model, example_inputs).
      test_size: size of the generated tests ("large" for big models).
      tags: tags for the generated tests.
      perf_tags: tags for <name>_riscv_perf, <name>_riscv_iree_default_perf and the IREE-default
        riscv compile only the latter reads (built anyway when strategy = "measured"). `manual` by
        default: they measure (each runs every dispatch under qemu on two cores, ~20% of a
        cold `//...`) and no test reads them; the measured choice already measured the
        chosen candidates. `[]` builds them with `//...`.
      strategies: {pipeline target: strategy}, what <name>_<target> packages; a target left out
        gets "auto". The targets are PIPELINE_TARGETS' ("riscv", "host"). A strategy is "tuned"
        (IREE's code emission with the analysis' tiles), "codegen" (IREE's defaults), one of
        STRATEGIES ("datatiling", "ukernels", "directconv"), "auto" (of tuned and STRATEGIES the
        build with the fewest cycles per call by the static code model on the target's
        hardware description's core model, choice:code_strategy_choice; on a measured target
        kept only if also measured faster than tuned under qemu) or, on a measured target only,
        "measured" (of tuned, codegen and STRATEGIES the build with the fewest model cycles per
        call, all measured under qemu; host time is not a reproducible build input). The
        manifest records the choice and every candidate's figure.
      accelerator: the label of an `accelerator(...)` declaration (e.g. ":my_accel") that
        replaces the registered riscv pipeline target (riscv_rvv): analysis, measured choice,
        every strategy's build, perf reports and the dispatch test are for it. The project's
        committed records are of its own accelerators: the tiles and an "auto" strategy are
        measured in the build.
      float_reference: for a quantized model, the pipeline of the same network in float: results
        report the two beside each other (cycles, energy, output error; docs/results_bounds.md).
      host_tiles: how <name>_host_analysis chooses the host's tiles: "predicted" (the default:
        the analysis' choice, IREE's defaults while the host has no calibration) or "code"
        (choice:code_choice: the candidate the static code model prices cheapest on host.yaml's
        core, its cycles plus HOST_CODE_CALIBRATION's term, when HOST_CODE_MARGIN cheaper than
        IREE's default). "code" is opt-in: on the zoo it ran the calibration models at
        0.74-0.81x of IREE's codegen (geomean) but held-out models at up to 1.06-1.10x
        (README, host tiles by the code model).
      gen_test: make <name>_pipeline_test (as tf_library's gen_test).
      gen_dispatch_test: make <name>_<target>_dispatch_test for every measured pipeline target
        (riscv, riscv512: each riscv dispatch under qemu, the slowest tests of a model).
      test_tier: "fast" (the default: the generated tests run with `bazel test //...`) or "slow"
        (tagged `manual` and `slow`: run by name or with the slow tier, TEST_TIERS).
    """
    if test_tier not in TEST_TIERS:
        fail("model_pipeline(%s): test_tier = %r, not one of %s" % (name, test_tier, sorted(TEST_TIERS)))
    tags = tags + TEST_TIERS[test_tier]
    shipped = _shipped_strategies(name, strategies, host_tiles, split)
    chain = _pipeline_targets(name, accelerator)
    model_ = model_names(name, model_name)
    _pipeline_info(
        name = model_.info,
        pipeline = name,
        model = model,
        model_name = model_name,
        module = module,
        factory = factory,
        framework = framework,
        split = split,
        float_reference = float_reference or "",
    )
    mlir_import(
        name = model_.imported,
        model = model,
        module = module,
        factory = factory,
        framework = framework,
        model_name = model_name,
    )
    for suffix, (target, hardware, calibration) in chain.targets.items():
        names = pipeline_names(name, suffix)
        recorded = chain.recorded_strategies.get(names.shipped)
        _tiles(names, model_.imported, suffix, target, hardware, calibration, host_tiles)
        tiled = _tiled_strategy(suffix, shipped[suffix], recorded)
        tiled_analysis = None
        if tiled:
            tile_names = strategy_tile_names(name, suffix, tiled)
            _strategy_tiles(tile_names, model_.imported, chain.strategy_targets[(suffix, tiled)], hardware, calibration)
            tiled_analysis = ":" + tile_names.analysis
        _builds(names, model_.imported, suffix, target, shipped[suffix], chain.strategy_targets, perf_tags, tiled, tiled_analysis)
        _shipped(names, suffix, hardware, shipped[suffix], chain.strategy_targets, recorded)
        if REGISTERED_PIPELINE_TARGETS[suffix].measured:
            _measurements(names, chain.perf_hardware[suffix], _shippable_builds(shipped[suffix], recorded), perf_tags)
        else:
            _host_modules(names)
    if gen_test:
        _pipeline_test(model_, name, model_name, {s: shipped[s] for s in chain.targets}, test_size, tags)
    for suffix, (target, _hardware, _calibration) in chain.targets.items():
        if gen_dispatch_test and REGISTERED_PIPELINE_TARGETS[suffix].measured:
            recorded = chain.recorded_strategies.get(pipeline_names(name, suffix).shipped)
            _dispatch_test(model_, name, suffix, target, chain.targets["host"][0], chain.strategy_targets, _shippable_builds(shipped[suffix], recorded), test_size, tags)

def hardware_sweep(name, module, model_name, base, variants, riscv_target = _project("//common:riscv64_rvv"), require_model_cycles = False, **kwargs):
    """Builds and measures `module` for each accelerator variant; report <name>.sweep.{md,json,png}
    (perf:sweep_report).

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
    order = list(variants)
    for variant in order:
        if not variant or "/" in variant:
            fail("hardware_sweep(%s): bad variant name %r" % (name, variant))
        names = pipeline_names(name, variant)
        hardware_variant(
            name = names.hardware,
            base = base,
            set = variants[variant],
            variant_name = variant,
            **kwargs
        )
        accelerator_target(
            name = names.iree_target,
            base = riscv_target,
            hardware = ":" + names.hardware,
            **kwargs
        )
        # Tiles chosen by measured memory-aware cycles on the variant's core, by model_pipeline's
        # chain; a VLEN without a core model keeps the predicted choice (measured_choice empty).
        # Replayed from tuning/records/sweeps/<name>_<variant>.json when its key matches
        # (`bazel run //tools:tune -- //<package>:<name>` measures every variant's on Ray).
        _chosen_tiles(
            names,
            measured_choice,
            module = module,
            hardware = ":%s.yaml" % names.hardware,
            target = ":" + names.iree_target,
            choice_args = {
                "allow_no_core_model": not require_model_cycles,
                "records": [SWEEP_TUNING_RECORDS],
                "record_name": names.record_name,
            },
            **kwargs
        )
        _refresh_targets(names, allow_no_core_model = not require_model_cycles, sweep = True)
        iree_compile(
            name = names.compiled[TUNED],
            module = module,
            analysis = ":" + names.analysis,
            target = ":" + names.iree_target,
            **kwargs
        )
        riscv_perf(
            name = names.perf[TUNED],
            compiled = ":" + names.compiled[TUNED],
            hardware = [":" + names.hardware],
            counts_only_ok = not require_model_cycles,
            **kwargs
        )
    variant_names = [pipeline_names(name, v) for v in order]
    sweep_report(
        name = name,
        model_name = model_name,
        variant_names = order,
        hardware = [":" + n.hardware for n in variant_names],
        analyses = [":" + n.analysis for n in variant_names],
        compiled = [":" + n.compiled[TUNED] for n in variant_names],
        perf = [":" + n.perf[TUNED] for n in variant_names],
        **kwargs
    )
