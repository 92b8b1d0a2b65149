"""executable_configurations compiles a module once per (path, bytes, flags) in a process."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from common import iree_tools

MATMUL = """
func.func @main(%a: tensor<16x24xf32>, %b: tensor<24x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x32xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<16x24xf32>, tensor<24x32xf32>)
                     outs(%fill : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}
"""
FLAGS = ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-triple=x86_64-unknown-linux-gnu",
         "--mlir-print-debuginfo=false"]


@pytest.fixture
def compiles(monkeypatch) -> Iterator[list[list[str]]]:
    """The iree-compile runs executable_configurations makes (each still runs)."""
    iree_tools._configurations.cache_clear()
    calls: list[list[str]] = []
    real = iree_tools.iree_compile

    def counting(args, what, cwd=None):
        calls.append(list(args))
        return real(args, what, cwd)

    monkeypatch.setattr(iree_tools, "iree_compile", counting)
    yield calls
    iree_tools._configurations.cache_clear()


def test_same_module_and_flags_compile_once(tmp_path: Path, compiles):
    module = tmp_path / "m.mlir"
    module.write_text(MATMUL)
    iree_tools.executable_configurations(module, FLAGS, tmp_path / "a.mlir", "test")
    iree_tools.executable_configurations(module, FLAGS, tmp_path / "b.mlir", "test")
    assert len(compiles) == 1
    first = (tmp_path / "a.mlir").read_bytes()
    assert b"hal.executable" in first and (tmp_path / "b.mlir").read_bytes() == first


def test_other_flags_or_bytes_compile_again(tmp_path: Path, compiles):
    module = tmp_path / "m.mlir"
    module.write_text(MATMUL)
    iree_tools.executable_configurations(module, FLAGS, tmp_path / "a.mlir", "test")
    iree_tools.executable_configurations(module, [*FLAGS, "--iree-llvmcpu-target-cpu=haswell"],
                                         tmp_path / "b.mlir", "test")
    assert len(compiles) == 2
    module.write_text(MATMUL.replace("16x", "8x"))
    iree_tools.executable_configurations(module, FLAGS, tmp_path / "c.mlir", "test")
    assert len(compiles) == 3
    assert b"8x32" in (tmp_path / "c.mlir").read_bytes()


def test_only_the_latest_are_kept(tmp_path: Path, compiles):
    module = tmp_path / "m.mlir"
    module.write_text(MATMUL)
    cpus = [f"--iree-llvmcpu-target-cpu={c}" for c in ("generic", "haswell", "skylake", "znver2", "znver3")]
    for i, cpu in enumerate(cpus):  # one more flag set than are kept
        iree_tools.executable_configurations(module, [*FLAGS, cpu], tmp_path / f"{i}.mlir", "test")
    assert iree_tools._configurations.cache_info().currsize == iree_tools.KEPT_CONFIGURATIONS
    iree_tools.executable_configurations(module, [*FLAGS, cpus[-1]], tmp_path / "last.mlir", "test")
    assert len(compiles) == len(cpus)  # the latest is still kept
    iree_tools.executable_configurations(module, [*FLAGS, cpus[0]], tmp_path / "first.mlir", "test")
    assert len(compiles) == len(cpus) + 1  # the oldest was dropped


def test_failure_is_raised_and_not_remembered(tmp_path: Path, compiles):
    module = tmp_path / "bad.mlir"
    module.write_text("func.func @main( {")
    for out in ("a.mlir", "b.mlir"):
        with pytest.raises(iree_tools.IreeCompileError):
            iree_tools.executable_configurations(module, FLAGS, tmp_path / out, "test")
    assert len(compiles) == 2
    with pytest.raises(iree_tools.IreeCompileError):
        iree_tools.executable_configurations(tmp_path / "missing.mlir", FLAGS, tmp_path / "c.mlir", "test")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
