"""IREE compile targets: one YAML file per target in common/targets/.

Both analysis and codegen read the same file, so the dispatches analysis looks
at are those codegen compiles (global flags such as im2col change them).
"""

from __future__ import annotations

import re
from pathlib import Path

from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from common.yaml_model import load_yaml_model

TARGETS_DIR = Path(__file__).parent / "targets"


class TargetError(ValueError):
    """A target file is missing or malformed; the message names file and field."""


_ZVL = re.compile(r"\+zvl\d+b")


class StrategyFlags(NamedTuple):
    """What a strategy adds to a target's flags, which of its global_flags (by name) it drops,
    and which rewrites of the module (common/module_rewrites.py REWRITES) it compiles instead."""
    adds: tuple[str, ...] = ()
    leaves_out: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()


# How IREE lowers matmul-like ops and convolutions, one entry per strategy (what it adds to the
# target's flags, and which of the target's global flags it leaves out):
#   codegen     IREE emits code for each dispatch directly (its default; "tuned" is this plus
#               the analysis' lowering_configs);
#   datatiling  operands packed into tiled layouts (mmt4d), code still emitted by IREE;
#   ukernels    the same packing, the inner tiles computed by IREE's hand-written mmt4d
#               microkernels (riscv_64 `_v`, x86 AVX2/512);
#   directconv  IREE's code emission, but convolutions lowered as convolutions: the target's
#               im2col rewrite (conv -> im2col copy + matmul) is left out, as in IREE's own
#               default. im2col pays off for NCHW convs (ResNet-18 on x86 about 6x faster with
#               it) and costs NHWC depthwise-separable nets (Keras) about 2x;
#   channelslast  convolutions rewritten channels-last (regular ones as im2col GEMMs over NHWC,
#               depthwise ones as IREE's vectorising NHWC depthwise conv, which the im2col flag
#               would turn into copies: left out), operands data-tiled (the NHWC GEMMs' weights
#               are transposed, which IREE's default tiles handle badly). PyTorch's NCHW
#               depthwise convs otherwise run scalar (issue 58);
#   dwchannelslast  only the depthwise convolutions channels-last (IREE's vectorising NHWC
#               depthwise conv), every other 2-D conv IREE's im2col GEMM in its imported layout
#               (the im2col pass run on the module before the depthwise rewrite, the global flag
#               left out), IREE's code emission: a lowering per op kind, for models whose NCHW
#               GEMMs lose more as NHWC than their depthwise convs gain (se_net: 1.94 M memory-
#               aware cycles against channelslast's 2.14 M and tuned's 2.08 M).
STRATEGY_FLAGS: dict[str, StrategyFlags] = {
    "codegen": StrategyFlags(),
    "datatiling": StrategyFlags(adds=("--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=none")),
    "ukernels": StrategyFlags(adds=("--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=mmt4d")),
    "directconv": StrategyFlags(leaves_out=("--iree-global-opt-use-im2col-for-convs",)),
    "channelslast": StrategyFlags(adds=("--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=none"),
                                  leaves_out=("--iree-global-opt-use-im2col-for-convs",),
                                  rewrites=("channels_last",)),
    "dwchannelslast": StrategyFlags(leaves_out=("--iree-global-opt-use-im2col-for-convs",),
                                    rewrites=("depthwise_channels_last",)),
}
# The registry of strategies is STRATEGY_FLAGS: everything below, and Starlark through the
# generated common/registries.bzl (//common:registries_test fails when the two drift), derives
# from it; a new strategy is one entry there.
Strategy = Literal[tuple(STRATEGY_FLAGS)]  # type: ignore[valid-type]
DEFAULT_STRATEGY = "codegen"  # IREE's own lowering, what a target without `strategy` gets
# The strategies a pipeline builds besides IREE's code emission (models/defs.bzl STRATEGIES).
OTHER_STRATEGIES: tuple[str, ...] = tuple(s for s in STRATEGY_FLAGS if s != DEFAULT_STRATEGY)
# Strategies whose operands are packed (data tiling) in a layout IREE chooses per target.
PACKED_STRATEGIES: tuple[str, ...] = tuple(s for s, f in STRATEGY_FLAGS.items()
                                           if "--iree-opt-data-tiling" in f.adds)
# Strategies whose dispatches IREE emits code for with per-dispatch lowering configs, like the
# default's (no packing): a riscv pipeline that ships one compiles it with tiles measured over that
# strategy's own dispatches (models/defs.bzl: <name>_riscv_<strategy>_analysis and its record).
TILED_STRATEGIES: tuple[str, ...] = tuple(s for s in OTHER_STRATEGIES if s not in PACKED_STRATEGIES)
# IREE's code emission with the analysis' tiles: a build of every pipeline, not a target's strategy.
TUNED = "tuned"
# The build a user gets from plain iree-compile (the device flags alone): the baseline every
# comparison reports beside IREE with the project's flags (codegen/compile_test.py checks it).
STOCK_IREE_STRATEGY = "directconv"
# model_pipeline's choices among builds (`strategy = "auto"` / "measured"): their candidates,
# the baseline first (models/defs.bzl; models/pipeline_test.py checks the manifest against them).
CHOICE_CANDIDATES: dict[str, tuple[str, ...]] = {
    "auto": (TUNED, *OTHER_STRATEGIES),
    "measured": (TUNED, DEFAULT_STRATEGY, *OTHER_STRATEGIES),
}
# What model_pipeline's `strategy` accepts: one build, or a choice.
PIPELINE_STRATEGIES: tuple[str, ...] = (TUNED, *STRATEGY_FLAGS, *CHOICE_CANDIDATES)


def _flag_name(flag: str) -> str:
    return flag.split("=")[0]


class IreeTarget(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    triple: str
    cpu: str
    abi: str = ""
    cpu_features: tuple[str, ...] = ()
    vector_bits: int = Field(gt=0)
    runnable_on_host: bool
    global_flags: tuple[str, ...] = ()
    strategy: Strategy = "codegen"

    @field_validator("vector_bits")
    @classmethod
    def _vector_register_width(cls, bits: int) -> int:
        # Lanes (bits / 32), IREE's native vector size and qemu's vlen all need a power of two;
        # the narrowest vector unit any target here has is RVV's Zve64 (64 bits).
        if bits < 64 or bits > 65536 or bits & (bits - 1):
            raise ValueError(f"{bits} is not a power of two between 64 and 65536")
        return bits

    @property
    def is_riscv(self) -> bool:
        return self.triple.startswith("riscv")

    def for_vector_bits(self, vector_bits: int) -> "IreeTarget":
        """This riscv target for an accelerator with VLEN `vector_bits`: +zvl<N>b lets IREE
        and LLVM assume it (native vector size, LMUL choices). The base file must not fix a
        VLEN of its own, so the accelerator description is its only source."""
        if not self.is_riscv:
            raise TargetError(f"target '{self.name}': only riscv targets take their VLEN from an accelerator")
        fixed = [f for f in self.cpu_features if _ZVL.fullmatch(f)]
        if fixed:
            raise TargetError(f"target '{self.name}': cpu_features fix the VLEN ({fixed[0]}); "
                              f"the accelerator description's vector_bits must be its only source")
        if vector_bits < 128 or vector_bits & (vector_bits - 1):
            raise TargetError(f"target '{self.name}': vector_bits {vector_bits} is not a power of two >= 128 "
                              f"(RVV's V extension needs VLEN >= 128)")
        return self.model_copy(update={"name": f"{self.name}_zvl{vector_bits}", "vector_bits": vector_bits,
                                       "cpu_features": (*self.cpu_features, f"+zvl{vector_bits}b")})

    def with_strategy(self, strategy: str) -> "IreeTarget":
        """This target compiled with `strategy` (STRATEGY_FLAGS); its name says which."""
        if strategy not in STRATEGY_FLAGS:
            raise TargetError(f"strategy '{strategy}': expected one of {', '.join(STRATEGY_FLAGS)}")
        if self.strategy != "codegen":
            raise TargetError(f"target '{self.name}' already has strategy {self.strategy}")
        clash = [f for f in self.global_flags for s in STRATEGY_FLAGS.values() for g in s.adds
                 if _flag_name(f) == _flag_name(g)]
        if clash:
            raise TargetError(f"target '{self.name}': global_flags set {clash[0]}; strategies own it")
        if strategy == "codegen":
            return self
        return self.model_copy(update={"name": f"{self.name}_{strategy}", "strategy": strategy})

    def device_flags(self) -> list[str]:
        """Flags selecting the llvm-cpu backend for this target."""
        flags = [
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            f"--iree-llvmcpu-target-triple={self.triple}",
            f"--iree-llvmcpu-target-cpu={self.cpu}",
        ]
        if self.cpu_features:
            flags.append("--iree-llvmcpu-target-cpu-features=" + ",".join(self.cpu_features))
        if self.abi:
            flags.append(f"--iree-llvmcpu-target-abi={self.abi}")
        return flags

    @property
    def module_rewrites(self) -> tuple[str, ...]:
        """The rewrites of the module this target's strategy compiles (usually none)."""
        return STRATEGY_FLAGS[self.strategy].rewrites

    def compile_input(self, module: str | Path) -> Path:
        """What iree-compile gets for `module` under this target: the module itself, or its
        rewrite for the strategy (common/module_rewrites.py; raises RewriteError)."""
        from common.module_rewrites import prepared_module

        return prepared_module(Path(module), self.module_rewrites)

    def compile_flags(self) -> list[str]:
        """Every flag that decides what a dispatch looks like and how it is compiled."""
        strategy = STRATEGY_FLAGS[self.strategy]
        kept = [f for f in self.global_flags if _flag_name(f) not in strategy.leaves_out]
        return self.device_flags() + kept + list(strategy.adds)


def load_target(path: str | Path) -> IreeTarget:
    """Loads and validates a target file."""
    return load_yaml_model(path, IreeTarget, "target", TargetError)


def named_target(name: str) -> IreeTarget:
    """The target declared in common/targets/<name>.yaml."""
    return load_target(TARGETS_DIR / f"{name}.yaml")
