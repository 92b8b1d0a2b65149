"""host_ranking's per-dispatch figures on hand-made timings (no compiler, no timing)."""

import json
import sys
from types import SimpleNamespace

import pytest

from bench import host_ranking as hr

CANDIDATES = ["iree-default", "a", "b", "c", "d"]


def _ranked(code: list[float], other: list[float] | None = None) -> hr.Priced:
    """The code model's cycles on core "x" (and on core "y" when `other` is given)."""
    priced = {c: {"x": x} for c, x in zip(CANDIDATES, code)}
    for c, y in zip(CANDIDATES, other or ()):
        priced[c]["y"] = y
    return hr.Priced(model="m", dispatch="d0", kind="matmul", split="held_out", code=priced)


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
    assert r["tau_code_retimed"]["x"] == pytest.approx(1.0)
    assert r["tau_code_stored"]["x"] == pytest.approx(-1.0)  # the stored single measurement disagrees
    assert r["code_choice_over_default"]["x"] == pytest.approx(0.2)
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


def test_paired_ratios_cancel_a_drift_between_rounds():
    # In every round default > a > b > c > d by 5% steps, but the machine runs round 1 2x and
    # round 2 4x slower than round 0, and d has one hiccup (1.5x) in round 1. The plain median
    # is robust to one outlier only when the rounds are alike: here it ranks d slowest. The
    # ratios to the default of the same round are [0.8, 1.2, 0.8]: d stays the fastest.
    speed = [1.0, 2.0, 4.0]
    ratio = [1.0, 0.95, 0.9, 0.85, 0.8]
    times = _times([[k * q * 1e-6 for q in ratio] for k in speed])
    times[("m", "d0")]["d"][1] *= 1.5
    [r] = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    assert [p["paired_ratio"] for p in r["points"]] == pytest.approx(ratio)
    assert r["tau_code_paired"]["x"] == pytest.approx(1.0)
    assert r["tau_code_retimed"]["x"] == pytest.approx(0.2)  # d's median, 2.4 us, the slowest
    text = hr.markdown([r], "host_x", ["x"], 3, hr._Machine(cpu="c", llvm_host_cpu="x"), "local-sync")
    # split-half: round 1 alone (the hiccup) against rounds 0 and 2
    assert "| held_out | all | 1 | 1.00 | 0.20 |" in text.split("## Paired")[1]


def test_paired_ratios_need_one_sample_per_round_alike():
    assert hr.paired_ratios({"iree-default": [1.0, 2.0], "a": [1.0]}) is None
    assert hr.paired_ratios({"a": [1.0]}) is None  # nothing to pair with
    assert hr.paired_ratios({"iree-default": [1.0, 2.0, 4.0], "a": [2.0, 2.0, 2.0]}, range(0, 3, 2)) == {
        "iree-default": 1.0, "a": 1.25}


def test_fit_chooses_the_feature_weight_on_the_calibration_split_alone():
    # Measured (paired) the default is slowest and d fastest; the code model prices them the
    # other way round, and a feature (say loads) falls by 10 a candidate: code + w x feature
    # ranks them right once w > 0.1, so the fit takes 0.3. The held-out dispatch, which
    # a smaller weight would rank better, is only evaluated.
    per_round = [[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4
    calibration = hr.Priced(model="m", dispatch="d0", kind="matmul", split="calibration",
                            code={c: {"x": x} for c, x in zip(CANDIDATES, [1, 2, 3, 4, 5])})
    held_out = hr.Priced(model="m", dispatch="d1", kind="matmul", split="held_out",
                         code={c: {"x": x} for c, x in zip(CANDIDATES, [5, 4, 3, 2, 1])})
    times = {("m", "d0"): _times(per_round)[("m", "d0")], ("m", "d1"): _times(per_round)[("m", "d0")]}
    rows = [SimpleNamespace(model="m", dispatch=d, candidate=c, measured_cycles=1.0)
            for d in ("d0", "d1") for c in CANDIDATES]
    results = hr.rank([calibration, held_out], SimpleNamespace(rows=rows), times)
    features = {("m", "d0", c): {"vector_loads": f} for c, f in zip(CANDIDATES, [50, 40, 30, 20, 10])}
    features |= {("m", "d1", c): {"vector_loads": f} for c, f in zip(CANDIDATES, [10, 20, 30, 40, 50])}
    fitted = hr.fit_feature(results, features, "vector_loads", ["x"])
    assert fitted["x"] == pytest.approx({
        "feature": "vector_loads", "weight": 0.3,
        "tau_calibration": 1.0, "tau_calibration_unweighted": -1.0,
        "tau_held_out": -1.0, "tau_held_out_unweighted": 1.0})
    text = hr.markdown(results, "host_x", ["x"], 4, hr._Machine(cpu="c", llvm_host_cpu="x"), "local-sync", fitted)
    assert "| x | vector_loads | 0.3 | -1.00 / 1.00 | 1.00 / -1.00 |" in text
    from common.calibration_schema import CodeModelCalibration

    cal = CodeModelCalibration.model_validate_json(
        hr.calibration_json(fitted, "host_x", 4, "local-sync", hr._Machine(cpu="c", llvm_host_cpu="x")))
    assert (cal.hardware, cal.feature, cal.cycles_per_unit) == ("host_x", "vector_loads", {"x": 0.3})
    assert cal.tau["x"] == pytest.approx({"calibration": 1.0, "held_out": -1.0, "calibration_unweighted": -1.0,
                                          "held_out_unweighted": 1.0})
    with pytest.raises(hr.EvalError, match="--fit spilled_vectors: no calibration dispatch"):
        hr.fit_feature(results, features, "spilled_vectors", ["x"])


def test_markdown_splits_by_dispatch_size():
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4)
    results = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    text = hr.markdown(results, "host_x", ["x"], 4, hr._Machine(cpu="some CPU", llvm_host_cpu="x"),
                       "local-task")
    assert "| held_out | default < 20 us | 1 | 1.00 | -1.00 | -1.00 | 1.00 |" in text
    assert "default >= 20 us" not in text


def test_each_core_priced_is_ranked_on_its_own():
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4)
    [r] = hr.rank([_ranked([5, 4, 3, 2, 1], [1, 2, 3, 4, 5])], _measurements([1, 2, 3, 4, 5]), times)
    assert r["tau_code_retimed"] == {"x": pytest.approx(1.0), "y": pytest.approx(-1.0)}
    assert r["code_choice_over_default"] == {"x": pytest.approx(0.2), "y": pytest.approx(1.0)}
    text = hr.markdown([r], "host_x", ["x", "y"], 4, hr._Machine(cpu="some CPU", llvm_host_cpu="y"),
                       "local-sync")
    assert "timed on some CPU, which LLVM takes for y, HAL device local-sync" in text
    assert "| held_out | all | 1 | 1.00 | -1.00 | -1.00 | 1.00 | -1.00 | 1.00 |" in text


def _code_cost_file(tmp_path, name: str, core: str, code: list[float]):
    path = tmp_path / name
    path.write_text(json.dumps([{"model": "m", "dispatch": "d0", "kind": "matmul", "split": "held_out",
                                 "core": core, "points": [{"candidate": c, "code": x}
                                                          for c, x in zip(CANDIDATES, code)]}]))
    return path


def test_code_costs_of_several_cores_merge_on_the_candidates_all_priced(tmp_path):
    first = _code_cost_file(tmp_path, "a.json", "x", [5, 4, 3, 2, 1])
    second = _code_cost_file(tmp_path, "b.json", "y", [1, 2, 3, 4])  # the last candidate not costed
    cores, [priced] = hr.load_code_costs([first, second])
    assert cores == ["x", "y"]
    assert priced.code == {c: {"x": x, "y": y} for c, x, y in zip(CANDIDATES, [5, 4, 3, 2], [1, 2, 3, 4])}
    with pytest.raises(hr.EvalError, match="core x given twice"):
        hr.load_code_costs([first, first])


def test_timings_of_an_earlier_run_are_ranked_again(tmp_path):
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4)
    results = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    path = tmp_path / "ranking.json"
    path.write_text(json.dumps({"hardware": "host_x", "timed_on": {"cpu": "c", "llvm_host_cpu": "x"},
                                "rounds": 4, "cores": ["x"], "dispatches": results}))
    machine, rounds, device, again = hr.load_timings([path])
    assert (machine.llvm_host_cpu, rounds, device) == ("x", 4, "local-task")  # before --device: local-task
    assert again == times
    path.write_text(json.dumps({"hardware": "host_x", "timed_on": {"cpu": "c", "llvm_host_cpu": "x"},
                                "rounds": 4, "device": "local-sync", "cores": ["x"], "dispatches": results}))
    assert hr.load_timings([path])[2] == "local-sync"
    path.write_text("[]")  # the list an older host_ranking wrote: no machine recorded
    with pytest.raises(hr.EvalError, match="not a host_ranking result"):
        hr.load_timings([path])


def test_runs_of_one_machine_and_device_pool_their_samples(tmp_path):
    def run(name: str, samples: list[float], device: str = "local-sync", cpu: str = "c"):
        path = tmp_path / name
        path.write_text(json.dumps({
            "timed_on": {"cpu": cpu, "llvm_host_cpu": "x"}, "rounds": len(samples), "device": device,
            "dispatches": [{"model": "m", "dispatch": "d0", "points": [
                {"candidate": "a", "median_s": 0, "samples_s": samples}]}]}))
        return path

    first, second = run("1.json", [1.0, 2.0]), run("2.json", [3.0, 4.0, 5.0])
    machine, rounds, device, times = hr.load_timings([first, second])
    assert (rounds, device, times) == (5, "local-sync", {("m", "d0"): {"a": [1.0, 2.0, 3.0, 4.0, 5.0]}})
    with pytest.raises(hr.EvalError, match="task.json: .* not pooled"):
        hr.load_timings([first, run("task.json", [1.0], device="local-task")])
    with pytest.raises(hr.EvalError, match="other.json: timed on other"):
        hr.load_timings([first, run("other.json", [1.0], cpu="other")])


def test_retest_ranks_an_earlier_runs_medians_against_these(tmp_path):
    times = _times([[5e-6, 4e-6, 3e-6, 2e-6, 1e-6]] * 4)
    results = hr.rank([_ranked([5, 4, 3, 2, 1])], _measurements([1, 2, 3, 4, 5]), times)
    earlier = [{"model": "m", "dispatch": "d0", "points": [{"candidate": c, "median_s": s, "samples_s": [s, s]}
                                                           for c, s in zip(CANDIDATES, [1, 2, 3, 4, 5])]}]
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(earlier))  # the bare list an older host_ranking wrote
    hr.add_retest(results, hr.load_earlier_medians(path))
    assert results[0]["tau_retest"] == pytest.approx(-1.0)
    assert results[0]["tau_retest_paired"] == pytest.approx(-1.0)  # earlier ratios 1..5 to the default
    text = hr.markdown(results, "host_x", ["x"], 4, hr._Machine(cpu="c", llvm_host_cpu="x"), "local-task")
    assert "| held_out | all | 1 | 1.00 | -1.00 | -1.00 | 1.00 | -1.00 |" in text
    assert "| held_out | all | 1 | 1.00 | 1.00 | -1.00 |" in text.split("## Paired")[1]
    earlier[0]["points"] = earlier[0]["points"][:4]  # too few candidates timed both times
    path.write_text(json.dumps({"dispatches": earlier}))
    hr.add_retest(results, hr.load_earlier_medians(path))
    assert results[0]["tau_retest"] is None and results[0]["tau_retest_paired"] is None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
