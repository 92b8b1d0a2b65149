"""results/memory.py renders the docs' memory tables from committed data: on a small
hand-made dataset the win counts, ZigZag ratios and per-model ratios are the arithmetic's."""

from __future__ import annotations

import sys

import pytest

from results import memory as mr


def _cand(name, generator, model, memory, energy, traffic):
    return {"name": name, "generator": generator, "model_cycles": model, "memory_aware_cycles": memory,
            "energy_pj": energy, "traffic_bytes": traffic}


DATA = {"models": {
    "a": {"split": "calibration", "dispatches": [{
        "name": "d0_matmul", "kind": "matmul", "chosen": "zigzag", "predicted_choice": "iree-default",
        "zigzag": {"latency_cycles": 90.0, "energy_pj": 10.0,
                   "traffic_bytes": {"l1d": 3000, "l2": 200, "dram": 100}},
        "candidates": [
            _cand("iree-default", "iree-default", 100, 200, 20.0, {"l1d": 1000, "l2": 400, "dram": 400}),
            # cheapest by model cycles, dearest on the memory hierarchy
            _cand("iree-default+reg4x4v", "iree-default", 80, 250, 30.0, {"l1d": 1000, "l2": 900, "dram": 800}),
            _cand("zigzag", "zigzag", 95, 150, 12.0, {"l1d": 1000, "l2": 100, "dram": 100})]}]},
    "b": {"split": "held_out", "dispatches": [{
        "name": "d0_generic", "kind": "elementwise", "chosen": "iree-default",
        "predicted_choice": "iree-default", "zigzag": None,
        "candidates": [
            _cand("iree-default", "iree-default", 10, 20, 2.0, {"l1d": 10, "l2": 10, "dram": 10}),
            _cand("search", "search", 12, 25, 3.0, {"l1d": 10, "l2": 10, "dram": 10})]}]},
}}


def test_wins_by_each_rule():
    w = mr.wins(DATA)
    cal = w["calibration"]
    assert cal["predicted"]["IREE default"] == 1
    assert cal["model cycles"]["default + register/alignment"] == 1
    assert mr.source("zigzag+reg8x2v", "search") == "ZigZag + register/alignment"
    assert mr.source("iree-default+aligned", "search") == "default + register/alignment"
    assert cal["memory-aware cycles"]["ZigZag"] == 1
    assert w["held_out"]["memory-aware cycles"]["IREE default"] == 1


def test_zigzag_ratios_only_for_contractions_it_was_measured_on():
    (row,) = mr.zigzag_rows(DATA)
    assert row["ratios"] == {"l1d": 3.0, "l2": 2.0, "dram": 1.0}
    assert (row["predicted_latency"], row["memory_aware_cycles"]) == (90.0, 150)


def test_render_has_the_per_model_ratios():
    md = mr.render(DATA)
    assert "| a | calibration | 1 | 0.950 | 0.750 | 0.600 |" in md
    assert "| b | held_out | 1 | 1.000 | 1.000 | 1.000 |" in md
    assert "| calibration | dram | 1 | 1.00 | 1 (100%) |" in md


def test_attribution_compares_the_same_dispatches_by_each_predictor():
    ranking = {"dispatches": [{"model": "a", "dispatch": "d0_matmul", "candidates_priced": [
        {"name": "zigzag", "measured_traffic_bytes": {"l1d": 1000, "l2": 100, "dram": 100},
         "zigzag_forced_traffic_bytes": {"l1d": 1000, "l2": 400, "dram": 120},
         "zigzag_allocated_traffic_bytes": {"l1d": 2000, "l2": 100, "dram": 100}}]}]}
    lines = mr.attribution_lines(mr.zigzag_rows(DATA), ranking)
    assert "| calibration | l1d | 1 | 0% (median 3.00) | 100% (median 1.00) | 0% (median 2.00) |" in lines
    assert "| calibration | l2 | 1 | 0% (median 2.00) | 0% (median 4.00) | 100% (median 1.00) |" in lines
    assert not any(line.startswith("| held_out") for line in lines)


def test_write_allocate_columns():
    levels = lambda l1, l2, dram: {"l1d": l1, "l2": l2, "dram": dram}
    traffic = {"dispatches": [
        {"split": "held_out", "simulated": levels(100, 100, 300),
         "own_mapping": {"zigzag": levels(100, 50, 100), "zigzag_write_allocate": levels(100, 90, 250)},
         "compiled_tiles": {"zigzag": levels(300, 100, 100), "zigzag_write_allocate": levels(300, 100, 200)}},
        {"split": "held_out", "error": "ZigZag failed: ..."}]}
    lines = mr.write_allocate_lines(traffic)
    assert "(1 ZigZag could not price left out)" in lines[1]
    assert "| held_out | dram | 1 | 0% (0.33) | 100% (0.83) | 0% (0.33) | 100% (0.67) |" in lines
    assert "| held_out | l1d | 1 | 100% (1.00) | 100% (1.00) | 0% (3.00) | 0% (3.00) |" in lines


def test_sweeps_render_as_perf_sweep_reports_them():
    row = {"variant": "l1_16k", "vector_bits": 128, "l1_kib": 16, "l2_kib": 256, "dram_bytes_per_cycle": 2,
           "peak_macs_per_cycle": 8, "core_model": "sifive-p670", "predicted_cycles": 1e6,
           "predicted_energy_pj": None, "instructions": 2e6, "model_cycles": 1e6, "memory_aware_cycles": 2e6,
           "energy_pj": 4e6, "mac_utilization": 0.5, "tiles_changed": 0, "configs_applied": 3,
           "calibrated": True}
    bigger = dict(row, variant="l1_64k", l1_kib=64, memory_aware_cycles=1.5e6, energy_pj=3e6, tiles_changed=2)
    rank = {k: {"n": 2, "rho": 1.0} for k in ("predicted_vs_memory_aware_cycles", "predicted_vs_measured_energy",
                                               "predicted_vs_model_cycles", "predicted_vs_instructions")}
    md = mr.render(DATA, None, {"toy_sweep": {"model": "toy", "variants": [row, bigger], "ranking": rank}})
    assert "## 4. Sweeps that see memory" in md and "### toy_sweep: toy" in md
    assert "| l1_64k | 128 | 64 | 256 | 2 | 8 | sifive-p670 | 1.000M | - | 2.000M | 1.000M | 1.500M | 3.000 uJ | " \
           "0.750 | 0.750 | 50.0% | 2 | 3 |" in md
    # What a resource buys: only pairs that differ in it alone (l1_16k and l1_64k differ in L1).
    assert "| L1 | 16 KiB | 64 KiB | 1 | 0.750 [0.750, 0.750] | 0.750 [0.750, 0.750] |" in md
    assert "| L2 |" not in md and "| DRAM bandwidth |" not in md


def test_a_resource_is_priced_over_the_pairs_that_differ_in_it_alone():
    base = {"l1_kib": 16, "l2_kib": 256, "dram_bytes_per_cycle": 2, "memory_aware_cycles": 100, "energy_pj": 10}
    variants = [base, dict(base, l1_kib=32, memory_aware_cycles=90, energy_pj=9),
                dict(base, dram_bytes_per_cycle=8, memory_aware_cycles=50, energy_pj=10),
                dict(base, l1_kib=32, dram_bytes_per_cycle=8, memory_aware_cycles=40, energy_pj=8)]
    lines = mr.resource_lines(variants)
    l1 = next(line for line in lines if line.startswith("| L1 |"))
    assert l1.startswith("| L1 | 16 KiB | 32 KiB | 2 | 0.849 [0.800, 0.900] |")  # sqrt(0.9 * 0.8)
    dram = next(line for line in lines if line.startswith("| DRAM bandwidth |"))
    assert dram.startswith("| DRAM bandwidth | 2 B/cycle | 8 B/cycle | 2 | 0.471 [0.444, 0.500] |")


def test_the_committed_doc_regenerates_from_the_committed_data():
    """docs/results_memory.md is exactly what `bazel run //tools:report` writes from
    docs/data/ (runfiles of this test): no figure in it is typed by hand."""
    from pathlib import Path

    root = Path(__file__).absolute().parent.parent
    assert (root / mr.RANKING).is_file() and (root / mr.TRAFFIC).is_file()  # rendered when present
    assert mr.documents(root) == {mr.OUT: (root / mr.OUT).read_text()}, \
        "docs/results_memory.md differs from what its data renders: run `bazel run //tools:report`"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
