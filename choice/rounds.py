"""How a tile choice's rounds are measured and priced: each round (every dispatch of the module
with one candidate's configuration, common.analysis_schema) compiled by codegen
(codegen.compile.compile_module) and then run by perf.measure under qemu, or its code costed by
perf's code model. This is where a choice's builds are compiled; perf itself compiles nothing.
choice.tune decides from what these return (dispatch -> figures); it compiles and runs nothing
itself, and a test hands it made-up figures through the same interface."""

from __future__ import annotations

import concurrent.futures
import json
from dataclasses import dataclass
from pathlib import Path

from codegen.compile import TARGETS_IR, CompileError, CompileOptions, compile_module
from common.perf_schema import DispatchPerf
from common.targets import TargetError, load_target
from perf.code_model.cost import CallCycles, code_call_cycles
from perf.code_model.errors import CodeCostError
from perf.measure import PerfError, measure

# What a code-model round raises for its candidates (a refused compile, code it cannot cost).
CODE_ROUND_ERRORS = (CompileError, CodeCostError)


@dataclass(frozen=True)
class Measured:
    """One candidate's measurement: what the choice decides by (`memory_aware_cycles`) and what it
    records beside it."""

    model_cycles: int
    memory_aware_cycles: int
    energy_pj: float
    traffic_bytes: dict[str, int]  # level name -> bytes served to the level above + taken from it
    # Memory-aware cycles under buffer placements 1..K-1 (placement_spread), when measured.
    placement_memory_aware_cycles: tuple[int, ...] | None = None

    @property
    def dram_bytes(self) -> int:
        return list(self.traffic_bytes.values())[-1]

    @classmethod
    def of(cls, d: DispatchPerf, placements: tuple[int, ...] = (0,)) -> "Measured | None":
        if d.model_cycles is None or d.memory is None:
            return None
        by_placement = (tuple(d.placement_memory_aware_cycles[p] for p in placements)
                        if placements != (0,) else None)
        return cls(d.model_cycles, d.memory.cycles, d.memory.energy_pj,
                   {lv.name: lv.read_bytes + lv.write_bytes for lv in d.memory.levels}, by_placement)


def _analysis_file(work: Path, tag: str, analysis: dict) -> Path:
    """The round's analysis as the file codegen compiles from: work/<tag>.analysis.json."""
    path = work / f"{tag}.analysis.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(analysis, indent=1, sort_keys=True))
    return path


def _target_name(target: Path) -> str:
    try:
        return load_target(target).name
    except TargetError:
        return str(target)


def module_call_cycles(module: Path, analysis: Path | None, target: Path, core: str, work: Path) -> CallCycles:
    """Compiles `module` for the target file `target` with `analysis`' tiles (codegen's one compile
    path, with its code) and costs every dispatch of the result: model cycles of one call, all its
    workgroups (the count IREE materialized for the call site). Raises CompileError when IREE
    rejects a config."""
    build = compile_module(module, CompileOptions(target, analysis, code=True), work / "build")
    return code_call_cycles(build.code / TARGETS_IR, build.code, load_target(target), core, work / "cost")


class CodeCostRound:
    """Costs one round's analysis with the code model: dispatch -> model cycles of one call
    (all workgroups) on `core`."""

    def __init__(self, module: Path, target: Path, core: str, work: Path):
        self.module, self.target, self.core, self.work = module, target, core, work

    def __call__(self, analysis: dict, only: set[str], tag: str) -> dict[str, float]:
        path = _analysis_file(self.work, tag, analysis)
        return module_call_cycles(self.module, path, self.target, self.core, self.work / tag)


class MeasureRound:
    """Measures one round's analysis on the accelerator's own core: dispatch -> Measured (None:
    the description has no core model). A build IREE refuses raises PerfError like a failed run."""

    def __init__(self, module: Path, target: Path, hardware: Path, runner: Path, plugin: Path, qemu: Path,
                 model_name: str, jobs: int, work: Path, executor: concurrent.futures.Executor | None = None):
        self.module, self.target, self.hardware, self.runner, self.plugin = module, target, hardware, runner, plugin
        self.qemu, self.model_name, self.jobs, self.work, self.executor = qemu, model_name, jobs, work, executor

    def __call__(self, analysis: dict, only: set[str], tag: str,
                 placements: tuple[int, ...] = (0,)) -> dict[str, Measured | None]:
        path = _analysis_file(self.work, tag, analysis)
        # Compiled by codegen (the vmfb and the layout its compile reads), run by perf from them.
        try:
            build = compile_module(self.module, CompileOptions(self.target, path, layout=True), self.work / tag)
        except CompileError as err:  # named by the target, as a failed run is
            raise PerfError(f"{_target_name(self.target)}: {err}") from None
        report = measure(self.module, build, [self.hardware], self.runner, self.plugin, self.model_name, self.jobs,
                         only=only, inputs_dir=self.work / "inputs", qemu=self.qemu, placements=placements,
                         executor=self.executor)
        return {d.name: Measured.of(d, placements) for d in report.runs[0].dispatches}
