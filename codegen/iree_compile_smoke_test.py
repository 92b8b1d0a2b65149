"""IREE compiles a matmul for the host and for riscv64 with the vector extension."""

import sys

import iree.compiler as ireec
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

COMMON = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"]


@pytest.mark.parametrize(
    "target_flags",
    [
        ["--iree-llvmcpu-target-cpu=host"],
        [
            "--iree-llvmcpu-target-triple=riscv64-unknown-linux-gnu",
            "--iree-llvmcpu-target-abi=lp64d",
            "--iree-llvmcpu-target-cpu-features=+m,+a,+f,+d,+c,+v",
        ],
    ],
    ids=["host", "riscv64_rvv"],
)
def test_matmul_compiles(target_flags):
    vmfb = ireec.compile_str(MATMUL, input_type="auto", extra_args=COMMON + target_flags)
    assert len(vmfb) > 1000
    # A vmfb is a zip whose first member is the VM module's FlatBuffer.
    assert vmfb[:2] == b"PK" and b"module.fb" in vmfb[:128]


def test_bad_ir_is_rejected():
    with pytest.raises(ireec.CompilerToolError):
        ireec.compile_str("func.func @f( {", input_type="auto", extra_args=COMMON)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
