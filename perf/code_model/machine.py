"""Machine code: what the model needs of an instruction set (`Isa`: RISCV64, X86_64), a
function's basic blocks in layout order (`machine_blocks`), its loops found from backward
branches (`layout_loops`), and llvm-mca's cycles of the pieces of each block times its count
(`block_cycles`: on RISC-V the pieces qemu translates, perf.measure's unit); in native code
a short loop nest's whole iteration as one region (`nest_cycles`), as the core overlaps them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from perf import mca
from perf.code_model.errors import CodeCostError


@dataclass
class MachineBlock:
    label: str | None  # .LBB<f>_<n> when it is a branch target
    ir_block: str | None  # the IR block llc's verbose comment names (our llc's code only)
    lines: list[str] = field(default_factory=list)
    named: bool = False  # ir_block is the comment's own, not inherited from the block before


_LABEL = re.compile(r"^(?:(\.LBB\d+_\d+):|# %bb\.\d+:)\s*(?:#\s+(%[\w.\-]+)\s*$)?")
QEMU_MAX_TB_INSNS = 512  # qemu's TCG_MAX_INSNS: no translation block is longer


@dataclass(frozen=True)
class Isa:
    """What the model needs of an instruction set: the triple llc-19 and llvm-mca take, the
    branches that close loops, and where the costed pieces end."""
    name: str
    triple: str
    mca_triple: str
    branch: re.Pattern
    # RVV: the vtype-setting instruction; a piece ends after it (qemu ends its translation
    # block there) and its LMUL/SEW instrument the pieces after it. None: no such instruction.
    vset: re.Pattern | None
    max_piece: int | None  # instructions per piece (qemu's TB limit); None: whole blocks
    # Instructions after which control does not fall through to the next block (unconditional
    # jumps, returns, tail calls).
    ends_flow: re.Pattern
    # How llvm-mca must read an instruction it has no scheduling class for: (pattern, its
    # replacement), the spelling the measurement's disassembly gives the same encoding.
    mca_spellings: tuple[tuple[re.Pattern, Callable[[re.Match], str]], ...] = ()
    # Native code (the host): the core's reorder window overlaps successive iterations of a loop,
    # so a short loop nest's iteration is priced whole (`nest_cycles`). RISC-V: False, the code
    # model predicts perf.measure, which prices qemu's translation blocks one by one.
    overlaps_iterations: bool = False

    def for_mca(self, line: str) -> str:
        for pattern, spelling in self.mca_spellings:
            line = pattern.sub(spelling, line)
        return line


RISCV64 = Isa("riscv64", "riscv64-unknown-linux-gnu", "riscv64",
              re.compile(r"^(?:j|beqz|bnez|blez|bgez|bltz|bgtz|beq|bne|blt|bge|bltu|bgeu|bgt|ble|bgtu|bleu)"
                         r"\s.*?(\.LBB\d+_\d+)\s*$"),
              re.compile(r"vset(?:i)?vli\s+\w+,\s*\w+,\s*(e\d+),\s*(mf?\d)"), QEMU_MAX_TB_INSNS,
              re.compile(r"^(?:(?:j|jr|tail)\s|ret\b)"),
              # Zicbop's prefetches (IREE's microkernels) are ORI hints to x0: the accelerator's
              # ISA string has no zicbop, so the perf stage's disassembly reads them as `ori`,
              # and llvm-mca-19's sifive-p670 has no scheduling class for `prefetch.*`.
              ((re.compile(r"^prefetch\.([irw])\s+(-?\d+)\((\w+)\)"),
                lambda m: f"ori zero, {m[3]}, {int(m[2]) + {'i': 0, 'r': 1, 'w': 3}[m[1]]}"),))
# Natively run code has no translation blocks: a basic block is one piece.
X86_64 = Isa("x86_64", "x86_64-unknown-linux-gnu", "x86_64",
             re.compile(r"^j[a-z]+\s+(\.LBB\d+_\d+)\s*$"), None, None,
             re.compile(r"^(?:jmp[a-z]*|ret[a-z]*|ud2)\b"), overlaps_iterations=True)
ISAS = (RISCV64, X86_64)


def isa_of(triple: str) -> Isa:
    """The Isa of a target triple (its architecture, the part before the first '-')."""
    arch = triple.split("-", 1)[0]
    for isa in ISAS:
        if isa.name == arch:
            return isa
    raise CodeCostError(f"target triple {triple!r}: the code model knows {', '.join(i.name for i in ISAS)}, "
                        f"not {arch}")


def machine_blocks(asm: str, function: str, isa: Isa = RISCV64) -> list[MachineBlock]:
    """The function's basic blocks in layout order: a block starts at a label (or llc's
    `# %bb.N` comment) and after a block's branches."""
    parts = re.split(rf"\n{re.escape(function)}:[^\n]*\n", asm, maxsplit=1)
    if len(parts) != 2:
        raise CodeCostError(f"no code for {function} in the assembly")
    blocks = [MachineBlock(None, "%<entry>")]
    for raw in parts[1].split(".Lfunc_end", 1)[0].splitlines():
        if m := _LABEL.match(raw):
            blocks.append(MachineBlock(m.group(1), m.group(2) or blocks[-1].ir_block, named=bool(m.group(2))))
            continue
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith(".") or line.endswith(":"):
            continue
        last = blocks[-1].lines[-1] if blocks[-1].lines else ""
        if isa.branch.match(last) and not isa.branch.match(line):
            blocks.append(MachineBlock(None, blocks[-1].ir_block))
        blocks[-1].lines.append(line)
    return [b for b in blocks if b.lines or b.label]


def _successors(blocks: list[MachineBlock], at: dict[str, int], isa: Isa) -> list[set[int]]:
    """Each block's successors: its branch targets (`at`: label -> block index) and, unless it
    ends the flow, the next block."""
    out = []
    for i, block in enumerate(blocks):
        succ = {at[m.group(1)] for line in block.lines if (m := isa.branch.match(line)) and m.group(1) in at}
        if i + 1 < len(blocks) and not (block.lines and isa.ends_flow.match(block.lines[-1])):
            succ.add(i + 1)
        out.append(succ)
    return out


def _reaches(successors: list[set[int]], start: int, goal: int) -> bool:
    seen, todo = {start}, [start]
    while todo:
        k = todo.pop()
        if k == goal:
            return True
        for n in successors[k] - seen:
            seen.add(n)
            todo.append(n)
    return False


def layout_loops(blocks: list[MachineBlock], isa: Isa = RISCV64) -> list[tuple[int, int]]:
    """Loops as (first, last) block index, outer before inner: a branch back to an earlier
    label closes a loop (the block placement keeps loops contiguous) when that label leads
    back to the branch; a branch back to an exit (a block that returns, placed earlier) does not."""
    at = {b.label: i for i, b in enumerate(blocks) if b.label}
    successors = _successors(blocks, at, isa)
    last: dict[int, int] = {}
    for i, block in enumerate(blocks):
        for line in block.lines:
            if (m := isa.branch.match(line)) and m.group(1) in at and at[m.group(1)] <= i:
                first = at[m.group(1)]
                if _reaches(successors, first, i):
                    last[first] = max(last.get(first, i), i)
    return sorted(last.items(), key=lambda span: (span[0], -span[1]))


def block_cycles(blocks: list[MachineBlock], counts: list[float], core: str, isa: Isa = RISCV64) -> float:
    """Sum of llvm-mca cycles x count, over the pieces of each block. RISC-V: the pieces qemu
    would translate (perf.measure's unit): a translation block ends after a vsetvli and after
    512 instructions. Elsewhere a basic block is one piece."""
    regions, times, vtype = [], [], None
    for block, count in zip(blocks, counts):
        piece: list[str] = []
        for line in block.lines:
            piece.append(isa.for_mca(line))
            vset = isa.vset.search(line) if isa.vset else None
            if vset or (isa.max_piece and len(piece) >= isa.max_piece):
                regions.append((piece, vtype))
                times.append(count)
                piece = []
            if vset:
                vtype = (vset.group(2).upper(), vset.group(1).upper())
        if piece:
            regions.append((piece, vtype))
            times.append(count)
    try:
        return sum(float(c) * n for c, n in zip(mca.text_cycles(regions, core, isa.mca_triple), times))
    except mca.McaError as err:
        raise CodeCostError(str(err)) from None


# ---- native code: a short loop nest's iteration as one region -------------------------------
# Instructions of one outer iteration (inner loops unrolled) priced as one llvm-mca region; a
# few times Zen 3's 256-entry reorder buffer, so the region spans where a loop-carried chain
# restarts. Beyond it a nest is priced a level further in.
MAX_NEST_INSNS = 1024


def _parents(loops: list[tuple[int, int]]) -> list[int | None]:
    """Each loop's innermost enclosing loop (loops as layout_loops gives them)."""
    out: list[int | None] = []
    for first, last in loops:
        around = [p for p, (a, b) in enumerate(loops) if a < first and last <= b]
        out.append(max(around, key=lambda p: loops[p][0]) if around else None)
    return out


def nest_iteration(blocks: list[MachineBlock], loops: list[tuple[int, int]], loop_counts: list[float],
                   k: int) -> list[str] | None:
    """The instructions of one iteration of loop `k`, its inner loops unrolled by their trips per
    iteration of `k` (loop_counts: each loop's iterations in all), or None when an inner loop's
    trips are not a whole number (a triangular nest, a guard) or the iteration exceeds
    MAX_NEST_INSNS."""
    parents = _parents(loops)
    children = {loops[c][0]: c for c, p in enumerate(parents) if p == k}
    first, last = loops[k]
    lines: list[str] = []
    i = first
    while i <= last:
        if i not in children:
            lines += blocks[i].lines
            i += 1
            continue
        c = children[i]
        trips = loop_counts[c] / loop_counts[k]
        if trips != int(trips):
            return None
        inner = nest_iteration(blocks, loops, loop_counts, c) if trips else []
        # Checked before unrolling: an inner loop of millions of trips is never materialised.
        if inner is None or len(lines) + len(inner) * trips > MAX_NEST_INSNS:
            return None
        lines += inner * int(trips)
        i = loops[c][1] + 1
    return lines if len(lines) <= MAX_NEST_INSNS else None


def nest_cycles(blocks: list[MachineBlock], loops: list[tuple[int, int]], loop_counts: list[float],
                counts: list[float], core: str, isa: Isa) -> float:
    """`block_cycles` of native code (isa.overlaps_iterations), but each outermost loop whose
    iteration `nest_iteration` gives is priced as that one region times the loop's iterations:
    llvm-mca's steady state of an innermost block runs a loop-carried chain (a convolution's
    single accumulator) on forever, while the core overlaps the next outer iteration's chain
    with it. Loops too long or irregular are priced a level further in; the rest per block."""
    parents = _parents(loops)
    regions: list[tuple[list[str], None]] = []
    times: list[float] = []
    covered: set[int] = set()

    def visit(k: int) -> None:
        first, last = loops[k]
        if loop_counts[k] == 0:  # behind a branch never taken: runs nothing
            covered.update(range(first, last + 1))
            return
        lines = nest_iteration(blocks, loops, loop_counts, k)
        if lines is not None:
            regions.append(([isa.for_mca(l) for l in lines], None))
            times.append(loop_counts[k])
            covered.update(range(first, last + 1))
            return
        for c, p in enumerate(parents):
            if p == k:
                visit(c)

    for k, p in enumerate(parents):
        if p is None:
            visit(k)
    rest = [i for i in range(len(blocks)) if i not in covered]
    total = block_cycles([blocks[i] for i in rest], [counts[i] for i in rest], core, isa) if rest else 0.0
    try:
        return total + sum(float(c) * n for c, n in zip(mca.text_cycles(regions, core, isa.mca_triple), times))
    except mca.McaError as err:
        raise CodeCostError(str(err)) from None
