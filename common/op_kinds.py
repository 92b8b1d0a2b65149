"""The op-kind registry: what each kind of root op gets from the analysis, in one place.

A kind (analysis.dispatches.classify) maps to the candidate generators tried for it
(analysis/candidates.GENERATORS; IREE's default is always a candidate), whether ZigZag maps
it (one ZigZag run per distinct op of such a kind), and why. Every candidate of every kind is
priced by the same cost model (analysis/cost_model.py), with the kind's own coefficients when
the calibration measured enough of it (common/calibration_schema.py); a new kind is one entry
here.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class OpKind:
    generators: tuple[str, ...]
    zigzag: bool  # the analysis runs ZigZag on it (analysis.zigzag_cost.to_layer)
    why: str
    # The root op multiplies and accumulates (perf.measure counts its MACs; bench's
    # "contractions" are these kinds).
    macs: bool = False
    # The ZigZag operator type the kind can be expressed as (analysis.zigzag_cost.to_layer),
    # None when it cannot; ZigZag maps it only where `zigzag` is set.
    zigzag_layer: str | None = None


_CONTRACTION = OpKind(
    ("zigzag", "analytical", "register-search"), True,
    "contraction with reuse across a reduction: ZigZag's mapping, cache-filling tiles and "
    "register-tile variants compete with IREE's default", macs=True, zigzag_layer="Gemm")
_WINDOWED = OpKind(
    ("register-search",), False,
    "per-channel windowed op without cross-channel reuse for ZigZag to map: register-tile "
    "variants of IREE's default compete with it")
_STREAMING = OpKind(
    ("analytical", "register-search"), False,
    "memory-bound op without a reduction: cache-filling tiles and vector-width variants "
    "compete with IREE's default")

REGISTRY: dict[str, OpKind] = {
    "matmul": _CONTRACTION,
    "batch_matmul": _CONTRACTION,
    "conv": dataclasses.replace(_CONTRACTION, zigzag_layer="Conv"),
    "depthwise_conv": dataclasses.replace(_WINDOWED, macs=True, zigzag_layer="Conv"),
    "pooling": dataclasses.replace(_WINDOWED, zigzag_layer="Pooling"),
    "reduction": OpKind(("register-search",), False,
                        "a reduction is not a ZigZag layer: vector-width variants of IREE's "
                        "default compete with it"),
    "elementwise": dataclasses.replace(_STREAMING, zigzag_layer="Add"),
    "im2col": _STREAMING,
    "transpose": _STREAMING,
    "broadcast": _STREAMING,
    "copy": _STREAMING,
}

# Kinds not in the registry (softmax, unconfigured, new ones) keep IREE's default, and say so.
DEFAULT_ONLY = OpKind((), False, "no candidate generator is registered for this op kind "
                      "(common/op_kinds.py): IREE's default is kept")


# Kinds whose root op multiplies and accumulates, in registry order.
MAC_KINDS: tuple[str, ...] = tuple(k for k, v in REGISTRY.items() if v.macs)
# Kind -> the ZigZag operator type it is expressed as (analysis.zigzag_cost.to_layer).
ZIGZAG_LAYERS: dict[str, str] = {k: v.zigzag_layer for k, v in REGISTRY.items() if v.zigzag_layer}


def op_kind(kind: str) -> OpKind:
    return REGISTRY.get(kind, DEFAULT_ONLY)
