"""Reads what perf/qemu_plugin/insn_classes.c writes: executed blocks and their classes.

One file per qemu run (one dispatch, all workgroups). The plugin classifies each
instruction when it translates a block; this module multiplies by how often each block
ran inside the dispatch window and checks that the classes add up to the total.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from common.perf_schema import CLASS_NAMES

FORMAT = "insn_classes 2"
# The plugin's classes in its order; read_counts checks the plugin's header against them.
CLASSES = CLASS_NAMES
SLOT_UNKNOWN = 64
_LMUL_X8 = {0: 8, 1: 16, 2: 32, 3: 64, 5: 1, 6: 2, 7: 4}  # by vlmul
_LMUL_NAME = {0: "M1", 1: "M2", 2: "M4", 3: "M8", 5: "MF8", 6: "MF4", 7: "MF2"}


class CountsError(ValueError):
    """The plugin's output is missing, malformed or inconsistent."""


def slot_lmul_x8(slot: int) -> int:
    return _LMUL_X8[slot & 7]


def slot_instruments(slot: int) -> tuple[str, str]:
    """llvm-mca's RISC-V instruments for a vtype slot: (LMUL, SEW), e.g. ("M2", "E32")."""
    return _LMUL_NAME[slot & 7], f"E{8 << (slot >> 3)}"


@dataclass(frozen=True)
class Block:
    code: bytes  # the block's instructions, as executed
    insns: int
    nvec_entry: int  # vector instructions that run at the vtype the block is entered with
    weight_after_x8: int  # 8 * LMUL summed over vector instructions after a vset in the block
    nvec_after_unknown: int  # vector instructions after a register-form vsetvl
    fma: int  # vector multiply-accumulates
    classes: tuple[int, ...]  # per CLASSES, per execution
    executions: tuple[tuple[int, int], ...]  # (entry vtype slot, count)

    @property
    def count(self) -> int:
        return sum(n for _, n in self.executions)


@dataclass(frozen=True)
class CacheTraffic:
    """One simulated cache level's counters over the window (perf/qemu_plugin/cache_sim.h)."""

    size_bytes: int
    associativity: int
    line_bytes: int
    write_policy: str  # "wb" | "wt"
    read_accesses: int
    write_accesses: int
    read_misses: int
    write_misses: int
    read_bytes: int  # requested by the level above (the core for L1)
    write_bytes: int
    fill_bytes: int  # read from the next level
    writeback_bytes: int  # written to the next level (evictions, the final flush, write-through)
    split_requests: int  # requests that spanned two lines (each line is one access above)


@dataclass
class DispatchCounts:
    """Everything one dispatch executed, merged over the blocks QEMU translated, and the data
    traffic of its window through the simulated caches (empty when none were simulated).
    `priced_blocks` is what the core model prices: `blocks` with the blocks QEMU split at a
    guest page boundary joined again (`join_page_splits`)."""

    blocks: list[Block] = field(default_factory=list)
    priced_blocks: list[Block] = field(default_factory=list)
    caches: list[CacheTraffic] = field(default_factory=list)
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0

    @property
    def instructions(self) -> int:
        return sum(b.insns * b.count for b in self.blocks)

    def by_class(self) -> dict[str, int]:
        total = Counter()
        for b in self.blocks:
            for name, n in zip(CLASSES, b.classes):
                total[name] += n * b.count
        return {name: total[name] for name in CLASSES}

    @property
    def vector_fma(self) -> int:
        return sum(b.fma * b.count for b in self.blocks)

    def lmul_weighted_x8(self) -> tuple[int, int]:
        """(8 * sum of LMUL over executed vector instructions, vector instructions whose
        LMUL is unknown: entered before any vset or after a register-form vsetvl)."""
        weighted = unknown = 0
        for b in self.blocks:
            for slot, n in b.executions:
                weighted += n * b.weight_after_x8
                unknown += n * b.nvec_after_unknown
                if slot == SLOT_UNKNOWN:
                    unknown += n * b.nvec_entry
                else:
                    weighted += n * b.nvec_entry * slot_lmul_x8(slot)
        return weighted, unknown


# QEMU ends a translation block before an instruction that starts on the next guest page, so
# the same straight-line code is one block or two depending on where the linker put it. The
# core model prices each block as a region of its own (perf/mca.py), so a loop body split at a
# page cost more than the same bytes unsplit: se_net's dispatch 21 priced 141,869 model cycles
# in one link of the module and 131,259 in another (its inner loop crossed 0x...5000 in one).
# Joining the two halves again makes the price independent of the code's page offset. QEMU also
# cuts before an instruction that straddles a page and gives that one a block of its own (se_net's
# dispatch 13: one 12-byte loop block in one link, three blocks and 4.6% dearer in another).
PAGE_BYTES = 4096


def _words(code: bytes) -> list[tuple[int, int]]:
    """(instruction word, byte length) of each RISC-V instruction in `code` (2 or 4 bytes)."""
    out, at = [], 0
    while at < len(code):
        size = 4 if code[at] & 3 == 3 else 2
        out.append((int.from_bytes(code[at:at + size], "little"), size))
        at += size
    return out


def _transfers_control(word: int, size: int) -> bool:
    """A branch, jump, call or trap: a block ending with it need not fall through."""
    if size == 4:
        return word & 0x7F in (0x63, 0x67, 0x6F, 0x73)
    quadrant, funct3 = word & 3, (word >> 13) & 7
    if quadrant == 1 and funct3 in (1, 5, 6, 7):  # c.jal (rv32), c.j, c.beqz, c.bnez
        return True
    return quadrant == 2 and funct3 == 4 and (word >> 2) & 0x1F == 0  # c.jr, c.jalr, c.ebreak


def _vset_slot(word: int) -> int:
    """The vtype slot a vset{i}vl{i} sets (perf/qemu_plugin/insn_classes.c's vset_slot)."""
    if word >> 31 == 0:
        vtype = (word >> 20) & 0x7FF
    elif word >> 30 == 3:
        vtype = (word >> 20) & 0x3FF
    else:
        return SLOT_UNKNOWN
    vlmul, vsew = vtype & 7, (vtype >> 3) & 7
    if vtype & ~0xFF or vlmul == 4 or vsew > 3:
        return SLOT_UNKNOWN
    return vsew * 8 + vlmul


def _is_vset(word: int, size: int) -> bool:
    return size == 4 and word & 0x7F == 0x57 and (word >> 12) & 7 == 7


def _exit_slot(code: bytes, entry: int) -> tuple[int, bool]:
    """(the vtype slot after the code when entered at `entry`, whether the code sets one)."""
    slot, sets = entry, False
    for word, size in _words(code):
        if _is_vset(word, size):
            slot, sets = _vset_slot(word), True
    return slot, sets


def _spans_pages(addr: int, size: int) -> bool:
    return addr // PAGE_BYTES != (addr + size - 1) // PAGE_BYTES


def join_page_splits(raw: list[tuple[int, Block]]) -> list[Block]:
    """The blocks as the core model prices them: each block A that QEMU ended at a page boundary
    without a control transfer falls through into the block B starting there, so A's executions
    are priced as one region A+B (entered at A's vtype) and B keeps only its other entries; a
    chain A+B+C... is followed as long as each link is such a split. `raw`: (guest address,
    block) per translated block; a B whose entries do not add up is left as is."""
    same: dict[tuple[int, bytes], Block] = {}  # QEMU may translate one address more than once
    for addr, b in raw:
        if (addr, b.code) in same:
            execs = Counter(dict(same[(addr, b.code)].executions))
            execs.update(dict(b.executions))
            b = Block(b.code, b.insns, b.nvec_entry, b.weight_after_x8, b.nvec_after_unknown, b.fma, b.classes,
                      tuple(sorted(execs.items())))
        same[(addr, b.code)] = b
    raw = sorted(same.items())
    raw = [(addr, b) for (addr, _), b in raw]
    by_start: dict[int, list[int]] = {}
    for i, (addr, _) in enumerate(raw):
        by_start.setdefault(addr, []).append(i)

    def split_successor(i: int) -> int | None:
        """The block QEMU split off after block i at a page, if there is exactly one."""
        addr, a = raw[i]
        end = addr + len(a.code)
        words = _words(a.code)
        # QEMU also ends a block after a vset{i}vl{i} (its vtype is a translation-time constant):
        # such a block would end there in any link.
        if not words or _transfers_control(*words[-1]) or _is_vset(*words[-1]):
            return None
        successors = by_start.get(end, [])
        if len(successors) != 1:
            return None
        j = successors[0]
        # QEMU ends a block before an instruction on the next page, and gives an instruction that
        # straddles a page a block of its own (ending the block before it too): a split is a
        # block ending at a page, a block across one, or a block before one across one.
        if end % PAGE_BYTES == 0 or _spans_pages(addr, len(a.code)) or _spans_pages(end, len(raw[j][1].code)):
            return j
        return None

    joined: list[Block] = []
    remaining = {i: Counter(dict(b.executions)) for i, (_, b) in enumerate(raw)}
    for i, (_, a) in enumerate(raw):
        entries = tuple(sorted((slot, n) for slot, n in remaining[i].items() if n > 0))
        if not entries:
            continue
        region, flows, at = a, Counter(dict(entries)), i
        seen = {i}
        while (j := split_successor(at)) is not None and j not in seen:
            b = raw[j][1]
            into_b = Counter()
            for slot, n in flows.items():
                into_b[_exit_slot(region.code, slot)[0]] += n
            if any(remaining[j][slot] < n for slot, n in into_b.items()):
                break
            remaining[j].subtract(into_b)
            _, region_sets = _exit_slot(region.code, 0)
            nvec_entry = region.nvec_entry + (b.nvec_entry if not region_sets else 0)
            region = Block(region.code + b.code, region.insns + b.insns, nvec_entry,
                           region.weight_after_x8 + b.weight_after_x8,
                           region.nvec_after_unknown + b.nvec_after_unknown, region.fma + b.fma,
                           tuple(x + y for x, y in zip(region.classes, b.classes)), entries)
            flows, at = into_b, j
            seen.add(j)
        remaining[i] = Counter()
        joined.append(Block(region.code, region.insns, region.nvec_entry, region.weight_after_x8,
                            region.nvec_after_unknown, region.fma, region.classes, entries))
    return _merge_by_code(joined)


def _merge_by_code(blocks: list[Block]) -> list[Block]:
    merged: dict[bytes, tuple[Block, Counter]] = {}
    for b in blocks:
        if b.code not in merged:
            merged[b.code] = (b, Counter())
        merged[b.code][1].update(dict(b.executions))
    return [Block(b.code, b.insns, b.nvec_entry, b.weight_after_x8, b.nvec_after_unknown, b.fma, b.classes,
                  tuple(sorted(execs.items()))) for code, (b, execs) in sorted(merged.items())]


def read_counts(path: Path) -> DispatchCounts:
    """Parses one plugin output; blocks with identical code are merged."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise CountsError(f"{path}: the plugin wrote no output (did qemu load it?)") from None
    if not lines or lines[0] != FORMAT:
        raise CountsError(f"{path}: not an insn_classes output (first line {lines[:1]})")
    if len(lines) < 3 or lines[1].split()[1:] != list(CLASSES):
        raise CountsError(f"{path}: the plugin's classes differ from perf/counts.py's: {lines[1:2]}")
    windows = int(lines[2].split()[1])
    if windows != 1:
        raise CountsError(f"{path}: {windows} dispatch windows (expected exactly 1: is the runner "
                          f"built with the perf markers?)")
    out = DispatchCounts()
    if len(lines) < 4 or not lines[3].startswith("caches "):
        raise CountsError(f"{path}:4: expected the 'caches N' line")
    levels = int(lines[3].split()[1])
    body = 4
    for number in range(body, body + levels):
        parts = lines[number].split() if number < len(lines) else []
        if len(parts) != 15 or parts[0] != "cache" or int(parts[1]) != len(out.caches):
            raise CountsError(f"{path}:{number + 1}: malformed cache line")
        if parts[5] not in ("wb", "wt"):
            raise CountsError(f"{path}:{number + 1}: cache level {parts[1]}'s write policy is {parts[5]!r}, "
                              "not wb or wt")
        out.caches.append(CacheTraffic(int(parts[2]), int(parts[3]), int(parts[4]), parts[5],
                                       *(int(x) for x in parts[6:])))
    body += levels
    if levels:
        parts = lines[body].split() if body < len(lines) else []
        if len(parts) != 3 or parts[0] != "dram":
            raise CountsError(f"{path}:{body + 1}: expected the 'dram READ WRITE' line")
        out.dram_read_bytes, out.dram_write_bytes = int(parts[1]), int(parts[2])
        body += 1
    raw: list[tuple[int, Block]] = []
    for number, line in enumerate(lines[body:], start=body + 1):
        parts = line.split()
        if len(parts) < 11 or parts[0] != "block":
            raise CountsError(f"{path}:{number}: malformed block line")
        vaddr, size, insns, nvec, weight, unknown, fma = parts[1:8]
        classes = tuple(int(c) for c in parts[8].split(","))
        code = bytes.fromhex(parts[9])
        if len(code) != int(size) or len(classes) != len(CLASSES) or sum(classes) != int(insns):
            raise CountsError(f"{path}:{number}: block sizes or class counts do not add up")
        execs = Counter()
        for item in parts[10:]:
            slot, n = item.split(":")
            execs[int(slot)] += int(n)
        raw.append((int(vaddr, 16), Block(code, int(insns), int(nvec), int(weight), int(unknown), int(fma),
                                          classes, tuple(sorted(execs.items())))))
    out.blocks = _merge_by_code([b for _, b in raw])
    out.priced_blocks = join_page_splits(raw)
    return out
