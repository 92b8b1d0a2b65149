"""peers/report.py: the committed table regenerates byte for byte from committed data, and
missing or inconsistent data fails instead of leaving a gap."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from peers import report
from peers.shapes import SHAPES

ROOT = Path(__file__).absolute().parent.parent


def test_the_committed_table_and_doc_regenerate_byte_for_byte():
    data = report.build(ROOT)
    assert (ROOT / report.OUT_JSON).read_text() == json.dumps(data, indent=1) + "\n"
    assert (ROOT / report.OUT_MD).read_text() == report.markdown(data)


def test_every_shape_has_every_peer_and_both_iree_figures():
    data = report.build(ROOT)
    assert [o["shape"] for o in data["ops"]] == [s.key for s in SHAPES]
    for o in data["ops"]:
        assert set(o["tools"]) == set(report.PEERS + report.IREE + report.ALONE + report.PACKED)
        for t in o["tools"].values():
            share = o["macs"] / (t["model_cycles"] * data["peak_macs_per_cycle"])
            assert t["fma_peak_share"] == round(share, 4) and 0 < share <= 1


def _copy(tmp_path: Path) -> Path:
    for rel in (report.MEASURED, report.IREE_ALONE, report.CHOICES):
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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
