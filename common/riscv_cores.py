"""RISC-V core models that RVV code can be measured on without hardware.

"Model cycles" are llvm-mca cycles on one of LLVM's RISC-V scheduling models, weighted by
how often each basic block ran under qemu (perf/). Debian bookworm's llvm-19 has RVV
scheduling information for exactly these cores; qemu must emulate the core's VLEN, since
the dynamic instruction stream depends on it. A hardware description names its core in
`model_core`; analysis refuses one whose VLEN differs from `compute.vector_bits`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CoreModel:
    name: str  # llvm-mca -mcpu
    vlen: int  # bits: qemu's vlen= and the vector_bits of an accelerator measured on it
    summary: str


CORE_MODELS: dict[str, CoreModel] = {
    c.name: c
    for c in (
        CoreModel("sifive-p670", 128, "SiFive P670: out-of-order RV64GCV application core, VLEN 128"),
        CoreModel("sifive-x280", 512, "SiFive X280: in-order RV64GCV core with a 512-bit vector unit"),
    )
}

# What a model cycle leaves out; printed with every model-cycle figure.
MODEL_IGNORES = (
    "caches and memory latency (every load hits L1), branch mispredictions, "
    "and stalls between basic blocks (each block is modelled in a steady-state loop of itself)"
)


class CoreModelError(ValueError):
    """An unknown core model, or one that cannot model the requested VLEN."""


def core_model(name: str) -> CoreModel:
    try:
        return CORE_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(CORE_MODELS))
        raise CoreModelError(f"unknown core model '{name}' (llvm-mca-19 has RVV models for: {known})") from None
