"""Root-op loop nests as ZigZag layers, ZigZag runs, and what comes back (mapping, tiles, cost).

Loop i of the root op becomes ZigZag dim `L{i}` (not D{i}: those collide with the array's
dimension names). An operand index `a*di + b*dj` becomes a derived dim `P{k}` with a
`dimension_relations` entry. Operand 0 is ZigZag's I, operand 1 its W, the output O.
No spatial_mapping is given: ZigZag generates one per layer.
"""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.dispatches import LoopNest
from common.op_kinds import ZIGZAG_LAYERS
from common.errors import first_line

if TYPE_CHECKING:
    from common.hardware import Hardware

ZIGZAG_KINDS = ZIGZAG_LAYERS  # op kind -> ZigZag operator type (common/op_kinds.py)
# LOMA's limit on loop prime factors (analysis.analyze --zigzag-lpf-limit) and which factors
# it merges to get down to it (--zigzag-lpf-merge): ZigZag merges the two SMALLEST of the
# dimension with the most factors (2x2 -> 4 first), which leaves the coarse factors (7, 49,
# ...) as untileable loops and, on ResNet-18's 64x3136x576 matmul at lpf 5, a mapping with
# MAC utilisation 0.33 (0.996 at lpf 6, but 37 s per op). Merging the two LARGEST keeps the
# small factors that tile finely: 0.80 at the lpf-5 cost. "smallest" restores ZigZag's own.
LPF_MERGE_MODES = ("largest", "smallest")

# sha256 of the source of the zigzag-dse methods the "largest" merge relies on, as written
# against zigzag-dse 3.9.1: the method it replaces and the one method that calls it. If an
# upgrade changes either, the patch refuses to apply (and zigzag_cost_test goes red) instead
# of silently patching code it was not written for.
PATCHED_SOURCES_SHA256 = {
    "find_smallest_non_static_pf": "80d2f32d0c1955613311305001276471d75fa355aa9f428a57276a00327abf2e",
    "limit_lpfs": "57dca42a02d9e35eb46c946be4b03554a5fec3b6bd95de903ee30cd459e3c0fc",
}


# What `run` returns for a given layer, accelerator, mapping and LOMA settings: bump it when that
# changes (extract, the patch, the dump reading), and every recorded ZigZag result
# (analysis/zigzag_results/) becomes stale and runs again. A refactor that keeps the results keeps it.
# 2: traffic_served_taken_bytes (each level's reads and writes apart, for energy_on_measured_terms).
RESULT_VERSION = 2

# LOMA's lpf_limit merges prime factors only within a loop, so every loop larger than 1 keeps one
# and the temporal orderings ZigZag evaluates are at least n!: 7! (a grouped 2-D conv, the most
# of any zoo op) takes seconds, 8! (a 3-D conv) took over 16 minutes of one analysis.
MAX_SEARCHED_LOOPS = 7


class NotExpressible(Exception):
    """The loop nest cannot be written as a ZigZag layer; the message says why."""


class ZigZagFailed(Exception):
    """ZigZag raised on a layer it was given; the message is free of temporary paths."""


def _bits(elt: str) -> int:
    digits = "".join(ch for ch in elt if ch.isdigit())
    if not digits:
        raise NotExpressible(f"element type {elt} has no bit width")
    return int(digits)


def to_layer(kind: str, nest: LoopNest, layer_id: int = 0,
             max_searched_loops: int | None = MAX_SEARCHED_LOOPS) -> dict:
    """The ZigZag workload entry for a root op (raises NotExpressible). `max_searched_loops`
    None lifts the loop-count limit, which only LOMA's search needs (evaluate_tiles does not
    search)."""
    if kind not in ZIGZAG_KINDS:
        raise NotExpressible(f"{kind} has no ZigZag operator (unary/reduction/data movement)")
    ins = [i for i, o in enumerate(nest.operands) if o[0] == "input"]
    outs = [i for i, o in enumerate(nest.operands) if o[0] == "output"]
    if len(ins) != 2 or len(outs) != 1:
        raise NotExpressible(f"{len(ins)} inputs and {len(outs)} outputs; ZigZag needs 2 and 1")
    if any(b < 1 for _, b, _ in nest.loops):
        raise NotExpressible("dynamic or empty loop bound")
    searched = sum(b > 1 for _, b, _ in nest.loops)
    if max_searched_loops is not None and searched > max_searched_loops:
        raise NotExpressible(f"{searched} loops larger than 1: ZigZag's loop-order search grows as their "
                             f"factorial (at most {max_searched_loops})")
    relations, pr_dims, pr_sizes = [], [], []

    def index(op: int, r: int) -> str:
        expr = nest.terms[op][r]
        if len(expr) == 1 and expr[0][1] == 1:
            return f"l{expr[0][0]}"
        if len(expr) == 2 and all(c > 0 for _, c in expr):
            name = f"p{len(relations)}"
            (d1, c1), (d2, c2) = expr
            relations.append(f"{name}={c1}*l{d1}+{c2}*l{d2}")
            pr_dims.append(name.upper())
            pr_sizes.append(nest.operands[op][3][r])
            return name
        raise NotExpressible(f"operand {op} index {r} is {expr or 'a constant'}")

    def access(op: int, letter: str) -> str:
        idx = [index(op, r) for r in range(len(nest.terms[op]))]
        return letter + ("".join(f"[{i}]" for i in idx) if idx else "[]")

    if not nest.terms[outs[0]]:
        # ZigZag's workload grammar needs an output index: O[..] += I[..] * W[..].
        raise NotExpressible("0-d output (a dot product)")
    o = access(outs[0], "O")
    if any(len(e) != 1 or e[0][1] != 1 for e in nest.terms[outs[0]]):
        raise NotExpressible("output is not indexed by plain loops")
    i, w = access(ins[0], "I"), access(ins[1], "W")
    sep = "+" if kind == "elementwise" else "*"
    eq_op = "=" if kind == "elementwise" else "+="
    reduction = [n for n, _, k in nest.loops if k == "reduction"]
    if kind == "elementwise" and reduction:
        raise NotExpressible("elementwise with reduction loops")
    prec_in = _bits(nest.operands[ins[0]][2])
    layer = {
        "id": layer_id,
        "name": f"op{layer_id}",
        "operator_type": ZIGZAG_KINDS[kind],
        "equation": f"{o}{eq_op}{i}{sep}{w}",
        "loop_dims": [f"L{k}" for k in range(len(nest.loops))],
        "loop_sizes": [b for _, b, _ in nest.loops],
        "operand_precision": {"I": prec_in, "W": _bits(nest.operands[ins[1]][2]),
                              "O": _bits(nest.operands[outs[0]][2]),
                              "O_final": _bits(nest.operands[outs[0]][2])},
    }
    if relations:
        layer["dimension_relations"] = relations
        layer["pr_loop_dims"] = pr_dims
        layer["pr_loop_sizes"] = pr_sizes
        layer["padding"] = [[0, 0] for _ in pr_dims]
    return layer


def _num(x) -> float:
    return float(f"{float(x):.9g}")


def run(layer: dict, accelerator: Path, mapping: Path, nloops: int, lpf_limit: int = 5,
        lpf_merge: str = "largest", dump_root: Path | None = None) -> dict:
    """Runs ZigZag on one layer; returns a JSON-able result (deterministic, no paths).
    ZigZag's dump directory is made under `dump_root` (default: the temporary directory).

    Raises ZigZagFailed when ZigZag raises; its message names no temporary path."""
    logging.getLogger("zigzag").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    from zigzag.api import get_hardware_performance_zigzag

    _set_lpf_merge(lpf_merge)

    dump = Path(tempfile.mkdtemp(prefix="zz_", dir=dump_root))
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            energy, latency, cmes = get_hardware_performance_zigzag(
                [layer], str(accelerator), str(mapping), opt="latency",
                dump_folder=str(dump / "out"), loma_show_progress_bar=False, lpf_limit=lpf_limit)
    except Exception as err:  # noqa: BLE001 - ZigZag raises anything; keep its words, not its paths
        text = first_line(err)
        for path, name in ((dump, "<zigzag dump>"), (accelerator.parent, "<zigzag inputs>")):
            text = text.replace(str(path), name)
        raise ZigZagFailed(f"{type(err).__name__}: {text}") from None
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    cme = cmes[0][1][0][0]
    return extract(cme, nloops, energy, latency)


_ORIGINAL_MERGE = None


def _set_lpf_merge(mode: str) -> None:
    """Selects which two prime factors LOMA's limit_lpfs merges (see LPF_MERGE). LOMA asks
    `find_smallest_non_static_pf(dim)` for the index pair to merge; with no static-size
    constraints (this stage gives none) the largest pair is the last factor twice when it
    occurs more than once, else the last two."""
    global _ORIGINAL_MERGE
    from zigzag.opt.loma.engine import LomaEngine

    if _ORIGINAL_MERGE is None:
        _ORIGINAL_MERGE = LomaEngine.find_smallest_non_static_pf
    original = _ORIGINAL_MERGE
    if mode == "smallest":
        LomaEngine.find_smallest_non_static_pf = original
        return
    if mode != "largest":
        raise ValueError(f"lpf merge mode {mode}: expected one of {', '.join(LPF_MERGE_MODES)}")
    changed = [name for name, sha in patched_sources_sha256().items()
               if sha != PATCHED_SOURCES_SHA256[name]]
    if changed:
        raise ZigZagFailed(f"zigzag-dse changed LomaEngine.{', '.join(changed)}: the 'largest' lpf "
                           "merge patch was written for 3.9.1; re-check it (analysis/zigzag_cost.py) "
                           "or pass --zigzag-lpf-merge smallest")

    def largest_pair(self, layer_dim):
        counts = self.temporal_loop_pf_counts[layer_dim]
        last = len(counts) - 1
        if self.has_constraints or sum(counts) < 2:
            return original(self, layer_dim)
        return (last, last) if counts[last] > 1 else (last - 1, last)

    LomaEngine.find_smallest_non_static_pf = largest_pair


def patched_sources_sha256() -> dict[str, str]:
    """sha256 of the installed zigzag-dse's unpatched methods named in PATCHED_SOURCES_SHA256."""
    import hashlib
    import inspect

    from zigzag.opt.loma.engine import LomaEngine

    methods = {"find_smallest_non_static_pf": _ORIGINAL_MERGE or LomaEngine.find_smallest_non_static_pf,
               "limit_lpfs": LomaEngine.limit_lpfs}
    return {name: hashlib.sha256(inspect.getsource(f).encode()).hexdigest()
            for name, f in methods.items()}


def _dim_index(dim) -> int | None:
    name = str(dim)
    return int(name[1:]) if name.startswith("L") and name[1:].isdigit() else None


def traffic_by_operand(cme) -> dict[str, dict[str, list[int]]]:
    """ZigZag operand letter (I, W, O) -> memory level (by name) -> [bytes the level serves to
    the level below it (toward the MACs), bytes it takes from there], as ZigZag predicts them."""
    from zigzag.hardware.architecture.memory_port import DataDirection
    from zigzag.mapping.data_movement import DataMoveAttr

    out: dict[str, dict[str, list[int]]] = {}
    for op, patterns in cme.mapping.unit_mem_data_movement.items():
        names = [m.name for m in cme.mem_hierarchy_dict[cme.layer.memory_operand_links[op]]]
        levels = out.setdefault(str(op), {})
        for lv, pattern in enumerate(patterns):
            counts = pattern.get_attribute(DataMoveAttr.DATA_ELEM_MOVE_COUNT)
            precision = pattern.get_attribute(DataMoveAttr.DATA_PRECISION)
            moved = [int(counts.get(d) * precision.get(d)) // 8
                     for d in (DataDirection.RD_OUT_TO_LOW, DataDirection.WR_IN_BY_LOW)]
            levels[names[lv]] = [a + b for a, b in zip(levels.get(names[lv], [0, 0]), moved)]
    return out


def _served_taken_bytes(cme) -> dict[str, list[int]]:
    """Level (by name) -> [bytes it serves to the level below, bytes it takes from there], summed
    over the operands it holds: its reads and its writes, which the description prices apart."""
    out: dict[str, list[int]] = {}
    for levels in traffic_by_operand(cme).values():
        for name, moved in levels.items():
            out[name] = [a + b for a, b in zip(out.get(name, [0, 0]), moved)]
    return dict(sorted(out.items()))


def energy_on_measured_terms(result: dict, hw: "Hardware", macs: int) -> float | None:
    """ZigZag's prediction priced with the terms perf/memory_model.py prices a measurement with
    (issue 77: the two must count the same things): MACs x mac_energy_pj, instructions x
    instruction_energy_pj, predicted cycles x static_energy_pj_per_cycle, and each cache and DRAM
    level's bytes served (read) and taken (written) in accesses of its access_bits at its read
    and write energy. The instructions are the vector core's for the mapping: one vector FMA per
    f32 lanes' MACs and one vector load or store per VLEN bits the L1 serves or takes (loop
    control and scalar code left out: a lower bound). ZigZag's own energy_pj charges its per-lane
    register levels instead, a term the measurement does not have, and no instruction or static
    energy. None for a result recorded before the reads and writes were kept apart."""
    flows = result.get("traffic_served_taken_bytes")
    if flows is None:
        return None
    by_name = {m.name: m for m in hw.memory}
    vlen_bytes = hw.compute.vector_bits // 8
    l1 = flows.get(hw.level("l1").name, [0, 0])
    instructions = macs / hw.lanes_f32 + (l1[0] + l1[1]) / vlen_bytes
    energy = (macs * hw.compute.mac_energy_pj + instructions * hw.compute.instruction_energy_pj
              + result["latency_cycles"] * hw.compute.static_energy_pj_per_cycle)
    for name, (served, taken) in flows.items():
        level = by_name.get(name)
        if level is None or level.role == "register":  # ZigZag's per-lane register levels
            continue
        per_access = level.access_bits / 8
        energy += served / per_access * level.read_energy_pj + taken / per_access * level.write_energy_pj
    return _num(energy)


def _traffic_bytes(cme) -> dict[str, int]:
    """Bytes each memory level (by name) serves to the level below it and takes from it, summed
    over the operands it holds: ZigZag's prediction of what perf/'s cache simulation measures as
    a level's `read_bytes + write_bytes` (the per-operand register levels included)."""
    out: dict[str, int] = {}
    for levels in traffic_by_operand(cme).values():
        for name, (served, taken) in levels.items():
            out[name] = out.get(name, 0) + served + taken
    return dict(sorted(out.items()))


def write_allocate_fills(by_operand: dict[str, dict[str, list[int]]], allocating: set[str]) -> dict[str, int]:
    """Bytes a write-allocate cache fetches that ZigZag does not count: ZigZag writes outputs
    into a level without reading them, a write-allocate cache first fills the written line from
    the level behind it. Per output tile that is one fill per first write: the times the level
    behind takes the outputs minus the times it serves them back (a partial sum read back is a
    fill ZigZag already counts). Level (behind an allocating cache) -> extra bytes it serves.
    `by_operand` as traffic_by_operand gives it, levels in ZigZag's order (nearest the MACs
    first); `allocating`: names of the write-allocate caches (perf/'s cache simulation
    allocates on a write miss at write-back levels)."""
    out: dict[str, int] = {}
    names = list(by_operand.get("O", {}))
    for cache, behind in zip(names, names[1:]):
        if cache in allocating:
            served, taken = by_operand["O"][behind]
            if taken > served:
                out[behind] = taken - served
    return out


def extract(cme, nloops: int, energy: float, latency: float) -> dict:
    combined = cme.mapping.combined_mapping_dict_1s1t
    per_level: dict[str, list[list[int]]] = {}
    for op, levels in combined.items():
        tiles = []
        acc = [1] * nloops
        for lv, loops in enumerate(levels):
            for dim, size in loops:
                k = _dim_index(dim)
                if k is not None:
                    acc[k] *= int(round(size))
            if lv >= 1:
                tiles.append(list(acc))
        per_level[str(op)] = tiles
    mem_names = {str(op): [m.name for m in levels] for op, levels in cme.mem_hierarchy_dict.items()}
    spatial = {str(op): [[[str(d), int(round(s))] for d, s in lv] for lv in levels]
               for op, levels in cme.spatial_mapping.mapping_dict_origin.items()}
    temporal = {str(op): [[[str(d), int(round(s))] for d, s in lv] for lv in levels]
                for op, levels in cme.temporal_mapping.mapping_dic_origin.items()}
    # loop order (outermost first) from the output operand's temporal loops
    out_key = next(k for k in temporal if k == "O")
    seq = [d for lv in temporal[out_key] for d, _ in lv]  # innermost first
    order: list[int] = []
    for d in reversed(seq):
        k = _dim_index(d)
        if k is not None and k not in order:
            order.append(k)
    order += [k for k in range(nloops) if k not in order]
    return {
        "traffic_bytes": _traffic_bytes(cme),
        "traffic_served_taken_bytes": _served_taken_bytes(cme),
        "energy_pj": _num(energy),
        "latency_cycles": _num(latency),
        "mac_utilization": _num(cme.mac_utilization2),
        "spatial_mapping": dict(sorted(spatial.items())),
        "temporal_mapping": dict(sorted(temporal.items())),
        "tiles_per_level": dict(sorted(per_level.items())),
        "memory_levels": dict(sorted(mem_names.items())),
        "loop_order": [f"d{k}" for k in order],
    }


def level_tiles(result: dict, nloops: int, relevant: dict[str, set[int]] | None = None
                ) -> dict[str, list[int]]:
    """ZigZag's tiles at register (level 0), L1 (1), L2 (2): per loop, the max over operands.

    With `relevant` (ZigZag operand letter -> the loops indexing that operand), a loop counts
    only for the operands it indexes: a loop irrelevant to an operand iterates over *reuse* of
    the operand's data at that level (e.g. N for the matmul's A), not over data held there, so
    taking it would inflate the tile (64x3136x576: L1 "tile" 16x3136x288, i.e. 3.6 MB, where
    the data ZigZag keeps in L1 is 16x2x288)."""
    out = {}
    for role, lv in (("register", 0), ("l1", 1), ("l2", 2)):
        t = [1] * nloops
        for op, tiles in result["tiles_per_level"].items():
            if lv < len(tiles):
                keep = relevant.get(op) if relevant is not None else None
                t = [max(a, b) if keep is None or k in keep else a
                     for k, (a, b) in enumerate(zip(t, tiles[lv]))]
        out[role] = t
    return out


def relevant_loops(nest: LoopNest) -> dict[str, set[int]]:
    """ZigZag operand letter (I, W, O as in to_layer) -> loops that index that operand."""
    ins = [i for i, o in enumerate(nest.operands) if o[0] == "input"]
    outs = [i for i, o in enumerate(nest.operands) if o[0] == "output"]
    out = {}
    for letter, idx in (("I", ins[:1]), ("W", ins[1:2]), ("O", outs[:1])):
        if idx:
            out[letter] = nest.operand_dims(idx[0])
    return out


# --------------------------------------------------------------------------------------------
# ZigZag's cost model applied to GIVEN tiles (not its own search)
#
# A candidate's tiles (analysis roles register <= l1 <= l2 <= the whole loop, per loop d0..dn)
# become a ZigZag mapping as follows, per loop k (innermost first):
#   spatial   s_k on the array dimension D1 (see candidate_spatial: the vector loop, then the
#             next parallel loop outward, as the register tile allows), below every memory;
#   register  ceil(register_k / s_k) temporal iterations at each operand's register level;
#   l1        ceil(l1_k / register_k') at the L1 level, l2 likewise at the L2 level;
#   outer     what is left of the loop at the top level (DRAM); any level between L2 and the
#             top (an L3) gets no loop.
# (register_k' etc. = the padded size below.) Within a level the loops follow `loop_order`
# (outermost first; IREE tiles in linalg order d0..dn, so that is the default for candidates).
# Every operand gets the same level boundaries (an EVEN-style cut; ZigZag's own allocator cuts
# each operand separately by capacity), and the memories' capacities are NOT enforced: the
# cost model prices the tiles as given, so an output register tile of 7 rows x 16 columns sits
# in `reg_O` although ZigZag's per-lane, per-operand third of the register file could not hold
# it (its register level is scalar registers, the candidate's vector registers).
# A tile that does not divide its enclosing tile makes the loop *padded* to a whole number of
# tiles (ZigZag has no ragged tiles): the layer is priced with the padded loop sizes, so the
# padded MACs count as work (IREE executes a smaller last tile instead).
# `mode="allocated"` instead hands ZigZag only the flat loop ordering (the same loops, innermost
# first) and lets ZigZag's MemoryAllocator cut it into levels by capacity (its own per-operand
# choice); the tiles then only set the loop blocking and order, as a cache would.

TILE_ROLES = ("register", "l1", "l2")
FORCE_MODES = ("forced", "allocated")


def candidate_spatial(tiles: dict[str, list[int]], kinds: list[str], array_size: int
                      ) -> dict[int, int]:
    """Spatial unrolling for a candidate: loop -> factor on the array dimension D1 (the MAC
    units: f32 lanes x FMA pipes). The innermost parallel loop (the vector loop) takes
    min(its register tile, array size); what is left of the array goes to the next parallel
    loops outward (accumulator rows: the pipes work on different vectors), each taking at most
    its register tile. Factors need not divide the register tile (the loop is padded)."""
    reg = tiles["register"]
    out: dict[int, int] = {}
    left = array_size
    for k in reversed(range(len(kinds))):
        if left <= 1:
            break
        if kinds[k] != "parallel" or reg[k] <= 1:
            continue
        s = 1
        while s * 2 <= min(reg[k], left) and left % (s * 2) == 0:
            s *= 2
        if reg[k] < left and left % reg[k] == 0:
            s = max(s, reg[k])
        if s > 1:
            out[k] = s
            left //= s
    return out


def tile_loops(tiles: dict[str, list[int]], bounds: list[int], loop_order: list[int],
               spatial: dict[int, int]) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """Tiles -> temporal loops per level [register, l1, l2, outer], each innermost first as
    (loop index, factor), and the padded loop bounds (see the comment above). Factors of 1
    are left out; tiles above the loop's bound count as the whole loop. Raises ValueError on
    tiles that are not register <= l1 <= l2."""
    n = len(bounds)
    if sorted(loop_order) != list(range(n)):
        raise ValueError(f"loop order {loop_order} is not a permutation of {n} loops")
    for role in TILE_ROLES:
        if len(tiles[role]) != n:
            raise ValueError(f"{role} tile has {len(tiles[role])} entries for {n} loops")
    levels: list[list[tuple[int, int]]] = [[], [], [], []]
    padded = []
    factors = [[1] * 4 for _ in range(n)]
    for k in range(n):
        # a tile larger than its loop (a lane-rounded register tile) is the whole loop
        chain = [min(tiles[r][k], bounds[k]) for r in TILE_ROLES] + [bounds[k]]
        if any(t < 1 for t in chain) or any(a > b for a, b in zip(chain, chain[1:])):
            raise ValueError(f"loop d{k}: tiles {chain[:3]} are not 1 <= register <= l1 <= l2 <= "
                             f"bound {bounds[k]}")
        covered = spatial.get(k, 1)
        for lv, size in enumerate(chain):
            f = -(-size // covered)
            factors[k][lv] = f
            covered *= f
        padded.append(covered)
    for lv in range(4):
        for k in reversed(loop_order):  # innermost first
            if factors[k][lv] > 1:
                levels[lv].append((k, factors[k][lv]))
    return levels, padded


def _padded_layer(layer: dict, padded: list[int]) -> dict:
    """`layer` with loop sizes `padded`; derived (pr) dims recomputed where a padded loop feeds them."""
    out = dict(layer)
    old = layer["loop_sizes"]
    out["loop_sizes"] = list(padded)
    if "dimension_relations" in layer and padded != list(old):
        sizes = list(layer["pr_loop_sizes"])
        for i, rel in enumerate(layer["dimension_relations"]):
            # "p0=2*l1+1*l2"
            terms = [t.split("*") for t in rel.split("=")[1].split("+")]
            dims = [(int(c), int(d[1:])) for c, d in terms]
            if any(padded[d] != old[d] for _, d in dims):
                sizes[i] = max(sizes[i], sum(c * (padded[d] - 1) for c, d in dims) + 1)
        out["pr_loop_sizes"] = sizes
    return out


class _ForcedTemporalMapping:
    """Replaces TemporalMappingGeneratorStage.generate_temporal_mappings while active: yields
    the one temporal mapping built from `levels` instead of LOMA's search."""

    def __init__(self, levels: list[list[tuple[int, int]]] | dict, mode: str):
        self.levels, self.mode = levels, mode

    def __enter__(self):
        from zigzag.stages.mapping.temporal_mapping_generator_stage import TemporalMappingGeneratorStage

        self._saved = TemporalMappingGeneratorStage.generate_temporal_mappings
        levels, mode = self.levels, self.mode

        def generate(stage):
            from zigzag.datatypes import LayerDim
            from zigzag.mapping.temporal_mapping import TemporalMapping
            from zigzag.opt.loma.memory_allocator import MemoryAllocator

            if isinstance(levels, dict):  # a whole per-operand temporal mapping (extract's form)
                yield TemporalMapping({op: [[(LayerDim(d), f) for d, f in lv] for lv in tm]
                                       for op, tm in ((next(o for o in stage.layer.layer_operands
                                                            if str(o) == name), tm)
                                                      for name, tm in levels.items())},
                                      stage.layer, stage.mapping_type)
                return
            loops = [[(LayerDim(f"L{k}"), f) for k, f in lv] for lv in levels]
            if mode == "allocated":
                flat = [loop for lv in loops for loop in lv]
                yield MemoryAllocator(stage.accelerator, stage.layer, stage.spatial_mapping, flat,
                                      stage.mapping_type).run()
                return
            hierarchy = stage.accelerator.memory_hierarchy
            mapping = {}
            for layer_op, mem_op in stage.layer.memory_operand_links.layer_and_mem_ops():
                nlv = len(hierarchy.get_memory_levels(mem_op))
                if nlv < 2:
                    raise ZigZagFailed(f"operand {layer_op} has {nlv} memory level(s); need >= 2")
                per = [list(loops[0]), *([list(loops[1])] if nlv > 2 else []),
                       *([list(loops[2])] if nlv > 3 else [])]
                while len(per) < nlv - 1:
                    per.append([])
                # levels the hierarchy lacks fold outward; the outer loops go to the top
                per.append([loop for lv in loops[len(per):] for loop in lv]
                           if len(per) < 4 else list(loops[3]))
                mapping[layer_op] = per
            yield TemporalMapping(mapping, stage.layer, stage.mapping_type)

        TemporalMappingGeneratorStage.generate_temporal_mappings = generate
        return self

    def __exit__(self, *exc):
        from zigzag.stages.mapping.temporal_mapping_generator_stage import TemporalMappingGeneratorStage

        TemporalMappingGeneratorStage.generate_temporal_mappings = self._saved
        return False


def evaluate_tiles(layer: dict, accelerator: Path, mapping: Path, tiles: dict[str, list[int]],
                   loop_order: list[int], nloops: int, *, kinds: list[str] | None = None,
                   spatial: dict[int, int] | None = None, mode: str = "forced",
                   dump_root: Path | None = None) -> dict:
    """ZigZag's cost model on the given tiles (see the comment above for the translation):
    a result like `run`'s (latency_cycles, energy_pj, traffic_bytes, ...) plus the padded loop
    sizes. `spatial` (loop -> D1 factor) defaults to candidate_spatial(tiles, kinds, D1 size);
    `mapping` is the analysis' mapping YAML (its memory_operand_links are kept).

    Raises ZigZagFailed when ZigZag raises (e.g. `allocated` mode on tiles that do not fit)."""
    import yaml

    if mode not in FORCE_MODES:
        raise ValueError(f"mode {mode}: expected one of {', '.join(FORCE_MODES)}")
    bounds = list(layer["loop_sizes"])
    if len(bounds) != nloops:
        raise ValueError(f"layer has {len(bounds)} loops, nloops is {nloops}")
    if spatial is None:
        acc = yaml.safe_load(Path(accelerator).read_text())
        array = acc["operational_array"]
        if array["dimensions"] != ["D1"]:
            raise ValueError(f"array dimensions {array['dimensions']}: candidate_spatial knows D1 only")
        if kinds is None:
            raise ValueError("kinds is needed to choose the spatial unrolling")
        spatial = candidate_spatial(tiles, kinds, int(array["sizes"][0]))
    levels, padded = tile_loops(tiles, bounds, loop_order, spatial)
    base = yaml.safe_load(Path(mapping).read_text())
    entry = dict(next(m for m in base if m["name"] == "default"))
    entry["spatial_mapping"] = {"D1": [f"L{k}, {f}" for k, f in sorted(spatial.items())] or ["L0, 1"]}
    logging.getLogger("zigzag").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    from zigzag.api import get_hardware_performance_zigzag

    dump = Path(tempfile.mkdtemp(prefix="zz_", dir=dump_root))
    try:
        map_path = dump / "mapping.yaml"
        map_path.write_text(yaml.safe_dump([entry], sort_keys=False))
        with contextlib.redirect_stdout(io.StringIO()), _ForcedTemporalMapping(levels, mode):
            energy, latency, cmes = get_hardware_performance_zigzag(
                [_padded_layer(layer, padded)], str(accelerator), str(map_path), opt="latency",
                dump_folder=str(dump / "out"), loma_show_progress_bar=False)
    except ZigZagFailed:
        raise
    except Exception as err:  # noqa: BLE001 - ZigZag raises anything; keep its words, not its paths
        text = first_line(err)
        for path, name in ((dump, "<zigzag dump>"), (Path(accelerator).parent, "<zigzag inputs>")):
            text = text.replace(str(path), name)
        raise ZigZagFailed(f"{type(err).__name__}: {text}") from None
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    cme = cmes[0][1][0][0]
    out = extract(cme, nloops, energy, latency)
    out["traffic_by_operand"] = traffic_by_operand(cme)
    out["padded_loop_sizes"] = padded
    out["spatial"] = {f"d{k}": f for k, f in sorted(spatial.items())}
    return out


def evaluate_mapping(layer: dict, accelerator: Path, mapping: Path, temporal: dict,
                     spatial: dict[str, list[list]], nloops: int, dump_root: Path | None = None) -> dict:
    """ZigZag's cost model on a whole mapping in `extract`'s form (`temporal_mapping`: operand ->
    levels -> [dim, factor]; `spatial_mapping`: operand -> levels -> [dim, factor], of which the
    union is given to D1). The self-check of the forcing: ZigZag's own mapping must price as
    `run` priced it."""
    import yaml

    dims = {}
    for levels in spatial.values():
        for lv in levels:
            for d, f in lv:
                dims[d] = f
    base = yaml.safe_load(Path(mapping).read_text())
    entry = dict(next(m for m in base if m["name"] == "default"))
    entry["spatial_mapping"] = {"D1": [f"{d}, {f}" for d, f in sorted(dims.items())] or ["L0, 1"]}
    logging.getLogger("zigzag").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    from zigzag.api import get_hardware_performance_zigzag

    dump = Path(tempfile.mkdtemp(prefix="zz_", dir=dump_root))
    try:
        map_path = dump / "mapping.yaml"
        map_path.write_text(yaml.safe_dump([entry], sort_keys=False))
        with contextlib.redirect_stdout(io.StringIO()), _ForcedTemporalMapping(temporal, "forced"):
            energy, latency, cmes = get_hardware_performance_zigzag(
                [layer], str(accelerator), str(map_path), opt="latency",
                dump_folder=str(dump / "out"), loma_show_progress_bar=False)
    except Exception as err:  # noqa: BLE001
        raise ZigZagFailed(f"{type(err).__name__}: {first_line(err)}") from None
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    cme = cmes[0][1][0][0]
    return {**extract(cme, nloops, energy, latency), "traffic_by_operand": traffic_by_operand(cme)}
