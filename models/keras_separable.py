"""A small Keras CNN of SeparableConv2D + BatchNormalization + ReLU, GlobalAveragePooling2D, Dense to 10."""

import numpy as np

from models import batchnorm


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
    batchnorm.calibrate_keras(model, calibration)
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
    return model, (x,)
