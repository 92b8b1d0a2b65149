"""results/strategies.py's host table: the verdicts and the models named slower come from the data."""

from __future__ import annotations

import sys

import pytest

from results.strategies import host_lines


def _row(split, ships, stock, lo, hi):
    summary = lambda m: {"median": m, "q1": m, "q3": m}
    return {"split": split, "ships": "tuned", "rounds": 30, "commit": "abc", "environment":
            {"cpu": "x", "cores": 2, "iree_runtime": "1"},
            "seconds": {"ships": summary(ships), "project_iree": summary(ships), "stock_iree": summary(stock)},
            "ships_over_stock": {"median": ships / stock, "ci95": [lo, hi]}}


def test_host_table_names_slower_models_and_untimed_ones():
    data = {"pipelines": {"a": _row("calibration", 2e-3, 1e-3, 1.9, 2.1), "b": _row("held_out", 1e-3, 1e-3, 0.9, 1.1)}}
    text = "\n".join(host_lines(data, {"a": "calibration", "b": "held_out", "c": "held_out"}))
    assert "| a | calibration | tuned | 30 | 2 (2-2) | 2.00x | 1 | 2.00x (1.90-2.10) | slower |" in text
    assert "| calibration | 1 | 2.00x | a |" in text
    assert "| held_out | 1 | 1.00x | none |" in text
    assert "Not timed: c." in text


@pytest.mark.parametrize("text, why", [("", "not a pipeline info: an empty file"),
                                       ('{"name": "mlp", "module": "models.mlp"}', "not a pipeline info: no 'split'"),
                                       ("[1, 2]", "not a pipeline info: no 'name'")],
                         ids=["empty", "without_split", "not_an_object"])
def test_a_pipeline_info_that_is_not_one_is_named(tmp_path, capsys, text, why):
    """Issue 62: an empty --infos file was "report: Expecting value: line 1 column 1 (char 0)", one
    without `split` "report: 'split'": the file was not named."""
    from results import report

    info = tmp_path / "mlp_pipeline_info.json"
    info.write_text(text)
    assert report.main(["--infos", str(info), "--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [f"report: {info}: {why}"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def _perf(path, cycles, core="sifive-p670"):
    import json

    path.write_text(json.dumps({"runs": [{"core": core, "hardware": "riscv_rvv",
                                          "inference_memory_aware_cycles": cycles}]}))


def test_collect_reads_the_measurements_through_their_perf_index(tmp_path):
    import json

    from results.strategies import ResultsError, collect

    models = tmp_path / "models"
    models.mkdir()
    (models / "a_riscv.manifest.json").write_text(json.dumps({"strategy_choice": {"chosen": "tuned"}}))
    (models / "b_riscv.manifest.json").write_text(json.dumps({}))
    # named unlike the rule's outputs on purpose: only the index says which file is which build
    _perf(models / "x.json", 50)
    _perf(models / "y.json", 100)
    (models / "a_riscv_stock_perf_index.json").write_text(json.dumps(
        {"tuned": {"perf_json": "models/x.json"}, "directconv": {"perf_json": "models/y.json"}}))
    data = collect(models, ["a", "b"])["pipelines"]
    assert data["a"]["ships_memory_aware_cycles"] == 50 and data["a"]["stock_iree_memory_aware_cycles"] == 100
    assert data["b"] == {"ships": "tuned", "not_measured": "b_riscv_stock_perf_index.json not built"}
    (models / "a_riscv_stock_perf_index.json").write_text(json.dumps({"tuned": {"perf_json": "models/x.json"}}))
    with pytest.raises(ResultsError, match="no measurement of the tuned or the stock IREE build"):
        collect(models, ["a"])
