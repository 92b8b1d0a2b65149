"""`<name>.perf.json`: RISC-V performance of a HAL module's dispatches (perf/measure.py).

Written by the perf stage, read by bench/report; one file per module, one `CoreRun` per
accelerator description it was measured for. Counts are exact dynamic instruction counts
under qemu (a TCG plugin); `model_cycles` are llvm-mca cycles on `core`, never time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from common.targets import Strategy

SCHEMA_VERSION = 3
CLASS_NAMES = (
    "scalar_int", "branch", "scalar_mem", "scalar_fp", "vset", "vector_load", "vector_store",
    "vector_int", "vector_fp", "vector_red_perm", "other",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LevelTraffic(_Strict):
    """One memory level's traffic over a dispatch (caches: what the level above asked of it)."""

    name: str
    role: str
    read_accesses: int = Field(default=0, ge=0)
    write_accesses: int = Field(default=0, ge=0)
    read_misses: int = Field(default=0, ge=0)
    write_misses: int = Field(default=0, ge=0)
    read_bytes: int = Field(ge=0)  # served to the level above (L1: loaded by the core)
    write_bytes: int = Field(ge=0)  # taken from the level above (L1: stored by the core)
    fill_bytes: int = Field(default=0, ge=0)  # read from the next level
    writeback_bytes: int = Field(default=0, ge=0)  # written to the next level


class MemoryAware(_Strict):
    """A dispatch's memory-aware figures (perf/memory_model.py; docs/design.md)."""

    levels: list[LevelTraffic]  # the caches innermost first, then DRAM
    transfer_cycles: int = Field(ge=0)  # the busiest level's bytes over its bandwidth
    stall_cycles: int = Field(ge=0)  # miss latency the outstanding misses cannot hide
    cycles: int = Field(ge=0)  # max(core model cycles + stall, transfer)
    energy_pj: float = Field(ge=0)  # accesses per level, MACs, instructions and cycles x their pJ
    bound: str  # "core+stall", or the name of the level whose bandwidth limits


class DispatchPerf(_Strict):
    name: str
    kind: str  # the root op's kind, as the analysis classifies it
    workgroups: tuple[int, int, int]
    # Dispatch sites in the program's functions (what one call of the model runs; IREE reuses
    # one executable for equal ops) and in its initializers (once at load: packed weights).
    calls: int = Field(ge=0)
    initializer_calls: int = Field(ge=0)
    macs: int = Field(ge=0)  # multiply-accumulates of the root op (0 for non-contractions)
    instructions: int = Field(ge=0)
    classes: dict[str, int]
    vector_fma: int = Field(ge=0)
    vector_lmul_weighted: float = Field(ge=0)  # vector instructions x LMUL (known LMUL only)
    vector_lmul_unknown: int = Field(ge=0)  # vector instructions whose LMUL was unknown
    blocks: int = Field(ge=0)  # distinct basic blocks executed
    model_cycles: int | None = Field(ge=0)  # None: no core model for this VLEN (counts only)
    fma_peak_share: float | None  # macs / (model_cycles x peak MACs per cycle); None without MACs
    memory: MemoryAware | None = None  # None: no core model (counts only)
    # Memory-aware cycles of the dispatch under each buffer placement measured (perf.measure's
    # placement_offsets: 0 is the runner's natural layout, p > 0 seeded binding offsets), when
    # more than the natural one was asked for; the figures above are the first placement's.
    placement_memory_aware_cycles: dict[int, int] = Field(default_factory=dict)
    # The fewest cycles the described hardware allows this dispatch (perf.memory_model.bound):
    # MACs at the peak for its element type, or its compulsory bytes over a level's bandwidth;
    # `bound_by` says which ("compute" or the level's name); share = bound / memory-aware cycles.
    bound_cycles: int | None = Field(default=None, ge=1)
    bound_by: str | None = None
    bound_share: float | None = None

    @model_validator(mode="after")
    def _classes_add_up(self):
        if tuple(self.classes) != CLASS_NAMES:
            raise ValueError(f"classes must be {', '.join(CLASS_NAMES)} in that order")
        if sum(self.classes.values()) != self.instructions:
            raise ValueError(f"classes sum to {sum(self.classes.values())}, not {self.instructions}")
        return self

    @property
    def vector_share(self) -> float:
        vec = sum(v for k, v in self.classes.items() if k.startswith("vector_") or k == "vset")
        return vec / self.instructions if self.instructions else 0.0


class CoreRun(_Strict):
    hardware: str  # accelerator description name
    hardware_sha256: str
    core: str | None  # llvm-mca -mcpu; None: instruction counts only (no core model for this VLEN)
    vlen: int  # qemu's vlen=, equal to the core model's VLEN
    peak_macs_per_cycle: int  # the description's f32 lanes x FMA pipes
    model_ignores: str
    dispatches: list[DispatchPerf]
    instructions: int  # every dispatch once
    model_cycles: int | None
    # One call of the model: each dispatch times its `calls` (initializers excluded).
    inference_instructions: int
    inference_model_cycles: int | None
    memory_model_ignores: str
    memory_aware_cycles: int | None  # every dispatch once
    energy_pj: float | None
    inference_memory_aware_cycles: int | None  # one call of the model
    inference_energy_pj: float | None
    # One call of the model: the dispatches' bounds (x calls), and that over its memory-aware cycles.
    inference_bound_cycles: int | None = None
    bound_share: float | None = None


class PerfReport(_Strict):
    schema_version: Literal[3] = SCHEMA_VERSION
    model: str
    module_sha256: str
    target: str
    target_vector_bits: int
    strategy: Strategy  # common/targets.py STRATEGY_FLAGS
    variant: Literal["tuned", "iree-default"]
    analysis_sha256: str | None
    tools: dict[str, str]
    # The executables measured (library file name -> sha256): IREE's embedded ELF, the bytes the
    # build's vmfb carries; equal to the compile report's `executables_sha256` (checked).
    executables_sha256: dict[str, str] = {}
    runs: list[CoreRun]
    # IREE refused to compile this build and codegen recorded why (`iree_compile(record_failure =
    # True)`: one candidate of a strategy choice); nothing ran, `runs` is empty.
    failed: str | None = None

    @model_validator(mode="after")
    def _runs_unless_failed(self):
        if self.failed is None and not self.runs:
            raise ValueError("a report of a compiled build needs at least one run")
        if self.failed is not None and self.runs:
            raise ValueError("a report of a refused build has no runs")
        return self

    def run_for(self, core: str) -> CoreRun:
        for run in self.runs:
            if run.core == core:
                return run
        raise KeyError(f"{self.model} ({self.variant}) was not measured on {core}")


class PerfIndexError(ValueError):
    pass


def load_perf_index(index: Path, base: Path) -> dict[str, Path]:
    """build -> its perf.json, from a perf_index's JSON (perf/defs.bzl) under output root `base`:
    riscv_perf's files are found through their PerfInfo, not by their names."""
    import json

    try:
        entries = json.loads(index.read_text())
        return {build: base / entry["perf_json"] for build, entry in entries.items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise PerfIndexError(f"{index}: not a perf index ({type(e).__name__}: {e})") from None
