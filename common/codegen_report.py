"""`<build>.report.json`: what `codegen.compile` did to one build, and whether IREE built it.

Written by the codegen stage (validated against this schema before it is written), read by
runtime.manifest (packages the build), choice.choose (leaves a refused build out) and bench.
A build IREE refused under `codegen.compile --record-failure` is a `failed` report: the reason,
the target and the input digests, no dispatches; its vmfb is empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from common.errors import first_line, validation_error_where
from common.files import InputError, parse_json, sha256_file


class ReportError(ValueError):
    """A file that is not a codegen report; the message names it and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Loop(_Strict):
    bound: int = Field(ge=0)
    kind: str  # parallel / reduction (the root op's iterator type)


class OtherOpConfig(_Strict):
    """A configured op of the dispatch besides its root (a fill, a fused consumer)."""
    op: str
    config: dict[str, list[int]] | Literal["dropped"]
    landed: bool | str | None = None  # str: why it is not checkable (IREE left it unconfigured)


class DispatchEntry(_Strict):
    name: str
    executable: str
    root_op: str
    pipeline: str | None
    loops: list[Loop]
    status: Literal["applied", "default"]
    provenance: str
    reason: str
    landed_config: str | None = None  # what IREE's codegen used (its dumped configuration)
    landed_pipeline: str | None = None
    # Applied dispatches only: the analysis' tiles, how they were adjusted for the pipeline,
    # the lowering_config levels written and whether codegen used exactly those.
    analysis_tiles: dict[str, list[int] | None] | None = None
    adjustments: list[str] | None = None
    applied: dict[str, list[int]] | None = None
    applied_attr: str | None = None
    other_ops: list[OtherOpConfig] | None = None
    landed: bool | None = None


class Summary(_Strict):
    dispatches: int = Field(ge=0)
    applied: int = Field(ge=0)
    default: int = Field(ge=0)
    adjusted: int = Field(ge=0)


class CodegenReport(_Strict):
    target: str
    triple: str
    strategy: str
    vmfb_sha256: str
    inputs_sha256: dict[str, str]
    failed: str | None = None  # why IREE could not compile it (--record-failure); nothing below then
    cpu: str | None = None
    cpu_features: list[str] = []
    vector_lanes_f32: int | None = None
    compile_flags: list[str] = []
    tuned: bool = False
    model: str | None = None
    hardware: str | None = None
    summary: Summary | None = None
    dispatches: list[DispatchEntry] = []
    options: dict[str, bool] = {}
    # Each HAL executable the vmfb embeds, by the file name IREE dumps it under, and its sha256:
    # dumped by the same iree-compile invocation that wrote the vmfb and checked to be inside it.
    # perf/ and the dispatch tests run exactly these bytes (they check their own against these).
    executables_sha256: dict[str, str] = {}
    # sha256 of the dispatch layout the same compile wrote (--out-layout), when it wrote one: perf
    # runs the executables as the layout says, so a layout of another build is refused.
    layout_sha256: str | None = None


def load_codegen_report(path: Path) -> CodegenReport:
    """The report at `path`; ReportError (one line naming the file) when it is not one."""
    try:
        text = Path(path).read_text()
        parse_json(text, path, "codegen report")  # a key given twice or NaN: refused, not the last taken
        return CodegenReport.model_validate_json(text)
    except InputError as err:
        raise ReportError(str(err)) from None
    except OSError as err:
        raise ReportError(f"{path}: cannot read the codegen report: {err.strerror or err}") from None
    except ValidationError as err:
        where, why = validation_error_where(err)
        raise ReportError(f"{path}: not a codegen report: {where}: {why}") from None
    except ValueError as err:
        raise ReportError(f"{path}: not a codegen report: {first_line(err)}") from None


def check_layout(report: CodegenReport, report_path: Path, layout: Path) -> None:
    """ReportError unless `layout` is the dispatch layout `report`'s compile wrote (when it
    recorded one)."""
    if report.layout_sha256 is not None and sha256_file(layout) != report.layout_sha256:
        raise ReportError(f"{layout}: not the dispatch layout {report_path} records (sha256 differs): "
                          "the layout of another build, or edited")
