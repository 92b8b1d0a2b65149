"""The pipeline targets: what every model_pipeline (models/defs.bzl) is built for, as data.

Each entry gives `<name>_<target>_analysis`, `_compiled` and `<name>_<target>` for every model.
Starlark reads this registry through the generated common/registries.bzl
(//common:registries_test fails when the two drift); a new target is one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PipelineTarget:
    name: str  # suffix of the pipeline's targets: <pipeline>_<name>
    iree_target: str  # label: the IREE target (iree_target, or accelerator_target for riscv)
    hardware: str  # label: the hardware description the analysis tunes for
    # label of the cost-model calibration for that hardware (//tools:calibrate writes it);
    # None: uncalibrated, and the analysis keeps IREE's default everywhere
    calibration: str | None
    # Its code runs under qemu in the build, so choices for it are measured (tiles by
    # measured_choice, strategy "measured", "auto" confirmed by a measurement) and riscv_perf
    # reports it. Host time is wall time, not a reproducible build input: host choices are
    # priced by the code model.
    measured: bool
    # labels: the accelerator descriptions its builds are measured on (riscv_perf), the
    # module's own first; empty when not measured
    perf_hardware: tuple[str, ...] = ()


PIPELINE_TARGETS: dict[str, PipelineTarget] = {
    t.name: t
    for t in (
        # Derived from its accelerator description (VLEN), see analysis:accelerator_target.
        # Measured on its own description (VLEN 128, SiFive P670 model), then on a VLEN-512 core
        # (SiFive X280 model) running the same binary (code for VLEN >= 128 runs there).
        PipelineTarget("riscv", "//analysis:riscv_rvv", "//analysis:hardware/riscv_rvv.yaml", None, True,
                       ("//analysis:hardware/riscv_rvv.yaml", "//analysis:hardware/riscv_rvv512.yaml")),
        # The same models for a VLEN-512 core (SiFive X280 model), chosen and measured there: its
        # own tile and strategy records, what ships for it never the VLEN-128 build (issue 60).
        PipelineTarget("riscv512", "//analysis:riscv_rvv512", "//analysis:hardware/riscv_rvv512.yaml", None, True,
                       ("//analysis:hardware/riscv_rvv512.yaml",)),
        PipelineTarget("host", "//common:host", "//analysis:hardware/host.yaml", None, False),
    )
}
