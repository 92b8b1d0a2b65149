"""The calibration's fit, cross-validation and choice rule on synthetic measurements whose
true cost model is known (no compiler, no timing)."""

import os
import random
from pathlib import Path

import pytest

from analysis.cost_model import FEATURES
from bench import calibrate

TRUE = {f: 0.0 for f in FEATURES} | {"vector_ops": 1.0, "fma_stall": 0.5, "register_steps": 3.0,
                                      "gathered_loads": 0.25}


def _rows(models=("a", "b", "c"), dispatches=4, candidates=5, seed=0, kind="matmul", true=TRUE):
    rng = random.Random(seed)
    rows = []
    for model in models:
        for d in range(dispatches):
            for c in range(candidates):
                feats = {f: float(rng.randint(0, 1000)) for f in FEATURES}
                rows.append({"model": model, "split": "calibration", "dispatch": f"{kind}{d}",
                             "kind": kind, "candidate": "iree-default" if c == 0 else f"c{c}",
                             "features": feats,
                             "measured_cycles": sum(true[f] * feats[f] for f in FEATURES)})
    return rows


def test_fit_recovers_the_true_coefficients():
    fitted = calibrate.fit(_rows())
    for f in FEATURES:
        assert fitted.pooled[f] == pytest.approx(TRUE[f], abs=1e-3), f
        assert fitted.for_kind("matmul")[f] == pytest.approx(TRUE[f], abs=1e-3), f


def test_each_kind_with_enough_measurements_gets_its_own_coefficients():
    # broadcasts cost what matmuls do not; pooling has too few rows for a fit of its own
    streaming = {f: 0.0 for f in FEATURES} | {"register_steps": 2.0, "l1_fill": 1.0}
    rows = _rows() + _rows(kind="broadcast", true=streaming, seed=1) + \
        _rows(dispatches=1, candidates=3, kind="pooling", seed=2)
    assert len([r for r in rows if r["kind"] == "pooling"]) < calibrate.MIN_ROWS_PER_KIND
    fitted = calibrate.fit(rows)
    assert sorted(fitted.by_kind) == ["broadcast", "matmul"]
    assert fitted.for_kind("pooling") == fitted.pooled
    for f in FEATURES:
        assert fitted.for_kind("matmul")[f] == pytest.approx(TRUE[f], abs=1e-3), f
        assert fitted.for_kind("broadcast")[f] == pytest.approx(streaming[f], abs=1e-3), f
    # each kind ranks exactly with its own coefficients; the pooled fit alone does not
    ev = calibrate.evaluate([r for r in rows if r["kind"] != "pooling"], fitted, margin=0.0)
    assert all(d["kendall_tau"] == pytest.approx(1.0) for d in ev["dispatches"])
    pooled = calibrate.evaluate(rows, calibrate.Fitted(fitted.pooled, {}), margin=0.0)
    assert min(d["kendall_tau"] for d in pooled["dispatches"]) < 1.0


def test_exact_model_ranks_perfectly_and_picks_the_measured_best():
    rows = _rows()
    ev = calibrate.evaluate(rows, calibrate.fit(rows), margin=0.0)
    for d in ev["dispatches"]:
        assert d["kendall_tau"] == pytest.approx(1.0)
        assert d["chosen"] == d["best_measured"]
        assert d["chosen_over_default_measured"] <= 1.0


def test_margin_keeps_the_default_unless_predicted_that_much_cheaper():
    rows = _rows()
    ev = calibrate.evaluate(rows, calibrate.fit(rows), margin=0.99)
    assert all(d["chosen"] == "iree-default" for d in ev["dispatches"])


def test_cross_validation_never_prices_a_model_with_its_own_rows(monkeypatch):
    rows = _rows()
    seen = []
    real_fit = calibrate.fit
    monkeypatch.setattr(calibrate, "fit", lambda rs: seen.append({r["model"] for r in rs})
                        or real_fit(rs))
    folds = calibrate._folds(rows)
    assert seen == [{"b", "c"}, {"a", "c"}, {"a", "b"}]
    assert [{r["model"] for r in test} for _, test in folds] == [{"a"}, {"b"}, {"c"}]
    # an exact model stays exact out of sample: the margin chosen (the largest of the ties)
    # loses nothing against always taking the cheapest prediction
    margin = calibrate.choose_margin(folds)
    assert margin in calibrate.MARGINS

    def worst(m):
        return max(calibrate.summed_by_model(calibrate.cross_validate(folds, m)).values())
    assert worst(margin) == pytest.approx(worst(0.0))
    assert worst(0.0) < 1.0 == worst(0.99)


def test_margin_protects_the_model_a_wrong_fit_would_slow_down():
    # Model "c" measures the opposite of the others: whatever the others teach, its choices
    # lose; only a margin that switches nothing keeps c at IREE's default.
    rows = _rows()
    for r in rows:
        if r["model"] == "c" and r["candidate"] != "iree-default":
            r["measured_cycles"] *= 50
    assert calibrate.choose_margin(calibrate._folds(rows)) == calibrate.MARGINS[-1]


def test_too_few_measurements_or_models_are_refused():
    with pytest.raises(calibrate.CalibrationError, match="too few"):
        calibrate.fit(_rows(models=("a",), dispatches=1, candidates=2))
    with pytest.raises(calibrate.CalibrationError, match="two calibration models"):
        calibrate._folds(_rows(models=("a",)))


def test_margin_is_judged_by_the_whole_model_not_the_mean_dispatch():
    # In model "c" one dispatch carries almost all the cycles and its switch loses 3x; its
    # other dispatches' switches win. A mean over dispatches would switch; the model slows.
    rows = _rows()
    for r in rows:
        if (r["model"], r["dispatch"]) == ("c", "matmul0"):
            r["features"] = {f: v * 1000 for f, v in r["features"].items()}
            r["measured_cycles"] *= 1000 * (3 if r["candidate"] != "iree-default" else 1)
    folds = calibrate._folds(rows)
    eager = calibrate.cross_validate(folds, 0.0)
    assert calibrate._geomean_chosen(eager) < 1 < calibrate.summed_by_model(eager)["c"]
    margin = calibrate.choose_margin(folds)
    assert max(calibrate.summed_by_model(calibrate.cross_validate(folds, margin)).values()) <= 1



@pytest.mark.parametrize("name,measure", [("riscv_rvv", "riscv-model-cycles"), ("host", "host-time")])
def test_a_riscv_core_is_measured_in_model_cycles_the_host_is_timed(tmp_path, name, measure):
    # host.yaml names an x86 core model too (the static code model prices the host's code on
    # it), but host candidates are timed, never run under qemu.
    hardware = Path(os.environ["CALIBRATE_TEST_HARDWARE_DIR"]) / f"{name}.yaml"
    m = calibrate.Measurer(hardware, tmp_path / "t.yaml", tmp_path / "runner", tmp_path / "plugin", tmp_path,
                           tmp_path / "qemu", tmp_path / "llvm")
    assert m.measure == measure

if __name__ == "__main__":
    import sys

    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def _measured_choice_analysis(hardware: str, core: str) -> str:
    """A riscv analysis as choice.tune writes it: two candidates of one dispatch measured, a
    third shortlisted one failed (no cycles)."""
    from common.analysis_schema import Analysis

    def cand(name, reg, cycles):
        return {"name": name, "generator": "search", "predicted_cycles": 1.0, "reason": "t",
                "tiles": {"register": [1, reg, 1], "l1": [4, 8, 8], "l2": [4, 8, 8]},
                "features": {f: 1.0 for f in FEATURES}, "measured_model_cycles": cycles}
    loops = [{"name": f"d{i}", "bound": 8, "kind": k}
             for i, k in enumerate(("parallel", "parallel", "reduction"))]
    return Analysis.model_validate({
        "model": "m", "target": "riscv_rvv", "hardware": hardware, "hardware_sha256": "0" * 64,
        "vector_lanes_f32": 4,
        "measured_choice": {"hardware": hardware, "core": core, "candidates_per_dispatch": 3,
                            "dispatches": 1, "measured": 2, "failed": 1},
        "dispatches": [{"name": "d_matmul", "executable": "e", "root_op": "linalg.matmul",
                        "kind": "matmul", "loops": loops, "operands": [], "signature": "s",
                        # The chosen candidate's tiles, as choice.tune writes them (issue 62's schema
                        # check: tiles None here, IREE's default, contradicted chosen "ab").
                        "provenance": "search", "reason": "r",
                        "tiles": {"register": [1, 4, 1], "l1": [4, 8, 8], "l2": [4, 8, 8]},
                        "cost": {"latency_cycles": 1.0, "model": "tile-cost:uncalibrated"},
                        "candidates": [cand("iree-default", 8, 500), cand("ab", 4, 400),
                                       cand("abc", 2, None)],
                        "chosen": "ab"}],
        "summary": {"dispatches": 1, "distinct_ops": 1, "zigzag": 0, "analytical": 0,
                    "iree_default": 0, "search": 1}}).model_dump_json()


def test_measured_choices_become_rows_and_never_replace_a_calibration_measurement(tmp_path):
    from bench.artifacts import PipelineInfo

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m_riscv_analysis.analysis.json").write_text(
        _measured_choice_analysis("riscv_rvv", "sifive-p670"))
    info = PipelineInfo(name="m", model_name="m", module="x", framework="torch", split="held_out")
    rows = calibrate.measured_choice_rows([info], tmp_path, "riscv_rvv", "sifive-p670")
    assert [(r["candidate"], r["measured_cycles"], r["split"]) for r in rows] == \
        [("iree-default", 500.0, "held_out"), ("ab", 400.0, "held_out")]
    own = dict(rows[0], measured_cycles=510.0, source=None)
    merged = calibrate.merge_rows([own], rows)
    assert [(r["candidate"], r["measured_cycles"]) for r in merged] == \
        [("iree-default", 510.0), ("ab", 400.0)]
    # measured on another core, or not there: refused, naming the file
    with pytest.raises(calibrate.CalibrationError, match="m_riscv_analysis.analysis.json: not a "
                       "measured choice on riscv_rvv"):
        calibrate.measured_choice_rows([info], tmp_path, "riscv_rvv", "sifive-x280")
    with pytest.raises(calibrate.CalibrationError, match="n_riscv_analysis.analysis.json: analysis file not found"):
        calibrate.measured_choice_rows([PipelineInfo("n", "n", "x", "torch", "calibration")],
                                       tmp_path, "riscv_rvv", "sifive-p670")
    (tmp_path / "models" / "m_riscv_analysis.analysis.json").write_text("{}")
    with pytest.raises(calibrate.CalibrationError, match="m_riscv_analysis.analysis.json: malformed analysis at"):
        calibrate.measured_choice_rows([info], tmp_path, "riscv_rvv", "sifive-p670")
