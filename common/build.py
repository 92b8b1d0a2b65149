"""What one compile is asked for (`CompileOptions`) and what it wrote (`Build`): the types codegen's
one entry point (codegen.compile.compile_module) takes and returns, and that choice, perf, runtime
and the dispatch tests are handed instead of loose file names."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """What one annotated compile is asked for: the target (and strategy) it compiles for, the
    analysis whose tiles are written in, and the outputs besides the vmfb, configs and report
    (opt-in, as tfcompile's tf_library: what is not asked for is not made)."""

    target: Path  # common/targets/<name>.yaml, or a strategy's derived target file
    analysis: Path | None = None  # analysis.json; None: IREE's own tiles (the `codegen` build)
    layout: bool = False  # the dispatch layout read from this compile (perf and the dispatch tests run by it)
    code: bool = False  # the executable-targets IR and IREE's LLVM IR and assembly (what the code model prices)
    binaries: bool = False  # the executables the vmfb embeds, one file each
    # Keep IREE's default for a dispatch the analysis does not cover (recorded) instead of failing.
    allow_untuned_dispatches: bool = False
    # On failure, the work directory and IREE's full diagnostics are kept here (new or empty).
    keep_temps: Path | None = None


@dataclasses.dataclass(frozen=True)
class Build:
    """One compile's files: what perf, choice, runtime and the dispatch tests are handed. A path
    is None for an output its options did not ask for. A build IREE refused
    (codegen.compile.write_failure_record) has a report saying why and an empty vmfb: read the report first."""

    options: CompileOptions
    vmfb: Path
    # codegen's report (common.codegen_report): what vouches for the executables and the layout.
    # Every compile writes one; a build handed to a later stage without it is taken as given.
    report: Path | None = None
    configs: Path | None = None  # the configurations codegen used
    layout: Path | None = None
    code: Path | None = None  # a directory: codegen.compile.TARGETS_IR, <executable>.optimized.ll and .s
    binaries: Path | None = None  # a directory: the embedded executables

    @classmethod
    def in_directory(cls, directory: Path, options: CompileOptions) -> "Build":
        """The build's files under their usual names in `directory` (build.vmfb, ...)."""
        d = Path(directory)
        return cls(options, d / "build.vmfb", d / "build.report.json", d / "build.configs.mlir",
                   d / "build.layout.json" if options.layout else None,
                   d / "build.code" if options.code else None,
                   d / "build.bin" if options.binaries else None)

    def read_report(self) -> dict:
        if self.report is None:
            raise ValueError(f"{self.vmfb}: a build handed over without its compile report")
        return json.loads(self.report.read_text())
