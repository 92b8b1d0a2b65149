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
    """Sets every Keras BatchNormalization's moving statistics to those of `batch`.

    The statistics are computed by a float64 twin of the model (same architecture, weights
    cast exactly) and rounded once to float32. In float32 they carried the machine's
    arithmetic: TensorFlow's kernels sum in an order that depends on the CPU (Eigen's
    blocking follows its cache sizes), so two x86-64 machines imported keras_separable and
    keras_mobilenet to different bytes (issue 76), and even reversing the batch's sample
    order changes them. In float64 those differences are ~1e-16 relative, far below the one
    rounding to float32 (6e-8), so every machine rounds to the same values
    (frontend/determinism_test.py checks both orders give the same bytes).
    """
    import keras
    import numpy as np

    def float64_layer(layer):
        config = layer.get_config()
        config["dtype"] = "float64"
        return layer.__class__.from_config(config)

    twin = keras.models.clone_model(model, clone_function=float64_layer)
    twin.set_weights([np.asarray(w, dtype=np.float64) for w in model.get_weights()])
    bns = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    twin_bns = [l for l in twin.layers if isinstance(l, keras.layers.BatchNormalization)]
    if len(bns) != len(twin_bns):
        raise ValueError(f"{model.name}: cloning kept {len(twin_bns)} of {len(bns)} BatchNormalization layers")
    for bn in twin_bns:
        bn.momentum = 0.0  # moving statistics := this batch's statistics
    twin(np.asarray(batch, dtype=np.float64), training=True)
    for bn, twin_bn in zip(bns, twin_bns):
        if twin_bn.moving_mean.dtype != "float64":
            raise ValueError(f"{twin_bn.name}: the float64 twin computes in {twin_bn.moving_mean.dtype}")
        bn.moving_mean.assign(np.asarray(twin_bn.moving_mean, dtype=np.float64).astype(np.float32))
        bn.moving_variance.assign(np.asarray(twin_bn.moving_variance, dtype=np.float64).astype(np.float32))
