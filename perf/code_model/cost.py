"""The code model's figures: each dispatch function of a module costed (`call_cycles`: the trip
counts of its IR loops put on the machine loops of IREE's code, or of llc-19's, and priced by
llvm-mca), and every dispatch of a compiled build, all its workgroups (`code_call_cycles`; it
compiles nothing: choice.rounds.module_call_cycles compiles a build and costs it here)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from perf.code_model.errors import CodeCostError, MissingCode, UncostableFunction
from perf.code_model.ir_text import downgrade_ir, function_definitions, is_dispatch_function, one_workgroup_ir
from perf.code_model.llvm_tools import LLC, OPT, first_error, tool
from perf.code_model.loops import Loop, call_header_counts
from perf.code_model.machine import RISCV64, Isa, block_cycles, isa_of, layout_loops, machine_blocks, nest_cycles


@dataclass
class CallCycles:
    cycles: dict[str, float]  # dispatch function -> model cycles of one call
    llc_code: set[str]  # functions costed on llc-19's code: IREE's loops did not line up
    errors: dict[str, str] = field(default_factory=dict)  # functions that cannot be costed, why
    calls: dict[str, int] = field(default_factory=dict)  # dispatch -> calls per call of the model
    # function -> the workgroup axes it loops over, costed with their count at 1 (one_workgroup_ir)
    looped_axes: dict[str, set[int]] = field(default_factory=dict)
    # functions whose cycles are of all their workgroups (call_cycles' workgroup_counts)
    all_workgroups: set[str] = field(default_factory=set)

    def model_cycles(self) -> float:
        """One call of the model: each costed dispatch's cycles times its calls (initializers,
        which run once at load, are not counted)."""
        return sum(cycles * self.calls[name] for name, cycles in self.cycles.items())


def call_cycles(ir_text: str, iree_asm: str | None, core: str, cpu_features: list[str], work: Path,
                functions: set[str] | None = None, isa: Isa = RISCV64, cpu: str = "generic-rv64",
                workgroup_counts: dict[str, tuple[int, int, int]] | None = None) -> CallCycles:
    """Model cycles of each dispatch function (or of `functions`) in the module, with each
    workgroup-count axis the function reads at 1 (`one_workgroup_ir`; the axes are in
    `looped_axes`): of every workgroup of a function given its count in `workgroup_counts`
    (such functions are in `all_workgroups`; see `call_header_counts`), else of one call with
    the workgroup id unknown.

    The code costed is IREE's own (`iree_asm`, its .s), when its loops line up with those of
    llc-19's verbose assembly of the same IR (which names each block's IR block, hence each
    loop's trip count); otherwise llc-19's code, and the function is listed in `llc_code`.
    `isa` and `cpu` are the target's (llc-19 -mtriple/-mcpu); `core` is llvm-mca's -mcpu."""
    work.mkdir(parents=True, exist_ok=True)
    downgraded, named, asm_path = work / "module.ll", work / "named.ll", work / "module.s"
    downgraded.write_text(downgrade_ir(ir_text))
    proc = subprocess.run([tool(OPT), "-passes=instnamer", "-S", str(downgraded), "-o", str(named)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodeCostError(f"{OPT} cannot read IREE's IR: {first_error(proc.stderr)}")
    counted_ir, looped_axes = one_workgroup_ir(named.read_text())
    defined = set(function_definitions(counted_ir))
    wanted = functions if functions is not None else {f for f in defined if is_dispatch_function(f)}
    for function in sorted(wanted - defined):
        raise CodeCostError(f"{function}: not in the module's IR")
    grids = {f: workgroup_grid(count, looped_axes.get(f, set()))
             for f, count in (workgroup_counts or {}).items() if f in wanted}
    forests, counted = call_header_counts(counted_ir, wanted, grids, work)
    proc = subprocess.run([tool(LLC), "-O3", f"-mtriple={isa.triple}", f"-mcpu={cpu}",
                           f"-mattr={','.join(cpu_features)}", str(named), "-o", str(asm_path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise CodeCostError(f"{LLC} cannot compile IREE's IR: {first_error(proc.stderr)}")
    ours_asm = asm_path.read_text()
    result = CallCycles({}, set())
    for function in sorted(wanted):
        try:  # one function's code, not the module's: the others stand
            if isinstance(counted[function], UncostableFunction):
                raise counted[function]
            headers, workgroups = counted[function]
            cycles, on_llc = _function_cycles(function, forests[function], headers, workgroups, ours_asm,
                                              iree_asm, core, isa)
        except UncostableFunction as err:
            result.errors[function] = str(err)
            continue
        result.cycles[function] = cycles
        if function in grids:
            result.all_workgroups.add(function)
        if function in looped_axes:
            result.looped_axes[function] = looped_axes[function]
        if on_llc:
            result.llc_code.add(function)
    return result


def _depths(loops: list[tuple[int, int]]) -> list[int]:
    return [sum(1 for a, b in loops if a <= first and last <= b) for first, last in loops]


def _innermost(loops: list[tuple[int, int]], index: int) -> int | None:
    inside = [k for k, (a, b) in enumerate(loops) if a <= index <= b]
    return max(inside, key=lambda k: loops[k][0]) if inside else None


def _function_cycles(function: str, roots: list[Loop], headers: dict[str, float], workgroups: int,
                     ours_asm: str, iree_asm: str | None, core: str, isa: Isa) -> tuple[float, bool]:
    """(model cycles of `workgroups` workgroups whose loop headers run `headers` times in all,
    whether llc-19's code was costed instead of IREE's)."""
    innermost_ir: dict[str, Loop] = {}
    for loop in sorted((l for r in roots for l in r.walk()), key=lambda l: l.depth):
        for block in loop.blocks:
            innermost_ir[block] = loop
    ours = machine_blocks(ours_asm, function, isa)
    our_loops = layout_loops(ours, isa)
    loop_counts = []
    for first, last in our_loops:
        # The IR loop of a machine loop: the outermost of its named blocks' innermost IR loops
        # (a block codegen added has no IR block of its own: it takes its predecessor's
        # name, which may lie outside the loop). A loop behind a branch never taken runs 0 times.
        inside = [innermost_ir[b.ir_block] for b in ours[first:last + 1] if b.named and b.ir_block in innermost_ir]
        if not inside:  # e.g. a memcpy llc expanded into a loop: no trip count to take
            raise UncostableFunction(f"machine loop at {ours[first].label} is in no IR loop")
        loop_counts.append(headers.get(min(inside, key=lambda loop: loop.depth).header, 0.0))
    code, loops, on_llc = ours, our_loops, False
    if iree_asm is not None:
        theirs = machine_blocks(iree_asm, function, isa)
        their_loops = layout_loops(theirs, isa)
        if _depths(their_loops) == _depths(our_loops):
            code, loops = theirs, their_loops
        else:
            on_llc = True
    counts = []
    for i in range(len(code)):
        k = _innermost(loops, i)
        counts.append(float(workgroups) if k is None else loop_counts[k])
    if isa.overlaps_iterations:
        return nest_cycles(code, loops, loop_counts, counts, core, isa), on_llc
    return block_cycles(code, counts, core, isa), on_llc


def workgroup_grid(workgroup_count: tuple[int, int, int], looped_axes: set[int]) -> tuple[int, int, int]:
    """The workgroups to count along each axis: its count, or 1 along an axis the function
    loops over (one workgroup runs all its tiles: `one_workgroup_ir`)."""
    return tuple(1 if axis in looped_axes else n for axis, n in enumerate(workgroup_count))


def code_call_cycles(targets_ir: Path, intermediates: Path, target, core: str, work: Path) -> CallCycles:
    """Model cycles of one call of every dispatch of a compiled module (all its workgroups, the
    count IREE materialized for the call site), from its executable-targets IR (the
    workgroup count of each call site) and the directory of IREE's `*.optimized.ll` and `.s`
    per executable (`codegen.compile --out-code` writes both)."""
    from codegen import compile as cg
    from codegen.layout import CompiledTarget

    isa = isa_of(target.triple)
    if not Path(targets_ir).is_file():
        raise MissingCode(f"{targets_ir}: not found (codegen.compile --out-code writes it)")
    compiled = CompiledTarget(target, Path(targets_ir).read_text(), [], [])
    total = CallCycles({}, set())
    lls = sorted(Path(intermediates).glob(f"*{cg.CODE_LLVM_IR}"))
    if not lls:
        raise MissingCode(f"{intermediates}: no {cg.CODE_LLVM_IR} of IREE's")
    counts = {name: d.workgroup_count for name, d in compiled.dispatches.items() if d.workgroup_count is not None}
    for ll in lls:
        asm = ll.with_name(ll.name.removesuffix(cg.CODE_LLVM_IR) + ".s")
        if not asm.exists():
            raise MissingCode(f"IREE wrote no assembly beside {ll.name}")
        costed = call_cycles(ll.read_text(), asm.read_text(), core, list(target.cpu_features), work,
                             isa=isa, cpu=target.cpu, workgroup_counts=counts)
        for name, cycles in costed.cycles.items():
            dispatch = compiled.dispatches.get(name)
            if name not in costed.all_workgroups:
                total.errors[name] = f"no workgroup count ({dispatch.error if dispatch else 'not dispatched'})"
                continue
            total.cycles[name] = cycles
            total.calls[name] = dispatch.calls
        total.llc_code |= costed.llc_code
        total.errors.update(costed.errors)
    return total
