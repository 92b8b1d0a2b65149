"""Tile legalisation: per loop and memory level (register <= l1 <= l2 <= bound), pure functions.

Rules (proved by tiles_test.py with hypothesis):
- every tile is >= 1 and <= the loop bound; register <= l1 <= l2 per loop;
- tiles are divisors of the next outer tile (or bound) whenever the lane rule allows;
- the innermost parallel loop's register tile is 1 or 2 vectors (lanes or 2 x lanes), or the
  whole loop when the loop is shorter than the lanes (never a multi-KiB "vector");
- the register level holds accumulators AND operands: the parallel register tiles' product
  (one accumulator element each) is at most half the vector register file, the other half
  being for the streamed operand vectors and broadcasts (host: 8 of 16 YMM accumulators, the
  shape of IREE's own 8x8 matmul tile; RVV: 16 of 32);
- reduction register tiles are an unroll factor: their product is 1..lanes;
- hence every vector-level tile product is <= half the register file x lanes elements, far
  below IREE's "large vector sizes" limit;
- distribution (the l2 tile of parallel loops) is a per-workgroup tile: it yields at least
  `WORKGROUPS_PER_CORE` x cores workgroups when the l1 tiles allow (see `distribute`).
`grow_l1`/`analytical_tiles` choose tiles that fill a cache budget, so tiles amortise loop
overhead instead of being tiny (the Quidditch trap).
"""

from __future__ import annotations

from math import prod
from typing import Sequence

# Largest innermost-parallel register tile, in vectors (1-2 accumulator columns).
MAX_INNER_VECTORS = 2
# Workgroups per core the distribution tile aims for (load balance over the cores).
WORKGROUPS_PER_CORE = 4


def accumulator_elems(register_elems: int) -> int:
    """Accumulator elements the register tile may hold: half the register file."""
    return max(1, register_elems // 2)

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


def dividing_multiple(tile: int, step: int, bound: int) -> int:
    """`tile` rounded up to the smallest multiple of `step` that divides the bound, or to the
    whole loop. A vector loop tiled by a non-multiple of its register width leaves a partial
    vector in every tile (ResNet-18's 256x196 matmuls: 16-wide vectors in 49-wide workgroups
    ran 1.8x the model cycles of the same vectors in 196-wide ones on the P670 model); the
    tile must still divide the loop: IREE 3.13 cannot vectorise a matmul workgroup whose last
    tile is partial (64-wide ones on 196 fail with "large vector sizes")."""
    if tile % step == 0 or tile >= bound:
        return tile
    first = -(-tile // step) * step
    return next((t for t in range(first, bound, step) if bound % t == 0), bound)


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
            reg.append(divisor_at_most(l1[i], min(want, lanes)))
        elif i == inner:
            reg.append(lane_tile(bounds[i], lanes, min(want, MAX_INNER_VECTORS * lanes)))
        else:
            reg.append(divisor_at_most(l1[i], want))
    # reduction unroll: the product of the reduction register tiles is at most the lanes
    red = [i for i in range(n) if kinds[i] == "reduction"]
    while prod(reg[i] for i in red) > lanes:
        i = max((j for j in red if reg[j] > 1), key=lambda j: (reg[j], -j))
        reg[i] = divisor_at_most(reg[i], reg[i] // 2)
    # accumulators: shrink the largest non-innermost parallel register tile until they fit
    par = [i for i in range(n) if kinds[i] == "parallel"]
    acc = accumulator_elems(register_elems)
    while prod(reg[i] for i in par) > acc:
        cands = [i for i in par if reg[i] > 1 and i != inner]
        if cands:
            i = max(cands, key=lambda j: (reg[j], -j))
            reg[i] = divisor_at_most(reg[i], reg[i] // 2)
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


def register_proposal(bounds: Sequence[int], kinds: Sequence[str], lanes: int,
                      register_elems: int) -> list[int]:
    """The register tile from a model of the vector register file (not from ZigZag, whose
    register level is per-lane scalars and has no notion of vectors, broadcasts or FMA latency).

    - ops with a reduction (contractions, convs): accumulators fill half the register file as
      `rows x 1 vector`: the innermost parallel loop gets one vector (lanes), the next parallel
      loop with extent > 1 gets accumulator_vectors rows (host 8x8 f32, RVV 16x4: the shape of
      IREE's own matmul tile, and of BLAS micro-kernels); when no such loop exists (matvec),
      two vectors for two independent FMA chains. The innermost reduction loop is unrolled by
      the lanes (one broadcast per row and step).
    - all-parallel ops (elementwise, copies): one vector on the innermost loop, like IREE.
    """
    n = len(bounds)
    reg = [1] * n
    inner = innermost_parallel(kinds)
    reds = [i for i in range(n) if kinds[i] == "reduction"]
    if inner is None:
        if reds:
            reg[reds[-1]] = lanes
        return reg
    reg[inner] = lanes
    if not reds:
        return reg
    reg[reds[-1]] = lanes
    rows_loop = next((i for i in range(inner - 1, -1, -1)
                      if kinds[i] == "parallel" and bounds[i] > 1), None)
    if rows_loop is None:
        reg[inner] = MAX_INNER_VECTORS * lanes
    else:
        reg[rows_loop] = max(1, accumulator_elems(register_elems) // lanes)
    return reg


def workgroups(bounds: Sequence[int], kinds: Sequence[str], l2: Sequence[int]) -> int:
    """Workgroups IREE launches for a distribution tile (parallel loops only)."""
    return prod(-(-b // t) for b, k, t in zip(bounds, kinds, l2) if k == "parallel")


def distribute(bounds: Sequence[int], kinds: Sequence[str], legal: dict[str, list[int]],
               cores: int, per_core: int = WORKGROUPS_PER_CORE) -> dict[str, list[int]]:
    """Makes the l2 tile of parallel loops a per-workgroup tile for `cores` cores.

    IREE turns `distribution` (= the l2 tile of parallel loops) into workgroups, one per core
    at a time: an l2 tile equal to the problem is ONE workgroup on one core. ZigZag models one
    core, so its L2 tile is the per-core working set; here it is split until there are at
    least per_core x cores workgroups (load balance), shrinking the loop with the most l1
    tiles per l2 tile first, by exact multiples of the l1 tile (so l1 still divides l2). When
    l2 == l1 everywhere and that is still too few workgroups, the l1 (and l2) tiles shrink the
    same way down to the register tile. Never shrinks below what the problem allows.
    """
    out = {k: list(v) for k, v in legal.items()}
    want = cores * per_core
    par = [i for i, k in enumerate(kinds) if k == "parallel"]
    for level in ("l2", "l1"):
        while workgroups(bounds, kinds, out["l2"]) < want:
            inner_lv = "l1" if level == "l2" else "register"
            best = None
            for i in par:
                unit = out[inner_lv][i]
                cur = out[level][i]
                steps = -(-cur // unit)
                if steps <= 1:
                    continue
                # next smaller multiple of the inner tile that divides the current tile (or any
                # smaller multiple when none divides)
                cands = [m for m in range(steps - 1, 0, -1) if cur % (m * unit) == 0] or \
                    [steps - 1]
                key = (steps, -i)
                if best is None or key > best[0]:
                    best = (key, i, cands[0] * unit)
            if best is None:
                break
            _, i, new = best
            out[level][i] = new
            if level == "l1":
                out["l2"][i] = new
    return out


def analytical_tiles(bounds: Sequence[int], kinds: Sequence[str], accesses: Sequence[Access],
                     lanes: int, register_elems: int, l1_bytes: int, l2_bytes: int
                     ) -> dict[str, list[int]]:
    """Tiles without ZigZag: the register tile of `register_proposal`; L1 and L2 tiles grown
    to half the cache each (the other half for streaming neighbours), then legalised."""
    reg = register_proposal(bounds, kinds, lanes, register_elems)
    l1 = grow(bounds, kinds, reg, accesses, l1_bytes // 2)
    l2 = grow(bounds, kinds, l1, accesses, l2_bytes // 2)
    return legalize(bounds, kinds, {"register": reg, "l1": l1, "l2": l2}, lanes, register_elems)


def check(bounds: Sequence[int], kinds: Sequence[str], tiles: dict[str, Sequence[int]],
          lanes: int, register_elems: int) -> list[str]:
    """Violations of the legality rules (empty when legal)."""
    errs = []
    inner = innermost_parallel(kinds)
    reg = tiles["register"]
    for i, b in enumerate(bounds):
        r, a, c = reg[i], tiles["l1"][i], tiles["l2"][i]
        if not (1 <= r <= a <= c <= b):
            errs.append(f"loop {i}: need 1 <= {r} <= {a} <= {c} <= {b}")
    red = prod(r for r, k in zip(reg, kinds) if k == "reduction")
    if red > lanes:
        errs.append(f"reduction register tiles' product {red} > {lanes} lanes")
    if inner is not None:
        r, b = reg[inner], bounds[inner]
        if not (r == b if b <= lanes else r % lanes == 0 and r <= MAX_INNER_VECTORS * lanes):
            errs.append(f"innermost parallel loop {inner}: register tile {r} vs lanes {lanes}")
        acc = prod(r for r, k in zip(reg, kinds) if k == "parallel")
        if acc > accumulator_elems(register_elems):
            errs.append(f"accumulators {acc} elements > half the register file "
                        f"({accumulator_elems(register_elems)})")
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


# The reduction block an L1 tile aims for before its parallel tiles may stay large: on ResNet-18's
# im2col GEMMs (RVV, 32 KiB L1) blocks of 32 to 128 were within 3% of each other and cut DRAM
# traffic 2-6x against the unblocked reduction; below 32 the loop overhead shows.
REDUCTION_BLOCK = 64


def block_reduction(bounds: Sequence[int], kinds: Sequence[str], tiles: dict[str, Sequence[int]],
                    accesses: Sequence[Access], l1_bytes: int, elem_bytes: int = 4,
                    max_parallel_bytes: int = MAX_PARALLEL_L1_BYTES) -> dict[str, list[int]] | None:
    """`tiles` with the reduction blocked at L1 (BLIS's kc): the parallel L1 tiles whole
    multiples of the register tile, halved (largest first, in register tiles) until the L1
    tile's footprint with a reduction block of REDUCTION_BLOCK fits L1 and the parallel part
    fits `max_parallel_bytes`; then the reduction block doubled while it fits. IREE otherwise
    runs a contraction's whole reduction for every register tile, so each register tile streams
    its operands' full rows and columns from L2 or DRAM. None when nothing changes (no
    reduction longer than the block) or an operand is not indexed by plain loops (a window)."""
    red = [i for i, k in enumerate(kinds) if k == "reduction"]
    par = [i for i, k in enumerate(kinds) if k == "parallel"]
    if not red or any(len(e) != 1 or e[0][1] != 1 for acc in accesses for e in acc):
        return None
    reg, l2 = list(tiles["register"]), list(tiles["l2"])
    l1 = [max(reg[i], tiles["l1"][i] // reg[i] * reg[i]) if i in par else tiles["l1"][i]
          for i in range(len(bounds))]

    def with_block(block: int) -> list[int]:
        t = list(l1)
        for i in red:
            t[i] = max(reg[i], min(tiles["l1"][i], block // reg[i] * reg[i]))
        return t

    def fits(t: list[int]) -> bool:
        return (footprint(t, accesses, elem_bytes) <= l1_bytes
                and prod(t[i] for i in par) * elem_bytes <= max_parallel_bytes)

    while not fits(with_block(REDUCTION_BLOCK)):
        shrinkable = [i for i in par if l1[i] > reg[i]]
        if not shrinkable:
            return None
        i = max(shrinkable, key=lambda j: (l1[j], -j))
        l1[i] = max(1, l1[i] // reg[i] // 2) * reg[i]
    block = REDUCTION_BLOCK
    while block * 2 <= max(tiles["l1"][i] for i in red) and fits(with_block(block * 2)):
        block *= 2
    out = with_block(block)
    if all(out[i] >= tiles["l1"][i] for i in red):
        return None  # the reduction is no longer than the block: nothing to block
    return {"register": reg, "l1": out, "l2": [max(a, b) for a, b in zip(l2, out)]}
