"""Benchmarks a model on the host: ZigZag-tuned vs IREE default vs the framework, end to end and per dispatch.

    bazel run //tools:bench -- <model | all> [--reps N] [--json FILE]

`all` runs every model_pipeline of //models (found from the BUILD files through
//models:zoo) and ends with one table: tuned/default per model, calibration and held-out
models apart, with each set's geomean.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bench import core, text
from bench.artifacts import ArtifactError, find, zoo


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a model_pipeline name of //models, or `all`")
    p.add_argument("--reps", type=int, default=30, help="end-to-end interleaved rounds (default 30)")
    p.add_argument("--warmup", type=int, default=3, help="end-to-end warm-up calls per variant (default 3)")
    p.add_argument("--dispatch-rounds", type=int, default=5, help="interleaved rounds per dispatch (default 5)")
    p.add_argument("--dispatch-device", default="local-task", choices=["local-task", "local-sync"],
                   help="HAL device of the dispatch benchmarks (default local-task, as the end-to-end run)")
    p.add_argument("--dispatch-batch", type=int, default=10, help="dispatches per benchmark iteration (default 10)")
    p.add_argument("--dispatch-min-time", type=float, default=0.05, help="seconds per benchmark sample (default 0.05)")
    p.add_argument("--jobs", type=int, default=2, help="parallel compiles of dispatch benchmarks")
    p.add_argument("--no-dispatches", action="store_true", help="end to end only")
    p.add_argument("--artifacts", type=Path, help="directory holding models/<name>_host.vmfb etc. (default: runfiles)")
    p.add_argument("--work", type=Path, help="keep the dispatch benchmark modules in this directory")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def out_path(p: Path) -> Path:
    """Relative paths are relative to where `bazel run` was started."""
    return p if p.is_absolute() else Path(os.environ.get("BUILD_WORKING_DIRECTORY", ".")) / p


def run_from_args(a, model: str | None = None) -> dict:
    art = find(model or a.model, a.artifacts)
    return core.run(art, reps=max(1, a.reps), warmup=max(0, a.warmup), dispatch_rounds=max(1, a.dispatch_rounds),
                    device=a.dispatch_device, batch=max(1, a.dispatch_batch), min_time=a.dispatch_min_time,
                    jobs=a.jobs, work=a.work, skip_dispatches=a.no_dispatches, quiet=a.quiet)


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench", description=__doc__.splitlines()[0])
    add_args(p)
    p.add_argument("--json", type=Path, help="also write the full results (input of //tools:model_report --results)")
    a = p.parse_args(argv)
    try:
        names = [i.name for i in zoo(a.artifacts)] if a.model == "all" else [a.model]
        results = []
        for name in names:
            res = run_from_args(a, name)
            print(text.text_report(res))
            results.append(res)
    except (ArtifactError, core.BenchError) as err:
        print(f"bench: error: {err}", file=sys.stderr)
        return 1
    if len(results) > 1:
        print(text.zoo_table(results))
    if a.json:
        write_json(out_path(a.json), results[0] if len(results) == 1 else {"models": results})
        print(f"results: {out_path(a.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
