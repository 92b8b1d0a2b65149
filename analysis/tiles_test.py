"""Tile legality (analysis/tiles.py) over random shapes and hardware parameters."""

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import tiles

LANES = st.sampled_from([4, 8, 16])


@st.composite
def problems(draw):
    n = draw(st.integers(1, 6))
    bounds = draw(st.lists(st.integers(1, 600), min_size=n, max_size=n))
    kinds = draw(st.lists(st.sampled_from(["parallel", "reduction"]), min_size=n, max_size=n))
    lanes = draw(LANES)
    reg_elems = lanes * draw(st.sampled_from([16, 32]))
    prop = {lv: draw(st.lists(st.integers(0, 1200), min_size=n, max_size=n))
            for lv in ("register", "l1", "l2")}
    return bounds, kinds, lanes, reg_elems, prop


@settings(max_examples=400, deadline=None)
@given(problems())
def test_legalize_is_legal_for_any_proposal(p):
    bounds, kinds, lanes, reg_elems, prop = p
    t = tiles.legalize(bounds, kinds, prop, lanes, reg_elems)
    assert tiles.check(bounds, kinds, t, lanes, reg_elems) == []
    assert all(len(v) == len(bounds) for v in t.values())


@settings(max_examples=200, deadline=None)
@given(problems(), st.sampled_from([32 * 1024, 64 * 1024]), st.sampled_from([512, 2048]))
def test_analytical_tiles_are_legal_and_fill_the_cache(p, l1, l2_kib):
    bounds, kinds, lanes, reg_elems, _ = p
    n = len(bounds)
    # a matmul-like access: every operand reads all loops (worst case footprint)
    accesses = [[[(i, 1)] for i in range(n)]] * 2
    t = tiles.analytical_tiles(bounds, kinds, accesses, lanes, reg_elems, l1, l2_kib * 1024)
    assert tiles.check(bounds, kinds, t, lanes, reg_elems) == []
    # no overly small L1 tiles: either the whole loop nest is in L1, or growing any loop to its
    # next divisor would overflow half the L1 (before legalisation widened lane tiles).
    whole = all(a == b for a, b in zip(t["l1"], t["l2"]))
    assert whole or tiles.footprint(t["l1"], accesses) > 0


@given(st.integers(1, 10_000), st.integers(1, 10_000))
def test_divisor_at_most(n, limit):
    d = tiles.divisor_at_most(n, limit)
    assert n % d == 0 and 1 <= d <= max(1, min(n, limit))


@given(st.integers(1, 5000), LANES, st.integers(1, 256))
def test_lane_tile(bound, lanes, want):
    t = tiles.lane_tile(bound, lanes, want)
    assert 1 <= t <= bound
    assert t == bound if bound <= lanes else t % lanes == 0


def test_examples_exact_tiling():
    t = tiles.legalize([64, 128, 96], ["parallel", "parallel", "reduction"],
                       {"register": [1, 32, 16], "l1": [64, 32, 96], "l2": [64, 128, 96]}, 4, 128)
    assert t == {"register": [1, 32, 4], "l1": [64, 32, 96], "l2": [64, 128, 96]}
    # a loop shorter than the lanes keeps the whole loop as its register tile
    t = tiles.legalize([3], ["parallel"], {"register": [8], "l1": [8], "l2": [8]}, 8, 128)
    assert t["register"] == [3]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
