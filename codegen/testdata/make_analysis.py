"""Writes the hand-chosen analysis fixtures analysis_<target>.json for small.mlirbc.

Run once (python -m codegen.testdata.make_analysis); the JSON files are checked in.
Tiles are chosen by hand per dispatch, in the shape analysis produces (roles
register/l1/l2 per loop, root op loop order); they follow common/analysis_schema.py.
"""

import json
from pathlib import Path

from common.analysis_schema import Analysis

HERE = Path(__file__).parent
P, R = "parallel", "reduction"


def disp(i, name, root_op, kind, loops, tiles, prov="analytical", reason="hand-written test fixture"):
    return {
        "name": f"main_dispatch_{i}_{name}", "executable": f"main_dispatch_{i}", "root_op": root_op,
        "kind": kind, "loops": [{"name": f"d{j}", "bound": b, "kind": k} for j, (b, k) in enumerate(loops)],
        "operands": [], "signature": f"sig-{name}", "provenance": prov, "reason": reason,
        "tiles": tiles,
    }


def fixture(target, lanes):
    L = lanes
    d = [
        disp(0, "matmul_64x96x128_f32", "linalg.matmul", "matmul", [(64, P), (96, P), (128, R)],
             {"register": [4, 2 * L, 1], "l1": [16, 48, 64], "l2": [32, 96, 128]}, prov="zigzag",
             reason="zigzag latency-optimal mapping"),
        disp(1, "generic_8x3x3x16x16_f32", "linalg.generic", "copy", [(8, P), (3, P), (3, P), (16, P), (16, P)],
             {"register": [1, 1, 1, 1, L], "l1": [1, 3, 3, 16, 16], "l2": [4, 3, 3, 16, 16]}),
        disp(2, "matmul_16x256x72_f32", "linalg.matmul", "matmul", [(16, P), (256, P), (72, R)],
             {"register": [4, 2 * L, 1], "l1": [8, 64, 72], "l2": [16, 128, 72]}, prov="zigzag",
             reason="zigzag latency-optimal mapping (im2col conv)"),
        disp(3, "slow_memcpy", "linalg.generic", "copy", [(16, P), (16, P), (16, P)], None, prov="iree-default",
             reason="pad copy: not expressible in ZigZag, no cost model"),
        disp(4, "conv_16x16x16x3x3_f32", "linalg.generic", "depthwise_conv",
             [(1, P), (16, P), (16, P), (16, P), (3, R), (3, R)],
             {"register": [1, 1, L, 1, 1, 3], "l1": [1, 4, 16, 4, 3, 3], "l2": [1, 8, 16, 16, 3, 3]}),
        disp(5, "conv_16x8x8x2x2_f32", "linalg.generic", "pooling",
             [(1, P), (16, P), (8, P), (8, P), (2, R), (2, R)],
             # register tile 2 on the output row: ConvTileAndDecomposeExpert needs 1 (codegen adjusts).
             {"register": [1, 4, 2, L, 2, 2], "l1": [1, 8, 4, 8, 2, 2], "l2": [1, 16, 8, 8, 2, 2]}),
        disp(6, "elementwise_16384_f32", "linalg.generic", "elementwise", [(16384, P)],
             {"register": [2 * L], "l1": [1024], "l2": [8192]}),
        disp(7, "reduction_64x256_f32", "linalg.generic", "reduction", [(64, P), (256, R)],
             {"register": [L, 4], "l1": [16, 64], "l2": [32, 256]}),
    ]
    a = {"model": "small", "target": target, "hardware": "test_rvv_like", "hardware_sha256": "0" * 64,
         "vector_lanes_f32": lanes, "dispatches": d,
         "summary": {"dispatches": len(d), "distinct_ops": len(d), "zigzag": 2,
                     "analytical": len(d) - 3, "iree_default": 1}}
    Analysis.model_validate(a)
    return a


if __name__ == "__main__":
    for target, lanes in (("host", 8), ("riscv64_rvv", 4)):
        (HERE / f"analysis_{target}.json").write_text(json.dumps(fixture(target, lanes), indent=1) + "\n")
