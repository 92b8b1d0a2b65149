"""Keras Applications MobileNet (v1, alpha 0.25) at 64x64 with 10 classes and seeded random weights."""

import numpy as np

from models import batchnorm


def make_model():
    """MobileNet and one 1x64x64x3 (NHWC) float32 input."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNet(input_shape=(64, 64, 3), alpha=0.25, weights=None, classes=10)
    calibration = np.random.default_rng(1).standard_normal((4, 64, 64, 3)).astype(np.float32)
    batchnorm.calibrate_keras(model, calibration)
    x = np.random.default_rng(0).standard_normal((1, 64, 64, 3)).astype(np.float32)
    return model, (x,)
