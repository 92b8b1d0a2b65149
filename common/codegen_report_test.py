"""The codegen report schema: a compiled and a refused build load; anything else is one line."""

import json
from pathlib import Path
import sys

import pytest

from common.codegen_report import ReportError, load_codegen_report

FAILED = {"failed": "iree-compile: error: 'linalg.transpose' op ...", "target": "host_datatiling",
          "triple": "x86_64-unknown-linux-gnu", "strategy": "datatiling", "vmfb_sha256": "e3b0",
          "inputs_sha256": {"module": "aa", "target": "bb"}}
DISPATCH = {"name": "main_dispatch_0_matmul_4x8x16_f32", "executable": "main_dispatch_0",
            "root_op": "linalg.matmul", "pipeline": "Mmt4dTilingExpert",
            "loops": [{"bound": 4, "kind": "parallel"}, {"bound": 8, "kind": "parallel"},
                      {"bound": 16, "kind": "reduction"}],
            "status": "default", "provenance": "iree-default", "reason": "untuned build: no analysis",
            "landed_config": "#iree_cpu.lowering_config<...>", "landed_pipeline": None}
COMPILED = {**{k: v for k, v in FAILED.items() if k != "failed"}, "tuned": False, "cpu": "haswell",
            "summary": {"dispatches": 1, "applied": 0, "default": 1, "adjusted": 0},
            "dispatches": [DISPATCH], "options": {"allow_untuned_dispatches": False}}


def write(tmp_path, report) -> Path:
    path = tmp_path / "m.report.json"
    path.write_text(report if isinstance(report, str) else json.dumps(report))
    return path


def test_a_compiled_build_loads(tmp_path):
    rep = load_codegen_report(write(tmp_path, COMPILED))
    assert rep.failed is None and rep.summary.default == 1
    assert rep.dispatches[0].loops[2].kind == "reduction"


def test_a_refused_build_says_why(tmp_path):
    rep = load_codegen_report(write(tmp_path, FAILED))
    assert rep.failed.startswith("iree-compile: error") and rep.dispatches == []


@pytest.mark.parametrize("report, message", [
    ({**COMPILED, "dispatches": [{k: v for k, v in DISPATCH.items() if k != "status"}]},
     "dispatches.0.status: Field required"),
    ({**COMPILED, "dispatches": [{**DISPATCH, "status": "tuned"}]}, "dispatches.0.status"),
    ({**COMPILED, "vmfb": "x.vmfb"}, "vmfb: Extra inputs are not permitted"),
    ("{not json", "not a codegen report"),
])
def test_not_a_report_is_one_line_naming_it(tmp_path, report, message):
    path = write(tmp_path, report)
    with pytest.raises(ReportError) as err:
        load_codegen_report(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_a_missing_report_is_named(tmp_path):
    with pytest.raises(ReportError, match="missing.report.json: cannot read"):
        load_codegen_report(tmp_path / "missing.report.json")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
