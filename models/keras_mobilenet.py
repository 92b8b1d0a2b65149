"""Keras Applications MobileNet (v1, alpha 0.25) at 64x64 with 10 classes and seeded random weights."""

import numpy as np


def _calibrate_batchnorm(model, batch):
    """Sets every BatchNormalization's moving statistics to those of one batch.

    With fresh statistics (mean 0, variance 1) BatchNorm is nearly the identity and
    the random net's activations shrink until the output hardly depends on the input;
    calibrated statistics keep them O(1).
    """
    import keras

    bns = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.momentum = 0.0  # moving statistics := this batch's statistics
    model(batch, training=True)
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum


def make_model():
    """MobileNet and one 1x64x64x3 (NHWC) float32 input."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNet(input_shape=(64, 64, 3), alpha=0.25, weights=None, classes=10)
    calibration = np.random.default_rng(1).standard_normal((4, 64, 64, 3)).astype(np.float32)
    _calibrate_batchnorm(model, calibration)
    x = np.random.default_rng(0).standard_normal((1, 64, 64, 3)).astype(np.float32)
    return model, (x,)
