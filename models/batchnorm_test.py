"""Calibrated Keras BatchNorm statistics do not carry the machine's summation order (issue 76).

Reversing the calibration batch's sample order reorders every sum behind the statistics, as
another CPU's kernels (Eigen's cache-dependent blocking) do. Computed in float32 that changed
MobileNet's statistics and so its imported module; computed in float64 and rounded once to float32
(models/batchnorm.py) both orders give the same bytes.
"""

import hashlib
import os
import sys

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # as frontend.import_model pins it


def _statistics(model) -> str:
    import keras

    data = b"".join(np.asarray(v).tobytes() for layer in model.layers
                    if isinstance(layer, keras.layers.BatchNormalization)
                    for v in (layer.moving_mean, layer.moving_variance))
    return hashlib.sha256(data).hexdigest()


def _mobilenet():
    import keras

    keras.utils.set_random_seed(0)
    return keras.applications.MobileNet(input_shape=(64, 64, 3), alpha=0.25, weights=None, classes=10)


def test_the_statistics_do_not_depend_on_the_summation_order():
    from models import batchnorm

    batch = np.random.default_rng(1).standard_normal((4, 64, 64, 3)).astype(np.float32)
    hashes = []
    for order in (batch, np.ascontiguousarray(batch[::-1])):
        model = _mobilenet()
        batchnorm.calibrate_keras(model, order)
        hashes.append(_statistics(model))
    assert hashes[0] == hashes[1]


def test_the_statistics_are_the_batchs():
    """Still the batch's own statistics (not left at the fresh 0 / 1), as float32 variables."""
    import keras

    from models import batchnorm

    batch = np.random.default_rng(1).standard_normal((4, 64, 64, 3)).astype(np.float32)
    model = _mobilenet()
    first_bn = next(l for l in model.layers if isinstance(l, keras.layers.BatchNormalization))
    batchnorm.calibrate_keras(model, batch)
    assert first_bn.moving_mean.dtype == "float32" and first_bn.momentum == pytest.approx(0.99)
    pre = keras.Model(model.inputs, model.get_layer(index=model.layers.index(first_bn) - 1).output)
    x = np.asarray(pre(batch, training=True), dtype=np.float64)
    np.testing.assert_allclose(np.asarray(first_bn.moving_mean), x.mean(axis=(0, 1, 2)), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.asarray(first_bn.moving_variance), x.var(axis=(0, 1, 2)), rtol=1e-3, atol=1e-6)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
