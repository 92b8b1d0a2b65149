"""Tile legality (analysis/tiles.py) over random shapes and hardware parameters."""

import sys
from math import prod

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


@settings(max_examples=300, deadline=None)
@given(problems())
def test_register_tile_models_accumulators_and_operands(p):
    """Register tile: innermost parallel = 1-2 vectors (or the whole short loop), accumulators
    (product of parallel register tiles) <= half the register file, reduction unroll product
    <= lanes; so every vector-level tile product is small (no IREE "large vector sizes")."""
    bounds, kinds, lanes, reg_elems, prop = p
    for proposal in (prop, {**prop, "register": tiles.register_proposal(bounds, kinds, lanes,
                                                                         reg_elems)}):
        t = tiles.legalize(bounds, kinds, proposal, lanes, reg_elems)
        reg = t["register"]
        inner = tiles.innermost_parallel(kinds)
        par = [r for r, k in zip(reg, kinds) if k == "parallel"]
        red = [r for r, k in zip(reg, kinds) if k == "reduction"]
        assert prod(red) <= lanes
        assert prod(par) <= reg_elems // 2
        if inner is not None:
            r, b = reg[inner], bounds[inner]
            assert r == b if b <= lanes else r % lanes == 0 and r <= tiles.MAX_INNER_VECTORS * lanes
        # vector bytes of the whole register tile: far below IREE's 16 KiB vector limit
        assert prod(reg) * 4 <= (reg_elems // 2) * lanes * 4 <= 16384


@settings(max_examples=300, deadline=None)
@given(problems(), st.integers(1, 8))
def test_distribution_gives_workgroups_for_the_cores(p, cores):
    """distribute: stays legal, never grows a tile, and yields >= WORKGROUPS_PER_CORE x cores
    workgroups unless every parallel l1 tile already equals its register tile (nothing left
    to split)."""
    bounds, kinds, lanes, reg_elems, prop = p
    legal = tiles.legalize(bounds, kinds, prop, lanes, reg_elems)
    d = tiles.distribute(bounds, kinds, legal, cores)
    assert tiles.check(bounds, kinds, d, lanes, reg_elems) == []
    assert all(d[lv][i] <= legal[lv][i] for lv in d for i in range(len(bounds)))
    assert d["register"] == legal["register"]
    groups = tiles.workgroups(bounds, kinds, d["l2"])
    par = [i for i, k in enumerate(kinds) if k == "parallel"]
    exhausted = all(-(-d["l2"][i] // d["register"][i]) <= 1 for i in par)
    assert groups >= tiles.WORKGROUPS_PER_CORE * cores or exhausted
    # reduction loops are never distributed: their l2 tile is untouched
    assert all(d["l2"][i] == legal["l2"][i] for i, k in enumerate(kinds) if k == "reduction")


MATMUL = [[[(0, 1)], [(2, 1)]], [[(2, 1)], [(1, 1)]], [[(0, 1)], [(1, 1)]]]  # A[m][k], B[k][n], C[m][n]


def test_reduction_blocked_resnets_late_gemm():
    """ResNet-18's 512x49x4608 GEMM, IREE's 64x32 cache tile with an 8x8 register tile: the
    reduction in blocks of 64 (A, B and C tiles 32 KiB, the P670's L1); measured 0.47x the
    memory-aware cycles of the unblocked tile (DRAM bytes 178 MB -> 31 MB)."""
    t = {"register": [8, 8, 1], "l1": [64, 32, 4608], "l2": [64, 32, 4608]}
    out = tiles.block_reduction([512, 49, 4608], ["parallel", "parallel", "reduction"], t, MATMUL, 32768)
    assert out == {"register": [8, 8, 1], "l1": [64, 32, 64], "l2": [64, 32, 4608]}
    # a C tile larger than L1 is shrunk first, largest loop first, in whole register tiles
    t = {"register": [7, 16, 1], "l1": [64, 196, 2304], "l2": [64, 196, 2304]}
    out = tiles.block_reduction([256, 196, 2304], ["parallel", "parallel", "reduction"], t, MATMUL, 32768)
    assert out["l1"] == [28, 48, 64]
    # nothing to block: a reduction no longer than the block, or a window (convolution)
    t = {"register": [8, 8, 1], "l1": [64, 32, 64], "l2": [64, 32, 64]}
    assert tiles.block_reduction([512, 49, 64], ["parallel", "parallel", "reduction"], t, MATMUL, 32768) is None
    window = [[[(0, 1), (2, 1)]], [[(2, 1)]], [[(0, 1)]]]
    assert tiles.block_reduction([30, 3], ["parallel", "reduction"], {"register": [4, 1], "l1": [28, 3],
                                 "l2": [28, 3]}, window, 32768) is None


@settings(max_examples=300, deadline=None)
@given(problems(), st.sampled_from([16 * 1024, 32 * 1024, 64 * 1024]))
def test_reduction_blocked_tiles_are_legal_and_fit_l1(p, l1_bytes):
    bounds, kinds, lanes, reg_elems, prop = p
    n = len(bounds)
    legal = tiles.legalize(bounds, kinds, prop, lanes, reg_elems)
    accesses = [[[(i, 1)] for i in range(n) if kinds[i] == "parallel" or i % 2 == o] for o in (0, 1)]
    out = tiles.block_reduction(bounds, kinds, legal, accesses, l1_bytes)
    if out is None:
        return
    assert tiles.check(bounds, kinds, out, lanes, reg_elems) == []
    assert out["register"] == legal["register"] and out["l2"] == legal["l2"]
    assert tiles.footprint(out["l1"], accesses) <= l1_bytes
    red = [i for i, k in enumerate(kinds) if k == "reduction"]
    assert any(out["l1"][i] < legal["l1"][i] for i in red)
    for i, k in enumerate(kinds):
        if k == "parallel":
            assert out["l1"][i] % out["register"][i] == 0 and out["l1"][i] <= legal["l1"][i]


def test_register_proposal_host_matmul():
    # host: 8 f32 lanes, 16 YMM = 128 f32: 8 rows x 1 vector of accumulators, K unrolled by 8
    assert tiles.register_proposal([64, 3136, 576], ["parallel", "parallel", "reduction"],
                                   8, 128) == [8, 8, 8]
    # matvec (M = 1): two vectors, two independent FMA chains
    assert tiles.register_proposal([1, 1000, 512], ["parallel", "parallel", "reduction"],
                                   8, 128) == [1, 16, 8]
    # elementwise: one vector, like IREE
    assert tiles.register_proposal([64, 56, 56], ["parallel"] * 3, 8, 128) == [1, 1, 8]


def test_distribution_splits_a_whole_problem_l2_tile():
    kinds = ["parallel", "parallel", "reduction"]
    legal = {"register": [8, 8, 8], "l1": [64, 32, 576], "l2": [64, 3136, 576]}
    d = tiles.distribute([64, 3136, 576], kinds, legal, 2)
    assert tiles.workgroups([64, 3136, 576], kinds, d["l2"]) >= 8
    assert d["l1"] == legal["l1"] and d["l2"][1] % 32 == 0


def test_examples_exact_tiling():
    t = tiles.legalize([64, 128, 96], ["parallel", "parallel", "reduction"],
                       {"register": [1, 32, 16], "l1": [64, 32, 96], "l2": [64, 128, 96]}, 4, 128)
    assert t == {"register": [1, 8, 4], "l1": [64, 32, 96], "l2": [64, 128, 96]}
    # a loop shorter than the lanes keeps the whole loop as its register tile
    t = tiles.legalize([3], ["parallel"], {"register": [8], "l1": [8], "l2": [8]}, 8, 128)
    assert t["register"] == [3]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 500), st.integers(1, 64), st.integers(1, 500))
def test_outer_tiles_round_up_to_whole_vectors(tile, step, bound):
    tile = min(tile, bound)
    got = tiles.dividing_multiple(tile, step, bound)
    assert tile <= got <= bound
    if tile % step == 0:
        assert got == tile
    else:  # the smallest multiple of the step that divides the loop, else the whole loop
        dividing = [t for t in range(-(-tile // step) * step, bound, step) if bound % t == 0]
        assert got == (dividing[0] if dividing else bound)
        assert bound % got == 0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
