"""Chooses, of several builds of one module, the one predicted or measured fastest.

    python -m choice.choose --module M.mlirbc \\
        --candidate tuned M_tuned.vmfb M_tuned.report.json T.target.yaml M_tuned.perf.json \\
        --candidate ukernels M_uk.vmfb M_uk.report.json T_uk.target.yaml M_uk.perf.json \\
        --out-choice M.choice.json --out-chosen-vmfb M.chosen.vmfb --out-chosen-report M.chosen.report.json

    python -m choice.choose --by code-cycles --hardware H.yaml --module M.mlirbc \\
        --candidate tuned M_tuned.vmfb M_tuned.report.json T.target.yaml M.analysis.json \\
        --candidate ukernels M_uk.vmfb M_uk.report.json T_uk.target.yaml none ... \\
        [--code tuned M_tuned.code --code ukernels M_uk.code ...]

    [--confirm RISCV_HW.yaml hal_runner_riscv64 libinsn_classes.so MODEL_NAME --qemu qemu-riscv64
     --layout tuned M_tuned.layout.json ... --default-build M_iree_default.vmfb M_iree_default.report.json M_iree_default.layout.json]

`model_pipeline(strategies = {target: "measured" | "auto"})`: each candidate is a complete build of the same module for
the same target under one lowering strategy. The chosen one has the fewest cycles for
one call of the model (each dispatch's cycles times its calls), ties to the earlier candidate:
- `--by memory-aware-cycles` (riscv): the perf stage's measurement (the last field of a candidate
  is its perf.json), memory-aware cycles (core model cycles plus the simulated caches' traffic,
  perf/memory_model.py) on the first core measured (the module's own accelerator);
- `--by code-cycles` (host and riscv "auto"): the static code model (perf/code_model/) on the hardware
  description's `model_core` (the last field is the analysis the build applied, or `none`).
  A candidate the code model cannot cost whole (a loop whose count is a run-time value, IR
  LLVM 19 cannot read) or IREE could not compile is left out, never compared on a partial
  total; when the first candidate (the baseline) is left out, the baseline is kept: nothing
  is known to beat it. With `--confirm` (riscv "auto"), a choice other than the first
  candidate is kept only if it also runs in fewer memory-aware cycles than the first, both measured
  by perf.measure on the description's core model (each candidate's own vmfb, with the layout its
  compile wrote, --layout; IREE's default build, the energy reference, --default-build): the
  builds measured are the compile actions' outputs, the bytes that ship; nothing is compiled
  again. Only a stale record's missing builds are compiled here. The code model proposes (it misprices some
  guarded loop nests, ResNet-18's data-tiled and microkernel builds among them), and one
  measurement of two builds decides; a model the code model keeps at the first runs nothing.
Every candidate's figure, every exclusion and the reason are recorded in the decision
(common.tuning_schema.StrategyDecision), written beside a copy of the chosen build (one this
tool compiled itself, for a stale record, exists nowhere else); runtime.manifest --choice
packages it, with the decision as the manifest's `strategy_choice`. Deterministic: the
measurements and the code are.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, NamedTuple
from pathlib import Path

from common.build import Build, CompileOptions
from common.errors import OneLineErrors, first_line
from common.files import check_outputs, sha256_file, write_together
from common.perf_schema import PerfReport
from common.scratch import scratch_directory
from common.targets import DEFAULT_STRATEGY, STRATEGY_FLAGS, TUNED
from common.tuning_schema import StrategyDecision, StrategyRecord
from perf import mca
from choice.records import RecordError, dump_strategy_record


# How choose_by_code records a candidate IREE refused (never measured: there is no build).
REFUSED = "IREE could not compile it"


class ChoiceError(RuntimeError):
    pass


def clears_margin(cost: float, baseline: float, margin: float) -> bool:
    """Whether a candidate costing `cost` replaces the baseline: only below (1 - margin) x its
    cost (a near-tie is no evidence: the code model's error exceeds it). The one rule of the
    host's tile (choice.tune --by code-model) and strategy choices."""
    return cost < (1 - margin) * baseline


def _pick(figures: dict[str, float], order: list[str], by: str, unit: str,
          excluded: dict[str, str] | None = None) -> tuple[str, dict]:
    """The cheapest of `figures` (ties to the earlier in `order`) and the record of why."""
    chosen = min(figures, key=lambda s: (figures[s], order.index(s)))
    runner_up = min((s for s in figures if s != chosen), key=figures.get, default=None)
    reason = (f"{chosen}: fewest {unit} for one call ({figures[chosen]:,})"
              + (f"; next {runner_up} at {figures[runner_up] / figures[chosen]:.2f}x" if runner_up else "")
              + (f"; left out: {', '.join(excluded)}" if excluded else ""))
    record = {"by": by, "candidates": figures, "chosen": chosen, "reason": reason}
    if excluded:
        record["excluded"] = excluded
    return chosen, record


def choose(candidates: list[tuple[str, Path]]) -> tuple[str, dict]:
    """(chosen strategy, record) from (strategy, perf.json) pairs; a build IREE refused (its
    report says `failed`) is left out, with IREE's reason."""
    figures, excluded = {}, {}
    core = None
    for strategy, perf in candidates:
        try:
            report = PerfReport.model_validate_json(perf.read_text())
        except (OSError, ValueError) as err:
            raise ChoiceError(f"{perf}: not a perf report: {str(err).splitlines()[0]}") from None
        if report.failed is not None:
            excluded[strategy] = f"IREE could not compile it: {report.failed}"
            continue
        run = report.runs[0]
        if core is None:
            core = (run.hardware, run.core)
        elif (run.hardware, run.core) != core:
            raise ChoiceError(f"{perf}: measured first on {run.hardware}, not {core[0]}: "
                              "candidates must be measured on the same accelerator")
        if run.inference_memory_aware_cycles is None:
            raise ChoiceError(f"{perf}: {run.hardware} has no core model: no model cycles to choose by")
        figures[strategy] = run.inference_memory_aware_cycles
    if not figures:
        raise ChoiceError("no candidate was measured" + (f" ({', '.join(excluded)}: refused by IREE)" if excluded else ""))
    return _pick(figures, [s for s, _ in candidates],
                 f"one call of the model, memory-aware cycles on {core[1]} ({core[0]})",
                 f"memory-aware cycles on {core[1]}", excluded)


def compile_failure(report: Path) -> str | None:
    """Why IREE could not compile a build (`codegen.compile --record-failure`), else None."""
    from common.codegen_report import ReportError, load_codegen_report

    try:
        return load_codegen_report(report).failed
    except ReportError as err:
        raise ChoiceError(str(err)) from None


def choose_by_code(candidates: list[tuple[str, Path, Path | None]], module: Path, hardware: Path,
                   work: Path, code: dict[str, Path] | None = None,
                   failed: dict[str, str] | None = None, margin: float = 0.0) -> tuple[str, dict]:
    """(chosen strategy, record) from (strategy, target.yaml, analysis.json or None) triples:
    each build's code costed statically on `hardware`'s core model. `code`: strategy -> the
    build's `codegen.compile --out-code` directory, costed as it is; a strategy without one is
    compiled again here. `failed`: strategy -> why IREE could not compile it (left out). The
    first candidate (the baseline) is kept unless another costs below (1 - margin) x its cycles."""
    from common.hardware import HardwareError, load_hardware
    from codegen.compile import TARGETS_IR, CompileError
    from common.core_models import CoreModelError, core_model
    from common.targets import TargetError, load_target
    from choice.rounds import module_call_cycles  # compiles a build no action made
    from perf.code_model.cost import code_call_cycles
    from perf.code_model.errors import CodeCostError, MissingCode
    from perf.code_model.machine import isa_of

    try:
        hw = load_hardware(hardware)
        if hw.model_core is None:
            raise ChoiceError(f"{hardware}: {hw.name} names no model_core: no core model to price its code on")
        core = core_model(hw.model_core)
    except (HardwareError, CoreModelError) as err:
        raise ChoiceError(f"{hardware}: {first_line(err)}") from None
    if not candidates:
        raise ChoiceError("no candidates")
    figures: dict[str, float] = {}
    excluded: dict[str, str] = {}
    for strategy, target_path, analysis in candidates:
        if strategy in (failed or {}):
            excluded[strategy] = f"{REFUSED}: {failed[strategy]}"
            continue
        try:
            target = load_target(target_path)
            isa = isa_of(target.triple)
        except (TargetError, CodeCostError) as err:
            raise ChoiceError(f"{target_path}: {first_line(err)}") from None
        if isa.name != core.isa:
            raise ChoiceError(f"{target_path}: {target.triple} code cannot be priced on {core.name} "
                              f"({core.isa}), the model_core of {hardware}")
        try:
            built = (code or {}).get(strategy)
            if built is not None:
                costed = code_call_cycles(built / TARGETS_IR, built, target, core.name, work / strategy)
            else:
                costed = module_call_cycles(module, analysis, Path(target_path), core.name, work / strategy)
        except MissingCode as err:
            raise ChoiceError(f"{strategy}: {first_line(err)}") from None
        except (CompileError, CodeCostError) as err:
            # The module as a whole cannot be costed (opt cannot read IREE's IR, say): like a
            # dispatch that cannot be, it is left out, never guessed.
            excluded[strategy] = f"not costable: {first_line(err)}"
            continue
        if costed.errors:
            name, why = sorted(costed.errors.items())[0]
            excluded[strategy] = f"{len(costed.errors)} dispatch(es) not costable, e.g. {name}: {why}"
        else:
            figures[strategy] = round(costed.model_cycles())
    return decide_by_code(figures, excluded, [s for s, _, _ in candidates], core.name, hw.name, margin)


def decide_by_code(figures: dict[str, float], excluded: dict[str, str], order: list[str], core: str,
                   hardware_name: str, margin: float) -> tuple[str, dict]:
    """(chosen strategy, record) from the code-model cycles of one call of each build (`figures`)
    and the builds left out (`excluded`: strategy -> why), candidates in `order`, the first the
    baseline: the one decision choose_by_code makes from what it priced, and what a record's
    audit re-derives from the figures the record claims (tuning/audit.py)."""
    by = f"one call of the model, code-model cycles on {core} ({hardware_name})"
    baseline = order[0]
    if baseline in excluded:
        return baseline, {"by": by, "candidates": figures, "chosen": baseline, "excluded": excluded,
                          "reason": f"{baseline} kept: its code cannot be costed ({excluded[baseline]}), "
                                    "so no candidate is known to beat it"}
    chosen, record = _pick(figures, order, by, f"code-model cycles on {core}", excluded)
    record["margin"] = margin
    ratio = figures[chosen] / figures[baseline] if figures[baseline] else 1.0
    if chosen != baseline and not clears_margin(figures[chosen], figures[baseline], margin):
        record.update(chosen=baseline, reason=f"{baseline} kept: {chosen} at {ratio:.3f}x of its cycles is "
                      f"not below {1 - margin:.2f}x; " + record["reason"])
        chosen = baseline
    return chosen, record


def _check_candidates(module: Path, by_strategy: dict[str, list[Path | None]], by: str) -> None:
    """Every candidate is a build of `module` its files describe: the report is of this module,
    target file and analysis (code-cycles), the perf report measured that very build
    (memory-aware-cycles). Evidence from another build is refused, never compared."""
    from common.codegen_report import ReportError, load_codegen_report
    from common.perf_schema import PerfReport
    from common.provenance import check_build_inputs, check_perf_of_build

    if not module.is_file():
        raise ChoiceError(f"{module}: module file not found")
    module_sha256 = sha256_file(module)
    for strategy, (vmfb, report_path, target, last) in by_strategy.items():
        if strategy not in (TUNED, *STRATEGY_FLAGS):
            raise ChoiceError(f"candidate {strategy}: not a strategy (expected one of {TUNED}, "
                              f"{', '.join(STRATEGY_FLAGS)})")
        for path in (report_path, target, last):
            if path is not None and not path.is_file():
                raise ChoiceError(f"{path}: candidate {strategy}'s file not found")
        if report_path is None:  # not built (--record): compiled here if it is needed
            continue
        try:
            report = load_codegen_report(report_path)
        except ReportError as err:
            raise ChoiceError(str(err)) from None
        # The label is what the manifest records as shipped: it must be what the report built
        # (a swapped or mislabelled candidate shipped under another strategy's name, issue 62).
        built = TUNED if report.strategy == DEFAULT_STRATEGY and report.tuned else report.strategy
        if built != strategy:
            raise ChoiceError(f"{report_path}: candidate {strategy}'s compile report is of a {built} build")
        if by == "memory-aware-cycles":
            check_build_inputs(report, report_path, module, target)
            if last is not None:
                try:
                    perf = PerfReport.model_validate_json(last.read_text())
                except ValueError as err:
                    raise ChoiceError(f"{last}: not a perf report: {first_line(err)}") from None
                check_perf_of_build(perf, last, report, report_path, module_sha256)
        else:
            check_build_inputs(report, report_path, module, target, last)


class Measured(NamedTuple):
    """What `confirm_by_measurement` compares: one call of a build, memory-aware."""
    cycles: float
    energy_pj: float


class Measure:
    """How `confirm_by_measurement` runs a build: perf.measure of its own vmfb on the module's own
    accelerator. Nothing is compiled here: the bytes measured are the bytes a compile action
    wrote, the bytes that ship when the build is chosen."""

    def __init__(self, module: Path, hardware: Path, runner: Path, plugin: Path, model_name: str,
                 qemu: Path):
        self.module, self.hardware, self.runner, self.plugin = module, hardware, runner, plugin
        self.model_name, self.qemu = model_name, qemu

    def __call__(self, build: Build) -> Measured:
        """Memory-aware cycles and energy of one call of `build` (a compile action's files, or one
        this tool compiled for a stale record, with its layout) on the description's core model
        and caches, of exactly the executables its compile report records."""
        from common.codegen_report import ReportError, check_layout, load_codegen_report
        from perf.measure import MEASURE_ERRORS, measure

        try:
            compiled = load_codegen_report(build.report)
            check_layout(compiled, build.report, build.layout)
            shipped = compiled.executables_sha256
            report = measure(self.module, build, [self.hardware], self.runner, self.plugin, self.model_name,
                             shipped=shipped, qemu=self.qemu)
        except ReportError as err:
            raise ChoiceError(first_line(err)) from None
        except MEASURE_ERRORS as err:
            raise ChoiceError(first_line(err)) from None
        run = report.runs[0]
        if run.inference_memory_aware_cycles is None or run.inference_energy_pj is None:
            raise ChoiceError(f"{self.hardware}: no core model: no model cycles to confirm by")
        return Measured(run.inference_memory_aware_cycles, run.inference_energy_pj)


def confirm_by_measurement(chosen: str, record: dict, builds: dict[str, Build], default: Callable[[], Build],
                           measure: Callable[[Build], Measured]) -> str:
    """The code model proposes, the measurement decides. Measured against the baseline (the first
    candidate): the code model's choice when it is not the baseline, and every candidate the code
    model could not cost (a run-time trip count, say), which is otherwise never compared. The one
    with the fewest memory-aware cycles among those faster than the baseline that spend no more
    energy than IREE's default build (issue 58: the baseline's target with IREE's own
    configurations, measured too, recorded as DEFAULT_STRATEGY; a faster build that moves more
    bytes through DRAM, such as one of many small dispatches, is not shipped over it) is chosen,
    else the baseline. `builds`: strategy -> its Build, the baseline first; `default()`: IREE's
    default build (asked for only when something is measured); `measure(build)` -> Measured of
    one call of that build. Adds what was measured to
    `record`; returns what is chosen. The baseline is measured first: when that fails (no qemu, a
    broken runner) the error stands; a contender that fails to run is left out and the record
    says why."""
    baseline = next(iter(builds))
    unpriced = [s for s, why in record.get("excluded", {}).items() if not why.startswith(REFUSED) and s in builds]
    contenders = ([chosen] if chosen != baseline else []) + [s for s in unpriced if s != chosen]
    if not contenders:
        return chosen
    measured = {baseline: measure(builds[baseline])}
    default = measured[DEFAULT_STRATEGY] = measure(default())
    notes = []
    for strategy in contenders:
        try:
            measured[strategy] = measure(builds[strategy])
        except ChoiceError as err:
            notes.append(f"{strategy} could not be measured against it ({err})")
    record["measured"] = {s: round(m.cycles) for s, m in measured.items()}
    record["measured_energy_pj"] = {s: round(m.energy_pj) for s, m in measured.items()}
    base = measured[baseline]
    ratios = {s: (m.cycles / base.cycles if base.cycles else 1.0,
                  m.energy_pj / default.energy_pj if default.energy_pj else 1.0)
              for s, m in measured.items() if s in contenders}
    winners = [s for s, (cycles, energy) in ratios.items() if cycles < 1.0 and energy <= 1.0]
    best = min(winners, key=lambda s: (measured[s].cycles, contenders.index(s))) if winners else baseline
    how = lambda s: "priced cheaper" if s == chosen else "not costable by the code model"
    if best != baseline:
        cycles, energy = ratios[best]
        measured_note = (f"measured {cycles:.3f}x of {baseline}'s memory-aware cycles, {energy:.3f}x of the "
                         f"energy of IREE's default")
        if best == chosen:
            record["reason"] += f"; {measured_note}"
        else:
            record.update(chosen=best, reason=f"{best} ({how(best)}): {measured_note}; " + record["reason"])
        return best
    for s, (cycles, energy) in ratios.items():
        notes.append(f"{s}, {how(s)}, measured {cycles:.3f}x of its memory-aware cycles"
                     + (f" but {energy:.3f}x of the energy of IREE's default" if cycles < 1.0 else ""))
    record.update(chosen=baseline, reason=f"{baseline} kept: {'; '.join(notes)}; " + record["reason"])
    return baseline


def _compile_build(module: Path, strategy: str, target: Path, analysis: Path | None, out: Path,
                   layout: bool) -> Build:
    """`strategy`'s build compiled into the new directory `out`, with its code (and layout), as
    `codegen.compile --out-code --record-failure [--out-layout]` would write it."""
    from codegen.compile import CompileError, compile_module, write_failure_record

    out.mkdir(parents=True)
    options = CompileOptions(target, analysis, layout=layout, code=True)
    try:
        return compile_module(module, options, out)
    except CompileError as err:
        if not err.diagnostics:  # only IREE's own refusals leave a candidate out
            raise ChoiceError(f"{strategy}: {first_line(err)}") from None
        build = Build.in_directory(out, options)
        write_failure_record(err, module, build)
        return build


def _compile_missing(module: Path, by_strategy: dict[str, list[Path | None]], work: Path,
                     layouts: dict[str, Path] | None = None) -> None:
    """Compiles, into `work`, every candidate given without its build (`none`): the builds a
    replayed record did not need, needed because it is stale. Fills in its vmfb and report; with
    `layouts` (--confirm), also its layout there."""
    for strategy, files in by_strategy.items():
        if files[0] is None:
            build = _compile_build(module, strategy, files[2], files[3], work / "builds" / strategy,
                                   layouts is not None)
            files[0], files[1] = build.vmfb, build.report
            if layouts is not None:
                layouts[strategy] = build.layout


def _replay(record_path: Path, key, by_strategy: dict[str, list[Path | None]]) -> tuple[dict | None, str]:
    """(the committed record's choice, "") when its key is the tree's, else (None, why not)."""
    from choice.records import load_strategy_record, strategy_key_differences

    committed = load_strategy_record(record_path)
    if committed.pipeline != key.pipeline:
        raise ChoiceError(f"{record_path}: the strategy record of '{committed.pipeline}', not of '{key.pipeline}'")
    diffs = strategy_key_differences(committed.key, key)
    if diffs:
        return None, f"{record_path.name} is stale ({'; '.join(diffs[:3])})"
    chosen = committed.choice["chosen"]
    if by_strategy[chosen][0] is None:
        raise ChoiceError(f"{record_path}: chose {chosen}, whose build is not given: "
                          "tuning/strategies/recorded.bzl does not match the records (`bazel run //tools:tune` "
                          "rewrites both)")
    return committed.choice, ""


def _tree_key(a: argparse.Namespace, by_strategy: dict[str, list[Path | None]]):
    """The key of this choice (choice.records.strategy_key) from the command line's candidates."""
    from common.hardware import HardwareError, load_hardware
    from choice.records import strategy_key

    try:
        hw_name = load_hardware(a.hardware).name
    except HardwareError as err:
        raise ChoiceError(f"{a.hardware}: {first_line(err)}") from None
    confirm_tools = (a.qemu, Path(a.confirm[2]), Path(a.confirm[1])) if a.confirm else None
    return strategy_key(a.record_name, a.module, a.hardware, hw_name, a.margin,
                        [(s, files[2], files[3]) for s, files in by_strategy.items()], a.llvm_bin, confirm_tools)


def _write_key(p: argparse.ArgumentParser, a: argparse.Namespace) -> int:
    """--out-key: the key alone, from the candidates' targets and analyses (no build read)."""
    if a.record_name is None or a.by != "code-cycles" or a.hardware is None or a.llvm_bin is None:
        p.error("--out-key: a keyed code-cycles choice (--record-name, --hardware, --llvm-bin)")
    if a.confirm and a.qemu is None:
        p.error("--confirm needs --qemu")
    mca.use_llvm_bin(a.llvm_bin)
    with OneLineErrors("choice.choose", a.module, (ChoiceError, mca.McaError, RecordError)) as cli:
        by_strategy = {c[0]: [None, None, Path(c[3]), None if c[4] == "none" else Path(c[4])] for c in a.candidate}
        if len(by_strategy) != len(a.candidate):
            raise ChoiceError("a strategy is given twice")
        check_outputs({"--out-key": a.out_key},
                      {"--module": a.module, "--hardware": a.hardware,
                       **{f"--candidate {s}": [f for f in files if f is not None] for s, files in by_strategy.items()},
                       "--confirm": (a.confirm or [None] * 3)[:3]})
        mca.require_tools(mca.LLVM_TOOLS)
        write_together({a.out_key: _tree_key(a, by_strategy).model_dump_json(indent=1) + "\n"})
    return cli.exit_code if cli.failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m choice.choose", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True, type=Path)
    p.add_argument("--by", choices=("memory-aware-cycles", "code-cycles"), default="memory-aware-cycles")
    p.add_argument("--hardware", type=Path, help="code-cycles: the description naming the core model")
    p.add_argument("--candidate", nargs=5, action="append", required=True,
                   metavar=("STRATEGY", "VMFB", "REPORT", "TARGET", "PERF_JSON|ANALYSIS"),
                   help="code-cycles with --record: VMFB and REPORT `none` for a build the record does "
                        "not need (compiled here when the record does not match)")
    p.add_argument("--code", nargs=2, action="append", default=[], metavar=("STRATEGY", "DIR"),
                   help="code-cycles: that candidate's `codegen.compile --out-code` directory, costed "
                        "without compiling the module again")
    p.add_argument("--margin", type=float, default=0.0,
                   help="code-cycles: another strategy replaces the first candidate only below "
                   "(1 - margin) x its cycles")
    p.add_argument("--confirm", nargs=4, metavar=("HARDWARE", "RUNNER", "PLUGIN", "MODEL_NAME"),
                   help="code-cycles on riscv: measure the code model's choice and the first candidate "
                        "(perf.measure on HARDWARE's core model) and keep the choice only if faster")
    p.add_argument("--qemu", type=Path,
                   help="--confirm: qemu-riscv64 that loads the plugin (//tools/qemu:qemu-riscv64)")
    p.add_argument("--layout", nargs=2, action="append", default=[], metavar=("STRATEGY", "LAYOUT"),
                   help="--confirm: the layout that candidate's compile wrote (codegen.compile --out-layout); "
                        "every candidate given with its build needs one: its own vmfb is what is measured")
    p.add_argument("--default-build", nargs=3, type=Path, metavar=("VMFB", "REPORT", "LAYOUT"),
                   help="--confirm: IREE's defaults for the first candidate's target (the energy reference), "
                        "as compiled; without it, compiled here when a measurement needs it")
    p.add_argument("--record-name", help="code-cycles: key the choice as this pipeline target's strategy "
                   "record (tuning/strategies/<name>.json), written as --record-out")
    p.add_argument("--record", type=Path, help="the committed strategy record: replayed when its key is "
                   "the tree's (only the chosen build is needed), else every candidate is measured")
    p.add_argument("--record-out", type=Path, help="the record of this choice (what //tools:tune commits)")
    p.add_argument("--refresh-target", help="the label `bazel run //tools:tune -- LABEL` refreshes the record with")
    p.add_argument("--records-ignored", action="store_true",
                   help="--record-name without --record on purpose: measuring to make the record")
    p.add_argument("--out-key", type=Path,
                   help="with --record-name: write the choice's key (common.tuning_schema.StrategyKey) and "
                        "stop; nothing compiled, priced or measured, builds may be `none` "
                        "(//tuning:strategy_keys_test checks the committed records against it)")
    p.add_argument("--stale-record-fails", action="store_true",
                   help="with --record-name: no matching record is an error naming the refresh command, "
                        "not a measurement (`bazel test` sets it: a test never measures in its build)")
    mca.add_llvm_bin_argument(p, required=False)  # --by code-cycles
    p.add_argument("--out-choice", type=Path,
                   help="the decision (common.tuning_schema.StrategyDecision), what runtime.manifest --choice packages")
    p.add_argument("--out-chosen-vmfb", type=Path, help="a copy of the chosen build's vmfb")
    p.add_argument("--out-chosen-report", type=Path, help="a copy of its compile report")
    a = p.parse_args(argv)
    if a.out_key is not None:
        return _write_key(p, a)
    missing = [o for o, v in (("--out-choice", a.out_choice), ("--out-chosen-vmfb", a.out_chosen_vmfb),
                              ("--out-chosen-report", a.out_chosen_report)) if v is None]
    if missing:
        p.error(f"{missing[0]} is required (or --out-key)")
    if a.by == "code-cycles" and a.hardware is None:
        p.error("--by code-cycles needs --hardware")
    if a.by == "code-cycles" and a.llvm_bin is None:
        p.error("--by code-cycles needs --llvm-bin (LLVM 19's tools)")
    if a.confirm and a.by != "code-cycles":
        p.error("--confirm confirms a code-cycles choice")
    if a.confirm and a.qemu is None:
        p.error("--confirm needs --qemu")
    if (a.layout or a.default_build) and not a.confirm:
        p.error("--layout and --default-build are what --confirm measures")
    if not 0 <= a.margin < 1:
        p.error(f"--margin {a.margin}: a fraction of the first candidate's cycles, in [0, 1)")
    keyed = [f for f in ("record", "record_out", "refresh_target") if getattr(a, f) is not None]
    if a.record_name is None and keyed:
        p.error(f"--{keyed[0].replace('_', '-')} needs --record-name")
    if a.records_ignored and (a.record is not None or a.record_name is None):
        p.error("--records-ignored: with --record-name and without --record")
    if a.stale_record_fails and (a.record_name is None or a.records_ignored):
        p.error("--stale-record-fails needs --record-name and records to replay (not --records-ignored)")
    if a.record_name is not None and (a.by != "code-cycles" or a.record_out is None or a.refresh_target is None):
        p.error("--record-name: strategy records are of code-cycles choices and need --record-out and "
                "--refresh-target")
    mca.use_llvm_bin(a.llvm_bin)
    with OneLineErrors("choice.choose", a.module, (ChoiceError, mca.McaError, RecordError)) as cli:
        by_strategy = {c[0]: [None if x == "none" else Path(x) for x in c[1:3]] + [Path(c[3])]
                       + [None if c[4] == "none" else Path(c[4])] for c in a.candidate}
        if len(by_strategy) != len(a.candidate):
            raise ChoiceError("a strategy is given twice")
        unbuilt = [s for s, files in by_strategy.items() if (files[0] is None) != (files[1] is None)]
        if unbuilt:
            raise ChoiceError(f"--candidate {unbuilt[0]}: VMFB and REPORT are both a build's or both `none`")
        if a.record is None and any(files[0] is None for files in by_strategy.values()):
            raise ChoiceError("a candidate without its build (`none`) needs --record: nothing else says "
                              "which build is chosen")
        check_outputs({"--out-choice": a.out_choice, "--out-chosen-vmfb": a.out_chosen_vmfb,
                       "--out-chosen-report": a.out_chosen_report, "--record-out": a.record_out},
                      {"--module": a.module, "--hardware": a.hardware, "--record": a.record,
                       **{f"--candidate {s}": [f for f in files if f is not None] for s, files in by_strategy.items()},
                       **{f"--code {s}": d for s, d in a.code}, "--confirm": (a.confirm or [None] * 3)[:3],
                       **{f"--layout {s}": d for s, d in a.layout}, "--default-build": a.default_build})
        layouts = {s: Path(d) for s, d in a.layout}
        if a.confirm:
            unknown = sorted(set(layouts) - set(by_strategy))
            if unknown:
                raise ChoiceError(f"--layout {unknown[0]}: not a candidate")
            lacking = [s for s, files in by_strategy.items() if files[0] is not None and s not in layouts]
            if lacking:
                raise ChoiceError(f"--confirm: candidate {lacking[0]} has no --layout: its own vmfb is what "
                                  "would be measured, and the layout its compile wrote says how to run it")
        _check_candidates(a.module, by_strategy, a.by)
        with scratch_directory("perf_choose_") as tmp:
            note = ""
            if a.by == "memory-aware-cycles":
                if None in (files[3] for files in by_strategy.values()):
                    raise ChoiceError("--by memory-aware-cycles needs a perf.json per candidate, got `none`")
                chosen, record = choose([(s, files[3]) for s, files in by_strategy.items()])
            else:
                # Here rather than in a candidate's costing, which would leave a missing tool's
                # candidates out as not costable.
                mca.require_tools(mca.LLVM_TOOLS)
                key = record = None
                if a.record_name is not None:
                    key = _tree_key(a, by_strategy)
                    why = "none committed"
                    if a.record is not None:
                        record, why = _replay(a.record, key, by_strategy)
                        note = f"{why}: every candidate measured" if record is None else \
                            f"replayed {a.record.name} (key matches)"
                    if record is None and a.stale_record_fails:
                        refresh = f"bazel run //tools:tune -- {a.refresh_target}"
                        raise ChoiceError(f"no strategy record matches ({why}); `{refresh}` refreshes "
                                          f"tuning/strategies/{a.record_name}.json (--stale-record-fails: not measured)")
                if record is not None:
                    chosen = record["chosen"]
                else:
                    _compile_missing(a.module, by_strategy, Path(tmp), layouts if a.confirm else None)
                    code = {s: Path(d) for s, d in a.code}
                    code.update({s: files[1].parent / "build.code" for s, files in by_strategy.items()
                                 if files[1].is_relative_to(tmp)})
                    unknown = sorted(set(code) - set(by_strategy))
                    if unknown:
                        raise ChoiceError(f"--code {unknown[0]}: not a candidate")
                    failed = {s: why for s, files in by_strategy.items() if (why := compile_failure(files[1]))}
                    chosen, record = choose_by_code([(s, files[2], files[3]) for s, files in by_strategy.items()],
                                                    a.module, a.hardware, Path(tmp) / "cost", code, failed, a.margin)
                    if a.confirm:
                        hw, runner, plugin, model_name = a.confirm
                        baseline = next(iter(by_strategy))

                        def default() -> Build:
                            if a.default_build is not None:
                                vmfb, report, layout = a.default_build
                            else:  # a stale record's: the one build no candidate action made
                                # Beside the candidates' builds/<strategy>, never one of them.
                                return _compile_build(a.module, DEFAULT_STRATEGY, by_strategy[baseline][2],
                                                      None, Path(tmp) / "default" / DEFAULT_STRATEGY, True)
                            return Build(CompileOptions(by_strategy[baseline][2], None, layout=True), vmfb, report,
                                         layout=layout)

                        chosen = confirm_by_measurement(
                            chosen, record, {s: Build(CompileOptions(files[2], files[3], layout=True), files[0],
                                                      files[1], layout=layouts[s])
                                             for s, files in by_strategy.items()}, default,
                            Measure(a.module, Path(hw), Path(runner), Path(plugin), model_name, a.qemu))
            vmfb, report, _, _ = by_strategy[chosen]
            decision = StrategyDecision(chosen=chosen, strategy_choice=record)
            outputs = {a.out_choice: json.dumps(decision.model_dump(mode="json"), indent=1, sort_keys=True) + "\n",
                       a.out_chosen_vmfb: vmfb.read_bytes(), a.out_chosen_report: report.read_bytes()}
            if a.record_out is not None:
                refresh = f"bazel run //tools:tune -- {a.refresh_target}"
                outputs[a.record_out] = dump_strategy_record(
                    StrategyRecord(pipeline=a.record_name, refresh=refresh, key=key, choice=record))
            write_together(outputs)
    if cli.failed:
        return cli.exit_code
    print(f"choice.choose: {a.module.name}: {record['reason']}")
    if note:
        print(f"choice.choose: {a.record_name}: {note}"
              + ("" if note.startswith("replayed") else f"; `bazel run //tools:tune -- {a.refresh_target}` refreshes it"))
    elif a.record_name is not None and a.record is None and not a.records_ignored:
        print(f"choice.choose: {a.record_name}: no strategy record: every candidate measured; "
              f"`bazel run //tools:tune -- {a.refresh_target}` writes it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
