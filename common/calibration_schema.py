"""analysis/calibration/<hardware>.json: the cost model's coefficients for one hardware description.

Written by `tools/bazel run //tools:calibrate -- <hardware>` (bench/calibrate.py) from
measurements of candidate tile configs on the calibration models only, checked into the
repo, and read by the analysis as an input (so analysis artifacts stay deterministic and
cached). The analysis never fits anything itself.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CALIBRATION_SCHEMA_VERSION = 2


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FitQuality(_Strict):
    rows: int = Field(ge=0)  # measured (dispatch, candidate) pairs the fit used
    dispatches: int = Field(ge=0)
    median_abs_relative_error: float = Field(ge=0)
    # Mean over dispatches with >= 5 measured candidates of Kendall's tau between predicted
    # and measured cost of the candidates (in-sample: these are the calibration models).
    mean_kendall_tau: float | None = None
    # The same with each calibration model's candidates priced by coefficients fitted on the
    # other calibration models (leave one model out), and the geomean over its dispatches of
    # measured chosen/IREE default under the chosen margin: the in-sample figures flatter.
    cross_validated_kendall_tau: float | None = None
    cross_validated_chosen_over_default: float | None = None


class Calibration(_Strict):
    schema_version: Literal[2] = CALIBRATION_SCHEMA_VERSION
    hardware: str  # the hardware description's name
    hardware_sha256: str  # of the YAML it was measured for (recorded, not enforced)
    # What the coefficients convert features into: host seconds x clock, or RISC-V model
    # cycles on `core_model` (llvm-mca).
    measure: Literal["host-time", "riscv-model-cycles"]
    core_model: str | None = None
    # cycles per unit of each cost-model feature (analysis/cost_model.FEATURES), >= 0, fitted
    # on every calibration measurement: they price the op kinds without coefficients of their own
    coefficients: dict[str, float]
    # Op kind (common/op_kinds.py) -> coefficients fitted on that kind's measurements alone,
    # for the kinds with at least `min_rows_per_kind` of them: the same feature buys different
    # cycles in a broadcast's code than in a matmul's.
    kind_coefficients: dict[str, dict[str, float]] = Field(default_factory=dict)
    min_rows_per_kind: int = Field(ge=1)
    # A candidate replaces IREE's default only when predicted at least this fraction cheaper.
    choice_margin: float = Field(ge=0, lt=1)
    fitted_on: list[str]  # model_pipeline names of the calibration set
    fit: FitQuality

    def coefficients_for(self, kind: str) -> dict[str, float]:
        """The coefficients that price a candidate of op kind `kind`."""
        return coefficients_for(kind, self.coefficients, self.kind_coefficients)


def coefficients_for(kind: str, pooled: dict[str, float],
                     by_kind: dict[str, dict[str, float]]) -> dict[str, float]:
    """The kind's own coefficients, else the pooled ones: one rule for the analysis' pricing
    and the calibration's evaluation of it."""
    return by_kind.get(kind, pooled)


class CodeModelCalibration(_Strict):
    """analysis/calibration/<hardware>.code_model.json: what the static code model
    (perf/code_model/) misses, as one tile-model feature's weight added to its cycles:
    price = code-model cycles + cycles_per_unit[core] x features[feature]. Written by
    `bench.host_ranking --fit FEATURE --out-calibration` from per-dispatch timings of the
    calibration split alone; read by choice.tune --by code-model --code-calibration."""
    hardware: str  # the hardware description's name
    feature: str  # one of analysis/cost_model.FEATURES
    cycles_per_unit: dict[str, float]  # core priced -> weight (>= 0)
    fitted_on: str  # what the weight was chosen on
    # core -> "calibration" / "held_out" -> mean Kendall tau of the calibrated prices against
    # those timings (the held-out split only evaluated); "<split>_unweighted": the code model's.
    tau: dict[str, dict[str, float | None]]
