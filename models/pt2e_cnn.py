"""A small CNN quantized by PyTorch's own flow, PT2E (issue 64 item 4): torch.export, then torchao's
`prepare_pt2e` with XNNPACK's quantizer (static, symmetric per-tensor int8 activations and weights),
calibration on seeded data, and `convert_pt2e`.

What torch-mlir makes of it: the converted graph's quantize_per_tensor / dequantize_per_tensor pairs
import as f32 elementwise rounding around f32 convs and matmuls (no integer arithmetic reaches
linalg). Dynamic quantization (`is_dynamic=True`) does not import: torch-mlir has no lowering for
`quantized_decomposed.choose_qparams.tensor`; the reference representation
(`use_reference_representation=True`) neither: its FX importer has no `out_dtype`. Both are named by
the importer in one line (frontend/probe_test.py).
"""

import numpy as np
import torch
from torch import nn


class SmallCnn(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


def _input() -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(0).standard_normal((2, 8, 16, 16)).astype(np.float32))


def quantize_pt2e(model: nn.Module, example: tuple, calibration: list[torch.Tensor], dynamic: bool = False,
                  reference: bool = False) -> torch.fx.GraphModule:
    """`model` through torchao's PT2E flow (XNNPACK quantizer, symmetric per-tensor), ready for eval()."""
    from torchao.quantization.pt2e import allow_exported_model_train_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    exported = torch.export.export(model, example, strict=False).module()
    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=False, is_dynamic=dynamic))
    prepared = prepare_pt2e(exported, quantizer)
    for batch in calibration:
        prepared(batch)
    converted = convert_pt2e(prepared, use_reference_representation=reference)
    allow_exported_model_train_eval(converted)  # the importer calls eval()
    return converted


def make_float_model():
    """The f32 network (seeded weights) and its fixed-seed 2x8x16x16 input."""
    torch.manual_seed(0)
    return SmallCnn().eval(), (_input(),)


def make_model():
    """The PT2E-quantized network, calibrated on 4 seeded batches, and the same input."""
    model, inputs = make_float_model()
    rng = np.random.default_rng(1)
    calibration = [torch.from_numpy(rng.standard_normal((2, 8, 16, 16)).astype(np.float32)) for _ in range(4)]
    return quantize_pt2e(model, inputs, calibration), inputs
