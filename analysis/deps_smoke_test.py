"""xDSL reads a linalg loop nest and ZigZag costs a matmul: the analysis stack works."""

import importlib.metadata
import sys

import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.parser import Parser

MATMUL_GENERIC = """
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @mm(%x: tensor<4x16xf32>, %y: tensor<16x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %y : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
"""


def test_locked_versions():
    assert importlib.metadata.version("xdsl") == "0.74.0"
    assert importlib.metadata.version("zigzag-dse") == "3.9.1"


def test_xdsl_reads_the_loop_nest_of_a_linalg_generic():
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, MATMUL_GENERIC).parse_module()
    (generic,) = [op for op in module.walk() if isinstance(op, GenericOp)]
    assert tuple(generic.get_static_loop_ranges()) == (4, 8, 16)
    kinds = [t.data.value for t in generic.iterator_types.data]
    assert kinds == ["parallel", "parallel", "reduction"]


def test_zigzag_api_is_importable():
    from zigzag.api import get_hardware_performance_zigzag

    assert callable(get_hardware_performance_zigzag)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
