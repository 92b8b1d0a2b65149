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
    traffic of its window through the simulated caches (empty when none were simulated)."""

    blocks: list[Block] = field(default_factory=list)
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
    merged: dict[bytes, dict] = {}
    for number, line in enumerate(lines[body:], start=body + 1):
        parts = line.split()
        if len(parts) < 11 or parts[0] != "block":
            raise CountsError(f"{path}:{number}: malformed block line")
        _vaddr, size, insns, nvec, weight, unknown, fma = parts[1:8]
        classes = tuple(int(c) for c in parts[8].split(","))
        code = bytes.fromhex(parts[9])
        if len(code) != int(size) or len(classes) != len(CLASSES) or sum(classes) != int(insns):
            raise CountsError(f"{path}:{number}: block sizes or class counts do not add up")
        execs = Counter()
        for item in parts[10:]:
            slot, n = item.split(":")
            execs[int(slot)] += int(n)
        entry = merged.setdefault(code, {
            "insns": int(insns), "nvec": int(nvec), "weight": int(weight), "unknown": int(unknown),
            "fma": int(fma), "classes": classes, "execs": Counter()})
        entry["execs"].update(execs)
    for code in sorted(merged):
        e = merged[code]
        out.blocks.append(Block(code, e["insns"], e["nvec"], e["weight"], e["unknown"], e["fma"],
                                e["classes"], tuple(sorted(e["execs"].items()))))
    return out
