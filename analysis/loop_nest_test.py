"""A matmul, a conv (im2col -> matmul) and a strided depthwise conv analysed against both
hardware descriptions: hand-checked loop nests of the root op codegen configures (read at
--compile-to=executable-configurations), candidates (IREE's default among them) with legal
tiles and predictions, the choice rule with and without a calibration, deterministic bytes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import tiles

HERE = Path(__file__).parent
ROOT = HERE.parent
# hardware description -> (IREE target, f32 lanes per vector register)
HW = {"riscv_rvv": ("riscv64_rvv", 4), "host": ("host", 8)}


def analyse(model: str, hw: str, out: Path, calibration: Path | None = None) -> str:
    target = HW[hw][0]
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.analyze", "--module", str(HERE / "testdata" / f"{model}.mlir"),
         "--target", str(ROOT / "common" / "targets" / f"{target}.yaml"),
         "--hardware", str(HERE / "hardware" / f"{hw}.yaml"), "--model-name", model,
         "--out", str(out), "--jobs", "1"] + (["--calibration", str(calibration)] if calibration else []),
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
    lanes = HW[hw][1]
    assert results[(model, hw)]["vector_lanes_f32"] == lanes
    bounds = [b for _, b, _ in loops]
    kinds = [k for _, _, k in loops]
    names = [c["name"] for c in d["candidates"]]
    # IREE's default is always a candidate, with IREE's own tiles (read from its config)
    assert "iree-default" in names
    if kind == "matmul":
        # ZigZag ran and its candidate is listed (or merged into an equal one, which says so)
        assert d["zigzag"] is not None and len(names) >= 5, names
        assert "zigzag" in names or any("also proposed as zigzag" in c["reason"]
                                         for c in d["candidates"])
    else:
        assert "zigzag" not in names  # depthwise: not a ZigZag layer (common/op_kinds.py)
    assert len(set(names)) == len(names)
    for c in d["candidates"]:
        t = c["tiles"]
        for i, b in enumerate(bounds):
            assert 1 <= t["register"][i] <= t["l1"][i] <= t["l2"][i] <= b, (c["name"], i)
        inner = tiles.innermost_parallel(kinds)
        r = t["register"][inner]
        assert r in (1, bounds[inner]) or r % lanes == 0, c["name"]
        assert c["predicted_cycles"] > 0 and set(c["features"]) >= {"vector_ops", "workgroups"}
    preds = [c["predicted_cycles"] for c in d["candidates"]]
    assert preds == sorted(preds)
    # uncalibrated: IREE's default is kept (nothing measured says a candidate beats it)
    assert d["provenance"] == "iree-default" and d["tiles"] is None and d["chosen"] == "iree-default"
    assert "uncalibrated" in d["reason"]
    by_name = {c["name"]: c for c in d["candidates"]}
    assert d["cost"]["latency_cycles"] == by_name["iree-default"]["predicted_cycles"]


def test_calibrated_choice_is_the_cheapest_prediction(tmp_path):
    """With a calibration whose only cost is scalar loads, the matmul's chosen candidate is the
    cheapest predicted one, compiled with its tiles, unless IREE's default is within the margin."""
    from analysis.cost_model import FEATURES

    only = {f: 0.0 for f in FEATURES}
    cal = {"schema_version": 2, "hardware": "riscv_rvv", "hardware_sha256": "0" * 64,
           "measure": "riscv-model-cycles", "core_model": "sifive-p670",
           "coefficients": only | {"vector_ops": 1.0},
           # matmuls are priced by their own kind's coefficients, not the pooled ones
           "kind_coefficients": {"matmul": only | {"scalar_loads": 1.0}}, "min_rows_per_kind": 30,
           "choice_margin": 0.05, "fitted_on": ["test"],
           "fit": {"rows": 0, "dispatches": 0, "median_abs_relative_error": 0.0}}
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    a = json.loads(analyse("matmul", "riscv_rvv", tmp_path / "a.json", path))
    assert a["calibration"] == "cal.json" and len(a["calibration_sha256"]) == 64
    d = root(a, "matmul")
    by_name = {c["name"]: c for c in d["candidates"]}
    assert all(c["predicted_cycles"] == c["features"]["scalar_loads"] for c in d["candidates"])
    best = d["candidates"][0]
    default = by_name["iree-default"]["predicted_cycles"]
    if best["predicted_cycles"] <= default * 0.95:
        assert d["chosen"] == best["name"] and d["tiles"] == best["tiles"]
        assert d["provenance"] == best["generator"] != "iree-default"
    else:
        assert d["chosen"] == "iree-default" and d["tiles"] is None
    assert d["cost"]["latency_cycles"] == by_name[d["chosen"]]["predicted_cycles"]
    # a calibration for other hardware is refused with one line naming the file
    cal["hardware"] = "host_znver2"
    path.write_text(json.dumps(cal))
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.analyze", "--module", str(HERE / "testdata" / "matmul.mlir"),
         "--target", str(ROOT / "common" / "targets" / "riscv64_rvv.yaml"),
         "--hardware", str(HERE / "hardware" / "riscv_rvv.yaml"), "--model-name", "m",
         "--out", str(tmp_path / "b.json"), "--calibration", str(path)],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "cal.json" in proc.stderr and "host_znver2" in proc.stderr
    assert not (tmp_path / "b.json").exists()
    # so are coefficients for an op kind the registry does not know
    cal["hardware"] = "riscv_rvv"
    cal["kind_coefficients"] = {"matmull": only}
    path.write_text(json.dumps(cal))
    proc = subprocess.run(proc.args, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "cal.json" in proc.stderr and "'matmull'" in proc.stderr
    assert not (tmp_path / "b.json").exists()


def test_every_dispatch_accounted_for(results):
    for r in results.values():
        s = r["summary"]
        assert s["dispatches"] == len(r["dispatches"])
        assert s["zigzag"] + s["analytical"] + s["iree_default"] + s["search"] == s["dispatches"]
        assert s["candidates"] == sum(len(d["candidates"]) for d in r["dispatches"])
        assert all(d["reason"] for d in r["dispatches"])


def test_a_dot_product_is_analysed_without_zigzag(tmp_path):
    """ZigZag's workload needs an output index; a 0-d result (linalg.dot, a Keras text CNN's
    Dense(1) after pooling) gets no ZigZag candidate, says why, and the analysis goes on."""
    result = json.loads(analyse("dot", "riscv_rvv", tmp_path / "dot.json"))
    (d,) = result["dispatches"]
    assert [c["generator"] for c in d["candidates"]].count("zigzag") == 0
    assert "0-d output" in json.dumps(d)


def test_a_conv3d_is_analysed_without_zigzag(tmp_path):
    """A 3-D conv has 8 loops larger than 1: ZigZag's loop-order search (8! orders and more)
    would take the analysis from seconds to over 16 minutes. It gets no ZigZag candidate, says
    why, and the analysis goes on."""
    result = json.loads(analyse("conv3d", "riscv_rvv", tmp_path / "conv3d.json"))
    (d,) = [d for d in result["dispatches"] if d["kind"] == "conv"]
    assert [c["generator"] for c in d["candidates"]].count("zigzag") == 0
    assert "8 loops larger than 1" in json.dumps(d)
    assert len(d["candidates"]) > 1  # IREE's default and the generators' variants are still priced


def test_deterministic(results, tmp_path):
    again = analyse("depthwise", "riscv_rvv", tmp_path / "again.json")
    first = analyse("depthwise", "riscv_rvv", tmp_path / "first.json")
    assert again == first
    assert json.loads(first) == results[("depthwise", "riscv_rvv")]
    assert "/tmp" not in first and "zz_" not in first


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
