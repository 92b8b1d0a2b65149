"""ResNet-18 for riscv64+RVV: every dispatch accounted for, tiles legal, summary adds up."""

import json
import sys
from pathlib import Path

import pytest

from analysis import tiles

ARGS = sys.argv[1:]


def _files():
    analysis = Path(ARGS[0])
    mlirbc = next(Path(p) for p in ARGS[1:] if p.endswith(".mlirbc"))
    return analysis, mlirbc


def _export_count(mlirbc: Path) -> int:
    """hal.executable.export ops of the module compiled like the analysis did."""
    from iree.compiler import ir
    from analysis.dispatches import compile_to_executable_sources
    from common.targets import named_target
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = compile_to_executable_sources(mlirbc, named_target("riscv64_rvv").compile_flags(),
                                            Path(tmp))
        module = ir.Module.parse(src.read_text(), ir.Context())
    count = 0

    def walk(op):
        nonlocal count
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name == "hal.executable.export":
                        count += 1
                    walk(inner.operation)

    walk(module.operation)
    return count


def test_resnet18():
    analysis, mlirbc = _files()
    a = json.loads(analysis.read_text())
    s = a["summary"]
    assert a["model"] == "resnet18" and a["target"] == "riscv64_rvv" and a["vector_lanes_f32"] == 4
    assert s["dispatches"] == len(a["dispatches"]) == _export_count(mlirbc)
    assert s["zigzag"] + s["analytical"] + s["iree_default"] == s["dispatches"]
    assert s["distinct_ops"] == len({d["signature"] for d in a["dispatches"]}) < s["dispatches"]
    assert s["zigzag"] > 0
    for d in a["dispatches"]:
        assert d["reason"]
        if d["tiles"] is not None:
            bounds = [l["bound"] for l in d["loops"]]
            kinds = [l["kind"] for l in d["loops"]]
            assert tiles.check(bounds, kinds, d["tiles"], 4, 128) == [], d["name"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
