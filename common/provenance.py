"""Evidence a stage consumes is checked against what its producer recorded.

A codegen report records the sha256 of the module, target file, analysis and hardware it was
built from; a perf report records the module's and the analysis' sha256, the target, the
strategy and whether the build was tuned. A stage given a report and the files it is about
(runtime.manifest, perf.measure --compiled-report, choice.choose's candidates) calls these first:
evidence from another build is refused with one line naming the file that does not belong,
never used.
"""

from __future__ import annotations

from pathlib import Path

from common.codegen_report import CodegenReport
from common.errors import NamedError
from common.files import sha256_file
from common.perf_schema import PerfReport


class ProvenanceError(NamedError, ValueError):
    """A file is not the one a report says it was made from; the message names it."""


def check_build_inputs(report: CodegenReport, report_path: Path, module: Path | None = None,
                       target: Path | None = None, analysis: Path | None | str = "unchecked",
                       hardware: Path | None = None) -> None:
    """Each given file is the one `report` (codegen's) records: `module`, `target` and
    `hardware` by sha256; `analysis` too, and None means "an untuned build" (a report that
    records an analysis is then refused); the default checks nothing of it."""
    recorded = report.inputs_sha256
    name = Path(report_path).name
    for what, path, key in (("module", module, "module"), ("target file", target, "target")):
        if path is not None and recorded.get(key) != sha256_file(path):
            raise ProvenanceError(f"{path}: not the {what} {name} was compiled {'from' if key == 'module' else 'for'} "
                                  f"(sha256 differs)")
    if analysis is None and recorded.get("analysis") is not None:
        raise ProvenanceError(f"{report_path}: a build tuned by an analysis, given as an untuned one")
    if isinstance(analysis, Path) and recorded.get("analysis") != sha256_file(analysis):
        raise ProvenanceError(f"{analysis}: not the analysis {name} was compiled with (sha256 differs)")
    if hardware is not None and recorded.get("hardware") != sha256_file(hardware):
        raise ProvenanceError(f"{hardware}: not the hardware {name}'s analysis was made for (sha256 differs)")


def check_perf_of_build(perf: PerfReport, perf_path: Path, report: CodegenReport, report_path: Path,
                        module_sha256: str | None = None) -> None:
    """`perf` (perf.measure's report) measured the build `report` (codegen's) describes: the same
    module, target, strategy, analysis and variant, and both say whether IREE refused it."""
    recorded = report.inputs_sha256
    analysis = recorded.get("analysis")
    checks = (
        ("module", perf.module_sha256, recorded.get("module")),
        ("target", perf.target, report.target),
        ("strategy", perf.strategy, report.strategy),
        ("analysis", perf.analysis_sha256, analysis),
        ("variant", perf.variant, "tuned" if analysis else "iree-default"),
        ("refused by IREE", perf.failed is not None, report.failed is not None),
        # The very executables: a measured build's bytes are the ones its vmfb ships.
        ("executables", sorted(perf.executables_sha256.values()) if perf.failed is None else [],
         sorted(report.executables_sha256.values()) if report.failed is None else []),
    )
    for what, measured, built in checks:
        if measured != built:
            shown = (lambda v: v[:12] if isinstance(v, str) and len(v) == 64
                     else [h[:12] for h in v] if isinstance(v, list) else v)
            raise ProvenanceError(f"{perf_path}: measured another build than {Path(report_path).name} "
                                  f"describes ({what}: {shown(measured)} vs {shown(built)})")
    if module_sha256 is not None and perf.module_sha256 != module_sha256:
        raise ProvenanceError(f"{perf_path}: measured another module (sha256 differs)")
