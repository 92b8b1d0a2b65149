"""perf/sweep.py: ZigZag's own prediction of each variant (its best mapping of each dispatch it
maps) is summed with the dispatches' calls, set beside the measured figures of the same
dispatches, and ranked against them."""

from __future__ import annotations

import sys
from types import SimpleNamespace as NS

import pytest

from perf import sweep


def _run(memory_cycles: int | None, energy: float, calls: int = 2):
    memory = None if memory_cycles is None else NS(cycles=memory_cycles, energy_pj=energy)
    return NS(dispatches=[NS(name="d0_matmul", calls=calls, memory=memory),
                          NS(name="d1_generic", calls=1, memory=memory)])


def test_zigzag_figures_cover_the_dispatches_it_mapped_times_their_calls():
    analysis = NS(dispatches=[NS(name="d0_matmul", zigzag={"latency_cycles": 10.0, "energy_pj": 3.0}),
                              NS(name="d1_generic", zigzag=None)])
    z = sweep.zigzag_figures(analysis, _run(100, 7.0))
    assert z == {"zigzag_dispatches": 1, "zigzag_cycles": 20.0, "zigzag_energy_pj": 6.0,
                 "zigzag_measured_memory_aware_cycles": 200, "zigzag_measured_energy_pj": 14.0}
    # No core model: nothing measured to set beside it.
    z = sweep.zigzag_figures(analysis, _run(None, 0.0))
    assert z["zigzag_cycles"] == 20.0 and z["zigzag_measured_memory_aware_cycles"] is None


def _row(name: str, l1: int, zigzag: float, measured: float) -> dict:
    return {"variant": name, "hardware": name, "vector_bits": 128, "l1_kib": l1, "l2_kib": 256,
            "dram_bytes_per_cycle": 2, "cores": 1, "peak_macs_per_cycle": 8, "core_model": "sifive-p670",
            "predicted_cycles": 1e6, "predicted_energy_pj": None, "calibrated": False,
            "instructions": 2e6, "model_cycles": 1e6, "memory_aware_cycles": measured * 2,
            "energy_pj": 4e6, "mac_utilization": 0.5, "tiles": {}, "configs_applied": 1,
            "zigzag_dispatches": 3, "zigzag_cycles": zigzag, "zigzag_energy_pj": zigzag * 10,
            "zigzag_measured_memory_aware_cycles": measured, "zigzag_measured_energy_pj": measured * 10}


def test_zigzag_ranks_the_variants_against_the_same_dispatches_measured():
    rows = [_row("l1_16k", 16, 3e6, 5e6), _row("l1_32k", 32, 2e6, 4e6), _row("l1_64k", 64, 1e6, 4.5e6)]
    result = sweep.sweep("toy", rows)
    rk = result["ranking"]
    assert rk["zigzag_vs_memory_aware_cycles"] == {"n": 3, "rho": 0.5}
    md = sweep.markdown(result)
    assert "| l1_32k | 3 | 2.000M | 4.000M | 20.000 uJ | 40.000 uJ |" in md
    assert "- ZigZag cycles vs memory-aware cycles of the same dispatches: rho 0.50 over 3 variants" in md


def test_a_sweep_written_before_zigzag_was_ranked_still_renders():
    rows = [_row("a", 16, 1, 1), _row("b", 32, 2, 2)]
    result = sweep.sweep("toy", rows)
    for k in [k for k in result["ranking"] if k.startswith("zigzag_")]:
        del result["ranking"][k]
    md = sweep.markdown(result)
    assert "ZigZag's ranking" not in md and "Predicted vs measured ranking" in md


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
