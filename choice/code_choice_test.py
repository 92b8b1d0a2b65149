"""The host's code-model tile choice on a real model (choice:code_choice over matmul_shapes' host
analysis): every dispatch with candidates was costed on host.yaml's core and priced with the
calibrated term, a candidate was taken only when the margin cheaper than IREE's default by that
price, and what was chosen landed in the compile."""

import sys
from pathlib import Path

import pytest

from common.analysis_schema import Analysis
from common.codegen_report import CodegenReport
from choice.tune import DEFAULT

FILES = [Path(p) for p in sys.argv[1:]]


def _one(suffix: str) -> Path:
    found = [p for p in FILES if p.name.endswith(suffix)]
    assert len(found) == 1, f"expected one *{suffix} among the test's args, got {found}"
    return found[0]


def test_the_code_model_chose_by_its_margin_and_the_choice_landed():
    analysis = Analysis.model_validate_json(_one(".analysis.json").read_text())
    mc = analysis.measured_choice
    assert mc is not None and mc.by == "code-model" and mc.core == "znver3" and 0 < mc.margin < 1
    term = mc.code_calibration  # the calibrated term model_pipeline's host choice adds
    assert term is not None and term.file == "host.code_model.json" and term.cycles_per_unit > 0
    price = lambda c: c.code_model_cycles + term.cycles_per_unit * c.features[term.feature]  # noqa: E731
    assert mc.dispatches == len(analysis.dispatches) and mc.measured >= 2 * mc.dispatches
    switched = set()
    for d in analysis.dispatches:
        by = {c.name: c for c in d.candidates}
        assert by[DEFAULT].code_model_cycles is not None and by[d.chosen].code_model_cycles is not None, d.name
        default, chosen = price(by[DEFAULT]), price(by[d.chosen])
        costed = [price(c) for c in d.candidates if c.code_model_cycles is not None]
        if d.chosen == DEFAULT:
            assert min(costed) >= (1 - mc.margin) * default, d.name
        else:
            assert chosen == min(costed) and chosen < (1 - mc.margin) * default, d.name
            switched.add(d.name)
        assert "code-model choice on znver3" in d.reason
    assert switched, "matmul_shapes' matmuls all have a register tile the code model prices cheaper"
    report = CodegenReport.model_validate_json(_one(".report.json").read_text())
    landed = {d.name for d in report.dispatches if d.status == "applied" and d.landed}
    assert switched <= landed, switched - landed


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
