"""An MLP at batch 32 (Linear 256->512->256->10 with ReLU) with seeded random weights."""

import numpy as np
import torch
from torch import nn


def make_model():
    """The MLP and one 32x256 float32 input."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(256, 512),
        nn.ReLU(),
        nn.Linear(512, 256),
        nn.ReLU(),
        nn.Linear(256, 10),
    ).eval()
    x = np.random.default_rng(0).standard_normal((32, 256)).astype(np.float32)
    return model, (torch.from_numpy(x),)
