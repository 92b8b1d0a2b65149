"""The zoo's f32 GEMM shapes the peers are measured on (issue 50, milestone 1: per op).

Each is one matmul dispatch of a zoo model as IREE compiles it for riscv (the root op's loops
and operand maps in `<model>_riscv_analysis.analysis.json`; im2col turns a convolution into
such a matmul), picked to cover the kinds of GEMM the zoo has: 1x1 and 3x3 convolutions
after im2col (B[K][N]), linear layers (B[N][K], linalg's `(d1, d2)` map), a square matmul,
small and skinny M, from calibration and held-out models alike (`split` in
models/BUILD.bazel). Nothing here is fitted; the split only labels the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GemmShape:
    model: str  # the zoo pipeline (models/BUILD.bazel)
    split: str  # "calibration" | "held_out"
    dispatch: str  # IREE's dispatch name in that model's tuned riscv build (its tuning record)
    m: int
    n: int
    k: int
    trans_b: bool  # B stored [N][K] (linear layer weights) instead of [K][N]
    what: str
    # What IREE's dispatch computes besides fill + matmul (its fused consumers, read from the
    # dispatch's ops in <model>_riscv_compiled.configs.mlir); the peers compute the GEMM alone.
    iree_fused: str = ""
    # What the model's shipped riscv build runs this GEMM as (`docs/data/shipped_bounds.json`,
    # from that build's perf report): its GEMM dispatch, and before it the dispatch that packs
    # the GEMM's activations per call where the shipped strategy packs (read from the linalg.pack
    # ops of <model>_riscv_<strategy>_compiled.configs.mlir). A strategy may rename the dispatch
    # (channels-last turns MobileNetV2's 384x196x64 into 196x384x64).
    shipped: tuple[str, ...] = field(default=(), kw_only=True)  # peers.report refuses an entry without one

    @property
    def key(self) -> str:
        return f"{self.model}/{self.dispatch}"

    @property
    def macs(self) -> int:
        return self.m * self.n * self.k

    @property
    def layout(self) -> str:
        return "A[M][K] B[N][K]" if self.trans_b else "A[M][K] B[K][N]"


SHAPES: tuple[GemmShape, ...] = (
    GemmShape("resnet", "calibration", "main_dispatch_37_matmul_256x196x128_f32", 256, 196, 128, False,
              "ResNet-18 1x1 stride-2 downsample conv (im2col)",
              shipped=("main_dispatch_37_matmul_256x196x128_f32",)),
    GemmShape("mobilenet_v2", "calibration", "main_dispatch_30_matmul_384x196x64_f32", 384, 196, 64, False,
              "MobileNetV2 pointwise expansion conv", "batch-norm affine + ReLU6",
              shipped=("_encoding_39_encode_196x64xf32_to_196x64xf32", "main_dispatch_30_matmul_196x384x64_f32")),
    GemmShape("pointwise_cnn", "calibration", "main_dispatch_7_matmul_32x256x288_f32", 32, 256, 288, False,
              "3x3 conv, 32 channels (im2col)", "bias + ReLU",
              shipped=("main_dispatch_7_matmul_32x256x288_f32",)),
    GemmShape("mlp", "calibration", "main_dispatch_0_matmul_4x128x64_f32", 4, 128, 64, True,
              "linear layer, batch 4", "bias + ReLU",
              shipped=("_encoding_6_encode_4x64xf32_to_4x64xf32", "main_dispatch_0_matmul_4x128x64_f32")),
    GemmShape("matmul_shapes", "held_out", "main_dispatch_0_matmul_256x256x256_f32", 256, 256, 256, False,
              "square matmul 256^3", shipped=("main_dispatch_0_matmul_256x256x256_f32",)),
    GemmShape("mlp_batch32", "held_out", "main_dispatch_0_matmul_32x512x256_f32", 32, 512, 256, True,
              "linear layer 256->512, batch 32", "bias + ReLU",
              shipped=("_encoding_6_encode_32x256xf32_to_32x256xf32", "main_dispatch_0_matmul_32x512x256_f32")),
    GemmShape("transformer_encoder", "held_out", "main_dispatch_15_matmul_32x128x64_f32", 32, 128, 64, True,
              "transformer feed-forward linear 64->128, 32 tokens",
              "bias + GELU (erf)", shipped=("main_dispatch_15_matmul_32x128x64_f32",)),
)


def shape(key: str) -> GemmShape:
    for s in SHAPES:
        if s.key == key:
            return s
    raise KeyError(key)
