"""The audit's measurements for real (issue 80 BAD 4 and 5), on mlp_batch32: a tile record with a
figure moved and a strategy record with an invented measured figure, both re-sealed with the
project's own tools (so every hash check passes), are found by measuring again; the committed
records measure equal.

    python tuning/audit_measure_test.py CHOICE_INPUTS.json TILE_RECORD STRATEGY_RECORD PERF...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from choice.records import dump_record, dump_strategy_record, load_record, load_strategy_record, seal_record, \
    seal_strategy_record
from tuning import audit

ROOT = Path(__file__).absolute().parent.parent  # the runfiles tree
ARGS = sys.argv[1:]


def _inputs() -> tuple[dict, dict[str, Path]]:
    inputs = json.loads((ROOT / ARGS[0]).read_text())
    return inputs, {k: (ROOT / v["short_path"]).absolute() for k, v in inputs["files"].items()}


def _decisive(record) -> tuple[str, list[tuple[str, str]]]:
    """A dispatch whose choice was measured, and all its measured candidates."""
    d = next(d for d, r in sorted(record.results.items()) if sum(x.measured is not None for x in r.values()) >= 2)
    return d, [(d, c) for c, r in sorted(record.results[d].items()) if r.measured is not None]


def test_the_rounds_are_the_records_measurements():
    from choice.records import measurements
    from common.analysis_schema import Analysis

    record = load_record(Path(ARGS[1]))
    _, files = _inputs()
    rounds = audit.tune_rounds(Analysis.model_validate_json(files["analysis"].read_text()), record,
                               record.key.candidates_per_dispatch, record.key.code_ranked)
    measured, _ = measurements(record)
    pairs = [p for _, todo in rounds for p in todo.items()]
    assert sorted(pairs) == sorted(measured) and len(rounds) > 1


def test_committed_tile_figures_measure_equal():
    record = load_record(Path(ARGS[1]))
    inputs, files = _inputs()
    _, pairs = _decisive(record)
    problems, compared = audit.measure_claims("mlp_batch32_riscv", record, inputs, files, pairs, 2)
    assert (problems, compared) == ([], len(pairs))


def test_a_resealed_forged_tile_figure_is_found(tmp_path):
    record = load_record(Path(ARGS[1]))
    d, pairs = _decisive(record)
    chosen_best = min(pairs, key=lambda p: record.results[d][p[1]].measured.memory_aware_cycles)[1]
    forged = record.model_copy(deep=True)
    m = forged.results[d][chosen_best].measured
    forged.results[d][chosen_best].measured = m.model_copy(update={"memory_aware_cycles": m.memory_aware_cycles * 3})
    path = tmp_path / "mlp_batch32_riscv.json"
    path.write_text(dump_record(seal_record(forged.model_copy(update={"figures_sha256": None}))))
    forged = load_record(path)  # the seal passes: only the measurement can tell
    inputs, files = _inputs()
    problems, _ = audit.measure_claims("mlp_batch32_riscv", forged, inputs, files, pairs, 2)
    assert len(problems) == 1, problems
    assert f"{d} {chosen_best}: memory_aware_cycles {m.memory_aware_cycles * 3} in the record, " \
           f"{m.memory_aware_cycles} measured" in problems[0]


def test_an_invented_measured_strategy_figure_is_found(tmp_path):
    perf = next(Path(p) for p in ARGS[3:] if p.endswith(".perf.json"))
    record = load_strategy_record(Path(ARGS[2]))
    got = audit.strategy_figure(record, "measured", "tuned", perf.parent)
    assert audit.strategy_figure_problems(record, Path(ARGS[2]), "tuned", got) == []
    forged = record.model_copy(deep=True)
    forged.choice["measured"]["tuned"] = 1_800_000  # below datatiling's 1,924,501: tuned would ship
    forged.choice = audit.rederived_choice(forged)
    path = tmp_path / "mlp_batch32_riscv.json"
    path.write_text(dump_strategy_record(seal_strategy_record(forged.model_copy(update={"choice_sha256": None}))))
    forged = load_strategy_record(path)
    assert forged.choice["chosen"] == "tuned" and audit.choice_problems(forged, path) == []
    problems = audit.strategy_figure_problems(forged, path, "tuned", got)
    assert problems == [f"{path}: tuned's measured 1800000 in the record, {got['measured']} measured; "
                        "`bazel run //tools:tune -- //models:mlp_batch32_riscv` refreshes it"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
