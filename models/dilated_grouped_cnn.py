"""A small CNN with strided, dilated (2) and grouped (4) 3x3 convs, BatchNorm and ReLU, avg pool + Linear to 10."""

import numpy as np
import torch
from torch import nn

from models import batchnorm


def _conv_bn_relu(cin, cout, stride=1, dilation=1, groups=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class DilatedGroupedCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn_relu(3, 16, stride=2),  # 16x16
            _conv_bn_relu(16, 32, dilation=2),  # 16x16, dilated
            _conv_bn_relu(32, 32, groups=4),  # 16x16, grouped
            _conv_bn_relu(32, 64, stride=2, groups=4),  # 8x8, strided + grouped
            _conv_bn_relu(64, 64, dilation=2, groups=4),  # 8x8, dilated + grouped
        )
        self.classifier = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


def make_model():
    """The CNN with seeded random weights and one 1x3x32x32 float32 input."""
    torch.manual_seed(0)
    model = DilatedGroupedCNN()
    calibration = np.random.default_rng(1).standard_normal((4, 3, 32, 32)).astype(np.float32)
    batchnorm.calibrate_torch(model, torch.from_numpy(calibration))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return model, (torch.from_numpy(x),)
