"""Our side of the whole-model comparison: one inference of what each riscv pipeline ships.

    tools/bazel build //models:<p>_riscv //models:<p>_riscv_shipped_perf_index ...   (per pipeline)
    tools/bazel run //peers:collect_ours [-- --bin DIR [--bin DIR ...]]

For each `--pipeline NAME=INFO` (peers/onnx_models.bzl; INFO is this workspace's pipeline info,
beside it the import's `<model_name>.mlirbc`), the riscv pipeline's manifest
(`<p>_riscv.manifest.json`: its strategy choice says which build ships) and the `riscv_perf`
report of that build, found through `<p>_riscv_shipped_perf_index` (models/defs.bzl: the
measurements of every build the pipeline may ship, by their PerfInfo), read from the first DIR
that has that report (default: this
workspace's bazel-bin/models; another checkout's bazel-bin of the same commit measures the same
executables). The report must be of the shipped executables (its `executables_sha256` equals the
manifest's) and of this workspace's import of the model (its `module_sha256` equals the
sha256 of the .mlirbc beside INFO), and the manifest and report must come from the same DIR.
Per core the report measured, one inference: `inference_model_cycles` and
`inference_memory_aware_cycles` (perf/measure.py: every dispatch of one call of the model,
each measured once under qemu and counted as many times as the call runs it; dispatches that
only run at initialisation, e.g. packing constant weights, are left out), instructions and MACs.

Writes peers/data/iree_models_measured.json (workspace-relative under `bazel run`) with both
files' sha256, or nothing: a missing or inconsistent report is one line naming it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from common.errors import OneLineErrors
from common.files import sha256_file, write_together
from common.perf_schema import PerfIndexError, load_perf_index
from runtime.manifest import shipped_build
from peers.run import PeerError

OUT = Path("peers/data/iree_models_measured.json")
FORMAT = 1


def shipped_perf(bin_models: Path, pipeline: str, build: str) -> Path | None:
    """The perf report of `pipeline`'s riscv `build`, through the pipeline's shipped_perf_index
    (models/defs.bzl: riscv_perf's outputs by their PerfInfo, not by file name); None if the
    index is not built there."""
    index = bin_models / f"{pipeline}_riscv_shipped_perf_index.json"
    if not index.is_file():
        return None
    try:
        by_build = load_perf_index(index, bin_models.parent)
    except PerfIndexError as err:
        raise PeerError(str(err)) from None
    if build not in by_build:
        raise PeerError(f"{index}: no measurement of the {build} build {pipeline}_riscv ships")
    return by_build[build]


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise PeerError(f"{path}: not built (tools/bazel build //models:{path.name.split('.')[0]})") from None
    except json.JSONDecodeError as err:
        raise PeerError(f"{path}: not JSON ({err})") from None


def _pipeline(spec: str) -> tuple[str, Path]:
    """NAME=INFO -> (NAME, this workspace's import of the model, beside the info)."""
    name, sep, info = spec.partition("=")
    if not sep or not name or not info:
        raise PeerError(f"--pipeline {spec}: expected NAME=INFO")
    data = _load(Path(info))
    if data.get("name") != name:
        raise PeerError(f"{info}: the info of {data.get('name')!r}, not of {name}")
    return name, Path(info).parent / f"{data['model_name']}.mlirbc"


def collect(bins: list[Path], pipelines: list[str]) -> dict:
    out = {}
    for spec in pipelines:
        p, module = _pipeline(spec)
        manifest_path = perf_path = None
        for bin_models in bins:
            candidate = bin_models / f"{p}_riscv.manifest.json"
            if not candidate.is_file():
                continue
            manifest_path = candidate
            manifest = _load(manifest_path)
            ships = shipped_build(manifest)
            perf_path = shipped_perf(bin_models, p, ships)
            if perf_path is not None and perf_path.is_file():
                break
        if manifest_path is None:
            raise PeerError(f"{bins[0]}: no {p}_riscv.manifest.json in any --bin (tools/bazel build //models:{p}_riscv)")
        if perf_path is None:
            index = bins[-1] / f"{p}_riscv_shipped_perf_index.json"
            raise PeerError(f"{index}: not built (tools/bazel build //models:{p}_riscv_shipped_perf_index)")
        report = _load(perf_path)
        if report.get("executables_sha256") != manifest.get("executables_sha256"):
            raise PeerError(f"{perf_path}: measured other executables than {manifest_path.name} ships")
        if not module.is_file():
            raise PeerError(f"{module}: this workspace's import of {p} not found")
        if report.get("module_sha256") != sha256_file(module):
            raise PeerError(f"{perf_path}: measured another import of {p} than this workspace's {module.name}")
        runs = {}
        for r in report["runs"]:
            if r.get("inference_model_cycles") is None or r.get("inference_memory_aware_cycles") is None:
                raise PeerError(f"{perf_path}: no model or memory-aware cycles on {r['hardware']}")
            macs = sum(d["macs"] * d["calls"] for d in r["dispatches"])
            vector = sum(n * d["calls"] for d in r["dispatches"] for k, n in d["classes"].items()
                         if k.startswith("vector_") or k == "vset")
            runs[r["hardware"]] = {
                "core": r["core"], "vlen": r["vlen"], "hardware_sha256": r["hardware_sha256"],
                "inference_instructions": r["inference_instructions"],
                "inference_model_cycles": r["inference_model_cycles"],
                "inference_memory_aware_cycles": r["inference_memory_aware_cycles"],
                "inference_macs": macs,
                # peers.run.price's vector share (vector and vset instructions over all), per call
                "inference_vector_share": round(vector / r["inference_instructions"], 6),
                "dispatches": sum(1 for d in r["dispatches"] if d["calls"]),
                "dispatch_calls": sum(d["calls"] for d in r["dispatches"]),
                "initializer_dispatches": sum(1 for d in r["dispatches"] if d.get("initializer_calls")),
                # Every dispatch one call runs, costliest first: where ours spends its cycles.
                "per_dispatch": sorted(({
                    "name": d["name"], "kind": d["kind"], "calls": d["calls"], "macs": d["macs"],
                    "model_cycles": d["model_cycles"], "memory_aware_cycles": d["memory"]["cycles"],
                    "vector_share": round(sum(n for k, n in d["classes"].items()
                                              if k.startswith("vector_") or k == "vset") / d["instructions"], 6)
                    if d["instructions"] else 0.0,
                } for d in r["dispatches"] if d["calls"]), key=lambda d: (-d["model_cycles"] * d["calls"], d["name"])),
            }
        out[p] = {"ships": ships, "strategy": report["strategy"], "variant": report["variant"],
                  "perf_report": perf_path.name, "perf_report_sha256": sha256_file(perf_path),
                  "manifest_sha256": sha256_file(manifest_path), "module_sha256": report["module_sha256"],
                  "runs": runs}
    return {"format": FORMAT,
            "what": "one inference of what each riscv pipeline ships (its manifest's strategy choice), from that "
                    "build's riscv_perf report (perf/measure.py) (peers/iree_models.py)",
            "produced_by": "tools/bazel run //peers:collect_ours -- --bin <bazel-bin/models with the reports> ...",
            "pipelines": out}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peers.iree_models", description=__doc__.split("\n")[0])
    p.add_argument("--pipeline", action="append", required=True, metavar="NAME=INFO")
    p.add_argument("--bin", type=Path, action="append", default=None,
                   help="bazel-bin/models holding the manifests and perf reports (repeatable; default: the workspace's)")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    ws = Path(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."))
    bins = args.bin or [ws / "bazel-bin" / "models"]
    out = args.out if args.out.is_absolute() else ws / args.out
    with OneLineErrors("collect_ours", bins[0], (PeerError,)) as cli:
        data = collect(bins, args.pipeline)
        write_together({out: json.dumps(data, indent=1) + "\n"})
    if cli.failed:
        return cli.exit_code
    print(f"collect_ours: {len(data['pipelines'])} pipelines -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
