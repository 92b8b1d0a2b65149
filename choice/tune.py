"""Chooses each dispatch's tiles by measurement on the accelerator's core model.

    python -m choice.tune --module M.mlirbc --target T.target.yaml --analysis M.analysis.json \\
        --hardware riscv_rvv.yaml --runner hal_runner_riscv64 --plugin libinsn_classes.so \\
        --qemu qemu-riscv64 --model-name M --candidates 3 --code-ranked 6 \\
        --out M_measured.analysis.json --out-md M_measured.md
    python -m choice.tune --by code-model --margin 0.05 --code-ranked 4 --module M.mlirbc \
        --target host.yaml --analysis M.analysis.json --hardware host.yaml --model-name M \
        --out M_chosen.analysis.json --out-md M_chosen.md

The tile-level cost model ranks candidates but does not predict which one wins on RISC-V well
enough to switch away from IREE's default (its cross-validated Kendall tau is in
docs/data/calibration/riscv_rvv.md, far below 0.6). Two cheaper-to-trust figures do:

1. With `--code-ranked K`, IREE's default and the K - 1 best predicted candidates of every
   dispatch are compiled (round j: every dispatch with its j-th) and costed statically by the
   code model (perf/code_model/: IREE's generated code, trip counts from its LLVM IR,
   llvm-mca per block; nothing runs). Their `code_model_cycles` rank the shortlist.
2. The shortlist is IREE's default plus the `--candidates - 1` cheapest others (by the code
   model, else by prediction); in round j every dispatch is compiled with its j-th
   shortlisted candidate (IREE's default once its list is exhausted) and the dispatches whose
   candidate changed are run whole under qemu and costed by llvm-mca (perf.measure).

Each dispatch keeps the candidate with the fewest measured model cycles; ties and failures
keep IREE's default, so no dispatch is chosen slower than IREE's default on that core model.
Every costed and shortlisted candidate's predicted, code-model and measured cycles are
recorded in the output analysis (same schema, `measured_choice` set), which codegen compiles
like any other.

For the host, whose time is not model cycles, `--by code-model --margin F` stops after step 1:
each dispatch takes its cheapest code-costed candidate when that is below (1 - F) x IREE's
default's code-model cycles, else keeps IREE's default (choose_tiles_by_code; nothing runs, so the
choice is as deterministic as the compile). The margin is chosen on the calibration models'
timings (HOST_CODE_MARGIN in choice/defs.bzl says how). With `--code-calibration C` (a
CodeModelCalibration, analysis/calibration/<hardware>.code_model.json) the price compared is the
code-model cycles plus C's weight for the core x one tile-model feature of the candidate: what
llvm-mca's L1-hit pricing misses, fitted on the calibration split's timings.

A candidate that does not compile or run is recorded with its one-line error and not
chosen. A dispatch whose own IREE-default run fails (e.g. qemu aborts translating it) keeps
IREE's default, the error recorded: there is nothing to compare against. When IREE's defaults
cannot be measured at all (an error naming no dispatch, or every dispatch's run failing), the
tool fails.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
from pathlib import Path

from common.hardware import HardwareError, load_hardware
from analysis.candidates import REDUCTION_BLOCKED
from analysis.cost_model import FEATURES
from common.analysis_schema import Analysis, Candidate, CodePriceTerm, Cost, Dispatch, MeasuredChoice, Summary
from common.calibration_schema import CodeModelCalibration
from common.errors import OneLineErrors, first_line
from common.files import check_outputs, sha256_file, write_together
from common.tuning_schema import TuningRecord
from common.targets import TargetError, load_target
from common.scratch import scratch_directory
from choice.choose import clears_margin
from choice.ray_engine import RayEngineError, connect
from perf import mca
from choice import records
from perf.measure import MEASURE_ERRORS
# What measures and prices a round (compiles it with codegen, runs it with perf): choice
# decides from what they return and compiles or runs nothing itself.
from choice.rounds import CODE_ROUND_ERRORS, CodeCostRound, MeasureRound, Measured
from perf.run_cache import RunCache

DEFAULT = "iree-default"


class TuneError(RuntimeError):
    """The measured choice cannot be made; the message names the culprit."""


ZIGZAG = "zigzag"  # ZigZag's own mapping, as the analysis translated it (analysis/candidates.py)


def shortlist(dispatch: dict, size: int) -> list[str]:
    """IREE's default, then the other candidates best ranked, `size` in all: those the code
    model costed (`code_model_cycles`) cheapest first, then the rest in the analysis'
    (predicted) order; plus ZigZag's own mapping where the analysis has one and it is not among
    them, so that ZigZag is always judged by the measurement (docs/design.md); plus the twin of
    the code model's cheapest candidate with its reduction blocked at L1 (REDUCTION_BLOCKED),
    which the code model, every load an L1 hit, cannot tell apart from it. Empty when IREE's
    default is not among the candidates (nothing to compare against)."""
    candidates = dispatch.get("candidates", [])
    if DEFAULT not in (c["name"] for c in candidates):
        return []
    others = [c for c in candidates if c["name"] != DEFAULT]
    costed = sorted((c for c in others if c.get("code_model_cycles") is not None),
                    key=lambda c: c["code_model_cycles"])  # stable: ties keep the predicted order
    rest = [c for c in others if c.get("code_model_cycles") is None]
    names = ([DEFAULT] + [c["name"] for c in costed + rest])[:size]
    if ZIGZAG not in names and any(c["name"] == ZIGZAG for c in others):
        names.append(ZIGZAG)
    cheapest = min((c for c in candidates if c.get("code_model_cycles") is not None),
                   key=lambda c: c["code_model_cycles"], default=None)  # ties: the earlier
    twin = cheapest["name"] + REDUCTION_BLOCKED if cheapest is not None else None
    if twin is not None and twin not in names and any(c["name"] == twin for c in others):
        names.append(twin)
    return names


def round_assignments(analysis: dict, size: int) -> list[dict[str, str]]:
    """Per round, dispatch -> candidate: round j compiles every dispatch with the j-th entry of
    its shortlist, or IREE's default beyond its end."""
    lists = {d["name"]: shortlist(d, size) for d in analysis["dispatches"]}
    rounds = max((len(v) for v in lists.values()), default=0)
    return [{name: (lst[j] if j < len(lst) else DEFAULT) for name, lst in lists.items() if lst}
            for j in range(rounds)]


def round_todo(assign: dict[str, str], j: int, choices: set[str], done) -> dict[str, str]:
    """What round `j` (dispatch -> candidate, `round_assignments`) measures: the dispatches with a
    choice to make, IREE's default in round 0 and other candidates after, none measured before
    (`done`: the (dispatch, candidate) pairs measured so far)."""
    return {d: c for d, c in assign.items() if d in choices and (j == 0 or c != DEFAULT) and (d, c) not in done}


def forced_analysis(analysis: dict, assign: dict[str, str], why: str) -> dict:
    """The analysis with each assigned dispatch compiled with that candidate's tiles."""
    out = json.loads(json.dumps(analysis))
    for d in out["dispatches"]:
        name = assign.get(d["name"])
        if name is None:
            continue
        cand = next(c for c in d["candidates"] if c["name"] == name)
        d["chosen"] = name
        d["provenance"] = cand["generator"]
        d["tiles"] = None if name == DEFAULT else cand["tiles"]
        d["reason"] = f"{why}: candidate {name} forced"
    return out


def _culprit(err: Exception, group: dict[str, str]) -> str | None:
    """The dispatch of `group` a failure names (PerfError.dispatch: its run under qemu failed),
    else None."""
    dispatch = getattr(err, "dispatch", None)
    return dispatch if dispatch in group else None


def _bisected(group: dict[str, str], run, failures: tuple[type[Exception], ...]):
    """Runs a round's candidates (dispatch -> candidate) together; when that raises one of
    `failures`, the group is run again in parts, so one candidate that does not compile or run
    costs no other its result. An error naming one dispatch of the group (PerfError.dispatch:
    its run under qemu failed) sets that one apart from the rest; any other splits the group
    in two. `run(group, tag)` gets a tag unique within the round. Yields (group, result, None)
    for a group that ran and (group, None, error) for one that failed (split afterwards when it
    has more than one candidate)."""
    groups = [group]
    tags = 0
    while groups:
        group = groups.pop(0)
        tags += 1
        try:
            result = run(group, str(tags))
        except failures as err:
            yield group, None, err
            if len(group) > 1:
                culprit = _culprit(err, group)
                if culprit is not None:
                    parts = [{culprit: group[culprit]}, {d: c for d, c in group.items() if d != culprit}]
                else:
                    items = sorted(group.items())
                    parts = [dict(items[:len(items) // 2]), dict(items[len(items) // 2:])]
                groups = parts + groups
            continue
        yield group, result, None


def code_rank(analysis: Analysis, cost_round, ranked: int) -> tuple[Analysis, list[str]]:
    """(the analysis with `code_model_cycles` or `code_error` set on each dispatch's IREE default
    and `ranked - 1` best predicted others, per-round log lines). `cost_round(analysis_dict,
    dispatches, tag)` returns a perf.code_model.cost.CallCycles or raises on a config IREE rejects;
    a failing round is split in two until the culprit is alone, as in `tune`. Round 0 is IREE's
    default everywhere: when the code model cannot cost that module, no candidate is to blame
    and none is costed (each gets the error; the shortlist is then the predicted order)."""
    base = analysis.model_dump(mode="json")
    lists = {d["name"]: shortlist(d, ranked) for d in base["dispatches"]}
    lists = {name: names for name, names in lists.items() if len(names) > 1}
    cycles: dict[tuple[str, str], float] = {}
    errors: dict[tuple[str, str], str] = {}
    log = []
    for j in range(max((len(v) for v in lists.values()), default=0)):
        def run(group: dict[str, str], tag: str, j: int = j):
            forced = forced_analysis(base, {**{d: DEFAULT for d in lists}, **group}, f"code ranking, round {j}")
            return cost_round(forced, set(group), f"code{j}_{tag}")

        todo = {d: names[j] for d, names in lists.items() if j < len(names)}
        if j == 0:
            try:
                results = [(todo, run(todo, "1"), None)]
            except CODE_ROUND_ERRORS as err:
                log.append(f"code model cannot cost the module with IREE's defaults: {first_line(err)}")
                errors = {(d, c): f"module not costable: {first_line(err)}" for d, names in lists.items() for c in names}
                break
        else:
            results = _bisected(todo, run, CODE_ROUND_ERRORS)
        for group, costed, err in results:
            if err is not None:
                if len(group) > 1:
                    log.append(f"code round {j}: {len(group)} candidates failed together; split in two")
                else:
                    (d, c), = group.items()
                    errors[(d, c)] = first_line(err)
                continue
            for d, c in group.items():
                if d in costed.cycles:
                    cycles[(d, c)] = costed.cycles[d]
                else:
                    errors[(d, c)] = costed.errors.get(d, "not in the compiled module")
        log.append(f"code round {j}: costed")
    log.append(f"code model: {len(cycles)} candidates costed, {len(errors)} not")
    return with_code_results(analysis, cycles, errors), log


def code_rank_tries(analysis: Analysis, ranked: int) -> set[tuple[str, str]]:
    """The (dispatch, candidate) pairs `code_rank` costs: each a code-model figure or error."""
    base = analysis.model_dump(mode="json")
    lists = {d["name"]: shortlist(d, ranked) for d in base["dispatches"]}
    return {(d, c) for d, names in lists.items() if len(names) > 1 for c in names}


def with_code_results(analysis: Analysis, cycles: dict[tuple[str, str], float],
                      errors: dict[tuple[str, str], str]) -> Analysis:
    """The analysis with each candidate's `code_model_cycles` and `code_error` from the maps
    (None where absent)."""
    dispatches = []
    for d in analysis.dispatches:
        dispatches.append(d.model_copy(update={"candidates": [
            c.model_copy(update={"code_model_cycles": cycles.get((d.name, c.name)),
                                 "code_error": errors.get((d.name, c.name))})
            for c in d.candidates]}))
    return analysis.model_copy(update={"dispatches": dispatches})


def placement_figures(m) -> list[int] | None:
    """A measurement's memory-aware cycles under placements 0..K-1, or None without placements
    1..K-1 (a Measured or a record's Measurement)."""
    if m is None or m.placement_memory_aware_cycles is None:
        return None
    return [m.memory_aware_cycles, *m.placement_memory_aware_cycles]


def beyond_spread(candidate: list[int], default: list[int]) -> bool:
    """The candidate wins beyond the placement spread: its worst placement beats the default's
    best (paired placements, the same offsets for both). Equal figures are a tie, not a win."""
    return max(candidate) < min(default)


def _fewest(names: list[str], cycles_of) -> str:
    """The name of fewest `cycles_of(name)`; a tie goes to the earlier (the shortlist puts IREE's
    default first, so a candidate other than it won strictly)."""
    return min(names, key=lambda n: (cycles_of(n), names.index(n)))


def provisional_switches(analysis: Analysis, measured: dict, choices: set[str], size: int) -> dict[str, str]:
    """Dispatch -> the candidate that beats IREE's default at placement 0, for the dispatches
    of `choices` where one does (strictly fewer memory-aware cycles)."""
    out = {}
    for d in analysis.model_dump(mode="json")["dispatches"]:
        if d["name"] not in choices:
            continue
        names = [n for n in shortlist(d, size) if (d["name"], n) in measured]
        if DEFAULT not in names:
            continue
        best = _fewest(names, lambda n: measured[(d["name"], n)].memory_aware_cycles)
        if best != DEFAULT:
            out[d["name"]] = best
    return out


def _cost_of_chosen(d: Dispatch, chosen: Candidate) -> Cost | None:
    """The dispatch's predicted cost, restated for the candidate chosen (its predicted cycles)."""
    cost = d.cost
    if cost is None:
        return None
    scale = cost.latency_cycles / chosen.predicted_cycles if chosen.predicted_cycles else 0
    return cost.model_copy(update={
        "latency_cycles": chosen.predicted_cycles,
        "mac_utilization": float(f"{min(1.0, cost.mac_utilization * scale):.6g}")
        if cost.mac_utilization is not None and scale else cost.mac_utilization,
        "energy_pj": cost.energy_pj if chosen.generator == "zigzag" else None})


def tune(analysis: Analysis, measure_round, size: int, hardware_name: str, core: str,
         code_ranked: int = 0, placements: int = 1) -> tuple[Analysis, list[str]]:
    """(the analysis with measured choices, per-round log lines). `measure_round(analysis_dict,
    dispatches, tag[, placements=...])` returns dispatch -> Measured (None: no core model) or
    raises PerfError. Each dispatch keeps the candidate with the fewest memory-aware cycles; with
    `placements` K > 1, a candidate beating IREE's default is measured with the default under
    placements 1..K-1 and replaces it only when it wins under all K (`beyond_spread`)."""
    base = analysis.model_dump(mode="json")
    measured: dict[tuple[str, str], Measured] = {}
    failed: dict[tuple[str, str], str] = {}
    log = []
    # Every dispatch is measured itself: dispatches of one root op differ in what IREE fused
    # into them (ResNet-18's four 64x3136x576 matmuls: a choice measured on one of them was
    # 1.09x IREE's default on two others), and equal dispatches are already one executable.
    choices = {d["name"] for d in base["dispatches"] if len(shortlist(d, size)) > 1}
    offered = len(choices)
    for j, assign in enumerate(round_assignments(base, size)):
        todo = round_todo(assign, j, choices, measured)
        if not todo:
            continue
        def run(group: dict[str, str], tag: str, j: int = j, assign: dict = assign) -> dict[str, Measured]:
            forced = forced_analysis(base, {**{d: DEFAULT for d in assign}, **group},
                                     f"measured choice, round {j}")
            return measure_round(forced, set(group), f"round{j}_{tag}")

        for group, cycles, err in _bisected(todo, run, MEASURE_ERRORS):
            if err is not None:
                if j == 0 and _culprit(err, group) is None:
                    raise TuneError(f"IREE's default configs cannot be measured: {err}") from None
                if j == 0 and len(group) == 1:
                    # Its own run failed (e.g. qemu aborts translating it): with nothing to
                    # compare against, the dispatch keeps IREE's default.
                    (d, c), = group.items()
                    failed[(d, c)] = first_line(err)
                    choices.discard(d)
                    log.append(f"round 0: {d}: IREE's default not measurable, kept: {first_line(err)}")
                    continue
                if len(group) > 1:
                    culprit = _culprit(err, group)
                    log.append(f"round {j}: {len(group)} candidates failed together ({first_line(err)}); "
                               + (f"{culprit} set apart" if culprit else "split in two"))
                    continue
                (d, c), = group.items()
                failed[(d, c)] = first_line(err)
                log.append(f"round {j}: {d}: candidate {c} not measurable: {first_line(err)}")
                continue
            for d, c in group.items():
                if cycles.get(d) is None:
                    raise TuneError(f"{d}: no model cycles in round {j} (core {core})")
                measured[(d, c)] = cycles[d]
            log.append(f"round {j}: {len(group)} candidates measured")
        if j == 0 and not choices:
            raise TuneError(f"IREE's default configs cannot be measured: no dispatch's ran ({log[-1]})")
    switches = provisional_switches(analysis, measured, choices, size) if placements > 1 else {}
    others = tuple(range(1, placements))
    for what, tag, assign in (("IREE's default", "placements_default", {d: DEFAULT for d in switches}),
                              ("candidates", "placements_candidates", switches)):
        if not assign:
            continue
        forced = forced_analysis(base, {**{d: DEFAULT for d in round_assignments(base, size)[0]}, **assign},
                                 f"measured choice, placements of {what}")
        try:
            figures = measure_round(forced, set(assign), tag, placements=others)
        except MEASURE_ERRORS as err:
            raise TuneError(f"{what} measured once cannot be measured under placements {others}: "
                            f"{first_line(err)}") from None
        for d, c in assign.items():
            if figures.get(d) is None or figures[d].placement_memory_aware_cycles is None:
                raise TuneError(f"{d}: no placement figures for {c}")
            m = measured[(d, c)]
            measured[(d, c)] = Measured(m.model_cycles, m.memory_aware_cycles, m.energy_pj, m.traffic_bytes,
                                        figures[d].placement_memory_aware_cycles)
        log.append(f"placements 1..{placements - 1}: {what} of {len(assign)} dispatches measured")
    return decide(analysis, measured, failed, choices, offered, size, hardware_name, core, code_ranked,
                  placements), log


def measure_tries(analysis: Analysis, size: int, failed: dict[tuple[str, str], str]) -> set[tuple[str, str]]:
    """The (dispatch, candidate) pairs `tune` measures, given which failed: each a measurement or
    an error. A dispatch whose IREE default failed (round 0) has nothing else measured."""
    tries = set()
    for d in analysis.model_dump(mode="json")["dispatches"]:
        names = shortlist(d, size)
        if len(names) < 2:
            continue
        tries |= {(d["name"], DEFAULT)} if (d["name"], DEFAULT) in failed else {(d["name"], c) for c in names}
    return tries


def decide(analysis: Analysis, measured: dict, failed: dict[tuple[str, str], str], choices: set[str],
           offered: int, size: int, hardware_name: str, core: str, code_ranked: int,
           placements: int = 1) -> Analysis:
    """The analysis with each dispatch of `choices` given the candidate of fewest memory-aware
    cycles among its measured shortlist (`measured`: (dispatch, candidate) -> Measured or a
    tuning record's Measurement) and every shortlisted candidate's figures or error. With
    `placements` > 1 a candidate replaces IREE's default only beyond the placement spread
    (`beyond_spread`); the two must carry their placement figures."""
    dispatches = []
    for d in analysis.dispatches:
        names = shortlist(d.model_dump(mode="json"), size)
        if len(names) < 2:
            dispatches.append(d)
            continue
        def figures(key: tuple[str, str]) -> dict:
            m = measured.get(key)
            return {"measured_model_cycles": m and m.model_cycles,
                    "measured_memory_aware_cycles": m and m.memory_aware_cycles,
                    "measured_energy_pj": m and m.energy_pj, "measured_traffic_bytes": m and m.traffic_bytes,
                    "measured_placement_memory_aware_cycles":
                        list(m.placement_memory_aware_cycles) if m and m.placement_memory_aware_cycles else None,
                    "measure_error": failed.get(key)}
        cands = [c.model_copy(update=figures((d.name, c.name))) if c.name in names else c
                 for c in d.candidates]
        by_name = {c.name: c for c in cands}
        if d.name not in choices:  # IREE's default could not be measured
            default = by_name[DEFAULT]
            dispatches.append(d.model_copy(update={
                "candidates": cands, "chosen": DEFAULT, "provenance": default.generator, "tiles": None, "reason": (
                f"{d.kind}: measured choice on {core} ({hardware_name}): IREE's default kept, its run "
                f"failed ({by_name[DEFAULT].measure_error}), nothing to compare against; analysis: {d.reason}")}))
            continue
        default_cycles = by_name[DEFAULT].measured_memory_aware_cycles
        ok = [n for n in names if by_name[n].measured_memory_aware_cycles is not None]
        # Fewest memory-aware cycles; ties go to the earlier (IREE's default first).
        best = _fewest(ok, lambda n: by_name[n].measured_memory_aware_cycles)
        spread = ""
        if best != DEFAULT and placements > 1:
            ours, theirs = placement_figures(measured.get((d.name, best))), placement_figures(measured.get((d.name, DEFAULT)))
            if ours is None or theirs is None:
                raise TuneError(f"{d.name}: {best} beat IREE's default without placement figures for both")
            if beyond_spread(ours, theirs):
                spread = (f"; beyond the placement spread: worst of {placements} placements {max(ours):,} "
                          f"< IREE's default's best {min(theirs):,}")
            else:
                spread = (f"; {best} ({min(ours):,}-{max(ours):,} over {placements} placements) is within "
                          f"the placement spread of IREE's default ({min(theirs):,}-{max(theirs):,})")
                best = DEFAULT
        chosen = by_name[best]
        kept = " (IREE's default kept)" if best == DEFAULT else ""
        reason = (f"{d.kind}: measured choice on {core} ({hardware_name}): {best} at "
                  f"{chosen.measured_memory_aware_cycles:,} memory-aware cycles vs IREE's default "
                  f"{default_cycles:,} ({chosen.measured_memory_aware_cycles / default_cycles:.3f}x){kept}; "
                  f"{len(ok)} of {len(names)} shortlisted candidates measured"
                  + (f", {len(names) - len(ok)} failed" if len(ok) < len(names) else "")
                  + spread + f"; analysis: {d.reason}")
        dispatches.append(d.model_copy(update={
            "candidates": cands, "chosen": best, "provenance": chosen.generator,
            "tiles": None if best == DEFAULT else chosen.tiles, "reason": reason,
            "cost": _cost_of_chosen(d, chosen)}))
    summary = Summary.of(dispatches, distinct_ops=analysis.summary.distinct_ops)
    result = Analysis.model_validate({
        **analysis.model_dump(), "dispatches": [x.model_dump() for x in dispatches],
        "summary": summary.model_dump(),
        "measured_choice": MeasuredChoice(
            hardware=hardware_name, core=core, candidates_per_dispatch=size, code_ranked=code_ranked,
            placements=placements, measured=len(measured), failed=len(failed),
            dispatches=offered).model_dump()})
    return result


def replay(analysis: Analysis, record: TuningRecord, size: int, hardware_name: str, core: str,
           code_ranked: int, placements: int = 1) -> tuple[Analysis | None, str]:
    """(the measured choice `tune` would make from the record's figures, "") or (None, why the
    record cannot stand in for a measurement): the same decision code, fed the recorded code-model
    figures and measurements instead of compiling and running. The record must hold exactly the
    figures the choice tries, no fewer (a shortlist it never measured) and no more."""
    cycles, errors = records.code_results(record)
    needed = code_rank_tries(analysis, code_ranked) if code_ranked else set()
    why = _coverage(needed, set(cycles) | set(errors), "code-model figure")
    if why:
        return None, why
    if code_ranked:
        analysis = with_code_results(analysis, cycles, errors)
    measured, failed = records.measurements(record)
    why = _coverage(measure_tries(analysis, size, failed), set(measured) | set(failed), "measurement")
    if why:
        return None, why
    offered = {d["name"] for d in analysis.model_dump(mode="json")["dispatches"] if len(shortlist(d, size)) > 1}
    choices = {d for d in offered if (d, DEFAULT) not in failed}
    if not choices:
        return None, "no dispatch's IREE default measured"
    if placements > 1:
        for d, c in sorted(provisional_switches(analysis, measured, choices, size).items()):
            for name in (c, DEFAULT):
                figures = placement_figures(measured.get((d, name)))
                if figures is None or len(figures) != placements:
                    return None, f"it lacks the {placements} placement figures of {d}'s candidate {name}"
    return decide(analysis, measured, failed, choices, len(offered), size, hardware_name, core, code_ranked,
                  placements), ""


def _coverage(needed: set[tuple[str, str]], recorded: set[tuple[str, str]], what: str) -> str:
    """Why `recorded` is not exactly `needed` (empty: it is)."""
    for pairs, how in ((needed - recorded, "lacks the"), (recorded - needed, "has a")):
        if pairs:
            d, c = min(pairs)
            more = f" (and {len(pairs) - 1} more)" if len(pairs) > 1 else ""
            return f"it {how} {what} of {d}'s candidate {c}{more}"
    return ""


def _code_costed(d: Dispatch) -> list[Candidate]:
    """The dispatch's candidates `code_rank` tried (costed or failed), in predicted order."""
    return [c for c in d.candidates if c.code_model_cycles is not None or c.code_error is not None]


def load_code_calibration(path: Path, hardware_name: str, core: str) -> CodePriceTerm:
    """The term a code-model choice adds to each candidate's cycles, from a
    CodeModelCalibration file fitted for this hardware and core; TuneError naming the file."""
    try:
        cal = CodeModelCalibration.model_validate_json(path.read_text())
    except OSError as err:
        raise TuneError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise TuneError(f"{path}: not a code-model calibration: {first_line(err)}") from None
    if cal.hardware != hardware_name:
        raise TuneError(f"{path}: fitted for '{cal.hardware}', not '{hardware_name}'")
    if cal.feature not in FEATURES:
        raise TuneError(f"{path}: feature '{cal.feature}' is not a tile-model feature ({', '.join(FEATURES)})")
    if core not in cal.cycles_per_unit:
        raise TuneError(f"{path}: no weight for core {core} (fitted for {', '.join(sorted(cal.cycles_per_unit))})")
    weight = cal.cycles_per_unit[core]
    if weight < 0:
        raise TuneError(f"{path}: weight {weight} for {core} is negative")
    return CodePriceTerm(file=path.name, sha256=sha256_file(path), feature=cal.feature, cycles_per_unit=weight)


def code_price(candidate: Candidate, term: CodePriceTerm | None) -> float | None:
    """What a code-model choice compares: the candidate's code-model cycles, plus the calibrated
    term when there is one (None when the code model could not cost it)."""
    if candidate.code_model_cycles is None:
        return None
    if term is None:
        return candidate.code_model_cycles
    if term.feature not in candidate.features:
        raise TuneError(f"candidate {candidate.name}: no feature {term.feature} for the calibrated term "
                        f"({term.file}): its analysis does not compute it")
    return candidate.code_model_cycles + term.cycles_per_unit * candidate.features[term.feature]


def choose_tiles_by_code(analysis: Analysis, margin: float, hardware_name: str, core: str,
                         code_ranked: int, term: CodePriceTerm | None = None) -> Analysis:
    """The analysis (costed by `code_rank`) with each dispatch's cheapest code-costed candidate
    chosen when its price (`code_price`: code-model cycles, plus `term` when calibrated) is
    below (1 - margin) x IREE's default's, else IREE's default. Nothing runs: for a core whose
    time is what matters (the host), not its model cycles under qemu. A dispatch whose default
    the code model could not cost keeps it."""
    priced = "calibrated code-model price" if term else "code-model cycles"
    dispatches = []
    costed = failed = offered = 0
    for d in analysis.dispatches:
        by_name = {c.name: c for c in d.candidates}
        tried = _code_costed(d)
        if DEFAULT not in by_name or len(tried) < 2:
            dispatches.append(d)
            continue
        offered += 1
        costed += sum(c.code_model_cycles is not None for c in tried)
        failed += sum(c.code_model_cycles is None for c in tried)
        default = by_name[DEFAULT]
        if default.code_model_cycles is None:
            dispatches.append(d.model_copy(update={
                "chosen": DEFAULT, "provenance": default.generator, "tiles": None, "reason": (
                    f"{d.kind}: code-model choice on {core} ({hardware_name}): IREE's default kept, "
                    f"the code model could not cost it ({default.code_error}); analysis: {d.reason}")}))
            continue
        others = [c for c in tried if c.name != DEFAULT and c.code_model_cycles is not None]
        price = {c.name: code_price(c, term) for c in others + [default]}
        # Cheapest; ties go to the better predicted (the analysis lists candidates in that order).
        best = min(others, key=lambda c: price[c.name], default=default)
        ratio = price[best.name] / price[DEFAULT] if price[DEFAULT] else 1.0
        chosen = best if clears_margin(price[best.name], price[DEFAULT], margin) else default
        verdict = ("" if chosen is best else
                   f"; not below {1 - margin:.2f}x of it, so IREE's default kept")
        how = (f" (code-model cycles + {term.cycles_per_unit:g} x {term.feature}, {term.file})" if term else "")
        reason = (f"{d.kind}: code-model choice on {core} ({hardware_name}): {best.name} at "
                  f"{price[best.name]:,.0f} {priced} vs IREE's default "
                  f"{price[DEFAULT]:,.0f} ({ratio:.3f}x){verdict}{how}; {len(others) + 1} of "
                  f"{len(tried)} candidates costed; analysis: {d.reason}")
        dispatches.append(d.model_copy(update={
            "chosen": chosen.name, "provenance": chosen.generator,
            "tiles": None if chosen is default else chosen.tiles, "reason": reason,
            "cost": _cost_of_chosen(d, chosen)}))
    summary = Summary.of(dispatches, distinct_ops=analysis.summary.distinct_ops)
    return Analysis.model_validate({
        **analysis.model_dump(), "dispatches": [x.model_dump() for x in dispatches],
        "summary": summary.model_dump(),
        "measured_choice": MeasuredChoice(
            hardware=hardware_name, core=core, by="code-model", margin=margin,
            candidates_per_dispatch=code_ranked, code_ranked=code_ranked,
            measured=costed, failed=failed, dispatches=offered, code_calibration=term).model_dump()})


def code_choice_markdown(analysis: Analysis) -> str:
    mc = analysis.measured_choice
    term = mc.code_calibration
    lines = [f"# Code-model tile choice: {analysis.model} on {mc.hardware} (static cycles on {mc.core})",
             "", f"IREE's default and the {mc.code_ranked - 1} best predicted other candidates per "
             "dispatch, each compiled and costed by the code model (perf/code_model/: llvm-mca per "
             "block, trip counts from IREE's LLVM IR; nothing runs). A candidate replaces IREE's "
             f"default only below {1 - mc.margin:.2f}x its price. Code-model cycles ignore caches, "
             "memory latency and branch misses: they are not time."
             + (f" Price: code-model cycles + {term.cycles_per_unit:g} x the candidate's {term.feature} "
                f"(calibrated: {term.file})." if term else " Price: code-model cycles."), "",
             "| dispatch | kind | chosen | IREE default | chosen | chosen/default | candidates (price) |",
             "|---|---|---|---:|---:|---:|---|"]
    for d in analysis.dispatches:
        tried = _code_costed(d)
        if len(tried) < 2:
            continue
        price = {c.name: code_price(c, term) for c in tried}
        cells = ", ".join(f"{c.name}: " + (f"{price[c.name]:,.0f}" if price[c.name] is not None
                                           else "failed") for c in tried)
        dc, cc = price[DEFAULT], price[d.chosen]
        if dc is None:
            lines.append(f"| {d.name} | {d.kind} | {d.chosen} | failed | failed | - | {cells} |")
            continue
        lines.append(f"| {d.name} | {d.kind} | {d.chosen} | {dc:,.0f} | {cc:,.0f} | {cc / dc:.3f} | {cells} |")
    return "\n".join(lines) + "\n"


def to_markdown(analysis: Analysis) -> str:
    mc = analysis.measured_choice
    lines = [f"# Measured tile choice: {analysis.model} on {mc.hardware} (memory-aware cycles on {mc.core})",
             "", f"Shortlist per dispatch: IREE's default and the {mc.candidates_per_dispatch - 1} "
             + (f"other candidates with the fewest code-model cycles (perf/code_model/, static) among "
                f"the {mc.code_ranked - 1} best predicted; " if mc.code_ranked else
                "best predicted other candidates; ")
             + "each run whole under qemu with the description's caches simulated, costed by llvm-mca "
             "plus its memory traffic (perf/memory_model.py). Each dispatch keeps the fewest memory-aware "
             "cycles; model cycles (every load an L1 hit) are shown beside them. Neither is time.", "",
             "| dispatch | kind | chosen | IREE default | chosen | chosen/default | "
             "candidates (name: memory-aware / model cycles, DRAM bytes (code model)) |",
             "|---|---|---|---:|---:|---:|---|"]
    total_default = total_chosen = 0
    for d in analysis.dispatches:
        shortlisted = [c for c in d.candidates
                       if c.measured_memory_aware_cycles is not None or c.measure_error is not None]
        if not shortlisted:
            continue
        by = {c.name: c for c in shortlisted}
        cells = ", ".join((f"{c.name}: {c.measured_memory_aware_cycles:,} / {c.measured_model_cycles:,}, "
                           f"{list(c.measured_traffic_bytes.values())[-1]:,} B"
                           if c.measured_memory_aware_cycles is not None
                           else f"{c.name}: failed")
                          + (f" (code {c.code_model_cycles:,.0f})" if c.code_model_cycles is not None else "")
                          for c in shortlisted)
        dc, cc = by[DEFAULT].measured_memory_aware_cycles, by[d.chosen].measured_memory_aware_cycles
        if dc is None:  # IREE's default did not run: kept, out of the totals
            lines.append(f"| {d.name} | {d.kind} | {d.chosen} | failed | failed | - | {cells} |")
            continue
        total_default += dc
        total_chosen += cc
        lines.append(f"| {d.name} | {d.kind} | {d.chosen} | {dc:,} | {cc:,} | {cc / dc:.3f} | {cells} |")
    if total_default:
        lines += [f"| **tuned dispatches, each once** | | | {total_default:,} | {total_chosen:,} | "
                  f"{total_chosen / total_default:.3f} | |"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m choice.tune", description=__doc__.split("\n")[0])
    p.add_argument("--module", required=True, type=Path)
    p.add_argument("--target", required=True, type=Path, help="riscv target derived from --hardware")
    p.add_argument("--analysis", required=True, type=Path, help="analysis.json with candidates")
    p.add_argument("--hardware", required=True, type=Path, help="the accelerator (with a model_core)")
    p.add_argument("--by", choices=("memory-aware-cycles", "code-model"), default="memory-aware-cycles",
                   help="memory-aware-cycles: run the shortlist under qemu with the caches simulated "
                   "(riscv); code-model: choose by "
                   "the code model's static cycles alone among the --code-ranked (host)")
    p.add_argument("--margin", type=float, default=0.0,
                   help="--by code-model: a candidate replaces IREE's default only below "
                   "(1 - margin) x its code-model cycles")
    p.add_argument("--code-calibration", type=Path,
                   help="--by code-model: a CodeModelCalibration (analysis/calibration/<hardware>.code_model.json) "
                   "whose term is added to each candidate's code-model cycles")
    p.add_argument("--runner", type=Path, help="riscv64 hal_runner (--by memory-aware-cycles)")
    p.add_argument("--plugin", type=Path, help="libinsn_classes.so (--by memory-aware-cycles)")
    p.add_argument("--qemu", type=Path,
                   help="qemu-riscv64 that loads the plugin, //tools/qemu:qemu-riscv64 (--by memory-aware-cycles)")
    mca.add_llvm_bin_argument(p)
    p.add_argument("--model-name", required=True)
    p.add_argument("--candidates", type=int,
                   help="--by memory-aware-cycles: shortlist size per dispatch, IREE's default included (>= 2)")
    p.add_argument("--code-ranked", type=int, default=0,
                   help="cost IREE's default and the N-1 best predicted candidates per dispatch with "
                   "the code model (perf/code_model/) and shortlist the cheapest; 0: shortlist by "
                   "the analysis' prediction")
    p.add_argument("--jobs", type=int, default=2, help="qemu processes at once (locally)")
    p.add_argument("--ray-address", metavar="HOST:PORT",
                   help="run every qemu run of the measurements as a task on the Ray cluster whose head is "
                        "here, or `local`: on a Ray instance of this machine's own (choice/ray_engine.py: "
                        "each node's toolchain must be the driver's; the record is the one a local run writes)")
    p.add_argument("--run-cache", type=Path, metavar="DIR",
                   help="--by memory-aware-cycles: answer a qemu run this directory holds the counts of, and "
                        "keep each new run's there (perf/run_cache.py: one refresh's choices share runs "
                        "that differ only in how a description prices them, e.g. a sweep's DRAM bandwidth)")
    p.add_argument("--placements", type=int, default=1,
                   help="--by memory-aware-cycles: buffer placements a switch from IREE's default is judged "
                   "over (1: placement 0 alone); a candidate replaces the default only when its worst "
                   "placement beats the default's best")
    p.add_argument("--allow-no-core-model", action="store_true",
                   help="for a description without a model_core, keep the analysis' predicted "
                   "choice (the output's measured_choice stays empty) instead of failing")
    p.add_argument("--record-name", help="--by memory-aware-cycles: the pipeline's tuning record "
                   "(tuning/records/<name>.json); with it the choice is keyed, replayed from --record "
                   "when that record's key matches, and written as --record-out")
    p.add_argument("--record", type=Path, help="the committed tuning record of --record-name, if any")
    p.add_argument("--records-ignored", action="store_true",
                   help="--record-name without --record on purpose: measuring to make the record")
    p.add_argument("--record-out", type=Path, help="the record of this choice (what a refresh commits)")
    p.add_argument("--refresh-target", help="the Bazel target `bazel run //tools:tune -- T` refreshes "
                   "the record with (named when no record matches)")
    p.add_argument("--stale-record-fails", action="store_true",
                   help="with --record-name: no matching record is an error naming the refresh command, "
                        "not a measurement (`bazel test` sets it: a test never measures in its build)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--out-md", required=True, type=Path)
    a = p.parse_args(argv)
    mca.use_llvm_bin(a.llvm_bin)
    with OneLineErrors("choice.tune", a.module, (TuneError, HardwareError, TargetError, mca.McaError,
                                               records.RecordError, RayEngineError)) as cli:
        check_outputs({"--out": a.out, "--out-md": a.out_md, "--record-out": a.record_out},
                      {"--module": a.module, "--target": a.target, "--analysis": a.analysis,
                       "--hardware": a.hardware, "--code-calibration": a.code_calibration,
                       "--runner": a.runner, "--plugin": a.plugin, "--qemu": a.qemu, "--record": a.record})
        keyed = [f for f in ("record", "record_out", "refresh_target") if getattr(a, f) is not None]
        if a.records_ignored and a.record is not None:
            raise TuneError("--records-ignored with --record: measure, or replay, not both")
        if a.stale_record_fails and (a.record_name is None or a.records_ignored):
            raise TuneError("--stale-record-fails needs --record-name and records to replay (not --records-ignored)")
        if a.record_name is None and keyed:
            raise TuneError(f"--{keyed[0].replace('_', '-')} needs --record-name")
        if a.record_name is not None and (a.by != "memory-aware-cycles" or a.record_out is None
                                          or a.refresh_target is None):
            raise TuneError("--record-name: records are of measured choices (--by memory-aware-cycles) "
                            "and need --record-out and --refresh-target")
        # Each ran to exit 0 (issue 80 probe): --jobs 0, a margin a measured choice never reads (nan,
        # -1, inf), and a --run-cache that is a file failed deep in the run, blamed on the module.
        if a.jobs < 1:
            raise TuneError(f"--jobs {a.jobs}: at least 1 qemu process")
        if a.by != "code-model" and a.margin != 0.0:
            raise TuneError(f"--margin {a.margin}: prices a --by code-model choice; a measured choice keeps the "
                            "fewest memory-aware cycles")
        if a.run_cache is not None and a.run_cache.exists() and not a.run_cache.is_dir():
            raise TuneError(f"--run-cache {a.run_cache}: not a directory")
        if a.code_ranked == 1 or a.code_ranked < 0:
            raise TuneError(f"--code-ranked {a.code_ranked}: 0 (off) or at least 2 (IREE's default and one more)")
        if a.by == "code-model":
            if not a.code_ranked:
                raise TuneError("--by code-model needs --code-ranked N (>= 2): the candidates it costs")
            if not 0 <= a.margin < 1:
                raise TuneError(f"--margin {a.margin}: a fraction of IREE's default's cycles, in [0, 1)")
        elif a.code_calibration is not None:
            raise TuneError("--code-calibration prices a --by code-model choice; model cycles are measured")
        else:
            missing = [f for f in ("runner", "plugin", "qemu", "candidates") if getattr(a, f) is None]
            if missing:
                raise TuneError(f"--by memory-aware-cycles needs --{missing[0]}")
            if a.candidates < 2:
                raise TuneError(f"--candidates {a.candidates}: a choice needs at least 2 (IREE's default and one more)")
            if a.placements < 1:
                raise TuneError(f"--placements {a.placements}: at least 1 (placement 0, the natural layout)")
        hw = load_hardware(a.hardware)
        try:
            analysis = Analysis.model_validate_json(a.analysis.read_text())
        except OSError as err:
            raise TuneError(f"{a.analysis}: cannot read: {err.strerror}") from None
        except ValueError as err:
            raise TuneError(f"{a.analysis}: not an analysis: {first_line(err)}") from None
        if analysis.hardware != hw.name or analysis.hardware_sha256 != sha256_file(a.hardware):
            raise TuneError(f"{a.analysis}: analysed against '{analysis.hardware}', not {a.hardware}")
        if analysis.measured_choice is not None:
            raise TuneError(f"{a.analysis}: already a measured choice")
        if hw.model_core is None:
            if not a.allow_no_core_model:
                raise TuneError(f"{a.hardware}: no model_core: a measured choice needs model cycles "
                                f"(no LLVM core model has VLEN {hw.compute.vector_bits}); "
                                "--allow-no-core-model keeps the predicted choice")
            # Asked for: the analysis passes through, its choice by prediction (measured_choice
            # stays None, which says so in the artifact). A keyed choice's record says the same:
            # its key, and no candidate measured (a sweep's VLEN-256 variant beside measured ones).
            kept = {a.out: a.analysis.read_text(),
                    a.out_md: f"# {analysis.model} on {hw.name}: predicted choice kept\n\n"
                              f"No LLVM core model has VLEN {hw.compute.vector_bits}: "
                              "nothing to measure model cycles on.\n"}
            if a.record_out is not None:
                kept[a.record_out] = records.dump_record(records.make_record(
                    a.record_name, _refresh_command(a), _record_key(a, analysis), analysis))
            write_together(kept)
            print(f"choice.tune {analysis.model}: {hw.name} has no core model: the predicted choice is kept")
            return 0
        if load_target(a.target).name != analysis.target:
            raise TuneError(f"{a.target}: not the target {a.analysis} was made for ('{analysis.target}')")
        # Here rather than in a candidate's costing, which would record a missing tool as that
        # candidate's failure.
        mca.require_tools(mca.LLVM_TOOLS)
        term = (load_code_calibration(a.code_calibration, hw.name, hw.model_core)
                if a.code_calibration is not None else None)
        outputs, log, result = {}, [], None
        if a.record_name is not None:
            key = _record_key(a, analysis)
            result, why = _from_record(a, analysis, key, hw.name, hw.model_core)
            refresh = _refresh_command(a)
            if result is None and a.records_ignored:
                print(f"choice.tune {analysis.model}: measuring for tuning/records/{a.record_name}.json "
                      "(records not consulted)")
            elif result is None and a.stale_record_fails:
                raise TuneError(f"no tuning record matches ({why}); `{refresh}` refreshes "
                                f"tuning/records/{a.record_name}.json (--stale-record-fails: not measured)")
            elif result is None:
                # The one line a build prints about records: which is stale and how to refresh it.
                print(f"choice.tune {analysis.model}: no tuning record matches ({why}): measuring; "
                      f"`{refresh}` refreshes tuning/records/{a.record_name}.json")
        if result is not None:
            log.append(f"replayed tuning record {a.record}: nothing compiled or run")
        else:
            with scratch_directory("tune_") as tmp:
                if a.code_ranked:
                    analysis, log = code_rank(analysis, CodeCostRound(a.module, a.target, hw.model_core, Path(tmp)),
                                               a.code_ranked)
                if a.by == "code-model":
                    result = choose_tiles_by_code(analysis, a.margin, hw.name, hw.model_core, a.code_ranked, term)
                else:
                    executor = (connect(a.ray_address, a.llvm_bin, a.qemu, a.plugin, a.runner)
                                if a.ray_address else None)
                    if a.run_cache is not None:
                        executor = RunCache(executor or concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)),
                                            a.run_cache)
                    try:
                        result, tune_log = tune(analysis, MeasureRound(a.module, a.target, a.hardware, a.runner, a.plugin, a.qemu,
                                                                         a.model_name, a.jobs, Path(tmp), executor),
                                                a.candidates, hw.name,
                                                hw.model_core, a.code_ranked, a.placements)
                    finally:
                        if executor is not None:
                            executor.shutdown()
                    if isinstance(executor, RunCache):
                        tune_log.append(f"qemu runs: {executor.runs} run, {executor.hits} answered by "
                                        f"{a.run_cache} (the same run made for an earlier choice)")
                    log += tune_log
        if a.record_name is not None:
            outputs[a.record_out] = records.dump_record(records.make_record(a.record_name, refresh, key, result))
        markdown = code_choice_markdown(result) if a.by == "code-model" else to_markdown(result)
        write_together({a.out: json.dumps(result.model_dump(mode="json"), indent=1, sort_keys=True) + "\n",
                        a.out_md: markdown, **outputs})
    if cli.failed:
        return cli.exit_code
    for line in log:
        print(f"choice.tune: {line}", file=sys.stderr)
    switched = sum(d.chosen not in (None, DEFAULT) for d in result.dispatches)
    mc = result.measured_choice
    how = ("costed by the code model" if a.by == "code-model" else
           f"replayed from {a.record}" if log and log[0].startswith("replayed") else "measured")
    print(f"choice.tune {analysis.model}: {mc.measured} candidates of {mc.dispatches} dispatches "
          f"{how} on {hw.model_core}, {mc.failed} failed; "
          f"{switched} dispatches switched from IREE's default")
    return 0


def _record_key(a: argparse.Namespace, analysis: Analysis) -> "records.RecordKey":
    """The key of this choice's record (of `analysis`, the predicted one): what decides its figures."""
    return records.record_key(analysis, analysis.target, a.target, a.hardware, a.module, a.candidates,
                              a.code_ranked, records.tool_versions(a.llvm_bin, a.qemu, a.plugin, a.runner),
                              a.placements)


def _refresh_command(a: argparse.Namespace) -> str:
    return f"bazel run //tools:tune -- {a.refresh_target}"


def _from_record(a: argparse.Namespace, analysis: Analysis, key: "records.RecordKey", hardware_name: str,
                 core: str) -> tuple[Analysis | None, str]:
    """(the choice replayed from --record, "") or (None, why not: no record, a key difference,
    figures missing)."""
    if a.record is None:
        return None, f"none committed for {a.record_name}"
    record = records.load_record(a.record)
    if record.pipeline != a.record_name:
        raise records.RecordError(f"{a.record}: the record of '{record.pipeline}', not of '{a.record_name}'")
    diffs = records.key_differences(record.key, key)
    if diffs:
        more = f"; {len(diffs) - 1} more differences" if len(diffs) > 1 else ""
        return None, f"{a.record}: {diffs[0]}{more}"
    result, why = replay(analysis, record, a.candidates, hardware_name, core, a.code_ranked, a.placements)
    return result, (f"{a.record}: {why}" if why else "")


if __name__ == "__main__":
    sys.exit(main())
