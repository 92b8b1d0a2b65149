"""//tools:host_timings on a real zoo model (mlp's three host modules), and the statistics it reports
(results/strategies_test.py checks the table it feeds)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench import host_timings
from common import stats


@pytest.fixture
def workspace(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "t"], check=True)
    return tmp_path


def test_times_mlp_and_merges(workspace, capsys):
    out = workspace / "timings.json"
    out.write_text(json.dumps({"format": host_timings.FORMAT, "pipelines": {"other": {"kept": True}}}))
    assert host_timings.main(["mlp", "--rounds", "30", "--warmup", "1", "--quiet",
                              "--workspace", str(workspace), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["pipelines"]["other"] == {"kept": True}  # merged per pipeline, not overwritten
    mlp = data["pipelines"]["mlp"]
    assert set(mlp["seconds"]) == {"ships", "project_iree", "stock_iree"}
    assert all(s["n"] == 30 and s["median"] > 0 for s in mlp["seconds"].values())
    ratio = mlp["ships_over_stock"]
    assert len(ratio["samples"]) == 30 and ratio["ci95"][0] <= ratio["median"] <= ratio["ci95"][1]
    assert mlp["commit"].startswith(subprocess.run(["git", "-C", str(workspace), "rev-parse", "HEAD"],
                                                   capture_output=True, text=True).stdout.strip())
    # every variant computes the model: the golden output within float tolerance
    assert all(e is not None and e < 1e-3 for e in mlp["max_abs_err_vs_golden"].values())
    assert "ships / stock IREE" in capsys.readouterr().out


def test_refuses_fewer_than_30_rounds_and_unknown_models(workspace, capsys):
    out = workspace / "timings.json"
    assert host_timings.main(["mlp", "--rounds", "10", "--workspace", str(workspace), "--out", str(out)]) == 1
    assert "at least 30" in capsys.readouterr().err
    assert host_timings.main(["no_such_model", "--workspace", str(workspace), "--out", str(out)]) == 1
    assert "unknown model 'no_such_model'" in capsys.readouterr().err
    assert not out.exists()


def test_needs_a_git_checkout(tmp_path, capsys):
    assert host_timings.main(["mlp", "--workspace", str(tmp_path), "--out", str(tmp_path / "t.json")]) == 1
    assert "not a git checkout" in capsys.readouterr().err


def test_median_interval_is_the_binomial_order_statistics():
    # n = 30: the 10th and 21st values (coverage 95.7%); n = 100: the 40th and 61st
    assert stats.median_ci(range(1, 31)) == (10, 21)
    assert stats.median_ci(range(1, 101)) == (40, 61)
    with pytest.raises(ValueError):
        stats.median_ci([1, 2, 3])


def test_verdict_needs_the_interval_to_exclude_one():
    assert stats.interval_verdict(1.01, 1.2) == "slower"
    assert stats.interval_verdict(0.8, 0.99) == "faster"
    assert stats.interval_verdict(0.95, 1.05) == "within noise"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
