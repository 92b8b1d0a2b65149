"""The cost model's features respond to the tiles the way the hardware would, IREE's own
lowering_config reads back as tiles, and finalised candidates need no codegen adjustment."""

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import candidates as cands
from analysis import cost_model
from analysis.dispatches import DispatchInfo, LoopNest
from common.hardware import load_hardware

HW_DIR = Path(__file__).parent / "hardware"
RISCV = load_hardware(HW_DIR / "riscv_rvv.yaml")  # 4 f32 lanes, 32 vector registers, 1 core
HOST = load_hardware(HW_DIR / "host.yaml")  # 8 f32 lanes, 2 cores


def matmul(m: int, n: int, k: int) -> LoopNest:
    return LoopNest(
        loops=(("d0", m, "parallel"), ("d1", n, "parallel"), ("d2", k, "reduction")),
        operands=(("input", "(d0, d1, d2) -> (d0, d2)", "f32", (m, k)),
                  ("input", "(d0, d1, d2) -> (d2, d1)", "f32", (k, n)),
                  ("output", "(d0, d1, d2) -> (d0, d1)", "f32", (m, n))),
        body_ops=("arith.mulf", "arith.addf"),
        terms=((((0, 1),), ((2, 1),)), (((2, 1),), ((1, 1),)), (((0, 1),), ((1, 1),))))


def tiles(reg, l1, l2):
    return {"register": list(reg), "l1": list(l1), "l2": list(l2)}


def test_iree_default_config_reads_back_as_tiles():
    # IREE 3.13's riscv default for ResNet-18's 64x3136x576 matmul
    levels = {"cache_parallel": [64, 64, 0], "distribution": [64, 64, 0],
              "vector_common_parallel": [7, 16, 0], "vector_reduction": [0, 0, 1]}
    got = cands.iree_default_tiles(levels, [64, 3136, 576], ["parallel", "parallel", "reduction"])
    assert got == tiles([7, 16, 1], [64, 64, 576], [64, 64, 576])
    # no distribution level: not a root config, nothing to read
    assert cands.iree_default_tiles({"vector_common_parallel": [8]}, [64], ["parallel"]) is None


def test_wider_vectors_fewer_instructions_and_more_rows_fewer_broadcasts():
    nest = matmul(64, 256, 128)
    one = cost_model.features(nest, tiles([4, 4, 1], [64, 256, 128], [64, 256, 128]), RISCV)
    four = cost_model.features(nest, tiles([4, 16, 1], [64, 256, 128], [64, 256, 128]), RISCV)
    assert four["vector_ops"] == one["vector_ops"]  # same LMUL-1 work
    assert four["register_steps"] == one["register_steps"] / 4
    assert four["scalar_loads"] == one["scalar_loads"] / 4  # A broadcasts amortised over 4 vectors
    rows8 = cost_model.features(nest, tiles([8, 4, 1], [64, 256, 128], [64, 256, 128]), RISCV)
    assert rows8["vector_loads"] == one["vector_loads"] / 2  # B vectors amortised over 8 rows


def matmul_transpose_b(m: int, n: int, k: int) -> LoopNest:
    return LoopNest(
        loops=(("d0", m, "parallel"), ("d1", n, "parallel"), ("d2", k, "reduction")),
        operands=(("input", "(d0, d1, d2) -> (d0, d2)", "f32", (m, k)),
                  ("input", "(d0, d1, d2) -> (d1, d2)", "f32", (n, k)),
                  ("output", "(d0, d1, d2) -> (d0, d1)", "f32", (m, n))),
        body_ops=("arith.mulf", "arith.addf"),
        terms=((((0, 1),), ((2, 1),)), (((1, 1),), ((2, 1),)), (((0, 1),), ((1, 1),))))


def test_accumulator_chains_stall_when_too_few_are_independent():
    # One row of 2 vectors, 4 reductions unrolled: 8 FMAs over 2 pipes = 4 cycles of issue, but
    # each accumulator takes 4 dependent FMAs of 6 cycles (riscv_rvv: fma_latency_cycles 6).
    nest = matmul(1, 8, 64)
    f = cost_model.features(nest, tiles([1, 8, 4], [1, 8, 64], [1, 8, 64]), RISCV)
    assert f["register_steps"] == 16
    assert f["fma_stall"] == 16 * (4 * 6 - 4)
    # 12 independent accumulators keep both pipes busy: no stall
    wide = cost_model.features(matmul(6, 8, 64), tiles([6, 8, 1], [6, 8, 64], [6, 8, 64]), RISCV)
    assert wide["fma_stall"] == 0


def test_transposed_operand_is_gathered_and_a_window_offset_is_still_contiguous():
    f = cost_model.features(matmul_transpose_b(4, 32, 64),
                            tiles([4, 8, 1], [4, 32, 64], [4, 32, 64]), RISCV)
    assert f["vector_loads"] == 0
    # B's 8 elements per step go into a group of 2 registers, every one of 4 x 64 steps
    assert f["gathered_loads"] == 4 * 64 * 8 * 2
    assert f["scalar_loads"] == 4 * 64 * 4  # A's rows, broadcast
    conv1d = LoopNest(  # out[ow] += in[ow + kw] * w[kw]
        loops=(("d0", 32, "parallel"), ("d1", 3, "reduction")),
        operands=(("input", "(d0, d1) -> (d0 + d1)", "f32", (34,)),
                  ("input", "(d0, d1) -> (d1)", "f32", (3,)),
                  ("output", "(d0, d1) -> (d0)", "f32", (32,))),
        body_ops=("arith.mulf", "arith.addf"),
        terms=((((0, 1), (1, 1)),), (((1, 1),),), (((0, 1),),)))
    g = cost_model.features(conv1d, tiles([8, 1], [32, 3], [32, 3]), RISCV)
    assert g["gathered_loads"] == 0 and g["vector_loads"] > 0


def test_transcendental_ops_are_counted_per_register_step():
    nest = LoopNest(loops=(("d0", 64, "parallel"),),
                    operands=(("input", "(d0) -> (d0)", "f32", (64,)),
                              ("output", "(d0) -> (d0)", "f32", (64,))),
                    body_ops=("arith.negf", "math.exp", "arith.addf", "arith.divf"),
                    terms=((((0, 1),),), (((0, 1),),)))
    f = cost_model.features(nest, tiles([8], [64], [64]), RISCV)
    assert f["math_steps"] == 8 and f["fma_stall"] == 0


def test_ragged_tiles_and_spills_are_charged():
    nest = matmul(60, 64, 32)
    even = cost_model.features(nest, tiles([6, 16, 1], [60, 64, 32], [60, 64, 32]), RISCV)
    ragged = cost_model.features(nest, tiles([8, 16, 1], [60, 64, 32], [60, 64, 32]), RISCV)
    assert even["ragged_points"] == 0 < ragged["ragged_points"]
    fits = cost_model.features(nest, tiles([6, 16, 1], [60, 64, 32], [60, 64, 32]), RISCV)
    spills = cost_model.features(nest, tiles([12, 32, 1], [60, 64, 32], [60, 64, 32]), RISCV)
    assert fits["spilled_vectors"] == 0 < spills["spilled_vectors"]  # 12 x 8 > 32 registers


def test_busiest_core_carries_the_cost():
    nest = matmul(64, 64, 64)
    t = lambda l2: tiles([8, 8, 1], [32, 64, 64], l2)
    two = cost_model.features(nest, t([32, 64, 64]), HOST)  # 2 workgroups on 2 cores
    three = cost_model.features(nest, t([64, 64, 64]), HOST)  # 1 workgroup: one core idle
    assert two["workgroups"] == 1 and three["workgroups"] == 1
    assert three["vector_ops"] == 2 * two["vector_ops"]


# The checked-in calibrations (analysis/calibration/<hardware>.json; their measurements and
# evaluations are evidence in docs/data/calibration/).
CALIBRATIONS = sorted(p for p in (Path(__file__).parent / "calibration").glob("*.json")
                      if "." not in p.stem)


def test_calibrations_are_checked_in():
    assert CALIBRATIONS, "no analysis/calibration/<hardware>.json in the test's data"


@pytest.mark.parametrize("path", CALIBRATIONS, ids=lambda p: p.name)
def test_checked_in_calibration_loads_for_its_hardware(path):
    """What the analysis would read: today's features and op kinds, and the hardware
    description of the same name (a calibration left behind by a renamed or re-described
    machine is refused by the analysis, so it is caught here first)."""
    from analysis.analyze import load_calibration

    cal = load_calibration(path)
    assert cal.hardware == load_hardware(HW_DIR / f"{path.stem}.yaml").name


def test_a_candidate_replaces_the_default_only_beyond_the_margin():
    assert cost_model.replaces_default(85.0, 100.0, 0.15)
    assert not cost_model.replaces_default(86.0, 100.0, 0.15)
    assert cost_model.replaces_default(100.0, 100.0, 0.0)  # equal cost, no margin: a tie
    assert not cost_model.replaces_default(101.0, 100.0, 0.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300), st.booleans()), min_size=1, max_size=5),
       st.data())
def test_finalized_tiles_need_no_codegen_adjustment(loops, data):
    """finalize's output satisfies codegen.configs.pipeline_adjust's rules (ordered levels
    within the bounds; the vector loop's register tile 1, whole or a lane multiple)."""
    bounds = [b for b, _ in loops]
    kinds = ["parallel" if p else "reduction" for _, p in loops]
    n = len(bounds)
    raw = {r: [data.draw(st.integers(1, 400)) for _ in range(n)] for r in ("register", "l1", "l2")}
    nest = LoopNest(tuple((f"d{i}", b, k) for i, (b, k) in enumerate(zip(bounds, kinds))),
                    (("output", "", "f32", tuple(bounds)),), (), ((),))
    info = DispatchInfo("d", "e", "linalg.generic", "elementwise", nest, ())
    ctx = cands.Context(info, RISCV, None, None, None)
    out = cands.finalize(ctx, raw)
    inner = max((i for i, k in enumerate(kinds) if k == "parallel"), default=None)
    for i, b in enumerate(bounds):
        assert 1 <= out["register"][i] <= out["l1"][i] <= out["l2"][i] <= b
    if inner is not None:
        r = out["register"][inner]
        assert r in (1, bounds[inner]) or r % RISCV.lanes_f32 == 0


def test_register_search_aligns_the_vector_loops_outer_tiles():
    """IREE's riscv default for ResNet-18's 256x196x2304 matmul puts 16-wide register tiles in
    49-wide workgroups (a partial vector in each); the search offers the same register tile in
    one 196-wide workgroup (16 divides no tile of 196), and no proposal of it leaves a partial
    vector inside a workgroup."""
    levels = {"cache_parallel": [64, 49, 0], "distribution": [64, 49, 0],
              "vector_common_parallel": [7, 16, 0], "vector_reduction": [0, 0, 1]}
    bounds, kinds = [256, 196, 2304], ["parallel", "parallel", "reduction"]
    default = cands.iree_default_tiles(levels, bounds, kinds)
    info = DispatchInfo("d", "e", "linalg.matmul", "matmul", matmul(*bounds), ())
    props = {p.name: p.tiles for p in cands.GENERATORS["register-search"](
        cands.Context(info, RISCV, None, None, default))}
    assert props["iree-default+aligned"] == tiles([7, 16, 1], [64, 196, 2304], [64, 196, 2304])
    for name, t in props.items():
        reg, l1, l2 = t["register"][1], t["l1"][1], t["l2"][1]
        if name.endswith(cands.REDUCTION_BLOCKED):
            # a reduction-blocked twin's cache tile fits L1 with whole register tiles; the
            # workgroup may end in a narrower cache tile (measured: ResNet-18's 256x196x2304 GEMM
            # 51.8 M -> 25.8 M memory-aware cycles with 48-wide cache tiles in 196-wide workgroups)
            assert l1 % reg == 0 and l1 <= l2 and 196 % l2 == 0, (name, t)
            continue
        # whole register tiles in every cache tile, or one partial one at the loop's end
        assert (l1 % reg == 0 or l1 == 196) and 196 % l2 == 0 and l2 % l1 == 0, (name, t)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
