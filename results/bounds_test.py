"""results/bounds.py: per op kind and split from the data; the convolutions below the vector floor."""

from __future__ import annotations

import json
import sys

import pytest

from results import bounds


def _dispatch(name, kind, cycles, bound, vector, calls=1):
    return {"name": name, "kind": kind, "calls": calls, "memory_aware_cycles": cycles,
            "bound_cycles": bound, "bound_by": "fma", "vector_share": vector}


DATA = {"pipelines": {
    "a": {"ships": "tuned", "hardware": "riscv_rvv", "core": "sifive-p670", "memory_aware_cycles": 1000,
          "bound_cycles": 500, "energy_pj": 2_000_000,
          "dispatches": [_dispatch("d0", "matmul", 400, 360, 0.5, calls=2), _dispatch("d1", "depthwise_conv", 200, 20, 0.05)]},
    "b": {"ships": "channelslast", "hardware": "riscv_rvv", "core": "sifive-p670", "memory_aware_cycles": 300,
          "bound_cycles": 150, "energy_pj": 1_000_000,
          "dispatches": [_dispatch("d0", "depthwise_conv", 300, 150, 0.5)]},
}}
SPLITS = {"a": "calibration", "b": "held_out"}


def test_op_kinds_are_summed_per_split_with_calls():
    kinds = bounds.by_kind(DATA, SPLITS)
    assert kinds["calibration"]["matmul"] == {"dispatches": 1, "cycles": 800, "bound": 720}
    assert kinds["held_out"]["depthwise_conv"] == {"dispatches": 1, "cycles": 300, "bound": 150}


def test_the_floor_names_each_scalar_convolution_and_its_weight():
    floor = bounds.below_floor(DATA)
    assert [(r["pipeline"], r["name"]) for r in floor] == [("a", "d1")]
    assert floor[0]["model_share"] == pytest.approx(0.2)


def test_render_says_which_targets_hold():
    text = bounds.render(DATA, SPLITS)
    assert "| matmul | 1 | 800 | 720 | 90.0% | yes |" in text
    assert "| depthwise_conv | 1 | 200 | 20 | 10.0% | no |" in text
    assert "| a | tuned | d1 | depthwise_conv | 5.0% | 10.0% | 20.0% |" in text
    with pytest.raises(bounds.BoundsError, match="pipeline 'b' has no pipeline info"):
        bounds.render(DATA, {"a": "calibration"})


def test_collect_refuses_what_is_not_built(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "a_riscv.manifest.json").write_text(json.dumps({"strategy_choice": {"chosen": "channelslast"}}))
    with pytest.raises(bounds.BoundsError, match="a_riscv_shipped_perf_index.json: not built"):
        bounds.collect(models, ["a"])
    (models / "a_riscv_shipped_perf_index.json").write_text(json.dumps({"tuned": {"perf_json": "models/x.json"}}))
    with pytest.raises(bounds.BoundsError, match="no measurement of the shipped build 'channelslast'"):
        bounds.collect(models, ["a"])


def test_a_quantized_model_is_shown_beside_its_float_twin(tmp_path):
    """Issue 64 item 5: cycles, energy and output error of the int8 model against the f32 one."""
    import numpy as np

    x = np.ones((2, 3), np.float32)
    np.savez(tmp_path / "q.golden.npz", input_0=x, output_0=np.array([1.0, -1.9], np.float32))
    np.savez(tmp_path / "f.golden.npz", input_0=x, output_0=np.array([1.0, -2.0], np.float32))
    infos = [{"name": "a", "model_name": "q", "float_reference": "b"}, {"name": "b", "model_name": "f"}]
    pairs = bounds.quantized_pairs(tmp_path, infos)
    assert pairs["a"]["float_reference"] == "b"
    assert pairs["a"]["outputs"][0]["max_abs_error"] == pytest.approx(0.1, rel=1e-6)
    assert pairs["a"]["outputs"][0]["scale"] == 2.0
    text = bounds.render({**DATA, "quantized": pairs}, SPLITS)
    assert "| a | b | tuned / channelslast | 1,000 / 300 | 3.33x | 2.00 / 1.00 | 2.00x | 5.00% |" in text
    np.savez(tmp_path / "q.golden.npz", input_0=x + 1, output_0=np.array([1.0, -1.9], np.float32))
    with pytest.raises(bounds.BoundsError, match="input_0 is not b's"):
        bounds.quantized_pairs(tmp_path, infos)
    with pytest.raises(bounds.BoundsError, match="float_reference 'c' is not a pipeline"):
        bounds.quantized_pairs(tmp_path, [{"name": "a", "model_name": "q", "float_reference": "c"}])


def test_check_floor_help_and_bad_inputs_are_one_line(tmp_path, capsys):
    """Issue 62, own probe: `--help` was a traceback (argparse read "20% vector" as a format), and a
    missing, empty or zero-byte data file a traceback too."""
    with pytest.raises(SystemExit) as done:
        bounds.main(["--help"])
    assert done.value.code == 0 and "20%" in capsys.readouterr().out
    manifest = tmp_path / "p_riscv.manifest.json"
    manifest.write_text("{}")
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "zero.json").write_text("")
    for name, message in (("missing.json", "missing.json: shipped bounds file not found"),
                          ("empty.json", "empty.json: not a shipped bounds file"),
                          ("zero.json", "zero.json: not a shipped bounds file: not JSON")):
        assert bounds.main(["check-floor", str(tmp_path / name), str(manifest)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("check-floor: ") and message in err[0], err


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


SHIPPED = {"a": {"executables_sha256": {"a.so": "1"}}, "b": {"executables_sha256": {"b.so": "2"}}}
DATA_SHIPPED = {"pipelines": {name: {**p, "executables_sha256": SHIPPED[name]["executables_sha256"]}
                              for name, p in DATA["pipelines"].items()}}


def test_the_floor_check_fails_on_an_unexplained_scalar_convolution():
    problems = bounds.check_floor(DATA_SHIPPED, SHIPPED, misses={})
    assert problems == ["a d1 (depthwise_conv): 5.0% vector instructions, below the 20% floor, and "
                        "FLOOR_MISSES does not say why"]
    assert bounds.check_floor(DATA_SHIPPED, SHIPPED, misses={("a", "d1"): "what stops it"}) == []


def test_the_floor_check_fails_on_a_stale_explanation():
    problems = bounds.check_floor(DATA_SHIPPED, SHIPPED, misses={("a", "d1"): "x", ("b", "d0"): "y"})
    assert problems == ["b d0: listed in FLOOR_MISSES but not below the floor in "
                        "docs/data/shipped_bounds.json (remove the entry)"]


def test_the_floor_check_fails_on_figures_of_other_executables():
    """The committed figures must be of the bytes each pipeline ships: a tile or strategy change
    that is not re-collected fails here, not silently in the docs."""
    shipped = {**SHIPPED, "b": {"executables_sha256": {"b.so": "3"}}}
    problems = bounds.check_floor(DATA_SHIPPED, shipped, misses={("a", "d1"): "x"})
    assert len(problems) == 1 and problems[0].startswith("b: docs/data/shipped_bounds.json measured other "
                                                         "executables than the manifest ships")
    problems = bounds.check_floor(DATA_SHIPPED, {**SHIPPED, "c": SHIPPED["a"]}, misses={("a", "d1"): "x"})
    assert problems[0].startswith("c: ships, but docs/data/shipped_bounds.json has no figures of it")


def test_the_floor_check_cli(tmp_path, capsys):
    data = tmp_path / "shipped_bounds.json"
    data.write_text(json.dumps(DATA_SHIPPED))
    manifests = []
    for name, m in SHIPPED.items():
        manifests.append(tmp_path / f"{name}_riscv.manifest.json")
        manifests[-1].write_text(json.dumps(m))
    (tmp_path / "a_riscv.vmfb").write_bytes(b"")
    args = ["check-floor", str(data), *map(str, manifests), str(tmp_path / "a_riscv.vmfb")]
    assert bounds.main(args) == 1
    assert "a d1 (depthwise_conv): 5.0% vector instructions" in capsys.readouterr().out
    assert bounds.main(["check-floor", str(data), str(tmp_path / "a_riscv.vmfb")]) == 2


def _with_a(*dispatches):
    return {"pipelines": {**DATA["pipelines"], "a": {**DATA["pipelines"]["a"], "dispatches": list(dispatches)}}}


# Every kind at its target: a's matmul 720 of 800 (90%), depthwise conv 100 of 200 (50%).
KINDS_MET = _with_a(_dispatch("d0", "matmul", 400, 360, 0.5, calls=2), _dispatch("d1", "depthwise_conv", 200, 100, 0.5))


def test_the_kind_check_fails_on_an_unexplained_miss_and_a_stale_explanation():
    assert bounds.check_kinds(KINDS_MET, SPLITS, misses={}) == []
    low = _with_a(_dispatch("d0", "matmul", 400, 200, 0.5, calls=2), _dispatch("d1", "depthwise_conv", 200, 20, 0.05))
    assert bounds.check_kinds(low, SPLITS, misses={}) == [
        "calibration matmul: 50.0% of its bound, below the 80% target, and KIND_MISSES does not say why",
        "calibration depthwise_conv: 10.0% of its bound, below the 30% target, and KIND_MISSES does not say why"]
    explained = {("calibration", "matmul"): "x", ("calibration", "depthwise_conv"): "y"}
    assert bounds.check_kinds(low, SPLITS, misses=explained) == []
    assert bounds.check_kinds(KINDS_MET, SPLITS, misses=explained) == [
        f"calibration {k}: listed in KIND_MISSES but at or above its target in docs/data/shipped_bounds.json "
        "(remove the entry)" for k in ("depthwise_conv", "matmul")]
    worst = bounds.below_target(low, SPLITS)[0]["worst"]
    assert [(d["pipeline"], d["name"]) for d in worst] == [("a", "d0")]


def test_the_report_names_each_missed_kind_with_its_worst_dispatches():
    low = _with_a(_dispatch("d0", "matmul", 400, 200, 0.5, calls=2))
    text = bounds.render(low, SPLITS)
    assert "- **calibration matmul**, 50.0% of its bound (target 80%). Furthest above it: a d0 50.0% (400 over)." in text


def test_the_kind_check_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bounds, "KIND_MISSES", {})
    data = tmp_path / "shipped_bounds.json"
    data.write_text(json.dumps(KINDS_MET))
    infos = []
    for name, split in SPLITS.items():
        infos.append(tmp_path / f"{name}_pipeline_info.json")
        infos[-1].write_text(json.dumps({"name": name, "split": split}))
    assert bounds.main(["check-kinds", str(data), *map(str, infos)]) == 0
    assert bounds.main(["check-kinds", str(data), str(infos[0])]) == 1
    assert "pipeline 'b' has no pipeline info" in capsys.readouterr().out


def test_nan_in_committed_data_is_refused_naming_the_file(tmp_path):
    """Issue 80, BAD 8: NaN in report data was rendered as `nanx (nan-nan)` and the tool exited 0."""
    from common.files import InputError

    data = tmp_path / bounds.DATA
    data.parent.mkdir(parents=True)
    data.write_text('{"pipelines": {"mlp": {"ratio": NaN}}}')
    with pytest.raises(InputError, match="NaN is not a JSON number") as err:
        bounds.documents(tmp_path, {})
    assert str(data) in str(err.value)


def test_data_of_the_wrong_type_is_refused_naming_the_file(tmp_path):
    """Issue 80: a list where an object is expected was a 19-line traceback."""
    from common.files import InputError

    data = tmp_path / bounds.DATA
    data.parent.mkdir(parents=True)
    data.write_text("[1, 2]")
    with pytest.raises(InputError, match="an array, not an object") as err:
        bounds.documents(tmp_path, {})
    assert str(err.value).startswith(f"{data}: ")
    # A value inside of the wrong type is named by the data its document is rendered from.
    from results import report

    data.write_text(json.dumps({"pipelines": {"mlp": [1]}}))
    with pytest.raises(report.ReportError, match="data of an unexpected shape") as err:
        report._rendered(str(data), lambda: bounds.documents(tmp_path, {"mlp": "calibration"}))
    assert str(err.value).startswith(f"{data}: ")
    # peers' data likewise (its own reader named no type either)
    from peers import report as peers_report

    gemm = tmp_path / "gemm.json"
    gemm.write_text("[1, 2]")
    with pytest.raises(peers_report.ReportError, match=f"^{gemm}: .*an array, not an object"):
        peers_report._load(gemm)
