"""Tile legalisation: per loop and memory level (register <= l1 <= l2 <= bound), pure functions.

Rules (proved by tiles_test.py with hypothesis):
- every tile is >= 1 and <= the loop bound; register <= l1 <= l2 per loop;
- tiles are divisors of the next outer tile (or bound) whenever the lane rule allows;
- the innermost parallel loop's register tile is a multiple of the f32 lanes, or the whole
  loop when the loop is shorter than the lanes;
- reduction register tiles are 1..4;
- the register tiles' product (elements held at once) fits the vector register file.
`grow_l1`/`analytical_tiles` choose tiles that fill a cache budget, so tiles amortise loop
overhead instead of being tiny (the Quidditch trap).
"""

from __future__ import annotations

from math import prod
from typing import Sequence

MAX_REDUCTION_REGISTER_TILE = 4

# Operand access: per result expression ((loop index, coefficient), ...).
Access = Sequence[Sequence[tuple[int, int]]]


def divisor_at_most(n: int, limit: int) -> int:
    """Largest divisor of n that is <= limit (>= 1)."""
    limit = max(1, min(n, limit))
    for d in range(limit, 0, -1):
        if n % d == 0:
            return d
    return 1


def innermost_parallel(kinds: Sequence[str]) -> int | None:
    for i in range(len(kinds) - 1, -1, -1):
        if kinds[i] == "parallel":
            return i
    return None


def lane_tile(bound: int, lanes: int, want: int) -> int:
    """A register tile for the innermost parallel loop: multiple of lanes (or the whole loop)."""
    if bound <= lanes:
        return bound
    want = max(lanes, min(want, bound))
    t = want - want % lanes
    # prefer a multiple of lanes that divides the bound, not above the wanted size
    for cand in range(t, lanes - 1, -lanes):
        if bound % cand == 0:
            return cand
    return t


def legalize(bounds: Sequence[int], kinds: Sequence[str], proposal: dict[str, Sequence[int]],
             lanes: int, register_elems: int) -> dict[str, list[int]]:
    """Turns proposed tiles {register, l1, l2} into legal ones (see module docstring)."""
    n = len(bounds)
    inner = innermost_parallel(kinds)
    l2 = [divisor_at_most(b, int(p)) for b, p in zip(bounds, proposal["l2"])]
    l1 = [divisor_at_most(o, int(p)) for o, p in zip(l2, proposal["l1"])]
    reg = []
    for i in range(n):
        want = int(proposal["register"][i])
        if kinds[i] == "reduction":
            reg.append(divisor_at_most(l1[i], min(want, MAX_REDUCTION_REGISTER_TILE)))
        elif i == inner:
            r = lane_tile(bounds[i], lanes, want)
            reg.append(r)
        else:
            reg.append(divisor_at_most(l1[i], want))
    # register budget: shrink the largest shrinkable register tile until it fits
    while prod(reg) > register_elems:
        cands = [i for i in range(n) if reg[i] > 1 and i != inner]
        if cands:
            i = max(cands, key=lambda j: (reg[j], -j))
            reg[i] = divisor_at_most(reg[i], reg[i] // 2) if reg[i] > 1 else 1
            continue
        if inner is not None and reg[inner] > lanes and bounds[inner] > lanes:
            reg[inner] = lane_tile(bounds[inner], lanes, reg[inner] - lanes)
            continue
        break  # only the lane tile is left: one vector register always fits
    # outer levels must hold the register tile (the lane tile may not divide l1)
    for i in range(n):
        if l1[i] < reg[i]:
            l1[i] = reg[i]
        if l1[i] % reg[i]:
            up = -(-l1[i] // reg[i]) * reg[i]
            l1[i] = up if up <= l2[i] else l1[i]
        if l2[i] < l1[i]:
            l2[i] = l1[i]
        if l2[i] != bounds[i] and l2[i] % l1[i]:
            up = -(-l2[i] // l1[i]) * l1[i]
            l2[i] = min(up, bounds[i])
    return {"register": reg, "l1": l1, "l2": l2}


def footprint(tile: Sequence[int], accesses: Sequence[Access], elem_bytes: int = 4) -> int:
    """Bytes touched by one tile: per operand, product over its indices of the index range."""
    total = 0
    for acc in accesses:
        size = 1
        for expr in acc:
            size *= 1 + sum(abs(c) * (tile[d] - 1) for d, c in expr)
        total += size
    return total * elem_bytes


def grow(bounds: Sequence[int], kinds: Sequence[str], start: Sequence[int],
         accesses: Sequence[Access], budget_bytes: int, outer: Sequence[int] | None = None
         ) -> list[int]:
    """Grows a tile (within `outer`) by exact divisor steps while its footprint fits the budget.

    Parallel loops grow first from the innermost outwards (contiguous, vectorisable), then
    reductions; each step moves a loop to its next divisor of the outer tile.
    """
    outer = list(outer if outer is not None else bounds)
    tile = [max(1, min(s, o)) for s, o in zip(start, outer)]
    order = [i for i in range(len(tile) - 1, -1, -1) if kinds[i] == "parallel"] + \
            [i for i in range(len(tile) - 1, -1, -1) if kinds[i] != "parallel"]
    changed = True
    while changed:
        changed = False
        for i in order:
            nxt = next((d for d in range(tile[i] + 1, outer[i] + 1) if outer[i] % d == 0),
                       None)
            if nxt is None:
                continue
            cand = list(tile)
            cand[i] = nxt
            if footprint(cand, accesses) <= budget_bytes:
                tile = cand
                changed = True
                break
    return tile


def analytical_tiles(bounds: Sequence[int], kinds: Sequence[str], accesses: Sequence[Access],
                     lanes: int, register_elems: int, l1_bytes: int, l2_bytes: int
                     ) -> dict[str, list[int]]:
    """Tiles without ZigZag: register tile = lanes on the innermost parallel loop (x4 unroll
    when possible), small reduction tile; L1 and L2 tiles grown to half the cache each
    (the other half for streaming neighbours), then legalised."""
    n = len(bounds)
    inner = innermost_parallel(kinds)
    reg = [1] * n
    if inner is not None:
        reg[inner] = lane_tile(bounds[inner], lanes, lanes * 4)
    l1 = grow(bounds, kinds, reg, accesses, l1_bytes // 2)
    l2 = grow(bounds, kinds, l1, accesses, l2_bytes // 2)
    return legalize(bounds, kinds, {"register": reg, "l1": l1, "l2": l2}, lanes, register_elems)


def check(bounds: Sequence[int], kinds: Sequence[str], tiles: dict[str, Sequence[int]],
          lanes: int, register_elems: int) -> list[str]:
    """Violations of the legality rules (empty when legal)."""
    errs = []
    inner = innermost_parallel(kinds)
    for i, b in enumerate(bounds):
        r, a, c = tiles["register"][i], tiles["l1"][i], tiles["l2"][i]
        if not (1 <= r <= a <= c <= b):
            errs.append(f"loop {i}: need 1 <= {r} <= {a} <= {c} <= {b}")
        if kinds[i] == "reduction" and r > MAX_REDUCTION_REGISTER_TILE:
            errs.append(f"loop {i}: reduction register tile {r} > {MAX_REDUCTION_REGISTER_TILE}")
    if inner is not None:
        r, b = tiles["register"][inner], bounds[inner]
        if not (r == b if b <= lanes else r % lanes == 0):
            errs.append(f"innermost parallel loop {inner}: register tile {r} vs lanes {lanes}")
        others = prod(t for i, t in enumerate(tiles["register"]) if i != inner)
        if others > 1 and prod(tiles["register"]) > register_elems:
            errs.append(f"register tile {prod(tiles['register'])} elements > {register_elems}")
    return errs


# IREE's LLVMCPU backend rejects vectors above 512 native vectors ("large vector sizes"): an
# op it does not tile to vector size (the accumulator's linalg.fill under a non-dividing cache
# tile, seen on ResNet-18's 512x49x256 matmul with cache tile 512x8 = 16 KiB) is vectorised at
# its cache tile. Keeping the parallel part of the L1 tile at or below 8 KiB avoids that.
MAX_PARALLEL_L1_BYTES = 8192


def cap_parallel_l1(kinds: Sequence[str], legal: dict[str, list[int]], elt_bytes: int = 4,
                    max_bytes: int = MAX_PARALLEL_L1_BYTES) -> dict[str, list[int]]:
    """Halves (by divisors) the largest parallel L1 tiles until their product fits `max_bytes`;
    never below the register tile, and the innermost parallel loop last. Keeps legality:
    a divisor of a tile that divides the L2 tile still divides it."""
    out = {k: list(v) for k, v in legal.items()}
    par = [i for i, k in enumerate(kinds) if k == "parallel"]
    inner = innermost_parallel(kinds)
    while prod(out["l1"][i] for i in par) * elt_bytes > max_bytes:
        cands = [i for i in par if out["l1"][i] > out["register"][i]]
        if not cands:
            break
        non_inner = [i for i in cands if i != inner] or cands
        i = max(non_inner, key=lambda j: (out["l1"][j], -j))
        t = out["l1"][i]
        new = max(d for d in range(1, t // 2 + 1) if t % d == 0 and d % out["register"][i] == 0) \
            if any(t % d == 0 and d % out["register"][i] == 0 for d in range(1, t // 2 + 1)) else t
        if new == t:
            break
        out["l1"][i] = new
    return out
