"""Standalone matmuls of the shapes microkernel-vs-codegen questions turn on, one dispatch each.

`make_model` (f32): square 256x256x256, tall-skinny 2048x16 over K=256, small-K 512x512 over
K=8, and a batch matmul 8 x 64x128 @ 128x64. `make_int8_model`: the first three as
i8 x i8 -> i32 (`torch._int_mm`, which torch-mlir imports as one `linalg.matmul` of i8 operands
into i32: the shape IREE's s8s8s32 mmt4d microkernels serve). Weights are fixed-seed constants,
inputs fixed-seed arguments (M x K @ K x N, M rows of activations).
"""

import numpy as np
import torch
from torch import nn

# name -> (M, K, N): M x K activations times K x N constant weights
SHAPES = {
    "square": (256, 256, 256),
    "tall_skinny": (2048, 256, 16),
    "small_k": (512, 8, 512),
}
BATCH = (8, 64, 128, 64)  # B, M, K, N


class MatmulShapes(nn.Module):
    """Each input times its own constant weight; with `int8`, i8 x i8 -> i32."""

    def __init__(self, int8: bool):
        super().__init__()
        self.int8 = int8
        g = torch.Generator().manual_seed(0)
        for name, (_, k, n) in SHAPES.items():
            w = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8) if int8 else \
                torch.randn(k, n, generator=g) / k ** 0.5
            self.register_buffer(name, w)
        if not int8:
            b, _, k, n = BATCH
            self.register_buffer("batched", torch.randn(b, k, n, generator=g) / k ** 0.5)

    def forward(self, *xs):
        weights = [getattr(self, name) for name in SHAPES]
        if self.int8:
            return tuple(torch._int_mm(x, w) for x, w in zip(xs, weights))
        outs = tuple(x @ w for x, w in zip(xs, weights))
        return outs + (torch.bmm(xs[-1], self.batched),)


def make_model():
    """The f32 matmuls and their fixed-seed inputs."""
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((m, k)).astype(np.float32) for m, k, _ in SHAPES.values()]
    b, m, k, _ = BATCH
    xs.append(rng.standard_normal((b, m, k)).astype(np.float32))
    return MatmulShapes(int8=False).eval(), tuple(torch.from_numpy(x) for x in xs)


def make_int8_model():
    """The i8 x i8 -> i32 matmuls and their fixed-seed inputs."""
    rng = np.random.default_rng(0)
    xs = [rng.integers(-128, 128, (m, k), dtype=np.int8) for m, k, _ in SHAPES.values()]
    return MatmulShapes(int8=True).eval(), tuple(torch.from_numpy(x) for x in xs)
