"""Writes tiny_analysis_<target>.json: hand-chosen tiles for tiny_model.mlirbc.

Run once from the workspace root (python -m runtime.hal_runner.testdata.make_tiny_analysis);
the JSON files are checked in. Loops and names are those of IREE's default
configurations of tiny_model.mlirbc (iree-base-compiler 3.13); the tiles are
chosen by hand to differ from IREE's defaults *in the distribution level*, so
the workgroup counts of the tuned dispatches differ from the untuned ones
(e.g. the 1x10x512 matmul gets two workgroups with a partial tile). The two pad
copies (BufferOpsTileAndVectorize) stay IREE defaults. Schema: common/analysis_schema.py.
"""

import json
import sys
from pathlib import Path

from common.analysis_schema import Analysis

HERE = Path(__file__).parent
P, R = "parallel", "reduction"


def disp(exe, name, root_op, kind, loops, tiles, prov="analytical", reason="hand-written test fixture"):
    return {
        "name": f"{exe}_{name}", "executable": exe, "root_op": root_op, "kind": kind,
        "loops": [{"name": f"d{j}", "bound": b, "kind": k} for j, (b, k) in enumerate(loops)],
        "operands": [], "signature": f"sig-{name}", "provenance": prov, "reason": reason,
        "tiles": tiles,
    }


def fixture(target: str, lanes: int) -> dict:
    L = lanes
    d = [
        disp("_initializer_0_dispatch_0", "elementwise_broadcast_8x64_f32", "linalg.generic", "elementwise",
             [(8, P), (64, P)], {"register": [1, 2 * L], "l1": [4, 32], "l2": [4, 32]}),
        disp("main_dispatch_0", "slow_memcpy", "linalg.generic", "copy", [(3, P), (8, P), (8, P)], None,
             prov="iree-default", reason="pad copy: no cost model"),
        disp("main_dispatch_1", "generic_3x3x3x8x8_f32", "linalg.generic", "copy",
             [(3, P), (3, P), (3, P), (8, P), (8, P)],
             {"register": [1, 1, 1, 1, L], "l1": [1, 3, 3, 4, 8], "l2": [1, 3, 3, 4, 8]}),
        disp("main_dispatch_2", "matmul_8x64x27_f32", "linalg.matmul", "matmul", [(8, P), (64, P), (27, R)],
             {"register": [4, 2 * L, 1], "l1": [4, 16, 27], "l2": [4, 32, 27]}, prov="zigzag",
             reason="hand-written stand-in for a zigzag mapping (im2col conv)"),
        disp("main_dispatch_3", "slow_memcpy", "linalg.generic", "copy", [(8, P), (8, P), (8, P)], None,
             prov="iree-default", reason="pad copy: no cost model"),
        disp("main_dispatch_4", "conv_8x8x8x3x3_f32", "linalg.generic", "depthwise_conv",
             [(1, P), (8, P), (8, P), (8, P), (3, R), (3, R)],
             {"register": [1, 1, L, 1, 1, 3], "l1": [1, 2, 8, 4, 3, 3], "l2": [1, 4, 8, 8, 3, 3]}),
        disp("main_dispatch_5", "matmul_1x10x512_f32", "linalg.matmul", "matmul", [(1, P), (10, P), (512, R)],
             {"register": [1, L, 1], "l1": [1, 8, 128], "l2": [1, 8, 512]}),
    ]
    a = {"model": "tiny_model", "target": target, "hardware": "test_rvv_like", "hardware_sha256": "0" * 64,
         "vector_lanes_f32": lanes, "dispatches": d,
         "summary": {"dispatches": len(d), "distinct_ops": len(d), "zigzag": 1,
                     "analytical": len(d) - 3, "iree_default": 2}}
    Analysis.model_validate(a)
    return a


if __name__ == "__main__":
    for target, lanes in (("riscv64_rvv", 4), ("host", 8)):
        (HERE / f"tiny_analysis_{target}.json").write_text(json.dumps(fixture(target, lanes), indent=1) + "\n")
    sys.exit(0)
