"""A small MLP (three Linear layers with ReLU) with seeded random weights."""

import numpy as np
import torch
from torch import nn


def make_model():
    """The MLP and one 4x64 float32 input."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 128),
        nn.ReLU(),
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    ).eval()
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    return model, (torch.from_numpy(x),)
