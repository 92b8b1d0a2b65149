"""Candidate tiles -> ZigZag's per-level temporal loops (analysis/zigzag_cost.py evaluate_tiles)."""

import sys
from math import prod
from pathlib import Path

import pytest

from analysis import zigzag_cost
from common import hardware
from analysis.dispatches import LoopNest

HW = Path(__file__).parent / "hardware" / "riscv_rvv.yaml"


def test_matmul_tiles_go_to_their_levels():
    # IREE's default for a 256^3 matmul: 7 rows x 16 columns of accumulators, 64x64 cache tiles.
    tiles = {"register": [7, 16, 1], "l1": [64, 64, 256], "l2": [64, 64, 256]}
    levels, padded = zigzag_cost.tile_loops(tiles, [256, 256, 256], [0, 1, 2], {1: 8})
    assert levels == [
        [(1, 2), (0, 7)],             # register: 16 columns = 8 spatial x 2; 7 rows
        [(2, 256), (1, 4), (0, 10)],  # l1: the whole reduction, 64/16 columns, ceil(64/7) rows
        [],                           # l2 = l1
        [(1, 4), (0, 4)],             # DRAM: 256/64 column tiles, ceil(256/70) row tiles
    ]
    assert padded == [280, 256, 256]  # rows padded to whole tiles: 4 x 10 x 7


def test_each_tile_lands_on_its_own_level():
    # Distinct factors at every level, so a loop put one level off changes the answer.
    tiles = {"register": [1, 8, 2], "l1": [4, 8, 16], "l2": [32, 8, 64]}
    levels, padded = zigzag_cost.tile_loops(tiles, [128, 8, 128], [0, 1, 2], {})
    assert levels[0] == [(2, 2), (1, 8)]
    assert levels[1] == [(2, 8), (0, 4)]
    assert levels[2] == [(2, 4), (0, 8)]
    assert levels[3] == [(2, 2), (0, 4)]
    assert padded == [128, 8, 128]


def test_loop_order_is_kept_within_each_level():
    tiles = {"register": [1, 1, 1], "l1": [2, 3, 5], "l2": [2, 3, 5]}
    levels, _ = zigzag_cost.tile_loops(tiles, [2, 3, 5], [2, 0, 1], {})  # d2 outermost
    assert levels[1] == [(1, 3), (0, 2), (2, 5)]  # innermost first: d1, d0, d2


@pytest.mark.parametrize("tiles,bounds,spatial", [
    ({"register": [3, 8, 1], "l1": [10, 24, 7], "l2": [50, 24, 100]}, [97, 50, 100], {1: 8}),
    ({"register": [1, 4, 4], "l1": [1, 4, 16], "l2": [9, 12, 27]}, [9, 12, 27], {1: 4, 0: 1}),
])
def test_factors_cover_every_tile(tiles, bounds, spatial):
    levels, padded = zigzag_cost.tile_loops(tiles, bounds, list(range(len(bounds))), spatial)
    for k, bound in enumerate(bounds):
        covered = spatial.get(k, 1)
        for lv, role in enumerate(("register", "l1", "l2")):
            below = covered
            covered *= prod(f for d, f in levels[lv] if d == k)
            # at least the tile, and less than one more of the tiles below it (padding only)
            assert tiles[role][k] <= covered < tiles[role][k] + below
        covered *= prod(f for d, f in levels[3] if d == k)
        assert covered == padded[k] >= bound


def test_tiles_above_the_bound_are_the_whole_loop():
    levels, padded = zigzag_cost.tile_loops({"register": [8], "l1": [904], "l2": [904]}, [900], [0], {})
    assert levels == [[(0, 8)], [(0, 113)], [], []] and padded == [904]


def test_bad_tiles_are_refused():
    with pytest.raises(ValueError, match="not 1 <= register"):
        zigzag_cost.tile_loops({"register": [8], "l1": [4], "l2": [16]}, [16], [0], {})
    with pytest.raises(ValueError, match="permutation"):
        zigzag_cost.tile_loops({"register": [1, 1], "l1": [1, 1], "l2": [1, 1]}, [2, 2], [0, 0], {})


def test_candidate_spatial_fills_the_array_with_vector_then_rows():
    kinds = ["parallel", "parallel", "reduction"]
    assert zigzag_cost.candidate_spatial({"register": [7, 16, 1]}, kinds, 8) == {1: 8}
    assert zigzag_cost.candidate_spatial({"register": [4, 4, 1]}, kinds, 8) == {1: 4, 0: 2}
    assert zigzag_cost.candidate_spatial({"register": [1, 4, 1]}, kinds, 8) == {1: 4}
    assert zigzag_cost.candidate_spatial({"register": [2, 27, 1]}, kinds, 8) == {1: 8}


def _matmul_layer(m, n, k):
    nest = LoopNest(
        loops=(("d0", m, "parallel"), ("d1", n, "parallel"), ("d2", k, "reduction")),
        operands=(("input", "(d0, d1, d2) -> (d0, d2)", "f32", (m, k)),
                  ("input", "(d0, d1, d2) -> (d2, d1)", "f32", (k, n)),
                  ("output", "(d0, d1, d2) -> (d0, d1)", "f32", (m, n))),
        body_ops=(), terms=(((( 0, 1),), ((2, 1),)), (((2, 1),), ((1, 1),)), (((0, 1),), ((1, 1),))))
    return zigzag_cost.to_layer("matmul", nest)


def test_zigzag_prices_the_forced_mapping(tmp_path):
    acc, mapping = hardware.write_zigzag_inputs(hardware.load_hardware(HW), tmp_path / "in")
    layer = _matmul_layer(64, 64, 64)
    tiles = {"register": [4, 16, 1], "l1": [16, 64, 64], "l2": [64, 64, 64]}
    kinds = ["parallel", "parallel", "reduction"]
    got = zigzag_cost.evaluate_tiles(layer, acc, mapping, tiles, [0, 1, 2], 3, kinds=kinds,
                                     dump_root=tmp_path)
    assert got["spatial"] == {"d1": 8}
    # ZigZag's own reading of the mapping it priced: the output's tile per level is ours.
    out_tiles = got["tiles_per_level"]["O"]
    assert out_tiles[0][:2] == [4, 16] and out_tiles[1] == [16, 64, 64] and out_tiles[-1] == [64, 64, 64]
    smaller = zigzag_cost.evaluate_tiles(layer, acc, mapping, {**tiles, "register": [1, 8, 1]},
                                         [0, 1, 2], 3, kinds=kinds, dump_root=tmp_path)
    assert smaller["latency_cycles"] > 0 and smaller != got


def test_zigzag_own_mapping_prices_as_its_search_did(tmp_path):
    acc, mapping = hardware.write_zigzag_inputs(hardware.load_hardware(HW), tmp_path / "in")
    layer = _matmul_layer(64, 32, 16)
    own = zigzag_cost.run(layer, acc, mapping, 3, dump_root=tmp_path)
    again = zigzag_cost.evaluate_mapping(layer, acc, mapping, own["temporal_mapping"],
                                         own["spatial_mapping"], 3, dump_root=tmp_path)
    assert again["latency_cycles"] == own["latency_cycles"]
    assert again["energy_pj"] == own["energy_pj"]
    # Its per-operand traffic sums to the level totals.
    totals: dict[str, int] = {}
    for levels in again["traffic_by_operand"].values():
        for name, (served, taken) in levels.items():
            totals[name] = totals.get(name, 0) + served + taken
    assert totals == own["traffic_bytes"] == again["traffic_bytes"]
    # Every output is written to DRAM at least once and never read from it (no partial sums
    # there on this small layer): one write-allocate fill per output byte at DRAM.
    fills = zigzag_cost.write_allocate_fills(again["traffic_by_operand"], {"l1d", "l2"})
    assert fills["dram"] == 64 * 32 * 4


def test_write_allocate_fills_the_first_write_of_each_output_line():
    # Outputs go reg -> l1d -> l2 -> dram; a partial sum is spilled to l2 once and read back
    # (a fill ZigZag counts), the final outputs are written to DRAM once.
    by_operand = {"I": {"l1d": [400, 0], "l2": [400, 0], "dram": [400, 0]},
                  "O": {"reg_O": [0, 0], "l1d": [100, 200], "l2": [100, 200], "dram": [0, 100]}}
    both = zigzag_cost.write_allocate_fills(by_operand, {"l1d", "l2"})
    # l2 served 100 back of the 200 it took: one first write per output line; DRAM took 100
    # without serving any: 100 more fills.
    assert both == {"l2": 100, "dram": 100}
    assert zigzag_cost.write_allocate_fills(by_operand, {"l1d"}) == {"l2": 100}  # l2 write-through
    assert zigzag_cost.write_allocate_fills(by_operand, set()) == {}


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
