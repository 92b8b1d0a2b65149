"""A matmul, a conv (im2col -> matmul) and a strided depthwise conv analysed against both
hardware descriptions: hand-checked loop nests of the root op codegen configures (read at
--compile-to=executable-configurations), legal tiles, deterministic bytes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import tiles

HERE = Path(__file__).parent
ROOT = HERE.parent
# target, f32 lanes, register elements, cores
HW = {"riscv_rvv": ("riscv64_rvv", 4, 128, 1), "host": ("host", 8, 128, 2)}


def analyse(model: str, hw: str, out: Path) -> str:
    target = HW[hw][0]
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.analyze", "--module", str(HERE / "testdata" / f"{model}.mlir"),
         "--target", str(ROOT / "common" / "targets" / f"{target}.yaml"),
         "--hardware", str(HERE / "hardware" / f"{hw}.yaml"), "--model-name", model,
         "--out", str(out), "--jobs", "1"],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"analysis {model}: ")
    return out.read_text()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("a")
    return {(m, h): json.loads(analyse(m, h, tmp / f"{m}.{h}.json"))
            for m in ("matmul", "conv", "depthwise") for h in HW}


def root(result, kind):
    (d,) = [d for d in result["dispatches"] if d["kind"] == kind]
    return d


def nest(d):
    return ([(l["name"], l["bound"], l["kind"]) for l in d["loops"]],
            [(o["role"], o["indexing_map"]) for o in d["operands"]])


P, R = "parallel", "reduction"
MM_MAPS = [("input", "(d0, d1, d2) -> (d0, d2)"), ("input", "(d0, d1, d2) -> (d2, d1)"),
           ("output", "(d0, d1, d2) -> (d0, d1)")]
EXPECTED = {
    # C[64x128] += A[64x96] * B[96x128]
    "matmul": ("matmul", "linalg.matmul", [("d0", 64, P), ("d1", 128, P), ("d2", 96, R)], MM_MAPS),
    # im2col: F[16 x (8*3*3)] * cols[72 x (16*16)] -> O[16 x 256]
    "conv": ("matmul", "linalg.matmul", [("d0", 16, P), ("d1", 256, P), ("d2", 72, R)], MM_MAPS),
    # depthwise 3x3 stride 2 on 1x32x17x17 -> 1x32x8x8 as codegen configures it: IREE drops the
    # unit batch for dispatch formation but has put it back by executable-configurations, so the
    # root is (n, oh, ow, c, kh, kw) (at executable-sources it was (oh, ow, c, kh, kw)).
    "depthwise": ("depthwise_conv", "linalg.generic",
                  [("d0", 1, P), ("d1", 8, P), ("d2", 8, P), ("d3", 32, P), ("d4", 3, R),
                   ("d5", 3, R)],
                  [("input", "(d0, d1, d2, d3, d4, d5) -> (d0, d3, ((d1 * 2) + d4), ((d2 * 2) + d5))"),
                   ("input", "(d0, d1, d2, d3, d4, d5) -> (d3, d4, d5)"),
                   ("output", "(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1, d2)")]),
}


@pytest.mark.parametrize("hw", sorted(HW))
@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_loop_nest_and_tiles(results, model, hw):
    kind, root_op, loops, maps = EXPECTED[model]
    d = root(results[(model, hw)], kind)
    assert d["root_op"] == root_op
    assert nest(d) == (loops, maps)
    assert all(o["element_type"] == "f32" for o in d["operands"])
    lanes, reg, cores = HW[hw][1], HW[hw][2], HW[hw][3]
    if kind == "depthwise_conv":
        # left to IREE's defaults on purpose (analysis.analyze.IREE_SHAPED_KINDS), costed
        assert d["provenance"] == "iree-default" and d["tiles"] is None, d["reason"]
        assert "depthwise_conv" in d["reason"] and d["cost"]["latency_cycles"] > 0
        return
    assert d["provenance"] == "zigzag", d["reason"]
    assert results[(model, hw)]["vector_lanes_f32"] == lanes
    bounds = [b for _, b, _ in loops]
    kinds = [k for _, _, k in loops]
    assert tiles.check(bounds, kinds, d["tiles"], lanes, reg) == []
    assert sorted(d["loop_order"]) == sorted(n for n, _, _ in loops)
    assert d["cost"]["latency_cycles"] > 0 and 0 < d["cost"]["mac_utilization"] <= 1
    # ZigZag cannot beat the compute bound: MACs / MACs-per-cycle, per core (the latency is
    # the busiest core's share of the workgroups)
    macs = 1
    for b in bounds:
        macs *= b
    assert d["cost"]["latency_cycles"] >= macs / (lanes * 2) / cores * 0.999
    # distribution: enough workgroups for the cores, unless the l1 tiles are all whole
    groups = tiles.workgroups(bounds, kinds, d["tiles"]["l2"])
    assert groups >= min(tiles.WORKGROUPS_PER_CORE * cores,
                         tiles.workgroups(bounds, kinds, d["tiles"]["register"])), groups


def test_every_dispatch_accounted_for(results):
    for r in results.values():
        s = r["summary"]
        assert s["dispatches"] == len(r["dispatches"])
        assert s["zigzag"] + s["analytical"] + s["iree_default"] == s["dispatches"]
        assert all(d["reason"] for d in r["dispatches"])


def test_deterministic(results, tmp_path):
    again = analyse("depthwise", "riscv_rvv", tmp_path / "again.json")
    first = analyse("depthwise", "riscv_rvv", tmp_path / "first.json")
    assert again == first
    assert json.loads(first) == results[("depthwise", "riscv_rvv")]
    assert "/tmp" not in first and "zz_" not in first


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
