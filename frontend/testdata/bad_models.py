"""Factories that import_model must reject with one clear line."""

import numpy as np
import torch
from torch import nn


class DataDependent(nn.Module):
    """Branches on a tensor's value: torch.export cannot capture that."""

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


def data_dependent():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    return DataDependent(), (torch.from_numpy(x),)


def float64_input():
    torch.manual_seed(0)
    model = nn.Linear(3, 2).double()
    x = np.random.default_rng(0).standard_normal((2, 3))  # float64
    return model, (torch.from_numpy(x),)


def complex_input():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.complex64)
    return nn.Identity(), (torch.from_numpy(x),)


def not_a_pair():
    return nn.Identity()


NOT_CALLABLE = 42
