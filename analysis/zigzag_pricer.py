"""ZigZag's cost model on given tiles of a dispatch read back from an analysis JSON.

`nest_from_json` rebuilds the root op's loop nest (analysis.dispatches.LoopNest) from a Dispatch's
JSON; `Pricer` runs analysis.zigzag_cost.evaluate_tiles on it, cached in memory by (signature,
mode, tiles, order, spatial); `latency_on_measured_terms` prices a result's traffic as
perf.memory_model prices a measurement (a project-side extension of ZigZag's latency, issue 77);
`vector_core_l1_bytes` is what the vector core loads from and stores to L1 running given tiles,
which `on_vector_core` puts in place of ZigZag's L1 traffic.
bench.zigzag_ranking, bench.zigzag_traffic, results.shipped_prediction and perf.explore use them.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from analysis import zigzag_cost
from analysis.cost_model import element_bytes
from analysis.dispatches import LoopNest
from common import hardware as hwmod


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + ([cur] if cur.strip() else [])


def _expr_terms(expr: str) -> tuple[tuple[int, int], ...]:
    """'((d2 * 2) + d4)' -> ((2, 2), (4, 1)); constants dropped (as analysis.dispatches._terms)."""
    terms = []
    for term in expr.replace("(", " ").replace(")", " ").split("+"):
        parts = [p.strip() for p in term.split("*") if p.strip()]
        dims = [p for p in parts if p.startswith("d")]
        if not dims:
            continue
        if len(dims) != 1:
            raise ValueError(f"product of loop indices in {expr!r}")
        coef = 1
        for p in parts:
            if not p.startswith("d"):
                coef *= int(p)
        terms.append((int(dims[0][1:]), coef))
    return tuple(sorted(terms))


def nest_from_json(disp: dict) -> LoopNest:
    """The root op's loop nest as analysis.dispatches builds it, from a Dispatch's JSON."""
    loops = tuple((lp["name"], lp["bound"], lp["kind"]) for lp in disp["loops"])
    operands, terms = [], []
    for o in disp["operands"]:
        operands.append((o["role"], o["indexing_map"], o["element_type"], tuple(o["shape"])))
        results = o["indexing_map"].split("->", 1)[1].strip()
        if not (results.startswith("(") and results.endswith(")")):
            raise ValueError(f"indexing map {o['indexing_map']!r}")
        terms.append(tuple(_expr_terms(e) for e in _split_top(results[1:-1])))
    return LoopNest(loops, tuple(operands), (), tuple(terms))


def _tiles_key(tiles: dict) -> tuple:
    return tuple(tuple(tiles[r]) for r in zigzag_cost.TILE_ROLES)


class Pricer:
    """evaluate_tiles with an in-memory cache by (signature, mode, tiles, order, spatial)."""

    def __init__(self, acc: Path, mapping: Path, dump_root: Path, hw: "hwmod.Hardware"):
        self.acc, self.mapping, self.dump_root, self.hw = acc, mapping, dump_root, hw
        self.cache: dict[tuple, dict | str] = {}
        self.evaluations = 0
        self.seconds = 0.0

    def price(self, sig: str, layer: dict, nloops: int, kinds: list[str], tiles: dict, mode: str,
              order: list[int] | None = None, spatial: dict[int, int] | None = None) -> dict | str:
        order = list(range(nloops)) if order is None else order
        key = (sig, mode, _tiles_key(tiles), tuple(order),
               tuple(sorted(spatial.items())) if spatial is not None else None)
        if key not in self.cache:
            t = time.monotonic()
            try:
                self.cache[key] = zigzag_cost.evaluate_tiles(
                    layer, self.acc, self.mapping, tiles, order, nloops, kinds=kinds,
                    spatial=spatial, mode=mode, dump_root=self.dump_root)
            except zigzag_cost.ZigZagFailed as err:
                self.cache[key] = f"ZigZag failed: {err}"
            except ValueError as err:  # tiles the translation refuses (analysis.zigzag_cost.tile_loops)
                self.cache[key] = f"tiles refused: {err}"
            self.evaluations += 1
            self.seconds += time.monotonic() - t
        return self.cache[key]


def latency_on_measured_terms(result: dict, hw: "hwmod.Hardware", macs: int) -> float:
    """ZigZag's traffic priced as perf.memory_model prices a measurement's: the larger of the core's
    cycles plus the miss stalls and the busiest level's bytes over its bandwidth. The core's cycles
    are the MACs at the FMA peak (ZigZag knows no instructions beside its MACs); the misses of a
    cache are the bytes the level below serves it, in lines; each stalls the level below's latency
    over the cache's outstanding misses. ZigZag's own `latency_cycles` is its cost model's (its
    data loading, stall and offloading terms); this is the same traffic on the measurement's terms."""
    flows = result["traffic_served_taken_bytes"]
    served = [*hw.caches, hw.level("dram")]
    transfer = []
    for level in served:
        read, written = flows.get(level.name, [0, 0])
        transfer.append(read / level.read_bytes_per_cycle + written / level.write_bytes_per_cycle)
    stall = 0.0
    for cache, below in zip(served, served[1:]):
        misses = flows.get(below.name, [0, 0])[0] / cache.line_bytes
        stall += misses * below.latency_cycles / cache.outstanding_misses
    return max(macs / hw.macs_per_cycle + stall, max(transfer))


def vector_core_l1_bytes(nest: LoopNest, tiles: dict[str, list[int]]) -> tuple[int, int]:
    """Bytes the vector core loads from L1 and stores to it running `tiles` as IREE's CPU codegen
    lowers them (codegen.configs.map_levels): the register tile is one step of the innermost loops
    (`vector_common_parallel` x `vector_reduction`); each step loads every input's register tile;
    the output's register tile stays in vector registers, as accumulators, across the reduction
    steps of one L1 tile (`cache_reduction`), and is loaded (a reduction) and stored once per L1
    tile of the reduction loops. A loop whose tile does not divide it runs a smaller last tile,
    counted as a whole one (IREE peels or masks it).

    ZigZag's own register level is per-lane scalar registers, a third of the register file per
    operand: on the zoo's tuned builds an 8x8 output tile does not fit it, so ZigZag reads and
    writes every partial sum through L1, 2-4x the L1 traffic the measurement has (keras_mobilenet's
    contractions: docs/design.md), and that L1 term then hides the L2 and DRAM terms that move
    with the caches' sizes. Not counted: spills when the tiles exceed the 32 vector registers,
    scalar loads (addresses, the workgroup loop), im2col's or a pack's copies (other dispatches)."""
    bounds = [b for _, b, _ in nest.loops]
    reductions = [k == "reduction" for _, _, k in nest.loops]
    if any(len(tiles.get(role, ())) != len(bounds) for role in ("register", "l1")):
        raise ValueError(f"tiles {tiles} do not have one size per loop ({len(bounds)} loops)")
    reg = [min(max(1, t), b) for t, b in zip(tiles["register"], bounds)]
    l1 = [min(max(1, t), b) for t, b in zip(tiles["l1"], bounds)]
    steps = math.prod(math.ceil(b / r) for b, r in zip(bounds, reg))
    # Per output register tile: one load and store per L1 tile of the reduction loops.
    out_tiles = math.prod(math.ceil(b / (l if red else r))
                          for b, r, l, red in zip(bounds, reg, l1, reductions))

    def footprint(i: int) -> int:  # elements of operand i one register tile touches
        n = 1
        for expr in nest.terms[i]:
            if len(expr) == 1:  # a strided dimension loads one element per index
                n *= reg[expr[0][0]]
            elif expr:  # a window (`oh * s + kh`): the span it covers, at most one per index pair
                n *= min(sum(c * (reg[d] - 1) for d, c in expr) + 1, math.prod(reg[d] for d, _ in expr))
        return n * element_bytes(nest.operands[i][2])

    read = written = 0
    for i, (role, _, _, _) in enumerate(nest.operands):
        if role == "output":
            written += footprint(i) * out_tiles
            if any(reductions):
                read += footprint(i) * out_tiles
        else:
            read += footprint(i) * steps
    return read, written


def on_vector_core(result: dict, hw: "hwmod.Hardware", macs: int, l1_bytes: tuple[int, int]) -> dict:
    """ZigZag's result with the L1's traffic (bytes it serves the core, bytes it takes from it)
    replaced by the vector core's (`vector_core_l1_bytes`), and its `latency_cycles` by
    latency_on_measured_terms on that traffic, so that the energy priced from it
    (analysis.zigzag_cost.energy_on_measured_terms: instructions from the L1's traffic, static
    energy over the cycles) counts what the measurement counts. The caches' and DRAM's traffic
    stay ZigZag's: its allocator cuts the loops on their capacities."""
    flows = dict(result["traffic_served_taken_bytes"])
    flows[hw.level("l1").name] = [int(l1_bytes[0]), int(l1_bytes[1])]
    out = {**result, "traffic_served_taken_bytes": flows}
    out["latency_cycles"] = latency_on_measured_terms(out, hw, macs)
    return out
