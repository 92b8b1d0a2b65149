"""TensorFlow/Keras (CPU) builds and runs a small CNN offline with seeded random weights."""

import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def test_keras_cnn_predicts_deterministically():
    import keras
    import numpy as np

    def build():
        keras.utils.set_random_seed(0)
        return keras.Sequential(
            [
                keras.Input((16, 16, 3)),
                keras.layers.Conv2D(4, 3, activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Flatten(),
                keras.layers.Dense(5),
            ]
        )

    x = np.random.default_rng(0).standard_normal((1, 16, 16, 3)).astype("float32")
    first, second = build()(x), build()(x)
    assert first.shape == (1, 5)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
