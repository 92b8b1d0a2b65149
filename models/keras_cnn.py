"""A small Keras CNN (Conv2D, ReLU, MaxPool, Dense) with seeded random weights."""

import numpy as np


def make_model():
    """The CNN and one 1x32x32x3 (NHWC) float32 input."""
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(8, 3, activation="relu", bias_initializer="random_normal"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(16, 3, activation="relu", bias_initializer="random_normal"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu", bias_initializer="random_normal"),
            keras.layers.Dense(10, bias_initializer="random_normal"),
        ],
        name="keras_cnn",
    )
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
    return model, (x,)
