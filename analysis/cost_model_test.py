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
from analysis.hardware import load_hardware

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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
