"""A 1-D CNN for a 1024-sample waveform (strided kernel-9 Conv1d, BatchNorm1d, ReLU), global avg pool + Linear to 12."""

import numpy as np
import torch
from torch import nn

from models import batchnorm


def _conv_bn_relu(cin, cout, stride=2):
    return nn.Sequential(
        nn.Conv1d(cin, cout, 9, stride, padding=4, bias=False),
        nn.BatchNorm1d(cout),
        nn.ReLU(inplace=True),
    )


class Conv1dAudio(nn.Module):
    def __init__(self, num_classes=12):
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn_relu(1, 16),  # 512
            _conv_bn_relu(16, 32),  # 256
            _conv_bn_relu(32, 64),  # 128
            _conv_bn_relu(64, 64),  # 64
            _conv_bn_relu(64, 64, stride=1),  # 64
        )
        self.classifier = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool1d(x, 1)
        return self.classifier(torch.flatten(x, 1))


def make_model():
    """The net with seeded random weights and one 1x1x1024 (batch, channels, samples) float32 input."""
    torch.manual_seed(0)
    model = Conv1dAudio()
    calibration = np.random.default_rng(1).standard_normal((4, 1, 1024)).astype(np.float32)
    batchnorm.calibrate_torch(model, torch.from_numpy(calibration))
    x = np.random.default_rng(0).standard_normal((1, 1, 1024)).astype(np.float32)
    return model, (torch.from_numpy(x),)
