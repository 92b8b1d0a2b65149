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


def keras_lstm_loop():
    """A Keras LSTM as built by default: a symbolic loop, which TF's bridge cannot legalise."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6, 4), batch_size=1), keras.layers.LSTM(8)])
    return model, (np.random.default_rng(0).standard_normal((1, 6, 4)).astype(np.float32),)
