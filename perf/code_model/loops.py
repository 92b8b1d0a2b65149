"""Loops and their trip counts: opt-19's printed loops and backedge-taken counts (`loop_forests`),
how often each loop header runs in one call (`header_counts`; a count that depends on an
enclosing loop's induction variable is evaluated per iteration of that loop), and summed over a
dispatch's workgroups, each a copy with its id a constant (`call_header_counts`)."""

from __future__ import annotations

import math
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from perf.code_model.errors import CodeCostError, UncostableFunction
from perf.code_model.ir_text import function_definitions, reachable_blocks, workgroup_copy, workgroup_copy_name
from perf.code_model.ir_values import IrValues
from perf.code_model.llvm_tools import OPT, first_error, tool
from perf.code_model.scev import Scev, UnknownTripCount, parse_scev

MAX_ENUMERATED_ITERATIONS = 200_000  # beyond this, dependent trip counts take their maximum
# A loop whose count is a run-time value (e.g. a push constant, as data-tiled dispatches' K
# loop) has a constant maximum set by its index type only (2^61 and the like): no cost.
MAX_CREDIBLE_BACKEDGES = 1 << 32


@dataclass(eq=False)
class Loop:
    header: str
    depth: int
    blocks: set[str]
    children: list["Loop"] = field(default_factory=list)
    backedges: Scev | None = None  # backedge-taken count, when this module can evaluate it
    max_backedges: int | None = None  # SCEV's constant maximum
    backedges_printed: str | None = None  # opt's print of a count SCEV has but `backedges` lacks

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


# opt prints only the loops' counts, not every instruction's expression: _parse_loops reads no
# more, and printing them all (with their values at each loop exit) was most of opt's time.
_COUNTS_ONLY = "--scalar-evolution-classify-expressions=false"


def _printed_loops(ll: Path, first_passes: str, output: list[str]) -> dict[str, list[Loop]]:
    """The loop forests opt-19 prints for `ll` after `first_passes` ("" or "a,b,"), writing
    the module as `output` says (opt's own arguments)."""
    proc = subprocess.run([tool(OPT), f"-passes={first_passes}print<loops>,print<scalar-evolution>",
                           _COUNTS_ONLY, *output, str(ll)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodeCostError(f"{OPT} cannot read {ll.name}: {first_error(proc.stderr)}")
    forests = _parse_loops(proc.stderr)
    # The IR the counts were printed for: the passes' output when written, else the input.
    _resolve_ir_values(forests, Path(output[output.index("-o") + 1]) if "-o" in output else ll)
    return forests


def _resolve_ir_values(forests: dict[str, list[Loop]], ir: Path) -> None:
    """Reads each count SCEV left with a `%value` through the function's IR (IrValues); the
    IR is read only when some count needs it."""
    definitions = None
    for function, roots in forests.items():
        loops = [loop for root in roots for loop in root.walk()]
        pending = [loop for loop in loops if loop.backedges is None and loop.backedges_printed]
        if not pending:
            continue
        definitions = definitions if definitions is not None else function_definitions(ir.read_text())
        if function not in definitions:
            continue
        values = IrValues(definitions[function], {loop.header: loop.blocks for loop in loops})
        for loop in pending:
            try:
                loop.backedges = parse_scev(loop.backedges_printed, values)
            except ValueError:  # UnknownTripCount, or a phi of no single back edge
                pass  # a run-time value: the count stays unknown


def loop_forests(named_ll: Path) -> dict[str, list[Loop]]:
    """Function -> its outermost loops, with blocks and backedge-taken counts (opt-19)."""
    return _printed_loops(named_ll, "", ["-disable-output"])


def _parse_loops(printed: str) -> dict[str, list[Loop]]:
    """The loop forests of opt's `print<loops>,print<scalar-evolution>` output."""
    forests: dict[str, list[Loop]] = {}
    headers: dict[tuple[str, str], Loop] = {}
    function, stack, counted = None, [], None
    for line in printed.splitlines():
        if m := re.match(r"Loop info for function '(.+)':", line):
            function, stack = m.group(1), []
            forests[function] = []
        elif (m := re.match(r"\s*Loop at depth (\d+) containing: (.*)$", line)) and function:
            depth = int(m.group(1))
            blocks = [re.sub(r"<.*", "", b) for b in m.group(2).split(",")]
            header = next(re.sub(r"<.*", "", b) for b in m.group(2).split(",") if "<header>" in b)
            while stack and stack[-1].depth >= depth:
                stack.pop()
            loop = Loop(header, depth, set(blocks))
            (stack[-1].children if stack else forests[function]).append(loop)
            stack.append(loop)
            headers[(function, header)] = loop
        elif m := re.match(r"Determining loop execution counts for: @\"?([^\"]+)\"?$", line):
            counted = m.group(1)
        elif (m := re.match(r"Loop (%\S+): backedge-taken count is (.+)$", line)) and (counted, m.group(1)) in headers:
            try:
                headers[(counted, m.group(1))].backedges = parse_scev(m.group(2))
            except UnknownTripCount:
                headers[(counted, m.group(1))].backedges_printed = m.group(2)
        elif (m := re.match(r"Loop (%\S+): constant max backedge-taken count is i(\d+) (-?\d+)", line)) \
                and (counted, m.group(1)) in headers:
            # SCEV's maximum is unsigned; opt prints it signed (-1: the type's maximum).
            headers[(counted, m.group(1))].max_backedges = int(m.group(3)) % (1 << int(m.group(2)))
    return forests


def header_counts(roots: list[Loop]) -> dict[Loop, float]:
    """How often each loop's header runs in one call of its function."""
    counts: dict[Loop, float] = defaultdict(float)
    budget = [MAX_ENUMERATED_ITERATIONS]
    depends: dict[Loop, set[str]] = {}

    def loops_used(loop: Loop) -> set[str]:
        if loop not in depends:
            own = loop.backedges.loops() if loop.backedges is not None else set()
            depends[loop] = own.union(*(loops_used(c) for c in loop.children))
        return depends[loop]

    def trips(loop: Loop, iteration: dict[str, int]) -> int:
        if loop.backedges is not None and loop.backedges.loops() <= iteration.keys():
            try:
                n = max(loop.backedges.value(iteration) + 1, 0)
            except ZeroDivisionError:
                raise UncostableFunction(f"loop {loop.header}: its trip count divides by zero") from None
            # Unsigned arithmetic read as signed can overshoot; SCEV's maximum bounds it.
            return n if loop.max_backedges is None else min(n, loop.max_backedges + 1)
        if loop.max_backedges is not None:
            if loop.max_backedges < MAX_CREDIBLE_BACKEDGES:
                return loop.max_backedges + 1
            # bounded only by the index type: a run-time count
            raise UncostableFunction(f"loop {loop.header}: its trip count is a run-time value "
                                     f"(SCEV's maximum is {loop.max_backedges})")
        raise UncostableFunction(f"loop {loop.header}: no trip count and no constant maximum")

    def visit(loop: Loop, iteration: dict[str, int], times: float) -> None:
        n = trips(loop, iteration)
        counts[loop] += times * n
        for child in loop.children:
            if loop.header in loops_used(child) and budget[0] >= n:
                budget[0] -= n
                for i in range(n):
                    visit(child, {**iteration, loop.header: i}, times)
            else:
                visit(child, iteration, times * n)

    for root in roots:
        visit(root, {}, 1.0)
    return counts


def live_header_counts(roots: list[Loop], live: set[str]) -> dict[str, float]:
    """`header_counts` by header, of the loops whose header can be reached (`live`): a loop
    behind a branch that is never taken does not run, nor do the loops inside it."""
    def prune(loops: list[Loop]) -> list[Loop]:
        return [Loop(l.header, l.depth, l.blocks, prune(l.children), l.backedges, l.max_backedges)
                for l in loops if l.header in live]
    return {loop.header: n for loop, n in header_counts(prune(roots)).items()}


# ---- workgroups one by one ------------------------------------------------------------------
# A dispatch whose workgroups differ (a ragged last tile, a guard on the id) is costed one
# workgroup at a time up to this many; beyond, as its first workgroup for all but one and its
# last for the last (IREE's distribution leaves only the last tile of an axis ragged).
MAX_ENUMERATED_WORKGROUPS = 256


def _counted_loops(ir: str, path: Path) -> tuple[dict[str, list[Loop]], dict[str, set[str]]]:
    """(loop forests, reachable blocks) of every function of `ir` once instsimplify has folded
    what is constant in it (written to `path`, simplified beside it). instsimplify changes no
    block: names and loops stay those of the code compiled."""
    path.write_text(ir)
    simplified = path.with_name(path.stem + ".simplified.ll")
    forests = _printed_loops(path, "instsimplify,", ["-S", "-o", str(simplified)])
    return forests, reachable_blocks(simplified.read_text())


def _summed(counts: list[tuple[dict[str, float], float]]) -> dict[str, float]:
    """Σ weight x count, per header, of (header counts, weight) pairs."""
    total: dict[str, float] = defaultdict(float)
    for headers, weight in counts:
        for header, n in headers.items():
            total[header] += weight * n
    return dict(total)


def _stubbed(ir: str, definitions: dict[str, str], functions) -> str:
    """`ir` with each of `functions` defined as an empty stub: its copies stand for it, and a
    stub keeps what refers to it (the executable's table of dispatches) valid."""
    for f in functions:
        ir = ir.replace(definitions[f], f"define internal i32 @{f}() {{\n  ret i32 0\n}}", 1)
    return ir


def call_header_counts(counted_ir: str, functions: set[str], grids: dict[str, tuple[int, int, int]],
                       work: Path) -> tuple[dict[str, list[Loop]], dict[str, tuple[dict[str, float], int] | UncostableFunction]]:
    """(function -> its loop forest, function -> (how often each loop header runs, summed over
    the workgroups counted; how many workgroups that is), or why it cannot be counted).

    A function of `grids` (function -> workgroups per axis to count one by one; an axis the
    function loops over is 1) is counted as its first and its last workgroup (copies with the
    id a constant, `workgroup_copy`); when the two agree every workgroup is taken to run the
    same loops, else each workgroup is counted (up to MAX_ENUMERATED_WORKGROUPS). Any other
    function is counted as one call with the id unknown. The copies have the function's
    blocks and loops (instsimplify changes no block), so the first one's forest is its."""
    definitions = function_definitions(counted_ir)
    stubbed = _stubbed(counted_ir, definitions, grids)

    def analysed(copies: dict[str, list[tuple[int, int, int]]], name: str):
        text = stubbed + "".join(
            "\n" + workgroup_copy(definitions[f], f, ids) for f, all_ids in copies.items() for ids in all_ids)
        return _counted_loops(text, work / name)

    probes = {f: sorted({(0, 0, 0), tuple(n - 1 for n in grid)}) for f, grid in grids.items()}
    forests, live = analysed(probes, "counted.ll")
    structure = {f: forests[workgroup_copy_name(f, probes[f][0]) if f in grids else f] for f in functions}

    result: dict[str, tuple[dict[str, float], int] | UncostableFunction] = {}
    ragged: dict[str, list[tuple[int, int, int]]] = {}
    for f in sorted(functions):
        try:
            if f not in grids:
                result[f] = (live_header_counts(forests[f], live[f]), 1)
                continue
            first, last = (live_header_counts(forests[name], live[name])
                           for name in (workgroup_copy_name(f, probes[f][0]), workgroup_copy_name(f, probes[f][-1])))
        except UncostableFunction as err:
            result[f] = err
            continue
        workgroups = math.prod(grids[f])
        if first == last:
            result[f] = (_summed([(first, workgroups)]), workgroups)
        elif workgroups > MAX_ENUMERATED_WORKGROUPS:
            result[f] = (_summed([(first, workgroups - 1), (last, 1)]), workgroups)
        else:
            grid = grids[f]
            ragged[f] = [(x, y, z) for x in range(grid[0]) for y in range(grid[1]) for z in range(grid[2])]
    if ragged:
        forests, live = analysed(ragged, "workgroups.ll")
        for f, all_ids in ragged.items():
            try:
                result[f] = (_summed([(live_header_counts(forests[name], live[name]), 1)
                                      for name in (workgroup_copy_name(f, ids) for ids in all_ids)]), len(all_ids))
            except UncostableFunction as err:
                result[f] = err
    return structure, result
