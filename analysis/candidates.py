"""Candidate generators: complete tile sets for one dispatch, named stably across dispatches.

Every generator returns `Proposal`s whose tiles are *final*: `finalize` applies the same
rules codegen's `pipeline_adjust` would (clamping, lane multiples, unit window rows for
ConvTileAndDecomposeExpert), so the cost model predicts exactly what is compiled.
Which generators an op kind gets is decided in common/op_kinds.py, not here.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from analysis import tiles as tl
from analysis import zigzag_cost
from analysis.dispatches import DispatchInfo
from common.hardware import Hardware

# The accumulator budgets (vector registers) the register search tries: half the register
# file (the rest for operands and broadcasts), and all but four (IREE's RVV matmul default,
# 7 rows x 4 vectors = 28 of 32, is of this kind).
RESERVED_REGISTERS = 4
# Vectors per accumulator row the register search tries (RVV LMUL 1..8; AVX2 1..8 YMM).
ROW_VECTORS = (1, 2, 4, 8)


@dataclasses.dataclass(frozen=True)
class Proposal:
    name: str
    generator: str  # a Provenance of common/analysis_schema.py
    tiles: dict[str, list[int]]
    reason: str


@dataclasses.dataclass(frozen=True)
class Context:
    info: DispatchInfo
    hw: Hardware
    zigzag: dict | None  # ZigZag's result for this op, when it ran and succeeded
    zigzag_error: str | None
    default: dict[str, list[int]] | None  # IREE's own tiles as roles (iree_default_tiles)

    @property
    def bounds(self) -> list[int]:
        return [b for _, b, _ in self.info.nest.loops]

    @property
    def kinds(self) -> list[str]:
        return [k for _, _, k in self.info.nest.loops]

    @property
    def lanes(self) -> int:
        return self.hw.lanes_f32


def iree_default_tiles(levels: dict[str, list[int]], bounds: list[int], kinds: list[str]
                       ) -> dict[str, list[int]] | None:
    """IREE's lowering_config levels -> analysis roles (the inverse of codegen's map_levels;
    IREE's 0 = not tiled at that level = the enclosing tile)."""
    n = len(bounds)
    if "distribution" not in levels or any(len(v) != n for v in levels.values()):
        return None

    def level(name: str, i: int) -> int:
        v = levels.get(name)
        return v[i] if v is not None else 0

    l2 = [level("distribution", i) or b if k == "parallel" else b
          for i, (b, k) in enumerate(zip(bounds, kinds))]
    l1 = [level("cache_parallel" if k == "parallel" else "cache_reduction", i) or l2[i]
          for i, k in enumerate(kinds)]
    reg = [level("vector_common_parallel" if k == "parallel" else "vector_reduction", i) or
           (l1[i] if k == "reduction" else 1) for i, k in enumerate(kinds)]
    return {"register": [min(r, a) for r, a in zip(reg, l1)], "l1": l1, "l2": l2}


def unit_register_loops(info: DispatchInfo) -> frozenset[int]:
    """Loops whose register tile must be 1: ConvTileAndDecomposeExpert decomposes a 2-D window
    only when the first (output row, window row) pair has unit vector tiles (codegen's
    pipeline_adjust enforces the same rule)."""
    if "ConvTileAndDecomposeExpert" not in info.pipeline or not info.nest.terms:
        return frozenset()
    for expr in info.nest.terms[0]:
        if len(expr) == 2:
            return frozenset(d for d, _ in expr)
    return frozenset()


def finalize(ctx: Context, t: dict[str, list[int]]) -> dict[str, list[int]]:
    """Tiles as codegen will compile them: 1 <= register <= l1 <= l2 <= bound, the vector
    loop's register tile 1, the whole loop, or a multiple of the lanes, unit window rows."""
    bounds, kinds, lanes = ctx.bounds, ctx.kinds, ctx.lanes
    out = {r: [max(1, min(int(x), b)) for x, b in zip(t[r], bounds)] for r in ("register", "l1", "l2")}
    for i in unit_register_loops(ctx.info):
        out["register"][i] = 1
    inner = tl.innermost_parallel(kinds)
    if inner is not None:
        r, b = out["register"][inner], bounds[inner]
        if r not in (1, b) and r % lanes:
            out["register"][inner] = min(-(-r // lanes) * lanes, b)
    for i in range(len(bounds)):
        out["l1"][i] = max(out["l1"][i], out["register"][i])
        out["l2"][i] = max(out["l2"][i], out["l1"][i])
    return out


# --------------------------------------------------------------------------------------------
# Generators: Context -> proposals


def _zigzag(ctx: Context) -> list[Proposal]:
    """ZigZag's per-level mapping as tiles: L1/L2 from its temporal mapping, the register tile
    from the register-file model, l2 split into per-core workgroups, legalised."""
    if ctx.zigzag is None:
        return []
    nest, bounds, kinds, hw, lanes = ctx.info.nest, ctx.bounds, ctx.kinds, ctx.hw, ctx.lanes
    reg_elems = hw.level("register").size_bytes // 4
    reg = tl.register_proposal(bounds, kinds, lanes, reg_elems)
    prop = zigzag_cost.level_tiles(ctx.zigzag, len(bounds), zigzag_cost.relevant_loops(nest))
    # ZigZag's register level is per-lane scalar registers: its register tiles say nothing
    # about vectors and accumulators, so the register tile comes from the register model.
    prop["register"] = reg
    prop["l1"] = [max(a, b) for a, b in zip(prop["l1"], reg)]
    prop["l2"] = [max(a, b) for a, b in zip(prop["l2"], prop["l1"])]
    legal = tl.distribute(bounds, kinds, tl.cap_parallel_l1(
        kinds, tl.legalize(bounds, kinds, prop, lanes, reg_elems)), hw.cores)
    return [Proposal("zigzag", "zigzag", finalize(ctx, legal),
                     f"ZigZag's L1/L2 mapping ({ctx.zigzag['latency_cycles']:.0f} cycles predicted "
                     "by ZigZag for its own mapping), register tile from the register-file model, "
                     "per-core workgroups")]


def _analytical(ctx: Context) -> list[Proposal]:
    """Cache-filling tiles: L1 and L2 tiles grown to half of each cache."""
    nest, bounds, kinds, hw, lanes = ctx.info.nest, ctx.bounds, ctx.kinds, ctx.hw, ctx.lanes
    reg_elems = hw.level("register").size_bytes // 4
    legal = tl.distribute(bounds, kinds, tl.cap_parallel_l1(kinds, tl.analytical_tiles(
        bounds, kinds, nest.terms, lanes, reg_elems, hw.level("l1").size_bytes,
        hw.level("l2").size_bytes)), hw.cores)
    return [Proposal("analytical", "analytical", finalize(ctx, legal),
                     "register tile from the register-file model, L1/L2 tiles grown to half of "
                     "each cache, per-core workgroups")]


def _register_variants(ctx: Context, base_name: str, base: dict[str, list[int]]) -> list[Proposal]:
    bounds, kinds, lanes = ctx.bounds, ctx.kinds, ctx.lanes
    inner = tl.innermost_parallel(kinds)
    if inner is None:
        return []
    unit = unit_register_loops(ctx.info)
    has_red = "reduction" in kinds
    rows_loop = next((i for i in range(inner - 1, -1, -1) if kinds[i] == "parallel"
                      and bounds[i] > 1 and i not in unit), None)
    vregs = ctx.hw.compute.vector_registers
    budgets = sorted({vregs // 2, vregs - RESERVED_REGISTERS}) if has_red else [None]
    registers = [("+aligned", list(base["register"]),
                  f"{base_name}'s register tile, ")]  # only its outer tiles may change
    for vecs in ROW_VECTORS:
        width = tl.lane_tile(bounds[inner], lanes, vecs * lanes)
        if -(-width // lanes) != vecs:
            continue  # the loop is too short for this many vectors
        for budget in budgets:
            rows = 1
            if budget is not None and rows_loop is not None:
                rows = max(1, min(bounds[rows_loop], budget // vecs))
            reg = [1 if k == "parallel" else r for r, k in zip(base["register"], kinds)]
            reg[inner] = width
            if rows_loop is not None:
                reg[rows_loop] = rows
            registers.append((f"+reg{rows}x{vecs}v", reg, f"{base_name}'s cache and workgroup "
                              f"tiles with a register tile of {rows} accumulator row(s) x {vecs} "
                              "vector(s), "))
    out, seen = [], {tuple(tuple(base[r]) for r in ("register", "l1", "l2"))}
    for suffix, reg, why in registers:
        l1 = [max(a, r) for a, r in zip(base["l1"], reg)]
        l1[inner] = tl.dividing_multiple(l1[inner], reg[inner], bounds[inner])
        l2 = [max(a, b) for a, b in zip(base["l2"], l1)]
        l2[inner] = tl.dividing_multiple(l2[inner], l1[inner], bounds[inner])
        tiles = finalize(ctx, {"register": reg, "l1": l1, "l2": l2})
        key = tuple(tuple(tiles[r]) for r in ("register", "l1", "l2"))
        if key in seen:
            continue
        seen.add(key)
        out.append(Proposal(base_name + suffix, "search", tiles,
                            why + "the vector loop's cache and workgroup tiles whole multiples "
                            "of it that divide the loop, or the whole loop"))
    return out


# What names a candidate's twin with its reduction blocked at L1 (choice.tune's shortlist adds the
# twin of the code model's cheapest candidate: the code model prices every load as an L1 hit, so
# only the measurement can tell what the blocking buys).
REDUCTION_BLOCKED = "+kblock"


def _reduction_blocked(ctx: Context, base: Proposal | tuple[str, dict[str, list[int]]]) -> list[Proposal]:
    name, tiles = (base.name, base.tiles) if isinstance(base, Proposal) else base
    blocked = tl.block_reduction(ctx.bounds, ctx.kinds, tiles, ctx.info.nest.terms,
                                 ctx.hw.level("l1").size_bytes)
    if blocked is None:
        return []
    blocked = finalize(ctx, blocked)
    if blocked == finalize(ctx, tiles):
        return []
    return [Proposal(name + REDUCTION_BLOCKED, "search", blocked,
                     f"{name}'s tiles with the reduction blocked at L1 (block "
                     f"{max(blocked['l1'][i] for i, k in enumerate(ctx.kinds) if k == 'reduction')}, "
                     "the L1 tile's operands within L1), so a register tile does not stream "
                     "whole rows and columns from L2 or DRAM")]


def _register_search(ctx: Context) -> list[Proposal]:
    """Systematic register tiles (1, 2, 4, 8 vectors per row; rows filling half the register
    file or all but RESERVED_REGISTERS) and the base's own register tile, on IREE's default and
    on ZigZag's cache tiles, the vector loop's outer tiles made whole multiples of it; each
    also with its reduction blocked at L1 (`_reduction_blocked`), and IREE's default too."""
    variants = []
    if ctx.default is not None:
        variants += _register_variants(ctx, "iree-default", ctx.default)
    for p in _zigzag(ctx):
        variants += _register_variants(ctx, "zigzag", p.tiles)
    out = []
    if ctx.default is not None:
        out += _reduction_blocked(ctx, ("iree-default", ctx.default))
    for p in variants:
        out += [p] + _reduction_blocked(ctx, p)
    return out


GENERATORS: dict[str, Callable[[Context], list[Proposal]]] = {
    "zigzag": _zigzag,
    "analytical": _analytical,
    "register-search": _register_search,
}
