"""A model_pipeline's info file, models/<name>_pipeline_info.json (written by models/defs.bzl), and
the zoo read from them: which models there are comes from the BUILD files, not from a list kept
in Python. Read by bench (its artifacts) and results (the reports) alike."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path


class PipelineInfoError(RuntimeError):
    """No info files where they were looked for; the message says where."""


@dataclasses.dataclass(frozen=True)
class PipelineInfo:
    """models/<name>_pipeline_info.json, written by model_pipeline (models/defs.bzl)."""
    name: str  # pipeline name, e.g. "resnet"
    model_name: str  # e.g. "resnet18"
    module: str  # factory module
    framework: str
    split: str  # "calibration" | "held_out"
    float_reference: str | None = None  # a quantized model's float twin (its pipeline name)
    factory: str = "make_model"  # the function in `module` returning (model, example inputs)


def zoo_infos(roots: list[Path]) -> list[PipelineInfo]:
    """Every pipeline's info under the first of `roots` (or its bazel-bin/) that has
    models/*_pipeline_info.json, in name order."""
    for r in roots:
        for base in (r, r / "bazel-bin"):
            files = sorted((base / "models").glob("*_pipeline_info.json"))
            if files:
                return [PipelineInfo(**json.loads(f.read_text())) for f in files]
    raise PipelineInfoError(f"no models/*_pipeline_info.json under {', '.join(map(str, roots))} "
                            "(is //models:zoo built, or a data dependency of this binary?)")
