"""choice.tune's measured choice on synthetic measurements: the fewest model cycles wins, ties and
failures keep IREE's default, a failing round is split so one bad candidate costs no other its
measurement, and a default that cannot be measured is an error."""

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.analysis_schema import Analysis
from perf.measure import PerfError
from choice.rounds import Measured
from codegen.compile import CompileError
from perf.code_model.cost import CallCycles
from perf.code_model.errors import CodeCostError
from choice import records
from choice.tune import (DEFAULT, TuneError, choose_tiles_by_code, code_choice_markdown, code_rank,
                       replay, round_assignments, shortlist, to_markdown, tune)

LOOPS = [{"name": "d0", "bound": 16, "kind": "parallel"}, {"name": "d1", "bound": 16, "kind": "parallel"},
         {"name": "d2", "bound": 16, "kind": "reduction"}]


def _candidate(name: str, predicted: float, reg: int) -> dict:
    return {"name": name, "generator": "iree-default" if name == DEFAULT else "search",
            "tiles": {"register": [1, reg, 1], "l1": [16, 16, 16], "l2": [16, 16, 16]},
            "features": {"workgroups": 2.0}, "predicted_cycles": predicted, "reason": "test"}


def _analysis(dispatches: dict[str, list[str]], signatures: dict[str, str] | None = None) -> Analysis:
    """One matmul dispatch per entry, its candidates in predicted order (cheapest first)."""
    out = []
    for name, names in dispatches.items():
        signature = (signatures or {}).get(name, name)
        cands = [_candidate(n, 100.0 + i, 2 ** (i % 4)) for i, n in enumerate(names)]
        out.append({"name": name, "executable": name, "root_op": "linalg.matmul", "kind": "matmul",
                    "loops": LOOPS, "operands": [], "signature": signature, "provenance": "iree-default",
                    "reason": "analysed", "tiles": None,
                    "cost": {"latency_cycles": 100.0, "model": "tile-cost:uncalibrated", "mac_utilization": 0.5},
                    "candidates": cands, "chosen": DEFAULT})
    return Analysis.model_validate({
        "model": "m", "target": "riscv_rvv", "hardware": "riscv_rvv", "hardware_sha256": "0" * 64,
        "vector_lanes_f32": 4, "dispatches": out,
        "summary": {"dispatches": len(out), "distinct_ops": len(out), "zigzag": 0, "analytical": 0,
                    "iree_default": len(out), "search": 0}})


class FakeCore:
    """Memory-aware cycles per (dispatch, candidate compiled for it) (`memory`: the core's model
    cycles beside them, if they differ); `broken` candidates fail to run, with an error naming
    their dispatch as perf.measure's does (`named`) or not."""

    def __init__(self, cycles: dict[tuple[str, str], int], broken=(), named: bool = True,
                 core: dict[tuple[str, str], int] | None = None):
        self.cycles, self.broken, self.named, self.calls = cycles, set(broken), named, []
        self.core = core or cycles

    def __call__(self, analysis: dict, only: set[str], tag: str) -> dict[str, Measured]:
        chosen = {d["name"]: d["chosen"] for d in analysis["dispatches"]}
        self.calls.append({d: chosen[d] for d in only})
        for d in sorted(only):
            if (d, chosen[d]) in self.broken:
                raise PerfError(f"{d}: runner failed under qemu (exit 1): boom", d if self.named else None)
        return {d: Measured(model_cycles=self.core[(d, chosen[d])], memory_aware_cycles=self.cycles[(d, chosen[d])],
                            energy_pj=1.0, traffic_bytes={"l1d": 640, "l2": 128, "dram": 64}) for d in only}


class FakeCode:
    """Code-model cycles of one call per (dispatch, candidate); `broken` configs IREE rejects."""

    def __init__(self, cycles: dict[tuple[str, str], float], broken=()):
        self.cycles, self.broken, self.calls = cycles, set(broken), []

    def __call__(self, analysis: dict, only: set[str], tag: str) -> CallCycles:
        chosen = {d["name"]: d["chosen"] for d in analysis["dispatches"]}
        self.calls.append({d: chosen[d] for d in only})
        for d in only:
            if (d, chosen[d]) in self.broken:
                raise CompileError(f"codegen: {d}: failed to legalize")
        return CallCycles({d: self.cycles[(d, chosen[d])] for d in only}, set())


def test_the_code_model_ranks_the_shortlist_among_the_best_predicted():
    a = _analysis({"x": [DEFAULT, "a", "b", "c", "d"]})
    code = FakeCode({("x", DEFAULT): 100, ("x", "a"): 90, ("x", "b"): 50, ("x", "c"): 10, ("x", "d"): 1})
    ranked, _ = code_rank(a, code, 4)
    by = {c.name: c for c in ranked.dispatches[0].candidates}
    assert {n: c.code_model_cycles for n, c in by.items()} == {DEFAULT: 100, "a": 90, "b": 50, "c": 10, "d": None}
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 3) == [DEFAULT, "c", "b"]
    # Beyond the costed ones the predicted order goes on.
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 6) == [DEFAULT, "c", "b", "a", "d"]


def test_a_config_iree_rejects_gets_a_code_error_and_costs_no_other_its_ranking():
    a = _analysis({"x": [DEFAULT, "a", "b"], "y": [DEFAULT, "a", "b"]})
    code = FakeCode({(d, c): 10.0 * i + (d == "y") for d in "xy" for i, c in enumerate([DEFAULT, "a", "b"])},
                    broken={("x", "a")})
    ranked, log = code_rank(a, code, 3)
    by = {(d.name, c.name): c for d in ranked.dispatches for c in d.candidates}
    assert by[("x", "a")].code_model_cycles is None and "failed to legalize" in by[("x", "a")].code_error
    assert by[("y", "a")].code_model_cycles == 11.0 and by[("y", "a")].code_error is None
    assert any("split in two" in line for line in log)


def test_a_module_the_code_model_cannot_read_is_costed_once_not_bisected():
    """opt refusing the linked module fails every candidate alike: round 0 (IREE's defaults)
    says so, and no candidate is blamed or compiled again."""
    a = _analysis({"x": [DEFAULT, "a", "b"], "y": [DEFAULT, "a", "b"]})

    class Unreadable(FakeCode):
        def __call__(self, analysis, only, tag):
            self.calls.append(tag)
            raise CodeCostError("opt cannot read IREE's IR: Broken module found")

    code = Unreadable({})
    ranked, log = code_rank(a, code, 3)
    assert len(code.calls) == 1
    cands = [c for d in ranked.dispatches for c in d.candidates]
    assert all(c.code_model_cycles is None and "Broken module" in c.code_error for c in cands)
    assert any("cannot cost the module with IREE's defaults" in line for line in log)
    # The shortlist falls back to the predicted order.
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 2) == [DEFAULT, "a"]


def test_the_cheapest_candidates_reduction_blocked_twin_is_always_measured():
    """The code model prices every load as an L1 hit, so it cannot see what blocking a
    contraction's reduction at L1 buys: the twin of its cheapest candidate is measured too."""
    a = _analysis({"x": [DEFAULT, "a", "a+kblock", "b", "b+kblock"]})
    code = FakeCode({("x", DEFAULT): 100, ("x", "a"): 90, ("x", "a+kblock"): 95, ("x", "b"): 50,
                     ("x", "b+kblock"): 55})
    ranked, _ = code_rank(a, code, 5)
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 2) == [DEFAULT, "b", "b+kblock"]
    # already shortlisted: not twice; IREE's default cheapest: its own twin
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 3) == [DEFAULT, "b", "b+kblock"]
    a = _analysis({"x": [DEFAULT, "iree-default+kblock", "a"]})
    ranked, _ = code_rank(a, FakeCode({("x", DEFAULT): 10, ("x", "iree-default+kblock"): 12, ("x", "a"): 50}), 3)
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 2) == [DEFAULT, "iree-default+kblock"]
    ranked, _ = code_rank(a, FakeCode({("x", DEFAULT): 10, ("x", "iree-default+kblock"): 12, ("x", "a"): 5}), 3)
    assert shortlist(ranked.model_dump(mode="json")["dispatches"][0], 2) == [DEFAULT, "a"]  # a has no twin


def test_shortlist_is_the_default_then_the_best_predicted():
    a = _analysis({"x": ["zigzag", DEFAULT, "a", "b", "c"]}).model_dump(mode="json")
    assert shortlist(a["dispatches"][0], 3) == [DEFAULT, "zigzag", "a"]
    assert round_assignments(a, 3) == [{"x": DEFAULT}, {"x": "zigzag"}, {"x": "a"}]


def test_zigzags_own_mapping_is_always_measured():
    """Ranked out of the shortlist, ZigZag's mapping is still measured, one candidate more."""
    a = _analysis({"x": ["a", DEFAULT, "b", "zigzag"], "y": ["a", DEFAULT, "b"]}).model_dump(mode="json")
    assert shortlist(a["dispatches"][0], 3) == [DEFAULT, "a", "b", "zigzag"]
    assert shortlist(a["dispatches"][1], 3) == [DEFAULT, "a", "b"]
    assert round_assignments(a, 3)[3] == {"x": "zigzag", "y": DEFAULT}


def test_fewest_model_cycles_wins_and_every_measurement_is_recorded():
    a = _analysis({"x": [DEFAULT, "a", "b"], "y": ["a", DEFAULT]})
    core = FakeCore({("x", DEFAULT): 100, ("x", "a"): 120, ("x", "b"): 70,
                     ("y", DEFAULT): 50, ("y", "a"): 60})
    out, _ = tune(a, core, 4, "riscv_rvv", "sifive-p670")
    x, y = out.dispatches
    assert (x.chosen, x.provenance, x.tiles["register"]) == ("b", "search", [1, 4, 1])
    assert {c.name: c.measured_memory_aware_cycles for c in x.candidates} == {DEFAULT: 100, "a": 120, "b": 70}
    assert (y.chosen, y.tiles) == (DEFAULT, None) and "IREE's default kept" in y.reason
    assert "0.700x" in x.reason and out.measured_choice.measured == 5
    assert out.summary.search == 1 and out.summary.iree_default == 1
    # Round 0 measures every default at once; later rounds only what changed.
    assert core.calls[0] == {"x": DEFAULT, "y": DEFAULT}
    assert "| x | matmul | b | 100 | 70 | 0.700 |" in to_markdown(out)
    # The output is a valid analysis, and its cost is the chosen candidate's prediction.
    again = Analysis.model_validate_json(out.model_dump_json())
    assert again.dispatches[0].cost.latency_cycles == 102.0


def test_memory_aware_cycles_decide_not_the_cores_model_cycles():
    """A candidate the core model prices cheaper (every load an L1 hit) but whose traffic makes it
    slower on the memory hierarchy loses; both figures are recorded."""
    a = _analysis({"x": [DEFAULT, "a"]})
    core = FakeCore({("x", DEFAULT): 100, ("x", "a"): 130}, core={("x", DEFAULT): 90, ("x", "a"): 60})
    out, _ = tune(a, core, 4, "riscv_rvv", "sifive-p670")
    x = out.dispatches[0]
    assert x.chosen == DEFAULT and "memory-aware cycles" in x.reason
    assert {c.name: (c.measured_model_cycles, c.measured_memory_aware_cycles) for c in x.candidates} == {
        DEFAULT: (90, 100), "a": (60, 130)}


def test_a_tie_keeps_iree_default():
    a = _analysis({"x": [DEFAULT, "a"]})
    out, _ = tune(a, FakeCore({("x", DEFAULT): 100, ("x", "a"): 100}), 4, "riscv_rvv", "p670")
    assert out.dispatches[0].chosen == DEFAULT


def test_a_failing_candidate_is_recorded_and_costs_no_other_its_measurement():
    a = _analysis({"x": [DEFAULT, "a"], "y": [DEFAULT, "a"]})
    core = FakeCore({("x", DEFAULT): 100, ("x", "a"): 10, ("y", DEFAULT): 100, ("y", "a"): 50},
                    broken={("x", "a")})
    out, log = tune(a, core, 4, "riscv_rvv", "p670")
    x, y = out.dispatches
    assert x.chosen == DEFAULT and "runner failed" in next(c for c in x.candidates if c.name == "a").measure_error
    assert y.chosen == "a"  # measured alone after its round failed together with x's candidate
    assert out.measured_choice.failed == 1 and any("x set apart" in line for line in log)


def test_a_failure_naming_its_dispatch_sets_that_one_apart_else_the_round_is_halved():
    names = [f"d{i}" for i in range(8)]
    a = _analysis({n: [DEFAULT, "a"] for n in names})
    cycles = {(n, c): 100 if c == DEFAULT else 50 for n in names for c in (DEFAULT, "a")}
    everyone = {n: "a" for n in names}
    # perf.measure names the dispatch whose run failed: one run more, not one per halving.
    core = FakeCore(cycles, broken={("d5", "a")})
    out, log = tune(a, core, 4, "riscv_rvv", "p670")
    assert core.calls[1:] == [everyone, {"d5": "a"}, {n: "a" for n in names if n != "d5"}]
    assert [d.chosen for d in out.dispatches] == ["a"] * 5 + [DEFAULT] + ["a"] * 2
    assert out.measured_choice.failed == 1 and any("d5 set apart" in line for line in log)
    # An error naming no dispatch (or one outside the group) halves the group until it is alone.
    core = FakeCore(cycles, broken={("d5", "a")}, named=False)
    again, log = tune(a, core, 4, "riscv_rvv", "p670")
    assert [d.chosen for d in again.dispatches] == [d.chosen for d in out.dispatches]
    assert len(core.calls) == 1 + 7  # 8, 4 (d0-d3 ok), 4, 2 (d4, d5), d4, d5, 2 (d6, d7)
    assert any("split in two" in line for line in log)


def test_dispatches_of_one_root_op_are_each_measured():
    # Same root op, other fused code: one dispatch's winner can lose on the other.
    a = _analysis({"x": [DEFAULT, "a"], "y": [DEFAULT, "a"]}, signatures={"x": "s", "y": "s"})
    core = FakeCore({("x", DEFAULT): 10, ("x", "a"): 5, ("y", DEFAULT): 10, ("y", "a"): 11})
    out, _ = tune(a, core, 4, "riscv_rvv", "p670")
    assert [d.chosen for d in out.dispatches] == ["a", DEFAULT]
    assert (out.measured_choice.dispatches, out.measured_choice.measured) == (2, 4)


def test_default_that_cannot_be_measured_is_an_error():
    """Unnamed (the runner, qemu or the plugin failed for all), or named for every dispatch."""
    a = _analysis({"x": [DEFAULT, "a"]})
    with pytest.raises(TuneError, match="IREE's default configs cannot be measured"):
        tune(a, FakeCore({}, broken={("x", DEFAULT)}, named=False), 4, "riscv_rvv", "p670")
    with pytest.raises(TuneError, match="no dispatch's ran"):
        tune(a, FakeCore({}, broken={("x", DEFAULT)}), 4, "riscv_rvv", "p670")


def test_a_dispatch_whose_default_run_fails_keeps_it_and_the_others_are_chosen():
    """qemu 7.2 aborts on some dispatches' RVV code (a new UNet's initializer): that dispatch has
    nothing to compare against, so it keeps IREE's default, says why, and costs no other its choice."""
    a = _analysis({"x": [DEFAULT, "a"], "y": [DEFAULT, "a"]})
    core = FakeCore({("y", DEFAULT): 10, ("y", "a"): 5}, broken={("x", DEFAULT)})
    out, log = tune(a, core, 4, "riscv_rvv", "p670")
    x, y = out.dispatches
    assert x.chosen == DEFAULT and x.tiles is None and "IREE's default kept, its run failed" in x.reason
    assert x.candidates[0].measure_error and all("x" not in c or c["x"] == DEFAULT for c in core.calls)
    assert y.chosen == "a"
    assert any("x: IREE's default not measurable, kept" in line for line in log)
    assert "| x | matmul | iree-default | failed | failed | - |" in to_markdown(out)


def test_dispatch_without_a_choice_is_not_measured():
    a = _analysis({"x": [DEFAULT], "y": [DEFAULT, "a"]})
    core = FakeCore({("y", DEFAULT): 5, ("y", "a"): 4})
    out, _ = tune(a, core, 4, "riscv_rvv", "p670")
    assert all("x" not in c for c in core.calls)
    assert out.dispatches[0].model_dump() == a.dispatches[0].model_dump()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=2, max_size=6), st.integers(2, 6))
def test_never_chosen_slower_than_iree_default(cycles, size):
    names = [DEFAULT] + [f"c{i}" for i in range(len(cycles) - 1)]
    a = _analysis({"x": names})
    out, _ = tune(a, FakeCore({("x", n): c for n, c in zip(names, cycles)}), size, "riscv_rvv", "p670")
    chosen = next(c for c in out.dispatches[0].candidates if c.name == out.dispatches[0].chosen)
    assert chosen.measured_memory_aware_cycles <= cycles[0]
    assert chosen.measured_memory_aware_cycles == min(cycles[:size])


def _record_of(a, out, size: int, ranked: int):
    key = records.RecordKey(model="m", target="t", target_sha256="0", hardware="riscv_rvv", hardware_sha256="0",
                            module_sha256="0", candidates_per_dispatch=size, code_ranked=ranked, tools={},
                            dispatches={d.name: records.dispatch_key(d) for d in a.dispatches})
    record = records.make_record("m_riscv", "refresh", key, out)
    # Through the file text, as a build reads a committed record.
    return records.TuningRecord.model_validate_json(records.dump_record(record))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=4, max_size=4), st.integers(2, 4), st.booleans(),
       st.sampled_from([None, ("x", "a"), ("x", DEFAULT), ("y", "b")]))
def test_a_record_replays_to_the_measured_choice_byte_for_byte(cycles, size, ranked, broken):
    """What a build replaying a record writes is what measuring wrote: analysis and table, with
    failures (a candidate's, a dispatch's default) and with or without the code-model ranking."""
    names = [DEFAULT, "a", "b", "c"]
    a = _analysis({"x": names, "y": names, "z": [DEFAULT]})
    figures = {(d, n): c + (d == "y") for d in "xyz" for n, c in zip(names, cycles)}
    costed = a
    if ranked:
        costed, _ = code_rank(a, FakeCode({k: v / 3 for k, v in figures.items()}, broken={("y", "c")}), 3)
    out, _ = tune(costed, FakeCore(figures, broken={broken} if broken else ()), size, "riscv_rvv", "p670",
                  3 if ranked else 0)
    again, why = replay(a, _record_of(a, out, size, 3 if ranked else 0), size, "riscv_rvv", "p670", 3 if ranked else 0)
    assert why == ""
    assert json.dumps(again.model_dump(mode="json"), sort_keys=True) == json.dumps(out.model_dump(mode="json"), sort_keys=True)
    assert to_markdown(again) == to_markdown(out)


def test_a_record_lacking_a_figure_or_with_one_too_many_is_not_replayed():
    names = [DEFAULT, "a", "b"]
    a = _analysis({"x": names})
    out, _ = tune(a, FakeCore({("x", n): 10 - i for i, n in enumerate(names)}), 3, "riscv_rvv", "p670")
    record = _record_of(a, out, 3, 0)
    # A larger shortlist than was measured: candidate b... was measured, a bigger one is not.
    _, why = replay(_analysis({"x": names + ["c"]}), record, 4, "riscv_rvv", "p670", 0)
    assert why.startswith("it lacks the measurement of x's candidate c"), why
    # A smaller shortlist: the record holds a measurement the choice would not make.
    _, why = replay(a, record, 2, "riscv_rvv", "p670", 0)
    assert why.startswith("it has a measurement of x's candidate b"), why
    # Code-model figures recorded but the choice is not ranked by the code model.
    costed, _ = code_rank(a, FakeCode({("x", n): 1.0 for n in names}), 3)
    ranked_out, _ = tune(costed, FakeCore({("x", n): 10 - i for i, n in enumerate(names)}), 3, "riscv_rvv",
                         "p670", 3)
    _, why = replay(a, _record_of(a, ranked_out, 3, 3), 3, "riscv_rvv", "p670", 0)
    assert why.startswith("it has a code-model figure of x's candidate"), why


class PlacedCore(FakeCore):
    """FakeCore whose candidates also run under buffer placements: `spread[(dispatch, candidate)]`
    is added to placement p's figure times p (placement 0 is the plain figure)."""

    def __init__(self, cycles, spread):
        super().__init__(cycles)
        self.spread, self.placed = spread, []

    def __call__(self, analysis, only, tag, placements=(0,)):
        out = super().__call__(analysis, only, tag)
        if placements == (0,):
            return out
        chosen = {d["name"]: d["chosen"] for d in analysis["dispatches"]}
        self.placed.append((tag, {d: chosen[d] for d in only}, placements))
        return {d: Measured(m.model_cycles, m.memory_aware_cycles + placements[0] * self.spread[(d, chosen[d])],
                            m.energy_pj, m.traffic_bytes,
                            tuple(self.cycles[(d, chosen[d])] + p * self.spread[(d, chosen[d])] for p in placements))
                for d, m in out.items()}


def test_a_switch_must_win_under_every_placement():
    """x's candidate a wins at placement 0 by 1% but loses under placement 3: within the spread,
    IREE's default is kept. y's b wins by 10% under all four: it switches. z's default wins:
    nothing else is run. A tie is a tie."""
    names = [DEFAULT, "a", "b"]
    a = _analysis({"x": names, "y": names, "z": names, "t": names, "u": []})  # u: no candidates at all
    cycles = {("x", DEFAULT): 1000, ("x", "a"): 990, ("x", "b"): 2000,
              ("y", DEFAULT): 1000, ("y", "a"): 1500, ("y", "b"): 900,
              ("z", DEFAULT): 500, ("z", "a"): 600, ("z", "b"): 700,
              ("t", DEFAULT): 500, ("t", "a"): 500, ("t", "b"): 700}
    spread = {k: 0 for k in cycles} | {("x", "a"): 5, ("y", "b"): 5, ("y", DEFAULT): -3}
    core = PlacedCore(cycles, spread)
    out, log = tune(a, core, 3, "riscv_rvv", "p670", 0, placements=4)
    chosen = {d.name: d.chosen for d in out.dispatches}
    assert chosen == {"x": DEFAULT, "y": "b", "z": DEFAULT, "t": DEFAULT, "u": DEFAULT}
    # Only the provisional switches (x: a, y: b) and their defaults ran under placements 1..3.
    assert sorted((tag, tuple(sorted(group.items())), p) for tag, group, p in core.placed) == [
        ("placements_candidates", (("x", "a"), ("y", "b")), (1, 2, 3)),
        ("placements_default", (("x", DEFAULT), ("y", DEFAULT)), (1, 2, 3))]
    by = {(d.name, c.name): c for d in out.dispatches for c in d.candidates}
    assert by[("x", "a")].measured_placement_memory_aware_cycles == [995, 1000, 1005]
    assert by[("y", DEFAULT)].measured_placement_memory_aware_cycles == [997, 994, 991]
    assert by[("z", "a")].measured_placement_memory_aware_cycles is None
    x = next(d for d in out.dispatches if d.name == "x")
    assert "within the placement spread" in x.reason and out.measured_choice.placements == 4
    # The record carries the placement figures and replays to the same choice; without them it
    # does not stand in for a measurement.
    key = records.RecordKey(model="m", target="t", target_sha256="0", hardware="riscv_rvv", hardware_sha256="0",
                            module_sha256="0", candidates_per_dispatch=3, code_ranked=0, tools={}, placements=4,
                            dispatches={d.name: records.dispatch_key(d) for d in a.dispatches})
    record = records.TuningRecord.model_validate_json(records.dump_record(records.make_record("m_riscv", "r", key, out)))
    again, why = replay(a, record, 3, "riscv_rvv", "p670", 0, placements=4)
    assert why == "" and again.model_dump() == out.model_dump()
    stripped = record.model_copy(deep=True)
    stripped.results["y"]["b"].measured.placement_memory_aware_cycles = None
    _, why = replay(a, stripped, 3, "riscv_rvv", "p670", 0, placements=4)
    assert why == "it lacks the 4 placement figures of y's candidate b", why


def test_a_key_difference_names_the_component():
    a = _analysis({"x": [DEFAULT, "a"], "y": [DEFAULT, "a"]})
    b = _analysis({"x": [DEFAULT, "a", "b"], "y": [DEFAULT, "a"]})
    def key(an, **kw):
        fields = dict(model="m", target="t", target_sha256="0", hardware="h", hardware_sha256="0", module_sha256="0",
                      candidates_per_dispatch=3, code_ranked=6, tools={"qemu": "1"},
                      dispatches={d.name: records.dispatch_key(d) for d in an.dispatches})
        return records.RecordKey(**{**fields, **kw})
    assert records.key_differences(key(a), key(a)) == []
    assert records.key_differences(key(a), key(b)) == ["dispatch x's candidate list changed"]
    assert records.key_differences(key(a), key(a, tools={"qemu": "2"})) == ["tool qemu 1 (recorded) vs 2"]
    assert records.key_differences(key(a), key(a, hardware_sha256="1")) == ["hardware_sha256 0 (recorded) vs 1"]


def test_code_model_choice_takes_the_cheapest_only_past_the_margin():
    a = _analysis({"x": [DEFAULT, "a", "b", "c"], "y": [DEFAULT, "a", "b"], "z": [DEFAULT, "a"]})
    code = FakeCode({("x", DEFAULT): 100, ("x", "a"): 90, ("x", "b"): 80, ("x", "c"): 1,
                     ("y", DEFAULT): 100, ("y", "a"): 96, ("y", "b"): 97,
                     ("z", DEFAULT): 100, ("z", "a"): 120})
    ranked, _ = code_rank(a, code, 3)  # "c" is 4th by prediction: not costed, not chosen
    out = choose_tiles_by_code(ranked, 0.05, "host", "znver3", 3)
    chosen = {d.name: d.chosen for d in out.dispatches}
    assert chosen == {"x": "b", "y": DEFAULT, "z": DEFAULT}
    by = {d.name: d for d in out.dispatches}
    assert by["x"].tiles == next(c.tiles for c in by["x"].candidates if c.name == "b")
    assert by["y"].tiles is None and "a at 96" in by["y"].reason and "IREE's default kept" in by["y"].reason
    mc = out.measured_choice
    assert (mc.by, mc.margin, mc.core, mc.dispatches, mc.measured, mc.failed) == ("code-model", 0.05, "znver3", 3, 8, 0)
    assert "| x | matmul | b | 100 | 80 | 0.800 |" in code_choice_markdown(out)


def _with_loads(analysis: Analysis, loads: dict[tuple[str, str], float]) -> Analysis:
    return analysis.model_copy(update={"dispatches": [d.model_copy(update={"candidates": [
        c.model_copy(update={"features": {**c.features, "vector_loads": loads[(d.name, c.name)]}})
        for c in d.candidates]}) for d in analysis.dispatches]})


def test_a_calibrated_term_reprices_the_code_model_choice(tmp_path):
    from choice.tune import load_code_calibration

    # "a" is 20% cheaper by code-model cycles but loads 300 more vectors: at 0.1 cycle a load
    # it is 10% dearer than IREE's default, so the default is kept; without the term, "a" wins.
    a = _with_loads(_analysis({"x": [DEFAULT, "a"]}), {("x", DEFAULT): 0.0, ("x", "a"): 300.0})
    ranked, _ = code_rank(a, FakeCode({("x", DEFAULT): 100, ("x", "a"): 80}), 2)
    path = tmp_path / "host.code_model.json"
    path.write_text(json.dumps({"hardware": "host", "feature": "vector_loads", "cycles_per_unit": {"znver3": 0.1},
                                "fitted_on": "test", "tau": {}}))
    term = load_code_calibration(path, "host", "znver3")
    assert choose_tiles_by_code(ranked, 0.05, "host", "znver3", 2).dispatches[0].chosen == "a"
    out = choose_tiles_by_code(ranked, 0.05, "host", "znver3", 2, term)
    d = out.dispatches[0]
    assert d.chosen == DEFAULT and "a at 110 calibrated code-model price vs IREE's default 100" in d.reason
    assert "code-model cycles + 0.1 x vector_loads, host.code_model.json" in d.reason
    assert out.measured_choice.code_calibration == term
    assert "| x | matmul | iree-default | 100 | 100 | 1.000 | iree-default: 100, a: 110 |" in code_choice_markdown(out)
    for hardware, core, error in (("riscv_rvv", "znver3", "fitted for 'host', not 'riscv_rvv'"),
                                  ("host", "sapphirerapids", "no weight for core sapphirerapids")):
        with pytest.raises(TuneError, match=error):
            load_code_calibration(path, hardware, core)
    no_loads = ranked.model_copy(update={"dispatches": [d.model_copy(update={"candidates": [
        c.model_copy(update={"features": {"workgroups": 2.0}}) for c in d.candidates]}) for d in ranked.dispatches]})
    with pytest.raises(TuneError, match="candidate a: no feature vector_loads"):
        choose_tiles_by_code(no_loads, 0.05, "host", "znver3", 2, term)
    path.write_text(json.dumps({"hardware": "host", "feature": "loads", "cycles_per_unit": {"znver3": 0.1},
                                "fitted_on": "test", "tau": {}}))
    with pytest.raises(TuneError, match="feature 'loads' is not a tile-model feature"):
        load_code_calibration(path, "host", "znver3")


def test_code_model_choice_keeps_a_default_it_cannot_cost_and_skips_failed_candidates():
    a = _analysis({"x": [DEFAULT, "a"], "y": [DEFAULT, "a", "b"]})
    code = FakeCode({("x", DEFAULT): 100, ("x", "a"): 1, ("y", DEFAULT): 100, ("y", "b"): 50},
                    broken=[("y", "a")])
    ranked, _ = code_rank(a, code, 3)
    # x's default priced as the code model does a dispatch it cannot cost (a run-time trip count).
    x = ranked.dispatches[0]
    x = x.model_copy(update={"candidates": [
        c.model_copy(update={"code_model_cycles": None, "code_error": "run-time trip count"})
        if c.name == DEFAULT else c for c in x.candidates]})
    ranked = ranked.model_copy(update={"dispatches": [x, ranked.dispatches[1]]})
    out = choose_tiles_by_code(ranked, 0.0, "host", "znver3", 3)
    by = {d.name: d for d in out.dispatches}
    assert by["x"].chosen == DEFAULT and "could not cost it (run-time trip count)" in by["x"].reason
    assert by["y"].chosen == "b" and out.measured_choice.failed == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1, 1e6), min_size=2, max_size=6), st.floats(0, 0.5))
def test_code_model_choice_is_never_predicted_slower_than_default(cycles, margin):
    names = [DEFAULT] + [f"c{i}" for i in range(len(cycles) - 1)]
    ranked, _ = code_rank(_analysis({"x": names}), FakeCode({("x", n): c for n, c in zip(names, cycles)}), 6)
    d = choose_tiles_by_code(ranked, margin, "host", "znver3", 6).dispatches[0]
    chosen = next(c for c in d.candidates if c.name == d.chosen)
    assert chosen.code_model_cycles == cycles[0] or chosen.code_model_cycles < (1 - margin) * cycles[0]
    if d.chosen != DEFAULT:
        assert chosen.code_model_cycles == min(cycles)


def _cli(tmp_path, hardware: Path, *extra: str) -> tuple[int, Path]:
    from common.hardware import load_hardware
    from common.files import sha256_file
    from choice.tune import main

    a = _analysis({"x": [DEFAULT, "a"]}).model_copy(update={
        "hardware": load_hardware(hardware).name, "hardware_sha256": sha256_file(hardware)})
    src = tmp_path / "in.analysis.json"
    src.write_text(a.model_dump_json())
    out = tmp_path / "out.analysis.json"
    code = main(["--module", str(tmp_path / "absent.mlirbc"), "--target", str(tmp_path / "t.yaml"),
                 "--analysis", str(src), "--hardware", str(hardware), "--runner", "r", "--plugin", "p",
                 "--qemu", "q", "--llvm-bin", str(tmp_path / "llvm"),
                 "--model-name", "m", "--candidates", "4", "--out", str(out), "--out-md", str(tmp_path / "out.md"), *extra])
    return code, out


def test_no_core_model_is_refused_with_the_reason_unless_the_predicted_choice_is_asked_for(tmp_path, capsys):
    rvv256 = Path(__file__).parents[1] / "perf" / "testdata" / "riscv_rvv256.yaml"
    code, out = _cli(tmp_path, rvv256)
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert err.count("\n") == 1 and "no model_core" in err and "VLEN 256" in err
    code, out = _cli(tmp_path, rvv256, "--allow-no-core-model")
    assert code == 0 and Analysis.model_validate_json(out.read_text()).measured_choice is None


def test_a_keyed_choice_without_a_core_model_writes_its_record_of_nothing_measured(tmp_path):
    # A hardware_sweep keys every variant's choice (tuning/records/sweeps); its VLEN-256 variant
    # keeps the predicted choice and still writes the record its build declares (CI once failed
    # on //models:mlp_sweep: "output ... mlp_sweep_vlen256_analysis.record.json was not created").
    from perf.mca import LLVM_TOOLS

    llvm = tmp_path / "llvm"
    (llvm / "_bin").mkdir(parents=True)
    (llvm / "lib").mkdir()
    for tool in LLVM_TOOLS:
        (llvm / tool).write_text(tool)
        (llvm / "_bin" / tool).write_text(tool)
    for f in ("absent.mlirbc", "t.yaml", "r", "p", "q"):
        (tmp_path / f).write_text(f)
    rvv256 = Path(__file__).parents[1] / "perf" / "testdata" / "riscv_rvv256.yaml"
    record = tmp_path / "out.record.json"
    cwd = os.getcwd()
    os.chdir(tmp_path)  # --runner r --plugin p --qemu q, relative
    try:
        code, out = _cli(tmp_path, rvv256, "--allow-no-core-model", "--record-name", "m_sweep_vlen256",
                         "--record-out", str(record), "--refresh-target", "//models:m_sweep_vlen256")
    finally:
        os.chdir(cwd)
    assert code == 0 and Analysis.model_validate_json(out.read_text()).measured_choice is None
    written = records.load_record(record)
    assert written.pipeline == "m_sweep_vlen256" and written.results == {}
    assert set(written.key.dispatches) == {"x"} and written.key.hardware == "riscv_rvv256"


def test_in_the_test_path_a_keyed_choice_without_a_matching_record_fails_naming_its_refresh(tmp_path, capsys):
    # `bazel test` (--define=stale_records=fail): a record that is missing or stale is one line
    # naming the refresh command, nothing measured or written, instead of minutes under qemu.
    from perf.mca import LLVM_TOOLS

    llvm = tmp_path / "llvm"
    (llvm / "_bin").mkdir(parents=True)
    (llvm / "lib").mkdir()
    for tool in LLVM_TOOLS:  # runnable: the record's key holds their versions
        for path in (llvm / tool, llvm / "_bin" / tool):
            path.write_text("#!/bin/sh\necho 'LLVM version 19.1.7'\n")
            path.chmod(0o755)
    for f in ("absent.mlirbc", "r", "p", "q"):
        (tmp_path / f).write_text(f)
    target = (Path(__file__).parents[1] / "common" / "targets" / "riscv64_rvv.yaml").read_text()
    (tmp_path / "t.yaml").write_text(target.replace("name: riscv64_rvv", "name: riscv_rvv", 1))  # the analysis'
    p670 = Path(__file__).parents[1] / "analysis" / "hardware" / "riscv_rvv.yaml"
    record = tmp_path / "out.record.json"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code, out = _cli(tmp_path, p670, "--record-name", "m_riscv", "--record-out", str(record),
                         "--refresh-target", "//models:m_riscv", "--stale-record-fails")
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and not out.exists() and not record.exists()
    assert len(err) == 1 and "no tuning record matches (none committed for m_riscv)" in err[0], err
    assert "`bazel run //tools:tune -- //models:m_riscv` refreshes tuning/records/m_riscv.json" in err[0], err


def test_a_code_ranking_of_one_candidate_is_refused(tmp_path, capsys):
    p670 = Path(__file__).parents[1] / "analysis" / "hardware" / "riscv_rvv.yaml"
    code, out = _cli(tmp_path, p670, "--code-ranked", "1")
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert err.count("\n") == 1 and "--code-ranked 1" in err


def test_an_analysis_of_other_hardware_is_refused(tmp_path, capsys):
    from choice.tune import main

    rvv256 = Path(__file__).parents[1] / "perf" / "testdata" / "riscv_rvv256.yaml"
    src = tmp_path / "in.analysis.json"
    src.write_text(_analysis({"x": [DEFAULT, "a"]}).model_dump_json())  # hardware riscv_rvv
    code = main(["--module", "m", "--target", "t", "--analysis", str(src), "--hardware", str(rvv256),
                 "--runner", "r", "--plugin", "p", "--qemu", "q", "--llvm-bin", str(tmp_path / "llvm"), "--model-name", "m", "--candidates", "4",
                 "--out", str(tmp_path / "o"),
                 "--out-md", str(tmp_path / "o.md")])
    assert code == 1 and "analysed against 'riscv_rvv'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_code_model_choice_needs_its_candidates_and_a_sane_margin(tmp_path, capsys):
    host = Path(__file__).parents[1] / "analysis" / "hardware" / "host.yaml"
    for extra, words in ((["--by", "code-model"], "needs --code-ranked"),
                         (["--by", "code-model", "--code-ranked", "4", "--margin", "1.5"], "--margin 1.5")):
        code, out = _cli(tmp_path, host, *extra)
        err = capsys.readouterr().err
        assert code == 1 and not out.exists()
        assert err.count("\n") == 1 and words in err, err



def test_knobs_a_measured_choice_cannot_use_are_refused_before_any_work(tmp_path, capsys):
    """Issue 80 probe: each ran to exit 0 (the margin is never read by a measured choice; --jobs 0)
    or failed deep in the run blamed on the module (a --run-cache that is a file)."""
    rvv = Path(__file__).parents[1] / "analysis" / "hardware" / "riscv_rvv.yaml"
    (tmp_path / "cache_file").write_text("")
    for extra, words in ((["--margin", "nan"], "--margin nan"), (["--margin", "-1"], "--margin -1.0"),
                         (["--margin", "inf"], "--margin inf"), (["--jobs", "0"], "--jobs 0"),
                         (["--run-cache", str(tmp_path / "cache_file")], "not a directory")):
        code, out = _cli(tmp_path, rvv, "--runner", "r", "--plugin", "p", "--qemu", "q", "--candidates", "3", *extra)
        err = capsys.readouterr().err
        assert code == 1 and not out.exists(), err
        assert err.count("\n") == 1 and words in err, err

if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
