"""A small Keras CNN of SeparableConv2D + BatchNormalization + ReLU, GlobalAveragePooling2D, Dense to 10."""

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
    """The CNN with seeded random weights and one 1x32x32x3 (NHWC) float32 input."""
    import keras

    keras.utils.set_random_seed(0)

    def sep_bn_relu(filters, strides):
        return [
            keras.layers.SeparableConv2D(
                filters, 3, strides=strides, padding="same", bias_initializer="random_normal"
            ),
            keras.layers.BatchNormalization(
                beta_initializer="random_normal",
                gamma_initializer=keras.initializers.RandomUniform(0.5, 1.5),
            ),
            keras.layers.ReLU(),
        ]

    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(16, 3, padding="same", bias_initializer="random_normal"),
            keras.layers.ReLU(),
            *sep_bn_relu(32, 1),  # 32x32
            *sep_bn_relu(64, 2),  # 16x16
            *sep_bn_relu(64, 1),  # 16x16
            *sep_bn_relu(128, 2),  # 8x8
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10, bias_initializer="random_normal"),
        ],
        name="keras_separable",
    )
    calibration = np.random.default_rng(1).standard_normal((4, 32, 32, 3)).astype(np.float32)
    _calibrate_batchnorm(model, calibration)
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
    return model, (x,)
