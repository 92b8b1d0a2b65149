"""strategy_choice's rule: fewest model cycles per call on the first core, ties to the earlier
candidate, every figure recorded; a build IREE refused left out; candidates measured elsewhere
or without cycles refused.
code_strategy_choice's: the same by the static code model, a candidate that cannot be costed
whole left out (the baseline kept when it is the one), hardware without a core model or of
another instruction set refused; and once on real code, a matmul built codegen and with
microkernels for the host."""

import os
import sys
from pathlib import Path

import pytest
import yaml

from common.perf_schema import CLASS_NAMES, CoreRun, DispatchPerf, PerfReport
from perf import mca
from perf.code_model import cost, errors
from choice import rounds
from choice.choose import ChoiceError, Measured, choose, choose_by_code, confirm_by_measurement
from common.build import Build, CompileOptions

# Runfiles (args of the Bazel test): the host description, the host target and its
# microkernel variant, a riscv target, the matmul module, @llvm19's llvm-mca (its directory is
# the code model's LLVM 19).
HOST_HW, HOST_TARGET, HOST_UKERNELS, RISCV_TARGET, MATMUL, LLVM_MCA = (
    Path(p) for p in os.environ.get("CHOOSE_TEST_FILES", "- - - - - -").split())
mca.use_llvm_bin(LLVM_MCA.absolute().parent)


def _perf(tmp_path, name, cycles, calls, hardware="riscv_rvv", core="sifive-p670"):
    classes = dict.fromkeys(CLASS_NAMES, 0)
    classes["vector_fp"] = 1
    d = DispatchPerf(name="main_dispatch_0", kind="matmul", workgroups=(1, 1, 1), calls=calls,
                     initializer_calls=0, macs=0, instructions=1, classes=classes, vector_fma=1,
                     vector_lmul_weighted=1, vector_lmul_unknown=0, blocks=1, model_cycles=cycles,
                     fma_peak_share=None)
    run = CoreRun(hardware=hardware, hardware_sha256="0" * 64, core=core, vlen=128,
                  peak_macs_per_cycle=8, model_ignores="caches", dispatches=[d], instructions=1,
                  model_cycles=cycles if core else None, inference_instructions=calls,
                  inference_model_cycles=cycles * calls if core else None,
                  memory_model_ignores="prefetchers", memory_aware_cycles=cycles if core else None,
                  energy_pj=1.0 if core else None,
                  inference_memory_aware_cycles=cycles * calls if core else None,
                  inference_energy_pj=1.0 * calls if core else None)
    report = PerfReport(model="m", module_sha256="0" * 64, target="t", target_vector_bits=128,
                        strategy="codegen", variant="iree-default", analysis_sha256=None,
                        tools={}, runs=[run])
    path = tmp_path / f"{name}.perf.json"
    path.write_text(report.model_dump_json())
    return path


def test_fewest_cycles_per_call_wins_and_every_figure_is_recorded(tmp_path):
    # One dispatch of 100 cycles called 3 times loses to 250 cycles called once.
    chosen, record = choose([("tuned", _perf(tmp_path, "a", 100, 3)),
                             ("ukernels", _perf(tmp_path, "b", 250, 1))])
    assert chosen == "ukernels" and record["candidates"] == {"tuned": 300, "ukernels": 250}
    assert record["reason"].startswith("ukernels: fewest memory-aware cycles") and "1.20x" in record["reason"]


def test_tie_goes_to_the_earlier_candidate(tmp_path):
    chosen, _ = choose([("tuned", _perf(tmp_path, "a", 100, 1)), ("codegen", _perf(tmp_path, "b", 100, 1))])
    assert chosen == "tuned"


def test_candidates_on_other_hardware_or_without_cycles_are_refused(tmp_path):
    with pytest.raises(ChoiceError, match="same accelerator"):
        choose([("tuned", _perf(tmp_path, "a", 100, 1)),
                ("ukernels", _perf(tmp_path, "b", 90, 1, "riscv_rvv512", "sifive-x280"))])
    with pytest.raises(ChoiceError, match="no core model"):
        choose([("tuned", _perf(tmp_path, "c", 100, 1, core=None))])


def _refused(tmp_path, name, why="error: 'linalg.pack' op failed"):
    report = PerfReport(model="m", module_sha256="0" * 64, target="t", target_vector_bits=128,
                        strategy="datatiling", variant="iree-default", analysis_sha256=None,
                        tools={}, runs=[], failed=why)
    path = tmp_path / f"{name}.perf.json"
    path.write_text(report.model_dump_json())
    return path


def test_a_build_iree_refused_is_left_out_with_its_reason(tmp_path):
    chosen, record = choose([("tuned", _perf(tmp_path, "a", 100, 1)), ("datatiling", _refused(tmp_path, "b")),
                             ("ukernels", _perf(tmp_path, "c", 120, 1))])
    assert chosen == "tuned" and record["candidates"] == {"tuned": 100, "ukernels": 120}
    assert record["excluded"] == {"datatiling": "IREE could not compile it: error: 'linalg.pack' op failed"}
    assert "left out: datatiling" in record["reason"]
    with pytest.raises(ChoiceError, match="no candidate was measured"):
        choose([("datatiling", _refused(tmp_path, "d"))])


def test_a_refused_report_has_no_runs_and_a_measured_one_has_some():
    common = dict(model="m", module_sha256="0" * 64, target="t", target_vector_bits=128,
                  strategy="codegen", variant="iree-default", analysis_sha256=None, tools={})
    with pytest.raises(ValueError, match="at least one run"):
        PerfReport(runs=[], **common)
    with pytest.raises(ValueError, match="has no runs"):
        PerfReport.model_validate_json(_perf_json_with_failure())


def _perf_json_with_failure() -> str:
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data = json.loads(_perf(Path(tmp), "x", 100, 1).read_text())
    data["failed"] = "refused"
    return json.dumps(data)


def _fake_costs(monkeypatch, per_strategy: dict):
    """module_call_cycles returning, per work dir (= strategy), cycles or uncostable dispatches."""
    def fake(module, analysis, target, core, work):
        figure = per_strategy[work.name]
        if isinstance(figure, str):
            return cost.CallCycles({}, set(), errors={"main_dispatch_1": figure})
        return cost.CallCycles({"main_dispatch_0": figure / 2}, set(), calls={"main_dispatch_0": 2})
    monkeypatch.setattr(rounds, "module_call_cycles", fake)


def test_code_choice_leaves_out_what_it_cannot_cost(monkeypatch, tmp_path):
    _fake_costs(monkeypatch, {"tuned": 1000, "datatiling": "run-time trip count", "ukernels": 800})
    chosen, record = choose_by_code([("tuned", HOST_TARGET, None), ("datatiling", HOST_TARGET, None),
                                     ("ukernels", HOST_TARGET, None)], MATMUL, HOST_HW, tmp_path)
    assert chosen == "ukernels" and record["candidates"] == {"tuned": 1000, "ukernels": 800}
    assert "run-time trip count" in record["excluded"]["datatiling"]
    assert "znver3" in record["by"] and "1.25x" in record["reason"]


def test_code_choice_keeps_the_baseline_on_a_near_tie(monkeypatch, tmp_path):
    _fake_costs(monkeypatch, {"tuned": 1000, "datatiling": 960, "ukernels": 990})
    builds = [("tuned", HOST_TARGET, None), ("datatiling", HOST_TARGET, None), ("ukernels", HOST_TARGET, None)]
    chosen, record = choose_by_code(builds, MATMUL, HOST_HW, tmp_path, margin=0.05)
    assert chosen == "tuned" == record["chosen"] and "0.960x" in record["reason"]
    assert record["candidates"] == {"tuned": 1000, "datatiling": 960, "ukernels": 990}
    chosen, _ = choose_by_code(builds, MATMUL, HOST_HW, tmp_path, margin=0.03)
    assert chosen == "datatiling"


def test_code_choice_leaves_out_a_build_iree_could_not_compile(monkeypatch, tmp_path):
    _fake_costs(monkeypatch, {"tuned": 1000, "ukernels": 1200})
    chosen, record = choose_by_code([("tuned", HOST_TARGET, None), ("datatiling", HOST_TARGET, None),
                                     ("ukernels", HOST_TARGET, None)], MATMUL, HOST_HW, tmp_path,
                                    failed={"datatiling": "failed to build pass pipeline"})
    assert chosen == "tuned" and record["candidates"] == {"tuned": 1000, "ukernels": 1200}
    assert record["excluded"] == {"datatiling": "IREE could not compile it: failed to build pass pipeline"}
    assert "left out: datatiling" in record["reason"]


def test_code_choice_leaves_out_a_module_the_code_model_cannot_read(monkeypatch, tmp_path):
    def unreadable(module, analysis, target, core, work):
        if work.name == "tuned":
            raise errors.CodeCostError("opt cannot read IREE's IR: expected value token")
        return cost.CallCycles({"main_dispatch_0": 5.0}, set(), calls={"main_dispatch_0": 1})
    monkeypatch.setattr(rounds, "module_call_cycles", unreadable)
    chosen, record = choose_by_code([("tuned", HOST_TARGET, None), ("ukernels", HOST_TARGET, None)],
                                    MATMUL, HOST_HW, tmp_path)
    assert chosen == "tuned" and "expected value token" in record["excluded"]["tuned"]
    assert "cannot be costed" in record["reason"]


def test_code_choice_keeps_an_uncostable_baseline(monkeypatch, tmp_path):
    _fake_costs(monkeypatch, {"tuned": "no trip count", "ukernels": 10})
    chosen, record = choose_by_code([("tuned", HOST_TARGET, None), ("ukernels", HOST_TARGET, None)],
                                    MATMUL, HOST_HW, tmp_path)
    assert chosen == "tuned" and "cannot be costed" in record["reason"]
    assert record["candidates"] == {"ukernels": 10}


def test_code_choice_refuses_hardware_without_core_or_of_another_isa(tmp_path):
    desc = yaml.safe_load(HOST_HW.read_text())
    del desc["model_core"]
    no_core = tmp_path / "no_core.yaml"
    no_core.write_text(yaml.safe_dump(desc))
    with pytest.raises(ChoiceError, match="names no model_core"):
        choose_by_code([("tuned", HOST_TARGET, None)], MATMUL, no_core, tmp_path)
    with pytest.raises(ChoiceError, match="cannot be priced on znver3"):
        choose_by_code([("tuned", RISCV_TARGET, None)], MATMUL, HOST_HW, tmp_path)


def test_code_choice_on_real_code(tmp_path):
    chosen, record = choose_by_code([("codegen", HOST_TARGET, None), ("ukernels", HOST_UKERNELS, None)],
                                    MATMUL, HOST_HW, tmp_path)
    assert set(record["candidates"]) == {"codegen", "ukernels"} and "excluded" not in record
    # 64x128x96 MACs: no build of it issues fewer than 2 x 8-lane FMAs a cycle.
    assert all(cycles >= 64 * 128 * 96 / 16 for cycles in record["candidates"].values()), record
    assert chosen == min(record["candidates"], key=record["candidates"].get)

    # The builds' own code (`codegen.compile --out-code`, what `iree_compile(code = True)` gives
    # the rule) costs the same, and asking for it leaves the product's bytes as they were.
    code = {}
    for strategy, target in (("codegen", HOST_TARGET), ("ukernels", HOST_UKERNELS)):
        out = tmp_path / strategy
        _compile_named(target, out, "a")
        _compile_named(target, out, "b", code=True)
        assert (out / "a.vmfb").read_bytes() == (out / "b.vmfb").read_bytes()
        code[strategy] = out / "code"
    built = choose_by_code([("codegen", HOST_TARGET, None), ("ukernels", HOST_UKERNELS, None)],
                           MATMUL, HOST_HW, tmp_path / "built", code)
    assert built == (chosen, record)
    (code["ukernels"] / "targets.mlir").unlink()
    with pytest.raises(ChoiceError, match="ukernels: .*targets.mlir: not found"):
        choose_by_code([("ukernels", HOST_UKERNELS, None)], MATMUL, HOST_HW, tmp_path / "gone", code)


def _compile_named(target: Path, out: Path, name: str, code: bool = False, layout: bool = False) -> Build:
    """MATMUL compiled by codegen for `target`, IREE's tiles, as out/<name>.vmfb, .json, .mlir (and
    <name>.layout.json, code/): the files a compile action of the pipeline writes."""
    from codegen.compile import compile_module

    options = CompileOptions(Path(target), None, layout=layout, code=code)
    build = Build(options, out / f"{name}.vmfb", out / f"{name}.json", out / f"{name}.mlir",
                  layout=out / f"{name}.layout.json" if layout else None, code=out / "code" if code else None)
    return compile_module(MATMUL, options, build)


def _build(strategy: str, target: str, analysis: str | None) -> Build:
    return Build(CompileOptions(Path(target), Path(analysis) if analysis else None, layout=True),
                 Path(f"{strategy}.vmfb"), Path(f"{strategy}.report.json"), layout=Path(f"{strategy}.layout.json"))


_BUILDS = {"tuned": _build("tuned", "t.yaml", "a.json"), "ukernels": _build("ukernels", "t_uk.yaml", None)}
# IREE's defaults for the baseline's target: the energy reference.
_DEFAULT = _build("codegen", "t.yaml", None)


def _default() -> Build:
    return _DEFAULT


def _priced(chosen):
    return {"by": "code", "candidates": {"tuned": 100, "ukernels": 60}, "chosen": chosen, "reason": "priced"}


@pytest.mark.parametrize("measured, kept", [({"tuned": 100, "ukernels": 90}, "ukernels"),
                                            ({"tuned": 100, "ukernels": 110}, "tuned"),
                                            ({"tuned": 100, "ukernels": 100}, "tuned")])
def test_a_priced_choice_is_kept_only_if_measured_faster_than_the_baseline(measured, kept):
    """riscv "auto": the code model proposes, the measurement of the two builds decides (ResNet-18's
    microkernel build priced 0.66x of tuned measured 1.10x)."""
    runs = []
    by_vmfb = {b.vmfb: s for s, b in {**_BUILDS, "codegen": _DEFAULT}.items()}
    record = _priced("ukernels")

    def measure(build):
        runs.append(by_vmfb[build.vmfb])
        return Measured(120, 1000) if build == _DEFAULT else Measured(measured[by_vmfb[build.vmfb]], 1000)

    assert confirm_by_measurement("ukernels", record, _BUILDS, _default, measure) == kept
    assert runs == ["tuned", "codegen", "ukernels"] and record["measured"] == {**measured, "codegen": 120}
    assert record["chosen"] == kept and (kept == "ukernels") == (not record["reason"].startswith("tuned kept"))


@pytest.mark.parametrize("energy, kept", [(999, "ukernels"), (1000, "ukernels"), (1001, "tuned")])
def test_a_faster_choice_spending_more_energy_than_iree_default_keeps_the_baseline(energy, kept):
    """Issue 58: channels-last builds of many small dispatches ran 3.4x faster than tuned and
    moved 4.3x the energy through DRAM (dilated_grouped_cnn); faster is not enough. The reference
    is IREE's default build (1000 here), not tuned (900)."""
    energies = {_BUILDS["tuned"]: Measured(100, 900), _DEFAULT: Measured(120, 1000),
                _BUILDS["ukernels"]: Measured(50, energy)}
    record = _priced("ukernels")
    assert confirm_by_measurement("ukernels", record, _BUILDS, _default, energies.__getitem__) == kept
    assert record["measured_energy_pj"] == {"tuned": 900, "codegen": 1000, "ukernels": energy}
    assert record["chosen"] == kept
    assert (kept == "tuned") == ("of the energy of IREE's default; " in record["reason"])


@pytest.mark.parametrize("cycles, energy, kept", [(50, 900, "datatiling"), (50, 1100, "tuned"), (150, 900, "tuned")])
def test_a_candidate_the_code_model_could_not_cost_is_measured(cycles, energy, kept):
    """mobilenet_v2's channels-last build: one dispatch with a run-time trip count left it out of
    the code model's comparison; on riscv the measurement still judges it (IREE's refusals not)."""
    builds = {**_BUILDS, "datatiling": _build("datatiling", "t_dt.yaml", None)}
    figures = {builds["tuned"]: Measured(100, 1000), _DEFAULT: Measured(110, 1000),
               builds["datatiling"]: Measured(cycles, energy)}
    record = _priced("tuned")
    record["excluded"] = {"datatiling": "1 dispatch(es) not costable, e.g. d3: loop %bb2: its trip count is a run-time value",
                          "ukernels": "IREE could not compile it: failed to legalize"}
    runs = []

    def measure(build):
        runs.append(build)
        return figures[build]

    assert confirm_by_measurement("tuned", record, builds, _default, measure) == kept
    assert runs == [builds["tuned"], _DEFAULT, builds["datatiling"]]
    assert record["chosen"] == kept and record["measured"] == {"tuned": 100, "codegen": 110, "datatiling": cycles}
    assert ("not costable by the code model" in record["reason"])


def test_the_baseline_kept_by_the_code_model_runs_nothing():
    """Nothing measured, and IREE's default build not even asked for (a stale record would compile it)."""
    record = _priced("tuned")
    assert confirm_by_measurement("tuned", record, _BUILDS, lambda: pytest.fail("asked for the default build"),
                                  lambda *_: pytest.fail("measured")) == "tuned"
    assert "measured" not in record


def test_a_choice_that_cannot_be_measured_keeps_the_baseline():
    def measure(build):
        if build == _BUILDS["ukernels"]:
            raise ChoiceError("qemu-riscv64 aborted")
        return Measured(100, 1000)

    record = _priced("ukernels")
    assert confirm_by_measurement("ukernels", record, _BUILDS, _default, measure) == "tuned"
    assert record["chosen"] == "tuned" and "qemu-riscv64 aborted" in record["reason"]


def test_a_baseline_that_cannot_be_measured_is_an_error():
    """No qemu or a broken runner fails the baseline's run too: an error, not a silent keep."""
    def measure(build):
        raise ChoiceError("qemu-riscv64 not found")

    with pytest.raises(ChoiceError, match="qemu-riscv64 not found"):
        confirm_by_measurement("ukernels", _priced("ukernels"), _BUILDS, _default, measure)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))


def _choose_cli(tmp_path, out, *candidates, extra=()):
    from choice.choose import main
    argv = ["--by", "code-cycles", "--hardware", str(HOST_HW), "--module", str(MATMUL),
            "--llvm-bin", str(LLVM_MCA.absolute().parent), "--margin", "0.05",
            "--record-name", "matmul_host", "--refresh-target", "//models:matmul_host",
            "--record-out", str(out / "record.json"),
            "--out-choice", str(out / "m.choice.json"), "--out-chosen-vmfb", str(out / "m.chosen.vmfb"),
            "--out-chosen-report", str(out / "m.chosen.report.json"), *extra]
    for c in candidates:
        argv += ["--candidate", *map(str, c)]
    out.mkdir(parents=True, exist_ok=True)
    return main(argv)


def test_a_strategy_record_replays_only_when_its_key_is_the_trees(tmp_path, capsys):
    builds = {}
    for strategy, target in (("codegen", HOST_TARGET), ("ukernels", HOST_UKERNELS)):
        out = tmp_path / strategy
        _compile_named(target, out, "b")
        builds[strategy] = (strategy, out / "b.vmfb", out / "b.json", target, "none")
    assert _choose_cli(tmp_path, tmp_path / "measured", builds["codegen"], builds["ukernels"]) == 0
    record = tmp_path / "measured" / "record.json"
    chosen = __import__("json").loads(record.read_text())["choice"]["chosen"]
    other = "ukernels" if chosen == "codegen" else "codegen"
    unbuilt = (other, "none", "none", builds[other][3], "none")
    ordered = lambda given: sorted(given, key=lambda c: c[0] != "codegen")  # the baseline first

    # --out-key: the same key from the candidates' targets alone (no build given, nothing priced).
    from choice.choose import main as choose_main
    key_out = tmp_path / "key" / "k.strategy_key.json"
    key_out.parent.mkdir()
    key_argv = ["--by", "code-cycles", "--hardware", str(HOST_HW), "--module", str(MATMUL),
                "--llvm-bin", str(LLVM_MCA.absolute().parent), "--margin", "0.05", "--record-name", "matmul_host",
                "--refresh-target", "//models:matmul_host", "--out-key", str(key_out)]
    for strategy, _, _, target, _ in ordered(builds.values()):
        key_argv += ["--candidate", strategy, "none", "none", str(target), "none"]
    assert choose_main(key_argv) == 0
    assert __import__("json").loads(key_out.read_text()) == __import__("json").loads(record.read_text())["key"]

    # Key matches: only the chosen build is given, and the outputs are the measured ones.
    assert _choose_cli(tmp_path, tmp_path / "replayed", *ordered([builds[chosen], unbuilt]),
                       extra=["--record", str(record)]) == 0
    assert "replayed record.json (key matches)" in capsys.readouterr().out
    for name in ("m.chosen.vmfb", "m.chosen.report.json", "m.choice.json", "record.json"):
        assert (tmp_path / "replayed" / name).read_bytes() == (tmp_path / "measured" / name).read_bytes()

    # Stale (another margin recorded, the record resealed as the tool would have written it): the
    # missing build is compiled here and every candidate priced.
    from choice.records import dump_strategy_record
    from common.tuning_schema import StrategyRecord

    stale = tmp_path / "stale.json"
    stale.write_text(dump_strategy_record(StrategyRecord.model_validate_json(
        record.read_text().replace('"margin": 0.05', '"margin": 0.1', 1)).model_copy(update={"choice_sha256": None})))
    assert _choose_cli(tmp_path, tmp_path / "again", *ordered([builds[chosen], unbuilt]),
                       extra=["--record", str(stale)]) == 0
    out = capsys.readouterr().out
    assert "stale.json is stale (margin 0.1 (recorded) vs 0.05)" in out and "every candidate measured" in out
    for name in ("m.choice.json", "record.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "measured" / name).read_bytes()

    # The test path (--stale-record-fails, `bazel test`'s --define=stale_records=fail): the same stale
    # record, or none, is one line naming why and the refresh command; nothing compiled or written.
    for given, why in (([f"--record={stale}"], "stale.json is stale (margin 0.1 (recorded) vs 0.05)"),
                       ([], "none committed")):
        failing = tmp_path / ("fails" + str(len(given)))
        assert _choose_cli(tmp_path, failing, *ordered([builds[chosen], builds[other]]),
                           extra=["--stale-record-fails", *given]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"no strategy record matches ({why})" in err[0], err
        assert "`bazel run //tools:tune -- //models:matmul_host` refreshes" in err[0], err
        assert not any(failing.iterdir())

    # A build left out without a record, or the record's choice not given: one line, no output.
    assert _choose_cli(tmp_path, tmp_path / "bad", *ordered([builds[chosen], unbuilt])) == 1
    assert "needs --record" in capsys.readouterr().err
    chosen_unbuilt = (chosen, "none", "none", builds[chosen][3], "none")
    assert _choose_cli(tmp_path, tmp_path / "bad2", *ordered([builds[other], chosen_unbuilt]),
                       extra=["--record", str(record)]) == 1
    assert f"chose {chosen}, whose build is not given" in capsys.readouterr().err
    assert not any((tmp_path / d / "m.choice.json").exists() for d in ("bad", "bad2"))

    # Edited by hand (issue 62): the other build chosen, its figure made up to fit. The hash the
    # tool wrote no longer matches: one line naming the record and its refresh, nothing shipped.
    edited = tmp_path / "edited.json"
    text = record.read_text()
    figures = __import__("json").loads(text)["choice"]["candidates"]
    edited.write_text(text.replace(f'"chosen": "{chosen}"', f'"chosen": "{other}"', 1)
                      .replace(f'"{other}": {figures[other]}', f'"{other}": 1', 1))
    assert _choose_cli(tmp_path, tmp_path / "bad3", *ordered([builds[chosen], builds[other]]),
                       extra=["--record", str(edited)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "edited.json: its figures do not match its choice_sha256" in err[0], err
    assert "`bazel run //tools:tune -- //models:matmul_host` rewrites it" in err[0]
    assert not any((tmp_path / "bad3").iterdir())


def test_confirm_measures_the_candidates_own_builds_and_compiles_nothing(tmp_path, monkeypatch, capsys):
    """Issue 63: what --confirm measures is each candidate's own compile (the vmfb that ships if it
    is chosen, a cached Bazel action) with the layout that compile wrote; choice compiles nothing.
    Only a stale record's missing build, IREE's default among them, is compiled here."""
    import types

    import codegen.compile
    import perf.measure
    from choice import choose as choose_module
    from common.targets import load_target

    targets, builds = {}, {}
    for strategy in ("channelslast", "datatiling", "codegen"):
        target = tmp_path / f"{strategy}.target.yaml"
        derived = load_target(RISCV_TARGET)
        if strategy != "codegen":
            derived = derived.with_strategy(strategy)
        target.write_text(yaml.safe_dump(derived.model_dump(mode="json"), sort_keys=False))
        targets[strategy] = target
        out = tmp_path / strategy
        _compile_named(target, out, "b", layout=True)
        builds[strategy] = out
    compiles, measured = [], []
    real_compile = codegen.compile.compile_module
    monkeypatch.setattr(codegen.compile, "compile_module",
                        lambda module, options, out: compiles.append(Path(options.target).name)
                        or real_compile(module, options, out))
    cycles = {"channelslast": 100, "datatiling": 80, "codegen": 120}

    def fake_measure(module, build, hardware, runner, plugin, model_name, *, shipped, qemu):
        vmfb, layout = build.vmfb, build.layout
        given = next((s for s, out in builds.items() if vmfb == out / "b.vmfb"), None)
        strategy = given or vmfb.parent.name  # else compiled here, into builds/<strategy>/ or default/codegen/
        assert layout == vmfb.with_name("b.layout.json" if given else "build.layout.json")
        measured.append(strategy)
        run = types.SimpleNamespace(inference_memory_aware_cycles=cycles[strategy], inference_energy_pj=1000)
        return types.SimpleNamespace(runs=[run])

    monkeypatch.setattr(perf.measure, "measure", fake_measure)
    monkeypatch.setattr(choose_module, "choose_by_code", lambda *a, **kw: (
        "datatiling", {"by": "code", "candidates": {"channelslast": 100, "datatiling": 60}, "chosen": "datatiling",
                       "reason": "priced"}))
    tools = [tmp_path / n for n in ("hw.yaml", "runner", "plugin.so", "qemu")]
    for t in tools:
        t.write_text("")
    given = lambda s: ("--candidate", s, builds[s] / "b.vmfb", builds[s] / "b.json", targets[s], "none")
    layout = lambda s: ("--layout", s, builds[s] / "b.layout.json")

    def run(out, *extra):
        argv = ["--by", "code-cycles", "--hardware", str(HOST_HW), "--module", str(MATMUL),
                "--llvm-bin", str(LLVM_MCA.absolute().parent),
                "--confirm", str(tools[0]), str(tools[1]), str(tools[2]), "m", "--qemu", str(tools[3]),
                "--out-choice", str(out / "m.choice.json"), "--out-chosen-vmfb", str(out / "m.chosen.vmfb"),
                "--out-chosen-report", str(out / "m.chosen.report.json"), *map(str, extra)]
        out.mkdir()
        return choose_module.main(argv)

    # Every build given: three measured, none compiled, the chosen vmfb the candidate's own bytes.
    assert run(tmp_path / "given", *given("channelslast"), *given("datatiling"), *layout("channelslast"), *layout("datatiling"),
               "--default-build", builds["codegen"] / "b.vmfb", builds["codegen"] / "b.json",
               builds["codegen"] / "b.layout.json") == 0
    assert compiles == [] and measured == ["channelslast", "codegen", "datatiling"]
    assert (tmp_path / "given" / "m.chosen.vmfb").read_bytes() == (builds["datatiling"] / "b.vmfb").read_bytes()

    # Without --default-build, IREE's default is the one build compiled here (a stale record's).
    measured.clear()
    assert run(tmp_path / "compiled", *given("channelslast"), *given("datatiling"), *layout("channelslast"),
               *layout("datatiling")) == 0
    assert compiles == ["channelslast.target.yaml"] and measured == ["channelslast", "codegen", "datatiling"]

    # A built candidate without the layout its compile wrote: one line, nothing written.
    capsys.readouterr()
    assert run(tmp_path / "bad", *given("channelslast"), *given("datatiling"), *layout("channelslast")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "candidate datatiling has no --layout" in err[0], err
    assert not any((tmp_path / "bad").iterdir())
