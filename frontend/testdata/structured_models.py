"""Models whose outputs are a structure (a dict, nested) or a 0-d tensor: the golden must keep the
order and shape the imported module returns them in (issue 62)."""

import numpy as np
import torch
from torch import nn


def _x():
    return torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32))


class DictOut(nn.Module):
    """Keys out of sorted order, outputs of different shapes and values."""

    def forward(self, x):
        return {"zeta": torch.cat([x, x * 2.0], dim=1), "alpha": x - 1.0}


class NestedOut(nn.Module):
    def forward(self, x):
        return x + 1.0, {"b": x.sum(dim=0), "a": (x * 3.0, x.mean(dim=1))}


class ScalarOut(nn.Module):
    def forward(self, x):
        return x.sum()


def dict_outputs():
    return DictOut(), (_x(),)


def nested_outputs():
    return NestedOut(), (_x(),)


def scalar_output():
    return ScalarOut(), (_x(),)


def keras_dict_outputs():
    """A Keras functional model returning a dict, keys out of sorted order."""
    import keras

    x = keras.Input((3,), batch_size=2)
    model = keras.Model(x, {"zeta": keras.layers.Concatenate()([x, x * 2.0]), "alpha": x - 1.0})
    return model, (np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32),)
