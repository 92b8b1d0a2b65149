"""ResNet-18 for riscv64+RVV: every dispatch accounted for, its loops equal to the root op
codegen configures, tiles legal, summary adds up."""

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


def _configured_roots(mlirbc: Path) -> dict[str, list[tuple[int, str]] | None]:
    """export -> the configured root op's (bound, kind) loops, read independently of the
    analysis' xDSL path: IREE bindings on the generalised executable-configurations IR, root
    picked by the rule codegen uses (common/iree_root.py); None: no configured root."""
    import tempfile

    from iree.compiler import ir, passmanager

    from analysis.dispatches import compile_to_executable_configurations
    from common import iree_root
    from common.targets import named_target

    ctx = ir.Context()
    with tempfile.TemporaryDirectory() as tmp:
        src = compile_to_executable_configurations(
            mlirbc, named_target("riscv64_rvv").compile_flags(), Path(tmp))
        module = ir.Module.parse(src.read_text(), ctx)
    passmanager.PassManager.parse(
        "builtin.module(hal.executable(hal.executable.variant(builtin.module("
        "func.func(linalg-generalize-named-ops)))))", ctx).run(module.operation)
    out = {}
    for exe in iree_root.walk(module.operation):
        if exe.name != "hal.executable":
            continue
        (export,) = [o for o in iree_root.walk(exe) if o.name == "hal.executable.export"]
        (func,) = [o for o in iree_root.walk(exe) if o.name == "func.func"]
        name = ir.StringAttr(export.attributes["sym_name"]).value
        ops = iree_root.config_ops(func)
        r = iree_root.root_index(ops)
        if r is None:
            out[name] = None
            continue
        root = ops[r]
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(root.attributes["indexing_maps"])]
        kinds = ["reduction" if "reduction" in str(a) else "parallel"
                 for a in ir.ArrayAttr(root.attributes["iterator_types"])]
        bounds = [None] * len(kinds)
        for operand, amap in zip(root.operands, maps):
            shape = operand.type.maybe_downcast().shape
            for pos, expr in enumerate(amap.results):
                expr = expr.maybe_downcast()
                if isinstance(expr, ir.AffineDimExpr) and bounds[expr.position] is None:
                    bounds[expr.position] = shape[pos]
        out[name] = list(zip(bounds, kinds))
    return out


def test_resnet18():
    analysis, mlirbc = _files()
    a = json.loads(analysis.read_text())
    s = a["summary"]
    assert a["model"] == "resnet18" and a["target"] == "riscv64_rvv_zvl128" and a["vector_lanes_f32"] == 4
    roots = _configured_roots(mlirbc)
    assert s["dispatches"] == len(a["dispatches"]) == len(roots)
    assert s["zigzag"] + s["analytical"] + s["iree_default"] + s["search"] == s["dispatches"]
    assert s["distinct_ops"] == len({d["signature"] for d in a["dispatches"]}) < s["dispatches"]
    # every contraction got ZigZag's candidate and at least 5 candidates, IREE's default first
    # among equals; the compiled cost is the chosen candidate's prediction
    for d in a["dispatches"]:
        names = [c["name"] for c in d["candidates"]]
        if d["kind"] in ("matmul", "conv", "batch_matmul"):
            assert d["zigzag"] is not None and "iree-default" in names and len(names) >= 5, d["name"]
        if d["candidates"]:
            chosen = next(c for c in d["candidates"] if c["name"] == d["chosen"])
            assert d["cost"]["latency_cycles"] == chosen["predicted_cycles"]
            assert (d["tiles"] is None) == (d["chosen"] == "iree-default")
    for d in a["dispatches"]:
        assert d["reason"]
        # The analysed loop nest is exactly the root op codegen will configure.
        want = roots[d["name"]]
        if want is None:
            assert d["provenance"] == "iree-default", d["name"]
        else:
            assert [(l["bound"], l["kind"]) for l in d["loops"]] == want, d["name"]
        if d["tiles"] is not None:
            bounds = [l["bound"] for l in d["loops"]]
            kinds = [l["kind"] for l in d["loops"]]
            for i, b in enumerate(bounds):
                t = d["tiles"]
                assert 1 <= t["register"][i] <= t["l1"][i] <= t["l2"][i] <= b, d["name"]
            inner = tiles.innermost_parallel(kinds)
            r = d["tiles"]["register"][inner]
            assert r in (1, bounds[inner]) or r % 4 == 0, d["name"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
