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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
