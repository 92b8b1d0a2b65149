"""A keyword-spotting net over 16 frames of 40 features: nn.LSTM (40 -> 64), nn.GRU (64 -> 64), Linear to 12."""

import numpy as np
import torch
from torch import nn

FRAMES, FEATURES, HIDDEN, CLASSES = 16, 40, 64, 12


class RecurrentKws(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, HIDDEN, batch_first=True)
        self.gru = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.classifier = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        x, _ = self.lstm(x)
        x, _ = self.gru(x)
        # The last frame's state: the whole sequence has been read.
        return self.classifier(x[:, -1])


def make_model():
    """The net with seeded random weights and one 1x16x40 (batch, frames, features) float32 input."""
    torch.manual_seed(0)
    model = RecurrentKws().eval()
    x = np.random.default_rng(0).standard_normal((1, FRAMES, FEATURES)).astype(np.float32)
    return model, (torch.from_numpy(x),)
