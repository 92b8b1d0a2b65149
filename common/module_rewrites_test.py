"""common.module_rewrites: the channels-last rewrite changes the ops and keeps the numbers."""

from __future__ import annotations

import numpy as np
import pytest

from common import module_rewrites as rw
from common.targets import STRATEGY_FLAGS, named_target

# A PyTorch-style block: depthwise 3x3 (stride 2) between two regular NCHW convs, as
# torch-mlir imports it.
BLOCK = """
func.func @main(%x: tensor<1x8x10x10xf32>, %w1: tensor<16x8x1x1xf32>, %dw: tensor<16x3x3xf32>,
                %w2: tensor<4x16x3x3xf32>) -> tensor<1x4x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x16x10x10xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w1 : tensor<1x8x10x10xf32>, tensor<16x8x1x1xf32>) outs(%f1 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %e2 = tensor.empty() : tensor<1x16x4x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%c1, %dw : tensor<1x16x10x10xf32>, tensor<16x3x3xf32>) outs(%f2 : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e3 = tensor.empty() : tensor<1x4x2x2xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%d, %w2 : tensor<1x16x4x4xf32>, tensor<4x16x3x3xf32>) outs(%f3 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  return %c2 : tensor<1x4x2x2xf32>
}
"""


def _ops(bytecode: bytes) -> list[str]:
    from iree.compiler import ir

    names: list[str] = []
    with ir.Context():
        module = ir.Module.parse(bytecode)

        def visit(op):
            names.append(op.name)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return names


def test_channels_last_rewrites_every_convolution():
    ops = _ops(rw.rewrite_module(BLOCK.encode(), ("channels_last",), "block"))
    assert "linalg.depthwise_conv_2d_nhwc_hwc" in ops
    assert not [o for o in ops if o.startswith("linalg.conv_2d_nchw") or o.endswith("nchw_chw")], ops


def _run(module_path, target, inputs):
    from iree import runtime as rt
    from common.iree_tools import iree_compile

    vmfb = iree_compile([str(target.compile_input(module_path)), *target.compile_flags(), "-o", "-"], "test").stdout
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    return np.asarray(ctx.modules.module.main(*inputs))


def test_channels_last_keeps_the_numbers(tmp_path):
    """The host build of the strategy that rewrites gives the original program's outputs."""
    module = tmp_path / "block.mlir"
    module.write_text(BLOCK)
    rng = np.random.default_rng(58)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 8, 10, 10), (16, 8, 1, 1), (16, 3, 3), (4, 16, 3, 3))]
    host = named_target("host")
    rewriting = [s for s, f in STRATEGY_FLAGS.items() if f.rewrites]
    assert rewriting, "no strategy rewrites the module"
    want = _run(module, host, inputs)
    for strategy in rewriting:
        got = _run(module, host.with_strategy(strategy), inputs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=strategy)


def test_bad_input_is_one_line():
    with pytest.raises(rw.RewriteError, match="rewrite 'nope': expected one of channels_last"):
        rw.rewrite_module(BLOCK.encode(), ("nope",), "block")
    with pytest.raises(rw.RewriteError, match="^junk.mlir: not an MLIR module"):
        rw.rewrite_module(b"this is not mlir", ("channels_last",), "junk.mlir")
