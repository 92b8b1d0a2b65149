"""//models:resnet18_import parses with IREE's MLIR bindings and has ResNet-18's op census."""

import collections
import sys

import numpy as np
import pytest

ARTIFACTS = sys.argv[1:]


def _artifact(suffix):
    matches = [p for p in ARTIFACTS if p.endswith(suffix)]
    assert len(matches) == 1, f"expected one *{suffix} among {ARTIFACTS}"
    return matches[0]


@pytest.fixture(scope="module")
def census():
    from iree.compiler import ir

    counts = collections.Counter()
    entries = []
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = False
        with open(_artifact(".mlirbc"), "rb") as f:
            module = ir.Module.parse(f.read())

        def visit(op):
            counts[op.name] += 1
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        for op in module.body.operations:
            if op.operation.name == "func.func":
                entries.append((ir.StringAttr(op.attributes["sym_name"]).value, str(op.attributes["function_type"])))
        text_head = module.operation.get_asm(large_elements_limit=4)[:200000]
    return counts, entries, text_head


def test_op_census_matches_resnet18(census):
    counts, _, _ = census
    assert counts["linalg.conv_2d_nchw_fchw"] == 20
    assert counts["linalg.matmul"] == 1
    assert counts["linalg.pooling_nchw_max"] == 1
    assert counts["tensor.pad"] >= 1
    assert counts["linalg.generic"] > 100
    assert not [name for name in counts if name.startswith(("torch.", "torch_c."))]


def test_entry_takes_exactly_the_golden_inputs(census):
    _, entries, _ = census
    golden = np.load(_artifact(".golden.npz"))
    inputs = sorted(k for k in golden.files if k.startswith("input_"))
    assert inputs == ["input_0"]
    assert golden["input_0"].shape == (1, 3, 224, 224) and golden["input_0"].dtype == np.float32
    assert golden["output_0"].shape == (1, 1000)
    assert entries == [("main", "(tensor<1x3x224x224xf32>) -> tensor<1x1000xf32>")]


def test_locations_are_stripped():
    from iree.compiler import ir

    with ir.Context():
        with open(_artifact(".mlirbc"), "rb") as f:
            module = ir.Module.parse(f.read())
        text = module.operation.get_asm(enable_debug_info=True, large_elements_limit=4)
    # Only unknown locations remain: no file:line:col locations (absolute source paths).
    assert 'loc("' not in text and "fused<" not in text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
