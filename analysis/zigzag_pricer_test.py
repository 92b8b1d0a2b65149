"""analysis.zigzag_pricer's vector-core L1 traffic: what the vector core loads from and stores to L1
for given tiles, by hand on a matmul, a strided convolution and a ragged tile; and on_vector_core
puts it in place of ZigZag's L1 traffic and prices it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from analysis.dispatches import LoopNest
from analysis.zigzag_pricer import latency_on_measured_terms, on_vector_core, vector_core_l1_bytes
from common import hardware as hwmod

HW = hwmod.load_hardware(Path(__file__).resolve().parent / "hardware" / "riscv_rvv.yaml")


def _matmul(m: int, n: int, k: int) -> LoopNest:
    loops = (("d0", m, "parallel"), ("d1", n, "parallel"), ("d2", k, "reduction"))
    operands = (("input", "(d0, d1, d2) -> (d0, d2)", "f32", (m, k)),
                ("input", "(d0, d1, d2) -> (d2, d1)", "f32", (k, n)),
                ("output", "(d0, d1, d2) -> (d0, d1)", "f32", (m, n)))
    terms = ((((0, 1),), ((2, 1),)), (((2, 1),), ((1, 1),)), (((0, 1),), ((1, 1),)))
    return LoopNest(loops, operands, (), terms)


def test_a_matmul_loads_its_inputs_per_step_and_its_accumulators_per_l1_reduction_tile():
    nest = _matmul(64, 64, 64)
    read, written = vector_core_l1_bytes(nest, {"register": [8, 8, 1], "l1": [32, 32, 16], "l2": [64, 64, 64]})
    steps = 8 * 8 * 64  # register tiles of 8 x 8 x 1
    inputs = (8 * 1 + 1 * 8) * 4 * steps  # an 8-row column of A and an 8-wide row of B per step
    accumulators = 8 * 8 * 4 * (8 * 8 * 4)  # per output register tile, once per 16-deep L1 tile of k
    assert (read, written) == (inputs + accumulators, accumulators)
    # A deeper L1 tile of k keeps the accumulators in registers longer: fewer loads and stores.
    deeper = vector_core_l1_bytes(nest, {"register": [8, 8, 1], "l1": [32, 32, 64], "l2": [64, 64, 64]})
    assert deeper == (inputs + accumulators // 4, accumulators // 4)


def test_a_strided_window_loads_one_element_per_index_and_a_ragged_tile_counts_whole():
    # out[oh] += in[2 * oh + kh] * w[kh]: oh 8 (register tile 4), kh 3 (register tile 3)
    loops = (("d0", 8, "parallel"), ("d1", 3, "reduction"))
    operands = (("input", "(d0, d1) -> (d0 * 2 + d1)", "f32", (17,)),
                ("input", "(d0, d1) -> (d1)", "f32", (3,)),
                ("output", "(d0, d1) -> (d0)", "f32", (8,)))
    terms = ((((0, 2), (1, 1)),), (((1, 1),),), (((0, 1),),))
    nest = LoopNest(loops, operands, (), terms)
    read, written = vector_core_l1_bytes(nest, {"register": [4, 3], "l1": [8, 3], "l2": [8, 3]})
    # Per step (2 of them): the window spans 2 * 3 + 2 + 1 = 9 inputs (at most 4 * 3), 3 weights.
    assert read == 2 * (9 + 3) * 4 + 2 * 4 * 4 and written == 2 * 4 * 4
    ragged = vector_core_l1_bytes(nest, {"register": [3, 3], "l1": [8, 3], "l2": [8, 3]})
    assert ragged[1] == 3 * 3 * 4  # ceil(8 / 3) = 3 output tiles of 3, the last one short


def test_tiles_of_another_nest_are_refused():
    with pytest.raises(ValueError, match="one size per loop"):
        vector_core_l1_bytes(_matmul(8, 8, 8), {"register": [8, 8], "l1": [8, 8, 8], "l2": [8, 8, 8]})


def test_on_vector_core_replaces_the_l1_traffic_and_prices_it():
    l1 = HW.level("l1").name
    result = {"latency_cycles": 1.0, "traffic_served_taken_bytes": {
        l1: [16_000_000, 16_000_000], "l2": [64_000, 0], "dram": [64_000, 0]}}
    macs = 1_000_000
    core = on_vector_core(result, HW, macs, (160_000, 0))
    assert core["traffic_served_taken_bytes"][l1] == [160_000, 0]
    assert core["traffic_served_taken_bytes"]["l2"] == [64_000, 0]
    assert result["traffic_served_taken_bytes"][l1] == [16_000_000, 16_000_000]  # the input is left alone
    # ZigZag's L1 traffic would take 2M cycles at 16 B/cycle; the vector core's leaves the MACs in front.
    assert latency_on_measured_terms(result, HW, macs) == 2_000_000
    assert core["latency_cycles"] == latency_on_measured_terms(core, HW, macs) < 2_000_000
    assert core["latency_cycles"] >= macs / HW.macs_per_cycle


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
