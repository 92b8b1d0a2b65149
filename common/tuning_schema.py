"""Tuning records (tuning/records/<pipeline>.json): a measured tile choice's results, committed.

Modelled on TVM's tuning logs (per workload and config: the measured costs or the error, plus
the versions that produced them) and IREE's tuning specs (a reviewable file the compiler reads
instead of searching): a record holds, per dispatch and shortlisted candidate, what choice/tune.py
measured (memory-aware and model cycles, energy, traffic) and what the code model costed, or the
one-line error, together with the `key` of everything that decided those figures. A build whose
own key equals a record's replays the record's figures through the same decision code instead
of measuring (choice/records.py), so its analysis is byte-identical to a measured one; any key
difference means the record is stale and the build measures.

A record carries the sha256 of its own figures (`figures_sha256`: the canonical JSON of its key and
results, choice/records.py), written by the tool that measured them and checked by every reader:
a figure edited by hand no longer matches it, and the replay and //tuning:records_test refuse the
record, naming the command that refreshes it. The record stays reviewable text.

The analysis' own fields (candidates, predictions, reasons) are not stored: they come from the
build's predicted analysis, which the key pins through each dispatch's fingerprint and candidate
list.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TUNING_SCHEMA_VERSION = 1
STRATEGY_SCHEMA_VERSION = 2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DispatchKey(_Strict):
    # sha256 of what the analysis says the dispatch is (executable, root op, kind, loops,
    # operands, signature): a changed dispatch names itself.
    fingerprint: str
    # sha256 of its candidate list in the analysis' order (name, generator, tiles): the
    # candidate generator's output, which decides what is shortlisted.
    candidates_sha256: str


class RecordKey(_Strict):
    """Everything that decides a measured choice's figures; equal keys, equal figures."""

    model: str
    target: str  # the riscv target's name
    target_sha256: str  # its file: IREE's flags
    hardware: str
    hardware_sha256: str
    module_sha256: str  # the imported module every candidate is compiled from
    by: Literal["memory-aware-cycles"] = "memory-aware-cycles"
    candidates_per_dispatch: int = Field(ge=2)
    code_ranked: int = Field(ge=0)
    placements: int = Field(default=1, ge=1)  # buffer placements a switch is judged over
    # Tool name -> version or sha256: iree-base-compiler (the pip pin), llvm19 (the pinned
    # Debian package's files), qemu (the binary built from the pinned source), the TCG plugin,
    # the riscv64 runner, and the version of the Python that compiles, runs and prices a
    # candidate (common.measurement_version).
    tools: dict[str, str]
    dispatches: dict[str, DispatchKey]


class Measurement(_Strict):
    """One candidate's run under qemu (choice/tune.py's Measured)."""

    model_cycles: int = Field(ge=0)
    memory_aware_cycles: int = Field(ge=0)
    energy_pj: float = Field(ge=0)
    # Memory level name -> bytes, innermost first (the order is the hierarchy's; DRAM last).
    traffic_bytes: dict[str, int]
    # Memory-aware cycles under buffer placements 1..K-1 (IREE's default and a candidate that
    # beat it at placement 0); the figures above are placement 0's.
    placement_memory_aware_cycles: list[int] | None = None


class CandidateResult(_Strict):
    """What the code model and the measurement gave one candidate; absent: not tried."""

    code_model_cycles: float | None = Field(default=None, ge=0)
    code_error: str | None = None
    measured: Measurement | None = None
    measure_error: str | None = None

    @model_validator(mode="after")
    def _one_each(self) -> "CandidateResult":
        if self.code_model_cycles is not None and self.code_error is not None:
            raise ValueError("both code_model_cycles and code_error")
        if self.measured is not None and self.measure_error is not None:
            raise ValueError("both measured and measure_error")
        return self


class TuningRecord(_Strict):
    schema_version: Literal[1] = TUNING_SCHEMA_VERSION
    pipeline: str  # e.g. mlp_batch32_riscv (the file's name)
    refresh: str  # the command that rewrites this file
    # sha256 of the canonical JSON of `key` and `results` (choice.records.figures_sha256), written
    # by the measuring tool; None only in a record being made (a reader refuses it).
    figures_sha256: str | None = None
    key: RecordKey
    # Dispatch -> candidate -> result, for every candidate the choice tried.
    results: dict[str, dict[str, CandidateResult]]

    @model_validator(mode="after")
    def _dispatches_keyed(self) -> "TuningRecord":
        unkeyed = sorted(set(self.results) - set(self.key.dispatches))
        if unkeyed:
            raise ValueError(f"results for dispatch {unkeyed[0]}, which the key does not name")
        return self


class StrategyCandidateKey(_Strict):
    """One candidate build of a strategy choice, by what it is compiled from."""

    strategy: str
    target_sha256: str  # the IREE target file: the strategy's flags
    # choice.records.applied_tiles_sha256 of the analysis it compiles (tuned): what a compile takes
    # from it, not its predictions (ZigZag's energy decides no byte of a build); None: IREE's defaults.
    applied_tiles_sha256: str | None = None


class StrategyKey(_Strict):
    """Everything that decides a strategy choice (choice.choose --by code-cycles); equal keys,
    equal choice."""

    pipeline: str  # <pipeline>_<target>, e.g. resnet_riscv
    module_sha256: str
    hardware: str  # the description whose core model prices the code (and confirms, riscv)
    hardware_sha256: str
    by: Literal["code-cycles"] = "code-cycles"
    margin: float = Field(ge=0, lt=1)
    confirmed: bool  # riscv: the code model's choice measured against the baseline under qemu
    candidates: list[StrategyCandidateKey]  # the baseline first
    # iree-base-compiler, llvm19, the measurement and strategy choice versions
    # (common.measurement_version); with `confirmed` also qemu, the plugin and the riscv64 runner.
    tools: dict[str, str]


class StrategyRecord(_Strict):
    """A strategy choice's outcome (tuning/strategies/<pipeline>_<target>.json): the manifest's
    `strategy_choice`, verbatim, under the key that decided it. A build whose key equals it
    compiles only the chosen build and packages it with this `choice`, the manifest
    byte-identical to a measured one; a stale key measures every candidate again."""

    # 2: candidates keyed by the tiles they apply (applied_tiles_sha256), not the analysis file's bytes.
    schema_version: Literal[2] = STRATEGY_SCHEMA_VERSION
    pipeline: str
    refresh: str  # the command that rewrites this file
    # sha256 of the canonical JSON of `key` and `choice` (choice.records.choice_sha256), written by
    # the choosing tool; None only in a record being made (a reader refuses it).
    choice_sha256: str | None = None
    key: StrategyKey
    choice: dict  # choice.choose's record: by, candidates' figures, chosen, reason[, measured, excluded]

    @model_validator(mode="after")
    def _chosen_is_a_candidate(self) -> "StrategyRecord":
        chosen = self.choice.get("chosen")
        if chosen not in [c.strategy for c in self.key.candidates]:
            raise ValueError(f"choice.chosen {chosen!r} is not one of the key's candidates")
        return self


class StrategyDecision(_Strict):
    """What choice.choose decides for one pipeline target (<name>.choice.json), for runtime.manifest
    to package: the chosen candidate's strategy (its build beside it, <name>.chosen.vmfb and
    .chosen.report.json) and the record of how it was chosen, the manifest's `strategy_choice`."""

    chosen: str
    strategy_choice: dict  # choice.choose's record: by, candidates' figures, chosen, reason[, ...]

    @model_validator(mode="after")
    def _record_names_it(self) -> "StrategyDecision":
        if self.strategy_choice.get("chosen") != self.chosen:
            raise ValueError(f"strategy_choice.chosen {self.strategy_choice.get('chosen')!r} is not "
                             f"chosen {self.chosen!r}")
        return self
