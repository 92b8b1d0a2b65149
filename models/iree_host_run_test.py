"""The Keras CNN and MLP imports compile with IREE for the host and reproduce their goldens."""

import os
import sys

import numpy as np
import pytest

ARTIFACTS = sys.argv[1:]
HOST_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]


def _artifacts(model):
    mlir = [p for p in ARTIFACTS if os.path.basename(p) == model + ".mlirbc"]
    golden = [p for p in ARTIFACTS if os.path.basename(p) == model + ".golden.npz"]
    assert len(mlir) == 1 and len(golden) == 1, ARTIFACTS
    return mlir[0], golden[0]


@pytest.mark.parametrize("model", ["keras_cnn", "mlp"])
def test_host_run_matches_golden(model, tmp_path):
    import iree.compiler.tools as ireec
    import iree.runtime as ireert

    mlir, golden_path = _artifacts(model)
    vmfb = ireec.compile_file(mlir, extra_args=HOST_FLAGS)
    golden = np.load(golden_path)
    inputs = [golden[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in golden.files))]
    expected = [golden[f"output_{i}"] for i in range(sum(k.startswith("output_") for k in golden.files))]

    config = ireert.Config("local-task")
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(ireert.VmModule.copy_buffer(ctx.instance, vmfb))
    module = ctx.modules.module
    entry = module["main"]
    results = entry(*inputs)
    if not isinstance(results, (tuple, list)):
        results = [results]
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        got = np.asarray(got.to_host() if hasattr(got, "to_host") else got)
        assert got.shape == want.shape and got.dtype == want.dtype
        err = float(np.max(np.abs(got - want)))
        assert err <= 1e-4, f"{model}: max abs error {err}"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
