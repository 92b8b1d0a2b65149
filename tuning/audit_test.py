"""The audit of committed records (tuning/audit.py, issue 80 BAD 4 and 5): records re-sealed with
the project's own tools pass the seal, so what they claim is re-derived and compared here."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from choice.records import (dump_record, dump_strategy_record, load_record, load_strategy_record, seal_record,
                            seal_strategy_record)
from tuning import audit

ROOT = Path(__file__).absolute().parent.parent
STRATEGIES = sorted((ROOT / "tuning" / "strategies").glob("*.json"))
RECORDS = sorted((ROOT / "tuning" / "records").glob("*.json"))


def _resealed(record, tmp_path: Path, name: str = "forged.json"):
    """`record` re-sealed and written as the project's tools write it, then read back through the
    checks every reader applies: a forger's record passes them."""
    path = tmp_path / name
    path.write_text(dump_strategy_record(seal_strategy_record(record.model_copy(update={"choice_sha256": None}))))
    return load_strategy_record(path), path


def test_every_committed_strategy_choice_follows_from_its_figures():
    assert STRATEGIES, "no committed strategy records in the runfiles"
    problems = [p for path in STRATEGIES for p in audit.choice_problems(load_strategy_record(path), path)]
    assert problems == []


def test_a_resealed_record_whose_choice_was_moved_is_refused(tmp_path):
    # BAD 5: mlp_batch32 ships tuned instead of the measured-faster datatiling.
    record = load_strategy_record(ROOT / "tuning" / "strategies" / "mlp_batch32_riscv.json")
    assert record.choice["chosen"] == "datatiling"
    forged = copy.deepcopy(record)
    forged.choice["chosen"] = "tuned"
    forged, path = _resealed(forged, tmp_path)
    problems = audit.choice_problems(forged, path)
    assert any("choice.chosen is 'tuned' but its figures give 'datatiling'" in p for p in problems), problems
    assert all(p.startswith(str(path)) and "bazel run //tools:tune -- //models:mlp_batch32_riscv" in p
               for p in problems)


def test_a_resealed_record_with_an_edited_reason_is_refused(tmp_path):
    forged = copy.deepcopy(load_strategy_record(ROOT / "tuning" / "strategies" / "mlp_batch32_riscv.json"))
    forged.choice["reason"] = "datatiling: measured and found best"
    forged, path = _resealed(forged, tmp_path)
    assert [p for p in audit.choice_problems(forged, path) if "choice.reason" in p]


def test_invented_figures_that_agree_with_their_choice_are_found_by_measuring(tmp_path):
    """BAD 5 as reported: tuned shipped with figures invented to make it win. The choice follows
    from the invented figures, so only a measurement finds them: the build's figure (here the
    committed record's, which //tuning:audit_measure_test measures) differs from the claim."""
    record = load_strategy_record(ROOT / "tuning" / "strategies" / "mlp_batch32_riscv.json")
    forged = copy.deepcopy(record)
    c = forged.choice
    c["candidates"]["tuned"] = 1_000_000  # cheapest by the code model now: kept as the baseline
    forged.choice = audit.rederived_choice(forged)  # the forger makes it consistent
    forged, path = _resealed(forged, tmp_path)
    assert forged.choice["chosen"] == "tuned"
    assert audit.choice_problems(forged, path) == []  # consistent: the seal and the decision pass
    measured = {"candidates": record.choice["candidates"]["tuned"]}
    problems = audit.strategy_figure_problems(forged, path, "tuned", measured)
    assert problems == [f"{path}: tuned's candidates 1000000 in the record, 2393904 measured; "
                        "`bazel run //tools:tune -- //models:mlp_batch32_riscv` refreshes it"]


def test_a_resealed_tile_figure_differs_from_its_measurement(tmp_path):
    # BAD 4: a figure moved (the measured-best candidate made slower), the record re-sealed.
    path = ROOT / "tuning" / "records" / "mlp_riscv.json"
    record = load_record(path)
    dispatch = sorted(record.results)[0]
    candidate, result = next((c, r) for c, r in sorted(record.results[dispatch].items()) if r.measured is not None)
    forged = record.model_copy(deep=True)
    m = forged.results[dispatch][candidate].measured
    forged.results[dispatch][candidate].measured = m.model_copy(update={"memory_aware_cycles": m.memory_aware_cycles * 5})
    out = tmp_path / "mlp_riscv.json"
    out.write_text(dump_record(seal_record(forged.model_copy(update={"figures_sha256": None}))))
    forged = load_record(out)  # the seal passes
    problems = audit.tile_problems(forged, out, dispatch, candidate, result.measured)
    assert len(problems) == 1 and "memory_aware_cycles" in problems[0] and str(m.memory_aware_cycles) in problems[0]
    assert audit.tile_problems(record, path, dispatch, candidate, result.measured) == []
    assert "not measured again" in audit.tile_problems(record, path, dispatch, candidate, None)[0]


def test_the_sample_rotates_with_the_seed_and_covers_every_dispatch():
    records = {p.stem: load_record(p) for p in RECORDS}
    claims = audit.tile_claims(records)
    assert len(claims) > 100
    a = audit.sample(claims, 6, "tiles:one")
    assert a == audit.sample(claims, 6, "tiles:one") and len(a) == 6
    assert a != audit.sample(claims, 6, "tiles:two")
    seen = {c for seed in range(3000) for c in audit.sample(claims, 6, f"tiles:{seed}")}
    assert seen == set(claims)  # over commits, every measured choice is audited
    assert audit.sample(claims[:3], 6, "x") == sorted(claims[:3])


def test_half_the_sample_weighs_what_a_choice_puts_at_stake():
    records = {p.stem: load_record(p) for p in RECORDS}
    claims = audit.tile_claims(records)
    weight = audit.stakes(records, claims)
    picks = [audit.tile_sample(records, 4, f"seed{i}") for i in range(300)]
    assert all(len(p) == 4 and len(set(p)) == 4 for p in picks)
    assert picks[0] == audit.tile_sample(records, 4, "seed0")
    median = sorted(weight.values())[len(weight) // 2]
    heavy = sum(weight[c] > median for p in picks for c in p) / sum(len(p) for p in picks)
    assert heavy > 0.7, heavy  # uniform sampling gives about half


def test_build_names_follow_models_defs():
    assert [audit.build_suffix(s) for s in ("tuned", "codegen", "datatiling")] == ["", "_iree_default", "_datatiling"]


def test_outside_bazel_run_it_says_how_to_run_it(monkeypatch, capsys):
    monkeypatch.delenv("BUILD_WORKSPACE_DIRECTORY", raising=False)
    assert audit.main([]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["audit: BUILD_WORKSPACE_DIRECTORY is not set: run me with `bazel run //tools:audit -- ...`"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
