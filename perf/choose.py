"""Packages, of several builds of one module, the one the RISC-V measurement finds fastest.

    python -m perf.choose --module M.mlirbc \\
        --candidate tuned M_tuned.vmfb M_tuned.report.json T.target.yaml M_tuned.perf.json \\
        --candidate ukernels M_uk.vmfb M_uk.report.json T_uk.target.yaml M_uk.perf.json \\
        --out-vmfb M.vmfb --out-manifest M.manifest.json

`model_pipeline(strategy = "auto")`: each candidate is a complete build of the same module for
the same accelerator under one lowering strategy, with its perf-stage measurement. The chosen
one has the fewest model cycles for one call of the model (each dispatch's cycles times its
calls) on the first core of the measurements (the module's own accelerator); ties go to the
earlier candidate. Every candidate's figure and the reason are recorded in the manifest
(`strategy_choice`). Deterministic: the measurements are.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.errors import first_line
from common.perf_schema import PerfReport
from runtime.manifest import ManifestError, build


class ChoiceError(RuntimeError):
    pass


def choose(candidates: list[tuple[str, Path]]) -> tuple[str, dict]:
    """(chosen strategy, record) from (strategy, perf.json) pairs."""
    figures = {}
    core = None
    for strategy, perf in candidates:
        try:
            report = PerfReport.model_validate_json(perf.read_text())
        except (OSError, ValueError) as err:
            raise ChoiceError(f"{perf}: not a perf report: {str(err).splitlines()[0]}") from None
        run = report.runs[0]
        if core is None:
            core = (run.hardware, run.core)
        elif (run.hardware, run.core) != core:
            raise ChoiceError(f"{perf}: measured first on {run.hardware}, not {core[0]}: "
                              "candidates must be measured on the same accelerator")
        if run.inference_model_cycles is None:
            raise ChoiceError(f"{perf}: {run.hardware} has no core model: no model cycles to choose by")
        figures[strategy] = run.inference_model_cycles
    if not figures:
        raise ChoiceError("no candidates")
    chosen = min(figures, key=lambda s: (figures[s], list(figures).index(s)))
    runner_up = min((s for s in figures if s != chosen), key=figures.get, default=None)
    reason = (f"{chosen}: fewest model cycles for one call on {core[1]} ({figures[chosen]:,})"
              + (f"; next {runner_up} at {figures[runner_up] / figures[chosen]:.2f}x"
                 if runner_up else ""))
    return chosen, {"by": f"one call of the model, model cycles on {core[1]} ({core[0]})",
                    "candidates": figures, "chosen": chosen, "reason": reason}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m perf.choose", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True, type=Path)
    p.add_argument("--candidate", nargs=5, action="append", required=True,
                   metavar=("STRATEGY", "VMFB", "REPORT", "TARGET", "PERF_JSON"))
    p.add_argument("--out-vmfb", required=True, type=Path)
    p.add_argument("--out-manifest", required=True, type=Path)
    a = p.parse_args(argv)
    try:
        by_strategy = {c[0]: [Path(x) for x in c[1:]] for c in a.candidate}
        if len(by_strategy) != len(a.candidate):
            raise ChoiceError("a strategy is given twice")
        chosen, record = choose([(s, files[3]) for s, files in by_strategy.items()])
        vmfb, report, target, _ = by_strategy[chosen]
        build(vmfb, report, a.module, target, None, None, a.out_vmfb, a.out_manifest,
              extra={"strategy_choice": record})
    except (ChoiceError, ManifestError) as err:
        print(f"perf.choose: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - one line naming the culprit, never a traceback
        print(f"perf.choose: {a.module}: {type(err).__name__}: {first_line(err)}", file=sys.stderr)
        return 1
    print(f"perf.choose: {a.out_vmfb.name}: {record['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
