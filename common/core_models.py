"""Core models that compiled code can be priced on without the hardware.

"Model cycles" are llvm-mca cycles on one of LLVM's scheduling models, weighted by how often
each basic block runs: counted under qemu for RISC-V (perf/measure.py), derived from the
loops' trip counts by the code model (perf/code_model/) for RISC-V and x86. Debian
bookworm's llvm-19 has RVV scheduling information for exactly the RISC-V cores below; qemu
must emulate the core's VLEN, since the dynamic instruction stream depends on it. A hardware
description names its core in `model_core`; analysis refuses one whose vector width differs
from `compute.vector_bits`.
"""

from __future__ import annotations

from dataclasses import dataclass


RISCV = "riscv64"  # the architecture RVV code is for (the part of a triple before the first '-')


@dataclass(frozen=True)
class CoreModel:
    name: str  # llvm-mca -mcpu
    # bits: the vector_bits of an accelerator priced on it (RISC-V: qemu's vlen=; x86: the
    # width of the vector code the target emits, which the core may exceed)
    vlen: int
    summary: str
    isa: str = RISCV  # the target triple's architecture


CORE_MODELS: dict[str, CoreModel] = {
    c.name: c
    for c in (
        CoreModel("sifive-p670", 128, "SiFive P670: out-of-order RV64GCV application core, VLEN 128"),
        CoreModel("sifive-x280", 512, "SiFive X280: in-order RV64GCV core with a 512-bit vector unit"),
        # The build machine (Intel Xeon, Emerald Rapids: Raptor Cove cores, priced as LLVM's
        # closest model) running the host target's x86-64-v3 (AVX2, 256-bit) code.
        CoreModel("sapphirerapids", 256, "Intel Sapphire Rapids (Golden Cove) running AVX2 code",
                  isa="x86_64"),
        # The AMD EPYC (family 25 model 1, Zen 3; LLVM's Host CPU `znver3`) the host build has
        # been timed on since 2026-11-25, running the same x86-64-v3 code.
        CoreModel("znver3", 256, "AMD Zen 3 running AVX2 code", isa="x86_64"),
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
        raise CoreModelError(f"unknown core model '{name}' (known: {known})") from None
