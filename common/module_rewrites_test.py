"""common.module_rewrites: the channels-last rewrite changes the ops and keeps the numbers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from common import module_rewrites as rw
from common.targets import STRATEGY_FLAGS, named_target

# A PyTorch-style block: padded depthwise 3x3 (stride 2) between two regular NCHW convs, as
# torch-mlir imports it.
BLOCK = """
func.func @main(%x: tensor<1x8x10x10xf32>, %w1: tensor<16x8x1x1xf32>, %dw: tensor<16x3x3xf32>,
                %w2: tensor<4x16x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x16x10x10xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %c1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w1 : tensor<1x8x10x10xf32>, tensor<16x8x1x1xf32>) outs(%f1 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %p = tensor.pad %c1 low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x10x10xf32> to tensor<1x16x12x12xf32>
  %e2 = tensor.empty() : tensor<1x16x5x5xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%p, %dw : tensor<1x16x12x12xf32>, tensor<16x3x3xf32>) outs(%f2 : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  %e3 = tensor.empty() : tensor<1x4x3x3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%d, %w2 : tensor<1x16x5x5xf32>, tensor<4x16x3x3xf32>) outs(%f3 : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %c2 : tensor<1x4x3x3xf32>
}
"""

# A 1-D conv (PyTorch's Conv1d) and a dilated grouped conv (groups=2, dilation 2), as imported.
SIGNAL = """
func.func @main(%x: tensor<1x4x32xf32>, %w: tensor<8x4x5xf32>) -> tensor<1x8x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x14xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x14xf32>) -> tensor<1x8x14xf32>
  %c = linalg.conv_1d_ncw_fcw {dilations = dense<1> : vector<1xi64>, strides = dense<2> : vector<1xi64>}
      ins(%x, %w : tensor<1x4x32xf32>, tensor<8x4x5xf32>) outs(%f : tensor<1x8x14xf32>) -> tensor<1x8x14xf32>
  return %c : tensor<1x8x14xf32>
}
"""
GROUPED = """
func.func @main(%x: tensor<1x2x3x11x9xf32>, %w: tensor<2x4x3x3x3xf32>) -> tensor<1x2x4x7x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x7x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x4x7x5xf32>) -> tensor<1x2x4x7x5xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x2x3x11x9xf32>, tensor<2x4x3x3x3xf32>) outs(%f : tensor<1x2x4x7x5xf32>) -> tensor<1x2x4x7x5xf32>
  return %c : tensor<1x2x4x7x5xf32>
}
"""
# ResNet's stem as imported: conv, padded 3x3 stride-2 max pool, then a 2x2 sum pool.
POOLED = """
func.func @main(%x: tensor<1x3x12x12xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x8x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x12x12xf32>, tensor<8x3x3x3xf32>) outs(%f : tensor<1x8x10x10xf32>) -> tensor<1x8x10x10xf32>
  %p = tensor.pad %c low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<1x8x10x10xf32> to tensor<1x8x12x12xf32>
  %e2 = tensor.empty() : tensor<1x8x5x5xf32>
  %f2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32>
  %k3 = tensor.empty() : tensor<3x3xf32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%p, %k3 : tensor<1x8x12x12xf32>, tensor<3x3xf32>) outs(%f2 : tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32>
  %e3 = tensor.empty() : tensor<1x8x2x2xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  %k2 = tensor.empty() : tensor<2x2xf32>
  %s = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%m, %k2 : tensor<1x8x5x5xf32>, tensor<2x2xf32>) outs(%f3 : tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32>
  return %s : tensor<1x8x2x2xf32>
}
"""
PROGRAMS = {  # name: (module text, input shapes)
    "block": (BLOCK, ((1, 8, 10, 10), (16, 8, 1, 1), (16, 3, 3), (4, 16, 3, 3))),
    "signal": (SIGNAL, ((1, 4, 32), (8, 4, 5))),
    "grouped": (GROUPED, ((1, 2, 3, 11, 9), (2, 4, 3, 3, 3))),
    "pooled": (POOLED, ((1, 3, 12, 12), (8, 3, 3, 3))),
}


def _text(bytecode: bytes) -> str:
    from iree.compiler import ir

    with ir.Context():
        return str(ir.Module.parse(bytecode))


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


@pytest.mark.parametrize("program", PROGRAMS)
def test_channels_last_rewrites_every_convolution(program):
    """No NCHW-family convolution is left for IREE's scalar paths (1-D, grouped, depthwise)."""
    ops = _ops(rw.rewrite_module(PROGRAMS[program][0].encode(), ("channels_last",), program))
    convs = [o for o in ops if "conv" in o]
    assert not [o for o in convs if "nchw" in o or "ncw" in o or "ngchw" in o], convs
    if program == "block":
        assert "linalg.depthwise_conv_2d_nhwc_hwc" in convs
        # the padding moved after the transpose: padded in NHWC, next to the producer's layout
        text = _text(rw.rewrite_module(BLOCK.encode(), ("channels_last",), program))
        assert "to tensor<1x12x12x16xf32>" in text and "to tensor<1x16x12x12xf32>" not in text


def test_depthwise_channels_last_rewrites_only_the_depthwise_convolution():
    """The depthwise conv goes NHWC; the regular NCHW convs become im2col GEMMs in NCHW (no
    transposes around them, unlike channels_last's NHWC GEMMs)."""
    ops = _ops(rw.rewrite_module(BLOCK.encode(), ("depthwise_channels_last",), "block"))
    convs = [o for o in ops if "conv" in o]
    assert convs == ["linalg.depthwise_conv_2d_nhwc_hwc"], convs
    # the depthwise conv's input, filter and init in, its result out; none around the GEMMs
    assert ops.count("linalg.transpose") == 4, ops
    assert ops.count("linalg.matmul") + ops.count("linalg.generic") >= 2, ops


@pytest.mark.parametrize("rewrite", ["channels_last", "depthwise_channels_last"])
def test_both_channels_last_rewrites_turn_nchw_poolings_nhwc(rewrite):
    """PyTorch's NCHW poolings run scalar in IREE (resnet's max pool at 0.2% vector
    instructions); both rewrites give IREE their NHWC forms, which it vectorises."""
    ops = _ops(rw.rewrite_module(POOLED.encode(), (rewrite,), "pooled"))
    pools = [o for o in ops if "pooling" in o]
    assert pools == ["linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum"], pools


def _run(module_path, target, inputs):
    from iree import runtime as rt
    from common.iree_tools import iree_compile

    vmfb = iree_compile([str(target.compile_input(module_path)), *target.compile_flags(), "-o", "-"], "test").stdout
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    return np.asarray(ctx.modules.module.main(*inputs))


@pytest.mark.parametrize("program", PROGRAMS)
def test_channels_last_keeps_the_numbers(tmp_path, program):
    """The host build of the strategy that rewrites gives the original program's outputs."""
    text, shapes = PROGRAMS[program]
    module = tmp_path / f"{program}.mlir"
    module.write_text(text)
    rng = np.random.default_rng(58)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
