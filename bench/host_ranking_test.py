"""host_ranking's per-dispatch figures on hand-made timings (no compiler, no timing)."""

import sys
from types import SimpleNamespace

import pytest

from bench import host_ranking as hr

CANDIDATES = ["iree-default", "a", "b", "c", "d"]


def _ranked(code: list[float]) -> hr._Ranked:
    return hr._Ranked(model="m", dispatch="d0", kind="matmul", split="held_out",
                      points=[hr._Point(candidate=c, code=x) for c, x in zip(CANDIDATES, code)])


def _measurements(stored: list[float]) -> SimpleNamespace:
    return SimpleNamespace(rows=[SimpleNamespace(model="m", dispatch="d0", candidate=c, measured_cycles=s)
                                 for c, s in zip(CANDIDATES, stored)])


def _times(per_round: list[list[float]]) -> dict:
    """per_round[r][i]: candidate i's seconds in round r."""
    return {("m", "d0"): {c: [row[i] for row in per_round] for i, c in enumerate(CANDIDATES)}}


def test_a_stable_measurement_agrees_with_itself_and_ranks_the_model():
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 6)
    [r] = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    assert r["tau_split_half"] == pytest.approx(1.0)
    assert r["tau_code_retimed"] == pytest.approx(1.0)
    assert r["tau_code_stored"] == pytest.approx(-1.0)  # the stored single measurement disagrees
    assert r["code_choice_over_default"] == pytest.approx(0.2)
    assert r["default_us"] == pytest.approx(5.0)


def test_split_half_compares_even_rounds_with_odd_rounds():
    # even rounds rank the candidates one way, odd rounds the other: the measurement cannot rank them
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6], [1e-6, 2e-6, 3e-6, 4e-6, 5e-6]] * 3)
    [r] = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    assert r["tau_split_half"] == pytest.approx(-1.0)


def test_a_dispatch_without_its_default_or_enough_candidates_is_left_out():
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4)
    del times[("m", "d0")]["iree-default"]
    assert hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1] * 5), times) == []


def test_markdown_splits_by_dispatch_size():
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4)
    results = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    text = hr.markdown(results, "host_x", 4, "some CPU")
    assert "| held_out | default < 20 us | 1 | 1.00 | -1.00 | -1.00 | 1.00 |" in text
    assert "default >= 20 us" not in text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
