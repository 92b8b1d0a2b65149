"""The zoo pipelines run whole through ONNX Runtime (//peers, issue 50, milestone 2).

Torch pipelines of //models whose model_name is the pipeline's name, calibration and held-out
alike (the split is each pipeline's own, models/BUILD.bazel): each is exported to ONNX by a
build action (:<pipeline>_onnx) and measured by //peers:measure_onnxrt.
"""

ONNX_PIPELINES = [
    # calibration
    "mlp",
    "pointwise_cnn",
    "se_net",
    "conv1d_audio",
    # held out
    "transformer_encoder",
    "mlp_batch32",
    "recurrent_kws",
    "dilated_grouped_cnn",
    "matmul_shapes",
]
