"""The code-model evaluation's per-model table on hand-made results (no compiler, no timing)."""

import sys

import pytest

from bench import code_cost_eval as ev


def _dispatch(model: str, split: str, points: list[tuple[str, float, float]]) -> dict:
    return {"model": model, "split": split, "dispatch": f"d{len(points)}", "kind": "matmul",
            "points": [{"candidate": c, "code": code, "measured": measured}
                       for c, code, measured in points]}


RESULTS = [
    # predicted 50% cheaper and measured 4x faster
    _dispatch("a", "calibration", [("iree-default", 100.0, 400.0), ("x", 50.0, 100.0)]),
    # predicted 5% cheaper but measured 2x slower: taken only without a margin
    _dispatch("a", "calibration", [("iree-default", 100.0, 100.0), ("y", 95.0, 200.0),
                                   ("z", 120.0, 90.0)]),
    _dispatch("b", "held_out", [("iree-default", 10.0, 10.0), ("x", 20.0, 5.0)]),
]


def test_choice_with_a_margin_is_summed_per_model():
    # margin 0: a takes x (100 of 400) and y (200 of 100): 300 / 500; b keeps its default
    assert ev.summed_choice_by_model(RESULTS, 0.0) == {("calibration", "a"): pytest.approx(0.6),
                                                      ("held_out", "b"): 1.0}
    # margin 10%: y (5% cheaper) is not taken: (100 + 100) / 500
    assert ev.summed_choice_by_model(RESULTS, 0.1)[("calibration", "a")] == pytest.approx(0.4)
    # margin 60%: nothing is predicted that much cheaper
    assert ev.summed_choice_by_model(RESULTS, 0.6)[("calibration", "a")] == 1.0


def test_margin_table_lists_every_model_with_its_best_and_the_split_geomeans():
    table = "\n".join(ev._margin_table(RESULTS))
    # best: x (100) and z (90) over 500; b's x (5) over 10
    assert "| calibration | a | 0.600 | 0.400 | 0.400 | 0.400 | 0.380 |" in table
    assert "| held_out | b | 1.000 | 1.000 | 1.000 | 1.000 | 0.500 |" in table
    assert "| held_out | **geomean** / worst | 1.000 / 1.000 |" in table


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
