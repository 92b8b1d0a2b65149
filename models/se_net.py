"""An EfficientNet-like net: 3 MBConv blocks (1x1 expand, 3x3 depthwise, squeeze-and-excite, 1x1 project) with SiLU."""

import numpy as np
import torch
from torch import nn

from models import batchnorm


def _conv_bn(cin, cout, kernel, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduced):
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.act = nn.SiLU()
        self.expand = nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        s = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        s = torch.sigmoid(self.expand(self.act(self.reduce(s))))
        return x * s


class MBConv(nn.Module):
    def __init__(self, cin, cout, stride, expand=4, se_ratio=0.25):
        super().__init__()
        hidden = cin * expand
        self.use_residual = stride == 1 and cin == cout
        self.block = nn.Sequential(
            _conv_bn(cin, hidden, 1),  # expand
            _conv_bn(hidden, hidden, 3, stride, groups=hidden),  # depthwise
            SqueezeExcite(hidden, max(1, int(cin * se_ratio))),
            _conv_bn(hidden, cout, 1, act=False),  # project
        )

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_residual else y


class SENet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = _conv_bn(3, 16, 3, stride=2)  # 16x16
        self.blocks = nn.Sequential(
            MBConv(16, 24, stride=2),  # 8x8
            MBConv(24, 24, stride=1),  # 8x8, residual
            MBConv(24, 40, stride=2),  # 4x4
        )
        self.head = _conv_bn(40, 128, 1)
        self.classifier = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


def make_model():
    """The net with seeded random weights and one 1x3x32x32 float32 input."""
    torch.manual_seed(0)
    model = SENet()
    calibration = np.random.default_rng(1).standard_normal((4, 3, 32, 32)).astype(np.float32)
    batchnorm.calibrate_torch(model, torch.from_numpy(calibration))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return model, (torch.from_numpy(x),)
