"""analysis.json: what the analysis stage decides per dispatch, read by codegen and runtime.

Tiles are given per *memory level role* of the hardware description, one entry
per loop of the dispatch's root op, in the root op's own loop order (the order
of `linalg-generalize-named-ops`' iteration domain, identical to the named
op's). A tile is the extent of that loop held at that level; 0 is never used
here (codegen turns "not tiled at this level" into IREE's 0 itself).

Roles, innermost first:
- `register`: the vector register file (the innermost parallel tile is a
  multiple of the target's f32 lanes, or the whole loop when smaller);
- `l1`: the L1 data cache;
- `l2`: the L2 cache (the outermost tile codegen distributes across workgroups).
Each level's tile fits in (is at most) the next level's tile and the loop bound.

Every dispatch the analysis can configure lists its `candidates`: complete tile sets
(IREE's own default, read from its lowering_config, among them), each with the cost
model's prediction for exactly those tiles and its features; `chosen` names the one
compiled, and `cost` is that candidate's prediction. The dispatch's `tiles` are the chosen
candidate's, or None when it is `iree-default` (IREE configures it). A dispatch without
candidates has no `chosen` and its `tiles` are taken as given (a hand-written analysis, or
IREE's default when None); `chosen` None with candidates is not checked either.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 6

# Which generator produced the compiled tiles ("search": a systematic variant of another).
Provenance = Literal["zigzag", "analytical", "iree-default", "search"]
LevelRole = Literal["register", "l1", "l2"]
LEVEL_ROLES: tuple[LevelRole, ...] = ("register", "l1", "l2")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Loop(_Strict):
    name: str  # d0, d1, ... as in the root op's indexing maps
    bound: int = Field(ge=1)
    kind: Literal["parallel", "reduction"]


class Operand(_Strict):
    role: Literal["input", "output"]
    indexing_map: str  # e.g. "(d0, d1, d2) -> (d0, d2)"
    element_type: str  # e.g. "f32"
    shape: list[int]


class Cost(_Strict):
    latency_cycles: float
    energy_pj: float | None = None
    mac_utilization: float | None = None
    model: str  # "zigzag" or the analytical model's name, e.g. "roofline"


class Candidate(_Strict):
    # Stable across dispatches, e.g. "iree-default", "zigzag", "iree-default+reg7x4v".
    name: str
    generator: Provenance
    # The tiles as they would be compiled (for iree-default: IREE's own, read from its config).
    tiles: dict[LevelRole, list[int]]
    # Cost model inputs (analysis/cost_model.FEATURES) and its prediction for these tiles.
    features: dict[str, float]
    # A prediction of cycles: finite and not negative (a negative one ranked first; issue 62 probe).
    predicted_cycles: float = Field(ge=0, allow_inf_nan=False)
    reason: str
    # Set by a measured choice (choice/tune.py) for the shortlisted candidates: model cycles of
    # the dispatch compiled with these tiles on the accelerator's core model, or why not.
    measured_model_cycles: int | None = Field(default=None, ge=0)
    # ... and the same run's memory-aware cycles and energy (perf/memory_model.py: what the
    # measured choice decides by), and per memory level of the description (cache levels and
    # DRAM, by name) the bytes it served to the level above and took from it in the simulation:
    # what ZigZag's `traffic_bytes` predicts for its own mapping.
    measured_memory_aware_cycles: int | None = Field(default=None, ge=0)
    measured_energy_pj: float | None = Field(default=None, ge=0)
    measured_traffic_bytes: dict[str, int] | None = None
    # With placements > 1 (MeasuredChoice), for IREE's default and the candidate that beat it:
    # memory-aware cycles under buffer placements 1..K-1 (perf.measure.placement_offsets; the
    # figure above is placement 0's). A switch must win under every placement.
    measured_placement_memory_aware_cycles: list[int] | None = None
    measure_error: str | None = None
    # Set by a measured choice for the candidates it costed statically before shortlisting
    # (perf/code_model/: the generated code's model cycles, nothing run), or why not.
    code_model_cycles: float | None = Field(default=None, ge=0)
    code_error: str | None = None


# The candidate that is IREE's own configuration: choosing it compiles no tiles of ours.
IREE_DEFAULT = "iree-default"


def _tile_text(tiles: dict[str, list[int]] | None) -> str:
    if tiles is None:
        return "none (IREE's default configuration)"
    return " ".join(f"{role} {tiles[role]}" for role in LEVEL_ROLES if role in tiles)


def check_tiles(tiles: dict[str, list[int]], bounds: list[int], what: str) -> None:
    """Every level present, one tile per loop, 1 <= tile <= bound, and each level's tile
    inside the next level's (register <= l1 <= l2)."""
    missing = [r for r in LEVEL_ROLES if r not in tiles]
    if missing:
        raise ValueError(f"{what}: no {missing[0]} tiles")
    for role in LEVEL_ROLES:
        t = tiles[role]
        if len(t) != len(bounds):
            raise ValueError(f"{what}: {role} has {len(t)} tiles for {len(bounds)} loops")
        for i, (x, b) in enumerate(zip(t, bounds)):
            if not 1 <= x <= b:
                raise ValueError(f"{what}: {role} tile {x} of loop d{i} is outside 1..{b}")
    for inner, outer in zip(LEVEL_ROLES, LEVEL_ROLES[1:]):
        for i, (x, y) in enumerate(zip(tiles[inner], tiles[outer])):
            if x > y:
                raise ValueError(f"{what}: {inner} tile {x} of loop d{i} exceeds its {outer} "
                                 f"tile {y}")


class Dispatch(_Strict):
    # hal.executable.export symbol, e.g. "main$async_dispatch_3_matmul_64x3136x576_f32".
    name: str
    # Symbol of the enclosing hal.executable, e.g. "main$async_dispatch_3".
    executable: str
    # The root op as codegen sees it before generalisation, e.g. "linalg.matmul".
    root_op: str
    # Operation kind used for costing: "matmul", "conv", "depthwise_conv",
    # "pooling", "elementwise", "reduction", "transpose", "copy", ...
    kind: str
    loops: list[Loop]
    operands: list[Operand]
    # Hash of what determines the analysis result (kind, loops, maps, types):
    # dispatches with equal signatures share one ZigZag run.
    signature: str
    provenance: Provenance
    reason: str  # why this provenance (always set, also for zigzag)
    # role -> tile per loop (same length as `loops`); None for iree-default.
    tiles: dict[LevelRole, list[int]] | None = None
    # No loop order: codegen cannot reorder IREE's tiled loops through lowering_config, so the
    # analysis does not claim one (ZigZag's own temporal order stays in `zigzag` for reading).
    cost: Cost | None = None
    # Raw ZigZag mapping for inspection: spatial/temporal mapping, per-level tiles.
    zigzag: dict | None = None
    # Every candidate evaluated, cheapest predicted first; `chosen` is the one compiled.
    candidates: list[Candidate] = []
    chosen: str | None = None

    @model_validator(mode="after")
    def _consistent(self):
        bounds = [lp.bound for lp in self.loops]
        if self.tiles is not None:
            check_tiles(self.tiles, bounds, self.name)
        for c in self.candidates:
            check_tiles(c.tiles, bounds, f"{self.name}: candidate {c.name}")
        by_name = {c.name: c for c in self.candidates}
        if self.chosen is not None and self.candidates and self.chosen not in by_name:
            raise ValueError(f"{self.name}: chosen '{self.chosen}' is not one of its candidates")
        if self.chosen is not None and self.candidates:
            # The tiles compiled are the chosen candidate's, which the choice predicted or measured:
            # tiles edited by hand were compiled as given (issue 62). IREE's default is compiled
            # as IREE configures it, so choosing it means no tiles (`tiles` None), as every
            # producer writes it (analysis.analyze, choice/tune.py).
            want = None if self.chosen == IREE_DEFAULT else by_name[self.chosen].tiles
            if self.tiles != want:
                raise ValueError(f"{self.name}: tiles {_tile_text(self.tiles)} are not its chosen candidate "
                                 f"{self.chosen}'s {_tile_text(want)}")
        return self


class Summary(_Strict):
    dispatches: int
    distinct_ops: int
    zigzag: int
    analytical: int
    iree_default: int
    search: int = 0
    candidates: int = 0  # evaluated over all dispatches

    @classmethod
    def of(cls, dispatches: list["Dispatch"], distinct_ops: int) -> "Summary":
        """The counts of `dispatches` by the provenance of their compiled tiles."""
        return cls(dispatches=len(dispatches), distinct_ops=distinct_ops,
                   zigzag=sum(d.provenance == "zigzag" for d in dispatches),
                   analytical=sum(d.provenance == "analytical" for d in dispatches),
                   iree_default=sum(d.provenance == "iree-default" for d in dispatches),
                   search=sum(d.provenance == "search" for d in dispatches),
                   candidates=sum(len(d.candidates) for d in dispatches))


class AnalysisOptions(_Strict):
    """Every knob of `analysis.analyze` that changes its output (CLI flags, recorded here)."""
    # LOMA's loop-prime-factor limit and which factors it merges to reach it
    # (analysis/zigzag_cost.py): "largest" is ours, "smallest" ZigZag's own.
    zigzag_lpf_limit: int = Field(default=5, ge=2, le=8)
    zigzag_lpf_merge: Literal["largest", "smallest"] = "largest"
    # A ZigZag failure is an error naming the dispatch unless this is set; then the dispatch
    # is priced without ZigZag's candidate and its reason says why.
    allow_zigzag_failure: bool = False
    # False: ZigZag is not run and proposes nothing (analysis.analyze --no-zigzag). For a target
    # whose analysis keeps IREE's defaults anyway (uncalibrated, no measured or code choice),
    # where ZigZag's candidates would only be evaluation, not a decision.
    zigzag: bool = True


class CodePriceTerm(_Strict):
    """The calibrated term a code-model choice added to every candidate's code-model cycles."""
    file: str  # the calibration file's name
    sha256: str
    feature: str
    cycles_per_unit: float = Field(ge=0)


class MeasuredChoice(_Strict):
    """How choice/tune.py chose among the candidates: by model cycles, not by prediction."""
    hardware: str  # the accelerator description measured on
    core: str  # its llvm-mca core model
    # "memory-aware-cycles": each shortlisted candidate run under qemu with the description's
    # caches simulated, costed by llvm-mca plus its memory traffic (riscv, perf/memory_model.py);
    # "model-cycles": the same without the memory hierarchy (schema 5 and before);
    # "code-model": the code model's static cycles alone, nothing run (host: choice/tune.py
    # choose_tiles_by_code), a candidate taken only when `margin` cheaper than IREE's default.
    by: Literal["memory-aware-cycles", "model-cycles", "code-model"] = "memory-aware-cycles"
    margin: float = Field(default=0.0, ge=0, lt=1)
    candidates_per_dispatch: int = Field(ge=2)  # IREE's default and the best ranked others
    # Candidates per dispatch costed by the code model to rank the shortlist (0: the analysis'
    # prediction ranks it).
    code_ranked: int = Field(default=0, ge=0)
    # Buffer placements a switch from IREE's default is judged over: it is taken only when the
    # candidate's worst placement beats the default's best (a win beyond the placement spread).
    placements: int = Field(default=1, ge=1)
    dispatches: int = Field(ge=0)  # dispatches with a choice (a shortlist of 2 or more)
    measured: int = Field(ge=0)  # candidates measured, over those dispatches
    failed: int = Field(ge=0)  # shortlisted candidates that did not compile or run
    # by "code-model" with a calibration (common/calibration_schema.CodeModelCalibration): each
    # candidate priced at its code-model cycles + cycles_per_unit x features[feature].
    code_calibration: CodePriceTerm | None = None


class Analysis(_Strict):
    # Only the version this code writes is read: an older or newer file is refused, not guessed.
    schema_version: Literal[6] = SCHEMA_VERSION
    options: AnalysisOptions = AnalysisOptions()
    model: str
    target: str
    hardware: str  # the hardware description's name
    hardware_sha256: str
    vector_lanes_f32: int  # f32 elements per vector register at the target's VLEN
    # The cost model's calibration (analysis/calibration/*.json): its name and sha256, or
    # None when the analysis ran uncalibrated (unit coefficients, said in every reason).
    calibration: str | None = None
    calibration_sha256: str | None = None
    dispatches: list[Dispatch]
    summary: Summary
    # None: chosen by the cost model's prediction (analysis.analyze); set: by measurement.
    measured_choice: MeasuredChoice | None = None

    @model_validator(mode="after")
    def _one_entry_per_dispatch(self):
        # Consumers index dispatches by name: a dispatch listed twice had its last entry compiled and
        # its first (the measured choice) dropped without a word (issue 62, own probe).
        seen: set[str] = set()
        for d in self.dispatches:
            if d.name in seen:
                raise ValueError(f"dispatch '{d.name}' is listed twice: which entry is meant?")
            seen.add(d.name)
        return self
