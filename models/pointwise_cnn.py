"""A 1x1-conv-heavy CNN (3x3 stem, runs of 1x1 convs with ReLU, two strided 3x3 convs), avg pool + Linear to 10."""

import numpy as np
import torch
from torch import nn


def make_model():
    """The CNN with seeded random weights and one 1x3x32x32 float32 input."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),  # stem, 32x32
        nn.ReLU(),
        nn.Conv2d(32, 64, 1),
        nn.ReLU(),
        nn.Conv2d(64, 32, 1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1),  # 16x16
        nn.ReLU(),
        nn.Conv2d(32, 64, 1),
        nn.ReLU(),
        nn.Conv2d(64, 64, 1),
        nn.ReLU(),
        nn.Conv2d(64, 32, 1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),  # 8x8
        nn.ReLU(),
        nn.Conv2d(64, 128, 1),
        nn.ReLU(),
        nn.Conv2d(128, 64, 1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(64, 10),
    )
    # He init keeps activations O(1) through the 11 ReLU layers (there is no BatchNorm);
    # PyTorch's default init shrinks them until the output hardly depends on the input.
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
    model.eval()
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return model, (torch.from_numpy(x),)
