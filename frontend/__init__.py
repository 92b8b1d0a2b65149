"""Import stage: PyTorch / TensorFlow models to linalg-on-tensors MLIR bytecode."""
