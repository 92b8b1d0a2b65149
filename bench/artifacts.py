"""Where the bench finds a model's pipeline outputs: the runfiles of //tools:bench (the py_binary's
data deps, built by `bazel run`), or `bazel-bin/` of a workspace when run outside Bazel."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from common.pipeline_info import PipelineInfo, PipelineInfoError, zoo_infos
from common.targets import DEFAULT_STRATEGY, TUNED


class ArtifactError(RuntimeError):
    pass


def zoo(root: Path | None = None) -> list[PipelineInfo]:
    """Every model_pipeline whose info file is under `root`/models (or the bench's runfiles /
    bazel-bin): common.pipeline_info.zoo_infos."""
    try:
        return zoo_infos([root] if root else workspace_roots())
    except PipelineInfoError as err:
        raise ArtifactError(str(err)) from None


@dataclasses.dataclass
class Artifacts:
    name: str  # pipeline name, e.g. "resnet"
    model_name: str  # e.g. "resnet18"
    module: str  # factory module, e.g. "models.resnet18"
    framework: str  # "torch" | "tensorflow"
    mlirbc: Path
    golden: Path
    tuned_vmfb: Path
    default_vmfb: Path
    analysis: Path
    tuned_report: Path
    default_report: Path
    target: Path  # common/targets/host.yaml
    hardware: Path  # analysis/hardware/host.yaml
    riscv_perf_tuned: Path  # perf stage: the tuned build's perf.json (<name>_riscv_perf_index)
    riscv_perf_default: Path  # the IREE-default build's perf.json
    riscv_analysis: Path  # <name>_riscv_analysis.analysis.json (predicted cycles)
    split: str = "calibration"  # the model's set: "calibration" or "held_out"

    def paths(self) -> dict[str, str]:
        return {k: str(v) for k, v in dataclasses.asdict(self).items() if isinstance(v, Path)}


def perf_index(index: Path, base: Path) -> dict[str, Path]:
    """build -> its perf.json through a perf_index (common.perf_schema.load_perf_index)."""
    from common.perf_schema import PerfIndexError, load_perf_index

    try:
        return load_perf_index(index, base)
    except PerfIndexError as e:
        raise ArtifactError(str(e)) from None


def workspace_roots() -> list[Path]:
    """Candidate roots holding `models/...` outputs and `common/targets/...` sources."""
    here = Path(os.path.abspath(__file__)).parent.parent  # runfiles/<workspace> under Bazel (not resolved)
    roots = []
    if os.environ.get("RUNFILES_DIR"):
        roots += [p for p in Path(os.environ["RUNFILES_DIR"]).iterdir() if p.is_dir()]
    roots.append(here)
    return roots


def find(name: str, root: Path | None = None) -> Artifacts:
    infos = {i.name: i for i in zoo(root)}
    if name not in infos:
        raise ArtifactError(f"unknown model '{name}' (known: {', '.join(sorted(infos))})")
    model_name, module, framework = infos[name].model_name, infos[name].module, infos[name].framework
    candidates = [root] if root else workspace_roots()
    for r in candidates:
        outs = None
        for o in (r, r / "bazel-bin"):
            if (o / "models" / f"{name}_host.vmfb").is_file():
                outs = o
                break
        if outs is None:
            continue
        src = r
        m = outs / "models"
        index = m / f"{name}_riscv_perf_index.json"
        if not index.is_file():
            raise ArtifactError(f"{name}: {index} not found (is //models:{name}_riscv_perf_index a data "
                                f"dependency of this binary?)")
        perf = perf_index(index, outs)
        missing_builds = [b for b in (TUNED, DEFAULT_STRATEGY) if b not in perf]
        if missing_builds:
            raise ArtifactError(f"{index}: no measurement of the {missing_builds[0]} build")
        a = Artifacts(
            name=name, model_name=model_name, module=module, framework=framework,
            mlirbc=m / f"{model_name}.mlirbc", golden=m / f"{model_name}.golden.npz",
            tuned_vmfb=m / f"{name}_host.vmfb", default_vmfb=m / f"{name}_host_iree_default.vmfb",
            analysis=m / f"{name}_host_analysis.analysis.json",
            tuned_report=m / f"{name}_host_compiled.report.json",
            default_report=m / f"{name}_host_iree_default_compiled.report.json",
            target=src / "common" / "targets" / "host.yaml",
            hardware=src / "analysis" / "hardware" / "host.yaml",
            riscv_perf_tuned=perf[TUNED],
            riscv_perf_default=perf[DEFAULT_STRATEGY],
            riscv_analysis=m / f"{name}_riscv_analysis.analysis.json",
            split=infos[name].split,
        )
        missing = [k for k, v in a.paths().items() if not Path(v).is_file()]
        if missing:
            raise ArtifactError(f"{name}: {missing[0]} not found at {a.paths()[missing[0]]} "
                                f"(is //models:{name}_host* a data dependency of this binary?)")
        check_consistent(a)
        return a
    raise ArtifactError(f"{name}: no models/{name}_host.vmfb under {', '.join(str(c) for c in candidates)} "
                        f"(run through `bazel run //tools:bench`, or pass --artifacts <dir with models/>)")


def check_consistent(a: Artifacts) -> None:
    """The tuned vmfb must have been built from the analysis the bench reads (the manifest says so)."""
    from common.files import sha256_file

    man = json.loads(a.tuned_vmfb.with_name(a.tuned_vmfb.name[:-5] + ".manifest.json").read_text())
    want = man.get("inputs_sha256", {}).get("analysis")
    got = sha256_file(a.analysis)
    if want and want != got:
        raise ArtifactError(f"{a.tuned_vmfb.name}: built from another analysis than {a.analysis.name} "
                            f"(manifest sha256 {want[:12]} != {got[:12]}); rebuild //models:{a.name}_host")
