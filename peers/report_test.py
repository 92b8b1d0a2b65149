"""peers/report.py: the committed tables regenerate byte for byte from committed data, and
missing or inconsistent data fails instead of leaving a gap (per op, milestone 1; per model
against ONNX Runtime, milestone 2)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from peers import report
from peers.conv_shapes import CONV_SHAPES
from peers.shapes import SHAPES

ROOT = Path(__file__).absolute().parent.parent


def test_the_committed_table_and_doc_regenerate_byte_for_byte():
    data = report.build(ROOT)
    models = report.build_models(ROOT)
    convs = report.build_convs(ROOT)
    assert (ROOT / report.OUT_JSON).read_text() == json.dumps(data, indent=1) + "\n"
    assert (ROOT / report.OUT_MODELS_JSON).read_text() == json.dumps(models, indent=1) + "\n"
    assert (ROOT / report.OUT_CONVS_JSON).read_text() == json.dumps(convs, indent=1) + "\n"
    assert (ROOT / report.OUT_MD).read_text() == report.markdown(data, models, convs)


def test_every_convolution_has_both_peers_and_what_ships():
    convs = report.build_convs(ROOT)
    assert [o["key"] for o in convs["ops"]] == [s.key for s in CONV_SHAPES]
    assert {o["split"] for o in convs["ops"]} == {"calibration", "held_out"}
    for o in convs["ops"]:
        assert set(o["tools"]) == {*report.CONV_PEERS, "iree-shipped"}
        for t in o["tools"].values():
            assert 0 < t["memory_aware_fma_peak_share"] <= 1


def test_a_convolution_whose_dispatch_the_model_no_longer_ships_is_an_error(tmp_path):
    """A refresh that changes what a model ships renames its dispatches: the table must not
    silently compare another one."""
    root = _copy(tmp_path)
    model = CONV_SHAPES[0].model
    _ship_without(root, model, CONV_SHAPES[0].dispatches[-1])
    with pytest.raises(report.ReportError, match=f"{model} ships no dispatch"):
        report.build_convs(root)


def test_every_gemm_has_what_the_model_ships_whatever_its_strategy():
    """The shipped column is the shipped build's dispatches, not the tuned build's tile record:
    mlp_batch32 ships data tiling, whose mmt4d dispatch and activation packing it sums."""
    data = report.build(ROOT)
    bounds = json.loads((ROOT / report.SHIPPED_BOUNDS).read_text())["pipelines"]
    for o, s in zip(data["ops"], SHAPES):
        shipped = o["tools"][report.SHIPPED]
        assert o["iree_ships"] == bounds[s.model]["ships"]
        by_name = {d["name"]: d["memory_aware_cycles"] for d in bounds[s.model]["dispatches"]}
        assert shipped["memory_aware_cycles"] == sum(by_name[d] for d in s.shipped)
    batch32 = next(o for o in data["ops"] if o["model"] == "mlp_batch32")
    assert batch32["iree_ships"] == "datatiling"
    assert batch32["tools"][report.SHIPPED]["memory_aware_cycles"] != batch32["tools"]["iree-tuned"]["memory_aware_cycles"]


def test_a_gemm_whose_dispatch_the_model_no_longer_ships_is_an_error(tmp_path):
    root = _copy(tmp_path)
    model = SHAPES[1].model
    _ship_without(root, model, SHAPES[1].shipped[-1])
    with pytest.raises(report.ReportError, match=f"{model} ships no dispatch .*peers/shapes.py"):
        report.build(root)


def test_a_missing_convolution_peer_run_is_an_error(tmp_path):
    root = _copy(tmp_path)
    measured = json.loads((root / report.CONV_MEASURED).read_text())
    measured["results"] = [r for r in measured["results"] if r["tool"] != "xnnpack"]
    (root / report.CONV_MEASURED).write_text(json.dumps(measured))
    with pytest.raises(report.ReportError, match="no xnnpack run"):
        report.build_convs(root)


def test_every_shape_has_every_peer_and_both_iree_figures():
    data = report.build(ROOT)
    assert [o["shape"] for o in data["ops"]] == [s.key for s in SHAPES]
    for o in data["ops"]:
        assert set(o["tools"]) == set(report.PEERS + report.IREE + report.ALONE + report.PACKED + (report.SHIPPED,))
        for name, t in o["tools"].items():
            if name == report.SHIPPED:  # memory-aware cycles only (the shipped build's perf report)
                assert 0 < t["memory_aware_fma_peak_share"] <= 1
                continue
            share = o["macs"] / (t["model_cycles"] * data["peak_macs_per_cycle"])
            assert t["fma_peak_share"] == round(share, 4) and 0 < share <= 1


def _ship_without(root: Path, model: str, dispatch: str) -> None:
    """The committed shipped_bounds.json under `root` as if `model`'s shipped build no longer ran
    `dispatch` (a refresh that changed what it ships)."""
    bounds = json.loads((root / report.SHIPPED_BOUNDS).read_text())
    pipeline = bounds["pipelines"][model]
    pipeline["dispatches"] = [d for d in pipeline["dispatches"] if d["name"] != dispatch]
    (root / report.SHIPPED_BOUNDS).write_text(json.dumps(bounds))


def _copy(tmp_path: Path) -> Path:
    for rel in (report.MEASURED, report.IREE_ALONE, report.CHOICES, report.ORT_MEASURED, report.OURS_MODELS,
                report.CONV_MEASURED, report.SHIPPED_BOUNDS):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    shutil.copytree(ROOT / report.RECORDS, tmp_path / report.RECORDS)
    return tmp_path


def test_a_missing_peer_run_is_an_error(tmp_path):
    root = _copy(tmp_path)
    measured = json.loads((root / report.MEASURED).read_text())
    measured["results"] = [r for r in measured["results"] if r["tool"] != "blis"]
    (root / report.MEASURED).write_text(json.dumps(measured))
    with pytest.raises(report.ReportError, match="no blis run"):
        report.build(root)


def test_a_missing_iree_strategy_is_an_error(tmp_path):
    root = _copy(tmp_path)
    alone = json.loads((root / report.IREE_ALONE).read_text())
    del alone["runs"][report.HARDWARE]["results"][SHAPES[-1].key]["ukernels"]
    (root / report.IREE_ALONE).write_text(json.dumps(alone))
    with pytest.raises(report.ReportError, match="no codegen, datatiling, ukernels runs"):
        report.build(root)


def test_every_other_core_the_peers_ran_on_has_iree_alone(tmp_path):
    root = _copy(tmp_path)
    alone = json.loads((root / report.IREE_ALONE).read_text())
    others = [name for name in alone["runs"] if name != report.HARDWARE]
    assert others, "the committed data has no second core"
    del alone["runs"][others[0]]
    (root / report.IREE_ALONE).write_text(json.dumps(alone))
    with pytest.raises(report.ReportError, match=f"no run on {others[0]}"):
        report.build(root)


def test_a_split_that_disagrees_with_the_zoo_is_an_error(tmp_path):
    root = _copy(tmp_path)
    choices = json.loads((root / report.CHOICES).read_text())
    choices["models"][SHAPES[0].model]["split"] = "held_out"
    (root / report.CHOICES).write_text(json.dumps(choices))
    with pytest.raises(report.ReportError, match="peers/shapes.py"):
        report.build(root)


def test_a_record_of_another_hardware_description_is_an_error(tmp_path):
    root = _copy(tmp_path)
    path = root / report.RECORDS / f"{SHAPES[0].model}_riscv.json"
    record = json.loads(path.read_text())
    record["key"]["hardware_sha256"] = "0" * 64
    path.write_text(json.dumps(record))
    with pytest.raises(report.ReportError, match="another riscv_rvv.yaml"):
        report.build(root)


def test_at_least_five_models_of_both_splits_against_onnxruntime_with_numerics_checked():
    models = report.build_models(ROOT)
    assert len(models["models"]) >= 5
    assert {m["split"] for m in models["models"]} == set(report.SPLITS)
    for m in models["models"]:
        assert m["onnxruntime"]["max_error_of_output_scale"] <= models["tolerance"]
        assert m["ours_over_ort_model_cycles"] == round(m["ours"]["model_cycles"] / m["onnxruntime"]["model_cycles"], 3)


def _edit(root: Path, rel: Path, change) -> None:
    data = json.loads((root / rel).read_text())
    change(data)
    (root / rel).write_text(json.dumps(data))


def test_a_model_without_our_shipped_measurement_is_an_error(tmp_path):
    root = _copy(tmp_path)
    _edit(root, report.OURS_MODELS, lambda d: d["pipelines"].pop("se_net"))
    with pytest.raises(report.ReportError, match="no measurement of what se_net ships"):
        report.build_models(root)


def test_a_shipped_build_without_an_onnxruntime_run_is_an_error(tmp_path):
    root = _copy(tmp_path)
    _edit(root, report.ORT_MEASURED, lambda d: d["models"].pop("mlp"))
    with pytest.raises(report.ReportError, match="no ONNX Runtime run of mlp"):
        report.build_models(root)


def test_an_onnxruntime_result_off_the_golden_is_an_error(tmp_path):
    root = _copy(tmp_path)

    def off(d):
        r = next(r for r in d["results"] if r["model"] == "transformer_encoder")
        r["outputs"][0]["max_abs_error"] = r["outputs"][0]["golden_max"] * d["tolerance"] * 2
    _edit(root, report.ORT_MEASURED, off)
    with pytest.raises(report.ReportError, match="transformer_encoder output_0 is off the golden"):
        report.build_models(root)


def test_ours_on_another_hardware_description_is_an_error(tmp_path):
    root = _copy(tmp_path)
    _edit(root, report.OURS_MODELS,
          lambda d: d["pipelines"]["mlp_batch32"]["runs"][report.HARDWARE].update(hardware_sha256="0" * 64))
    with pytest.raises(report.ReportError, match=f"mlp_batch32 measured on another {report.HARDWARE}.yaml"):
        report.build_models(root)


def test_a_model_split_that_disagrees_with_the_zoo_is_an_error(tmp_path):
    root = _copy(tmp_path)
    _edit(root, report.ORT_MEASURED, lambda d: d["models"]["recurrent_kws"].update(split="calibration"))
    with pytest.raises(report.ReportError, match="recurrent_kws is calibration there, held_out in"):
        report.build_models(root)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
