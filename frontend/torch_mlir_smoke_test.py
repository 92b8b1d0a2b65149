"""The locked torch is the CPU build and torch-mlir's FX importer lowers to linalg."""

import sys

import pytest
import torch
import torch_mlir.fx


def test_torch_is_the_pinned_cpu_build():
    assert torch.__version__ == "2.13.0+cpu"
    assert not torch.cuda.is_available()


def test_fx_import_of_linear_relu_gives_linalg():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    module = torch_mlir.fx.export_and_import(
        model, torch.randn(2, 8), output_type="linalg-on-tensors"
    )
    text = str(module)
    assert "linalg.matmul" in text or "linalg.generic" in text
    # Fully lowered: no torch dialect ops or conversion casts remain.
    assert "torch.aten." not in text and "torch_c." not in text


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
