"""Batch-norm statistics from one seeded batch, for models built with random weights.

With fresh statistics (mean 0, variance 1) BatchNorm is nearly the identity and a random
net's activations shrink layer by layer until its output hardly depends on its input (a
useless golden); statistics calibrated on one batch keep them O(1).
"""


def calibrate_torch(model, batch):
    """Sets every torch BatchNorm's running statistics from `batch` (cumulative average);
    returns the model in eval mode."""
    import torch
    from torch import nn

    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        model(batch)
    for bn in bns:
        bn.momentum = 0.1
    return model.eval()


def calibrate_keras(model, batch) -> None:
    """Sets every Keras BatchNormalization's moving statistics to those of `batch`."""
    import keras

    bns = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.momentum = 0.0  # moving statistics := this batch's statistics
    model(batch, training=True)
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
