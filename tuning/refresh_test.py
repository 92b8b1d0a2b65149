"""tuning.refresh: which pipeline a tiled strategy's own tile record belongs to (what a refresh
deletes when that pipeline ships another strategy); which measuring targets `all`, a pipeline
target and a hardware_sweep's label name."""

import subprocess
import sys
from pathlib import Path

import pytest

from tuning import refresh
from tuning.refresh import _strategy_tile_owner


def test_a_tiled_strategys_record_belongs_to_its_pipeline():
    pipelines = {"se_net_riscv", "se_net_host", "keras_cnn_riscv"}
    assert _strategy_tile_owner("se_net_riscv_dwchannelslast", pipelines) == "se_net_riscv"
    assert _strategy_tile_owner("keras_cnn_riscv_directconv", pipelines) == "keras_cnn_riscv"


@pytest.mark.parametrize("name", ["se_net_riscv", "se_net_riscv_datatiling", "mlp_riscv_directconv",
                                  "se_net_riscv_dwchannelslast_extra"])
def test_anything_else_is_no_strategys_tile_record(name):
    """The pipeline's own record, a packed strategy (no tiles of its own), another pipeline's."""
    assert _strategy_tile_owner(name, {"se_net_riscv", "keras_cnn_riscv"}) is None


def test_the_longest_pipeline_name_owns_it(monkeypatch):
    """With a strategy name that ends in another's after an underscore (a hypothetical
    `dw_channelslast` beside `channelslast`), `x` and `x_dw` would both own
    `x_dw_channelslast`; the record is the longer pipeline's."""
    from tuning import refresh

    monkeypatch.setattr(refresh, "TILED_STRATEGIES", ("channelslast", "dw_channelslast"))
    assert refresh._strategy_tile_owner("x_dw_channelslast", {"x", "x_dw"}) == "x_dw"


class _Query:
    """`bazel query` over a package with a zoo pipeline and a sweep of two variants, answering
    from their tags as Bazel's attr() does (`[manual, sweep]`)."""

    TARGETS = {"mlp_riscv_measured_analysis": "[manual]", "mlp_riscv_strategy_refresh": "[manual]",
               "mem_sweep_l1_16k_measured_analysis": "[manual, sweep]",
               "mem_sweep_l1_32k_measured_analysis": "[manual, sweep]"}

    def __init__(self):
        self.queries = []

    def __call__(self, cmd, **kwargs):
        import re

        query = cmd[-1]
        self.queries.append(query)
        names = set(self.TARGETS)
        named = set(re.findall(r"//models:(\w+)", query)) - {"all"}
        if named:
            names &= named
        for pattern in re.findall(r"attr\(name, '([^']*)'", query):
            names = {n for n in names if re.search(pattern, n)}
        tagged = {n for n in self.TARGETS if re.search(refresh.SWEEP_TAGGED.split("'")[1], self.TARGETS[n])}
        if "except attr(tags" in query:
            names -= tagged
        elif "attr(tags" in query:
            names &= tagged
        return subprocess.CompletedProcess(cmd, 0, "".join(f"//models:{n}\n" for n in sorted(names)), "")


@pytest.fixture
def query(monkeypatch):
    q = _Query()
    monkeypatch.setattr(refresh.subprocess, "run", q)
    return q


def test_all_is_the_zoos_pipelines_without_the_sweeps(query):
    assert refresh.record_targets(Path("."), ["bazel"], ["all"]) == [
        ("models", "mlp_riscv", refresh.MEASURED_SUFFIX), ("models", "mlp_riscv", refresh.STRATEGY_SUFFIX)]


def test_a_sweeps_label_is_its_variants_measured_choices(query):
    assert refresh.record_targets(Path("."), ["bazel"], ["//models:mem_sweep"]) == [
        ("models", "mem_sweep_l1_16k", refresh.MEASURED_SUFFIX), ("models", "mem_sweep_l1_32k", refresh.MEASURED_SUFFIX)]
    assert refresh.record_targets(Path("."), ["bazel"], ["//models:mem_sweep_l1_32k"]) == [
        ("models", "mem_sweep_l1_32k", refresh.MEASURED_SUFFIX)]


def test_a_sweep_variants_record_goes_to_the_sweeps_records(query):
    assert refresh._sweep_variants(Path("."), ["bazel"], [("models", "mem_sweep_l1_16k"), ("models", "mlp_riscv")]) == {
        "mem_sweep_l1_16k"}


def test_a_kept_run_cache_is_the_directory_every_choice_shares(tmp_path, monkeypatch):
    """`--run-cache DIR`: the refresh hands DIR (created) to every tile choice it measures on Ray,
    instead of a scratch directory of its own, so a resumed sweep shares its earlier runs."""
    given = []

    class Stop(Exception):
        pass

    def tune_on_ray(inputs_json, execroot, address, out, run_cache, record=None):
        given.append(Path(run_cache))
        raise Stop

    monkeypatch.setattr(refresh, "_build", lambda *a, **k: None)
    monkeypatch.setattr(refresh, "_execution_root", lambda *a, **k: tmp_path)
    monkeypatch.setattr(refresh, "_sweep_variants", lambda *a, **k: set())
    monkeypatch.setattr(refresh, "_tune_on_ray", tune_on_ray)
    runs = tmp_path / "kept" / "runs"
    with pytest.raises(Stop):
        refresh._refresh(tmp_path, ["bazel"], [("models", "m_riscv", refresh.MEASURED_SUFFIX)],
                         (refresh.MEASURED_SUFFIX,), "local", run_cache=runs)
    assert given == [runs] and runs.is_dir()
    with pytest.raises(Stop):  # default: a scratch directory of this refresh
        refresh._refresh(tmp_path, ["bazel"], [("models", "m_riscv", refresh.MEASURED_SUFFIX)],
                         (refresh.MEASURED_SUFFIX,), "local")
    assert given[1] != runs and not given[1].exists()



@pytest.mark.parametrize("case, why", [("missing", "--bazel nope/bazel: "), ("not_executable", "--bazel bazel.txt: "),
                                       ("run_cache_file", "--run-cache ")])
def test_a_bazel_or_run_cache_that_cannot_be_used_is_named(tmp_path, monkeypatch, capsys, case, why):
    # issue 80's probe: a missing --bazel was "tune: //models:mlp_riscv: FileNotFoundError", blamed on
    # the target; a file as --run-cache failed only once measuring began
    (tmp_path / "bazel.txt").write_text("not a program")
    (tmp_path / "runs").write_text("mine")
    fake = tmp_path / "fake_bazel"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(tmp_path))
    monkeypatch.setenv("BUILD_WORKING_DIRECTORY", str(tmp_path))
    monkeypatch.setattr(refresh, "record_targets", lambda *a, **k: pytest.fail("bazel was run"))
    args = {"missing": ["--bazel", "nope/bazel"], "not_executable": ["--bazel", "bazel.txt"],
            "run_cache_file": ["--bazel", "fake_bazel", "--run-cache", "runs"]}[case]
    assert refresh.main(["//models:mlp_riscv", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"tune: {why}"), err



def test_a_label_with_escapes_is_printed_quoted():
    # issue 80's probe: an ANSI escape in a label was printed raw
    with pytest.raises(refresh.RefreshError, match=r"^'//models:\\x1b\[31mmlp': not a pipeline target's label"):
        refresh.record_targets(Path("."), ["bazel"], ["//models:\x1b[31mmlp"])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider"]))
