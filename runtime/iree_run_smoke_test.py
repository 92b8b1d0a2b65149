"""IREE's runtime runs a host-compiled matmul and matches numpy."""

import sys

import iree.compiler as ireec
import iree.runtime as ireert
import numpy as np
import pytest

MATMUL = """
func.func @mm(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<16x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<16x8xf32>) -> tensor<16x8xf32>
  %r = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%acc : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}
"""


def test_matmul_runs_and_matches_numpy():
    vmfb = ireec.compile_str(
        MATMUL,
        input_type="auto",
        extra_args=[
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
            "--iree-llvmcpu-target-cpu=host",
        ],
    )
    config = ireert.Config("local-task")
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 32), dtype=np.float32)
    b = rng.standard_normal((32, 8), dtype=np.float32)
    got = np.asarray(ctx.modules.module["mm"](a, b))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
