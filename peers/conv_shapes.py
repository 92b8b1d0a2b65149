"""The zoo's f32 convolutions the peers are measured on (issue 58: a convolution table beside
the GEMM table).

Each is one convolution of a zoo model, with the dispatches IREE runs it as in what that model's
riscv pipeline ships (`docs/data/shipped_bounds.json`, from the shipped build's perf report):
one direct or depthwise convolution dispatch, or an im2col copy and its GEMM, whose figures add
up. Picked to cover the kinds the zoo has: depthwise 3x3 at stride 1 and 2, small and large,
and regular 3x3 convolutions lowered directly (Keras, NHWC) and as im2col + GEMM (PyTorch,
NCHW), from calibration and held-out models alike. Nothing here is fitted; the split only
labels the table. The layout the peers run is NHWC (XNNPACK's); IREE runs what the model ships.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConvShape:
    model: str  # the zoo pipeline (models/BUILD.bazel)
    split: str  # "calibration" | "held_out"
    dispatches: tuple[str, ...]  # what IREE runs this convolution as in the shipped riscv build
    n: int
    h: int  # input height and width, before padding
    w: int
    c: int
    kh: int
    kw: int
    stride: int
    pad: int  # on every side
    oc: int
    groups: int  # c for a depthwise convolution
    what: str

    @property
    def key(self) -> str:
        return f"{self.model}/{self.dispatches[-1]}"

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.kh) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.kw) // self.stride + 1

    @property
    def depthwise(self) -> bool:
        return self.groups == self.c == self.oc and self.groups > 1

    @property
    def macs(self) -> int:
        return self.n * self.oh * self.ow * self.oc * self.kh * self.kw * (self.c // self.groups)

    @property
    def dims(self) -> str:
        kind = "dw " if self.depthwise else ""
        return (f"{kind}{self.h}x{self.w}x{self.c} -> {self.oh}x{self.ow}x{self.oc}, "
                f"{self.kh}x{self.kw} s{self.stride}")


CONV_SHAPES: tuple[ConvShape, ...] = (
    ConvShape("se_net", "calibration", ("main_dispatch_13_conv_8x8x96x3x3_f32",),
              1, 8, 8, 96, 3, 3, 1, 1, 96, 96, "SE-Net depthwise 3x3"),
    ConvShape("se_net", "calibration", ("main_dispatch_5_conv_8x8x64x3x3_f32",),
              1, 16, 16, 64, 3, 3, 2, 1, 64, 64, "SE-Net depthwise 3x3, stride 2"),
    ConvShape("mobilenet_v2", "calibration", ("main_dispatch_12_conv_56x56x144x3x3_f32",),
              1, 56, 56, 144, 3, 3, 1, 1, 144, 144, "MobileNetV2 depthwise 3x3, 56x56"),
    ConvShape("mobilenet_v2", "calibration", ("main_dispatch_44_conv_14x14x384x3x3_f32",),
              1, 14, 14, 384, 3, 3, 1, 1, 384, 384, "MobileNetV2 depthwise 3x3, 384 channels"),
    ConvShape("resnet", "calibration", ("main_dispatch_6_generic_64x3x3x56x56_f32",
                                        "main_dispatch_7_matmul_64x3136x576_f32"),
              1, 56, 56, 64, 3, 3, 1, 1, 64, 1, "ResNet-18 3x3 conv, 64 channels (im2col + GEMM)"),
    ConvShape("keras_cnn", "calibration", ("main_dispatch_2_conv_13x13x16x3x3x8_f32",),
              1, 15, 15, 8, 3, 3, 1, 0, 16, 1, "Keras CNN 3x3 conv (direct, NHWC)"),
    ConvShape("keras_mobilenet", "held_out", ("main_dispatch_2_conv_32x32x8x3x3_f32",),
              1, 32, 32, 8, 3, 3, 1, 1, 8, 8, "Keras MobileNet depthwise 3x3"),
    ConvShape("keras_mobilenet", "held_out", ("main_dispatch_1_conv_32x32x8x3x3x3_f32",),
              1, 65, 65, 3, 3, 3, 2, 0, 8, 1, "Keras MobileNet stem 3x3 conv, stride 2 (direct, NHWC)"),
)


def conv_shape(key: str) -> ConvShape:
    for s in CONV_SHAPES:
        if s.key == key:
            return s
    raise KeyError(key)
