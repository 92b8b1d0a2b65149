"""A W8A8 CNN written the way integer-GEMM inference is written in plain PyTorch (issue 64).

Each 3x3 conv is `F.unfold` (im2col), dynamic per-tensor int8 quantization of the activations
(`amax`, `round`, `clamp`, `to(int8)`), `torch._int_mm` against int8 weights quantized per tensor
once, then dequantization, bias and ReLU. An int8 linear head follows a global average pool.
`make_float_model` is the same network with the int8 weights' dequantized values in f32 and no
activation quantization: the f32 model the int8 one is compared against (accuracy, cycles, energy).

Input: 2 x 8 x 16 x 16 (batch 2, so each GEMM has at least 32 rows).
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

QMAX = 127.0


def quantize_per_tensor(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric dynamic per-tensor int8: (q, scale) with x ~ q * scale."""
    scale = torch.clamp(x.abs().amax(), min=1e-8) / QMAX
    q = torch.clamp(torch.round(x / scale), -QMAX - 1, QMAX).to(torch.int8)
    return q, scale


class IntLinear(nn.Module):
    """y = dequant(_int_mm(quant(x), w_q)) + b: per-tensor int8 weights, dynamic int8 activations.
    With `int8=False`, y = x @ (w_q * w_scale) + b in f32: the same weights, unquantized activations."""

    def __init__(self, k: int, n: int, g: torch.Generator, int8: bool):
        super().__init__()
        self.int8 = int8
        w = torch.randn(k, n, generator=g) / k ** 0.5
        w_scale = w.abs().amax() / QMAX
        w_q = torch.clamp(torch.round(w / w_scale), -QMAX - 1, QMAX).to(torch.int8)
        self.register_buffer("w_scale", w_scale)
        self.register_buffer("bias", 0.1 * torch.randn(n, generator=g))
        if int8:
            self.register_buffer("w_q", w_q)
        else:
            self.register_buffer("w", w_q.to(torch.float32) * w_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: M x K
        if not self.int8:
            return x @ self.w + self.bias
        q, scale = quantize_per_tensor(x)
        acc = torch._int_mm(q, self.w_q)
        return acc.to(torch.float32) * (scale * self.w_scale) + self.bias


class UnfoldConv(nn.Module):
    """3x3 conv, padding 1, stride 1, as unfold + GEMM + ReLU."""

    def __init__(self, cin: int, cout: int, g: torch.Generator, int8: bool):
        super().__init__()
        self.cout = cout
        self.gemm = IntLinear(cin * 9, cout, g, int8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        cols = F.unfold(x, kernel_size=3, padding=1)  # N x (C*9) x (H*W)
        rows = cols.transpose(1, 2).reshape(n * h * w, -1)
        y = torch.relu(self.gemm(rows))  # (N*H*W) x Cout
        return y.reshape(n, h, w, self.cout).permute(0, 3, 1, 2)


class W8A8Cnn(nn.Module):
    def __init__(self, int8: bool = True, num_classes: int = 16):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.conv1 = UnfoldConv(8, 16, g, int8)
        self.conv2 = UnfoldConv(16, 32, g, int8)
        self.head = IntLinear(32, num_classes, g, int8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(self.conv1(x), 2)  # 16 x 8 x 8
        x = self.conv2(x)  # 32 x 8 x 8
        return self.head(x.mean(dim=(2, 3)))


def _input() -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(0).standard_normal((2, 8, 16, 16)).astype(np.float32))


def make_model():
    """The W8A8 network and its fixed-seed 2x8x16x16 f32 input."""
    return W8A8Cnn(int8=True).eval(), (_input(),)


def make_float_model():
    """The same network in f32 (dequantized weights, no activation quantization), same input."""
    return W8A8Cnn(int8=False).eval(), (_input(),)
