"""Times what each pipeline ships on the host beside stock IREE, interleaved, and commits the data.

    bazel run //tools:host_timings [-- MODEL ...] [--rounds 30] [--warmup 3]

Per zoo pipeline, three HAL modules of the same imported model are called on the model's golden
inputs in one process, interleaved in carryover-balanced rounds (bench.core.interleave):
  ships        //models:<name>_host           (what model_pipeline packages: its host strategy choice)
  project_iree //models:<name>_host_iree_default   (IREE's own tiles with the project's target flags)
  stock_iree   //models:<name>_host_directconv (the device flags alone: what plain iree-compile gets)
Each round's ships / stock_iree ratio is one paired sample; the data keeps every sample, the
medians with their quartiles, and a distribution-free 95% interval of the median ratio
(common.stats.median_ci). Writes docs/data/host_timings.json (relative to the workspace under
`bazel run`), merged per pipeline so a subset can be re-timed; `bazel run //tools:report`
renders it. Wall time on this machine under whatever else it runs: interleaving spreads drift and
load over the variants alike, the intervals say how much is left.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from common import stats
from bench.artifacts import ArtifactError, PipelineInfo, workspace_roots, zoo
from common.files import sha256_file, write_together
from common.targets import STOCK_IREE_STRATEGY
from runtime.manifest import shipped_build

OUT = Path("docs/data/host_timings.json")
# variant -> the suffix of its HAL module, `models/<pipeline><suffix>.vmfb`
VARIANTS = {"ships": "_host", "project_iree": "_host_iree_default", "stock_iree": f"_host_{STOCK_IREE_STRATEGY}"}
FORMAT = 1


class TimingError(RuntimeError):
    pass


def modules(info: PipelineInfo, root: Path | None) -> tuple[dict[str, Path], Path, Path]:
    """The pipeline's three vmfbs, its golden inputs and the shipped build's manifest."""
    for r in ([root] if root else workspace_roots()):
        for base in (r, r / "bazel-bin"):
            m = base / "models"
            vmfbs = {v: m / f"{info.name}{suffix}.vmfb" for v, suffix in VARIANTS.items()}
            if all(p.is_file() for p in vmfbs.values()):
                golden = m / f"{info.model_name}.golden.npz"
                manifest = m / f"{info.name}_host.manifest.json"
                for p in (golden, manifest):
                    if not p.is_file():
                        raise TimingError(f"{info.name}: {p} not found")
                return vmfbs, golden, manifest
    raise TimingError(f"{info.name}: no models/{info.name}{{{','.join(VARIANTS.values())}}}.vmfb found "
                      f"(run through `bazel run //tools:host_timings`)")


def _max_abs_err(out: np.ndarray, want: np.ndarray | None) -> float | None:
    if want is None or out.shape != want.shape:
        return None
    return float(np.max(np.abs(out.astype(np.float64) - want)))


def time_pipeline(info: PipelineInfo, root: Path | None, rounds: int, warmup: int, quiet: bool) -> dict:
    from bench.core import interleave, iree_callable, timed

    vmfbs, golden, manifest = modules(info, root)
    calls = {v: iree_callable(p, golden) for v, p in vmfbs.items()}
    npz = np.load(golden)
    want = npz["output_0"] if "output_0" in npz else None
    err = {v: _max_abs_err(c()[0], want) for v, c in calls.items()}  # also the first (cold) call
    times = interleave({v: timed(c) for v, c in calls.items()}, rounds, warmup, f"{info.name} host", quiet)
    ratios = [s / t for s, t in zip(times["ships"], times["stock_iree"])]
    low, high = stats.median_ci(ratios)
    chosen = shipped_build(json.loads(manifest.read_text()))
    return {
        "split": info.split,
        "ships": chosen,
        "vmfb_sha256": {v: sha256_file(p) for v, p in vmfbs.items()},
        "max_abs_err_vs_golden": err,
        "seconds": {v: stats.summary(ts) for v, ts in times.items()},
        "ships_over_stock": {"median": stats.summary(ratios)["median"], "ci95": [low, high],
                             "samples": ratios},
        "rounds": rounds,
        "warmup": warmup,
    }


def environment() -> dict:
    from bench.core import cpu_model

    return {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
            "iree_runtime": _dist_version("iree-base-runtime")}


def _dist_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def commit(workspace: Path) -> str:
    """The workspace's commit, `+dirty` when tracked files differ from it (builds from one commit)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        head = git("rev-parse", "HEAD")
        return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        raise TimingError(f"{workspace}: not a git checkout (the data names the commit it timed)") from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bazel run //tools:host_timings --", description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", help="pipelines to time (default: every pipeline of //models:zoo)")
    p.add_argument("--rounds", type=int, default=30, help="interleaved rounds kept (>= 30; default 30)")
    p.add_argument("--warmup", type=int, default=3, help="rounds dropped first (default 3)")
    p.add_argument("--artifacts", type=Path, help="directory holding models/ (default: runfiles)")
    p.add_argument("--out", type=Path, default=OUT, help=f"default {OUT}, relative to the workspace")
    p.add_argument("--workspace", type=Path, default=Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", ".")),
                   help="the git checkout the modules were built from (default: where `bazel run` started)")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    workspace = a.workspace
    out = a.out if a.out.is_absolute() else workspace / a.out
    try:
        if a.rounds < 30:
            raise TimingError(f"--rounds {a.rounds}: host timings keep at least 30 interleaved rounds")
        infos = {i.name: i for i in zoo(a.artifacts)}
        unknown = [m for m in a.models if m not in infos]
        if unknown:
            raise TimingError(f"unknown model '{unknown[0]}' (known: {', '.join(sorted(infos))})")
        data = json.loads(out.read_text()) if out.is_file() else {"format": FORMAT, "pipelines": {}}
        if data.get("format") != FORMAT:
            raise TimingError(f"{out}: format {data.get('format')}, this tool writes {FORMAT}")
        head = commit(workspace)
        for name in a.models or sorted(infos):
            result = time_pipeline(infos[name], a.artifacts, a.rounds, a.warmup, a.quiet)
            data["pipelines"][name] = result | {"commit": head, "environment": environment()}
            r = result["ships_over_stock"]
            print(f"host_timings: {name}: ships {result['ships']}, ships / stock IREE {r['median']:.3f}x "
                  f"(95% {r['ci95'][0]:.3f}-{r['ci95'][1]:.3f}, {stats.interval_verdict(*r['ci95'])})")
        data["what"] = ("seconds per call on the golden inputs, HAL local-task, interleaved rounds "
                        "(bench/host_timings.py): what ships, IREE with the project's flags, stock IREE")
        data["collected_by"] = "bazel run //tools:host_timings"
        write_together({out: json.dumps(data, indent=1, sort_keys=True) + "\n"})
    except (TimingError, ArtifactError, OSError, ValueError, RuntimeError) as err:
        print(f"host_timings: {str(err).splitlines()[0] if str(err) else type(err).__name__}", file=sys.stderr)
        return 1
    print(f"host_timings: {len(a.models) or len(infos)} pipelines -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
