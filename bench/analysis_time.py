"""Times the analysis stage cold against its budget (issue 14: ResNet-18's riscv analysis at or
under 61 s on these 2-core machines, however many candidates it evaluates).

    tools/bazel run //bench:analysis_time              # ResNet-18, riscv_rvv, 3 runs
    tools/bazel run //bench:analysis_time -- --runs 5

Each run is a fresh `python -m analysis.analyze` process with the pipeline's own arguments (the
module imported by //models:resnet18_import, the riscv_rvv target and description), so nothing
is reused between runs: Python's imports, ZigZag's searches and the cost model all start cold,
as in an uncached Bazel action. Prints each run's wall time, the median and the worst against
the budget as ratios, and whether every run wrote the same analysis byte for byte (the output
is a cached build artifact, so it must not depend on the run). Exits non-zero only when the
analysis fails or its outputs differ; the ratio is a figure to read, not a test: time on a
shared machine is not a pass/fail criterion (another action on the other core, as in a CI
run, makes the same analysis up to twice as slow).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

# Issue 14: "ResNet-18's analysis stays at or under today's 61 s cold on these 2-core machines".
BUDGET_S = 61.0
MODULE_SUFFIXES = (".mlirbc", ".mlir")


class BenchError(RuntimeError):
    pass


def pick_module(paths: list[Path]) -> Path:
    """The one MLIR module among an import target's outputs."""
    modules = [p for p in paths if p.suffix in MODULE_SUFFIXES]
    if len(modules) != 1:
        raise BenchError(f"expected one MLIR module ({', '.join(MODULE_SUFFIXES)}) among "
                         f"{', '.join(map(str, paths)) or 'no paths'}, found {len(modules)}")
    return modules[0]


def analyse_once(command: list[str], out: Path) -> tuple[float, str, str]:
    """(wall seconds, sha256 of the analysis written, the analysis' summary line)."""
    start = time.perf_counter()
    proc = subprocess.run([*command, "--out", str(out), "--no-progress"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise BenchError(f"analysis failed (exit {proc.returncode}): {why}")
    summary = next((l for l in proc.stdout.splitlines() if l.startswith("analysis ")), "")
    return seconds, hashlib.sha256(out.read_bytes()).hexdigest(), summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="analysis_time", description=__doc__.split("\n")[0])
    p.add_argument("--import-outputs", nargs="+", type=Path, required=True,
                   help="the import target's outputs; the MLIR module among them is analysed")
    p.add_argument("--target", required=True, type=Path)
    p.add_argument("--hardware", required=True, type=Path)
    p.add_argument("--model-name", required=True)
    p.add_argument("--calibration", type=Path)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=BUDGET_S)
    a = p.parse_args(argv)
    if a.runs < 1:
        p.error("--runs must be at least 1")
    console = Console()
    try:
        module = pick_module(a.import_outputs)
        command = [sys.executable, "-m", "analysis.analyze", "--module", str(module), "--target", str(a.target),
                   "--hardware", str(a.hardware), "--model-name", a.model_name]
        if a.calibration:
            command += ["--calibration", str(a.calibration)]
        runs = []
        with tempfile.TemporaryDirectory(prefix="analysis_time_") as tmp:
            for i in range(a.runs):
                runs.append(analyse_once(command, Path(tmp) / f"run{i}.analysis.json"))
                console.print(f"run {i + 1}/{a.runs}: {runs[-1][0]:.1f} s", highlight=False)
    except BenchError as err:
        print(f"analysis_time: {a.model_name}: {err}", file=sys.stderr)
        return 1
    seconds = [r[0] for r in runs]
    median, worst = statistics.median(seconds), max(seconds)
    table = Table(title=f"{a.model_name}'s analysis on {a.hardware.name}, cold, {a.runs} runs, "
                        f"{os.cpu_count()} cores")
    for column in ("", "seconds", f"/ budget {a.budget_s:g} s"):
        table.add_column(column, justify="right")
    table.add_row("median", f"{median:.1f}", f"{median / a.budget_s:.2f}")
    table.add_row("fastest", f"{min(seconds):.1f}", f"{min(seconds) / a.budget_s:.2f}")
    table.add_row("slowest", f"{worst:.1f}", f"{worst / a.budget_s:.2f}")
    console.print(table)
    console.print(runs[-1][2], highlight=False)
    identical = len({r[1] for r in runs}) == 1
    console.print(f"outputs identical across runs: {'yes' if identical else 'NO'} (sha256 {runs[0][1][:16]})",
                  highlight=False)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
