"""A small keyword-spotting CNN over a 1x1x32x32 log-mel patch, seeded random weights: this
workspace's own model (plain torch.nn, no split, no registry)."""

import numpy as np
import torch
from torch import nn


def make_model():
    """The network and one float32 input."""
    torch.manual_seed(7)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU(),  # depthwise
        nn.Conv2d(16, 32, 1), nn.ReLU(),                         # pointwise
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 6),
    ).eval()
    x = np.random.default_rng(7).standard_normal((1, 1, 32, 32)).astype(np.float32)
    return model, (torch.from_numpy(x),)
