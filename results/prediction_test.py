"""results.prediction on a small hand-made dataset: the factors are fitted on calibration models
alone, the whole-model figures add each dispatch's calls, and stale data fail naming the file;
results.shipped_prediction's choice rows from a hand-made pair of analyses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from results import shipped_prediction as sp
from results import prediction as pr


def _bounds() -> dict:
    def disp(name, kind, measured, bound, calls=1):
        return {"name": name, "kind": kind, "calls": calls, "memory_aware_cycles": measured,
                "bound_cycles": bound, "bound_by": "dram", "vector_share": 0.5}
    return {"pipelines": {
        "cal_a": {"ships": "tuned", "hardware": "riscv_rvv",
                  "dispatches": [disp("a0", "matmul", 200, 100), disp("a1", "copy", 30, 10, calls=2)]},
        "cal_b": {"ships": "tuned", "hardware": "riscv_rvv",
                  "dispatches": [disp("b0", "matmul", 800, 100), disp("b1", "copy", 10, 10)]},
        "held": {"ships": "ukernels", "hardware": "riscv_rvv",
                 "dispatches": [disp("h0", "matmul", 1000, 250), disp("h1", "softmax", 50, 10),
                                disp("h2", "copy", 5, 5, calls=0)]},
    }}


def _data() -> dict:
    def zz(latency):
        return {"zigzag_latency_cycles": latency, "zigzag_measured_terms_cycles": latency // 2,
                "zigzag_energy_measured_terms_pj": 10, "choice_measured_energy_pj": 20}
    return {"shipped": {
        "cal_a": {"ships": "tuned", "split": "calibration", "dispatches": {"a0": zz(100), "a1": {"not_priced": "x"}}},
        "cal_b": {"ships": "tuned", "split": "calibration", "dispatches": {"b0": zz(200), "b1": {"not_priced": "x"}}},
        "held": {"ships": "ukernels", "split": "held_out", "not_priced": "packed"},
    }, "zigzag_candidate": [], "analysis_choice": []}


SPLITS = {"cal_a": "calibration", "cal_b": "calibration", "held": "held_out"}


def test_factors_are_fitted_on_calibration_models_alone():
    rows = pr.dispatch_rows(_bounds(), _data(), SPLITS)
    assert [r["name"] for r in rows] == ["a0", "a1", "b0", "b1", "h0", "h1"]  # calls == 0 left out
    _, factors = pr.predict(rows)
    assert factors["bound"]["matmul"] == pytest.approx(4.0)  # geomean of 2 and 8
    assert factors["zigzag"]["matmul"] == pytest.approx(8 ** 0.5)  # geomean of 2 and 4
    held = _bounds()
    held["pipelines"]["held"]["dispatches"][0]["memory_aware_cycles"] = 10 ** 6
    _, refit = pr.predict(pr.dispatch_rows(held, _data(), SPLITS))
    assert refit == factors  # a held-out measurement moves no factor
    cal = _bounds()
    cal["pipelines"]["cal_a"]["dispatches"][0]["memory_aware_cycles"] = 400
    _, moved = pr.predict(pr.dispatch_rows(cal, _data(), SPLITS))
    assert moved["bound"]["matmul"] != factors["bound"]["matmul"]


def test_predictions_price_every_dispatch_and_fall_back_to_the_fitted_bound():
    rows, factors = pr.predict(pr.dispatch_rows(_bounds(), _data(), SPLITS))
    by = {r["name"]: r for r in rows}
    assert by["a0"]["zigzag_fitted"] == pytest.approx(100 * factors["zigzag"]["matmul"])
    assert by["a1"]["zigzag_fitted"] == by["a1"]["bound_fitted"]  # not a ZigZag layer
    # a kind no calibration model has takes the all-kinds factor
    assert by["h1"]["bound_fitted"] == pytest.approx(10 * factors["bound_all"])
    text = pr.document(_bounds(), _data(), SPLITS)
    assert "| calibration | cal_a | tuned | 260 |" in text  # 200 + 2 calls x 30
    assert "held (ukernels)" in text  # a packed strategy is said to be priced by the bound alone


def test_stale_data_fail_naming_the_file():
    data = _data()
    data["shipped"]["held"]["ships"] = "tuned"
    with pytest.raises(pr.PredictionError, match="shipped_prediction.json: held priced tuned, ships ukernels"):
        pr.dispatch_rows(_bounds(), data, SPLITS)
    data = _data()
    del data["shipped"]["cal_b"]
    with pytest.raises(pr.PredictionError, match="no entry for cal_b"):
        pr.dispatch_rows(_bounds(), data, SPLITS)
    with pytest.raises(pr.PredictionError, match="cal_a collected as calibration, its info says held_out"):
        pr.dispatch_rows(_bounds(), _data(), {**SPLITS, "cal_a": "held_out"})


def _cand(name, generator, measured=None, predicted=None, code=None, tiles=None):
    return {"name": name, "generator": generator, "measured_memory_aware_cycles": measured,
            "predicted_cycles": predicted, "code_model_cycles": code, "tiles": tiles}


def test_the_analysis_choice_rows_price_each_model_over_the_measured_shortlist(tmp_path: Path):
    (tmp_path / "m_pipeline_info.json").write_text(json.dumps({"name": "m", "split": "held_out"}))
    measured = {"schema_version": sp.ANALYSIS_SCHEMA, "dispatches": [{
        "name": "d0", "kind": "matmul", "chosen": "reg", "candidates": [
            _cand("iree-default", "iree-default", 120, predicted=50, code=110),
            _cand("reg", "register-search", 100, predicted=90, code=100),
            _cand("zigzag", "zigzag", 300, predicted=40, code=None),
            _cand("unmeasured", "analytical", None, predicted=1, code=1)]}]}
    predicted = {"schema_version": sp.ANALYSIS_SCHEMA, "dispatches": [{
        "name": "d0", "kind": "matmul", "chosen": "iree-default", "candidates": [
            _cand("iree-default", "iree-default")]}]}
    for target in ("riscv", "riscv512"):
        (tmp_path / f"m_{target}_analysis.analysis.json").write_text(json.dumps(measured))
        (tmp_path / f"m_{target}_predicted_analysis.analysis.json").write_text(json.dumps(predicted))
    rows = sp.analysis_own_choice(tmp_path, ["m"])
    assert len(rows) == 2
    row = rows[0]
    assert row["predicted_choice_measured"] == 120 and row["measured_choice_measured"] == 100
    assert row["by_tile_model_measured"] == 300  # the cheapest predicted among the measured ones
    assert row["by_code_model_measured"] == 100
    cands = sp.zigzag_as_candidate(tmp_path, ["m"])
    assert cands[0]["zigzag_measured"] == 300 and cands[0]["best_measured"] == 100
    (tmp_path / "m_riscv512_predicted_analysis.analysis.json").unlink()
    with pytest.raises(sp.PredictionInputError, match="m_riscv512_predicted_analysis.analysis.json: not built"):
        sp.analysis_own_choice(tmp_path, ["m"])


def test_a_packed_strategy_has_no_analysis_of_its_tiles(tmp_path: Path):
    assert sp.shipped_analysis(tmp_path, "m", "tuned").name == "m_riscv_analysis.analysis.json"
    assert sp.shipped_analysis(tmp_path, "m", "directconv").name == "m_riscv_directconv_analysis.analysis.json"
    assert sp.shipped_analysis(tmp_path, "m", "ukernels") is None


def test_the_oracle_table_reads_every_explorer_report(tmp_path: Path):
    entry = {"accuracy": 0.75, "ci95": [0.5, 1.0]}
    half = {"pairs": 4, "zigzag": entry, "naive": {"accuracy": 1.0, "ci95": [1.0, 1.0]}}
    def variant(l1, measured, predicted):
        return {"settings": [f"l1.size_bytes={l1}"], "measured": {"memory_aware_cycles": measured},
                "measured_terms_cycles": predicted, "zigzag_cycles": predicted, "vector_core_cycles": predicted}
    report = {"validation": {"cycles": {"variants": 24, "all": half, "trade_offs": half, "spearman": 0.5,
                                        "naive_spearman": 0.9}},
              "axes": {"l1.size_bytes": [16384, 65536]},
              "variants": [variant(16384, 100, 50), variant(65536, 80, 50)]}
    (tmp_path / pr.EXPLORE / "resnet").mkdir(parents=True)
    (tmp_path / pr.EXPLORE / "resnet" / "explore.json").write_text(json.dumps(report))
    text = "\n".join(pr.oracle_lines(tmp_path, {"resnet": "calibration"}))
    assert "| calibration | resnet | L1 x L2 x DRAM | cycles | 24 | 4 | 0.75 (0.50-1.00) | 1.00 (1.00-1.00) | 4 |" in text
    # the axis the measurement feels (0.80) and the prediction does not (1.000)
    assert "| calibration | resnet | L1 x L2 x DRAM | l1.size_bytes | 16384 -> 65536 | 0.800 | 1.000 | 1.000 | 1.000 |" in text
    (tmp_path / pr.EXPLORE / "resnet" / "explore.json").write_text(json.dumps({"variants": []}))
    with pytest.raises(pr.PredictionError, match="resnet/explore.json: no validation"):
        pr.oracle_lines(tmp_path, {"resnet": "calibration"})


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
