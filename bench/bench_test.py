"""The bench machinery end to end on the small MLP: structure of the results, never speed."""

import json
import math
import sys

import pytest

from bench import core, report, text
from common import stats
from bench.artifacts import ArtifactError, find


def test_stats():
    assert stats.ranks([3.0, 1.0, 2.0, 2.0]) == [4.0, 1.0, 2.5, 2.5]
    assert stats.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert stats.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert stats.spearman([1, 2], [1, 2]) is None
    assert stats.geomean([1.0, 4.0]) == pytest.approx(2.0)
    s = stats.summary([3.0, 1.0, 2.0])
    assert (s["median"], s["min"], s["max"], s["n"]) == (2.0, 1.0, 3.0, 3)


def test_unknown_model():
    with pytest.raises(ArtifactError, match="unknown model"):
        find("nope")


def test_bench_and_report_mlp(tmp_path):
    art = find("mlp")
    res = core.run(art, reps=3, warmup=1, dispatch_rounds=1, batch=2, min_time=0.01, quiet=True)
    e = res["end_to_end"]
    for v in core.VARIANTS:
        s = e["variants"][v]
        assert s["n"] == 3 and s["median"] > 0 and s["min"] <= s["median"] <= s["max"]
        assert s["max_abs_err_vs_golden"] < 1e-3  # same model, same inputs
    assert math.isfinite(e["tuned_over_default"]) and math.isfinite(e["tuned_over_framework"])

    analysis = json.loads(art.analysis.read_text())
    rows = res["dispatches"]
    assert sorted(r["name"] for r in rows) == sorted(d["name"] for d in analysis["dispatches"])
    for r in rows:
        assert r["tuned"]["median"] > 0 and r["default"]["median"] > 0 and r["calls"] >= 1
        if r["status"] == "applied":
            assert r["config_verified"], r["name"]  # the rebuilt dispatch carries the landed config
    s = res["summary"]
    assert s["dispatches"] == len(rows)
    assert s["spearman_all_costed"]["n"] == sum(1 for d in analysis["dispatches"] if d.get("cost"))
    assert s["geomean_speedup_all"] > 0

    out = tmp_path / "rep"
    results = tmp_path / "r.json"
    results.write_text(json.dumps(res))
    assert report.main(["mlp", "--results", str(results), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "## Per dispatch" in md and rows[0]["name"] in md
    rv = res["riscv"]
    assert [c["core"] for c in rv["cores"]] == ["sifive-p670", "sifive-x280"]
    assert rv["cores"][0]["analysed_for"] and not rv["cores"][1]["analysed_for"]
    for c in rv["cores"]:
        assert sorted(r["name"] for r in c["dispatches"]) == sorted(r["name"] for r in rows)
        assert c["model_cycles"]["tuned"] > 0 and c["model_cycles"]["default"] > 0
    assert "## RISC-V (instruction counts and model cycles)" in md and "model cycles on sifive-x280" in md
    for png in ("predicted_vs_measured.png", "tuned_vs_default.png", "riscv_predicted_vs_model_cycles.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert "Spearman" in text.text_report(res)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
