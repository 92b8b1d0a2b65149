"""IREE compile targets: one YAML file per target in common/targets/.

Both analysis and codegen read the same file, so the dispatches analysis looks
at are those codegen compiles (global flags such as im2col change them).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from common.yaml_model import load_yaml_model

TARGETS_DIR = Path(__file__).parent / "targets"


class TargetError(ValueError):
    """A target file is missing or malformed; the message names file and field."""


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

    @property
    def is_riscv(self) -> bool:
        return self.triple.startswith("riscv")

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

    def compile_flags(self) -> list[str]:
        """Every flag that decides what a dispatch looks like and how it is compiled."""
        return self.device_flags() + list(self.global_flags)


def load_target(path: str | Path) -> IreeTarget:
    """Loads and validates a target file."""
    return load_yaml_model(path, IreeTarget, "target", TargetError)


def named_target(name: str) -> IreeTarget:
    """The target declared in common/targets/<name>.yaml."""
    return load_target(TARGETS_DIR / f"{name}.yaml")
