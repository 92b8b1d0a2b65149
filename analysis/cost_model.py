"""One cost model for every candidate: features of the tiles as compiled, times calibrated weights.

A candidate is a complete tile set {register, l1, l2} for a root op's loops (l2 of the
parallel loops is IREE's `distribution`, i.e. one workgroup). Its features are counts the
tiles imply on the busiest core, derived from the loop nest and the hardware description
only (nothing per model or per shape):

  vector_ops       vector arithmetic instructions (per register tile: one per accumulator
                   row and vector of the innermost parallel tile; partial vectors and loop
                   padding count whole), divided by the FMA pipes
  fma_stall        cycles each register step waits on its accumulators: a step's FMAs into
                   one accumulator form a chain of (reduction register tiles) dependent FMAs,
                   each fma_latency_cycles long; the step takes the longer of that chain and
                   its FMAs over the pipes (vector_ops). 0 for ops without a reduction
  math_steps       register steps x transcendental ops (math.exp, ...) in the body: each
                   expands to a dependent polynomial whose latency a step cannot hide
  vector_loads     register-level loads of operands contiguous in the vector loop
  scalar_loads     register-level loads of operands the vector loop does not index (each
                   element is loaded once and broadcast)
  gathered_loads   operands the vector loop indexes at a stride other than 1 (a transposed
                   B, channels of an NCHW conv): each element is loaded alone and inserted
                   into its register group, so one element costs in proportion to the
                   registers the group spans (count: elements x registers of the group)
  accumulator_ops  output vectors loaded and stored once per L1 reduction tile (every step
                   for ops without a reduction)
  l2_stream        register-level load bytes / L2 bandwidth when the L1 tile does not fit L1
  l1_fill          bytes brought into L1 per L1 tile / L2 bandwidth
  dram_fill        bytes a workgroup brings from DRAM (its footprint, or every L1 fill when
                   the workgroup does not fit L2) / DRAM bandwidth
  workgroups       workgroups on the busiest core (dispatch overhead)
  l1_tiles         L1 tiles on the busiest core (cache-loop overhead)
  register_steps   register tiles on the busiest core (inner-loop overhead)
  ragged_points    iteration points outside full register tiles (a tile that does not divide
                   its enclosing tile leaves a remainder IREE runs masked or scalar)
  spilled_vectors  vector registers over the register file per step (accumulators plus the
                   operand vectors of one step), stored and reloaded every step

predicted cycles = sum(coefficient[f] * feature[f]). The coefficients come from a
calibration file (common/calibration_schema.py) fitted against measurements; without one
every coefficient is 1 ("uncalibrated").
"""

from __future__ import annotations

from math import ceil, prod
from typing import Mapping, Sequence

from analysis.dispatches import LoopNest
from common.hardware import Hardware
from analysis.tiles import footprint, innermost_parallel

FEATURES = ("vector_ops", "fma_stall", "math_steps", "vector_loads", "scalar_loads", "gathered_loads", "accumulator_ops", "l2_stream",
            "l1_fill", "dram_fill", "workgroups", "l1_tiles", "register_steps", "ragged_points",
            "spilled_vectors")

UNCALIBRATED = {f: 1.0 for f in FEATURES}


def element_bytes(elt: str) -> int:
    digits = "".join(ch for ch in elt if ch.isdigit())
    return max(1, int(digits) // 8) if digits else 4


def _contiguous_in(nest: LoopNest, operand: int, inner: int | None) -> bool:
    """The vector loop steps the operand's last index by 1 (a unit-stride vector load; other
    loops in that index, like a conv's window offset, only move its start)."""
    terms = nest.terms[operand]
    return inner is not None and bool(terms) and (inner, 1) in terms[-1]


def _operand_elems(nest: LoopNest, operand: int, tile: Sequence[int]) -> int:
    return footprint(tile, [nest.terms[operand]], elem_bytes=1)


def _full_tile_cover(extent: int, tiles: Sequence[int]) -> int:
    """Points of a loop of `extent` inside full innermost tiles, tiling by `tiles` (outer first)."""
    if not tiles or extent == 0:
        return extent
    t, inner = tiles[0], tiles[1:]
    if t >= extent:
        # an outer tile clamps to what is left; a register tile larger than it is masked
        return 0 if not inner and t > extent else _full_tile_cover(extent, inner)
    return (extent // t) * _full_tile_cover(t, inner) + \
        (_full_tile_cover(extent % t, [t] + list(inner)) if not inner else
         _full_tile_cover(extent % t, inner))


def _ragged_fraction(bounds: Sequence[int], *levels: Sequence[int]) -> float:
    covered = prod(_full_tile_cover(b, [lv[i] for lv in levels]) / b for i, b in enumerate(bounds))
    return 1.0 - covered


def features(nest: LoopNest, tiles: Mapping[str, Sequence[int]], hw: Hardware) -> dict[str, float]:
    """The cost model's features for `tiles` (see the module docstring)."""
    bounds = [b for _, b, _ in nest.loops]
    kinds = [k for _, _, k in nest.loops]
    reg, l1, l2 = (list(tiles[r]) for r in ("register", "l1", "l2"))
    ins = [i for i, o in enumerate(nest.operands) if o[0] == "input"]
    outs = [i for i, o in enumerate(nest.operands) if o[0] == "output"]
    out_bytes = element_bytes(nest.operands[outs[0]][2]) if outs else 4
    lanes = max(1, hw.compute.vector_bits // (8 * out_bytes))
    inner = innermost_parallel(kinds)
    par = [i for i, k in enumerate(kinds) if k == "parallel"]
    red = [i for i, k in enumerate(kinds) if k == "reduction"]

    def vectors(extent: int) -> int:
        return ceil(extent / lanes)

    steps = prod(ceil(b / r) for b, r in zip(bounds, reg))
    inner_reg = reg[inner] if inner is not None else 1
    rows = prod(r for i, r in enumerate(reg) if i != inner)
    step_ops = rows * vectors(inner_reg) / hw.compute.fma_pipes
    vector_ops = steps * step_ops
    chain = prod(reg[i] for i in red) * hw.compute.fma_latency_cycles if red else 0
    fma_stall = steps * max(0.0, chain - step_ops)

    vector_loads = scalar_loads = gathered_loads = 0.0
    load_bytes = 0.0
    for op in ins:
        elems = _operand_elems(nest, op, reg)
        eb = element_bytes(nest.operands[op][2])
        if _contiguous_in(nest, op, inner):
            vector_loads += steps * (elems / inner_reg) * vectors(inner_reg)
        elif inner in nest.operand_dims(op):
            gathered_loads += steps * elems * vectors(elems)
        else:
            scalar_loads += steps * elems
        load_bytes += steps * elems * eb
    acc_vectors = 0.0
    for op in outs:
        elems = _operand_elems(nest, op, reg)
        per_tile = (elems / inner_reg) * vectors(inner_reg) if _contiguous_in(nest, op, inner) \
            else elems
        if red:
            visits = prod(ceil(bounds[i] / reg[i]) for i in par) * \
                prod(ceil(bounds[i] / l1[i]) for i in red)
        else:
            visits = steps
        acc_vectors += 2 * visits * per_tile if red else visits * per_tile

    def tile_bytes(tile: Sequence[int]) -> float:
        return sum(_operand_elems(nest, op, tile) * element_bytes(nest.operands[op][2])
                   for op in ins + outs)

    l1_level, l2_level, dram = hw.level("l1"), hw.level("l2"), hw.level("dram")
    n_l1 = prod(ceil(b / t) for b, t in zip(bounds, l1))
    l1_bytes = n_l1 * tile_bytes(l1)
    l2_stream = load_bytes if tile_bytes(l1) > l1_level.size_bytes else 0.0
    group_tile = [t if k == "parallel" else b for t, b, k in zip(l2, bounds, kinds)]
    groups = prod(ceil(bounds[i] / l2[i]) for i in par)
    group_bytes = tile_bytes(group_tile)
    dram_bytes = groups * group_bytes if group_bytes <= l2_level.size_bytes else l1_bytes
    busiest = ceil(groups / hw.cores)
    share = busiest / groups
    ragged = prod(bounds) * _ragged_fraction(bounds, group_tile, l1, reg)
    out_live = 0.0
    for op in outs:
        elems = _operand_elems(nest, op, reg)
        out_live += (elems / inner_reg) * vectors(inner_reg) if _contiguous_in(nest, op, inner) \
            else elems / lanes
    live = out_live + vector_loads / max(1, steps)
    spilled = steps * max(0.0, live - hw.compute.vector_registers)

    def num(x: float) -> float:
        return float(f"{x:.6g}")

    return {
        "vector_ops": num(vector_ops * share),
        "fma_stall": num(fma_stall * share),
        "math_steps": num(steps * sum(op.startswith("math.") for op in nest.body_ops) * share),
        "vector_loads": num(vector_loads * share),
        "scalar_loads": num(scalar_loads * share),
        "gathered_loads": num(gathered_loads * share),
        "accumulator_ops": num(acc_vectors * share),
        "l2_stream": num(l2_stream * share / l2_level.read_bytes_per_cycle),
        "l1_fill": num(l1_bytes * share / l2_level.read_bytes_per_cycle),
        "dram_fill": num(dram_bytes * share / dram.read_bytes_per_cycle),
        "workgroups": float(busiest),
        "l1_tiles": num(n_l1 * share),
        "register_steps": num(steps * share),
        "ragged_points": num(ragged * share),
        "spilled_vectors": num(spilled * share),
    }


def predict(feats: Mapping[str, float], coefficients: Mapping[str, float]) -> float:
    return float(f"{sum(coefficients[f] * feats[f] for f in FEATURES):.9g}")


def replaces_default(candidate_cycles: float, default_cycles: float, margin: float) -> bool:
    """The choice rule: a candidate replaces IREE's default only when predicted at least
    `margin` (a fraction) cheaper."""
    return candidate_cycles <= default_cycles * (1 - margin)
