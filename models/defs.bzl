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
plus <name>_host_untuned (IREE's defaults, same target flags) for comparison,
<name>_riscv_perf and <name>_riscv_untuned_perf (riscv_perf: per-dispatch instruction
counts and model cycles of the tuned and the IREE-default riscv modules; `manual` by
default: measurements, built on request or by //tools:bench, not by `//...`),
and the tests <name>_pipeline_test (host numerics vs the framework golden,
configs landed, riscv HAL executables are RVV code) and
<name>_riscv_dispatch_test (every riscv dispatch run under qemu on the model's real activations
vs the host's run of it).
"""

load("@rules_python//python:defs.bzl", "py_test")
load("@pypi//:requirements.bzl", "requirement")
load("//analysis:defs.bzl", "accelerator_target", "hardware_variant", "zigzag_analysis")
load("//codegen:defs.bzl", "iree_compile", "strategy_target")
load("//common:registries.bzl", "CHOICE_CANDIDATES", "DEFAULT_STRATEGY", "PIPELINE_STRATEGIES", "STOCK_IREE_STRATEGY", "STRATEGIES", "TUNED", REGISTERED_PIPELINE_TARGETS = "PIPELINE_TARGETS")
load("//frontend:defs.bzl", "mlir_import")
load("//choice:defs.bzl", "choice_inputs", "code_choice", "code_strategy_choice", "measured_choice", "strategy_choice")
load("//perf:defs.bzl", "perf_index", "riscv_perf", "shipped_perf", "sweep_report")
load("//runtime:defs.bzl", "hal_module")
load("//tuning/strategies:recorded.bzl", "RECORDED_STRATEGIES")

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
      hardware: its description, a YAML of analysis/hardware.py's schema (copy
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

# The committed strategy records of `strategy = "auto"` choices (tuning/strategies/recorded.bzl
# says which build each chose).
STRATEGY_RECORDS = "//tuning/strategies"

# Which set a model belongs to: the cost model is fitted on "calibration" models only;
# "held_out" models are measured, never fitted on (bench/report show the two apart).
SPLITS = ("calibration", "held_out")

# Pipeline outputs //tools:bench and //tools:model_report read, per model (see model_zoo).
BENCH_SUFFIXES = [
    "_host",
    "_host_untuned",
    "_host_analysis",
    "_host_predicted_analysis",  # with ZigZag's candidates, which the host analysis leaves out
    "_host_compiled",
    "_host_untuned_compiled",
    "_riscv_analysis",
    "_riscv_perf_index",  # the tuned and IREE-default riscv_perf measurements, by their PerfInfo
]

def _pipeline_info_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    ctx.actions.write(out, json.encode_indent(struct(
        name = ctx.attr.pipeline,
        model_name = ctx.attr.model_name,
        module = ctx.attr.module,
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
    native.filegroup(name = name, srcs = labels)
    native.py_library(
        name = name + "_models",
        # Two pipelines may share a model library (matmul_shapes and its i8 variant).
        deps = sorted({str(r["model"]): None for r in infos}.keys()),
    )
    native.filegroup(
        name = name + "_imports",
        srcs = labels + [":%s_import" % r["model_name"] for r in infos],
    )
    native.filegroup(
        name = name + "_strategy_perf",
        srcs = labels + [
            # every build's riscv_perf measurement, by its PerfInfo
            ":%s_riscv_strategy_perf_index" % r["pipeline"]
            for r in infos
        ] + [
            # and the host modules of each strategy, timed by the same report
            ":%s_host%s" % (r["pipeline"], variant)
            for r in infos
            for variant in ["", "_untuned"] + ["_" + s for s in STRATEGIES]
        ] + [
            # and what each pipeline ships (its manifest says which strategy)
            ":%s_riscv" % r["pipeline"]
            for r in infos
        ] + [":%s_import" % r["model_name"] for r in infos],
        # The strategy measurements are not part of `//...` (//tools:report_microkernels).
        tags = ["manual"],
    )
    native.filegroup(
        # What each riscv pipeline ships, with its manifest (//results:vector_floor_test).
        name = name + "_shipped",
        srcs = [":%s_riscv" % r["pipeline"] for r in infos],
    )
    # What each riscv pipeline ships (its manifest says which build) beside measurements, by their
    # PerfInfo: `_stock_perf` of its tuned and stock IREE builds (`//tools:report -- --collect
    # riscv_stock`), `_shipped_perf` of every build it may ship (`-- --collect bounds`).
    for measured in ("stock_perf", "shipped_perf"):
        native.filegroup(
            name = "%s_%s" % (name, measured),
            srcs = labels + [
                ":%s_riscv%s" % (r["pipeline"], suffix)
                for r in infos
                for suffix in ("", "_%s_index" % measured)
            ],
            tags = ["manual"],
        )
    native.filegroup(
        # What ships on the host beside IREE with the project's flags and stock IREE (direct
        # convolutions: the device flags alone), with the golden inputs: //tools:host_timings.
        name = name + "_host_modules",
        srcs = labels + [":%s_import" % r["model_name"] for r in infos] + [
            ":%s_host%s" % (r["pipeline"], variant)
            for r in infos
            for variant in ("", "_untuned", "_" + STOCK_IREE_STRATEGY)
        ],
        tags = ["manual"],
    )
    native.filegroup(
        # The riscv measured choices: every shortlisted candidate's model cycles and memory-aware
        # figures, and the predicted analyses they refine (//tools:calibrate, //tools:report -- --collect memory).
        name = name + "_measured_choices",
        srcs = labels + [
            ":%s_riscv%s" % (r["pipeline"], suffix)
            for r in infos
            for suffix in ("_analysis", "_predicted_analysis")
        ],
    )
    native.filegroup(
        # The strategy choices (replayed from strategy records where they match) with the record
        # each computed: what //tuning:strategy_records_test checks the committed records against.
        name = name + "_strategy_records",
        srcs = [
            ":" + r["name"]
            for r in native.existing_rules().values()
            if r["kind"] == "_code_strategy_choice" and r["record_name"] == r["name"]
        ],
    )
    native.filegroup(
        # The measured choices (replayed from tuning records where they match) with the record
        # each computed: what //tuning:records_test checks the committed records against.
        name = name + "_tuning_records",
        srcs = [
            ":%s_%s_analysis" % (r["pipeline"], suffix)
            for r in infos
            for suffix, t in REGISTERED_PIPELINE_TARGETS.items()
            if t.measured
        ],
    )
    native.filegroup(
        name = name + "_bench_data",
        srcs = labels + [":%s_import" % r["model_name"] for r in infos] + [
            ":%s%s" % (r["pipeline"], suffix)
            for r in infos
            for suffix in BENCH_SUFFIXES
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
    return {TUNED: "", DEFAULT_STRATEGY: "_untuned"}.get(build, "_" + build)

def _chosen_tiles(prefix, choice, module, hardware, target, calibration = None, choice_args = {}, **kwargs):
    """<prefix>_predicted_analysis (the analysis: every dispatch's candidates) and <prefix>_analysis
    (`choice` among them: measured_choice by memory-aware cycles under qemu, or code_choice by the
    code model): the tile chain of model_pipeline and hardware_sweep alike."""
    zigzag_analysis(
        name = prefix + "_predicted_analysis",
        module = module,
        hardware = hardware,
        calibration = calibration,
        target = target,
        **kwargs
    )
    choice(
        name = prefix + "_analysis",
        analysis = ":%s_predicted_analysis" % prefix,
        **dict(choice_args, **kwargs)
    )

def model_pipeline(name, model_name, model, module, framework, split = "held_out", factory = "make_model", test_size = "medium", tags = [], perf_tags = ["manual"], strategies = {}, host_tiles = "predicted", float_reference = None, accelerator = None):
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
      perf_tags: tags for <name>_riscv_perf, <name>_riscv_untuned_perf and the IREE-default
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
    """
    # The pipeline targets of this model: the registry's, the riscv one replaced by `accelerator`.
    targets = dict(PIPELINE_TARGETS)
    strategy_targets = dict(STRATEGY_TARGETS)
    perf_hardware = {s: [_project(h) for h in t.perf_hardware] for s, t in REGISTERED_PIPELINE_TARGETS.items()}
    recorded_strategies = dict(RECORDED_STRATEGIES)
    if accelerator:
        targets["riscv"] = (accelerator, accelerator + "_hardware.yaml", None)
        for strategy in STRATEGIES:
            strategy_targets[("riscv", strategy)] = "%s_%s" % (accelerator, strategy)
        perf_hardware["riscv"] = [accelerator + "_hardware.yaml"]
        recorded_strategies.pop(name + "_riscv", None)
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
    if not name or "/" in name:
        fail("model_pipeline: bad name %r" % name)
    if split not in SPLITS:
        fail("model_pipeline(%s): split must be one of %s, got %r" % (name, ", ".join(SPLITS), split))
    _pipeline_info(
        name = name + "_pipeline_info",
        pipeline = name,
        model = model,
        model_name = model_name,
        module = module,
        framework = framework,
        split = split,
        float_reference = float_reference or "",
    )
    imported = model_name + "_import"
    mlir_import(
        name = imported,
        model = model,
        module = module,
        factory = factory,
        framework = framework,
        model_name = model_name,
    )
    for suffix, (target, hardware, calibration) in targets.items():
        analysis = "%s_%s_analysis" % (name, suffix)

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
                "%s_%s" % (name, suffix),
                choice,
                module = ":" + imported,
                hardware = hardware,
                calibration = calibration,
                target = target,
                choice_args = {
                    # Replayed from tuning/records/<name>_<suffix>.json when its key matches.
                    "records": [TUNING_RECORDS],
                    "record_name": "%s_%s" % (name, suffix),
                } if measured else {"code_calibration": HOST_CODE_CALIBRATION},
            )
        else:
            zigzag_analysis(
                name = "%s_%s_predicted_analysis" % (name, suffix),
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
                name = analysis,
                module = ":" + imported,
                hardware = hardware,
                calibration = calibration,
                target = target,
                zigzag = calibration != None,
            )
        if measured:
            # The choice measured whatever the records say: what `bazel run //tools:tune` commits
            # (its <name>.record.json) and what //tuning:reproduce_test compares a record against.
            measured_choice(
                name = "%s_%s_measured_analysis" % (name, suffix),
                analysis = ":%s_%s_predicted_analysis" % (name, suffix),
                record_name = "%s_%s" % (name, suffix),
                tags = ["manual"],
            )

            # The same choice's inputs, for `bazel run //tools:tune -- --ray-address` (which runs it
            # outside a build action, its qemu runs on a Ray cluster).
            choice_inputs(
                name = "%s_%s_choice_inputs" % (name, suffix),
                analysis = ":%s_%s_predicted_analysis" % (name, suffix),
                record_name = "%s_%s" % (name, suffix),
                tags = ["manual"],
            )
        chosen = shipped[suffix]
        by_code = chosen == "auto"  # code_strategy_choice costs the builds' code
        iree_compile(
            name = "%s_%s_compiled" % (name, suffix),
            module = ":" + imported,
            analysis = ":%s_%s_analysis" % (name, suffix),
            target = target,
            code = by_code,
        )
        for other in STRATEGIES:
            iree_compile(
                name = "%s_%s_%s_compiled" % (name, suffix, other),
                module = ":" + imported,
                target = strategy_targets[(suffix, other)],
                untuned = True,
                code = by_code,
                # One candidate of a choice: IREE refusing it (data tiling fails on some attention
                # transposes) leaves it out instead of failing <name>_host or <name>_riscv.
                record_failure = chosen in CHOICE_CANDIDATES,
                tags = ["manual"],
            )
        builds = {
            build: "%s_%s%s_compiled" % (name, suffix, _build_suffix(build))
            for build in [TUNED, DEFAULT_STRATEGY] + list(STRATEGIES)
        }
        if chosen == "measured":
            candidates = list(CHOICE_CANDIDATES["measured"])
            strategy_choice(
                name = "%s_%s" % (name, suffix),
                strategies = candidates,
                compiled = [":" + builds[s] for s in candidates],
                perf = [":%s_%s%s_perf" % (name, suffix, _build_suffix(s)) for s in candidates],
            )
        elif chosen == "auto":
            candidates = list(CHOICE_CANDIDATES["auto"])
            pipeline_target = "%s_%s" % (name, suffix)
            choice = dict(
                strategies = candidates,
                hardware = hardware,
                # On the accelerator a choice other than tuned is measured against it first.
                confirm = measured,
                record_name = pipeline_target,
            )

            # Every candidate built and priced, whatever the records say: what `bazel run
            # //tools:tune` commits (its .strategy_record.json).
            code_strategy_choice(
                name = pipeline_target + "_strategy_measured",
                compiled = {s: ":" + builds[s] for s in candidates},
                records_ignored = True,
                tags = ["manual"],
                **choice
            )
            recorded = recorded_strategies.get(pipeline_target)
            if recorded:
                # Replayed from tuning/strategies/<pipeline_target>.json: only the baseline and
                # the recorded build are compiled (a stale record compiles the rest itself).
                given = [candidates[0]] + ([recorded] if recorded != candidates[0] else [])
                code_strategy_choice(
                    name = pipeline_target,
                    compiled = {s: ":" + builds[s] for s in given},
                    unbuilt_targets = {s: strategy_targets[(suffix, s)] for s in candidates if s not in given},
                    record = _project("%s:%s.json" % (STRATEGY_RECORDS, pipeline_target)),
                    **choice
                )
            else:
                code_strategy_choice(
                    name = pipeline_target,
                    compiled = {s: ":" + builds[s] for s in candidates},
                    **choice
                )
        else:
            hal_module(
                name = "%s_%s" % (name, suffix),
                compiled = ":" + builds[chosen],
            )
    riscv_target = targets["riscv"][0]
    for suffix, t in REGISTERED_PIPELINE_TARGETS.items():
        iree_compile(
            name = "%s_%s_untuned_compiled" % (name, suffix),
            module = ":" + imported,
            target = targets[suffix][0],
            untuned = True,
            # Measured: only the perf report (and strategy = "measured") reads it.
            tags = perf_tags if t.measured else [],
        )
        if t.measured:
            # Every build measured under qemu (the strategies' builds only on request).
            for build in [TUNED, DEFAULT_STRATEGY] + list(STRATEGIES):
                riscv_perf(
                    name = "%s_%s%s_perf" % (name, suffix, _build_suffix(build)),
                    compiled = ":%s_%s%s_compiled" % (name, suffix, _build_suffix(build)),
                    hardware = perf_hardware[suffix],
                    tags = perf_tags if build in (TUNED, DEFAULT_STRATEGY) else ["manual"],
                )
            # Where bench finds the measurements (from their PerfInfo): the tuned and IREE-default
            # builds', and every build's.
            for index, builds_measured, index_tags in (
                ("perf_index", [TUNED, DEFAULT_STRATEGY], perf_tags),
                ("strategy_perf_index", [TUNED, DEFAULT_STRATEGY] + list(STRATEGIES), ["manual"]),
                # tuned beside stock IREE (//tools:report -- --collect riscv_stock)
                ("stock_perf_index", [TUNED, STOCK_IREE_STRATEGY], ["manual"]),
                # every build <name>_riscv may ship (//peers:collect_ours)
                ("shipped_perf_index", _shippable_builds(shipped[suffix], recorded_strategies.get("%s_%s" % (name, suffix))), ["manual"]),
            ):
                perf_index(
                    name = "%s_%s_%s" % (name, suffix, index),
                    perf = {":%s_%s%s_perf" % (name, suffix, _build_suffix(b)): b for b in builds_measured},
                    tags = index_tags,
                )

            # The perf report of what <name>_<suffix> ships (the build its manifest names).
            shipped_perf(
                name = "%s_%s_shipped_perf" % (name, suffix),
                shipped = ":%s_%s" % (name, suffix),
                index = ":%s_%s_shipped_perf_index" % (name, suffix),
                tags = ["manual"],
            )
        else:
            # Runnable here: IREE's defaults and every strategy's build as HAL modules to time.
            hal_module(
                name = "%s_%s_untuned" % (name, suffix),
                compiled = ":%s_%s_untuned_compiled" % (name, suffix),
            )
            for other in STRATEGIES:
                hal_module(
                    name = "%s_%s_%s" % (name, suffix, other),
                    compiled = ":%s_%s_%s_compiled" % (name, suffix, other),
                    tags = ["manual"],
                )

    py_test(
        name = name + "_pipeline_test",
        size = test_size,
        srcs = [_project("//models:pipeline_test.py")],
        main = _project("//models:pipeline_test.py"),
        # Files are found by name in the runfiles (bazel-bin layout of this package).
        args = [
            "--package=" + native.package_name(),
            "--name=" + name,
            "--model-name=" + model_name,
        ] + ["--%s-strategy=%s" % (target, value) for target, value in shipped.items()] + [
            "--readelf=$(rootpath @riscv64_gcc//:riscv64-linux-gnu-readelf)",
            "--objdump=$(rootpath @riscv64_gcc//:riscv64-linux-gnu-objdump)",
        ],
        data = [
            ":" + imported,
            ":%s_host" % name,
            ":%s_host_untuned" % name,
            ":%s_riscv" % name,
            ":%s_host_analysis" % name,
            ":%s_riscv_analysis" % name,
            ":%s_host_compiled" % name,
            ":%s_riscv_compiled" % name,
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

    shippable_riscv = _shippable_builds(shipped["riscv"], recorded_strategies.get("%s_riscv" % name))
    py_test(
        name = name + "_riscv_dispatch_test",
        size = test_size,
        srcs = [_project("//models:riscv_dispatch_test.py")],
        main = _project("//models:riscv_dispatch_test.py"),
        args = [
            _in_package("%s.mlirbc" % model_name),
            # The import's golden inputs: each dispatch runs on the activations they produce.
            _in_package("%s.golden.npz" % model_name),
            _in_package("%s_riscv.manifest.json" % name),
            _in_package("%s_riscv_analysis.analysis.json" % name),
            "$(location %s)" % riscv_target,
        ] + [
            "%s=$(location %s)" % (other, strategy_targets[("riscv", other)])
            for other in STRATEGIES
        ] + [
            "host:%s=$(location %s)" % (other, strategy_targets[("host", other)])
            for other in STRATEGIES
        ] + [
            # The layouts of the builds <name>_riscv may package: the test runs the shipped vmfb
            # with the one whose executables it holds (nothing compiled for the riscv side).
            "layout:" + _in_package("%s_riscv%s_compiled.layout.json" % (name, _build_suffix(b)))
            for b in shippable_riscv
        ],
        data = [
            ":" + imported,
            ":%s_riscv" % name,
            ":%s_riscv_analysis" % name,
            riscv_target,
        ] + [strategy_targets[(t, other)] for t in ("riscv", "host") for other in STRATEGIES] + [
            ":%s_riscv%s_compiled" % (name, _build_suffix(b))
            for b in shippable_riscv
        ],
        tags = tags,
        deps = [_project("//runtime/hal_runner:check_dispatches_lib")],
    )

def _variant_label(name, variant):
    return "%s_%s" % (name, variant)

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
    names = list(variants)
    for variant in names:
        if not variant or "/" in variant:
            fail("hardware_sweep(%s): bad variant name %r" % (name, variant))
        prefix = _variant_label(name, variant)
        hardware_variant(
            name = prefix + "_hardware",
            base = base,
            set = variants[variant],
            variant_name = variant,
            **kwargs
        )
        accelerator_target(
            name = prefix + "_target",
            base = riscv_target,
            hardware = ":%s_hardware" % prefix,
            **kwargs
        )
        # Tiles chosen by measured memory-aware cycles on the variant's core, by model_pipeline's
        # chain; a VLEN without a core model keeps the predicted choice (measured_choice empty).
        _chosen_tiles(
            prefix,
            measured_choice,
            module = module,
            hardware = ":%s_hardware.yaml" % prefix,
            target = ":%s_target" % prefix,
            choice_args = {"allow_no_core_model": not require_model_cycles},
            **kwargs
        )
        iree_compile(
            name = prefix + "_compiled",
            module = module,
            analysis = ":%s_analysis" % prefix,
            target = ":%s_target" % prefix,
            **kwargs
        )
        riscv_perf(
            name = prefix + "_perf",
            compiled = ":%s_compiled" % prefix,
            hardware = [":%s_hardware" % prefix],
            counts_only_ok = not require_model_cycles,
            **kwargs
        )
    sweep_report(
        name = name,
        model_name = model_name,
        variant_names = names,
        hardware = [":%s_hardware" % _variant_label(name, v) for v in names],
        analyses = [":%s_analysis" % _variant_label(name, v) for v in names],
        compiled = [":%s_compiled" % _variant_label(name, v) for v in names],
        perf = [":%s_perf" % _variant_label(name, v) for v in names],
        **kwargs
    )
